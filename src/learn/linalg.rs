//! Small dense linear algebra and the draws of the dictionary model (Normal by precision, Wishart, Gamma).

use crate::rng::{chi_squared, standard_normal, PhiloxRng};

/// ⟨a, b⟩.
pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The lower Cholesky factor of a q × q symmetric positive definite matrix.
pub(crate) fn cholesky(a: &[f64], q: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; q * q];
    for i in 0..q {
        for j in 0..=i {
            let mut s = a[i * q + j];
            for k in 0..j {
                s -= l[i * q + k] * l[j * q + k];
            }
            if i == j {
                if !(s > 0.0 && s.is_finite()) {
                    return None;
                }
                l[i * q + i] = s.sqrt();
            } else {
                l[i * q + j] = s / l[j * q + j];
            }
        }
    }
    Some(l)
}

/// The solution of A y = b for a q × q symmetric positive definite A (by Cholesky).
pub(crate) fn solve_spd(a: &[f64], b: &[f64], q: usize) -> Option<Vec<f64>> {
    let l = cholesky(a, q)?;
    let mut y = b.to_vec();
    for i in 0..q {
        for k in 0..i {
            y[i] -= l[i * q + k] * y[k];
        }
        y[i] /= l[i * q + i];
    }
    for i in (0..q).rev() {
        for k in i + 1..q {
            y[i] -= l[k * q + i] * y[k];
        }
        y[i] /= l[i * q + i];
    }
    Some(y)
}

/// The inverse of a q × q symmetric positive definite matrix.
pub(crate) fn inverse_spd(a: &[f64], q: usize) -> Option<Vec<f64>> {
    let mut inv = vec![0.0; q * q];
    for j in 0..q {
        let mut e = vec![0.0; q];
        e[j] = 1.0;
        let col = solve_spd(a, &e, q)?;
        for i in 0..q {
            inv[i * q + j] = col[i];
        }
    }
    Some(inv)
}

/// The q × q identity.
pub(crate) fn identity(q: usize) -> Vec<f64> {
    let mut m = vec![0.0; q * q];
    (0..q).for_each(|i| m[i * q + i] = 1.0);
    m
}

/// A draw from N(mean, P⁻¹) given the precision P (q × q): mean + L⁻ᵀ z with P = L Lᵀ.
pub(crate) fn normal_with_precision(
    rng: &mut PhiloxRng,
    mean: &[f64],
    precision: &[f64],
    q: usize,
) -> Option<Vec<f64>> {
    let l = cholesky(precision, q)?;
    let mut y: Vec<f64> = (0..q).map(|_| standard_normal(rng)).collect();
    for i in (0..q).rev() {
        for k in i + 1..q {
            y[i] -= l[k * q + i] * y[k];
        }
        y[i] /= l[i * q + i];
    }
    Some(mean.iter().zip(&y).map(|(m, v)| m + v).collect())
}

/// A Wishart(ν, S) draw by Bartlett's decomposition: L A Aᵀ Lᵀ with S = L Lᵀ, A lower triangular,
/// A_ii = sqrt(χ²(ν − i)), A_ij ~ N(0, 1) below the diagonal. Needs ν > q − 1.
pub(crate) fn wishart(rng: &mut PhiloxRng, dof: f64, scale: &[f64], q: usize) -> Option<Vec<f64>> {
    let l = cholesky(scale, q)?;
    let mut a = vec![0.0; q * q];
    for i in 0..q {
        a[i * q + i] = chi_squared(rng, dof - i as f64)?.sqrt();
        for j in 0..i {
            a[i * q + j] = standard_normal(rng);
        }
    }
    // B = L A (lower triangular), W = B Bᵀ.
    let mut b = vec![0.0; q * q];
    for i in 0..q {
        for j in 0..=i {
            b[i * q + j] = (j..=i).map(|k| l[i * q + k] * a[k * q + j]).sum();
        }
    }
    let mut w = vec![0.0; q * q];
    for i in 0..q {
        for j in 0..q {
            w[i * q + j] = (0..q).map(|k| b[i * q + k] * b[j * q + k]).sum();
        }
    }
    Some(w)
}

/// A Gamma(shape, rate) draw; its mean shape/rate when the shape is not positive and finite or
/// the scale 1/rate is not positive and finite.
pub(crate) fn gamma_rate(rng: &mut PhiloxRng, shape: f64, rate: f64) -> f64 {
    let scale = 1.0 / rate;
    if !(scale.is_finite() && scale > 0.0) {
        return shape / rate;
    }
    crate::rng::portable_draws::standard_gamma(rng, shape).map_or(shape / rate, |g| g * scale)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Purpose, Stream};

    fn rng(i: u32) -> PhiloxRng {
        PhiloxRng::new(Stream::new(11, i, 0, 0, Purpose::DictionaryLearning))
    }

    #[test]
    fn gamma_draws_match_their_moments() {
        // Gamma(shape 81, rate 3): mean 27, variance 9. 4000 draws: MC error of the mean 0.047.
        let draws: Vec<f64> = (0..4000)
            .map(|i| gamma_rate(&mut rng(i), 81.0, 3.0))
            .collect();
        let mean = draws.iter().sum::<f64>() / 4000.0;
        let var = draws.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 3999.0;
        assert!(
            (mean - 27.0).abs() < 4.0 * 0.0475,
            "mean {mean}, expected 27"
        );
        // Variance's MC sd ≈ 9·sqrt(2/4000 + 6/(81·4000)) ≈ 0.21.
        assert!((var - 9.0).abs() < 4.0 * 0.21, "variance {var}, expected 9");
    }

    #[test]
    fn wishart_draws_have_mean_dof_times_scale() {
        let scale = [2.0, 0.5, 0.5, 1.0];
        let n = 4000;
        let mut mean = [0.0; 4];
        let mut sq = [0.0; 4];
        for i in 0..n {
            let w = wishart(&mut rng(i), 5.0, &scale, 2).unwrap();
            for j in 0..4 {
                mean[j] += w[j] / n as f64;
                sq[j] += w[j] * w[j] / n as f64;
            }
        }
        // E[W] = ν S; Var[W_ij] = ν (S_ij² + S_ii S_jj).
        for j in 0..4 {
            let (a, b) = (j / 2, j % 2);
            let expected = 5.0 * scale[j];
            let var = 5.0 * (scale[j] * scale[j] + scale[a * 2 + a] * scale[b * 2 + b]);
            let tol = 4.0 * (var / n as f64).sqrt();
            assert!(
                (mean[j] - expected).abs() < tol,
                "entry {j}: mean {} vs {expected} (tolerance {tol})",
                mean[j]
            );
            let _ = sq[j];
        }
    }

    #[test]
    fn normal_with_precision_has_the_inverse_covariance() {
        let precision = [4.0, 1.0, 1.0, 2.0];
        let cov = inverse_spd(&precision, 2).unwrap();
        let n = 8000;
        let mut c = [0.0; 4];
        for i in 0..n {
            let x = normal_with_precision(&mut rng(i), &[1.0, -1.0], &precision, 2).unwrap();
            let d = [x[0] - 1.0, x[1] + 1.0];
            for j in 0..4 {
                c[j] += d[j / 2] * d[j % 2] / n as f64;
            }
        }
        for j in 0..4 {
            let (a, b) = (j / 2, j % 2);
            let sd = ((cov[a * 2 + a] * cov[b * 2 + b] + cov[j] * cov[j]) / n as f64).sqrt();
            assert!(
                (c[j] - cov[j]).abs() < 4.0 * sd,
                "covariance entry {j}: {} vs {} (tolerance {})",
                c[j],
                cov[j],
                4.0 * sd
            );
        }
    }
}
