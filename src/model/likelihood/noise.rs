//! The likelihood's noise model: a fixed σ² (`--sigma2`), or a per-chain noise precision τ with a
//! Gamma(e, f) prior updated by its conjugate Gibbs step (`--noise gibbs`; Chaspari et al. 2016).

use serde::{Deserialize, Serialize};

use crate::rng::{tilted_root_gamma, Purpose, Stream};
use crate::{Error, Result};

/// The Gamma prior's default shape e: with e = 1 the prior's density in τ is flat but for
/// exp(−f·τ), so the conditional's shape e + d/2 is set by the image's d pixels.
pub const DEFAULT_NOISE_E: f32 = 1.0;
/// The Gamma prior's default rate f: small beside ½||r||² at any pixel scale (a [0, 1] MNIST
/// digit's residual has ½||r||² of order 1 or more), so the learned precision scales as
/// 1/scale² and the target does not depend on the pixel scale.
pub const DEFAULT_NOISE_F: f32 = 1e-3;

/// How the likelihood's noise level is set (`--noise`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "model")]
pub enum NoiseModel {
    /// The fixed variance σ² of `Target::sigma2` (the paper's model; the default).
    #[default]
    Fixed,
    /// A per-chain precision τ ~ Gamma(e, f) (shape e, rate f) with the prior in noise units,
    /// p(X | τ) ∝ exp(−λ√τ·||X||₁), so that U(X | τ) = τ/2·||A X − m||² + λ√τ·||X||₁; τ is drawn
    /// once per outer iteration from its conditional given the chain's X (`gibbs_precision`),
    /// and the dynamics are preconditioned by σ² = 1/τ (docs/noise.md): scaling the data by s
    /// scales the codes by s and τ by 1/s², with the same acceptance.
    Gibbs {
        /// Shape e > 0 of the Gamma prior (`noise_e`).
        e: f32,
        /// Rate f > 0 of the Gamma prior (`noise_f`).
        f: f32,
    },
}

impl NoiseModel {
    /// `Gibbs` with the default prior.
    pub fn gibbs() -> Self {
        NoiseModel::Gibbs {
            e: DEFAULT_NOISE_E,
            f: DEFAULT_NOISE_F,
        }
    }

    /// Whether σ² is fixed (the default).
    pub fn is_fixed(&self) -> bool {
        matches!(self, NoiseModel::Fixed)
    }

    /// Whether the precision is learned.
    pub fn is_gibbs(&self) -> bool {
        matches!(self, NoiseModel::Gibbs { .. })
    }

    /// Checks e and f: positive and finite (`Error::Usage` naming `noise_e` or `noise_f`).
    pub fn validate(&self) -> Result<()> {
        if let NoiseModel::Gibbs { e, f } = *self {
            for (name, v) in [("noise_e", e), ("noise_f", f)] {
                if !(v.is_finite() && v > 0.0) {
                    return Err(Error::usage(
                        name,
                        format!(
                            "must be a positive finite number (the Gamma prior's {}), got {v}",
                            if name == "noise_e" { "shape" } else { "rate" }
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The conditional Gibbs draw of one chain's precision under the Bayesian-lasso prior
/// p(x | τ) ∝ (λ√τ/2)^p·exp(−λ√τ·||x||₁) (Park & Casella 2008): with u = √τ,
/// p(u | x) ∝ u^(2k−1)·exp(−β·u² − γ·u), k = e + (d + p)/2, β = f + ||r||²/2, γ = λ·||x||₁,
/// drawn exactly by `rng::tilted_root_gamma` from the stream (seed, chain, outer, 0,
/// NoisePrecision); τ = u² rounded once to f32 (the value every kernel's √τ is taken from).
#[allow(clippy::too_many_arguments)]
pub fn gibbs_precision(
    e: f32,
    f: f32,
    d: usize,
    p: usize,
    lam: f32,
    residual_sq: f64,
    l1: f64,
    seed: u64,
    chain: u32,
    outer: u32,
) -> f32 {
    let stream = Stream::new(seed, chain, outer, 0, Purpose::NoisePrecision);
    let k = e as f64 + 0.5 * (d + p) as f64;
    let beta = f as f64 + 0.5 * residual_sq;
    let gamma = lam as f64 * l1;
    let u = tilted_root_gamma(&stream, k, beta, gamma);
    (u * u) as f32
}

/// Per chain ||x||₁ in f64 from the codes (C × p).
pub fn code_l1_norms(codes: &[f32], p: usize) -> Vec<f64> {
    codes
        .chunks(p)
        .map(|x| x.iter().map(|&v| (v as f64).abs()).sum())
        .collect()
}

/// Per chain ||A X − m||² in f64 from the images A X and the means m (both C × d).
pub fn residual_norms(images: &[f32], means: &[f32], d: usize) -> Vec<f64> {
    images
        .chunks(d)
        .zip(means.chunks(d))
        .map(|(a, m)| {
            a.iter()
                .zip(m)
                .map(|(&x, &y)| (x as f64 - y as f64).powi(2))
                .sum()
        })
        .collect()
}
