//! Which dynamics propose: the paper's RMLD, or an exact method (MALA, HMC) for validation.

use serde::{Deserialize, Serialize};

use super::{hmc, mala, rmld, ChainOp, DynamicsSettings, MhTerms};

/// The proposal mechanism of one outer iteration. RMLD is the paper's (approximate) sampler;
/// MALA and HMC use the full-data gradient and an exact Metropolis-Hastings ratio, so they
/// sample the posterior exactly (up to f32 rounding) and let tests check the kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
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
}
