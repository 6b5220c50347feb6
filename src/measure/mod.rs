//! What the machine offers and what a run takes: host memory, a backend's throughput timed phase by phase, the CPU's and GPU's ceilings, the NumPy peer.
//!
//! `session::Bench` turns its settings into these measurements (which backends, which chain
//! counts, the report); here is how each is made. Measurements run the chain operations through
//! the `Backend` trait exactly as the orchestrator does, so they time the code `sample` runs.

pub(crate) mod cpu;
#[cfg(feature = "gpu")]
pub(crate) mod gpu;
pub(crate) mod memory;
pub(crate) mod peer;
pub(crate) mod throughput;

pub use cpu::{Phases, Roofline};
pub use peer::PeerRow;
pub use throughput::{Ceiling, Row};
