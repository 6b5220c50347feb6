//! Loading what every run needs: its settings (data, dictionary, model scale, seed, backend, output folder), dataset, dictionary, target and backend (the `BackendChoice` rule), validated up front.

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::backend_choice::BackendChoice;
pub use super::backend_choice::{make_backend, make_grouped_backend, make_kernel_backend};
use crate::io::{DataScaling, Dataset, Shard};
use crate::measure::memory;
use crate::model::{Dictionary, NoiseModel, Observations, Precision, Prior, Target};
use crate::model::{TangentSettings, TargetKind};
use crate::{Error, Result};

/// Where the data and the dictionary come from, the model's scale, the seed, the backend and the
/// output folder: what every run needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProblemSettings {
    /// Dataset: a folder with MNIST-style IDX files, an IDX, NPY or CSV file; `None`: the
    /// embedded optdigits digits (1797 images of 8×8).
    pub data: Option<PathBuf>,
    /// The dictionary A as a float NPY file of shape (d, p); `None`: Gaussian N(0, 1/d) from `seed`.
    pub dictionary: Option<PathBuf>,
    /// Atoms p of a generated dictionary; `None`: 4·d, as in the paper.
    pub atoms: Option<usize>,
    /// The value of a full-intensity pixel in model units (255: the paper's scale).
    pub pixel_max: f32,
    /// How the data's values become model units: as pixels (scaled to [0, pixel_max]) or, with
    /// `Raw`, as they are (real-valued data such as regression responses).
    #[serde(default, skip_serializing_if = "DataScaling::is_auto")]
    pub data_scale: DataScaling,
    /// σ², the likelihood's noise variance (1: the paper's model).
    pub sigma2: f32,
    /// The noise model: σ² fixed (`sigma2`, the default) or a per-chain precision learned by
    /// its Gibbs step (`NoiseModel::Gibbs { e, f }`; paper and local targets, Laplace prior).
    #[serde(default, skip_serializing_if = "NoiseModel::is_fixed")]
    pub noise: NoiseModel,
    /// The energy the chains sample.
    #[serde(default)]
    pub target: TargetKind,
    /// k, the tangent target's neighbours per chain.
    #[serde(default = "default_tangent_k")]
    pub tangent_k: u32,
    /// s, the tangent target's spread along the neighbour span.
    #[serde(default = "default_tangent_scale")]
    pub tangent_scale: f32,
    /// λ, the rate of the Laplace prior and the LASSO penalty.
    pub lambda: f32,
    /// The prior over the codes with its hyper-parameters: its name alone (`"laplace"`,
    /// `"ssgl"`: the defaults) or an object tagged by `kind`. The Laplace prior's rate is
    /// `lambda`; SSGL's `adapt_iterations` is set from the run's burn-in by the sessions.
    #[serde(default, deserialize_with = "crate::model::prior::from_setting")]
    pub prior: Prior,
    /// Seed of every random draw.
    pub seed: u64,
    /// Where the chains run.
    pub backend: BackendChoice,
    /// Output folder (created if missing; files are written atomically).
    pub out: PathBuf,
    /// Replace the files of `out` this run writes when they exist already (written by another
    /// run, or the user's own); without it such a folder is refused before any work. Inputs are
    /// never replaced.
    #[serde(default)]
    pub force: bool,
    /// A dataset already in memory (the Python package's arrays), used instead of `data`. Not
    /// serialised: a checkpoint of such a run records the data's hash, and `resume` refuses
    /// other data.
    #[serde(skip)]
    pub dataset: Option<Arc<Dataset>>,
    /// Run only shard `i/N` of the work (`None`: all of it); see [`Shard`]. Each shard writes
    /// its part and a manifest; `merge` joins the shards into the single run's files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// Run only the whole run's warm-up (every chain, up to the end of its burn-in) and save
    /// its state into `out` (`warm-up.rmld` and `warm-up.json`) for the shards to start from
    /// (`warm_up`); nothing else is written.
    #[serde(default, skip_serializing_if = "is_false")]
    pub warm_up_only: bool,
    /// The folder of the whole run's warm-up (written with `warm_up_only` and the same
    /// settings) that this shard starts from: its chains' state at the end of the burn-in, with
    /// the step sizes adapted across all chains. Needed by the shards of a run whose chains
    /// depend on each other during the burn-in (an adapted step size, an automatic burn-in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_up: Option<PathBuf>,
    /// How A is stored for the products (`Target::with_precision`): f32, or f16 (half the bytes
    /// on a device; its entries rounded, products still in f32) on every backend alike.
    #[serde(default, skip_serializing_if = "is_f32")]
    pub precision: Precision,
}

fn is_f32(precision: &Precision) -> bool {
    *precision == Precision::F32
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// `tangent_k`'s default, for settings written before the setting existed.
fn default_tangent_k() -> u32 {
    TangentSettings::default().k
}

/// `tangent_scale`'s default, for settings written before the setting existed.
fn default_tangent_scale() -> f32 {
    TangentSettings::default().scale
}

impl Default for ProblemSettings {
    fn default() -> Self {
        ProblemSettings {
            data: None,
            dictionary: None,
            atoms: None,
            pixel_max: 255.0,
            data_scale: DataScaling::Auto,
            sigma2: 1.0,
            noise: NoiseModel::Fixed,
            target: TargetKind::Paper,
            tangent_k: default_tangent_k(),
            tangent_scale: default_tangent_scale(),
            lambda: 5.0,
            prior: Prior::default(),
            seed: 0,
            backend: BackendChoice::Auto,
            out: PathBuf::from("rmld-out"),
            force: false,
            dataset: None,
            shard: None,
            warm_up_only: false,
            warm_up: None,
            precision: Precision::F32,
        }
    }
}

impl ProblemSettings {
    /// The dataset: the one given in memory, else the file or folder `data`, else the embedded
    /// digits.
    /// Shared, not copied: the arrays handed over are the ones the run reads.
    pub fn load_dataset(&self) -> Result<Arc<Dataset>> {
        let mut dataset = match &self.dataset {
            Some(dataset) => Arc::clone(dataset),
            None => Dataset::load_or_embedded(self.data.as_deref()).map(Arc::new)?,
        };
        // Raw values are model units: a full-scale value is pixel_max (the scale is then 1).
        if self.data_scale == DataScaling::Raw && dataset.full_scale != self.pixel_max {
            Arc::make_mut(&mut dataset).full_scale = self.pixel_max;
        }
        Ok(dataset)
    }

    /// The notice for float data that `Auto` scales by its maximum (neither 1 nor a negative
    /// value): if it holds real values rather than pixels, `Raw` takes them as they are.
    pub fn scaling_notice(&self, dataset: &Dataset) -> Option<super::observer::Notice> {
        let floats = matches!(dataset.pixels, crate::io::Pixels::F32(_));
        let scaled = floats && self.data_scale.is_auto() && dataset.full_scale != 1.0;
        scaled.then(|| super::observer::Notice::FloatDataScaled {
            source: dataset.source.clone(),
            full_scale: dataset.full_scale,
            pixel_max: self.pixel_max,
        })
    }

    /// Checks the settings that do not need the data.
    pub fn validate(&self) -> Result<()> {
        if let Some(shard) = &self.shard {
            shard.check()?;
        }
        crate::io::shards::check_warm_up_settings(
            self.shard,
            self.warm_up_only,
            self.warm_up.as_deref(),
        )?;
        if !(self.pixel_max.is_finite() && self.pixel_max > 0.0) {
            return Err(Error::usage(
                "pixel_max",
                format!("must be a positive number, got {}", self.pixel_max),
            ));
        }
        if !(self.lambda.is_finite() && self.lambda >= 0.0) {
            return Err(Error::usage(
                "lambda",
                format!("must be a non-negative number, got {}", self.lambda),
            ));
        }
        if self.dictionary.is_none() && self.atoms == Some(0) {
            return Err(Error::usage("atoms", "must be at least 1"));
        }
        if !(self.sigma2.is_finite() && self.sigma2 > 0.0) {
            return Err(Error::usage(
                "sigma2",
                format!("must be a positive number, got {}", self.sigma2),
            ));
        }
        self.prior.validate()?;
        self.noise.validate()?;
        if self.noise.is_gibbs() {
            if !self.target.is_gaussian_residual() {
                return Err(Error::usage(
                    "noise",
                    "gibbs runs with `target` paper or local (its update reads the Gaussian \
                     residual), not mixture or tangent",
                ));
            }
            if !self.prior.learns_noise() {
                return Err(Error::usage(
                    "noise",
                    "gibbs runs with the laplace `prior` (ssgl learns its own σ)",
                ));
            }
            if self.shard.is_some() {
                return Err(Error::usage(
                    "noise",
                    "gibbs does not run with `shard` yet (merge does not join the precisions' \
                     traces)",
                ));
            }
        }
        // The other targets ignore both settings.
        if self.target.has_tangent_span() {
            self.tangent().check()?;
        }
        Ok(())
    }

    /// Clears what differs between a run, its shards and its warm-up (the output folder,
    /// `force`, the shard and the warm-up's settings): what is left is the configuration they
    /// share, which a shard's manifest and a warm-up hash.
    pub(crate) fn clear_placement(&mut self) {
        self.out = PathBuf::new();
        self.force = false;
        self.shard = None;
        self.warm_up_only = false;
        self.warm_up = None;
    }

    /// The tangent target's settings.
    pub fn tangent(&self) -> TangentSettings {
        TangentSettings {
            k: self.tangent_k,
            scale: self.tangent_scale,
        }
    }
}

/// The dataset, where A came from, and the posterior built from them.
pub struct Problem {
    /// The data as loaded (and possibly subset or reordered).
    pub dataset: Arc<Dataset>,
    /// Where the dictionary came from (a file, or the seed of a Gaussian one).
    pub dictionary_source: String,
    /// The posterior the chains sample.
    pub target: Arc<Target>,
}

/// Loads the data and the dictionary and checks that they fit together.
pub fn load_problem(args: &ProblemSettings) -> Result<Problem> {
    build_problem(args, args.load_dataset()?)
}

/// The problem of `args` on an already loaded (and possibly subset or reordered) `dataset`.
pub fn build_problem(args: &ProblemSettings, dataset: Arc<Dataset>) -> Result<Problem> {
    args.validate()?;
    if dataset.n == 0 {
        return Err(Error::input(
            &dataset.source,
            "the dataset holds no observations",
        ));
    }
    let d = dataset.d;
    let (dictionary, dictionary_source) = match &args.dictionary {
        Some(path) => (
            Dictionary::from_npy(path, d, args.atoms)?,
            path.display().to_string(),
        ),
        None => {
            let p = args.atoms.unwrap_or(4 * d);
            if p == 0 {
                return Err(Error::usage("atoms", "must be at least 1"));
            }
            memory::check_fits(
                "atoms",
                &format!("a dictionary of {d} × {p} floats"),
                memory::dictionary_bytes(d, p),
            )?;
            (
                Dictionary::gaussian(d, p, args.seed),
                format!("gaussian N(0, 1/d), seed {}", args.seed),
            )
        }
    };
    if dictionary.p == 0 {
        return Err(Error::usage("dictionary", "the dictionary has no atoms"));
    }
    let observations = Observations::from_dataset(&dataset, args.pixel_max);
    let target = Target::new(Arc::new(dictionary), Arc::new(observations), args.lambda)
        .with_sigma2(args.sigma2)
        .with_noise(args.noise)
        .with_tangent(args.tangent())
        .with_precision(args.precision)?;
    let target = target.with_prior(args.prior.with_lasso_rate(args.lambda));
    Ok(Problem {
        dataset,
        dictionary_source,
        target: Arc::new(target),
    })
}

impl Problem {
    /// The host memory of `settings`' chains on this problem: the program, the data, the
    /// backend `args.backend` makes (the CPU's unless the GPU is asked for by name).
    pub fn sampler_footprint(
        &self,
        args: &ProblemSettings,
        settings: &crate::orchestrator::SamplerSettings,
    ) -> memory::Footprint {
        let gpu = args.backend == BackendChoice::Gpu;
        let (chains, d, p) = (settings.chains, self.target.d(), self.target.p());
        let lasso = settings.init == crate::orchestrator::Init::Lasso;
        let hmc = settings.dynamics.method == crate::methods::Method::Hmc;
        memory::program(gpu)
            .and(memory::data(&self.dataset))
            .and(memory::sampler((chains, d, p), gpu, lasso, hmc))
    }

    /// Refuses `settings`' chains on this problem when their [`Self::sampler_footprint`] cannot
    /// fit, before the backend is made, naming what sizes the run most: `chains`, or the
    /// dictionary (`atoms`, or `dictionary` for a file).
    pub fn check_sampler_fits(
        &self,
        args: &ProblemSettings,
        settings: &crate::orchestrator::SamplerSettings,
    ) -> Result<()> {
        let (chains, d, p) = (settings.chains, self.target.d(), self.target.p());
        let per_chain = memory::chain_bytes(d, p) + memory::readback_bytes(d, p);
        let chains_first = chains as f64 * per_chain >= 4.0 * memory::dictionary_bytes(d, p);
        let setting = match args.dictionary {
            _ if chains_first => "chains",
            Some(_) => "dictionary",
            None => "atoms",
        };
        self.sampler_footprint(args, settings).check(setting)
    }

    /// Refuses to LASSO-encode `rows` rows, `batch` at a time, on `args.backend` with
    /// `tolerance` (the CPU builds ADMM's factor with one where d ≤ 2,048) when it cannot fit,
    /// before the backend is made, naming `limit` (the rows) or the dictionary; `backends` is
    /// how many backends hold the dictionary at once (a shard's: one per batch size).
    pub fn check_encoder_fits(
        &self,
        args: &ProblemSettings,
        (rows, batch, backends): (usize, usize, usize),
        tolerance: f32,
    ) -> Result<()> {
        let gpu = args.backend == BackendChoice::Gpu;
        let (d, p) = (self.target.d(), self.target.p());
        let admm = tolerance > 0.0 && d <= crate::backend::cpu::lasso_admm::MAX_ROWS;
        let mut footprint = memory::program(gpu)
            .and(memory::data(&self.dataset))
            .held("the dictionary A", memory::dictionary_bytes(d, p));
        for _ in 0..backends.max(1) {
            footprint = footprint.and(memory::encoding_backend(batch, (d, p), gpu, admm));
        }
        let outputs = memory::encoded_rows(rows, (d, p));
        let rows_first = outputs.to_allocate() >= 4.0 * memory::dictionary_bytes(d, p);
        let setting = match args.dictionary {
            _ if rows_first => "limit",
            Some(_) => "dictionary",
            None => "atoms",
        };
        footprint.and(outputs).check(setting)
    }

    /// The problem with an SSGL prior in `Adapt` mode adapting for `burn_in` outer iterations
    /// (the run's burn-in); other priors unchanged.
    pub fn with_adapt_iterations(mut self, burn_in: u32) -> Self {
        if let crate::model::Prior::Ssgl(mut ssgl) = self.target.prior {
            ssgl.adapt_iterations = burn_in;
            let target = Target::clone(&self.target).with_prior(crate::model::Prior::Ssgl(ssgl));
            self.target = Arc::new(target);
        }
        self
    }

    /// The problem of a shard's chains `range` of `chains` (the target built for every chain
    /// first, so per-chain classes, anchors and bases are the single run's).
    pub fn with_chain_slice(
        mut self,
        chains: usize,
        range: std::ops::Range<usize>,
    ) -> Result<Self> {
        if range == (0..chains) {
            return Ok(self);
        }
        self.target = Arc::new(self.target.chain_slice(chains, range)?);
        Ok(self)
    }

    /// The problem with the target `kind` for `chains` chains started with `seed`.
    pub fn with_target_kind(
        mut self,
        kind: crate::model::TargetKind,
        chains: usize,
        seed: u64,
    ) -> Result<Self> {
        let target = Target::clone(&self.target).with_kind(kind, chains, seed)?;
        self.target = Arc::new(target);
        Ok(self)
    }
}

/// The dictionary for the report: where it came from, its shape, and (when not f32) how the
/// products store it.
pub fn dictionary_json(problem: &Problem, d: usize, p: usize) -> serde_json::Value {
    let mut json = serde_json::json!({ "source": problem.dictionary_source, "d": d, "p": p });
    if problem.target.precision != crate::model::Precision::F32 {
        json["precision"] = serde_json::json!(problem.target.precision);
    }
    json
}

/// An SSGL prior in `adapt` mode adapts over a burn-in fixed in advance: an automatic one, which
/// may end earlier, would leave it adapting into the kept draws.
pub(crate) fn refuse_auto_burn_in_with_adapting_prior(auto: bool, problem: &Problem) -> Result<()> {
    let adapting = problem.target.prior.ssgl().is_some_and(|s| s.adapts_at(1));
    if auto && adapting {
        return Err(Error::usage(
            "burn_in",
            "the ssgl prior in adapt mode adapts over a fixed burn-in: give a count, not auto",
        ));
    }
    Ok(())
}
