//! Loading what every run needs: dataset, dictionary, target and backend (the `BackendChoice` rule), validated up front.

use std::sync::Arc;

use crate::backend::cpu::CpuBackend;
use crate::backend::kernel_hmc::cpu::KernelHmcCpu;
use crate::backend::kernel_hmc::KernelTarget;
use crate::backend::{Backend, DynamicsSettings};
use crate::io::Dataset;
use crate::model::{Dictionary, Observations, Target};
use crate::{Error, Result};

use super::observer::{Notice, Observer};
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
            crate::measure::memory::check_fits(
                "atoms",
                &format!("a dictionary of {d} × {p} floats"),
                crate::measure::memory::dictionary_bytes(d, p),
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

/// The backend `choice` names; `Auto` takes the GPU unless it is missing, unusable or a software
/// renderer, and then the CPU with a notice to `observer`.
pub fn make_backend(
    choice: BackendChoice,
    observer: &dyn Observer,
    target: &Arc<Target>,
    dynamics: &DynamicsSettings,
    chains: usize,
) -> Result<Box<dyn Backend>> {
    make_grouped_backend(choice, observer, target, dynamics, chains, false)
}

/// `make_backend`, and with `class_groups` a GPU backend whose chain groups never mix classes,
/// so each class can run its own step size (per-class adaptation).
pub fn make_grouped_backend(
    choice: BackendChoice,
    observer: &dyn Observer,
    target: &Arc<Target>,
    dynamics: &DynamicsSettings,
    chains: usize,
    class_groups: bool,
) -> Result<Box<dyn Backend>> {
    let cpu = || -> Result<Box<dyn Backend>> {
        Ok(Box::new(CpuBackend::try_new(
            target.clone(),
            dynamics.clone(),
            chains,
        )?))
    };
    choose(choice, observer, cpu, || {
        gpu_backend(target, dynamics, chains, class_groups)
    })
}

/// `choice` between two backend constructors: `Auto` takes the GPU unless it is missing, unusable
/// or a software renderer, and then the CPU with a notice to `observer`.
fn choose(
    choice: BackendChoice,
    observer: &dyn Observer,
    cpu: impl Fn() -> Result<Box<dyn Backend>>,
    gpu: impl Fn() -> Result<Box<dyn Backend>>,
) -> Result<Box<dyn Backend>> {
    match choice {
        BackendChoice::Cpu => cpu(),
        BackendChoice::Gpu => gpu(),
        BackendChoice::Auto if software_adapter(observer).is_some() => cpu(),
        BackendChoice::Auto => gpu().or_else(|e| {
            observer.notice(&Notice::NoUsableGpu {
                reason: e.to_string(),
            });
            cpu()
        }),
    }
}

#[cfg(not(feature = "gpu"))]
fn gpu_backend(
    _: &Arc<Target>,
    _: &DynamicsSettings,
    _: usize,
    _: bool,
) -> Result<Box<dyn Backend>> {
    Err(Error::Gpu(
        "this rmld was built without the `gpu` feature".into(),
    ))
}

#[cfg(feature = "gpu")]
fn gpu_backend(
    target: &Arc<Target>,
    dynamics: &DynamicsSettings,
    chains: usize,
    class_groups: bool,
) -> Result<Box<dyn Backend>> {
    use crate::backend::gpu::{GpuBackend, GpuOptions};
    let options = GpuOptions {
        class_groups,
        ..GpuOptions::default()
    };
    let backend = GpuBackend::new(target.clone(), dynamics.clone(), chains, options)?;
    Ok(Box::new(backend))
}

/// The kernel-HMC baseline's backend, chosen as `make_backend` chooses.
pub fn make_kernel_backend(
    choice: BackendChoice,
    observer: &dyn Observer,
    target: &Arc<KernelTarget>,
    dynamics: &DynamicsSettings,
) -> Result<Box<dyn Backend>> {
    let cpu = || -> Result<Box<dyn Backend>> {
        Ok(Box::new(KernelHmcCpu::new(
            target.clone(),
            dynamics.clone(),
        )?))
    };
    choose(choice, observer, cpu, || {
        kernel_gpu_backend(target, dynamics)
    })
}

#[cfg(not(feature = "gpu"))]
fn kernel_gpu_backend(_: &Arc<KernelTarget>, _: &DynamicsSettings) -> Result<Box<dyn Backend>> {
    Err(Error::Gpu(
        "this rmld was built without the `gpu` feature".into(),
    ))
}

#[cfg(feature = "gpu")]
fn kernel_gpu_backend(
    target: &Arc<KernelTarget>,
    dynamics: &DynamicsSettings,
) -> Result<Box<dyn Backend>> {
    use crate::backend::gpu::kernel_hmc::KernelHmcGpu;
    Ok(Box::new(KernelHmcGpu::new(
        target.clone(),
        dynamics.clone(),
    )?))
}

/// The adapter's name when the only GPU is a software renderer (lavapipe/llvmpipe): the CPU
/// backend beats it, so `Auto` takes the CPU (with a notice); `BackendChoice::Gpu` still uses it.
#[cfg(feature = "gpu")]
fn software_adapter(observer: &dyn Observer) -> Option<String> {
    let name = crate::backend::gpu::software_adapter()?;
    observer.notice(&Notice::SoftwareAdapter { name: name.clone() });
    Some(name)
}

#[cfg(not(feature = "gpu"))]
fn software_adapter(_: &dyn Observer) -> Option<String> {
    None
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
