//! rmld: Randomized Measurement Langevin Dynamics (RMLD, also SpHMC) on the CPU and the GPU.

pub mod error;
pub mod io;
pub mod rng;

pub use error::{Error, Result};
pub mod backend;
pub mod diagnostics;
pub mod fuzzing;
pub mod methods;
pub mod model;
pub mod orchestrator;

/// Old path of `methods` (kept until every caller has moved).
#[doc(hidden)]
pub use methods as dynamics;
/// Old path of `model` (kept until every caller has moved).
#[doc(hidden)]
pub use model as target;
