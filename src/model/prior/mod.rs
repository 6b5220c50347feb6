//! The prior over the codes: one enum the backends call, each prior in a file of its own with its
//! WGSL twin in `shaders/prior/` under the same name.
//!
//! Every prior here is separable: −log p(X) = weight · Σ_j element(X_j) + const, so the backends
//! reduce `element` per chain (as one sum of per-element differences for U(Z) − U(X)) and add
//! `gradient` to the likelihood's gradient element by element, on the CPU and in WGSL alike.

pub(crate) mod laplace;
pub(crate) mod ssgl;

use serde::{Deserialize, Serialize};

pub use laplace::Laplace;
pub use ssgl::{ChainState, Ssgl, SsglMode};

/// The prior the chains' codes X have.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "prior", rename_all = "lowercase")]
pub enum Prior {
    /// p(X) ∝ exp(−lam·||X||₁): the paper's sparsity prior.
    Laplace(Laplace),
    /// The spike-and-slab group lasso of Deng et al. (2019) with per-chain latent state: its
    /// `weight`/`element`/`gradient` are those of the initial state; the backends use the
    /// chains' own state through `Prior::row`.
    Ssgl(Ssgl),
}

/// The prior as one chain sees it: a prior without state, or SSGL with the chain's latent state.
#[derive(Clone, Copy, Debug)]
pub enum PriorRow<'a> {
    /// A prior every chain shares (Laplace; SSGL at its initial state).
    Shared(&'a Prior),
    /// SSGL with this chain's κ0, κ1 and σ.
    Ssgl(ChainState<'a>),
}

impl PriorRow<'_> {
    /// ∂(−log p)/∂x_j at coefficient j.
    #[inline]
    pub fn gradient(&self, j: usize, x: f32) -> f32 {
        match self {
            PriorRow::Shared(p) => p.gradient(x),
            PriorRow::Ssgl(s) => s.gradient(j, x),
        }
    }

    /// −log p(x) − const, reduced in f32 in order.
    pub fn energy(&self, x: &[f32]) -> f32 {
        match self {
            PriorRow::Shared(p) => p.energy(x),
            PriorRow::Ssgl(s) => x.iter().enumerate().map(|(j, &v)| s.element(j, v)).sum(),
        }
    }

    /// −log p(z) + log p(x) as one reduction of per-element differences.
    pub fn energy_difference(&self, z: &[f32], x: &[f32]) -> f32 {
        match self {
            PriorRow::Shared(p) => p.energy_difference(z, x),
            PriorRow::Ssgl(s) => z
                .iter()
                .zip(x)
                .enumerate()
                .map(|(j, (&zj, &xj))| s.element(j, zj) - s.element(j, xj))
                .sum(),
        }
    }
}

impl Prior {
    /// The factor outside the per-element sum: −log p(X) = weight · Σ_j element(X_j) + const.
    #[inline]
    pub fn weight(&self) -> f32 {
        match self {
            Prior::Laplace(p) => p.weight(),
            Prior::Ssgl(_) => 1.0,
        }
    }

    /// One coefficient's term of the sum (before `weight`).
    #[inline]
    pub fn element(&self, x: f32) -> f32 {
        match self {
            Prior::Laplace(p) => p.element(x),
            Prior::Ssgl(p) => p.element(x),
        }
    }

    /// ∂(−log p)/∂x_j at one coefficient (a subgradient where the prior has a kink).
    #[inline]
    pub fn gradient(&self, x: f32) -> f32 {
        match self {
            Prior::Laplace(p) => p.gradient(x),
            Prior::Ssgl(p) => p.gradient(x),
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
        match self {
            Prior::Ssgl(p) => x.iter().map(|&v| p.element_f64(v)).sum::<f64>(),
            _ => self.weight() as f64 * x.iter().map(|&v| self.element(v) as f64).sum::<f64>(),
        }
    }

    /// The gradient at one coefficient in f64 (the references).
    pub fn gradient_f64(&self, x: f32) -> f64 {
        match self {
            Prior::Laplace(p) => p.lam as f64 * crate::model::posterior::sign(x) as f64,
            Prior::Ssgl(p) => p.gradient_f64(x),
        }
    }

    /// The scalar the WGSL prior reads from `params.lam`.
    pub fn gpu_scalar(&self) -> f32 {
        match self {
            Prior::Laplace(p) => p.lam,
            Prior::Ssgl(_) => 0.0,
        }
    }

    /// The WGSL that defines `prior_weight()`, `prior_element(c, j, v)` and
    /// `prior_gradient(c, j, v)` (chain c of the group, coefficient j) for the kernels that need
    /// the prior (the gradient steps and the MH terms).
    pub fn wgsl(&self) -> &'static str {
        match self {
            Prior::Laplace(_) => laplace::WGSL,
            Prior::Ssgl(_) => ssgl::WGSL,
        }
    }

    /// Whether the prior keeps per-chain state the GPU kernels read (SSGL: the storage buffer
    /// `prior_state`, bound only in the pipelines built for it).
    pub fn has_state(&self) -> bool {
        matches!(self, Prior::Ssgl(_))
    }

    /// The SSGL hyper-parameters, if this is SSGL.
    pub fn ssgl(&self) -> Option<&Ssgl> {
        match self {
            Prior::Ssgl(s) => Some(s),
            Prior::Laplace(_) => None,
        }
    }

    /// Chain `chain`'s view: with `state` (SSGL's latent state, `ssgl::stride(p)` values per
    /// chain) its own κ0, κ1 and σ; otherwise the shared prior.
    pub fn row<'a>(&'a self, state: Option<&'a [f32]>, chain: usize, p: usize) -> PriorRow<'a> {
        match (self, state) {
            (Prior::Ssgl(_), Some(state)) => {
                let s = ssgl::stride(p);
                PriorRow::Ssgl(ChainState::of(&state[chain * s..(chain + 1) * s], p))
            }
            _ => PriorRow::Shared(self),
        }
    }
}
