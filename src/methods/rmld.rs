//! RMLD's proposal (Algorithm 1): r_0 ~ N(0, I) and T minibatch momentum steps from X, judged by
//! the linearised MH of Algorithm 3 with Δ = eta·T.

use super::{ChainOp, DynamicsSettings, MhTerms};

/// Z ← X, r_0, the T steps, Z's full state, the MH terms.
pub fn program(settings: &DynamicsSettings) -> Vec<ChainOp> {
    let mut ops = vec![ChainOp::CopyPosition, ChainOp::DrawMomentum];
    ops.extend((1..=settings.steps).map(ChainOp::MinibatchStep));
    ops.extend([ChainOp::ProposalState, ChainOp::MhTerms { kinetic: false }]);
    ops
}

/// log α before the min with 0: Algorithm 3's linearised ratio with Δ = eta·T.
pub fn log_ratio(terms: &MhTerms, delta: f64) -> f64 {
    terms.log_ratio(delta)
}

/// Δ = eta·T, the aggregated step of the linearised correction.
pub fn delta(settings: &DynamicsSettings) -> f32 {
    settings.eta * settings.steps as f32
}

/// The gradient products per proposal that a run's estimate counts: T + 1 (the T minibatch
/// steps and Z's full state).
pub fn products(settings: &DynamicsSettings) -> f64 {
    settings.steps as f64 + 1.0
}
