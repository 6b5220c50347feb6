//! CPU twin of `shaders/gradient_step.wgsl`: the momentum draw, the fused gradient/momentum/position
//! update of Algorithm 1, and the full gradient at a position.

use rayon::prelude::*;

use crate::model::prior::PriorRow;
use crate::model::Prior;
use crate::rng::{Purpose, Stream};

/// r ← N(0, I) from the stream (seed, chain, outer, 0, Momentum), for every chain (rows of p;
/// row c is chain `first_chain + c`).
pub fn draw_momentum(seed: u64, first_chain: u32, outer: u32, momentum: &mut [f32], p: usize) {
    momentum
        .par_chunks_mut(p)
        .enumerate()
        .for_each(|(chain, r)| {
            Stream::new(
                seed,
                first_chain + chain as u32,
                outer,
                0,
                Purpose::Momentum,
            )
            .fill_normal(r);
        });
}

/// One step of Algorithm 1 given G = Aᵀ(A z − ybar) per chain:
/// g = G/σ² + ∇(−log prior)(z); r ← r − eta·g − eta·r (+ sqrt(2·eta)·ξ with SGHMC noise); z ← z + eta·r.
/// `noise` is (seed, first chain, outer, step): row c draws ξ from chain `first_chain + c`'s stream.
#[allow(clippy::too_many_arguments)]
pub fn gradient_step(
    product: &[f32],
    z: &mut [f32],
    momentum: &mut [f32],
    p: usize,
    prior: &Prior,
    inv_sigma2: f32,
    eta: f32,
    noise: Option<(u64, u32, u32, u32)>,
) {
    gradient_step_with(
        product,
        z,
        momentum,
        p,
        prior,
        None,
        &[inv_sigma2],
        false,
        eta,
        noise,
    );
}

/// Row `chain`'s value of a per-chain setting given as one value for every chain or one per
/// chain: the precision (a fixed σ², or `--noise gibbs`'s τ) or the step size (per class).
#[inline]
pub fn chain_value(values: &[f32], chain: usize) -> f32 {
    if values.len() == 1 {
        values[0]
    } else {
        values[chain]
    }
}

/// `gradient_step` with the prior's per-chain state (SSGL's, `ssgl::stride(p)` values per chain)
/// and the likelihood's precision per chain (`inv_sigma2`: one value, or one per chain).
/// `preconditioned` (`--noise gibbs`): `inv_sigma2` holds √τ per chain, so g is the gradient in
/// noise units (σ·∇U), and the position moves by (eta·r)/√τ (docs/noise.md).
#[allow(clippy::too_many_arguments)]
pub fn gradient_step_with(
    product: &[f32],
    z: &mut [f32],
    momentum: &mut [f32],
    p: usize,
    prior: &Prior,
    state: Option<&[f32]>,
    inv_sigma2: &[f32],
    preconditioned: bool,
    eta: f32,
    noise: Option<(u64, u32, u32, u32)>,
) {
    let noise_scale = (2.0 * eta).sqrt();
    z.par_chunks_mut(p)
        .zip(momentum.par_chunks_mut(p))
        .zip(product.par_chunks(p))
        .enumerate()
        .for_each_init(
            || vec![0f32; if noise.is_some() { p } else { 0 }],
            |xi, (chain, ((z, r), g))| {
                if let Some((seed, first_chain, outer, step)) = noise {
                    Stream::new(
                        seed,
                        first_chain + chain as u32,
                        outer,
                        step,
                        Purpose::SghmcNoise,
                    )
                    .fill_normal(xi);
                }
                let row = prior.row(state, chain, p);
                let inv_sigma2 = chain_value(inv_sigma2, chain);
                // The common case (a Laplace prior, no SGHMC noise, a fixed σ²) in a loop without
                // per-element branches, which the compiler vectorises: the same operations in
                // the same order as the general loop below, so the same bits.
                if let (PriorRow::Shared(Prior::Laplace(laplace)), None, false) =
                    (&row, noise, preconditioned)
                {
                    for ((zj, rj), &gj) in z.iter_mut().zip(r.iter_mut()).zip(g.iter()) {
                        let grad = gj * inv_sigma2 + laplace.gradient(*zj);
                        let next = *rj - eta * grad - eta * *rj;
                        *rj = next;
                        *zj += eta * next;
                    }
                    return;
                }
                for j in 0..p {
                    let grad = g[j] * inv_sigma2 + row.gradient(j, z[j]);
                    let mut rj = r[j] - eta * grad - eta * r[j];
                    if noise.is_some() {
                        rj += noise_scale * xi[j];
                    }
                    r[j] = rj;
                    if preconditioned {
                        z[j] += (eta * rj) / inv_sigma2;
                    } else {
                        z[j] += eta * rj;
                    }
                }
            },
        );
}

/// ∇U(z) = G/σ² + ∇(−log prior)(z) with G = Aᵀ(A z − xbar), written over `product` in place.
pub fn full_gradient(product: &mut [f32], z: &[f32], prior: &Prior, inv_sigma2: f32) {
    product
        .par_iter_mut()
        .zip(z.par_iter())
        .for_each(|(g, &zj)| *g = *g * inv_sigma2 + prior.gradient(zj));
}

/// `full_gradient` with the prior's per-chain state (rows of p) and the precision per chain
/// (`inv_sigma2`: one value, or one per chain).
pub fn full_gradient_with(
    product: &mut [f32],
    z: &[f32],
    p: usize,
    prior: &Prior,
    state: Option<&[f32]>,
    inv_sigma2: &[f32],
) {
    if state.is_none() && inv_sigma2.len() == 1 {
        return full_gradient(product, z, prior, inv_sigma2[0]);
    }
    product
        .par_chunks_mut(p)
        .zip(z.par_chunks(p))
        .enumerate()
        .for_each(|(chain, (g, z))| {
            let row = prior.row(state, chain, p);
            let inv_sigma2 = chain_value(inv_sigma2, chain);
            for (j, (g, &zj)) in g.iter_mut().zip(z).enumerate() {
                *g = *g * inv_sigma2 + row.gradient(j, zj);
            }
        });
}
