//! The paper's Gaussian likelihood 1/(2σ²)·||A X − m||² around a per-chain mean m (the data's or
//! the class's mean, or one image for `local`): its MH energy terms (the WGSL twin
//! `shaders/likelihood/gaussian.wgsl`) and its f64 reference energy and gradient. Its gradient is
//! the backends' product Aᵀ r times the precision (`shaders/gradient_step.wgsl`).

use super::{chain_value, TermsInputs};
use crate::model::wgsl::WgslModel;
use crate::model::Target;

/// The WGSL twin of `Gaussian::energy_terms`; no step or energy pass.
pub const WGSL: &str = include_str!("../../../shaders/likelihood/gaussian.wgsl");

/// What the backends compile and bind for this likelihood: nothing beyond the kernels' own.
pub const WGSL_MODEL: WgslModel = WgslModel {
    name: "gaussian",
    wgsl: WGSL,
    params: None,
    chains: false,
    scratch: false,
};

/// ½||A X − m_c||²/σ² around a per-chain mean m_c (C × d): the data's or the class's mean
/// (`paper`), or the chain's start image (`local`). Step gradients use per-chain minibatch means
/// of the chain's rows instead.
#[derive(Clone, Debug)]
pub struct Gaussian {
    /// m_c, C × d.
    pub means: Vec<f32>,
}

impl Gaussian {
    /// Per chain U(X) = ½·||r_X||²·τ plus the prior's, and U(Z) − U(X) = ½·Σ_j (r_Z − r_X)_j
    /// (r_Z + r_X)_j·τ plus the prior's difference: one reduction of per-element differences,
    /// never two rounded energies (τ: the precision). Preconditioned (`--noise gibbs`, √τ per
    /// chain in place of τ), both times √τ: the chain's terms in noise units.
    pub fn energy_terms(&self, inputs: &TermsInputs) -> Vec<(f32, f32)> {
        use rayon::prelude::*;
        let (residual_x, residual_z) = inputs.residuals;
        let d = residual_x.len() / inputs.prior.len().max(1);
        inputs
            .prior
            .par_iter()
            .enumerate()
            .map(|(c, &(prior_x, prior_difference))| {
                let rx = &residual_x[c * d..(c + 1) * d];
                let rz = &residual_z[c * d..(c + 1) * d];
                let precision = chain_value(inputs.precision, c);
                let fit: f32 = rx.iter().map(|v| v * v).sum();
                let current = 0.5 * fit * precision + prior_x;
                let fit_difference: f32 = rz
                    .iter()
                    .zip(rx)
                    .map(|(&rz, &rx)| (rz - rx) * (rz + rx))
                    .sum();
                let difference = 0.5 * fit_difference * precision + prior_difference;
                if inputs.preconditioned {
                    (precision * current, precision * difference)
                } else {
                    (current, difference)
                }
            })
            .collect()
    }
}

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
