//! rmld: Randomized Measurement Langevin Dynamics (RMLD, also SpHMC) on the CPU and the GPU.

pub mod error;
pub mod io;
pub mod rng;

pub use error::{Error, Result};
pub mod backend;
pub mod diagnostics;
pub mod dynamics;
pub mod orchestrator;
pub mod target;
