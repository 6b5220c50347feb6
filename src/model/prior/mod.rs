//! The prior over the codes: one enum the backends call, each prior in a file of its own with its
//! WGSL twin in `shaders/prior/` under the same name.
//!
//! Every prior here is separable: −log p(X) = weight · Σ_j element(X_j) + const, so the backends
//! reduce `element` per chain (as one sum of per-element differences for U(Z) − U(X)) and add
//! `gradient` to the likelihood's gradient element by element, on the CPU and in WGSL alike.

pub(crate) mod laplace;

use serde::{Deserialize, Serialize};

pub use laplace::Laplace;

/// The prior the chains' codes X have.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "prior", rename_all = "lowercase")]
pub enum Prior {
    /// p(X) ∝ exp(−lam·||X||₁): the paper's sparsity prior.
    Laplace(Laplace),
}

impl Prior {
    /// The factor outside the per-element sum: −log p(X) = weight · Σ_j element(X_j) + const.
    #[inline]
    pub fn weight(&self) -> f32 {
        match self {
            Prior::Laplace(p) => p.weight(),
        }
    }

    /// One coefficient's term of the sum (before `weight`).
    #[inline]
    pub fn element(&self, x: f32) -> f32 {
        match self {
            Prior::Laplace(p) => p.element(x),
        }
    }

    /// ∂(−log p)/∂x_j at one coefficient (a subgradient where the prior has a kink).
    #[inline]
    pub fn gradient(&self, x: f32) -> f32 {
        match self {
            Prior::Laplace(p) => p.gradient(x),
        }
    }

    /// −log p(X) − const for one chain's code, reduced in f32 in order.
    pub fn energy(&self, x: &[f32]) -> f32 {
        self.weight() * x.iter().map(|&v| self.element(v)).sum::<f32>()
    }

    /// −log p(Z) + log p(X) as one reduction of per-element differences.
    pub fn energy_difference(&self, z: &[f32], x: &[f32]) -> f32 {
        let sum: f32 = z
            .iter()
            .zip(x)
            .map(|(&zj, &xj)| self.element(zj) - self.element(xj))
            .sum();
        self.weight() * sum
    }

    /// −log p(X) − const in f64 (the references).
    pub fn energy_f64(&self, x: &[f32]) -> f64 {
        self.weight() as f64 * x.iter().map(|&v| self.element(v) as f64).sum::<f64>()
    }

    /// The gradient at one coefficient in f64 (the references).
    pub fn gradient_f64(&self, x: f32) -> f64 {
        match self {
            Prior::Laplace(p) => p.lam as f64 * crate::model::posterior::sign(x) as f64,
        }
    }

    /// The scalar the WGSL prior reads from `params.lam`.
    pub fn gpu_scalar(&self) -> f32 {
        match self {
            Prior::Laplace(p) => p.lam,
        }
    }

    /// The WGSL that defines `prior_weight()`, `prior_element(v)` and `prior_gradient(v)` for the
    /// kernels that need the prior (the gradient steps and the MH terms).
    pub fn wgsl(&self) -> &'static str {
        match self {
            Prior::Laplace(_) => laplace::WGSL,
        }
    }
}
