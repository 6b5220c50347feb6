//! The methods' host side: which method proposes, its settings, and the Metropolis-Hastings rule of
//! Algorithm 3 (the steps themselves run inside the backends, see `backend::cpu::gradient_step` and
//! `backend::cpu::exact`).

pub mod method;
pub mod mh;
pub mod settings;

pub use method::Method;
pub use mh::{MhDecision, MhRule, MhTerms};
pub use settings::DynamicsSettings;
