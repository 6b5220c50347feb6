//! MALA's proposal: Z = X − h·∇U(X) + sqrt(2h)·ξ with the full gradient, judged with the Gaussian
//! proposal densities (Algorithm 3's formula with Δ = h, which is then exact).

use super::{ChainOp, DynamicsSettings, MhTerms};

/// Z from X and its cached gradient, Z's full state, the MH terms.
pub fn program(_settings: &DynamicsSettings) -> Vec<ChainOp> {
    vec![
        ChainOp::CopyPosition,
        ChainOp::LangevinProposal,
        ChainOp::ProposalState,
        ChainOp::MhTerms { kinetic: false },
    ]
}

/// log α before the min with 0: Algorithm 3's formula with Δ = h: exactly MALA's ratio with its Gaussian proposal densities.
pub fn log_ratio(terms: &MhTerms, delta: f64) -> f64 {
    terms.log_ratio(delta)
}

/// Δ = h = eta.
pub fn delta(settings: &DynamicsSettings) -> f32 {
    settings.eta
}
