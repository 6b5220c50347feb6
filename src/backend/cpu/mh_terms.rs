//! CPU twin of `shaders/mh_terms.wgsl`: the per-chain scalars of the Metropolis-Hastings rule.

use rayon::prelude::*;

use crate::methods::MhTerms;
use crate::model::likelihood::{chain_value, TermsInputs};
use crate::model::{Likelihood, Prior};
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

/// What the MH terms read besides the chain states: the prior (with its per-chain state, SSGL's),
/// the likelihood (with its cached energies at X and Z, where it keeps them), its precision (one
/// value, or one per chain), and Δ (one value, or one per chain: per-class step sizes).
pub struct TermsModel<'a> {
    /// The prior.
    pub prior: &'a Prior,
    /// Its latent state, `Prior::state_width(p)` values per chain.
    pub prior_state: Option<&'a [f32]>,
    /// The likelihood.
    pub likelihood: &'a Likelihood,
    /// Its cached energies at X and at Z (C each).
    pub energies: Option<(&'a [f32], &'a [f32])>,
    /// 1/σ², or with `preconditioned` √τ per chain.
    pub precision: &'a [f32],
    /// `--noise gibbs`: the terms are those of the chain in noise units w = √τ·x:
    /// U = √τ·(½·√τ·||r||² + prior(x)), and the proposal norms take the step √τ·(z − x) with the
    /// gradients (already in noise units).
    pub preconditioned: bool,
    /// Δ of the proposal norms: eta·T for RMLD, h for MALA.
    pub deltas: &'a [f32],
}

/// Per chain: U(X) and U(Z) − U(X) (the likelihood's `energy_terms` with the prior's, each one
/// reduction of per-element differences where it has such a form), the two proposal norms with
/// Δ, and with `kinetic` ½||r_L||² − ½||r_0||² as one reduction of per-element differences.
pub fn mh_terms_with(
    current: &ChainView,
    proposal: &ChainView,
    (d, p): (usize, usize),
    model: &TermsModel,
    kinetic: Option<&Kinetic>,
) -> Vec<MhTerms> {
    let chains = current.position.len() / p;
    let parts: Vec<([f32; 2], [f32; 3])> = (0..chains)
        .into_par_iter()
        .map(|c| {
            let x = &current.position[c * p..(c + 1) * p];
            let z = &proposal.position[c * p..(c + 1) * p];
            let gx = &current.gradient[c * p..(c + 1) * p];
            let gz = &proposal.gradient[c * p..(c + 1) * p];
            let prior = model.prior.row(model.prior_state, c, p);
            let precision = chain_value(model.precision, c);
            let delta = chain_value(model.deltas, c);
            let prior_x = prior.energy(x);
            let mut forward = 0f32;
            let mut reverse = 0f32;
            for j in 0..p {
                let step = if model.preconditioned {
                    (z[j] - x[j]) * precision
                } else {
                    z[j] - x[j]
                };
                let f = step + delta * gx[j];
                let r = -step + delta * gz[j];
                forward += f * f;
                reverse += r * r;
            }
            let kinetic_difference = kinetic.map_or(0.0, |k| k.difference(c, p));
            let prior_terms = [prior_x, prior.energy_difference(z, x)];
            (prior_terms, [forward, reverse, kinetic_difference])
        })
        .collect();
    let prior: Vec<(f32, f32)> = parts.iter().map(|([x, dz], _)| (*x, *dz)).collect();
    let energies = model.likelihood.energy_terms(&TermsInputs {
        residuals: (
            &current.residual[..chains * d],
            &proposal.residual[..chains * d],
        ),
        energies: model.energies,
        prior: &prior,
        precision: model.precision,
        preconditioned: model.preconditioned,
    });
    parts
        .iter()
        .zip(energies)
        .map(
            |((_, [forward, reverse, kinetic]), (current, difference))| MhTerms {
                energy_current: current,
                energy_difference: difference,
                forward_norm: *forward,
                reverse_norm: *reverse,
                kinetic_difference: *kinetic,
            },
        )
        .collect()
}

impl Kinetic<'_> {
    /// Chain c's ½||r_L||² − ½||r_0||², r_0 drawn again from its stream.
    fn difference(&self, c: usize, p: usize) -> f32 {
        let mut r0 = vec![0f32; p];
        Stream::new(
            self.seed,
            self.first_chain + c as u32,
            self.outer,
            0,
            Purpose::Momentum,
        )
        .fill_normal(&mut r0);
        let r_last = &self.momentum[c * p..(c + 1) * p];
        0.5 * r_last
            .iter()
            .zip(&r0)
            .map(|(&a, &b)| (a - b) * (a + b))
            .sum::<f32>()
    }
}
