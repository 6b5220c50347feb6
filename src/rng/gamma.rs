//! Gamma draws from a Philox stream by the Marsaglia–Tsang method, in f64 on the host.
//!
//! Written by hand rather than with `rand_distr::Gamma` so that a draw is a fixed function of
//! the stream's words (one Philox block per attempt, documented below) whatever crate versions
//! are built, and so that a GPU run, whose precisions are drawn on the host from the same
//! stream, gives bit for bit the CPU run's draws.

use super::philox::Stream;
use crate::math::Portable;

/// A uniform on (0, 1) with 53 random bits from two words (never 0 or 1).
#[inline]
fn uniform64(hi: u32, lo: u32) -> f64 {
    let bits = (u64::from(hi) << 21) ^ u64::from(lo >> 11);
    ((bits & ((1u64 << 53) - 1)) as f64 + 0.5) * (1.0 / 9_007_199_254_740_992.0)
}

/// A uniform on (0, 1) from one word (never 0 or 1).
#[inline]
fn uniform32(word: u32) -> f64 {
    (f64::from(word) + 0.5) * (1.0 / 4_294_967_296.0)
}

/// A standard normal from two words by Box–Muller (the cosine branch), in f64: the radius from
/// word `a`, the angle from word `b`.
#[inline]
fn normal64(a: u32, b: u32) -> f64 {
    let radius = (-2.0 * uniform32(a).ln_portable()).sqrt();
    let angle = std::f64::consts::TAU * uniform32(b);
    radius * angle.cos_portable()
}

/// A Gamma(shape, 1) draw from `stream` (shape > 0 and finite).
///
/// Marsaglia & Tsang (2000): with d = shape − 1/3 and c = 1/√(9d), attempt i (block i of the
/// stream) draws a normal x from words 0 and 1 and a uniform u from words 2 and 3, and accepts
/// v = (1 + c·x)³ > 0 when ln u < x²/2 + d − d·v + d·ln v, returning d·v. A shape below 1 is
/// boosted: Gamma(shape + 1) · u^(1/shape) with u from the stream's last block word pair
/// (block `u32::MAX`). Returns NaN when no attempt of 2³² accepts (never, in practice: each
/// accepts with probability above 0.95).
pub fn standard_gamma(stream: &Stream, shape: f64) -> f64 {
    marsaglia_tsang(shape, &mut StreamDraws(stream))
}

/// Where Marsaglia and Tsang's method takes its randomness from.
pub(crate) trait GammaDraws {
    /// The uniform on (0, 1) that boosts a shape below 1.
    fn boost(&mut self) -> f64;
    /// Attempt `i`'s standard normal x and uniform u on (0, 1).
    fn attempt(&mut self, i: u32) -> (f64, f64);
}

/// A stream's draws as documented on [`standard_gamma`]: attempt i from block i, the boost from
/// block `u32::MAX`.
struct StreamDraws<'a>(&'a Stream);

impl GammaDraws for StreamDraws<'_> {
    fn boost(&mut self) -> f64 {
        let w = self.0.block(u32::MAX);
        uniform64(w[0], w[1])
    }
    fn attempt(&mut self, i: u32) -> (f64, f64) {
        let w = self.0.block(i);
        (normal64(w[0], w[1]), uniform64(w[2], w[3]))
    }
}

/// A Gamma(shape, 1) draw by Marsaglia & Tsang (2000) from `draws` (the method as documented on
/// [`standard_gamma`]); NaN unless the shape is positive and finite.
pub(crate) fn marsaglia_tsang(shape: f64, draws: &mut impl GammaDraws) -> f64 {
    if !(shape.is_finite() && shape > 0.0) {
        return f64::NAN;
    }
    if shape < 1.0 {
        let boost = draws.boost().powf_portable(1.0 / shape);
        return at_least_one(shape + 1.0, draws) * boost;
    }
    at_least_one(shape, draws)
}

fn at_least_one(shape: f64, draws: &mut impl GammaDraws) -> f64 {
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    for attempt in 0..u32::MAX {
        let (x, u) = draws.attempt(attempt);
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        if u.ln_portable() < 0.5 * x * x + d - d * v + d * v.ln_portable() {
            return d * v;
        }
    }
    f64::NAN
}

/// A Gamma(shape, rate) draw (mean shape / rate) from `stream`.
pub fn gamma_from_stream(stream: &Stream, shape: f64, rate: f64) -> f64 {
    standard_gamma(stream, shape) / rate
}

/// A draw of u > 0 with density ∝ u^(2k−1)·exp(−β·u² − γ·u) (k > ½, β > 0, γ ≥ 0; NaN
/// otherwise): the square root of the noise precision under the Bayesian-lasso prior
/// (`NoiseModel::Gibbs`), whose conditional is a Gamma(k, β) in u² tilted by exp(−γ·u).
///
/// Exact rejection sampling from a log-concave envelope (h = log density, concave): with the
/// mode m = 2a/(γ + √(γ² + 8βa)), a = 2k − 1, and s = 1/√(−h''(m)), tangents to h at
/// x_l = m − s (m/2 when that is not positive) and x_r = m + s, the envelope
/// min(h(m), tangent_l, tangent_r) is an increasing exponential on (0, z_l), flat on
/// [z_l, z_r] and a decreasing exponential beyond (z_l, z_r: where the tangents reach h(m)).
/// Attempt i (block i of the stream) picks the piece and the point from words 0 and 1 (one
/// uniform, by inversion of the envelope's distribution), and accepts with words 2 and 3 when
/// ln v ≤ h(u) − envelope(u). Each attempt accepts with probability about 0.8 or more (0.84
/// for a Gaussian-shaped h); returns NaN when none of 2³² does.
pub fn tilted_root_gamma(stream: &Stream, k: f64, beta: f64, gamma: f64) -> f64 {
    let valid = k.is_finite() && k > 0.5 && beta.is_finite() && beta > 0.0;
    if !(valid && gamma.is_finite() && gamma >= 0.0) {
        return f64::NAN;
    }
    let a = 2.0 * k - 1.0;
    let mode = 2.0 * a / (gamma + (gamma * gamma + 8.0 * beta * a).sqrt());
    let h =
        |u: f64| a * (u / mode).ln_portable() - beta * (u * u - mode * mode) - gamma * (u - mode);
    let slope = |u: f64| a / u - 2.0 * beta * u - gamma;
    let s = 1.0 / (a / (mode * mode) + 2.0 * beta).sqrt();
    let left = if mode - s > 0.0 { mode - s } else { 0.5 * mode };
    let right = mode + s;
    let (hl, sl) = (h(left), slope(left));
    let (hr, sr) = (h(right), slope(right));
    // Where the tangents reach h(m) = 0 (z_l ≤ m ≤ z_r by concavity).
    let z_l = left - hl / sl;
    let z_r = right - hr / sr;
    let left_mass = -(-sl * z_l).exp_m1_portable() / sl;
    let flat_mass = z_r - z_l;
    let right_mass = -1.0 / sr;
    let total = left_mass + flat_mass + right_mass;
    for attempt in 0..u32::MAX {
        let w = stream.block(attempt);
        let t = uniform64(w[0], w[1]) * total;
        let (u, envelope) = if t < left_mass {
            // Inverse CDF of exp(sl·(u − z_l)) on (0, z_l).
            let u = z_l + (-(t * sl)).ln_1p_portable() / sl;
            (u, sl * (u - z_l))
        } else if t < left_mass + flat_mass {
            (z_l + (t - left_mass), 0.0)
        } else {
            let v = (t - left_mass - flat_mass) / right_mass;
            let u = z_r + (-v).ln_1p_portable() / sr;
            (u, sr * (u - z_r))
        };
        if !(u > 0.0 && u.is_finite()) {
            continue;
        }
        if uniform64(w[2], w[3]).ln_portable() <= h(u) - envelope {
            return u;
        }
    }
    f64::NAN
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Purpose;

    /// Mean and variance of 20 000 draws within 5 standard errors, for shapes below and above 1.
    #[test]
    fn moments_match_the_gamma() {
        for &(shape, rate) in &[(0.5, 1.0), (1.0, 2.0), (3.5, 0.25), (392.0, 10.0)] {
            let n = 20_000;
            let draws: Vec<f64> = (0..n)
                .map(|i| {
                    let s = Stream::new(7, i, 1, 0, Purpose::NoisePrecision);
                    gamma_from_stream(&s, shape, rate)
                })
                .collect();
            let mean = draws.iter().sum::<f64>() / n as f64;
            let var = draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let (m, v) = (shape / rate, shape / (rate * rate));
            let se_mean = (v / n as f64).sqrt();
            // Var of the sample variance of a Gamma: (μ4 − v²)/n with μ4 = 3v²(1 + 2/shape).
            let se_var = ((3.0 * v * v * (1.0 + 2.0 / shape) - v * v) / n as f64).sqrt();
            assert!(
                (mean - m).abs() < 5.0 * se_mean,
                "shape {shape}: mean {mean} vs {m}"
            );
            assert!(
                (var - v).abs() < 5.0 * se_var,
                "shape {shape}: var {var} vs {v}"
            );
        }
    }

    #[test]
    fn bad_shapes_give_nan_and_draws_are_reproducible() {
        let s = Stream::new(1, 2, 3, 0, Purpose::NoisePrecision);
        assert!(standard_gamma(&s, 0.0).is_nan());
        assert!(standard_gamma(&s, f64::INFINITY).is_nan());
        assert_eq!(standard_gamma(&s, 2.5), standard_gamma(&s, 2.5));
        assert!(standard_gamma(&s, 2.5) > 0.0);
    }
    /// KS test (fixed seed, 4000 draws each) of `tilted_root_gamma` against its density
    /// integrated by quadrature, from a Gamma-like case (γ = 0) to one the tilt dominates
    /// (γ·m ≫ k) and one at pixel scale 255 (β, γ scaled by 255², 255); fails below p = 0.001,
    /// and a wrong shape (k + 1) must fail where it is
    /// detectable in 4000 draws (k < 10).
    #[test]
    fn tilted_root_gamma_matches_its_density() {
        use crate::diagnostics::reference::{ks_p_value, ks_statistic, tilted_root_gamma_cdf};
        for &(k, beta, gamma) in &[
            (1.5, 2.0, 0.0),
            (393.0, 12.0, 3.0),
            (2000.0, 15.0, 4000.0),
            (2000.0, 15.0 * 65025.0, 4000.0 * 255.0),
            (3.0, 0.01, 50.0),
        ] {
            let n = 4000u32;
            let draws: Vec<f64> = (0..n)
                .map(|i| {
                    let s = Stream::new(11, i, 3, 0, Purpose::NoisePrecision);
                    tilted_root_gamma(&s, k, beta, gamma)
                })
                .collect();
            let d = ks_statistic(&draws, tilted_root_gamma_cdf(k, beta, gamma, 200_000));
            let p = ks_p_value(d, n as usize);
            let wrong = ks_p_value(
                ks_statistic(&draws, tilted_root_gamma_cdf(k + 1.0, beta, gamma, 200_000)),
                n as usize,
            );
            eprintln!("k {k} beta {beta} gamma {gamma}: KS D = {d:.4} p = {p:.3} (k + 1: p = {wrong:.1e})");
            assert!(
                p > 1e-3,
                "k {k} beta {beta} gamma {gamma}: KS D = {d}, p = {p}"
            );
            if k < 10.0 {
                assert!(
                    wrong < 1e-3,
                    "k {k}: a shape off by one passes (p = {wrong})"
                );
            }
        }
        let s = Stream::new(1, 2, 3, 0, Purpose::NoisePrecision);
        assert!(tilted_root_gamma(&s, 0.5, 1.0, 1.0).is_nan());
        assert!(tilted_root_gamma(&s, 2.0, 0.0, 1.0).is_nan());
        assert!(tilted_root_gamma(&s, 2.0, 1.0, -1.0).is_nan());
    }
}
