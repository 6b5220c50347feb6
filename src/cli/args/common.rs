//! The options several commands share: the problem (data, dictionary, model, output), the SSGL prior's hyper-parameters, the dynamics, the burn-in.

use std::path::PathBuf;

use clap::Args;

use rmld::model::{NoiseModel, Precision, Ssgl, SsglMode, TargetKind};
use rmld::session::{BackendChoice, DynamicsOptions, ProblemSettings, Shard};

/// The library's problem defaults, which the options below show and fill in.
fn problem() -> ProblemSettings {
    ProblemSettings::default()
}

/// The library's dynamics defaults.
fn dynamics() -> DynamicsOptions {
    DynamicsOptions::default()
}

/// Where the data and the dictionary come from, and the model's scale.
#[derive(Args, Debug, Clone)]
pub struct ProblemArgs {
    /// Dataset: a folder with MNIST-style IDX files (train-images-idx3-ubyte[.gz], labels optional),
    /// an IDX, NPY ((N, d) or (N, h, w), uint8 or float32) or CSV file (pixels, then the label;
    /// or after a header row that names the label's column `label`). Default: the embedded
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
    #[arg(long, value_name = "V", default_value_t = problem().pixel_max)]
    pub pixel_max: f32,

    /// How the data's values become model units: `auto` (pixels, scaled to [0, pixel-max]: 8-bit
    /// data by 255, float data within [.., 1] by 1, larger float data by its maximum, float data
    /// with a negative value taken as real-valued at full scale 1) or `raw` (taken as they
    /// are, whatever --pixel-max: real values such as a regression's responses; not for
    /// `augment`, which writes 8-bit images).
    #[arg(long, value_enum, value_name = "SCALING", default_value_t = problem().data_scale)]
    pub data_scale: rmld::io::DataScaling,

    /// sigma², the likelihood's noise variance: U(X) = 1/(2σ²)·||A X − xbar||² + lam·||X||₁.
    /// 1 is the paper's model; larger values widen the posterior of A X (more diverse, noisier
    /// samples; see README, "Noise variance sigma²").
    #[arg(long, value_name = "S2", default_value_t = problem().sigma2)]
    pub sigma2: f32,

    /// The noise model: `fixed` (σ² = --sigma2) or `gibbs` (a per-chain noise precision τ with a
    /// Gamma(--noise-e, --noise-f) prior, drawn from its conditional once per outer iteration;
    /// --lambda and --eta are then in units of the learned noise (prior lam·√τ·||X||₁, moves
    /// preconditioned by 1/τ), so the run does not depend on the pixel scale; paper and local
    /// targets, laplace prior; see docs/noise.md).
    #[arg(long, value_enum, default_value_t = NoiseArg::of(&problem().noise))]
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
    #[arg(long, value_enum, default_value_t = problem().target)]
    pub target: TargetKind,

    /// k, the tangent target's neighbours per chain: the k nearest images of the chain's class
    /// to its start image span the directions along which it varies (at most 64; the class
    /// needs k + 1 images).
    #[arg(long, value_name = "K", default_value_t = problem().tangent_k)]
    pub tangent_k: u32,

    /// s, the tangent target's spread along the neighbour span: its covariance there is
    /// (s²/k)·B Bᵀ (B = neighbours − start image), plus σ² (--sigma2) in every direction.
    #[arg(long, value_name = "S", default_value_t = problem().tangent_scale)]
    pub tangent_scale: f32,

    /// lam, the rate of the Laplace prior exp(−lam·||X||₁) and the LASSO penalty.
    #[arg(long = "lambda", value_name = "LAM", default_value_t = problem().lambda)]
    pub lambda: f32,

    /// The prior over the codes: `laplace` (exp(−lam·||X||₁), the paper's) or `ssgl` (the
    /// adaptive spike-and-slab group lasso of Deng et al. 2019, --ssgl-* options; CPU backend;
    /// see docs/priors.md).
    #[arg(long, value_enum, default_value_t = problem().prior)]
    pub prior: rmld::Prior,

    #[command(flatten)]
    pub ssgl: SsglArgs,

    /// Seed of every random draw (dictionary, starts, momenta, minibatches, MH uniforms).
    #[arg(long, default_value_t = problem().seed)]
    pub seed: u64,

    /// Where the chains run.
    #[arg(long, value_enum, default_value_t = problem().backend)]
    pub backend: BackendChoice,

    /// How the dictionary A is stored for the products: f32, or f16 (half the bytes on the
    /// GPU, read with unpack2x16float and widened: every product still multiplies and sums in
    /// f32). With f16 A's entries are rounded to half precision on every backend alike, so the
    /// CPU runs the same model (docs/benchmarks.md, "Half precision").
    #[arg(long, value_enum, default_value_t = problem().precision)]
    pub precision: Precision,

    /// Output folder (created if missing; files are written atomically).
    #[arg(long, value_name = "DIR", default_value_os_t = problem().out)]
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

    /// Run only the whole run's warm-up (every chain up to the end of its burn-in, where the
    /// step size adapts across the chains and an automatic burn-in ends) and save it into --out
    /// (warm-up.rmld, warm-up.json, report.json) for the shards to start from (--warm-up).
    /// sample and augment (docs/scale-out.md).
    #[arg(long)]
    pub warm_up_only: bool,

    /// Start this shard (--shard) from the whole run's warm-up in DIR, made by --warm-up-only
    /// with the same settings: the shards of a run that adapts its step size or ends its burn-in
    /// automatically need it to make the single run's draws.
    #[arg(long, value_name = "DIR")]
    pub warm_up: Option<PathBuf>,
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
    #[arg(long = "ssgl-mode", value_enum, default_value_t = Ssgl::default().mode)]
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

/// The momentum dynamics and the MH correction, shared by `rmld sample` and `rmld augment`.
#[derive(Args, Debug, Clone)]
pub struct DynamicsArgs {
    /// T, momentum steps per outer iteration (Algorithm 1, line 8).
    #[arg(long, value_name = "T", default_value_t = dynamics().steps)]
    pub steps: u32,

    /// m, minibatch size of the gradient estimate (Algorithm 2), drawn per chain and step.
    #[arg(long, value_name = "M", default_value_t = dynamics().batch)]
    pub batch: u32,

    /// L, leapfrog steps per proposal of --method hmc.
    #[arg(long, value_name = "L", default_value_t = dynamics().leapfrog_steps)]
    pub leapfrog_steps: u32,

    /// eta, the step size (and friction) of the momentum dynamics (Algorithm 1, lines 10-11);
    /// the step h of --method mala, the leapfrog step ε of --method hmc.
    #[arg(long, value_name = "ETA", default_value_t = dynamics().eta)]
    pub eta: f32,

    /// The MH discount (Algorithm 3): accept iff α > discount·u. 1 is SpHMC; >1 accepts less.
    #[arg(long, value_name = "D", default_value_t = dynamics().discount)]
    pub discount: f32,

    /// Accept every proposal (the paper's "RMLD w/o MH").
    #[arg(long)]
    pub no_mh: bool,

    /// Inject SGHMC noise sqrt(2·eta)·ξ into the momentum at every step (equation 2; off in Algorithm 1).
    #[arg(long)]
    pub sghmc_noise: bool,

    /// FISTA iterations for --init lasso.
    #[arg(long, value_name = "N", default_value_t = dynamics().lasso_iterations)]
    pub lasso_iterations: u32,
}

/// `--burn-in`: a fixed count, or an automatic burn-in with an optional cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BurnInArg {
    /// The count, or the automatic burn-in's cap (0: half the samples).
    pub count: u32,
    /// `auto`.
    pub auto: bool,
}

/// As it is typed: `B`, `auto` or `auto:CAP` (what `--help` shows as a default).
impl std::fmt::Display for BurnInArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.auto, self.count) {
            (false, count) => write!(f, "{count}"),
            (true, 0) => write!(f, "auto"),
            (true, cap) => write!(f, "auto:{cap}"),
        }
    }
}

pub(super) fn parse_burn_in(text: &str) -> Result<BurnInArg, String> {
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

/// `--noise`: how the likelihood's noise level is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum NoiseArg {
    /// σ² fixed by --sigma2.
    Fixed,
    /// A per-chain precision learned by its Gibbs step.
    Gibbs,
}

impl NoiseArg {
    /// The option naming `noise`'s kind.
    fn of(noise: &NoiseModel) -> NoiseArg {
        match noise {
            NoiseModel::Fixed => NoiseArg::Fixed,
            NoiseModel::Gibbs { .. } => NoiseArg::Gibbs,
        }
    }
}

impl ProblemArgs {
    /// The noise model of `--noise`, `--noise-e` and `--noise-f`.
    pub fn noise(&self) -> NoiseModel {
        match self.noise {
            NoiseArg::Fixed => NoiseModel::Fixed,
            NoiseArg::Gibbs => NoiseModel::Gibbs {
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
            data_scale: self.data_scale,
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
            warm_up_only: self.warm_up_only,
            warm_up: self.warm_up.clone(),
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
