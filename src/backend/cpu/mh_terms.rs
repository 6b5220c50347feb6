//! CPU twin of `shaders/mh_terms.wgsl`: the per-chain scalars of the Metropolis-Hastings rule.

use rayon::prelude::*;

use crate::backend::MhTerms;
use crate::target::posterior::energy_difference;

/// The chain state a proposal is judged by: position, cached residual A x − xbar, full gradient.
pub struct ChainView<'a> {
    /// Positions, C × p.
    pub position: &'a [f32],
    /// Residuals A x − xbar, C × d.
    pub residual: &'a [f32],
    /// Full gradients ∇U(x), C × p.
    pub gradient: &'a [f32],
}

/// Per chain: U(X), U(Z) − U(X) as one reduction, and the two proposal norms with Δ = eta·T.
pub fn mh_terms(
    current: &ChainView,
    proposal: &ChainView,
    d: usize,
    p: usize,
    lam: f32,
    delta: f32,
) -> Vec<MhTerms> {
    let chains = current.position.len() / p;
    (0..chains)
        .into_par_iter()
        .map(|c| {
            let x = &current.position[c * p..(c + 1) * p];
            let z = &proposal.position[c * p..(c + 1) * p];
            let rx = &current.residual[c * d..(c + 1) * d];
            let rz = &proposal.residual[c * d..(c + 1) * d];
            let gx = &current.gradient[c * p..(c + 1) * p];
            let gz = &proposal.gradient[c * p..(c + 1) * p];
            let fit: f32 = rx.iter().map(|v| v * v).sum();
            let l1: f32 = x.iter().map(|v| v.abs()).sum();
            let mut forward = 0f32;
            let mut reverse = 0f32;
            for j in 0..p {
                let step = z[j] - x[j];
                let f = step + delta * gx[j];
                let r = -step + delta * gz[j];
                forward += f * f;
                reverse += r * r;
            }
            MhTerms {
                energy_current: 0.5 * fit + lam * l1,
                energy_difference: energy_difference(rz, rx, z, x, lam),
                forward_norm: forward,
                reverse_norm: reverse,
            }
        })
        .collect()
}
