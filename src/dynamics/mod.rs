//! The dynamics' host side: the Metropolis-Hastings rule of Algorithm 3 (the momentum steps of
//! Algorithm 1 run inside the backends, see `backend::cpu::gradient_step`).

pub mod mh;

pub use mh::{MhDecision, MhRule};
