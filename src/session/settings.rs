//! Settings of the runs a user starts (sample, augment, encode): plain structs with documented defaults, presets and one validation each.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::io::postprocess::deserialize_rescale;
use crate::io::postprocess::{PostProcess, Rescale};
use crate::methods::Method;
pub use crate::methods::{AugmentMethod, SamplerChoice};
pub use crate::model::data_scale::{ScaleFit, PIXELS_PER_TANGENT_DIRECTION};
use crate::model::TargetKind;
pub use crate::orchestrator::backend_choice::BackendChoice;
pub use crate::orchestrator::problem::ProblemSettings;
use crate::orchestrator::settings::check_lasso_tolerance;
pub use crate::orchestrator::settings::lasso_tolerance_default;
pub use crate::orchestrator::settings::DynamicsOptions;
use crate::orchestrator::{Init, KeepPolicy, SamplerSettings};
use crate::{Error, Result};

/// Settings of a sampling run (`Sampler`): C chains for K outer iterations, written to
/// `problem.out`. Serialised, they are the configuration a checkpoint stores.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SampleSettings {
    /// Data, dictionary, model scale, seed, backend and output folder.
    pub problem: ProblemSettings,
    /// Number of chains C, run together.
    pub chains: usize,
    /// K, outer iterations: samples per chain.
    pub samples: u32,
    /// The proposal: RMLD, or an exact method with the full-data gradient (MALA, HMC).
    pub method: Method,
    /// Start each chain at white noise, or at the LASSO code of a random data point (eq. 10).
    pub init: Init,
    /// Dynamics and MH.
    #[serde(flatten)]
    pub dynamics: DynamicsOptions,
    /// Which samples are written (after the burn-in).
    pub keep: KeepPolicy,
    /// Outer iterations discarded before any sample is kept; with `auto_burn_in`, the most
    /// (0: half the samples).
    pub burn_in: u32,
    /// End the burn-in automatically, where the adapted quantities settle and the chains stop
    /// drifting (`orchestrator::BurnInMonitor`), at most after `burn_in` iterations.
    #[serde(default)]
    pub auto_burn_in: bool,
    /// Write a checkpoint every N outer iterations; 0: only when stopped early.
    pub checkpoint_every: u32,
    /// Also write one once this many minutes have passed since the last (0: never), so that a
    /// run killed without warning (kill -9, out of memory, a power cut) resumes from there. A
    /// run that completes without `checkpoint_every` removes it before publishing.
    #[serde(default = "checkpoint_minutes_default")]
    pub checkpoint_minutes: f64,
    /// Keep the given step size: no warm-up adaptation. By default MALA's and HMC's step size
    /// adapts during the burn-in by dual averaging across all chains toward 0.574 (MALA) or
    /// 0.8 (HMC) mean acceptance, and HMC's trajectory length by ChEES with jittered leapfrog
    /// counts, then both freeze (`orchestrator::StepAdaptation`).
    #[serde(default)]
    pub no_adapt: bool,
}

impl SampleSettings {
    /// The settings that decide a run's draws, as shards and warm-ups compare them: every one
    /// but where the run goes (`ProblemSettings::clear_placement`) and how often it
    /// checkpoints (a checkpoint changes no draw).
    pub(crate) fn deciding_the_draws(&self) -> SampleSettings {
        let mut deciding = self.clone();
        deciding.problem.clear_placement();
        deciding.checkpoint_every = 0;
        deciding.checkpoint_minutes = checkpoint_minutes_default();
        deciding
    }
}

impl Default for SampleSettings {
    fn default() -> Self {
        SampleSettings {
            problem: ProblemSettings::default(),
            chains: 64,
            samples: 4,
            method: Method::Rmld,
            init: Init::Lasso,
            dynamics: DynamicsOptions::default(),
            keep: KeepPolicy::All,
            burn_in: 0,
            auto_burn_in: false,
            checkpoint_every: 0,
            checkpoint_minutes: checkpoint_minutes_default(),
            no_adapt: false,
        }
    }
}

/// `SampleSettings::checkpoint_minutes`' default: a killed run loses at most 10 minutes, for a
/// checkpoint's write (the chains' positions and the traces) that takes well under a second.
pub fn checkpoint_minutes_default() -> f64 {
    10.0
}

impl SampleSettings {
    /// The warm-up adaptation this run makes: MALA's and HMC's step size over the burn-in
    /// (when there is one and `no_adapt` is off); None otherwise.
    pub fn adaptation(&self) -> Option<crate::orchestrator::Adaptation> {
        let burn_in = self.burn_in_cap();
        (!self.no_adapt && burn_in > 0 && burn_in < self.samples)
            .then(|| crate::orchestrator::Adaptation::for_method(self.method, burn_in))
            .flatten()
    }

    /// `self` with the warm-up a run gets when none is given: for MALA and HMC, which adapt
    /// their step size (and HMC its trajectory length) during the burn-in, an automatic burn-in
    /// capped at half the samples (Stan's default warm-up share); none (`burn_in` 0) for RMLD,
    /// with `no_adapt` and for an SSGL prior in adapt mode (it adapts over a burn-in fixed in
    /// advance). A shard gets the single run's default, so it starts from the single run's
    /// warm-up (`warm_up`). The CLI and the Python package apply it when `burn_in` is not given.
    pub fn with_default_warm_up(mut self) -> Self {
        let adapts = self.method.target_acceptance().is_some() && !self.no_adapt;
        let ssgl_adapts = self.problem.prior.adapts_over_burn_in();
        self.burn_in = 0;
        self.auto_burn_in = adapts && !ssgl_adapts && self.samples >= 2;
        self
    }

    /// What couples the chains during the burn-in (None: nothing, each chain runs on its own):
    /// a step size adapted across all chains, an automatic burn-in's settle check on all
    /// chains. The shards of such a run start from its warm-up (`warm_up`).
    pub fn coupled_warm_up(&self) -> Option<&'static str> {
        match (self.auto_burn_in().is_some(), self.adaptation().is_some()) {
            (true, _) => Some("ends its automatic burn-in on a check of all the chains"),
            (false, true) => Some("adapts its step size across all the chains during the burn-in"),
            (false, false) => None,
        }
    }

    /// The fixed burn-in, or an automatic one's cap (`burn_in`, or half the samples when 0).
    pub fn burn_in_cap(&self) -> u32 {
        if self.auto_burn_in && self.burn_in == 0 {
            self.samples / 2
        } else {
            self.burn_in
        }
    }

    /// The automatic burn-in, if asked for and the run is long enough to have one.
    pub fn auto_burn_in(&self) -> Option<crate::orchestrator::AutoBurnIn> {
        let cap = self.burn_in_cap();
        (self.auto_burn_in && cap > 0).then_some(crate::orchestrator::AutoBurnIn { cap })
    }

    /// Checks every setting that does not need the data; returns the orchestrator's settings.
    pub fn validate(&self) -> Result<SamplerSettings> {
        let settings = self.sampler_settings()?;
        self.problem.validate()?;
        Ok(settings)
    }

    /// The orchestrator's settings, checked (without the problem's). A shard's run its part of
    /// the chains, `shard.range(chains)`, from that range's first chain on.
    pub(crate) fn sampler_settings(&self) -> Result<SamplerSettings> {
        if !(self.checkpoint_minutes.is_finite() && self.checkpoint_minutes >= 0.0) {
            return Err(Error::usage(
                "checkpoint_minutes",
                format!(
                    "must be a number of minutes >= 0 (0: no timed checkpoints), got {}",
                    self.checkpoint_minutes
                ),
            ));
        }
        let mut settings = self.dynamics.sampler(
            self.chains,
            self.samples,
            self.method,
            self.init,
            self.problem.seed,
        )?;
        let cap = self.burn_in_cap();
        if self.keep != KeepPolicy::Last && cap >= self.samples {
            return Err(Error::usage(
                "burn_in",
                format!("{cap} discards every one of the {} samples", self.samples),
            ));
        }
        if let KeepPolicy::Every(n) = self.keep {
            // The first kept is the n-th after the burn-in (its cap: the latest it may end).
            if self.keep.kept_up_to(self.samples, cap, self.samples) == 0 {
                return Err(Error::usage(
                    "keep",
                    format!(
                        "every:{n} keeps none of the {} samples: after a burn-in of {cap} it \
                         keeps sample {} first (ask every:{} at most, or at least {} samples)",
                        self.samples,
                        cap as u64 + n as u64,
                        self.samples - cap,
                        cap as u64 + n as u64
                    ),
                ));
            }
        }
        settings.adapt = self.adaptation();
        settings.auto_burn_in = self.auto_burn_in();
        if let (Some(shard), None, Some(why)) = (
            self.problem.shard,
            &self.problem.warm_up,
            self.coupled_warm_up(),
        ) {
            let why = format!(
                "(method {}) {why}",
                format!("{:?}", self.method).to_lowercase()
            );
            let otherwise = "pass `no_adapt` with `shard`, with the single run's step size as \
                             `eta` and a fixed burn-in";
            return Err(shard.needs_warm_up(&why, otherwise));
        }
        if let Some(shard) = self.problem.shard {
            shard.check()?;
            let range = shard.range(self.chains);
            if range.is_empty() {
                return Err(Error::usage(
                    "shard",
                    format!(
                        "{shard}: shard {} of {} holds none of the {} chains (split the chains \
                         into at most {} shards)",
                        shard.index, shard.count, self.chains, self.chains
                    ),
                ));
            }
            settings.chains = range.len();
            settings.dynamics.chain_offset = range.start as u32;
        }
        Ok(settings)
    }
}

/// Named sets of augmentation settings (`AugmentSettings::preset`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// The samples that help classifiers most (docs/usefulness.md): --method deform (exact
    /// draws along each image's transformation tangents) --shade 0.1 --pixel-max 1 --lambda
    /// 0.05 --reencode, with --smooth scaled to the data unless given; with --method hmc, the best
    /// chains measured on the sample-quality metrics (docs/quality.md): --target tangent
    /// --sigma2 0.01 --eta 0.007 --leapfrog-steps 60 --burn-in 20 --tangent-k 16
    /// --tangent-scale 3, --eta and --sigma2 scaled to the data (docs/adaptation.md).
    Quality,
    /// The paper's settings: every option at its own default (--target paper --method rmld
    /// --pixel-max 255 --lambda 5 --sigma2 1 --eta 0.01, no burn-in).
    Paper,
}

impl Preset {
    /// The preset of an augmentation that names none: `Quality`, unless the user chose the
    /// method, whose own settings then stay the paper's (`Paper`). The command line and the
    /// Python package both follow this rule.
    pub fn default_for(method_given: bool) -> Preset {
        if method_given {
            Preset::Paper
        } else {
            Preset::Quality
        }
    }
}

/// Settings of a class-conditional augmentation (`Augmenter`): new samples per class, mixed
/// with the originals, written to `problem.out`. `Default` is the `quality` preset, as for
/// `rmld augment` without options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AugmentSettings {
    /// The preset these settings started from (recorded in the report).
    pub preset: Option<Preset>,
    /// Data, dictionary, model scale, seed, backend and output folder.
    pub problem: ProblemSettings,
    /// Labels for `problem.data` when they are not beside it.
    pub labels: Option<PathBuf>,
    /// Originals per generated sample, per class (6: the paper's 6:1); in a settings file or
    /// from Python a number or the command line's `O:G` text.
    #[serde(deserialize_with = "deserialize_ratio")]
    pub ratio: f64,
    /// Samples per class in imbalanced-learn's words instead of `ratio` (None: `ratio`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balance: Option<crate::orchestrator::Balance>,
    /// Only these classes (label values); `None`: every class in the data.
    pub classes: Option<Vec<u32>>,
    /// Use only the first N training images (before `classes` filters them).
    pub limit: Option<usize>,
    /// Samples kept per chain; the chains per class are ceil(generated / samples).
    pub samples: u32,
    /// Outer iterations run before a chain's samples are kept; with `auto_burn_in`, the most
    /// the automatic burn-in may take (0: `AUGMENT_AUTO_BURN_IN_CAP`).
    pub burn_in: u32,
    /// End the burn-in where the adapted step sizes and the chains settle
    /// (`orchestrator::BurnInMonitor`, as `rmld sample --burn-in auto`), at most after `burn_in`
    /// iterations; the run ends once every class has its samples after it.
    #[serde(default)]
    pub auto_burn_in: bool,
    /// What generates the samples.
    pub method: AugmentMethod,
    /// Dynamics and MH.
    pub dynamics: DynamicsOptions,
    /// Gaussian smoothing of every generated image, standard deviation in pixels (0: off).
    pub smooth: f32,
    /// Method deform's shading: each deformation draw times exp(shade · f), f a smooth random
    /// field of unit spread (6 px at 28 px), on images of 28 px or more (0: off; the quality
    /// preset's 0.1; `model::shading`).
    #[serde(default)]
    pub shade: f32,
    /// Shade graded surfaces (`ink` "surfaces": most ink pixels between 0.1 and 0.9, such as
    /// Fashion-MNIST's garments) by `model::shading::SURFACE_SHADE` instead of `shade`: the
    /// quality preset's, turned off when `shade` is given (docs/usefulness.md, "Tangent spreads
    /// learned on surfaces").
    #[serde(default)]
    pub fit_shade_to_ink: bool,
    /// Method deform's elastic distortions: on a set of strokes of 28 px or more, a class's new
    /// images past four per original are its images distorted by a random field of σ 4 px and
    /// scale α = `elastic` px at 28 px (0: off, interpolants as on surfaces; the quality
    /// preset's 17; `model::elastic`).
    #[serde(default)]
    pub elastic: f32,
    /// Soft-threshold generated pixels by τ on the 0..255 scale after smoothing (0: off).
    pub soft_threshold: f32,
    /// How generated images reach 0..255.
    #[serde(deserialize_with = "deserialize_rescale")]
    pub rescale: Rescale,
    /// Skip LASSO-encoding the originals (no codes.npy, labels.npy).
    pub no_original_codes: bool,
    /// Also LASSO-encode the test split found beside `problem.data`.
    pub encode_test: bool,
    /// Write as each generated sample's code the LASSO code of its post-processed image instead
    /// of the chain's position.
    pub reencode: bool,
    /// Encode only the first N test images (and use only them as the quality reference).
    pub test_limit: Option<usize>,
    /// Skip the sample-quality metrics.
    pub no_quality: bool,
    /// Lower a minibatch larger than the smallest chosen class to that class's size (the report
    /// and the summary say so) instead of refusing the run; the command line turns it off when
    /// `--batch` is given, so an explicit minibatch that does not fit stays an error.
    #[serde(default = "fit_batch_default")]
    pub fit_batch_to_classes: bool,
    /// Lower the tangent target's k when the smallest chosen class has fewer than k + 1 images
    /// (the report and the summary say so) instead of refusing the run; the command line turns
    /// it off when `--tangent-k` is given.
    #[serde(default = "fit_batch_default")]
    pub fit_tangent_k_to_classes: bool,
    /// Every LASSO encoding of the run (the chains' starts, the originals', the test split's,
    /// the re-encoding) stops a row once its relative duality gap is at most this, or after
    /// `lasso_iterations` (CPU backend, by ADMM; 0: FISTA, every iteration; the GPU always runs
    /// FISTA's every iteration).
    #[serde(default = "lasso_tolerance_default")]
    pub lasso_tolerance: f32,
    /// Folder caching the originals' and the test split's LASSO codes, keyed by the encoded
    /// rows, the dictionary, λ and the stop rule, so a repeated run reads them instead
    /// (`session::default_code_cache` is the command line's); None: no cache.
    #[serde(default)]
    pub code_cache: Option<PathBuf>,
    /// Which of η, σ² and the smoothing are rescaled to the data's own length scales before
    /// the run (the quality preset: all three; the command line clears the ones it was given;
    /// settings written before it existed: none). See docs/adaptation.md, "Scales from the data".
    #[serde(default)]
    pub fit_scale_to_data: ScaleFit,
    /// Where the new samples come from (`Mcmc`, the default, or `Amortized`: `model`'s sampler).
    #[serde(default)]
    pub sampler: SamplerChoice,
    /// The trained sampler of `sampler = Amortized` (`rmld amortize train`).
    #[serde(default)]
    pub model: Option<PathBuf>,
    /// Adapt MALA's or HMC's step size during the burn-in, each class on its own chains' mean
    /// acceptance (dual averaging toward 0.574 / 0.8), and with HMC the trajectory length by
    /// ChEES; frozen after the burn-in. Off in both presets: the quality preset stops its chains
    /// short of equilibrium on purpose, at an acceptance already above HMC's target
    /// (docs/adaptation.md, "Per-class step sizes").
    #[serde(default)]
    pub adapt: bool,
}

/// `fit_batch_to_classes`'s and `fit_tangent_k_to_classes`'s default, for settings written
/// before they existed.
fn fit_batch_default() -> bool {
    true
}

impl Default for AugmentSettings {
    fn default() -> Self {
        AugmentSettings::quality()
    }
}

/// The quality preset's elastic scale α (`AugmentSettings::elastic`), px at 28 px: half of
/// Simard et al.'s 34, the largest measured whose draws keep label preservation within 3 points
/// of real images at eight new per original (docs/usefulness.md, "Elastic distortions").
pub const QUALITY_ELASTIC: f32 = 17.0;

/// The quality preset's shading amplitude (`AugmentSettings::shade`): docs/usefulness.md,
/// "Shading", measured against 0, 0.15, 0.2 and 0.3 on four datasets.
pub const QUALITY_SHADE: f32 = 0.1;

/// `rmld augment --burn-in auto`'s cap when none is given: the outer iterations the automatic
/// burn-in may take at most (an augment chain keeps only a few samples, so half of them, `rmld
/// sample`'s cap, would leave no room to warm up).
pub const AUGMENT_AUTO_BURN_IN_CAP: u32 = 200;

impl AugmentSettings {
    /// The setting that sizes the generated set, as refusals name it: `balance` where given,
    /// else `ratio`.
    pub fn count_setting(&self) -> &'static str {
        match self.balance {
            Some(_) => "balance",
            None => "ratio",
        }
    }

    /// The paper's settings: every setting at its own default (paper target, RMLD, pixel-max
    /// 255, λ 5, σ² 1, η 0.01, no burn-in).
    pub fn paper() -> Self {
        AugmentSettings {
            preset: Some(Preset::Paper),
            problem: ProblemSettings::default(),
            labels: None,
            ratio: 6.0,
            balance: None,
            classes: None,
            limit: None,
            samples: 4,
            burn_in: 0,
            auto_burn_in: false,
            method: AugmentMethod::Chains(Method::Rmld),
            dynamics: DynamicsOptions::default(),
            smooth: 0.5,
            shade: 0.0,
            fit_shade_to_ink: false,
            elastic: 0.0,
            soft_threshold: 0.0,
            rescale: Rescale::Clip,
            no_original_codes: false,
            encode_test: false,
            reencode: false,
            test_limit: None,
            no_quality: false,
            fit_batch_to_classes: true,
            fit_tangent_k_to_classes: true,
            lasso_tolerance: lasso_tolerance_default(),
            code_cache: None,
            fit_scale_to_data: ScaleFit::default(),
            sampler: SamplerChoice::Mcmc,
            model: None,
            adapt: false,
        }
    }

    /// The settings whose samples help classifiers most (docs/usefulness.md): method deform
    /// with shading 0.1, pixel-max 1, λ 0.05, re-encoding, the smoothing rescaled to the image
    /// side. The chain
    /// settings are the best measured on the sample-quality metrics and the Table 2 SVM
    /// (docs/quality.md), for `method` hmc: the tangent target, σ² 0.01, η 0.007, 60 leapfrog
    /// steps, burn-in 20, k 16, s 3; η, σ² and the smoothing rescaled to the data's length
    /// scales and s narrowed where classes sit closer than MNIST's (`fit_scale_to_data`; on
    /// MNIST the factors are about 1).
    pub fn quality() -> Self {
        let mut s = AugmentSettings::paper();
        s.preset = Some(Preset::Quality);
        s.method = AugmentMethod::Deform;
        s.problem.target = TargetKind::Tangent;
        s.problem.pixel_max = 1.0;
        s.problem.lambda = 0.05;
        s.problem.sigma2 = 0.01;
        s.problem.tangent_k = 16;
        s.problem.tangent_scale = 3.0;
        s.dynamics.eta = 0.007;
        s.dynamics.leapfrog_steps = 60;
        s.burn_in = 20;
        s.reencode = true;
        s.shade = QUALITY_SHADE;
        s.fit_shade_to_ink = true;
        s.elastic = QUALITY_ELASTIC;
        s.fit_scale_to_data = ScaleFit::ALL;
        s
    }

    /// The settings of `preset`.
    pub fn preset(preset: Preset) -> Self {
        match preset {
            Preset::Quality => AugmentSettings::quality(),
            Preset::Paper => AugmentSettings::paper(),
        }
    }

    /// The settings whose value, given by the caller, is kept from the fitting to the data
    /// (and `shade` and `elastic` from being turned off with a method other than deform).
    pub const KEPT_WHEN_GIVEN: [&'static str; 8] = [
        "eta",
        "sigma2",
        "smooth",
        "tangent_scale",
        "batch",
        "tangent_k",
        "shade",
        "elastic",
    ];

    /// Keeps the value of each setting the caller gave (`given(name)`, the settings' flat
    /// names, `KEPT_WHEN_GIVEN`): the fitting to the data (η, σ², the smoothing and the tangent
    /// scale to its length scales; the batch and k to the smallest class) leaves it alone,
    /// unless the caller also gave that fitting's own switch (`fit_scale_to_data`,
    /// `fit_batch_to_classes`, `fit_tangent_k_to_classes`), which then decides. A shading not
    /// given is turned off for a method other than deform (the quality preset's is deform's);
    /// one given holds on graded surfaces too (`fit_shade_to_ink` off).
    pub fn keep_given(&mut self, given: impl Fn(&str) -> bool) {
        if !given("fit_scale_to_data") {
            let fit = &mut self.fit_scale_to_data;
            fit.eta &= !given("eta");
            fit.sigma2 &= !given("sigma2");
            fit.smooth &= !given("smooth");
            fit.tangent_scale &= !given("tangent_scale");
            fit.tangent_k &= !given("tangent_k");
        }
        // A preset's shading is method deform's: another method given keeps none of it.
        if !given("shade") && self.method != AugmentMethod::Deform {
            self.shade = 0.0;
        }
        if !given("elastic") && self.method != AugmentMethod::Deform {
            self.elastic = 0.0;
        }
        if given("shade") && !given("fit_shade_to_ink") {
            self.fit_shade_to_ink = false;
        }
        if given("batch") && !given("fit_batch_to_classes") {
            self.fit_batch_to_classes = false;
        }
        if given("tangent_k") && !given("fit_tangent_k_to_classes") {
            self.fit_tangent_k_to_classes = false;
        }
    }

    /// The post-processing of generated images.
    pub fn postprocess(&self) -> PostProcess {
        PostProcess {
            smooth: self.smooth,
            soft_threshold: self.soft_threshold,
            rescale: self.rescale,
        }
    }

    /// The problem as the generator sees it: kernel HMC samples images on the 0..1 scale, where
    /// its step size means the same for every dataset.
    pub fn problem_settings(&self) -> ProblemSettings {
        let mut problem = self.problem.clone();
        if self.method.samples_images() {
            problem.pixel_max = 1.0;
        }
        problem
    }

    /// The fixed burn-in, or the automatic one's cap.
    pub fn burn_in_cap(&self) -> u32 {
        if self.auto_burn_in && self.burn_in == 0 {
            AUGMENT_AUTO_BURN_IN_CAP
        } else {
            self.burn_in
        }
    }

    /// What couples the chains during the burn-in (None: nothing, each chain runs on its own):
    /// per-class step sizes adapted on each class's chains (`adapt`), an automatic burn-in's
    /// settle check on all chains. The shards of such a run start from its warm-up (`warm_up`).
    pub fn coupled_warm_up(&self) -> Option<&'static str> {
        match (self.auto_burn_in, self.adapt) {
            (true, _) => Some("ends its automatic burn-in on a check of all the chains"),
            (false, true) => Some("adapts each class's step size on its chains during the burn-in"),
            (false, false) => None,
        }
    }

    /// Method deform's own amounts: `shade` an amplitude from 0 to `MAX_SHADE`, `elastic` a
    /// scale from 0 to `MAX_ELASTIC` px, and neither above 0 with another method.
    fn check_deform_amounts(&self) -> Result<()> {
        use crate::model::{elastic::MAX_ELASTIC, shading::MAX_SHADE};
        let amounts = [
            ("shade", self.shade, MAX_SHADE, "an amplitude", "", "shades"),
            (
                "elastic",
                self.elastic,
                MAX_ELASTIC,
                "a scale",
                " px",
                "distorts",
            ),
        ];
        for (name, value, max, what, unit, verb) in amounts {
            if !(value.is_finite() && (0.0..=max).contains(&value)) {
                return Err(Error::usage(
                    name,
                    format!("must be {what} from 0 (off) to {max}{unit}, got {value}"),
                ));
            }
            if value > 0.0 && self.method != AugmentMethod::Deform {
                return Err(Error::usage(
                    name,
                    format!(
                        "{verb} method deform's draws; method {} draws none: leave it out or \
                         give 0",
                        self.method.name()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks the settings that do not need the data (the rest is checked once it is loaded).
    pub fn validate(&self) -> Result<()> {
        self.postprocess().validate()?;
        self.problem_settings().validate()?;
        if !(self.ratio.is_finite() && self.ratio > 0.0) {
            return Err(Error::usage(
                "ratio",
                format!("must be positive, got {}", self.ratio),
            ));
        }
        // Refused here, before anything is written: the test split's limit was otherwise only
        // met by the quality metrics after the outputs, which then went without them.
        for (name, count) in [("limit", self.limit), ("test_limit", self.test_limit)] {
            if count == Some(0) {
                return Err(Error::usage(name, "must be at least 1"));
            }
        }
        if self.samples == 0 {
            return Err(Error::usage("samples", "must be at least 1"));
        }
        self.check_deform_amounts()?;
        check_lasso_tolerance(self.lasso_tolerance)?;
        match (self.sampler, &self.model) {
            (SamplerChoice::Amortized, None) => {
                return Err(Error::usage(
                    "model",
                    "the amortized sampler needs the model file from `rmld amortize train`",
                ))
            }
            (SamplerChoice::Mcmc, Some(_)) => {
                return Err(Error::usage(
                    "model",
                    "a model is only read by the amortized sampler (sampler = amortized)",
                ))
            }
            (SamplerChoice::Amortized, Some(_)) if self.problem.shard.is_some() => {
                return Err(Error::usage(
                    "shard",
                    "the amortized sampler runs no chains to share out",
                ))
            }
            _ => {}
        }
        Ok(())
    }
}

/// Settings of an encoding run (`Encoder`): LASSO codes of a dataset and their reconstructions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EncodeSettings {
    /// Data, dictionary, model scale, seed, backend and output folder.
    pub problem: ProblemSettings,
    /// Encode only the first N observations; `None`: all (the name `augment` uses for the same idea).
    #[serde(alias = "count")]
    pub limit: Option<usize>,
    /// The iteration cap (as `lasso_iterations` everywhere else).
    #[serde(alias = "iterations")]
    pub lasso_iterations: u32,
    /// Each row stops once its relative duality gap is at most this (CPU, by ADMM; 0: FISTA's
    /// every iteration), as `AugmentSettings::lasso_tolerance`, so both commands give a row the
    /// same code.
    #[serde(default = "lasso_tolerance_default")]
    pub lasso_tolerance: f32,
}

impl Default for EncodeSettings {
    fn default() -> Self {
        EncodeSettings {
            problem: ProblemSettings::default(),
            limit: None,
            lasso_iterations: 200,
            lasso_tolerance: lasso_tolerance_default(),
        }
    }
}

impl EncodeSettings {
    /// Checks the settings that do not need the data.
    pub fn validate(&self) -> Result<()> {
        self.problem.validate()?;
        if self.limit == Some(0) {
            return Err(Error::usage("limit", "must be at least 1"));
        }
        let field = match (self.problem.warm_up_only, &self.problem.warm_up) {
            (true, _) => Some("warm_up_only"),
            (false, Some(_)) => Some("warm_up"),
            (false, None) => None,
        };
        if let Some(field) = field {
            return Err(Error::usage(
                field,
                "encode runs no chains to warm up: its shards run without a warm-up",
            ));
        }
        if self.lasso_iterations == 0 {
            return Err(Error::usage("lasso_iterations", "must be at least 1"));
        }
        check_lasso_tolerance(self.lasso_tolerance)
    }
}

/// `ratio` as a number (originals per generated sample) or as `--ratio` takes it (`6:1`, `1:4`).
fn deserialize_ratio<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<f64, D::Error> {
    struct RatioVisitor;
    impl serde::de::Visitor<'_> for RatioVisitor {
        type Value = f64;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("originals per generated sample: a number, or original:generated like 6:1")
        }
        fn visit_f64<E: serde::de::Error>(self, v: f64) -> std::result::Result<f64, E> {
            Ok(v)
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> std::result::Result<f64, E> {
            Ok(v as f64)
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> std::result::Result<f64, E> {
            Ok(v as f64)
        }
        fn visit_str<E: serde::de::Error>(self, text: &str) -> std::result::Result<f64, E> {
            crate::orchestrator::parse_ratio(text).map_err(E::custom)
        }
    }
    deserializer.deserialize_any(RatioVisitor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_settings_keep_their_value_unless_their_switch_is_given() {
        let mut kept = AugmentSettings::quality();
        kept.keep_given(|name| ["eta", "tangent_k"].contains(&name));
        let fit = kept.fit_scale_to_data;
        assert!(!fit.eta && fit.sigma2 && fit.smooth && fit.tangent_scale);
        assert!(kept.fit_batch_to_classes && !kept.fit_tangent_k_to_classes);
        assert!(
            kept.fit_shade_to_ink,
            "the preset fits the shading to the ink"
        );
        let mut shade = AugmentSettings::quality();
        shade.keep_given(|name| name == "shade");
        assert!(!shade.fit_shade_to_ink, "a shading given holds on surfaces");
        assert!(!AugmentSettings::paper().fit_shade_to_ink);

        // A switch given too decides for its settings.
        let mut switched = AugmentSettings::quality();
        let given = ["eta", "batch", "fit_scale_to_data", "fit_batch_to_classes"];
        switched.keep_given(|name| given.contains(&name));
        assert_eq!(switched.fit_scale_to_data, ScaleFit::ALL);
        assert!(switched.fit_batch_to_classes && switched.fit_tangent_k_to_classes);

        // Nothing given: the preset's fitting stands.
        let mut plain = AugmentSettings::quality();
        plain.keep_given(|_| false);
        assert_eq!(plain, AugmentSettings::quality());
    }

    #[test]
    fn ratio_reads_as_a_number_or_as_the_command_line_types_it() {
        let with = |ratio: serde_json::Value| {
            let mut json = serde_json::to_value(AugmentSettings::quality()).unwrap();
            json["ratio"] = ratio;
            serde_json::from_value::<AugmentSettings>(json).map(|s| s.ratio)
        };
        assert_eq!(with(serde_json::json!(6)).unwrap(), 6.0);
        assert_eq!(with(serde_json::json!(0.25)).unwrap(), 0.25);
        assert_eq!(with(serde_json::json!("1:4")).unwrap(), 0.25);
        assert_eq!(with(serde_json::json!("6:1")).unwrap(), 6.0);
        let error = with(serde_json::json!("6:0")).unwrap_err().to_string();
        assert!(error.contains("original:generated"), "{error}");
        let error = with(serde_json::json!([1, 4])).unwrap_err().to_string();
        assert!(error.contains("original:generated like 6:1"), "{error}");
    }

    #[test]
    fn timed_checkpoints_default_to_ten_minutes_and_refuse_what_is_not_a_duration() {
        assert_eq!(SampleSettings::default().checkpoint_minutes, 10.0);
        // Settings from Python or a file written before the setting existed.
        let mut json = serde_json::to_value(SampleSettings::default()).unwrap();
        json.as_object_mut().unwrap().remove("checkpoint_minutes");
        let read: SampleSettings = serde_json::from_value(json).unwrap();
        assert_eq!(read.checkpoint_minutes, 10.0);
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            let settings = SampleSettings {
                checkpoint_minutes: bad,
                ..SampleSettings::default()
            };
            let error = settings.validate().unwrap_err().to_string();
            assert!(error.contains("checkpoint_minutes"), "{error}");
        }
        let off = SampleSettings {
            checkpoint_minutes: 0.0,
            ..SampleSettings::default()
        };
        assert!(off.validate().is_ok());
    }
}
