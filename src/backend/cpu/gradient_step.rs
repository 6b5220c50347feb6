//! CPU twin of `shaders/gradient_step.wgsl`: the momentum draw, the fused gradient/momentum/position
//! update of Algorithm 1, and the full gradient at a position.

use rayon::prelude::*;

use crate::model::prior::{GradientVisitor, RowGradient};
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
pub use crate::model::likelihood::chain_value;

/// One chain's update of Algorithm 1, run with its prior's gradient (`GradientVisitor`).
struct StepRow<'a> {
    z: &'a mut [f32],
    r: &'a mut [f32],
    g: &'a [f32],
    /// SGHMC noise ξ (empty without noise).
    xi: &'a [f32],
    inv_sigma2: f32,
    eta: f32,
    noise_scale: f32,
    preconditioned: bool,
}

impl GradientVisitor for StepRow<'_> {
    type Output = ();

    #[inline]
    fn visit<G: RowGradient>(self, prior: &G) {
        let StepRow {
            z,
            r,
            g,
            xi,
            inv_sigma2,
            eta,
            noise_scale,
            preconditioned,
        } = self;
        // The common case (no SGHMC noise, a fixed σ²) in a loop without per-element branches,
        // which the compiler vectorises: the same operations in the same order as the general
        // loop below, so the same bits.
        if xi.is_empty() && !preconditioned {
            for (j, ((zj, rj), &gj)) in z.iter_mut().zip(r.iter_mut()).zip(g).enumerate() {
                let grad = gj * inv_sigma2 + prior.gradient(j, *zj);
                let next = *rj - eta * grad - eta * *rj;
                *rj = next;
                *zj += eta * next;
            }
            return;
        }
        for j in 0..z.len() {
            let grad = g[j] * inv_sigma2 + prior.gradient(j, z[j]);
            let mut rj = r[j] - eta * grad - eta * r[j];
            if !xi.is_empty() {
                rj += noise_scale * xi[j];
            }
            r[j] = rj;
            if preconditioned {
                z[j] += (eta * rj) / inv_sigma2;
            } else {
                z[j] += eta * rj;
            }
        }
    }
}

/// `gradient_step` with the prior's per-chain state (SSGL's, `Prior::state_width(p)` values per
/// chain) and the likelihood's precision per chain (`inv_sigma2`: one value, or one per chain).
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
                prior.row(state, chain, p).visit(StepRow {
                    z,
                    r,
                    g,
                    xi,
                    inv_sigma2: chain_value(inv_sigma2, chain),
                    eta,
                    noise_scale,
                    preconditioned,
                });
            },
        );
}

/// One chain's full gradient G·(1/σ²) + ∇(−log prior)(z), over G in place.
struct FullGradientRow<'a> {
    g: &'a mut [f32],
    z: &'a [f32],
    inv_sigma2: f32,
}

impl GradientVisitor for FullGradientRow<'_> {
    type Output = ();

    #[inline]
    fn visit<G: RowGradient>(self, prior: &G) {
        for (j, (g, &zj)) in self.g.iter_mut().zip(self.z).enumerate() {
            *g = *g * self.inv_sigma2 + prior.gradient(j, zj);
        }
    }
}

/// ∇U(z) = G/σ² + ∇(−log prior)(z) with G = Aᵀ(A z − xbar), written over `product` in place.
pub fn full_gradient(product: &mut [f32], z: &[f32], prior: &Prior, inv_sigma2: f32) {
    const BLOCK: usize = 4096;
    let row = prior.row(None, 0, 1);
    product
        .par_chunks_mut(BLOCK)
        .zip(z.par_chunks(BLOCK))
        .for_each(|(g, z)| row.visit(FullGradientRow { g, z, inv_sigma2 }));
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
            prior.row(state, chain, p).visit(FullGradientRow {
                g,
                z,
                inv_sigma2: chain_value(inv_sigma2, chain),
            });
        });
}
