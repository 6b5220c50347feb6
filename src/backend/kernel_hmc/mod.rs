//! The paper's "Kernel HMC" baseline's CPU backend (`cpu`; the GPU one is `gpu::kernel_hmc`); its
//! model, the Gaussian kernel density per class, is `model::likelihood::kernel_density`.

pub(crate) mod cpu;

pub use cpu::{kernel_energy, KernelHmcCpu, CHUNK};

pub use crate::model::likelihood::kernel_density::{
    median_bandwidth2, ChainInfo, KernelTarget, MAX_BANDWIDTH_PAIRS,
};
