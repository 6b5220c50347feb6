//! One learnable atom's parameters θ by independence Metropolis–Hastings: a Student-t proposal at the conditional mode (Nelder–Mead).

use argmin::core::{CostFunction, Executor, State};
use argmin::solver::neldermead::NelderMead;
use rand::Rng;

use super::linalg::dot;
use crate::math::Portable;
use crate::model::AtomFamily;
use crate::rng::{chi_squared, standard_normal, PhiloxRng};

/// The conditional energy of one learnable atom's θ: γε/2·‖e − S φ(θ)‖² + ½(θ − g)ᵀG(θ − g),
/// less the constant γε/2·‖e‖²; out of range or a zero atom gives a large penalty.
pub(crate) struct AtomEnergy<'a> {
    /// The atoms' family.
    pub family: &'a AtomFamily,
    /// The residual with this atom's contribution added back.
    pub e: &'a [f64],
    /// The summed coefficient S of the slots holding the atom.
    pub weight: f64,
    /// The noise precision γε.
    pub gamma: f64,
    /// The atom's prior mean g.
    pub g: &'a [f64],
    /// The prior precision G (q × q).
    pub big_g: &'a [f64],
    /// An atom's worth of room for φ(θ).
    pub scratch: std::cell::RefCell<Vec<f64>>,
}

const OUTSIDE: f64 = 1e30;

impl AtomEnergy<'_> {
    /// The energy at θ.
    pub fn energy(&self, theta: &[f64]) -> f64 {
        if !self.family.in_range(theta) {
            return OUTSIDE;
        }
        let mut a = self.scratch.borrow_mut();
        self.family.raw_atom(theta, &mut a);
        let n2 = dot(&a, &a);
        if !(n2 > 1e-24 && n2.is_finite()) {
            return OUTSIDE;
        }
        let ea = dot(self.e, &a) / n2.sqrt();
        let s = self.weight;
        let q = theta.len();
        let mut prior = 0.0;
        for i in 0..q {
            for j in 0..q {
                prior += (theta[i] - self.g[i]) * self.big_g[i * q + j] * (theta[j] - self.g[j]);
            }
        }
        0.5 * self.gamma * (s * s - 2.0 * s * ea) + 0.5 * prior
    }
}

/// The energy as argmin's cost function (borrowed, so the caller keeps it for the MH ratio).
struct Cost<'a, 'b>(&'a AtomEnergy<'b>);

impl CostFunction for Cost<'_, '_> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, theta: &Self::Param) -> Result<f64, argmin::core::Error> {
        Ok(self.0.energy(theta))
    }
}

/// The mode of an atom's conditional by Nelder–Mead from `start` (simplex steps of two units).
pub(crate) fn find_mode(energy: &AtomEnergy<'_>, start: &[f64], iterations: u64) -> Vec<f64> {
    let units = energy.family.units();
    let ranges = energy.family.ranges();
    let mut simplex = vec![start.to_vec()];
    for j in 0..start.len() {
        let mut v = start.to_vec();
        let step = 2.0 * units[j];
        v[j] = if v[j] + step <= ranges[j].1 {
            v[j] + step
        } else {
            v[j] - step
        };
        simplex.push(v);
    }
    let solver = match NelderMead::new(simplex).with_sd_tolerance(1e-10) {
        Ok(s) => s,
        Err(_) => return start.to_vec(),
    };
    let run = Executor::new(Cost(energy), solver)
        .configure(|state| state.max_iters(iterations))
        .timer(false)
        .run();
    match run {
        Ok(result) => result
            .state
            .get_best_param()
            .cloned()
            .unwrap_or_else(|| start.to_vec()),
        Err(_) => start.to_vec(),
    }
}

/// log q(θ) of the Student-t proposal (up to a constant), scales τ·units.
fn log_t(theta: &[f64], mode: &[f64], scales: &[f64], dof: f64) -> f64 {
    let m: f64 = theta
        .iter()
        .zip(mode)
        .zip(scales)
        .map(|((t, m), s)| ((t - m) / s).powi(2))
        .sum();
    -0.5 * (dof + theta.len() as f64) * (m / dof).ln_1p_portable()
}

/// One independence Metropolis–Hastings step with a Student-t proposal (dof ν, per-coordinate
/// scales) centred on `mode`, for the target exp(−energy): returns the candidate and whether the
/// MH test accepts it (u < π(θ')q(θ)/(π(θ)q(θ'))). Draws χ²(ν), then one normal per coordinate,
/// then the uniform.
pub(crate) fn student_t_mh(
    rng: &mut PhiloxRng,
    current: &[f64],
    mode: &[f64],
    scales: &[f64],
    dof: f64,
    energy: impl Fn(&[f64]) -> f64,
) -> (Vec<f64>, bool) {
    let w = chi_squared(rng, dof).unwrap_or(dof);
    let stretch = (dof / w).sqrt();
    let candidate: Vec<f64> = mode
        .iter()
        .zip(scales)
        .map(|(m, s)| m + s * standard_normal(rng) * stretch)
        .collect();
    let log_alpha = energy(current) - energy(&candidate) + log_t(current, mode, scales, dof)
        - log_t(&candidate, mode, scales, dof);
    let u: f64 = rng.random();
    let passes = u.ln_portable() < log_alpha;
    (candidate, passes)
}

/// θ clamped into the family's ranges.
pub(crate) fn clamp_into(family: &AtomFamily, theta: &[f64]) -> Vec<f64> {
    theta
        .iter()
        .zip(family.ranges())
        .map(|(&v, (lo, hi))| v.clamp(lo, hi))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Purpose, Stream};

    fn rng(i: u32) -> PhiloxRng {
        PhiloxRng::new(Stream::new(11, i, 0, 0, Purpose::DictionaryLearning))
    }

    #[test]
    fn student_t_independence_mh_samples_its_target() {
        // Target N(1, 0.5²) in 1-D; proposal t_4 centred off the mode (1.3) with scale 0.8.
        // 40000 steps; the MC error of the mean is estimated by batch means (100 batches).
        let energy = |t: &[f64]| 0.5 * ((t[0] - 1.0) / 0.5).powi(2);
        let mut x = vec![0.0];
        let mut draws = Vec::with_capacity(40_000);
        let mut accepted = 0;
        for i in 0..40_000 {
            let (candidate, passes) = student_t_mh(&mut rng(i), &x, &[1.3], &[0.8], 4.0, energy);
            if passes {
                x = candidate;
                accepted += 1;
            }
            draws.push(x[0]);
        }
        let n = draws.len() as f64;
        let mean = draws.iter().sum::<f64>() / n;
        let var = draws.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let batch_means: Vec<f64> = draws
            .chunks(400)
            .map(|c| c.iter().sum::<f64>() / c.len() as f64)
            .collect();
        let bm = batch_means.iter().map(|b| (b - mean).powi(2)).sum::<f64>() / 99.0;
        let mcse = (bm / 100.0).sqrt();
        assert!(
            (mean - 1.0).abs() < 4.0 * mcse,
            "mean {mean}, expected 1 (MC error {mcse})"
        );
        // The variance's MC error by batch means of the squared deviations, likewise.
        let batch_sq: Vec<f64> = draws
            .chunks(400)
            .map(|c| c.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / c.len() as f64)
            .collect();
        let bv = batch_sq.iter().map(|b| (b - var).powi(2)).sum::<f64>() / 99.0;
        let mcse_var = (bv / 100.0).sqrt();
        assert!(
            (var - 0.25).abs() < 4.0 * mcse_var,
            "variance {var}, expected 0.25 (MC error {mcse_var})"
        );
        assert!(accepted > 20_000, "acceptance {accepted} of 40000");
    }
}
