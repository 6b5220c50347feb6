//! AG-SVGD (paper 004, eq. 12-14): SVGD without the target's gradient, moving particles by a kernel density estimate's weights.
//!
//! One step: x⁽ⁱ⁾ ← x⁽ⁱ⁾ + ε Σⱼ (ωⱼ/Z) [∇log ν(x⁽ʲ⁾) κ(x⁽ⁱ⁾, x⁽ʲ⁾) + ∇ₓ₍ⱼ₎ κ(x⁽ⁱ⁾, x⁽ʲ⁾)], with
//! ωⱼ = ν(x⁽ʲ⁾)/p(x⁽ʲ⁾), Z = Σⱼ ωⱼ; ν is the kernel density estimate of the particles (13) with the
//! RBF kernel κ' and ∇log ν the Stein gradient estimator (14), −(K' + ηI)⁻¹ ⟨∇, K'⟩ (Li & Turner
//! 2018). Both kernels are RBF, exp(−‖x − y‖²/h), with h by the median trick (median of the squared
//! distances / log(M + 1)) times a factor each (`h_svgd`, `h_density`).

use crate::math::Portable;
use crate::{Error, Result};

/// AG-SVGD's settings.
#[derive(Clone, Debug)]
pub struct AgSvgdSettings {
    /// Step size ε of eq. (12), in units of the median pairwise distance (the step is scaled so that
    /// the largest particle move is at most `step` × that distance).
    pub step: f64,
    /// Factor on the median-trick bandwidth of κ (the SVGD kernel).
    pub h_svgd: f64,
    /// Factor on the median-trick bandwidth of κ' (density and gradient estimates); the paper's
    /// grid search is over {0.5, 1, 2, 4, 8, 10}.
    pub h_density: f64,
    /// η of the Stein gradient estimator; the paper's grid is {0.05, 0.1, 1, 5, 10, 15}.
    pub eta: f64,
}

impl Default for AgSvgdSettings {
    fn default() -> Self {
        AgSvgdSettings {
            step: 0.05,
            h_svgd: 1.0,
            h_density: 1.0,
            eta: 1.0,
        }
    }
}

/// Median of the squared pairwise distances of `x` (M × 2).
fn median_sq(x: &[[f64; 2]]) -> f64 {
    let mut d = Vec::with_capacity(x.len() * x.len() / 2);
    for i in 0..x.len() {
        for j in i + 1..x.len() {
            d.push(sq(x[i], x[j]));
        }
    }
    if d.is_empty() {
        return 1.0;
    }
    let mid = d.len() / 2;
    let (_, m, _) = d.select_nth_unstable_by(mid, f64::total_cmp);
    m.max(1e-12)
}

fn sq(a: [f64; 2], b: [f64; 2]) -> f64 {
    (a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)
}

/// Solves A X = B in place for symmetric positive definite A (n × n, row-major), B n × 2.
#[allow(clippy::needless_range_loop)] // triangular index ranges read clearer as indices
fn cholesky_solve(a: &mut [f64], n: usize, b: &mut [[f64; 2]]) -> Result<()> {
    for j in 0..n {
        let mut s = a[j * n + j];
        for k in 0..j {
            s -= a[j * n + k] * a[j * n + k];
        }
        if s <= 0.0 {
            return Err(Error::Internal(
                "AG-SVGD: the kernel matrix is not positive definite (raise eta)".into(),
            ));
        }
        let d = s.sqrt();
        a[j * n + j] = d;
        for i in j + 1..n {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= a[i * n + k] * a[j * n + k];
            }
            a[i * n + j] = s / d;
        }
    }
    for i in 0..n {
        for c in 0..2 {
            let mut s = b[i][c];
            for k in 0..i {
                s -= a[i * n + k] * b[k][c];
            }
            b[i][c] = s / a[i * n + i];
        }
    }
    for i in (0..n).rev() {
        for c in 0..2 {
            let mut s = b[i][c];
            for k in i + 1..n {
                s -= a[k * n + i] * b[k][c];
            }
            b[i][c] = s / a[i * n + i];
        }
    }
    Ok(())
}

/// The Stein gradient estimate of ∇log ν at the particles (eq. 14) with bandwidth `h`.
pub fn stein_gradient(x: &[[f64; 2]], h: f64, eta: f64) -> Result<Vec<[f64; 2]>> {
    let m = x.len();
    let mut k = vec![0.0; m * m];
    let mut div = vec![[0.0; 2]; m];
    for i in 0..m {
        for j in 0..m {
            let kij = (-sq(x[i], x[j]) / h).exp_portable();
            k[i * m + j] = kij;
            // ∇_{x_j} κ'(x_i, x_j) = (2/h)(x_i − x_j) κ'.
            div[i][0] += 2.0 / h * (x[i][0] - x[j][0]) * kij;
            div[i][1] += 2.0 / h * (x[i][1] - x[j][1]) * kij;
        }
        k[i * m + i] += eta;
    }
    cholesky_solve(&mut k, m, &mut div)?;
    Ok(div.into_iter().map(|g| [-g[0], -g[1]]).collect())
}

/// One AG-SVGD step of the particles `x` towards exp(−energy).
pub fn step(
    x: &mut [[f64; 2]],
    energy: impl Fn([f64; 2]) -> f64,
    settings: &AgSvgdSettings,
) -> Result<()> {
    let m = x.len();
    if m < 2 {
        return Ok(());
    }
    let med = median_sq(x);
    let base = med / ((m + 1) as f64).ln_portable();
    let h = base * settings.h_svgd;
    let hd = base * settings.h_density;
    let grad = stein_gradient(x, hd, settings.eta)?;
    // log ω_j = log ν(x_j) + U(x_j), ν by the kernel density estimate (13).
    let log_w: Vec<f64> = (0..m)
        .map(|j| {
            let nu: f64 = (0..m)
                .map(|i| (-sq(x[j], x[i]) / hd).exp_portable())
                .sum::<f64>()
                / m as f64;
            nu.ln_portable() + energy(x[j])
        })
        .collect();
    let max = log_w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = log_w.iter().map(|l| (l - max).exp_portable()).collect();
    let z: f64 = w.iter().sum();
    let mut phi = vec![[0.0; 2]; m];
    for (i, p) in phi.iter_mut().enumerate() {
        for j in 0..m {
            let kij = (-sq(x[i], x[j]) / h).exp_portable();
            let wj = w[j] / z;
            for c in 0..2 {
                p[c] += wj * (grad[j][c] * kij + 2.0 / h * (x[i][c] - x[j][c]) * kij);
            }
        }
    }
    let largest = phi
        .iter()
        .map(|p| (p[0] * p[0] + p[1] * p[1]).sqrt())
        .fold(0.0, f64::max);
    if largest > 0.0 && largest.is_finite() {
        let eps = settings.step * med.sqrt() / largest;
        for (xi, p) in x.iter_mut().zip(&phi) {
            xi[0] += eps * p[0];
            xi[1] += eps * p[1];
        }
    }
    Ok(())
}
