//! Command-line arguments: clap parses into these, then into the library's settings structs.
//!
//! The settings structs (`rmld::session`) hold the defaults' and presets' values; a unit test
//! checks that clap's defaults equal them.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use rmld::io::Rescale;
use rmld::methods::Method;
use rmld::model::{Precision, Ssgl, SsglMode, TargetKind};
use rmld::orchestrator::parse_ratio;
use rmld::orchestrator::{Init, KeepPolicy};
use rmld::session::{
    AugmentMethod, AugmentSettings, BackendChoice, DynamicsOptions, EncodeSettings, Preset,
    ProblemSettings, QualitySettings, SampleSettings,
};
use rmld::session::{BenchBackends, BenchTile, SamplerChoice, Shard};

/// Randomized Measurement Langevin Dynamics (RMLD / SpHMC): sample sparse codes X of a dataset
/// under a random measurement matrix A, many chains at once, and turn them into new images A X.
#[derive(Parser, Debug)]
#[command(name = "rmld", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run C chains for K outer iterations and write codes, images, the dictionary, a picture and a report.
    Sample(SampleArgs),
    /// LASSO-encode a dataset with the dictionary (the paper's "Compression": encode, decode with A).
    Encode(EncodeArgs),
    /// Continue an interrupted `rmld sample` from the checkpoint in its output folder; the samples
    /// equal those of an uninterrupted run (on the same backend).
    Resume(ResumeArgs),
    /// Generate a class-conditional augmentation set: new samples per class mixed with the
    /// originals (6:1 by default), written as MNIST-style IDX, NPY codes and labels, a PNG grid per
    /// class and a report.
    Augment(AugmentArgs),
    /// Measure throughput per backend and chain count against this machine's ceiling; writes
    /// bench.json, bench.csv and bench.png.
    Bench(BenchArgs),
    /// Judge generated images with labels against the real data: label preservation (a softmax
    /// classifier trained on the real images), novelty (nearest-neighbour distance to the real
    /// images) and diversity (pairwise distances per class), each calibrated by real test images.
    Quality(QualityArgs),
    /// Join the output folders of the N shards of one run (`--shard i/N`) into OUT: checks that
    /// they come from one configuration and seed and cover every part once, then writes the files
    /// the single run writes (nothing when a check fails).
    Merge(MergeArgs),
    /// Parametric dictionary learning by MH-within-Gibbs (Chaspari et al. 2016): `learn` writes a
    /// dictionary `sample --dictionary` reads; `eda-experiment` reproduces the paper's synthetic
    /// EDA experiment.
    #[command(subcommand)]
    Dictionary(DictionaryCommand),
    /// A learned sampler for augmentation (experimental, CPU; docs/amortized.md): `train` fits
    /// one to augment's MCMC samples and writes the model `augment --sampler amortized` reads.
    #[command(subcommand)]
    Amortize(AmortizeCommand),
}

/// `rmld amortize ...`.
#[derive(Subcommand, Debug)]
pub enum AmortizeCommand {
    /// Run augment's MCMC sampler with these options as the teacher (into MODEL.teacher/), fit a
    /// per-class code sampler to its samples and write it to --out MODEL; interrupted (Ctrl-C),
    /// the same command continues from MODEL.partial.
    Train(AmortizeTrainArgs),
}

/// `rmld amortize train`: augment's options (the teacher; --out is the model file) and the
/// sampler's.
#[derive(Args, Debug, Clone)]
pub struct AmortizeTrainArgs {
    #[command(flatten)]
    pub augment: AugmentArgs,

    /// Width of the operator network's hidden layer.
    #[arg(long, value_name = "H", default_value_t = rmld::amortize::CodeTrainSettings::default().hidden)]
    pub hidden: usize,

    /// Adam steps per class.
    #[arg(long, value_name = "N", default_value_t = rmld::amortize::CodeTrainSettings::default().fit_steps)]
    pub fit_steps: u32,

    /// Pairs of teacher samples per step.
    #[arg(long, value_name = "N", default_value_t = rmld::amortize::CodeTrainSettings::default().pairs)]
    pub pairs: usize,

    /// Adam's learning rate.
    #[arg(long, value_name = "LR", default_value_t = rmld::amortize::CodeTrainSettings::default().lr)]
    pub lr: f32,

    /// The smallest standard deviation of a move, in standardised code units.
    #[arg(long, value_name = "S", default_value_t = rmld::amortize::CodeTrainSettings::default().sigma_min)]
    pub sigma_min: f32,

    /// Applications of the operator per generated sample.
    #[arg(long, value_name = "N", default_value_t = rmld::amortize::CodeTrainSettings::default().apply_steps)]
    pub apply_steps: u32,

    /// Train on pairs of a teacher sample and one of its K nearest (local moves; samples stay
    /// near the teacher's); 0: any two samples of the class (a jump to the class's distribution).
    #[arg(long, value_name = "K", default_value_t = rmld::amortize::CodeTrainSettings::default().neighbours)]
    pub neighbours: usize,
}

impl AmortizeTrainArgs {
    /// The library's settings (augment's preset already applied by `cli::parse`).
    pub fn settings(&self) -> rmld::session::AmortizeSettings {
        let teacher = self.augment.settings();
        rmld::session::AmortizeSettings {
            model: teacher.problem.out.clone(),
            force: teacher.problem.force,
            train: rmld::amortize::CodeTrainSettings {
                hidden: self.hidden,
                fit_steps: self.fit_steps,
                pairs: self.pairs,
                lr: self.lr,
                sigma_min: self.sigma_min,
                apply_steps: self.apply_steps,
                neighbours: self.neighbours,
                seed: teacher.problem.seed,
            },
            teacher,
        }
    }
}

/// `rmld dictionary ...`.
#[derive(Subcommand, Debug)]
pub enum DictionaryCommand {
    /// Learn EDA or Gabor atoms from signals and write dictionary.npy (d × p), atoms.png and
    /// report.json; resumable: after an interruption, run the same command again.
    Learn(DictLearnArgs),
    /// Reproduce the paper's synthetic EDA experiment (Section VII-A/B): error vs OMP iterations
    /// (fig3.csv), coherence, Geweke pass rates and MH acceptance beside the paper's.
    EdaExperiment(EdaExperimentArgs),
}

/// Options shared by `dictionary learn` and `dictionary eda-experiment`.
#[derive(Args, Debug)]
pub struct DictCommonArgs {
    /// The output folder.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// MCMC iterations per signal (paper: 1000).
    #[arg(long, default_value_t = 1000)]
    pub iterations: u32,
    /// Iterations left out of the Geweke diagnostic (paper: 100).
    #[arg(long, default_value_t = 100)]
    pub burn_in: u32,
    /// K-means centres N_b of the combination step (paper: 100, 225, 400).
    #[arg(long, default_value_t = 100)]
    pub centers: usize,
    /// The seed of every draw.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Scale τ of the Student-t MH proposal, in the family's units. Default: 4 for EDA
    /// (samples), 0.3 for Gabor.
    #[arg(long, value_name = "TAU")]
    pub proposal_scale: Option<f64>,
    /// Degrees of freedom of the Student-t MH proposal.
    #[arg(long, default_value_t = 4.0)]
    pub proposal_dof: f64,
    /// Nelder–Mead iterations per mode search.
    #[arg(long, default_value_t = 40)]
    pub mode_iterations: u64,
    /// Signals per checkpoint.
    #[arg(long, default_value_t = 32)]
    pub chunk: usize,
    /// Sample atoms without replacement (the paper's Wallenius prior, Section II-B): a signal's
    /// atoms are distinct. Default: with replacement (Multinomial, Section II-A).
    #[arg(long)]
    pub without_replacement: bool,
}

impl DictCommonArgs {
    fn apply(&self, s: &mut rmld::session::DictionarySettings) {
        s.out = self.out.clone();
        s.iterations = self.iterations;
        s.burn_in = self.burn_in;
        s.centers = self.centers;
        s.seed = self.seed;
        s.chunk = self.chunk;
        s.hyper.proposal_scale = self.proposal_scale;
        s.hyper.proposal_dof = self.proposal_dof;
        s.hyper.mode_iterations = self.mode_iterations;
        s.hyper.without_replacement = self.without_replacement;
    }
}

/// `rmld dictionary learn`.
#[derive(Args, Debug)]
pub struct DictLearnArgs {
    /// The signals: an NPY of shape (N, d) or any dataset `sample` reads. Default: the embedded
    /// optdigits digits.
    #[arg(long, value_name = "PATH")]
    pub data: Option<PathBuf>,
    /// The atom family: eda (1-D signals) or gabor (square images).
    #[arg(long, value_enum, default_value_t = FamilyArg::Eda)]
    pub family: FamilyArg,
    /// Learn on the first N signals only.
    #[arg(long, value_name = "N")]
    pub signals: Option<usize>,
    /// Atoms per signal L.
    #[arg(long, default_value_t = 4)]
    pub atoms_per_signal: usize,
    #[command(flatten)]
    pub common: DictCommonArgs,
}

/// The atom family of `dictionary learn`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum FamilyArg {
    /// EDA tonic and phasic atoms.
    Eda,
    /// 2-D Gabor atoms.
    Gabor,
}

impl DictLearnArgs {
    /// The library's settings.
    pub fn settings(&self) -> rmld::session::DictionarySettings {
        let mut s = rmld::session::DictionarySettings {
            data: self.data.clone(),
            family: match self.family {
                FamilyArg::Eda => rmld::session::FamilyKind::Eda,
                FamilyArg::Gabor => rmld::session::FamilyKind::Gabor,
            },
            signals: self.signals,
            atoms_per_signal: self.atoms_per_signal,
            ..Default::default()
        };
        self.common.apply(&mut s);
        s
    }
}

/// `rmld dictionary eda-experiment`.
#[derive(Args, Debug)]
pub struct EdaExperimentArgs {
    /// Synthetic signals (paper: 1000).
    #[arg(long, default_value_t = 1000)]
    pub signals: usize,
    /// Cross-validation folds (paper: 10).
    #[arg(long, default_value_t = 10)]
    pub folds: usize,
    /// OMP iterations of the error curves.
    #[arg(long, default_value_t = 10)]
    pub omp_iterations: usize,
    #[command(flatten)]
    pub common: DictCommonArgs,
}

impl EdaExperimentArgs {
    /// The library's settings.
    pub fn settings(&self) -> rmld::session::EdaExperimentSettings {
        let mut s = rmld::session::EdaExperimentSettings {
            out: self.common.out.clone(),
            signals: self.signals,
            folds: self.folds,
            omp_iterations: self.omp_iterations,
            ..Default::default()
        };
        self.common.apply(&mut s.learn);
        s
    }
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The merged run's output folder.
    #[arg(value_name = "OUT")]
    pub out: PathBuf,

    /// The shards' output folders, in any order.
    #[arg(value_name = "SHARD_DIR", required = true)]
    pub shards: Vec<PathBuf>,

    /// Replace the files of a merged run already in OUT (without it, the merge refuses them).
    #[arg(long)]
    pub force: bool,
}

#[derive(Args, Debug)]
pub struct ResumeArgs {
    /// The output folder of the interrupted run (it holds checkpoint.rmld).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// Where the data and the dictionary come from, and the model's scale.
#[derive(Args, Debug, Clone)]
pub struct ProblemArgs {
    /// Dataset: a folder with MNIST-style IDX files (train-images-idx3-ubyte[.gz], labels optional),
    /// an IDX, NPY ((N, d) or (N, h, w), uint8 or float32) or CSV file. Default: the embedded
    /// optdigits digits (1797 images of 8×8).
    #[arg(long, value_name = "PATH")]
    pub data: Option<PathBuf>,

    /// The dictionary A as a float NPY file of shape (d, p). Default: Gaussian N(0, 1/d) from --seed.
    #[arg(long, value_name = "FILE.npy")]
    pub dictionary: Option<PathBuf>,

    /// Number of atoms p (columns of A) of a generated dictionary. Default: 4·d, as in the paper.
    #[arg(long, value_name = "P")]
    pub atoms: Option<usize>,

    /// The value of a full-intensity pixel in model units: observations x are scaled to
    /// [0, pixel-max] whatever their storage. 255 is the paper's scale. The likelihood has unit
    /// noise variance, so this sets how much the data constrain A X (see README, "Pixel scale and the defaults");
    /// scale --lambda with it (λ = 0.05 at pixel-max 1 sparsifies like λ ≈ 12 at 255).
    #[arg(long, value_name = "V", default_value_t = 255.0)]
    pub pixel_max: f32,

    /// sigma², the likelihood's noise variance: U(X) = 1/(2σ²)·||A X − xbar||² + lam·||X||₁.
    /// 1 is the paper's model; larger values widen the posterior of A X (more diverse, noisier
    /// samples; see README, "Noise variance sigma²").
    #[arg(long, value_name = "S2", default_value_t = 1.0)]
    pub sigma2: f32,

    /// The noise model: `fixed` (σ² = --sigma2) or `gibbs` (a per-chain noise precision τ with a
    /// Gamma(--noise-e, --noise-f) prior, drawn from its conditional once per outer iteration;
    /// --lambda and --eta are then in units of the learned noise (prior lam·√τ·||X||₁, moves
    /// preconditioned by 1/τ), so the run does not depend on the pixel scale; paper and local
    /// targets, laplace prior; see docs/noise.md).
    #[arg(long, value_enum, default_value_t = NoiseArg::Fixed)]
    pub noise: NoiseArg,

    /// e, the shape of the Gamma prior on the noise precision (`--noise gibbs`; > 0).
    #[arg(long, value_name = "E", default_value_t = rmld::model::DEFAULT_NOISE_E, allow_negative_numbers = true)]
    pub noise_e: f32,

    /// f, the rate of the Gamma prior on the noise precision (`--noise gibbs`; > 0).
    #[arg(long, value_name = "F", default_value_t = rmld::model::DEFAULT_NOISE_F, allow_negative_numbers = true)]
    pub noise_f: f32,

    /// The energy the chains sample: `paper` (the paper's posterior, centred on the mean of the
    /// data or of the chain's class), `mixture` (−log Σ_i exp(−||A X − x_i||²/(2σ²)) over the
    /// class's images: chains stay near real images and move between them), `local` (the
    /// posterior of the code of the image the chain starts from), `tangent` (a Gaussian around
    /// the start image, wide along the span of its --tangent-k nearest same-class images). See
    /// docs/quality.md.
    #[arg(long, value_enum, default_value_t = TargetKind::Paper)]
    pub target: TargetKind,

    /// k, the tangent target's neighbours per chain: the k nearest images of the chain's class
    /// to its start image span the directions along which it varies (at most 64; the class
    /// needs k + 1 images).
    #[arg(long, value_name = "K", default_value_t = 8)]
    pub tangent_k: u32,

    /// s, the tangent target's spread along the neighbour span: its covariance there is
    /// (s²/k)·B Bᵀ (B = neighbours − start image), plus σ² (--sigma2) in every direction.
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    pub tangent_scale: f32,

    /// lam, the rate of the Laplace prior exp(−lam·||X||₁) and the LASSO penalty.
    #[arg(long = "lambda", value_name = "LAM", default_value_t = 5.0)]
    pub lambda: f32,

    /// The prior over the codes: `laplace` (exp(−lam·||X||₁), the paper's) or `ssgl` (the
    /// adaptive spike-and-slab group lasso of Deng et al. 2019, --ssgl-* options; CPU backend;
    /// see docs/priors.md).
    #[arg(long, value_enum, default_value_t = rmld::Prior::default())]
    pub prior: rmld::Prior,

    #[command(flatten)]
    pub ssgl: SsglArgs,

    /// Seed of every random draw (dictionary, starts, momenta, minibatches, MH uniforms).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,

    /// Where the chains run.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,

    /// How the dictionary A is stored for the products: f32, or f16 (half the bytes on the
    /// GPU, read with unpack2x16float and widened: every product still multiplies and sums in
    /// f32). With f16 A's entries are rounded to half precision on every backend alike, so the
    /// CPU runs the same model (docs/benchmarks.md, "Half precision").
    #[arg(long, value_enum, default_value_t = Precision::F32)]
    pub precision: Precision,

    /// Output folder (created if missing; files are written atomically).
    #[arg(long, value_name = "DIR", default_value = "rmld-out")]
    pub out: PathBuf,

    /// Replace the files in --out that this run writes when they exist already (left by another
    /// run, or your own); without it such a folder is refused. Inputs are never replaced.
    #[arg(long)]
    pub force: bool,

    /// Run only shard I of N (0-based: 0/4 … 3/4) of the work, writing its part and
    /// manifest.json into --out; `rmld merge OUT SHARD_DIR...` joins the N shards into the
    /// single run's files, byte for byte. encode splits the originals, sample the chains,
    /// augment the chains (class by class) and the originals' and test split's codes.
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    pub shard: Option<Shard>,
}

fn parse_shard(text: &str) -> Result<Shard, String> {
    text.parse::<Shard>().map_err(|e| match e {
        rmld::Error::Usage { message, .. } => message,
        other => other.to_string(),
    })
}

/// The SSGL prior's hyper-parameters under the paper's names (Deng et al. 2019, equation 4 and
/// Section 5.1); read with --prior ssgl.
#[derive(Args, Debug, Clone)]
pub struct SsglArgs {
    /// v0 > 0, the spike's Laplace scale (in units of σ).
    #[arg(long = "ssgl-v0", value_name = "V0", default_value_t = Ssgl::default().v0)]
    pub ssgl_v0: f32,
    /// v1 > 0, the slab's Normal variance (in units of σ²).
    #[arg(long = "ssgl-v1", value_name = "V1", default_value_t = Ssgl::default().v1)]
    pub ssgl_v1: f32,
    /// a > 0, the Beta(a, b) prior of the inclusion probability δ.
    #[arg(long = "ssgl-a", value_name = "A", default_value_t = Ssgl::default().a)]
    pub ssgl_a: f32,
    /// b > 0 of Beta(a, b). Default: p (the paper's).
    #[arg(long = "ssgl-b", value_name = "B")]
    pub ssgl_b: Option<f32>,
    /// ν > 0, the inverse-gamma IG(ν/2, νλ/2) prior of σ².
    #[arg(long = "ssgl-nu", value_name = "NU", default_value_t = Ssgl::default().nu)]
    pub ssgl_nu: f32,
    /// λ > 0 of IG(ν/2, νλ/2) (not --lambda, the Laplace rate).
    #[arg(long = "ssgl-lambda", value_name = "L", default_value_t = Ssgl::default().lambda)]
    pub ssgl_lambda: f32,
    /// δ in (0, 1), the initial inclusion probability (ρ starts there).
    #[arg(long = "ssgl-delta", value_name = "D", default_value_t = Ssgl::default().delta)]
    pub ssgl_delta: f32,
    /// σ > 0, the prior's initial scale.
    #[arg(long = "ssgl-sigma", value_name = "S", default_value_t = Ssgl::default().sigma)]
    pub ssgl_sigma: f32,
    /// c of the stochastic-approximation step ω_k = c·(k + k0)^(−α).
    #[arg(long = "ssgl-c", value_name = "C", default_value_t = Ssgl::default().c)]
    pub ssgl_c: f32,
    /// k0 of ω_k.
    #[arg(long = "ssgl-k0", value_name = "K0", default_value_t = Ssgl::default().k0)]
    pub ssgl_k0: f32,
    /// α of ω_k (c = 1, α = 0 gives ω = 1: the paper's SGLD-EM).
    #[arg(long = "ssgl-alpha", value_name = "ALPHA", default_value_t = Ssgl::default().alpha)]
    pub ssgl_alpha: f32,
    /// When the latent state moves: `adapt` (during --burn-in, then frozen: one fixed posterior),
    /// `continuous` (every iteration, the paper's SGLD-SA), `fixed` (never).
    #[arg(long = "ssgl-mode", value_enum, default_value_t = SsglMode::Adapt)]
    pub ssgl_mode: SsglMode,
}

impl SsglArgs {
    /// The library's settings (`adapt_iterations` is set from the burn-in by the session).
    pub fn settings(&self) -> Ssgl {
        Ssgl {
            v0: self.ssgl_v0,
            v1: self.ssgl_v1,
            a: self.ssgl_a,
            b: self.ssgl_b,
            nu: self.ssgl_nu,
            lambda: self.ssgl_lambda,
            delta: self.ssgl_delta,
            sigma: self.ssgl_sigma,
            c: self.ssgl_c,
            k0: self.ssgl_k0,
            alpha: self.ssgl_alpha,
            mode: self.ssgl_mode,
            adapt_iterations: 0,
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct SampleArgs {
    #[command(flatten)]
    pub problem: ProblemArgs,

    /// Number of chains C, run together.
    #[arg(long, value_name = "C", default_value_t = 64)]
    pub chains: usize,

    /// K, outer iterations: samples per chain (Algorithm 1, line 4).
    #[arg(long, value_name = "K", default_value_t = 4)]
    pub samples: u32,

    /// The proposal: rmld (the paper's Algorithms 1 and 3), or an exact method with the
    /// full-data gradient: mala (Langevin step h = eta) or hmc (L leapfrog steps of size eta).
    #[arg(long, value_enum, default_value_t = Method::Rmld)]
    pub method: Method,

    /// Start each chain at white noise N(0, I), or at the LASSO code of a random data point (eq. 10).
    #[arg(long, value_enum, default_value_t = Init::Lasso)]
    pub init: Init,

    #[command(flatten)]
    pub dynamics: DynamicsArgs,

    /// Which samples are written: all, last, or every:N (after the burn-in). Samples are
    /// streamed to disk as they come, so memory does not grow with K.
    #[arg(long, value_name = "POLICY", default_value = "all", value_parser = parse_keep)]
    pub keep: KeepPolicy,

    /// Outer iterations discarded before any sample is kept: a count B, or `auto` (or
    /// `auto:CAP`) to end the warm-up where the adapted step size (and HMC's trajectory length)
    /// and the chains' traced statistics settle, checked every ⌈CAP/20⌉ (at least 10)
    /// iterations, at most after CAP (default: half the samples); the report and summary say
    /// where it ended and whether it settled (docs/adaptation.md). Default: `auto` for
    /// `--method mala` and `hmc` (their step size adapts during it), 0 for rmld, with
    /// `--no-adapt`, `--shard` or an adapting `--prior ssgl`.
    #[arg(long, value_name = "B|auto[:CAP]", value_parser = parse_burn_in)]
    pub burn_in: Option<BurnInArg>,

    /// Write a checkpoint (checkpoint.rmld in --out) every N outer iterations; 0: only when
    /// interrupted. `rmld resume DIR` continues from it.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub checkpoint_every: u32,

    /// Keep --eta as given. By default, --method mala and hmc adapt their step size during the
    /// burn-in (dual averaging across all chains toward mean acceptance 0.574 for MALA, 0.8 for
    /// HMC), then freeze it for the kept draws; with --burn-in 0 nothing adapts.
    #[arg(long)]
    pub no_adapt: bool,
}

/// The momentum dynamics and the MH correction, shared by `rmld sample` and `rmld augment`.
#[derive(Args, Debug, Clone)]
pub struct DynamicsArgs {
    /// T, momentum steps per outer iteration (Algorithm 1, line 8).
    #[arg(long, value_name = "T", default_value_t = 20)]
    pub steps: u32,

    /// m, minibatch size of the gradient estimate (Algorithm 2), drawn per chain and step.
    #[arg(long, value_name = "M", default_value_t = 64)]
    pub batch: u32,

    /// L, leapfrog steps per proposal of --method hmc.
    #[arg(long, value_name = "L", default_value_t = 10)]
    pub leapfrog_steps: u32,

    /// eta, the step size (and friction) of the momentum dynamics (Algorithm 1, lines 10-11);
    /// the step h of --method mala, the leapfrog step ε of --method hmc.
    #[arg(long, value_name = "ETA", default_value_t = 0.01)]
    pub eta: f32,

    /// The MH discount (Algorithm 3): accept iff α > discount·u. 1 is SpHMC; >1 accepts less.
    #[arg(long, value_name = "D", default_value_t = 1.0)]
    pub discount: f32,

    /// Accept every proposal (the paper's "RMLD w/o MH").
    #[arg(long)]
    pub no_mh: bool,

    /// Inject SGHMC noise sqrt(2·eta)·ξ into the momentum at every step (equation 2; off in Algorithm 1).
    #[arg(long)]
    pub sghmc_noise: bool,

    /// FISTA iterations for --init lasso.
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub lasso_iterations: u32,
}

#[derive(Args, Debug, Clone)]
pub struct AugmentArgs {
    /// The settings to start from: `quality` (the default, unless --method is given) or `paper`
    /// (the default when --method is given). Options given on the command line override either.
    #[arg(long, value_enum, value_name = "PRESET")]
    pub preset: Option<Preset>,

    #[command(flatten)]
    pub problem: ProblemArgs,

    /// Labels for --data when they are not beside it: IDX labels, a 1-D integer NPY or text
    /// with one label per line.
    #[arg(long, value_name = "FILE")]
    pub labels: Option<PathBuf>,

    /// Originals to generated samples, per class: "6:1" (the paper's) generates one new sample
    /// per six images of each class.
    #[arg(long, value_name = "O:G", default_value = "6:1", value_parser = parse_ratio,
          allow_hyphen_values = true)]
    pub ratio: f64,

    /// Samples per class as imbalanced-learn's `sampling_strategy`, instead of --ratio: `auto`
    /// (= `not-majority`), `minority`, `not-minority`, `all` (those classes up to the majority's
    /// count), a ratio in (0, 1] (two classes: the minority's count over the majority's after),
    /// or each class's count after augmenting, `LABEL:COUNT,LABEL:COUNT`.
    #[arg(long, value_name = "STRATEGY", value_parser = rmld::orchestrator::Balance::parse,
          conflicts_with_all = ["ratio", "classes"])]
    pub balance: Option<rmld::orchestrator::Balance>,

    /// Only these classes (comma-separated label values); default: every class in the data.
    #[arg(long, value_name = "L,L,...", value_delimiter = ',')]
    pub classes: Option<Vec<u32>>,

    /// Use only the first N training images (before --classes filters them).
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,

    /// Samples kept per chain (outer iterations after the burn-in); the chains per class are
    /// ceil(generated / samples).
    #[arg(long, value_name = "K", default_value_t = 4)]
    pub samples: u32,

    /// Outer iterations run before a chain's samples are kept, or `auto` (`auto:CAP`): end the
    /// burn-in where the adapted step sizes and the chains settle, at most after CAP (200)
    /// iterations, then keep --samples per chain.
    #[arg(long, value_name = "B|auto[:CAP]", default_value = "0", value_parser = parse_burn_in)]
    pub burn_in: BurnInArg,

    /// Adapt the step size of --method mala or hmc during the burn-in, per class (each class's
    /// chains toward the method's target acceptance; with hmc the trajectory length by ChEES),
    /// then freeze it. Off by default: the quality preset stops its chains short of
    /// equilibrium on purpose (docs/adaptation.md).
    #[arg(long)]
    pub adapt: bool,

    /// What generates the samples.
    #[arg(long, value_enum, default_value_t = AugmentMethod::Rmld)]
    pub method: AugmentMethod,

    #[command(flatten)]
    pub dynamics: DynamicsArgs,

    /// Gaussian smoothing of every generated image, standard deviation in pixels (0: off).
    #[arg(long, value_name = "PX", default_value_t = 0.5)]
    pub smooth: f32,

    /// Soft-threshold generated pixels by τ on the 0..255 scale after smoothing (0: off).
    #[arg(long, value_name = "TAU", default_value_t = 0.0)]
    pub soft_threshold: f32,

    /// How generated images reach 0..255: clip, or stretch each to a maximum of 255.
    #[arg(long, value_enum, default_value_t = Rescale::Clip)]
    pub rescale: Rescale,

    /// Skip LASSO-encoding the originals: codes.npy and labels.npy are not written (the IDX set,
    /// the generated codes and everything else are). Encoding the originals is most of the work
    /// when only images are wanted.
    #[arg(long)]
    pub no_original_codes: bool,

    /// Also LASSO-encode the test split found beside --data (test-codes.npy, test-labels.npy),
    /// for classifiers trained on the codes.
    #[arg(long)]
    pub encode_test: bool,

    /// Write as each generated sample's code the LASSO code (--lasso-iterations) of its generated
    /// image after post-processing, instead of the chain's position X. Exact samplers leave the
    /// null space of A to the prior, so their X are dense where the originals' and test codes are
    /// sparse; classifiers trained on codes see that as another distribution (docs/quality.md).
    /// `--reencode false` keeps the positions under the quality preset, which turns it on.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true",
          action = clap::ArgAction::Set, default_value_t = false)]
    pub reencode: bool,

    /// Encode only the first N test images (and use only them as the quality metrics' reference).
    #[arg(long, value_name = "N")]
    pub test_limit: Option<usize>,

    /// Skip the sample-quality metrics (label preservation, novelty, diversity; README, "Sample
    /// quality") that are otherwise computed on the generated images and put in report.json.
    #[arg(long)]
    pub no_quality: bool,

    /// Encode each row (starts, originals, test split, re-encoding) until its relative duality
    /// gap is at most TOL, at most --lasso-iterations iterations (CPU: ADMM with the exact
    /// quadratic step, about 3× fewer iterations than FISTA on MNIST; GPU: FISTA, every
    /// iteration); 0 runs every FISTA iteration on the CPU too (the codes of earlier versions)
    #[arg(long, value_name = "TOL", default_value_t = rmld::session::lasso_tolerance_default())]
    pub lasso_tolerance: f32,

    /// Folder caching the originals' and the test split's LASSO codes, so a repeated run with
    /// the same data, dictionary, λ and stop rule reads them instead of encoding (default:
    /// $RMLD_CACHE_DIR, else $XDG_CACHE_HOME/rmld/codes, else ~/.cache/rmld/codes).
    #[arg(long, value_name = "DIR")]
    pub code_cache: Option<PathBuf>,

    /// Neither read nor write the code cache.
    #[arg(long, conflicts_with = "code_cache")]
    pub no_code_cache: bool,

    /// Where the new samples come from: `mcmc` (the chains of --method) or `amortized` (one
    /// pass of the learned sampler in --model per sample; experimental, docs/amortized.md).
    #[arg(long, value_enum, default_value_t = SamplerChoice::Mcmc)]
    pub sampler: SamplerChoice,

    /// The model of --sampler amortized, written by `rmld amortize train`.
    #[arg(long, value_name = "FILE")]
    pub model: Option<PathBuf>,

    /// Which of `AugmentSettings::KEPT_WHEN_GIVEN` were given on the command line (set by
    /// `cli::parse`): those keep their value instead of being fitted to the data, and a
    /// --batch or --tangent-k that a class cannot hold is an error rather than lowered to fit.
    #[arg(skip)]
    pub given: Vec<String>,
}

#[derive(Args, Debug, Clone)]
pub struct QualityArgs {
    /// The generated images: IDX images (gzip'd or not), or an NPY of shape (N, d) or (N, h, w),
    /// uint8 or float.
    #[arg(long, value_name = "FILE")]
    pub generated: PathBuf,

    /// The class each generated image was generated for: IDX labels, a 1-D integer NPY or text
    /// with one label per line. Default: the IDX labels file beside --generated
    /// (…-labels-idx1-ubyte[.gz]).
    #[arg(long, value_name = "FILE")]
    pub generated_labels: Option<PathBuf>,

    /// The value of a full-intensity pixel in --generated. Default: 255 for uint8 images, 1 for
    /// float images.
    #[arg(long, value_name = "V")]
    pub generated_scale: Option<f32>,

    /// The real training images, as for `rmld augment` (a folder with MNIST-style IDX files, or
    /// one IDX, NPY or CSV file). Default: the embedded optdigits digits. A labelled test split in
    /// the folder (t10k-…) is the reference; without one, a seeded 10% of the training images is
    /// held out instead.
    #[arg(long, value_name = "PATH")]
    pub data: Option<PathBuf>,

    /// Labels for --data when they are not beside it.
    #[arg(long, value_name = "FILE")]
    pub labels: Option<PathBuf>,

    /// Only these classes (comma-separated label values); generated images of other classes are
    /// left out. Default: every class of the training data.
    #[arg(long, value_name = "L,L,...", value_delimiter = ',')]
    pub classes: Option<Vec<u32>>,

    /// Use only the first N training images (before --classes filters them).
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,

    /// Use only the first N test images (before --classes filters them).
    #[arg(long, value_name = "N")]
    pub test_limit: Option<usize>,

    /// Seed of the held-out split and the diversity subsamples.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,

    /// Write the report (JSON) here, atomically.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Print the report as JSON on stdout (instead of the one-line summary).
    #[arg(long)]
    pub json: bool,
}

fn parse_keep(text: &str) -> Result<KeepPolicy, String> {
    text.parse()
}

/// `--burn-in`: a fixed count, or an automatic burn-in with an optional cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BurnInArg {
    /// The count, or the automatic burn-in's cap (0: half the samples).
    pub count: u32,
    /// `auto`.
    pub auto: bool,
}

fn parse_burn_in(text: &str) -> Result<BurnInArg, String> {
    let text = text.trim();
    let count = |n: &str| {
        n.parse::<u32>()
            .map_err(|_| format!("expected a count B, auto or auto:CAP, got {text:?}"))
    };
    match text.to_ascii_lowercase().strip_prefix("auto") {
        Some("") => Ok(BurnInArg {
            count: 0,
            auto: true,
        }),
        Some(rest) => match rest.strip_prefix([':', '=']).map(count) {
            Some(Ok(cap)) if cap > 0 => Ok(BurnInArg {
                count: cap,
                auto: true,
            }),
            _ => Err(format!(
                "expected auto:CAP with a cap CAP ≥ 1 iterations, got {text:?}"
            )),
        },
        None => count(text).map(|count| BurnInArg { count, auto: false }),
    }
}

#[derive(Args, Debug)]
pub struct EncodeArgs {
    #[command(flatten)]
    pub problem: ProblemArgs,

    /// Encode only the first N observations (default: all). (`--count` is its old name.)
    #[arg(long, value_name = "N", alias = "count")]
    pub limit: Option<usize>,

    /// The iteration cap. (`--iterations` is its old name.)
    #[arg(long, value_name = "N", default_value_t = 200, alias = "iterations")]
    pub lasso_iterations: u32,

    /// Encode each row until its relative duality gap is at most TOL, at most --lasso-iterations
    /// iterations (CPU: ADMM; GPU: FISTA, every iteration); 0 runs every FISTA iteration on the
    /// CPU too. The same rule as augment's, so both give an image the same code
    #[arg(long, value_name = "TOL", default_value_t = rmld::session::lasso_tolerance_default())]
    pub lasso_tolerance: f32,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Backends to measure.
    #[arg(long, value_enum, default_value_t = BenchBackends::All)]
    pub backend: BenchBackends,

    /// Chain counts to measure, a comma-separated list.
    #[arg(long, value_name = "C,C,...", default_value = "1,16,256,1024,4096")]
    pub chains: String,

    /// Dimension d of the synthetic dataset (default 784); with --data it must match the data.
    #[arg(long, value_name = "D")]
    pub dim: Option<usize>,

    /// Number of atoms p of the Gaussian dictionary. Default: 4·d.
    #[arg(long, value_name = "P")]
    pub atoms: Option<usize>,

    /// m, minibatch size per chain and step.
    #[arg(long, value_name = "M", default_value_t = 64)]
    pub batch: u32,

    /// T, momentum steps per outer iteration.
    #[arg(long, value_name = "T", default_value_t = 20)]
    pub steps: u32,

    /// Timed outer iterations per measurement, after one warm-up iteration.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub outer: u32,

    /// Dataset (as for `rmld sample`). Default: random 8-bit images of dimension --dim.
    #[arg(long, value_name = "PATH")]
    pub data: Option<PathBuf>,

    /// Number of random images in the synthetic dataset.
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub images: usize,

    /// Side n of the square product that measures the CPU's GEMM ceiling (2·n³ flops).
    #[arg(long, value_name = "N", default_value_t = 1536)]
    pub ceiling_size: usize,

    /// Seed of the dictionary, the synthetic data and the dynamics.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,

    /// Output folder (bench.json, bench.csv, bench.png; written atomically).
    #[arg(long, value_name = "DIR", default_value = "rmld-bench")]
    pub out: PathBuf,

    /// Replace bench.json, bench.csv and bench.png when --out holds them already.
    #[arg(long)]
    pub force: bool,

    /// `ssgl`: also measure each backend with the SSGL prior adapting at every outer iteration
    /// (rows `cpu-ssgl`, `gpu-ssgl`, beside the Laplace rows of the same run; the SA update is
    /// timed with accept).
    #[arg(long = "prior", value_enum, default_value_t = rmld::Prior::default())]
    pub bench_prior: rmld::Prior,

    /// Also time the NumPy peer (benches/peers/numpy_step.py: the same step at the same sizes,
    /// its BLAS on as many threads) at every CPU chain count and print rmld over NumPy.
    #[arg(long)]
    pub peers: bool,

    /// The Python (with NumPy) that runs the peer; implies --peers [default: $RMLD_PEER_PYTHON,
    /// else python3].
    #[arg(long, value_name = "PATH")]
    pub peer_python: Option<PathBuf>,

    /// Also measure the GPU with the dictionary stored as f16 (rows `gpu-f16`, beside the f32
    /// rows of the same run; `--precision f16` of sample and augment).
    #[arg(long)]
    pub f16: bool,

    /// The GPU products' tiles to measure, a row each per chain count: auto (the backend's
    /// choice for the chain count, rows `gpu`), narrow (64 × 64 blocks, 8 × 4 per invocation,
    /// rows `gpu-narrow`), wide (128 × 128 blocks, 8 × 8 per invocation, rows `gpu-wide`).
    /// The same choice for sample and augment: the RMLD_GEMM_TILE environment variable.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        value_name = "TILE,...",
        default_value = "auto"
    )]
    pub gemm_tile: Vec<BenchTile>,
}

/// Writes the values of `preset` (held by `AugmentSettings::preset`) into `args` for every
/// option `given` says was not set on the command line.
pub fn apply_preset(preset: Preset, args: &mut AugmentArgs, given: impl Fn(&str) -> bool) {
    let values = AugmentSettings::preset(preset);
    let problem = &mut args.problem;
    let dynamics = &mut args.dynamics;
    let set = |id: &str, write: &mut dyn FnMut()| {
        if !given(id) {
            write();
        }
    };
    set("method", &mut || args.method = values.method);
    set("target", &mut || problem.target = values.problem.target);
    set("pixel_max", &mut || {
        problem.pixel_max = values.problem.pixel_max
    });
    set("lambda", &mut || problem.lambda = values.problem.lambda);
    set("sigma2", &mut || problem.sigma2 = values.problem.sigma2);
    set("tangent_k", &mut || {
        problem.tangent_k = values.problem.tangent_k
    });
    set("tangent_scale", &mut || {
        problem.tangent_scale = values.problem.tangent_scale
    });
    set("eta", &mut || dynamics.eta = values.dynamics.eta);
    set("leapfrog_steps", &mut || {
        dynamics.leapfrog_steps = values.dynamics.leapfrog_steps
    });
    set("burn_in", &mut || {
        args.burn_in = BurnInArg {
            count: values.burn_in,
            auto: values.auto_burn_in,
        }
    });
    set("reencode", &mut || args.reencode = values.reencode);
}

/// `--noise`: how the likelihood's noise level is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum NoiseArg {
    /// σ² fixed by --sigma2.
    Fixed,
    /// A per-chain precision learned by its Gibbs step.
    Gibbs,
}

impl ProblemArgs {
    /// The noise model of `--noise`, `--noise-e` and `--noise-f`.
    pub fn noise(&self) -> rmld::model::NoiseModel {
        match self.noise {
            NoiseArg::Fixed => rmld::model::NoiseModel::Fixed,
            NoiseArg::Gibbs => rmld::model::NoiseModel::Gibbs {
                e: self.noise_e,
                f: self.noise_f,
            },
        }
    }

    /// The library's settings.
    pub fn settings(&self) -> ProblemSettings {
        ProblemSettings {
            data: self.data.clone(),
            dictionary: self.dictionary.clone(),
            atoms: self.atoms,
            pixel_max: self.pixel_max,
            sigma2: self.sigma2,
            noise: self.noise(),
            target: self.target,
            tangent_k: self.tangent_k,
            tangent_scale: self.tangent_scale,
            lambda: self.lambda,
            // The --ssgl-* options are the SSGL prior's hyper-parameters.
            prior: match self.prior {
                rmld::Prior::Ssgl(_) => rmld::Prior::Ssgl(self.ssgl.settings()),
                other => other,
            },
            seed: self.seed,
            backend: self.backend,
            out: self.out.clone(),
            dataset: None,
            force: self.force,
            shard: self.shard,
            precision: self.precision,
        }
    }
}

impl DynamicsArgs {
    /// The library's settings.
    pub fn options(&self) -> DynamicsOptions {
        DynamicsOptions {
            steps: self.steps,
            batch: self.batch,
            leapfrog_steps: self.leapfrog_steps,
            eta: self.eta,
            discount: self.discount,
            no_mh: self.no_mh,
            sghmc_noise: self.sghmc_noise,
            lasso_iterations: self.lasso_iterations,
        }
    }
}

impl SampleArgs {
    /// The library's settings.
    pub fn settings(&self) -> SampleSettings {
        let settings = SampleSettings {
            problem: self.problem.settings(),
            chains: self.chains,
            samples: self.samples,
            method: self.method,
            init: self.init,
            dynamics: self.dynamics.options(),
            keep: self.keep,
            burn_in: self.burn_in.map_or(0, |b| b.count),
            auto_burn_in: self.burn_in.is_some_and(|b| b.auto),
            checkpoint_every: self.checkpoint_every,
            no_adapt: self.no_adapt,
        };
        match self.burn_in {
            Some(_) => settings,
            None => settings.with_default_warm_up(),
        }
    }
}

impl AugmentArgs {
    /// The library's settings (the preset already applied by `cli::parse`).
    pub fn settings(&self) -> AugmentSettings {
        let mut settings = AugmentSettings {
            preset: self.preset,
            problem: self.problem.settings(),
            labels: self.labels.clone(),
            ratio: self.ratio,
            balance: self.balance.clone(),
            classes: self.classes.clone(),
            limit: self.limit,
            samples: self.samples,
            burn_in: self.burn_in.count,
            auto_burn_in: self.burn_in.auto,
            method: self.method,
            dynamics: self.dynamics.options(),
            smooth: self.smooth,
            soft_threshold: self.soft_threshold,
            rescale: self.rescale,
            no_original_codes: self.no_original_codes,
            encode_test: self.encode_test,
            reencode: self.reencode,
            test_limit: self.test_limit,
            no_quality: self.no_quality,
            fit_batch_to_classes: true,
            fit_tangent_k_to_classes: true,
            fit_scale_to_data: self
                .preset
                .map(|p| AugmentSettings::preset(p).fit_scale_to_data)
                .unwrap_or_default(),
            lasso_tolerance: self.lasso_tolerance,
            code_cache: if self.no_code_cache {
                None
            } else {
                self.code_cache
                    .clone()
                    .or_else(rmld::session::default_code_cache)
            },
            sampler: self.sampler,
            model: self.model.clone(),
            adapt: self.adapt,
        };
        settings.keep_given(|name| self.given.iter().any(|g| g == name));
        settings
    }
}

impl EncodeArgs {
    /// The library's settings.
    pub fn settings(&self) -> EncodeSettings {
        EncodeSettings {
            problem: self.problem.settings(),
            limit: self.limit,
            lasso_iterations: self.lasso_iterations,
            lasso_tolerance: self.lasso_tolerance,
        }
    }
}

impl QualityArgs {
    /// The library's settings (`--json` is the command line's own).
    pub fn settings(&self) -> QualitySettings {
        QualitySettings {
            generated: self.generated.clone(),
            generated_labels: self.generated_labels.clone(),
            generated_scale: self.generated_scale,
            data: self.data.clone(),
            labels: self.labels.clone(),
            classes: self.classes.clone(),
            limit: self.limit,
            test_limit: self.test_limit,
            seed: self.seed,
            out: self.out.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Command {
        let mut all = vec!["rmld"];
        all.extend_from_slice(args);
        Cli::parse_from(all).command
    }

    /// The options' defaults are the library's `Default`s (and the paper preset's values).
    #[test]
    fn defaults_are_the_librarys() {
        let Command::Sample(sample) = parse(&["sample"]) else {
            panic!("not sample")
        };
        assert_eq!(sample.settings(), SampleSettings::default());
        let Command::Encode(encode) = parse(&["encode"]) else {
            panic!("not encode")
        };
        assert_eq!(encode.settings(), EncodeSettings::default());
        let Command::Augment(augment) = parse(&["augment"]) else {
            panic!("not augment")
        };
        // Before `cli::parse` applies a preset, every option is at its own default: the paper's.
        let mut paper = AugmentSettings::paper();
        paper.preset = None;
        // The one default the command line adds to the library's: the code cache's folder.
        paper.code_cache = rmld::session::default_code_cache();
        assert_eq!(augment.settings(), paper);
    }

    #[test]
    fn presets_fill_what_was_not_given() {
        let Command::Augment(mut augment) = parse(&["augment", "--eta", "0.5"]) else {
            panic!("not augment")
        };
        augment.preset = Some(Preset::Quality);
        apply_preset(Preset::Quality, &mut augment, |id| id == "eta");
        let mut want = AugmentSettings::quality();
        want.dynamics.eta = 0.5;
        want.code_cache = rmld::session::default_code_cache();
        assert_eq!(augment.settings(), want);
    }
}
