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

pub use crate::methods::{DynamicsSettings, MhTerms};
pub use cpu::fista::EncodeStats;
pub use cpu::{CpuBackend, CpuPhase};
#[cfg(feature = "gpu")]
pub use gpu::{
    adapter_available, software_adapter, GpuBackend, GpuContext, GpuOptions, KernelHmcGpu,
};
pub use kernel_hmc::KernelHmcCpu;

use crate::Result;

/// Checks a precision vector before a backend takes it: one positive finite value per chain,
/// and a likelihood whose residuals are not scaled already (the paper and local targets).
pub(crate) fn check_precision(precision: &[f32], chains: usize, caches_energy: bool) -> Result<()> {
    if caches_energy {
        return Err(crate::Error::usage(
            "noise",
            "gibbs runs with the paper and local targets (its update reads the Gaussian \
             residual), not mixture or tangent",
        ));
    }
    check_per_chain(precision, chains, "set_noise_precision", "precision")
}

/// One positive finite value per chain, else an internal error naming `call` and `what`.
fn check_per_chain(values: &[f32], chains: usize, call: &str, what: &str) -> Result<()> {
    if values.len() != chains {
        return Err(crate::Error::Internal(format!(
            "{call}: {} values for {chains} chains",
            values.len()
        )));
    }
    if let Some(i) = values.iter().position(|v| !(v.is_finite() && *v > 0.0)) {
        return Err(crate::Error::Internal(format!(
            "{call}: chain {i}'s {what} is {} (must be positive and finite)",
            values[i]
        )));
    }
    Ok(())
}

/// Checks per-chain step sizes before a backend takes them: one positive finite value per chain,
/// for a method whose step is not also its friction (MALA, HMC; not RMLD).
pub(crate) fn check_chain_steps(
    steps: &[f32],
    chains: usize,
    method: crate::methods::Method,
) -> Result<()> {
    if method == crate::methods::Method::Rmld {
        return Err(crate::Error::usage(
            "adapt",
            "per-class step sizes are for method mala or hmc, not rmld",
        ));
    }
    check_per_chain(steps, chains, "set_chain_step_sizes", "step")
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

    /// Lets `encode` stop a row before `iterations` once its relative duality gap (a bound on
    /// how far its objective is above the optimum, relative to it) is at most `tolerance`; 0
    /// (every backend's start) runs every iteration. The CPU backend honours it; a backend
    /// without the rule ignores it and runs every iteration.
    fn set_lasso_tolerance(&mut self, tolerance: f32) {
        let _ = tolerance;
    }

    /// The LASSO encodings since the backend was made: rows, iterations they ran in all, and
    /// rows that reached the iteration cap above the tolerance; None for a backend that does
    /// not count them.
    fn encode_stats(&self) -> Option<EncodeStats> {
        None
    }

    /// Device seconds spent in the propose and accept passes so far, measured on the device
    /// (timestamp queries); None for a backend or device that does not measure it.
    fn device_seconds(&mut self) -> Result<Option<f64>> {
        Ok(None)
    }

    /// Sets the step size η (MALA's h, HMC's ε) of every later proposal: the warm-up's
    /// adaptation (`orchestrator::StepAdaptation`) feeds it between outer iterations.
    fn set_step_size(&mut self, eta: f32) -> Result<()>;

    /// Sets each chain's own step size (one per chain) for every later proposal of MALA or HMC:
    /// the per-class warm-up adaptation feeds it. `set_step_size` returns to one step for all.
    /// A backend without per-chain steps takes only equal ones.
    fn set_chain_step_sizes(&mut self, steps: &[f32]) -> Result<()> {
        match steps.first() {
            Some(&first) if steps.iter().all(|s| s.to_bits() == first.to_bits()) => {
                self.set_step_size(first)
            }
            _ => Err(crate::Error::usage(
                "adapt",
                "this backend does not run per-class step sizes",
            )),
        }
    }

    /// Sets HMC's leapfrog steps L of every later proposal (the warm-up's trajectory-length
    /// adaptation, ChEES, jitters it per outer iteration).
    fn set_leapfrog_steps(&mut self, steps: u32) -> Result<()> {
        let _ = steps;
        Err(crate::Error::usage(
            "adapt",
            "this backend does not adapt HMC's trajectory length",
        ))
    }

    /// The last proposals Z and their momenta (HMC's r_L), each C × p, read after `propose` and
    /// before `accept` (ChEES's trajectory gradient needs them).
    fn proposals(&mut self) -> Result<(Vec<f32>, Vec<f32>)> {
        Err(crate::Error::usage(
            "adapt",
            "this backend does not adapt HMC's trajectory length",
        ))
    }

    /// The prior's adaptive update after outer iteration `outer` (SSGL's stochastic
    /// approximation, equations 12-15 of Deng et al. 2019), then X's cached gradient under the
    /// new state. Per chain: 1 when the new state was not finite (the chain kept its old one),
    /// else 0. A backend or prior without adaptive state returns an error.
    fn prior_update(&mut self, outer: u32) -> Result<Vec<u32>> {
        let _ = outer;
        Err(crate::Error::usage(
            "prior",
            "this backend does not run the ssgl prior (use --backend cpu)",
        ))
    }

    /// The prior's per-chain latent state (SSGL: `ssgl::stride(p)` values per chain), or None
    /// for a prior without one.
    fn prior_state(&mut self) -> Result<Option<Vec<f32>>> {
        Ok(None)
    }

    /// Sets every chain's likelihood precision τ (`--noise gibbs`: one value per chain, in place
    /// of 1/σ² in the gradients, the energies and the MH terms), then X's cached gradient under
    /// it. A backend or likelihood that cannot learn the noise returns an error.
    fn set_noise_precision(&mut self, precision: &[f32]) -> Result<()> {
        let _ = precision;
        Err(crate::Error::usage(
            "noise",
            "this backend does not learn the noise precision (use --noise fixed)",
        ))
    }

    /// The chains' likelihood precisions τ as last set, or None for a fixed σ².
    fn noise_precision(&mut self) -> Result<Option<Vec<f32>>> {
        Ok(None)
    }

    /// Restores the prior's latent state (from a checkpoint), then X's cached gradient under it.
    fn load_prior_state(&mut self, state: &[f32]) -> Result<()> {
        let _ = state;
        Err(crate::Error::Internal(
            "this backend keeps no prior state to restore".into(),
        ))
    }
}
