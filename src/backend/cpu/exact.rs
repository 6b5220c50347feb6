//! CPU twin of `shaders/exact.wgsl`: the element-wise steps of the exact methods (MALA, HMC).

use rayon::prelude::*;

use super::gradient_step::chain_value as chain_step;
use crate::rng::{Purpose, Stream};

/// MALA's proposal Z = X − h·∇U(X) + sqrt(2h)·ξ per chain (rows of p), with ξ from the stream
/// (seed, chain, outer, 0, MalaNoise) and ∇U(X) the cached full gradient; row c is chain
/// `first_chain + c`. With `scale` (`--noise gibbs`: √τ per chain, the gradient in noise units)
/// the move is preconditioned: Z = X + (sqrt(2h)·ξ − h·g)/√τ. `steps` holds h: one value for
/// every chain, or one per chain (per-class step sizes).
#[allow(clippy::too_many_arguments)]
pub fn mala_proposal(
    seed: u64,
    first_chain: u32,
    outer: u32,
    x: &[f32],
    gradient: &[f32],
    z: &mut [f32],
    p: usize,
    steps: &[f32],
    scale: Option<&[f32]>,
) {
    z.par_chunks_mut(p)
        .zip(x.par_chunks(p).zip(gradient.par_chunks(p)))
        .enumerate()
        .for_each_init(
            || vec![0f32; p],
            |xi, (chain, (z, (x, g)))| {
                Stream::new(
                    seed,
                    first_chain + chain as u32,
                    outer,
                    0,
                    Purpose::MalaNoise,
                )
                .fill_normal(xi);
                let h = chain_step(steps, chain);
                // sqrt(2h) rounded once per chain, as the GPU's host-side noise_scale.
                let noise_scale = (2.0 * h).sqrt();
                if let Some(scale) = scale {
                    let s = scale[chain];
                    for j in 0..p {
                        z[j] = x[j] + (noise_scale * xi[j] - h * g[j]) / s;
                    }
                } else {
                    for j in 0..p {
                        z[j] = x[j] - h * g[j] + noise_scale * xi[j];
                    }
                }
            },
        );
}

/// The first half of a leapfrog step: r ← r − (ε/2)·∇U(z); z ← z + ε·r, on rows of p. `steps`
/// holds ε: one value for every chain, or one per chain (per-class step sizes). With `scale`
/// (`--noise gibbs`: √τ per chain; mass matrix τ·I) z ← z + (ε·r)/√τ.
pub fn leapfrog_drift(
    gradient: &[f32],
    z: &mut [f32],
    momentum: &mut [f32],
    steps: &[f32],
    scale: Option<&[f32]>,
    p: usize,
) {
    if scale.is_none() && steps.len() == 1 {
        let (epsilon, half) = (steps[0], 0.5 * steps[0]);
        z.par_iter_mut()
            .zip(momentum.par_iter_mut())
            .zip(gradient.par_iter())
            .for_each(|((zj, rj), &g)| {
                let r = *rj - half * g;
                *rj = r;
                *zj += epsilon * r;
            });
        return;
    }
    z.par_chunks_mut(p)
        .zip(momentum.par_chunks_mut(p))
        .zip(gradient.par_chunks(p))
        .enumerate()
        .for_each(|(c, ((z, r), g))| {
            let epsilon = chain_step(steps, c);
            let half = 0.5 * epsilon;
            for j in 0..p {
                let rj = r[j] - half * g[j];
                r[j] = rj;
                match scale {
                    Some(scale) => z[j] += (epsilon * rj) / scale[c],
                    None => z[j] += epsilon * rj,
                }
            }
        });
}

/// The second half of a leapfrog step, with the gradient at the new z: r ← r − (ε/2)·∇U(z), on
/// rows of p; `steps` as for `leapfrog_drift`.
pub fn leapfrog_kick(gradient: &[f32], momentum: &mut [f32], steps: &[f32], p: usize) {
    momentum
        .par_chunks_mut(p)
        .zip(gradient.par_chunks(p))
        .enumerate()
        .for_each(|(c, (r, g))| {
            let half = 0.5 * chain_step(steps, c);
            for (rj, &g) in r.iter_mut().zip(g) {
                *rj -= half * g;
            }
        });
}
