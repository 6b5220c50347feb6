//! Loading what every run needs: dataset, dictionary, target and backend (the `BackendChoice` rule), validated up front.

use std::sync::Arc;

use crate::io::Dataset;
use crate::measure::memory;
use crate::model::{Dictionary, Observations, Target};
use crate::{Error, Result};

pub use crate::orchestrator::backend_choice::{
    make_backend, make_grouped_backend, make_kernel_backend,
};

use super::settings::{BackendChoice, ProblemSettings};

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
