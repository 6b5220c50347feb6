//! Which dynamics propose: the paper's RMLD, or an exact method (MALA, HMC) for validation; the one list of methods, and every classification of a method as an exhaustive `match`.

use serde::{Deserialize, Serialize};

use super::{hmc, mala, rmld, ChainOp, DynamicsSettings, MhTerms};

/// The proposal mechanism of one outer iteration. RMLD is the paper's (approximate) sampler;
/// MALA and HMC use the full-data gradient and an exact Metropolis-Hastings ratio, so they
/// sample the posterior exactly (up to f32 rounding) and let tests check the kernels.
///
/// Each method is a file of this folder; every question about a method is a `match` here, so a
/// new method does not compile until it answers each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Algorithm 1 (T momentum steps with minibatch gradients) and the linearised MH of
    /// Algorithm 3 with Δ = eta·T.
    #[default]
    Rmld,
    /// Metropolis-adjusted Langevin: Z = X − h∇U(X) + sqrt(2h)·ξ with h = eta, and the Gaussian
    /// proposal densities in the MH ratio (Algorithm 3's formula with Δ = h is then exact).
    Mala,
    /// Hamiltonian Monte Carlo: r ~ N(0, I), L leapfrog steps of size ε = eta with the full
    /// gradient, and the Hamiltonian U + ½||r||² in the MH ratio.
    Hmc,
}

impl Method {
    /// Every method, in the order the command line lists them.
    pub const ALL: [Method; 3] = [Method::Rmld, Method::Mala, Method::Hmc];

    /// Its name in settings, reports and on the command line (`--method`).
    pub fn name(self) -> &'static str {
        match self {
            Method::Rmld => "rmld",
            Method::Mala => "mala",
            Method::Hmc => "hmc",
        }
    }

    /// The chain operations of one proposal, in order: the method written once, run by every
    /// backend.
    pub fn program(self, settings: &DynamicsSettings) -> Vec<ChainOp> {
        match self {
            Method::Rmld => rmld::program(settings),
            Method::Mala => mala::program(settings),
            Method::Hmc => hmc::program(settings),
        }
    }

    /// log α of a proposal's terms before the min with 0 (NaN or infinite terms give NaN, which
    /// the MH rule rejects); `delta` is Δ of the proposal norms (`DynamicsSettings::delta`).
    pub fn log_ratio(self, terms: &MhTerms, delta: f64) -> f64 {
        match self {
            Method::Rmld => rmld::log_ratio(terms, delta),
            Method::Mala => mala::log_ratio(terms, delta),
            Method::Hmc => hmc::log_ratio(terms, delta),
        }
    }

    /// Δ of the MH proposal norms for `settings` (`DynamicsSettings::delta`).
    pub fn delta(self, settings: &DynamicsSettings) -> f32 {
        match self {
            Method::Rmld => rmld::delta(settings),
            Method::Mala => mala::delta(settings),
            Method::Hmc => hmc::delta(settings),
        }
    }

    /// Whether it is exact: the full-data gradient and an exact MH ratio (MALA, HMC), rather
    /// than the paper's minibatch momentum steps judged by Algorithm 3's linearised correction
    /// (RMLD, the dynamics Kernel HMC's backends fuse into one kernel).
    pub fn is_exact(self) -> bool {
        match self {
            Method::Rmld => false,
            Method::Mala | Method::Hmc => true,
        }
    }

    /// The mean acceptance its step size adapts toward during a warm-up (dual averaging), or
    /// None for a method whose acceptance is not a tuning criterion (RMLD: its η is also the
    /// friction of the dynamics and its MH test a discounted linearised correction).
    pub fn target_acceptance(self) -> Option<f64> {
        match self {
            Method::Rmld => None,
            Method::Mala => Some(mala::TARGET_ACCEPTANCE),
            Method::Hmc => Some(hmc::TARGET_ACCEPTANCE),
        }
    }

    /// Whether a proposal is a leapfrog trajectory of `leapfrog_steps` steps (HMC): its length
    /// must be at least 1, ChEES adapts it, and the CPU may carry the residual along it.
    pub fn runs_trajectory(self) -> bool {
        match self {
            Method::Rmld | Method::Mala => false,
            Method::Hmc => true,
        }
    }

    /// The gradient steps one proposal takes (the draws' `n_steps`): RMLD's T momentum steps,
    /// MALA's one Langevin step, HMC's L leapfrog steps.
    pub fn gradient_steps(self, settings: &DynamicsSettings) -> u32 {
        match self {
            Method::Rmld => settings.steps,
            Method::Mala => 1,
            Method::Hmc => settings.leapfrog_steps,
        }
    }

    /// The gradient products per chain and proposal (each A z and Aᵀ r, 4·d·p flops) that the
    /// estimate of a run's time counts.
    pub fn products_per_proposal(self, settings: &DynamicsSettings) -> f64 {
        match self {
            Method::Rmld => rmld::products(settings),
            Method::Mala => mala::products(settings),
            Method::Hmc => hmc::products(settings),
        }
    }
}
