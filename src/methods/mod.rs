//! The methods: RMLD (Algorithms 1 and 3), MALA and HMC, each written once (`rmld`, `mala`, `hmc`)
//! as a sequence of chain operations (`ops::ChainOp`) that every backend runs, their settings, and
//! the Metropolis-Hastings rule of Algorithm 3 decided on the host; what generates an
//! augmentation's samples (a method's chains or a baseline, `augment`).

pub(crate) mod augment;
pub(crate) mod hmc;
pub(crate) mod mala;
pub(crate) mod method;
pub(crate) mod mh;
pub(crate) mod ops;
pub(crate) mod rmld;
pub(crate) mod settings;

pub use augment::{AugmentMethod, SamplerChoice};
pub use hmc::TARGET_ACCEPTANCE as HMC_TARGET_ACCEPTANCE;
pub use mala::TARGET_ACCEPTANCE as MALA_TARGET_ACCEPTANCE;
pub use method::Method;
pub use mh::{MhDecision, MhRule, MhTerms};
pub use ops::ChainOp;
pub use settings::DynamicsSettings;
