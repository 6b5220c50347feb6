//! Which backend runs the chains: the user's choice, and `Auto`'s fallback from the GPU to the CPU with a notice.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::observer::{Notice, Observer};
use crate::backend::cpu::CpuBackend;
use crate::backend::kernel_hmc::cpu::KernelHmcCpu;
use crate::backend::kernel_hmc::KernelTarget;
use crate::backend::{Backend, DynamicsSettings};
use crate::model::Target;
#[cfg(not(feature = "gpu"))]
use crate::Error;
use crate::Result;

/// Which device runs the chains.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// The GPU when an adapter exists, else the CPU (with a one-line notice).
    #[default]
    Auto,
    /// The CPU (rayon + gemm).
    Cpu,
    /// The GPU (wgpu); an error when no adapter exists.
    Gpu,
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
