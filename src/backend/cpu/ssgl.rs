//! CPU twin of `shaders/prior/ssgl_update.wgsl`: the SSGL prior's stochastic-approximation update (equations 12-15 of Deng et al. 2019) of every chain's latent state.

use rayon::prelude::*;

use crate::model::prior::ssgl::{stride, Ssgl};

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
            log_ratio: ((2.0 * v0).ln() - 0.5 * (2.0 * std::f64::consts::PI * v1).ln()) as f32,
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
    1.0 / (1.0 + (-z).exp())
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
    let log_odds = delta.ln() - (1.0 - delta).ln();
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
