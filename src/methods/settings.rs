//! How the dynamics of every method run: step size, steps, minibatch, noise and seed, in one struct.

use serde::Serialize;

use crate::methods::Method;

/// How the dynamics run, shared by every backend.
#[derive(Clone, Debug, Serialize)]
pub struct DynamicsSettings {
    /// The proposal: RMLD (the paper), MALA or HMC (exact).
    pub method: Method,
    /// Step size: eta of Algorithm 1 (also the friction: r ← r − eta·g − eta·r) for RMLD, the
    /// Langevin step h for MALA, the leapfrog step ε for HMC.
    pub eta: f32,
    /// Momentum steps T per outer iteration.
    pub steps: u32,
    /// Minibatch size m: indices drawn i.i.d. with replacement, per chain and step.
    pub batch: u32,
    /// Inject SGHMC noise sqrt(2·eta)·ξ into the momentum at every step (equation 2, B = I).
    pub sghmc_noise: bool,
    /// Seed of every draw (the generator is keyed by (seed, chain)).
    pub seed: u64,
    /// Leapfrog steps L per HMC proposal (unused by RMLD and MALA).
    pub leapfrog_steps: u32,
    /// Global index of the backend's first chain (0 but in a shard): chain c draws from the
    /// streams of chain `chain_offset + c`, so a shard's chains draw the single run's numbers.
    /// Not serialised: it is the shard's, not the configuration's.
    #[serde(skip)]
    pub chain_offset: u32,
}

impl DynamicsSettings {
    /// The dynamics of a backend made only to LASSO-encode (its chains never step): one step of
    /// size 1 over one image, from `seed`.
    pub fn encoding_only(seed: u64) -> Self {
        DynamicsSettings {
            eta: 1.0,
            steps: 1,
            batch: 1,
            seed,
            ..DynamicsSettings::default()
        }
    }

    /// Δ of the MH proposal norms: eta·T for RMLD, h = eta for MALA (unused by HMC).
    pub fn delta(&self) -> f32 {
        self.method.delta(self)
    }

    /// Δ with the step size `eta` in place of `self.eta` (a chain's own step, per-class adaptation).
    pub fn delta_at(&self, eta: f32) -> f32 {
        self.method.delta(&DynamicsSettings {
            eta,
            ..self.clone()
        })
    }
}

impl Default for DynamicsSettings {
    fn default() -> Self {
        DynamicsSettings {
            method: Method::Rmld,
            eta: 0.01,
            steps: 20,
            batch: 64,
            sghmc_noise: false,
            seed: 0,
            leapfrog_steps: 10,
            chain_offset: 0,
        }
    }
}
