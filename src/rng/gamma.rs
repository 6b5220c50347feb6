//! Gamma draws from a Philox stream by the Marsaglia–Tsang method, in f64 on the host.
//!
//! Written by hand rather than with `rand_distr::Gamma` so that a draw is a fixed function of
//! the stream's words (one Philox block per attempt, documented below) whatever crate versions
//! are built, and so that a GPU run, whose precisions are drawn on the host from the same
//! stream, gives bit for bit the CPU run's draws.

use super::philox::Stream;

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
    let radius = (-2.0 * uniform32(a).ln()).sqrt();
    let angle = std::f64::consts::TAU * uniform32(b);
    radius * angle.cos()
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
    if !(shape.is_finite() && shape > 0.0) {
        return f64::NAN;
    }
    if shape < 1.0 {
        let w = stream.block(u32::MAX);
        let boost = uniform64(w[0], w[1]).powf(1.0 / shape);
        return standard_gamma_at_least_one(stream, shape + 1.0) * boost;
    }
    standard_gamma_at_least_one(stream, shape)
}

fn standard_gamma_at_least_one(stream: &Stream, shape: f64) -> f64 {
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    for attempt in 0..u32::MAX {
        let w = stream.block(attempt);
        let x = normal64(w[0], w[1]);
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = uniform64(w[2], w[3]);
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
    f64::NAN
}

/// A Gamma(shape, rate) draw (mean shape / rate) from `stream`.
pub fn gamma_from_stream(stream: &Stream, shape: f64, rate: f64) -> f64 {
    standard_gamma(stream, shape) / rate
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
}
