//! The Laplace prior p(X) ∝ exp(−lam·||X||₁), the paper's; its WGSL twin is `shaders/prior/laplace.wgsl`.

use serde::{Deserialize, Serialize};

use crate::model::posterior::sign;

/// The WGSL twin: `prior_weight()`, `prior_element(c, j, v)`, `prior_gradient(c, j, v)` (chain and
/// coefficient ignored) with lam in `params.lam`.
pub const WGSL: &str = include_str!("../../../shaders/prior/laplace.wgsl");

/// The Laplace prior with rate `lam` (also the LASSO penalty of the chains' starts).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Laplace {
    /// The rate lam ≥ 0.
    pub lam: f32,
}

impl Laplace {
    /// lam, outside the sum of |x_j|.
    #[inline]
    pub fn weight(&self) -> f32 {
        self.lam
    }

    /// |x|.
    #[inline]
    pub fn element(&self, x: f32) -> f32 {
        x.abs()
    }

    /// lam·sign(x), with sign(0) = 0 (the subgradient the paper uses).
    #[inline]
    pub fn gradient(&self, x: f32) -> f32 {
        self.lam * sign(x)
    }
}
