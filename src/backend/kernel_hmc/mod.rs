//! The paper's "Kernel HMC" baseline's CPU backend (`cpu`; the GPU one is `gpu::kernel_hmc`); its
//! model, the Gaussian kernel density per class, is `model::likelihood::kernel_density`.

pub mod cpu;

pub use crate::model::likelihood::kernel_density::{
    median_bandwidth2, ChainInfo, KernelTarget, BANDWIDTH_PURPOSE, MAX_BANDWIDTH_PAIRS,
};
