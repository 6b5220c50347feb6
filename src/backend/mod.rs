//! Backends that run many chains at once: one trait, a CPU and a GPU implementation.
//!
//! A backend holds the state of C chains (position X, the cached full gradient at X and the
//! cached residual A X − xbar) and the working proposal. The orchestrator asks it to run the T
//! momentum steps of one outer iteration for every chain, reads back only the Metropolis-Hastings
//! scalars per chain, decides acceptance on the host and sends the accept mask back.

pub mod cpu;
#[cfg(feature = "gpu")]
pub mod gpu;
pub mod kernel_hmc;

use serde::Serialize;

use crate::dynamics::Method;
use crate::Result;

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
}

impl DynamicsSettings {
    /// Δ of the MH proposal norms: eta·T for RMLD, h = eta for MALA (unused by HMC).
    pub fn delta(&self) -> f32 {
        match self.method {
            Method::Rmld => self.eta * self.steps as f32,
            Method::Mala | Method::Hmc => self.eta,
        }
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
        }
    }
}

/// What the Metropolis-Hastings rule needs of one chain's proposal Z from X (Algorithm 3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct MhTerms {
    /// U(X) − const at the current position (for diagnostics).
    pub energy_current: f32,
    /// U(Z) − U(X), computed as one reduction of per-element differences.
    pub energy_difference: f32,
    /// ||Z − X + Δ·∇U(X)||², Δ = eta·T (the forward proposal's norm).
    pub forward_norm: f32,
    /// ||X − Z + Δ·∇U(Z)||² (the reverse proposal's norm).
    pub reverse_norm: f32,
    /// HMC only (0 otherwise): ½||r_L||² − ½||r_0||², one reduction of per-element differences.
    pub kinetic_difference: f32,
}

impl MhTerms {
    /// Words per chain when a device writes the terms as f32: energy, difference, forward,
    /// reverse, kinetic.
    pub const WORDS: usize = 5;

    /// The terms of every chain from `WORDS` f32 per chain, as the GPU kernels write them.
    pub fn from_words(values: &[f32]) -> Vec<MhTerms> {
        values
            .chunks_exact(Self::WORDS)
            .map(|t| MhTerms {
                energy_current: t[0],
                energy_difference: t[1],
                forward_norm: t[2],
                reverse_norm: t[3],
                kinetic_difference: t[4],
            })
            .collect()
    }

    /// log α before the min with 0: −(U(Z) − U(X)) − reverse/(4Δ) + forward/(4Δ), in f64.
    /// NaN or infinite terms give NaN, which the rule rejects.
    pub fn log_ratio(&self, delta: f64) -> f64 {
        -(self.energy_difference as f64) - self.reverse_norm as f64 / (4.0 * delta)
            + self.forward_norm as f64 / (4.0 * delta)
    }

    /// HMC's log α before the min with 0: −(U(Z) − U(X)) − (½||r_L||² − ½||r_0||²), in f64.
    pub fn hamiltonian_log_ratio(&self) -> f64 {
        -(self.energy_difference as f64) - self.kinetic_difference as f64
    }

    /// The log ratio of `method`: Algorithm 3's with Δ = `delta` for RMLD and MALA (MALA's
    /// Gaussian proposal densities give exactly that formula with Δ = h), the Hamiltonian's for HMC.
    pub fn method_log_ratio(&self, method: Method, delta: f64) -> f64 {
        match method {
            Method::Rmld | Method::Mala => self.log_ratio(delta),
            Method::Hmc => self.hamiltonian_log_ratio(),
        }
    }
}

/// What a backend tells the report about itself.
#[derive(Clone, Debug, Serialize)]
pub struct BackendInfo {
    /// "cpu" or "gpu".
    pub kind: String,
    /// The device: CPU threads, or the adapter's name and driver.
    pub device: String,
    /// Bytes of (device) memory held per chain.
    pub bytes_per_chain: usize,
}

/// A set of C chains on some device. Positions are C × p row-major (chain c at c·p).
pub trait Backend {
    /// The device and its memory use.
    fn info(&self) -> BackendInfo;

    /// Number of chains.
    fn chains(&self) -> usize;

    /// Sets every chain's position X and computes its cached residual and full gradient.
    fn load_positions(&mut self, positions: &[f32]) -> Result<()>;

    /// Runs outer iteration `outer` (1-based): r_0 ~ N(0, I), T momentum steps from X with
    /// per-chain minibatch gradients, leaving the proposal Z; returns each chain's MH terms.
    fn propose(&mut self, outer: u32) -> Result<Vec<MhTerms>>;

    /// X ← Z (with its cached residual and gradient) for every chain whose entry is true.
    fn accept(&mut self, accepted: &[bool]) -> Result<()>;

    /// The current positions X, C × p.
    fn positions(&mut self) -> Result<Vec<f32>>;

    /// The current images A X, C × d.
    fn images(&mut self) -> Result<Vec<f32>>;

    /// LASSO codes argmin_z ½||x − A z||² + lam·||z||₁ of `images` (rows of d) by monotone FISTA
    /// with `iterations` iterations, rows of p.
    fn encode(&mut self, images: &[f32], lam: f32, iterations: u32) -> Result<Vec<f32>>;

    /// Device seconds spent in the propose and accept passes so far, measured on the device
    /// (timestamp queries); None for a backend or device that does not measure it.
    fn device_seconds(&mut self) -> Result<Option<f64>> {
        Ok(None)
    }
}
