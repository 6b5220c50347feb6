//! The spike-and-slab group-lasso prior (SSGL) of Deng et al. (NeurIPS 2019), group size 1, with its per-chain latent state and the stochastic-approximation updates (12)-(15).
//!
//! Equation 4: x_j | σ², γ_j ~ (1 − γ_j)·Laplace(0, σ·v0) + γ_j·N(0, σ²·v1), γ_j ~ Bernoulli(δ),
//! δ ~ Beta(a, b), σ² ~ IG(ν/2, νλ/2). The empirical-Bayes form the chains sample (equation 10,
//! the prior part of Q₁) replaces the unknown γ by its expectations κ0_j = E[1/(v0(1 − γ_j))] =
//! (1 − ρ_j)/v0 and κ1_j = E[1/(v1 γ_j)] = ρ_j/v1:
//!
//! −log p(x | θ) = Σ_j κ0_j·|x_j|/σ + κ1_j·x_j²/(2σ²) + const,
//!
//! with θ = (ρ, κ0, κ1, σ, δ) per chain, updated after every outer iteration k by
//! θ ← (1 − ω_k)·θ + ω_k·θ̃(x) with ω_k = c·(k + k0)^(−α) (Algorithm 1 of the paper). θ̃ is
//! equation 12 (ρ̃_j = P(γ_j = 1 | x_j, σ, δ)), 13 (κ̃ from the new ρ), 14 (σ̃, the positive root
//! of R_a σ² − R_b σ − R_c = 0 with R_a = N + p + ν, R_b = Σ κ0_j|x_j|, R_c = ||A x − y||² + Σ κ1_j
//! x_j² + νλ, N = d the residual's length) and 15 (δ̃ = (Σ ρ_j + a − 1)/(a + b + p − 2)).
//!
//! The likelihood keeps its own noise variance (`sigma2`); σ here scales the prior only (the
//! paper ties the two; see docs/priors.md). The WGSL twins are `shaders/prior/ssgl.wgsl` (the
//! prior terms) and `shaders/prior/ssgl_update.wgsl` (the updates, `sa_update` here on the CPU).

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::math::Portable;
use crate::model::posterior::sign;
use crate::model::wgsl::{wgsl_struct, WgslModel};
use crate::{Error, Result};

/// The WGSL twin of the prior terms with each chain's state: `prior_weight()`,
/// `prior_element(c, j, v)`, `prior_gradient(c, j, v)` reading the group's state from the storage
/// buffer `prior_state` (binding 12).
pub const WGSL: &str = include_str!("../../../shaders/prior/ssgl.wgsl");

/// The WGSL twin of `sa_update`: the entry point `prior_update` (one workgroup per chain) with
/// its `SsglUpdateParams`.
pub const UPDATE_WGSL: &str = include_str!("../../../shaders/prior/ssgl_update.wgsl");

/// What the backends compile and bind for this prior: no params, per-chain state.
pub const WGSL_MODEL: WgslModel = WgslModel {
    name: "ssgl",
    wgsl: WGSL,
    params: None,
    chains: true,
    scratch: false,
};

/// When the latent state θ moves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum SsglMode {
    /// θ adapts during the first `adapt_iterations` outer iterations (the burn-in), then freezes:
    /// the draws after it come from one fixed posterior (MALA and HMC are exact for it).
    #[default]
    Adapt,
    /// θ adapts at every outer iteration (the paper's SGLD-SA; not a fixed target).
    Continuous,
    /// θ never moves from its initial value (the paper's SGLD baseline).
    Fixed,
}

/// The SSGL prior's hyper-parameters under the paper's names, with its regression experiment's
/// values as defaults (Section 5.1: v1 = 10, ν = 1, λ = 1, a = 1, b = p, δ = 0.5, ω_k =
/// 10·(k + 1000)^−0.7; v0 = 0.1 and σ = 1 as in its Figure 1).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Ssgl {
    /// v0 > 0, the spike's Laplace scale (in units of σ).
    pub v0: f32,
    /// v1 > 0, the slab's Normal variance (in units of σ²).
    pub v1: f32,
    /// a > 0, the Beta prior's first shape.
    pub a: f32,
    /// b > 0, the Beta prior's second shape; `None`: p (the paper's choice).
    pub b: Option<f32>,
    /// ν > 0, the inverse-gamma prior's degrees of freedom.
    pub nu: f32,
    /// λ > 0, the inverse-gamma prior's scale.
    pub lambda: f32,
    /// δ in (0, 1), the initial inclusion probability (ρ starts there too).
    pub delta: f32,
    /// σ > 0, the initial prior scale.
    pub sigma: f32,
    /// c > 0 of the step size ω_k = c·(k + k0)^(−α).
    pub c: f32,
    /// k0 ≥ 0 of the step size.
    pub k0: f32,
    /// α ≥ 0 of the step size (c = 1, α = 0: ω = 1, the paper's SGLD-EM).
    pub alpha: f32,
    /// When θ moves.
    pub mode: SsglMode,
    /// Outer iterations θ adapts for in `Adapt` mode (the session sets the burn-in).
    pub adapt_iterations: u32,
}

impl Default for Ssgl {
    fn default() -> Self {
        Ssgl::DEFAULT
    }
}

impl Ssgl {
    /// The paper's values (`Default`), as a constant.
    pub const DEFAULT: Ssgl = Ssgl {
        v0: 0.1,
        v1: 10.0,
        a: 1.0,
        b: None,
        nu: 1.0,
        lambda: 1.0,
        delta: 0.5,
        sigma: 1.0,
        c: 10.0,
        k0: 1000.0,
        alpha: 0.7,
        mode: SsglMode::Adapt,
        adapt_iterations: 0,
    };
}

/// Values per chain in the latent state: ρ, κ0, κ1 (p each), σ, δ.
pub fn stride(p: usize) -> usize {
    3 * p + 2
}

fn positive(field: &'static str, value: f32) -> Result<()> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(Error::usage(
            field,
            format!("must be a positive number (> 0), got {value}"),
        ))
    }
}

impl Ssgl {
    /// Checks every hyper-parameter; the error names the setting (`ssgl_v0`, …) and its range.
    pub fn validate(&self) -> Result<()> {
        positive("ssgl_v0", self.v0)?;
        positive("ssgl_v1", self.v1)?;
        positive("ssgl_a", self.a)?;
        if let Some(b) = self.b {
            positive("ssgl_b", b)?;
        }
        positive("ssgl_nu", self.nu)?;
        positive("ssgl_lambda", self.lambda)?;
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return Err(Error::usage(
                "ssgl_delta",
                format!("must lie in the open interval (0, 1), got {}", self.delta),
            ));
        }
        positive("ssgl_sigma", self.sigma)?;
        positive("ssgl_c", self.c)?;
        if !(self.k0.is_finite() && self.k0 >= 0.0) {
            return Err(Error::usage(
                "ssgl_k0",
                format!("must be a non-negative number, got {}", self.k0),
            ));
        }
        if !(self.alpha.is_finite() && self.alpha >= 0.0) {
            return Err(Error::usage(
                "ssgl_alpha",
                format!("must be a non-negative number, got {}", self.alpha),
            ));
        }
        Ok(())
    }

    /// b, with `None` read as p.
    pub fn b_for(&self, p: usize) -> f32 {
        self.b.unwrap_or(p as f32)
    }

    /// ω_k = c·(k + k0)^(−α) for outer iteration k (1-based), in f32 as both backends use it.
    pub fn omega(&self, k: u32) -> f32 {
        (self.c as f64 * (k as f64 + self.k0 as f64).powf_portable(-(self.alpha as f64))) as f32
    }

    /// Whether θ moves after outer iteration k (1-based).
    pub fn adapts_at(&self, k: u32) -> bool {
        match self.mode {
            SsglMode::Adapt => k <= self.adapt_iterations,
            SsglMode::Continuous => true,
            SsglMode::Fixed => false,
        }
    }

    /// The initial state of `chains` chains of p coefficients: ρ = δ, κ0 = (1 − ρ)/v0,
    /// κ1 = ρ/v1, σ, δ (`stride(p)` values per chain).
    pub fn initial_state(&self, chains: usize, p: usize) -> Vec<f32> {
        let rho = self.delta;
        let mut row = Vec::with_capacity(stride(p));
        row.extend(std::iter::repeat_n(rho, p));
        row.extend(std::iter::repeat_n((1.0 - rho) / self.v0, p));
        row.extend(std::iter::repeat_n(rho / self.v1, p));
        row.push(self.sigma);
        row.push(self.delta);
        row.repeat(chains)
    }

    /// κ0 = (1 − δ)/v0 of the initial state (every coefficient alike).
    fn kappa0(&self) -> f32 {
        (1.0 - self.delta) / self.v0
    }

    /// κ1 = δ/v1 of the initial state.
    fn kappa1(&self) -> f32 {
        self.delta / self.v1
    }

    /// The initial state's per-coefficient term κ0·|x|/σ + κ1·x²/(2σ²) (weight 1).
    pub fn element(&self, x: f32) -> f32 {
        let inv_sigma = 1.0 / self.sigma;
        element(
            self.kappa0(),
            self.kappa1(),
            inv_sigma,
            inv_sigma * inv_sigma,
            x,
        )
    }

    /// The initial state's gradient κ0·sign(x)/σ + κ1·x/σ².
    pub fn gradient(&self, x: f32) -> f32 {
        let inv_sigma = 1.0 / self.sigma;
        gradient(
            self.kappa0(),
            self.kappa1(),
            inv_sigma,
            inv_sigma * inv_sigma,
            x,
        )
    }

    /// The initial state's term in f64 (the references).
    pub fn element_f64(&self, x: f32) -> f64 {
        let (k0, k1, s) = (
            (1.0 - self.delta as f64) / self.v0 as f64,
            self.delta as f64 / self.v1 as f64,
            self.sigma as f64,
        );
        let x = x as f64;
        k0 * x.abs() / s + 0.5 * k1 * x * x / (s * s)
    }

    /// The initial state's gradient in f64 (the references).
    pub fn gradient_f64(&self, x: f32) -> f64 {
        let (k0, k1, s) = (
            (1.0 - self.delta as f64) / self.v0 as f64,
            self.delta as f64 / self.v1 as f64,
            self.sigma as f64,
        );
        k0 * sign(x) as f64 / s + k1 * x as f64 / (s * s)
    }
}

/// κ0·|x|·(1/σ) + ½·κ1·x²·(1/σ²), as both backends compute it.
#[inline]
pub fn element(kappa0: f32, kappa1: f32, inv_sigma: f32, inv_sigma2: f32, x: f32) -> f32 {
    kappa0 * x.abs() * inv_sigma + 0.5 * kappa1 * x * x * inv_sigma2
}

/// κ0·sign(x)·(1/σ) + κ1·x·(1/σ²), as both backends compute it.
#[inline]
pub fn gradient(kappa0: f32, kappa1: f32, inv_sigma: f32, inv_sigma2: f32, x: f32) -> f32 {
    kappa0 * sign(x) * inv_sigma + kappa1 * x * inv_sigma2
}

/// One chain's view of the latent state (`stride(p)` values).
#[derive(Clone, Copy, Debug)]
pub struct ChainState<'a> {
    /// κ0, p values.
    pub kappa0: &'a [f32],
    /// κ1, p values.
    pub kappa1: &'a [f32],
    /// 1/σ.
    pub inv_sigma: f32,
    /// 1/σ², rounded from 1/σ.
    pub inv_sigma2: f32,
}

impl<'a> ChainState<'a> {
    /// The view of chain row `row` (`stride(p)` values).
    pub fn of(row: &'a [f32], p: usize) -> Self {
        let inv_sigma = 1.0 / row[3 * p];
        ChainState {
            kappa0: &row[p..2 * p],
            kappa1: &row[2 * p..3 * p],
            inv_sigma,
            inv_sigma2: inv_sigma * inv_sigma,
        }
    }

    /// The term of coefficient j.
    #[inline]
    pub fn element(&self, j: usize, x: f32) -> f32 {
        element(
            self.kappa0[j],
            self.kappa1[j],
            self.inv_sigma,
            self.inv_sigma2,
            x,
        )
    }

    /// The gradient at coefficient j.
    #[inline]
    pub fn gradient(&self, j: usize, x: f32) -> f32 {
        gradient(
            self.kappa0[j],
            self.kappa1[j],
            self.inv_sigma,
            self.inv_sigma2,
            x,
        )
    }
}

/// The scalars the update needs besides the state, rounded once on the host as both backends
/// receive them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UpdateScalars {
    /// ω_k.
    pub omega: f32,
    /// 1/v0.
    pub inv_v0: f32,
    /// 1/v1.
    pub inv_v1: f32,
    /// ln(2·v0) − ½·ln(2π·v1): log Laplace(0, σv0) − log N(0, σ²v1) at 0.
    pub log_ratio: f32,
    /// R_a = N + p + ν with N = d.
    pub r_a: f32,
    /// ν·λ.
    pub nu_lambda: f32,
    /// a − 1.
    pub a_minus_1: f32,
    /// a + b + p − 2.
    pub beta_denominator: f32,
}

impl UpdateScalars {
    /// The scalars of outer iteration k (1-based) for d × p.
    pub fn new(prior: &Ssgl, k: u32, d: usize, p: usize) -> Self {
        let (v0, v1) = (prior.v0 as f64, prior.v1 as f64);
        let b = prior.b_for(p) as f64;
        UpdateScalars {
            omega: prior.omega(k),
            inv_v0: (1.0 / v0) as f32,
            inv_v1: (1.0 / v1) as f32,
            log_ratio: ((2.0 * v0).ln_portable()
                - 0.5 * (2.0 * std::f64::consts::PI * v1).ln_portable())
                as f32,
            r_a: (d as f64 + p as f64 + prior.nu as f64) as f32,
            nu_lambda: (prior.nu as f64 * prior.lambda as f64) as f32,
            a_minus_1: (prior.a as f64 - 1.0) as f32,
            beta_denominator: (prior.a as f64 + b + p as f64 - 2.0) as f32,
        }
    }
}

/// ρ̃_j = P(γ_j = 1 | x_j, σ, δ) (equation 12) from the log-odds
/// ln δ − ln(1 − δ) + log_ratio − ½x²/(σ²v1) + |x|/(σv0).
#[inline]
pub fn rho_tilde(s: &UpdateScalars, log_odds: f32, inv_sigma: f32, inv_sigma2: f32, x: f32) -> f32 {
    let z = log_odds + s.log_ratio - 0.5 * x * x * inv_sigma2 * s.inv_v1
        + x.abs() * inv_sigma * s.inv_v0;
    1.0 / (1.0 + (-z).exp_portable())
}

/// One coefficient's new (ρ, κ0, κ1) from its old ones.
#[inline]
pub fn coefficient(
    s: &UpdateScalars,
    old: [f32; 3],
    log_odds: f32,
    inv_sigma: f32,
    inv_sigma2: f32,
    x: f32,
) -> [f32; 3] {
    let w = s.omega;
    let keep = 1.0 - w;
    let rho = keep * old[0] + w * rho_tilde(s, log_odds, inv_sigma, inv_sigma2, x);
    let kappa0 = keep * old[1] + w * ((1.0 - rho) * s.inv_v0);
    let kappa1 = keep * old[2] + w * (rho * s.inv_v1);
    [rho, kappa0, kappa1]
}

/// σ's and δ's new values from the chain's sums (R_b = Σ κ0|x|, J = Σ κ1 x², Σ ρ, I = ||r||²).
#[inline]
pub fn scalars(s: &UpdateScalars, sigma: f32, delta: f32, sums: [f32; 4]) -> [f32; 2] {
    let [r_b, j, rho_sum, fit] = sums;
    let r_c = fit + j + s.nu_lambda;
    let sigma_tilde = (r_b + (r_b * r_b + 4.0 * s.r_a * r_c).sqrt()) / (2.0 * s.r_a);
    let delta_tilde = (rho_sum + s.a_minus_1) / s.beta_denominator;
    let keep = 1.0 - s.omega;
    [
        keep * sigma + s.omega * sigma_tilde,
        keep * delta + s.omega * delta_tilde,
    ]
}

/// Updates every chain's latent state (`stride(p)` values per chain: ρ, κ0, κ1, σ, δ) from its
/// position x (C × p) and residual A x − y (C × d): θ ← (1 − ω)θ + ω·θ̃ (equations 12-15). A chain
/// whose new state is not finite (or σ ≤ 0) keeps its old state and gets status 1; the others 0.
pub fn sa_update(
    s: &UpdateScalars,
    state: &mut [f32],
    x: &[f32],
    residual: &[f32],
    d: usize,
    p: usize,
) -> Vec<u32> {
    let width = stride(p);
    state
        .par_chunks_mut(width)
        .zip(x.par_chunks(p))
        .zip(residual.par_chunks(d))
        .map(|((row, x), r)| chain_update(s, row, x, r, p))
        .collect()
}

/// One chain's update: the sums in order, then (when finite) the writes.
fn chain_update(s: &UpdateScalars, row: &mut [f32], x: &[f32], r: &[f32], p: usize) -> u32 {
    let (sigma, delta) = (row[3 * p], row[3 * p + 1]);
    let inv_sigma = 1.0 / sigma;
    let inv_sigma2 = inv_sigma * inv_sigma;
    let log_odds = delta.ln_portable() - (1.0 - delta).ln_portable();
    let new = |row: &[f32], j: usize| {
        let old = [row[j], row[p + j], row[2 * p + j]];
        coefficient(s, old, log_odds, inv_sigma, inv_sigma2, x[j])
    };
    let mut sums = [0f32; 4];
    for (j, &xj) in x.iter().enumerate() {
        let [rho, kappa0, kappa1] = new(row, j);
        sums[0] += kappa0 * xj.abs();
        sums[1] += kappa1 * xj * xj;
        sums[2] += rho;
    }
    sums[3] = r.iter().map(|v| v * v).sum();
    let [sigma_new, delta_new] = scalars(s, sigma, delta, sums);
    if !(sums.iter().all(|v| v.is_finite())
        && sigma_new.is_finite()
        && sigma_new > 0.0
        && delta_new.is_finite())
    {
        return 1;
    }
    for j in 0..p {
        let [rho, kappa0, kappa1] = new(row, j);
        row[j] = rho;
        row[p + j] = kappa0;
        row[2 * p + j] = kappa1;
    }
    row[3 * p] = sigma_new;
    row[3 * p + 1] = delta_new;
    0
}

wgsl_struct! {
    /// `struct SsglUpdateParams` in `shaders/prior/ssgl_update.wgsl` (its uniform): the update's
    /// shape and its host-rounded `UpdateScalars`.
    pub struct SsglUpdateParams {
        /// Chains in the buffers.
        chains: u32,
        /// Residual length d (N of equation 14).
        d: u32,
        /// Coefficients per chain p.
        p: u32,
        /// Values per chain in the state, 3p + 2.
        stride: u32,
        /// ω_k.
        omega: f32,
        /// 1/v0.
        inv_v0: f32,
        /// 1/v1.
        inv_v1: f32,
        /// ln(2 v0) − ½ ln(2π v1).
        log_ratio: f32,
        /// R_a = N + p + ν.
        r_a: f32,
        /// ν·λ.
        nu_lambda: f32,
        /// a − 1.
        a_minus_1: f32,
        /// a + b + p − 2.
        beta_denominator: f32,
    }
}

impl SsglUpdateParams {
    /// The block for `chains` chains of d × p with the host-rounded `scalars`.
    pub fn new(s: &UpdateScalars, chains: usize, d: usize, p: usize) -> Self {
        SsglUpdateParams {
            chains: chains as u32,
            d: d as u32,
            p: p as u32,
            stride: stride(p) as u32,
            omega: s.omega,
            inv_v0: s.inv_v0,
            inv_v1: s.inv_v1,
            log_ratio: s.log_ratio,
            r_a: s.r_a,
            nu_lambda: s.nu_lambda,
            a_minus_1: s.a_minus_1,
            beta_denominator: s.beta_denominator,
        }
    }
}
