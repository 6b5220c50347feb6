//! Closed-form references for tests: erfc, the 1-D Gaussian × Laplace posterior, Kolmogorov-Smirnov.

use crate::math::Portable;
use std::f64::consts::{PI, SQRT_2};

/// erfc(x) in f64: the Maclaurin series of erf for |x| < 2.5 (relative error about 1e-13 there),
/// a continued fraction (Lentz, 200 terms) beyond, and erfc(−x) = 2 − erfc(x).
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x < 2.5 {
        // erf(x) = 2/√π Σ (−1)^n x^(2n+1) / (n! (2n+1))
        let (mut term, mut sum) = (x, x);
        let x2 = x * x;
        for n in 1..200 {
            term *= -x2 / n as f64;
            let add = term / (2 * n + 1) as f64;
            sum += add;
            if add.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        return 1.0 - 2.0 / PI.sqrt() * sum;
    }
    // erfc(x) = exp(−x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + …))))), evaluated backward.
    let mut f = x;
    for k in (1..200).rev() {
        f = x + (k as f64 / 2.0) / f;
    }
    (-x * x).exp_portable() / PI.sqrt() / f
}

/// The standard normal CDF Φ(x).
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / SQRT_2)
}

/// The 1-D density ∝ exp(−(x − m)²/(2s²) − lam·|x|): the posterior of one coordinate when A = I.
/// It is a two-sided mixture of truncated Gaussians, N(m − lam·s², s²) on x ≥ 0 and
/// N(m + lam·s², s²) on x < 0.
#[derive(Clone, Copy, Debug)]
pub struct LaplaceGaussian {
    /// The observation m.
    pub m: f64,
    /// The noise variance s² (= σ²).
    pub s2: f64,
    /// The Laplace rate lam.
    pub lam: f64,
}

impl LaplaceGaussian {
    fn s(&self) -> f64 {
        self.s2.sqrt()
    }

    fn mu_plus(&self) -> f64 {
        self.m - self.lam * self.s2
    }

    fn mu_minus(&self) -> f64 {
        self.m + self.lam * self.s2
    }

    /// The mass below 0, W− = w−/(w− + w+) with log w± = (μ±² − m²)/(2s²) + ln P±, where
    /// P+ = P(N(μ+, s²) ≥ 0) = ½erfc(−μ+/(s√2)) and P− = P(N(μ−, s²) < 0) = ½erfc(μ−/(s√2)).
    pub fn mass_below_zero(&self) -> f64 {
        let s = self.s();
        let (mp, mm) = (self.mu_plus(), self.mu_minus());
        let log_plus = (mp * mp - self.m * self.m) / (2.0 * self.s2)
            + (0.5 * erfc(-mp / (s * SQRT_2))).ln_portable();
        let log_minus = (mm * mm - self.m * self.m) / (2.0 * self.s2)
            + (0.5 * erfc(mm / (s * SQRT_2))).ln_portable();
        1.0 / (1.0 + (log_plus - log_minus).exp_portable())
    }

    /// The CDF F(x).
    pub fn cdf(&self, x: f64) -> f64 {
        let s = self.s();
        let below = self.mass_below_zero();
        let (mp, mm) = (self.mu_plus(), self.mu_minus());
        if x < 0.0 {
            below * erfc(-(x - mm) / (s * SQRT_2)) / erfc(mm / (s * SQRT_2))
        } else {
            below + (1.0 - below) * (1.0 - erfc((x - mp) / (s * SQRT_2)) / erfc(-mp / (s * SQRT_2)))
        }
    }

    /// Mean and variance by the trapezoidal rule on the density (20,001 points over ±12 s).
    pub fn moments(&self) -> (f64, f64) {
        let s = self.s();
        let centre = self.m;
        let (lo, hi) = (
            centre - 12.0 * s - 12.0 * self.lam * self.s2,
            centre + 12.0 * s,
        );
        let n = 20_000;
        let h = (hi - lo) / n as f64;
        let log_density = |x: f64| -(x - self.m).powi(2) / (2.0 * self.s2) - self.lam * x.abs();
        let (mut z, mut m1, mut m2) = (0.0, 0.0, 0.0);
        for i in 0..=n {
            let x = lo + i as f64 * h;
            let w = if i == 0 || i == n { 0.5 } else { 1.0 } * log_density(x).exp_portable();
            z += w;
            m1 += w * x;
            m2 += w * x * x;
        }
        let mean = m1 / z;
        (mean, m2 / z - mean * mean)
    }
}

/// The Kolmogorov-Smirnov statistic D = sup |F_n − F| of `sample` against `cdf`.
pub fn ks_statistic(sample: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    let mut sorted = sample.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len() as f64;
    sorted
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let f = cdf(x);
            (f - i as f64 / n).max((i + 1) as f64 / n - f)
        })
        .fold(0.0, f64::max)
}

/// P(D ≥ d) for n independent draws, by the Kolmogorov limit with Stephens' correction
/// λ = (√n + 0.12 + 0.11/√n)·d: Q(λ) = 2 Σ (−1)^(k−1) exp(−2k²λ²).
pub fn ks_p_value(d: f64, n: usize) -> f64 {
    let sn = (n as f64).sqrt();
    let lambda = (sn + 0.12 + 0.11 / sn) * d;
    if lambda < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    for k in 1..100 {
        let term = (-2.0 * (k * k) as f64 * lambda * lambda).exp_portable();
        sum += if k % 2 == 1 { term } else { -term };
        if term < 1e-16 {
            break;
        }
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

/// The CDF of u with density ∝ u^(2k−1)·exp(−β·u² − γ·u) (u = √τ under `--noise gibbs`, the
/// conditional `rng::tilted_root_gamma` draws), by the trapezoid rule on `points` intervals over
/// [max(0, m − 40 s), m + 40 s] (m the mode, s = 1/√(−h''(m))), cumulated, normalised and
/// linearly interpolated.
pub fn tilted_root_gamma_cdf(k: f64, beta: f64, gamma: f64, points: usize) -> impl Fn(f64) -> f64 {
    let a = 2.0 * k - 1.0;
    let mode = 2.0 * a / (gamma + (gamma * gamma + 8.0 * beta * a).sqrt());
    let s = 1.0 / (a / (mode * mode) + 2.0 * beta).sqrt();
    let n = points.max(2);
    let (lo, hi) = ((mode - 40.0 * s).max(0.0), mode + 40.0 * s);
    let du = (hi - lo) / n as f64;
    let dens = |u: f64| {
        if u <= 0.0 {
            0.0
        } else {
            (a * (u / mode).ln_portable() - beta * (u * u - mode * mode) - gamma * (u - mode))
                .exp_portable()
        }
    };
    let mut cdf = vec![0.0; n + 1];
    for i in 1..=n {
        let (u0, u1) = (lo + (i - 1) as f64 * du, lo + i as f64 * du);
        cdf[i] = cdf[i - 1] + 0.5 * du * (dens(u0) + dens(u1));
    }
    let total = cdf[n];
    move |u: f64| {
        let x = ((u - lo) / du).clamp(0.0, n as f64);
        let i = (x.floor() as usize).min(n - 1);
        let f = x - i as f64;
        (cdf[i] * (1.0 - f) + cdf[i + 1] * f) / total
    }
}
