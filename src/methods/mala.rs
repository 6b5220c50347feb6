//! MALA's proposal: Z = X − h·∇U(X) + sqrt(2h)·ξ with the full gradient, judged with the Gaussian
//! proposal densities (Algorithm 3's formula with Δ = h, which is then exact).

use super::{ChainOp, DynamicsSettings, MhTerms};

/// The asymptotically optimal acceptance rate of MALA, 0.574 (Roberts & Rosenthal 1998,
/// "Optimal scaling of discrete approximations to Langevin diffusions"; BlackJAX's MALA docs),
/// which its step size adapts toward.
pub const TARGET_ACCEPTANCE: f64 = 0.574;

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

/// The gradient products per proposal that a run's estimate counts: 2.
pub fn products(_settings: &DynamicsSettings) -> f64 {
    2.0
}
