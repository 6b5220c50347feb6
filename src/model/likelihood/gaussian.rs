//! The paper's Gaussian likelihood 1/(2σ²)·||A X − m||² around a per-chain mean m (the data's or
//! the class's mean, or one image for `local`): its f64 reference energy and gradient and the
//! energy difference the MH terms use (the backends' twins: `backend::cpu::{gradient_step,
//! mh_terms}`, `shaders/gradient_step.wgsl`, `shaders/mh_terms.wgsl`).

use crate::model::prior::PriorRow;
use crate::model::Target;

impl Target {
    /// U(X) − const = 1/(2σ²)·||A X − xbar||² + lam·||X||₁, in f64 (the reference).
    pub fn energy_f64(&self, x: &[f32]) -> f64 {
        let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let ax = self.dictionary.apply_f64(&x64);
        let fit: f64 = ax
            .iter()
            .zip(&self.xbar)
            .map(|(a, &b)| (a - b as f64).powi(2))
            .sum();
        0.5 * fit / self.sigma2 as f64 + self.prior.energy_f64(x)
    }

    /// ∇U(X) = Aᵀ(A X − y)/σ² + lam·sign(X) with y = xbar, or a minibatch mean, in f64.
    pub fn gradient_f64(&self, x: &[f32], y: &[f32]) -> Vec<f64> {
        let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let residual: Vec<f64> = self
            .dictionary
            .apply_f64(&x64)
            .iter()
            .zip(y)
            .map(|(a, &b)| a - b as f64)
            .collect();
        let mut g = self.dictionary.apply_transpose_f64(&residual);
        for (gj, &xj) in g.iter_mut().zip(x) {
            *gj = *gj / self.sigma2 as f64 + self.prior.gradient_f64(xj);
        }
        g
    }
}

/// U(Z) − U(X) as one reduction of per-element differences, never two rounded energies,
/// with one chain's view of the prior (its own latent state for SSGL):
/// ½ Σ_j (r_Z − r_X)_j (r_Z + r_X)_j / σ² + (−log p(Z) + log p(X)), with r = A· − xbar.
pub fn energy_difference_row(
    residual_z: &[f32],
    residual_x: &[f32],
    z: &[f32],
    x: &[f32],
    prior: &PriorRow,
    inv_sigma2: f32,
) -> f32 {
    let fit: f32 = residual_z
        .iter()
        .zip(residual_x)
        .map(|(&rz, &rx)| (rz - rx) * (rz + rx))
        .sum();
    0.5 * fit * inv_sigma2 + prior.energy_difference(z, x)
}
