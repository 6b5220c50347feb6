//! What fits parameters rather than samples a target: parametric dictionary learning (paper 002: MH-within-Gibbs, OMP, K-means, the EDA experiment).
//!
//! Each signal's chain ([`SignalLearning`]; one signal's in `signal_chain`) learns the atoms of
//! its own small dictionary by MH-within-Gibbs (Chaspari et al. 2016, Algorithm 1); the best
//! dictionary of every signal (lowest OMP error) gives the parameters of the atoms OMP picks from
//! it, and K-means on them gives the final atoms (Algorithm 2; for EDA the learned (Trise,
//! Tdecay) shapes replicated over the onsets, beside the fixed tonic atoms). `session` turns
//! settings into such runs and writes their outputs.

mod atom_mh;
pub(crate) mod combine;
pub(crate) mod eda;
mod hyper;
mod kmeans;
mod linalg;
pub(crate) mod omp;
pub(crate) mod settings;
mod signal_chain;
mod signals;
mod slot_indices;

pub use eda::{synthetic_eda, PAPER_SYNTHETIC};
pub use hyper::DictionaryHyper;
pub use settings::{family_for, DictionarySettings, EdaExperimentSettings, FamilyKind};
pub use signal_chain::{group_names, SignalResult, GROUPS};
pub use signals::{
    check_family, remove_checkpoint, summarize, ChainSettings, Learned, SignalLearning,
    DICTIONARY_CHECKPOINT,
};
