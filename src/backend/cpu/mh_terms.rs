//! CPU twin of `shaders/mh_terms.wgsl`: the per-chain scalars of the Metropolis-Hastings rule.

use rayon::prelude::*;

use crate::methods::MhTerms;
use crate::model::likelihood::gaussian::energy_difference_row;
use crate::model::Prior;
use crate::rng::{Purpose, Stream};

/// The chain state a proposal is judged by: position, cached residual A x − xbar, full gradient.
pub struct ChainView<'a> {
    /// Positions, C × p.
    pub position: &'a [f32],
    /// Residuals A x − xbar, C × d.
    pub residual: &'a [f32],
    /// Full gradients ∇U(x), C × p.
    pub gradient: &'a [f32],
}

/// HMC's final momenta r_L (C × p) and the stream r_0 was drawn from, (seed, outer): r_0 is
/// drawn again rather than stored, as the WGSL twin does.
pub struct Kinetic<'a> {
    /// r_L, C × p.
    pub momentum: &'a [f32],
    /// Seed of the momentum stream.
    pub seed: u64,
    /// Outer iteration of the momentum stream.
    pub outer: u32,
    /// Global index of row 0's chain (its momentum stream's chain).
    pub first_chain: u32,
}

/// Per chain: U(X), U(Z) − U(X) as one reduction, the two proposal norms with Δ (eta·T for RMLD,
/// h for MALA), and with `kinetic` ½||r_L||² − ½||r_0||² as one reduction of per-element
/// differences. `inv_sigma2` is 1/σ². With `energies` (the mixture target's data terms at X and
/// at Z, C each) the energy terms are those plus the prior's, the difference of the two.
#[allow(clippy::too_many_arguments)]
pub fn mh_terms(
    current: &ChainView,
    proposal: &ChainView,
    d: usize,
    p: usize,
    prior: &Prior,
    inv_sigma2: f32,
    delta: f32,
    kinetic: Option<&Kinetic>,
    energies: Option<(&[f32], &[f32])>,
) -> Vec<MhTerms> {
    mh_terms_with(
        current,
        proposal,
        d,
        p,
        prior,
        None,
        &[inv_sigma2],
        false,
        &[delta],
        kinetic,
        energies,
    )
}

/// `mh_terms` with the prior's per-chain state (SSGL's, `ssgl::stride(p)` values per chain) and
/// the likelihood's precision per chain (`inv_sigma2`: one value, or one per chain), and Δ as one
/// value or one per chain (`deltas`: per-class step sizes).
/// `preconditioned` (`--noise gibbs`): `inv_sigma2` holds √τ per chain and the terms are those
/// of the chain in noise units w = √τ·x: U = √τ·(½·√τ·||r||² + prior(x)), and the proposal
/// norms take the step √τ·(z − x) with the gradients (already in noise units).
#[allow(clippy::too_many_arguments)]
pub fn mh_terms_with(
    current: &ChainView,
    proposal: &ChainView,
    d: usize,
    p: usize,
    prior: &Prior,
    state: Option<&[f32]>,
    inv_sigma2: &[f32],
    preconditioned: bool,
    deltas: &[f32],
    kinetic: Option<&Kinetic>,
    energies: Option<(&[f32], &[f32])>,
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
            let prior = prior.row(state, c, p);
            let inv_sigma2 = super::gradient_step::chain_value(inv_sigma2, c);
            let delta = super::gradient_step::chain_value(deltas, c);
            let prior_x = prior.energy(x);
            let mut forward = 0f32;
            let mut reverse = 0f32;
            for j in 0..p {
                let step = if preconditioned {
                    (z[j] - x[j]) * inv_sigma2
                } else {
                    z[j] - x[j]
                };
                let f = step + delta * gx[j];
                let r = -step + delta * gz[j];
                forward += f * f;
                reverse += r * r;
            }
            let kinetic_difference = kinetic.map_or(0.0, |k| {
                let mut r0 = vec![0f32; p];
                Stream::new(
                    k.seed,
                    k.first_chain + c as u32,
                    k.outer,
                    0,
                    Purpose::Momentum,
                )
                .fill_normal(&mut r0);
                let r_last = &k.momentum[c * p..(c + 1) * p];
                0.5 * r_last
                    .iter()
                    .zip(&r0)
                    .map(|(&a, &b)| (a - b) * (a + b))
                    .sum::<f32>()
            });
            let (energy_current, energy_difference) = match energies {
                Some((ex, ez)) => (
                    ex[c] + prior_x,
                    (ez[c] - ex[c]) + prior.energy_difference(z, x),
                ),
                None => {
                    let fit: f32 = rx.iter().map(|v| v * v).sum();
                    let current = 0.5 * fit * inv_sigma2 + prior_x;
                    let difference = energy_difference_row(rz, rx, z, x, &prior, inv_sigma2);
                    if preconditioned {
                        (inv_sigma2 * current, inv_sigma2 * difference)
                    } else {
                        (current, difference)
                    }
                }
            };
            MhTerms {
                energy_current,
                energy_difference,
                forward_norm: forward,
                reverse_norm: reverse,
                kinetic_difference,
            }
        })
        .collect()
}
