//! The prior over the codes: one enum, each prior in a file of its own (its CPU terms, its typed
//! params and its WGSL twin in `shaders/prior/` under the same name).
//!
//! Every prior here is separable: −log p(X) = weight · Σ_j element(X_j) + const, so the backends
//! reduce `element` per chain (as one sum of per-element differences for U(Z) − U(X)) and add
//! `gradient` to the likelihood's gradient element by element, on the CPU and in WGSL alike. The
//! backends never name a prior: they splice its WGSL (`Prior::wgsl_model`), upload its params
//! (`gpu_params`) and keep its per-chain state (`state_width`, `initial_state`, `update_state`).

pub(crate) mod laplace;
pub(crate) mod ssgl;

use serde::{Deserialize, Deserializer, Serialize};

use crate::model::wgsl::{WgslBytes, WgslModel};
use crate::{Error, Result};
pub use laplace::{Laplace, LaplaceParams};
pub use ssgl::{ChainState, Ssgl, SsglMode, SsglUpdateParams, UpdateScalars};

/// The prior the chains' codes X have, with its hyper-parameters. In settings it reads as its
/// name alone (`"ssgl"`, the defaults) or as an object tagged by `kind`; the Laplace prior's
/// rate is the settings' `lambda` there (`Prior::with_lasso_rate`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Prior {
    /// p(X) ∝ exp(−lam·||X||₁): the paper's sparsity prior.
    Laplace(Laplace),
    /// The spike-and-slab group lasso of Deng et al. (2019) with per-chain latent state: its
    /// `weight`/`element`/`gradient` are those of the initial state; the backends use the
    /// chains' own state through `Prior::row`.
    Ssgl(Ssgl),
}

impl Default for Prior {
    fn default() -> Self {
        Prior::DEFAULTS[0]
    }
}

/// The prior as one chain sees it: a prior without state, or SSGL with the chain's latent state.
#[derive(Clone, Copy, Debug)]
pub enum PriorRow<'a> {
    /// A prior every chain shares (Laplace; SSGL at its initial state).
    Shared(&'a Prior),
    /// SSGL with this chain's κ0, κ1 and σ.
    Ssgl(ChainState<'a>),
}

/// One coefficient's prior gradient as a prior (or one chain's view of it) computes it: what a
/// backend's loop over a chain's coefficients calls, compiled for each prior.
pub trait RowGradient: Sync {
    /// ∂(−log p)/∂x_j at coefficient j.
    fn gradient(&self, j: usize, x: f32) -> f32;
}

impl RowGradient for Laplace {
    #[inline]
    fn gradient(&self, _: usize, x: f32) -> f32 {
        Laplace::gradient(self, x)
    }
}

impl RowGradient for Ssgl {
    #[inline]
    fn gradient(&self, _: usize, x: f32) -> f32 {
        Ssgl::gradient(self, x)
    }
}

impl RowGradient for ChainState<'_> {
    #[inline]
    fn gradient(&self, j: usize, x: f32) -> f32 {
        ChainState::gradient(self, j, x)
    }
}

/// A loop over one chain's coefficients that reads the prior's gradient (a backend's update or
/// full gradient): `PriorRow::visit` picks the prior once per row and runs the loop compiled
/// for it, so no coefficient pays for the choice and the loop vectorises.
pub trait GradientVisitor {
    /// What the loop returns.
    type Output;
    /// Runs the loop with `prior`'s gradient.
    fn visit<G: RowGradient>(self, prior: &G) -> Self::Output;
}

impl PriorRow<'_> {
    /// Runs `visitor` with this row's gradient.
    #[inline]
    pub fn visit<V: GradientVisitor>(&self, visitor: V) -> V::Output {
        match self {
            PriorRow::Shared(Prior::Laplace(p)) => visitor.visit(p),
            PriorRow::Shared(Prior::Ssgl(p)) => visitor.visit(p),
            PriorRow::Ssgl(s) => visitor.visit(s),
        }
    }

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
    /// Every prior, with its default hyper-parameters, in the order the command line lists them.
    pub const DEFAULTS: [Prior; 2] = [
        Prior::Laplace(Laplace { lam: 5.0 }),
        Prior::Ssgl(Ssgl::DEFAULT),
    ];

    /// Its name in settings, reports and on the command line.
    pub fn name(&self) -> &'static str {
        self.wgsl_model().name
    }

    /// The prior named `name`, with its default hyper-parameters.
    pub fn named(name: &str) -> Option<Prior> {
        Prior::DEFAULTS.into_iter().find(|p| p.name() == name)
    }

    /// The prior a run with LASSO penalty `lambda` samples: the Laplace prior's rate is `lambda`
    /// (the paper ties the two); the others keep their own hyper-parameters.
    pub fn with_lasso_rate(self, lambda: f32) -> Prior {
        match self {
            Prior::Laplace(_) => Prior::Laplace(Laplace { lam: lambda }),
            Prior::Ssgl(s) => Prior::Ssgl(s),
        }
    }

    /// Checks the hyper-parameters a setting gives; the error names the setting.
    pub fn validate(&self) -> Result<()> {
        match self {
            // Its rate is the settings' `lambda`, checked with them.
            Prior::Laplace(_) => Ok(()),
            Prior::Ssgl(s) => s.validate(),
        }
    }

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
            Prior::Laplace(p) => p.lam as f64 * x.iter().map(|&v| p.element(v) as f64).sum::<f64>(),
            Prior::Ssgl(p) => x.iter().map(|&v| p.element_f64(v)).sum::<f64>(),
        }
    }

    /// The gradient at one coefficient in f64 (the references).
    pub fn gradient_f64(&self, x: f32) -> f64 {
        match self {
            Prior::Laplace(p) => p.gradient_f64(x),
            Prior::Ssgl(p) => p.gradient_f64(x),
        }
    }

    /// What the backends splice and bind for this prior: its WGSL, which defines
    /// `prior_weight()`, `prior_element(c, j, v)` and `prior_gradient(c, j, v)` (chain c of the
    /// group, coefficient j) for the kernels that need the prior (the gradient steps and the MH
    /// terms), and what that WGSL reads.
    pub fn wgsl_model(&self) -> WgslModel {
        match self {
            Prior::Laplace(_) => laplace::WGSL_MODEL,
            Prior::Ssgl(_) => ssgl::WGSL_MODEL,
        }
    }

    /// The WGSL of `wgsl_model`.
    pub fn wgsl(&self) -> &'static str {
        self.wgsl_model().wgsl
    }

    /// Its hyper-parameters as its WGSL reads them (`prior_params`), or None for a prior whose
    /// WGSL reads none.
    pub fn gpu_params(&self) -> Option<WgslBytes> {
        match self {
            Prior::Laplace(p) => Some(WgslBytes::of(&p.params())),
            Prior::Ssgl(_) => None,
        }
    }

    /// Values of latent state per chain the backends keep beside the chains (0: none).
    pub fn state_width(&self, p: usize) -> usize {
        match self {
            Prior::Laplace(_) => 0,
            Prior::Ssgl(_) => ssgl::stride(p),
        }
    }

    /// Whether the prior keeps per-chain state the kernels read (`prior_state`).
    pub fn has_state(&self) -> bool {
        self.wgsl_model().chains
    }

    /// The latent state of `chains` chains of p coefficients at the start (checked first), or
    /// None for a prior without state.
    pub fn initial_state(&self, chains: usize, p: usize) -> Result<Option<Vec<f32>>> {
        match self {
            Prior::Laplace(_) => Ok(None),
            Prior::Ssgl(s) => {
                s.validate()?;
                Ok(Some(s.initial_state(chains, p)))
            }
        }
    }

    /// Whether the latent state moves after outer iteration k (1-based): the orchestrator then
    /// asks the backend for `update_state`.
    pub fn adapts_at(&self, k: u32) -> bool {
        match self {
            Prior::Laplace(_) => false,
            Prior::Ssgl(s) => s.adapts_at(k),
        }
    }

    /// Whether the state adapts over a burn-in fixed in advance (SSGL's `adapt` mode), which an
    /// automatic burn-in cannot give it.
    pub fn adapts_over_burn_in(&self) -> bool {
        match self {
            Prior::Laplace(_) => false,
            Prior::Ssgl(s) => s.mode == SsglMode::Adapt,
        }
    }

    /// Whether its gradient is constant wherever the coefficient's sign is (Laplace's
    /// lam·sign(x)), so a move changes it only where a sign flips (HMC's carried trajectory).
    pub fn gradient_follows_sign(&self) -> bool {
        match self {
            Prior::Laplace(_) => true,
            Prior::Ssgl(_) => false,
        }
    }

    /// Whether the noise precision can be learned beside it (`--noise gibbs`, whose conditional
    /// is the Bayesian lasso's).
    pub fn learns_noise(&self) -> bool {
        match self {
            Prior::Laplace(_) => true,
            Prior::Ssgl(_) => false,
        }
    }

    /// The state's update after outer iteration `outer` on the CPU, from the positions x (C × p)
    /// and the residuals A x − y (C × d): per chain 1 when its new state was not finite (it kept
    /// the old one), else 0.
    ///
    /// Fails (`Error::Internal`) for a prior without state or a state of another size.
    pub fn update_state(
        &self,
        outer: u32,
        state: &mut [f32],
        x: &[f32],
        residual: &[f32],
        (d, p): (usize, usize),
    ) -> Result<Vec<u32>> {
        let chains = x.len() / p.max(1);
        if state.len() != chains * self.state_width(p) {
            return Err(Error::Internal(format!(
                "the prior's update: {} state values for {chains} chains of {} each",
                state.len(),
                self.state_width(p)
            )));
        }
        match self {
            Prior::Laplace(_) => Err(Error::Internal(
                "the laplace prior keeps no state to update".into(),
            )),
            Prior::Ssgl(s) => {
                let scalars = UpdateScalars::new(s, outer, d, p);
                Ok(ssgl::sa_update(&scalars, state, x, residual, d, p))
            }
        }
    }

    /// The WGSL twin of `update_state`: its module (entry point `prior_update`, one workgroup per
    /// chain; binding 0 its params uniform, 1 x, 2 the residual, 3 the state, 4 the status
    /// words) and its params for `chains` chains at outer iteration `outer`; None for a prior
    /// without state.
    pub fn update_kernel(
        &self,
        outer: u32,
        chains: usize,
        (d, p): (usize, usize),
    ) -> Option<(&'static str, WgslBytes)> {
        match self {
            Prior::Laplace(_) => None,
            Prior::Ssgl(s) => {
                let scalars = UpdateScalars::new(s, outer, d, p);
                let params = SsglUpdateParams::new(&scalars, chains, d, p);
                Some((ssgl::UPDATE_WGSL, WgslBytes::of(&params)))
            }
        }
    }

    /// The SSGL hyper-parameters, if this is SSGL (its report).
    pub fn ssgl(&self) -> Option<&Ssgl> {
        match self {
            Prior::Ssgl(s) => Some(s),
            Prior::Laplace(_) => None,
        }
    }

    /// Chain `chain`'s view: with `state` (the latent state, `state_width(p)` values per chain)
    /// its own terms; otherwise the shared prior.
    pub fn row<'a>(&'a self, state: Option<&'a [f32]>, chain: usize, p: usize) -> PriorRow<'a> {
        match (self, state) {
            (Prior::Ssgl(_), Some(state)) => {
                let s = ssgl::stride(p);
                PriorRow::Ssgl(ChainState::of(&state[chain * s..(chain + 1) * s], p))
            }
            (Prior::Ssgl(_), None) | (Prior::Laplace(_), _) => PriorRow::Shared(self),
        }
    }
}

/// Reads a prior setting: its name alone (the defaults) or an object tagged by `kind`.
pub fn from_setting<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Prior, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Setting {
        Name(String),
        Prior(Prior),
    }
    match Setting::deserialize(deserializer)? {
        Setting::Prior(prior) => Ok(prior),
        Setting::Name(name) => Prior::named(&name).ok_or_else(|| {
            let names: Vec<&str> = Prior::DEFAULTS.iter().map(Prior::name).collect();
            serde::de::Error::custom(format!(
                "unknown prior {name:?}; expected one of {}",
                names.join(", ")
            ))
        }),
    }
}

#[cfg(feature = "cli")]
impl clap::ValueEnum for Prior {
    fn value_variants<'a>() -> &'a [Self] {
        &Prior::DEFAULTS
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Setting {
        #[serde(deserialize_with = "from_setting")]
        prior: Prior,
    }

    fn read(json: &str) -> std::result::Result<Prior, String> {
        serde_json::from_str::<Setting>(json)
            .map(|s| s.prior)
            .map_err(|e| e.to_string())
    }

    /// A prior setting reads as its name (the defaults) or as an object tagged by `kind` with
    /// any of its hyper-parameters; an unknown name lists the priors.
    #[test]
    fn a_prior_setting_reads_as_a_name_or_an_object() {
        assert_eq!(read(r#"{"prior": "ssgl"}"#), Ok(Prior::Ssgl(Ssgl::DEFAULT)));
        assert_eq!(
            read(r#"{"prior": {"kind": "ssgl", "v0": 0.2}}"#),
            Ok(Prior::Ssgl(Ssgl {
                v0: 0.2,
                ..Ssgl::DEFAULT
            }))
        );
        assert!(matches!(
            read(r#"{"prior": "laplace"}"#),
            Ok(Prior::Laplace(_))
        ));
        let with_rate = read(r#"{"prior": {"kind": "laplace"}}"#).map(|p| p.with_lasso_rate(3.0));
        assert_eq!(with_rate, Ok(Prior::Laplace(Laplace { lam: 3.0 })));
        let err = read(r#"{"prior": "horseshoe"}"#).unwrap_err();
        assert!(err.contains("laplace, ssgl"), "{err}");
        let written = serde_json::to_string(&Prior::Ssgl(Ssgl::DEFAULT)).unwrap();
        assert_eq!(
            read(&format!(r#"{{"prior": {written}}}"#)),
            Ok(Prior::Ssgl(Ssgl::DEFAULT))
        );
    }
}
