//! The paper's "Kernel HMC" baseline's CPU backend (`cpu`; the GPU one is `gpu::kernel_hmc`): chains
//! in image space on the Gaussian kernel density per class (`model::likelihood::kernel_density`),
//! whose minibatch weights and energy are the mixture likelihood's.

pub(crate) mod cpu;

pub use cpu::KernelHmcCpu;

pub use crate::model::likelihood::kernel_density::{
    median_bandwidth2, ChainInfo, KernelTarget, MAX_BANDWIDTH_PAIRS,
};
pub use crate::model::likelihood::mixture::{kernel_energy, CHUNK};
