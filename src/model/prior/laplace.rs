//! The Laplace prior p(X) ∝ exp(−lam·||X||₁), the paper's; its WGSL twin is `shaders/prior/laplace.wgsl`.

use serde::{Deserialize, Serialize};

use crate::model::posterior::sign;
use crate::model::wgsl::{wgsl_struct, WgslModel, WgslStruct};

/// The WGSL twin: `prior_weight()`, `prior_element(c, j, v)`, `prior_gradient(c, j, v)` (chain and
/// coefficient ignored), reading lam from `prior_params` (`LaplaceParams`).
pub const WGSL: &str = include_str!("../../../shaders/prior/laplace.wgsl");

wgsl_struct! {
    /// `struct LaplaceParams` in `shaders/prior/laplace.wgsl`: the prior's hyper-parameters as
    /// its WGSL reads them (`prior_params`).
    pub storage struct LaplaceParams {
        /// The rate lam.
        lam: f32,
    }
}

/// What the backends compile and bind for this prior.
pub const WGSL_MODEL: WgslModel = WgslModel {
    name: "laplace",
    wgsl: WGSL,
    params: Some(&LaplaceParams::LAYOUT),
    chains: false,
    scratch: false,
};

/// The Laplace prior with rate `lam` (also the LASSO penalty of the chains' starts). In settings
/// its rate is the settings' `lambda` (`Prior::with_lasso_rate`), whatever `lam` they hold.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Laplace {
    /// The rate lam ≥ 0.
    #[serde(default)]
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

    /// The gradient in f64 (the references).
    pub fn gradient_f64(&self, x: f32) -> f64 {
        self.lam as f64 * sign(x) as f64
    }

    /// Its params as the WGSL reads them.
    pub fn params(&self) -> LaplaceParams {
        LaplaceParams { lam: self.lam }
    }
}
