//! `rmld augment`'s arguments, its presets, and `rmld amortize train`'s (augment's and the sampler's).

use std::path::PathBuf;

use clap::Args;

use rmld::amortize::CodeTrainSettings;
use rmld::io::Rescale;
use rmld::methods::{AugmentMethod, SamplerChoice};
use rmld::session::{AmortizeSettings, AugmentSettings, Preset};

use super::common::{parse_burn_in, BurnInArg, DynamicsArgs, ProblemArgs};

/// Before a preset is applied every option is at its own default: the paper preset's, the
/// library's (`AugmentSettings::paper`).
fn paper() -> AugmentSettings {
    AugmentSettings::paper()
}

/// The paper preset's burn-in, as `--burn-in` takes it.
fn paper_burn_in() -> BurnInArg {
    BurnInArg {
        count: paper().burn_in,
        auto: paper().auto_burn_in,
    }
}

/// The library's defaults of the learned sampler's training.
fn train() -> CodeTrainSettings {
    CodeTrainSettings::default()
}

/// `--ratio`: originals per generated sample, typed `O:G` (or one number, O/G).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ratio(pub f64);

/// As it is typed: `6:1`.
impl std::fmt::Display for Ratio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:1", self.0)
    }
}

fn parse_ratio(text: &str) -> Result<Ratio, String> {
    rmld::orchestrator::parse_ratio(text).map(Ratio)
}

/// `rmld amortize train`: augment's options (the teacher; --out is the model file) and the
/// sampler's.
#[derive(Args, Debug, Clone)]
// --out is the problem's output folder everywhere else; here it names the model file.
#[command(mut_arg("out", |a| a.value_name("MODEL").help(
    "The model file to write, its report beside it as MODEL.json (the teacher's run goes into \
     MODEL.teacher/, an interrupted training's state into MODEL.partial)"
)))]
pub struct AmortizeTrainArgs {
    #[command(flatten)]
    pub augment: AugmentArgs,

    /// Width of the operator network's hidden layer.
    #[arg(long, value_name = "H", default_value_t = train().hidden)]
    pub hidden: usize,

    /// Adam steps per class.
    #[arg(long, value_name = "N", default_value_t = train().fit_steps)]
    pub fit_steps: u32,

    /// Pairs of teacher samples per step.
    #[arg(long, value_name = "N", default_value_t = train().pairs)]
    pub pairs: usize,

    /// Adam's learning rate.
    #[arg(long, value_name = "LR", default_value_t = train().lr)]
    pub lr: f32,

    /// The smallest standard deviation of a move, in standardised code units.
    #[arg(long, value_name = "S", default_value_t = train().sigma_min)]
    pub sigma_min: f32,

    /// Applications of the operator per generated sample.
    #[arg(long, value_name = "N", default_value_t = train().apply_steps)]
    pub apply_steps: u32,

    /// Train on pairs of a teacher sample and one of its K nearest (local moves; samples stay
    /// near the teacher's); 0: any two samples of the class (a jump to the class's distribution).
    #[arg(long, value_name = "K", default_value_t = train().neighbours)]
    pub neighbours: usize,
}

impl AmortizeTrainArgs {
    /// The library's settings (augment's preset already applied by `cli::parse`).
    pub fn settings(&self) -> AmortizeSettings {
        let teacher = self.augment.settings();
        AmortizeSettings {
            model: teacher.problem.out.clone(),
            force: teacher.problem.force,
            train: CodeTrainSettings {
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
    #[arg(long, value_name = "O:G", default_value_t = Ratio(paper().ratio), value_parser = parse_ratio,
          allow_hyphen_values = true)]
    pub ratio: Ratio,

    /// Samples per class as imbalanced-learn's `sampling_strategy`, instead of --ratio: `auto`
    /// (= `not-majority`), `minority`, `not-minority`, `all` (those classes up to the majority's
    /// count), a ratio in (0, 1] (two classes: the minority's count over the majority's after),
    /// or each class's count after augmenting, `LABEL:COUNT,LABEL:COUNT`. The augmented set
    /// holds every original, the classes given no new image too.
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
    #[arg(long, value_name = "K", default_value_t = paper().samples)]
    pub samples: u32,

    /// Outer iterations run before a chain's samples are kept, or `auto` (`auto:CAP`): end the
    /// burn-in where the adapted step sizes and the chains settle, at most after CAP (200)
    /// iterations, then keep --samples per chain.
    #[arg(long, value_name = "B|auto[:CAP]", default_value_t = paper_burn_in(), value_parser = parse_burn_in)]
    pub burn_in: BurnInArg,

    /// Adapt the step size of --method mala or hmc during the burn-in, per class (each class's
    /// chains toward the method's target acceptance; with hmc the trajectory length by ChEES),
    /// then freeze it. Off by default: the quality preset stops its chains short of
    /// equilibrium on purpose (docs/adaptation.md).
    #[arg(long)]
    pub adapt: bool,

    /// What generates the samples.
    #[arg(long, value_enum, default_value_t = paper().method)]
    pub method: AugmentMethod,

    #[command(flatten)]
    pub dynamics: DynamicsArgs,

    /// Gaussian smoothing of every generated image, standard deviation in pixels (0: off).
    #[arg(long, value_name = "PX", default_value_t = paper().smooth)]
    pub smooth: f32,

    /// Method deform's shading: each deformation draw times exp(A·f), f a smooth random field
    /// of unit spread (6 px at 28 px), light and shade that vary across the item, on images of
    /// 28 px or more (0: off; docs/usefulness.md, "Shading") [quality preset: 0.1]
    #[arg(long, value_name = "A", default_value_t = paper().shade)]
    pub shade: f32,

    /// Method deform's elastic distortions: on a set of strokes (most ink pixels saturated) of
    /// 28 px or more, a class's new images past four per original are its images distorted by
    /// a random field of σ 4 px and scale ALPHA px at 28 px (0: off, interpolants as on graded
    /// surfaces; Simard's 34 helps rare classes more and keeps fewer labels;
    /// docs/usefulness.md, "Elastic distortions") [quality preset: 17]
    #[arg(long, value_name = "ALPHA", default_value_t = paper().elastic)]
    pub elastic: f32,

    /// Soft-threshold generated pixels by τ on the 0..255 scale after smoothing (0: off).
    #[arg(long, value_name = "TAU", default_value_t = paper().soft_threshold)]
    pub soft_threshold: f32,

    /// How generated images reach 0..255: clip, or stretch each to a maximum of 255.
    #[arg(long, value_enum, default_value_t = paper().rescale)]
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
          action = clap::ArgAction::Set, default_value_t = paper().reencode)]
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
    #[arg(long, value_name = "TOL", default_value_t = paper().lasso_tolerance)]
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
    #[arg(long, value_enum, default_value_t = paper().sampler)]
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
    // The amortized sampler stands in for chains (its model learned a chain method's codes):
    // under a preset whose method draws without chains (quality's deform), it takes the
    // preset's chain method, HMC, the quality preset's method before deform.
    let method = match (values.method.moves(), args.sampler.is_amortized()) {
        (false, true) => rmld::AugmentMethod::Chains(rmld::methods::Method::Hmc),
        _ => values.method,
    };
    set("method", &mut || args.method = method);
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
    set("shade", &mut || args.shade = values.shade);
    set("elastic", &mut || args.elastic = values.elastic);
}

impl AugmentArgs {
    /// The library's settings (the preset already applied by `cli::parse`).
    pub fn settings(&self) -> AugmentSettings {
        let mut settings = AugmentSettings {
            preset: self.preset,
            problem: self.problem.settings(),
            labels: self.labels.clone(),
            ratio: self.ratio.0,
            balance: self.balance.clone(),
            classes: self.classes.clone(),
            limit: self.limit,
            samples: self.samples,
            burn_in: self.burn_in.count,
            auto_burn_in: self.burn_in.auto,
            method: self.method,
            dynamics: self.dynamics.options(),
            smooth: self.smooth,
            shade: self.shade,
            fit_shade_to_ink: self
                .preset
                .is_some_and(|p| AugmentSettings::preset(p).fit_shade_to_ink),
            elastic: self.elastic,
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
