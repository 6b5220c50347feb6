//! HMC's proposal: r ~ N(0, I), L leapfrog steps of size ε = eta with the full gradient, judged by
//! the Hamiltonian U + ½||r||² in the MH ratio.

use super::{ChainOp, DynamicsSettings, MhTerms};

/// Stan's default target acceptance for HMC/NUTS (`delta = 0.8`, Stan Reference Manual,
/// "HMC algorithm parameters"; BlackJAX's `window_adaptation` uses the same 0.8), which its
/// step size adapts toward.
pub const TARGET_ACCEPTANCE: f64 = 0.8;

/// Z ← X with its gradient, r_0, L leapfrog steps (drift, Z's full state, kick), the MH terms
/// with the kinetic difference.
pub fn program(settings: &DynamicsSettings) -> Vec<ChainOp> {
    let mut ops = vec![
        ChainOp::CopyPosition,
        ChainOp::CopyGradient,
        ChainOp::DrawMomentum,
    ];
    for _ in 0..settings.leapfrog_steps {
        ops.extend([
            ChainOp::LeapfrogDrift,
            ChainOp::ProposalState,
            ChainOp::LeapfrogKick,
        ]);
    }
    ops.push(ChainOp::MhTerms { kinetic: true });
    ops
}

/// log α before the min with 0: −ΔU − ΔK: the change of the Hamiltonian U + ½||r||² (Δ unused).
pub fn log_ratio(terms: &MhTerms, _delta: f64) -> f64 {
    terms.hamiltonian_log_ratio()
}

/// Δ = ε = eta (the Hamiltonian ratio does not use it).
pub fn delta(settings: &DynamicsSettings) -> f32 {
    settings.eta
}

/// The gradient products per proposal that a run's estimate counts: L + 1 (Z's full state at
/// each of the L leapfrog steps, and one more).
pub fn products(settings: &DynamicsSettings) -> f64 {
    settings.leapfrog_steps as f64 + 1.0
}
