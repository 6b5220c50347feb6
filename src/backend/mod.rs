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
pub(crate) fn check_precision(
    precision: &[f32],
    chains: usize,
    likelihood: &crate::model::Likelihood,
) -> Result<()> {
    if !likelihood.is_gaussian_residual() {
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

/// A set of C chains on some device, running a method's program of chain operations
/// (`methods::ChainOp`). Positions are C × p row-major (chain c at c·p).
///
/// Everything a backend must do is here, and every method means something for every backend.
/// What only some backends offer is a capability of its own, which a backend hands out where it
/// has it: LASSO encodings with the dictionary ([`Encode`]), step-size and trajectory control
/// for the warm-up's adaptation ([`Tuning`]), and per-chain model state, the prior's latent
/// state and the learned noise precision ([`ModelState`]). The methods of the same names on
/// `dyn Backend` call them, and name the capability in their error where it is missing.
pub trait Backend {
    /// The device and its memory use.
    fn info(&self) -> BackendInfo;

    /// Number of chains.
    fn chains(&self) -> usize;

    /// Sets every chain's position X and computes its cached residual and full gradient.
    fn load_positions(&mut self, positions: &[f32]) -> Result<()>;

    /// Runs outer iteration `outer` (1-based): the method's program from X, leaving the
    /// proposal Z; returns each chain's MH terms.
    fn propose(&mut self, outer: u32) -> Result<Vec<MhTerms>>;

    /// X ← Z (with its cached residual and gradient) for every chain whose entry is true.
    fn accept(&mut self, accepted: &[bool]) -> Result<()>;

    /// The current positions X, C × p.
    fn positions(&mut self) -> Result<Vec<f32>>;

    /// The current images A X, C × d.
    fn images(&mut self) -> Result<Vec<f32>>;

    /// Device seconds spent in the propose and accept passes so far, measured on the device
    /// (timestamp queries); None where the device does not measure it.
    fn device_seconds(&mut self) -> Result<Option<f64>> {
        Ok(None)
    }

    /// Its LASSO encoder, None for a backend whose chains have no codes to encode.
    fn encoder(&mut self) -> Option<&mut dyn Encode> {
        None
    }

    /// Its LASSO encoder, to read (`Encode::encode_stats`).
    fn encoder_ref(&self) -> Option<&dyn Encode> {
        None
    }

    /// Its step-size and trajectory control, None for a backend that runs fixed dynamics.
    fn tuning(&mut self) -> Option<&mut dyn Tuning> {
        None
    }

    /// Its per-chain model state, None for a backend that keeps none (a target with a fixed
    /// noise level and a prior without state).
    fn model_state(&mut self) -> Option<&mut dyn ModelState> {
        None
    }
}

/// The capability accessors of a backend that offers all three (written inside its
/// `impl Backend`).
macro_rules! offers_every_capability {
    () => {
        fn encoder(&mut self) -> Option<&mut dyn $crate::backend::Encode> {
            Some(self)
        }

        fn encoder_ref(&self) -> Option<&dyn $crate::backend::Encode> {
            Some(self)
        }

        fn tuning(&mut self) -> Option<&mut dyn $crate::backend::Tuning> {
            Some(self)
        }

        fn model_state(&mut self) -> Option<&mut dyn $crate::backend::ModelState> {
            Some(self)
        }
    };
}
pub(crate) use offers_every_capability;

/// LASSO encodings with the backend's dictionary.
pub trait Encode {
    /// LASSO codes argmin_z ½||x − A z||² + lam·||z||₁ of `images` (rows of d) by monotone FISTA
    /// with `iterations` iterations, rows of p.
    fn encode(&mut self, images: &[f32], lam: f32, iterations: u32) -> Result<Vec<f32>>;

    /// [`Encode::encode`] that gives up (None) once `stop` says so: the CPU asks before every
    /// iteration (a batch of a thousand rows at thousands of iterations takes minutes there),
    /// the GPU between submissions of at most about a quarter of a second (or one iteration);
    /// a backend without its own asks once, before the batch.
    fn encode_or_stop(
        &mut self,
        images: &[f32],
        lam: f32,
        iterations: u32,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Vec<f32>>> {
        if stop() {
            return Ok(None);
        }
        self.encode(images, lam, iterations).map(Some)
    }

    /// Lets `encode` stop a row before `iterations` once its relative duality gap (a bound on
    /// how far its objective is above the optimum, relative to it) is at most `tolerance`; 0
    /// (every backend's start) runs every iteration. A backend without the rule runs every
    /// iteration.
    fn set_lasso_tolerance(&mut self, tolerance: f32);

    /// The LASSO encodings since the backend was made: rows, iterations they ran in all, and
    /// rows that reached the iteration cap above the tolerance; None where they are not counted.
    fn encode_stats(&self) -> Option<EncodeStats>;
}

/// The dynamics' step size and HMC's trajectory, set between outer iterations by the warm-up's
/// adaptation (`orchestrator::StepAdaptation`, ChEES).
pub trait Tuning {
    /// Sets the step size η (MALA's h, HMC's ε) of every later proposal, for every chain.
    fn set_step_size(&mut self, eta: f32) -> Result<()>;

    /// Sets each chain's own step size (one per chain) for every later proposal of MALA or HMC:
    /// the per-class warm-up adaptation feeds it. `set_step_size` returns to one step for all.
    fn set_chain_step_sizes(&mut self, steps: &[f32]) -> Result<()>;

    /// Sets HMC's leapfrog steps L of every later proposal (ChEES jitters it per outer
    /// iteration).
    fn set_leapfrog_steps(&mut self, steps: u32) -> Result<()>;

    /// The last proposals Z and their momenta (HMC's r_L), each C × p, read after `propose` and
    /// before `accept` (ChEES's trajectory gradient needs them).
    fn proposals(&mut self) -> Result<(Vec<f32>, Vec<f32>)>;
}

/// Per-chain model state a backend keeps beside the chains: the prior's latent state (SSGL's,
/// `Prior::state_width` values per chain; none for a prior without state) and the likelihood's
/// noise precision (`--noise gibbs`).
pub trait ModelState {
    /// The prior's adaptive update after outer iteration `outer` (`Prior::update_state`), then
    /// X's cached gradient under the new state. Per chain: 1 when the new state was not finite
    /// (the chain kept its old one), else 0.
    ///
    /// Fails (`Error::Internal`) for a prior without state.
    fn prior_update(&mut self, outer: u32) -> Result<Vec<u32>>;

    /// The prior's per-chain latent state, or None for a prior without one.
    fn prior_state(&mut self) -> Result<Option<Vec<f32>>>;

    /// Restores the prior's latent state (from a checkpoint), then X's cached gradient under it.
    fn load_prior_state(&mut self, state: &[f32]) -> Result<()>;

    /// Sets every chain's likelihood precision τ (one value per chain, in place of 1/σ² in the
    /// gradients, the energies and the MH terms), then X's cached gradient under it.
    ///
    /// Fails (`Error::Usage`) for a likelihood whose residuals arrive scaled (mixture, tangent).
    fn set_noise_precision(&mut self, precision: &[f32]) -> Result<()>;

    /// The chains' likelihood precisions τ as last set, or None for a fixed σ².
    fn noise_precision(&mut self) -> Result<Option<Vec<f32>>>;
}

/// The capabilities' methods on any backend: each calls the backend's capability, or says which
/// one it lacks (the orchestrator and the sessions hold a `dyn Backend`).
impl dyn Backend + '_ {
    /// The error of a capability this backend does not offer: `what` it would do, and the
    /// setting that asked for it.
    fn missing(&self, field: &'static str, what: &str) -> crate::Error {
        let device = self.info().device;
        crate::Error::usage(field, format!("this backend ({device}) does not {what}"))
    }

    /// `Encode::encode`; an error for a backend without codes (Kernel HMC's images).
    pub fn encode(&mut self, images: &[f32], lam: f32, iterations: u32) -> Result<Vec<f32>> {
        let missing = self.missing("backend", "encode LASSO codes (its chains have no codes)");
        self.encoder()
            .ok_or(missing)?
            .encode(images, lam, iterations)
    }

    /// `Encode::encode_or_stop`; an error for a backend without codes.
    pub fn encode_or_stop(
        &mut self,
        images: &[f32],
        lam: f32,
        iterations: u32,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Vec<f32>>> {
        let missing = self.missing("backend", "encode LASSO codes (its chains have no codes)");
        self.encoder()
            .ok_or(missing)?
            .encode_or_stop(images, lam, iterations, stop)
    }

    /// `Encode::set_lasso_tolerance`; nothing for a backend without codes.
    pub fn set_lasso_tolerance(&mut self, tolerance: f32) {
        if let Some(encoder) = self.encoder() {
            encoder.set_lasso_tolerance(tolerance);
        }
    }

    /// `Encode::encode_stats`; None for a backend without codes.
    pub fn encode_stats(&self) -> Option<EncodeStats> {
        self.encoder_ref().and_then(|e| e.encode_stats())
    }

    /// `Tuning::set_step_size`.
    pub fn set_step_size(&mut self, eta: f32) -> Result<()> {
        let missing = self.missing("adapt", "adapt its step size");
        self.tuning().ok_or(missing)?.set_step_size(eta)
    }

    /// `Tuning::set_chain_step_sizes`.
    pub fn set_chain_step_sizes(&mut self, steps: &[f32]) -> Result<()> {
        let missing = self.missing("adapt", "run per-class step sizes");
        self.tuning().ok_or(missing)?.set_chain_step_sizes(steps)
    }

    /// `Tuning::set_leapfrog_steps`.
    pub fn set_leapfrog_steps(&mut self, steps: u32) -> Result<()> {
        let missing = self.missing("adapt", "adapt HMC's trajectory length");
        self.tuning().ok_or(missing)?.set_leapfrog_steps(steps)
    }

    /// `Tuning::proposals`.
    pub fn proposals(&mut self) -> Result<(Vec<f32>, Vec<f32>)> {
        let missing = self.missing("adapt", "adapt HMC's trajectory length");
        self.tuning().ok_or(missing)?.proposals()
    }

    /// `ModelState::prior_update`.
    pub fn prior_update(&mut self, outer: u32) -> Result<Vec<u32>> {
        let missing = self.missing("prior", "keep a prior's latent state");
        self.model_state().ok_or(missing)?.prior_update(outer)
    }

    /// `ModelState::prior_state`; None for a backend without model state.
    pub fn prior_state(&mut self) -> Result<Option<Vec<f32>>> {
        match self.model_state() {
            Some(state) => state.prior_state(),
            None => Ok(None),
        }
    }

    /// `ModelState::load_prior_state`.
    pub fn load_prior_state(&mut self, state: &[f32]) -> Result<()> {
        let missing = self.missing("prior", "keep a prior's latent state");
        self.model_state().ok_or(missing)?.load_prior_state(state)
    }

    /// `ModelState::set_noise_precision`.
    pub fn set_noise_precision(&mut self, precision: &[f32]) -> Result<()> {
        let missing = self.missing("noise", "learn the noise precision (use --noise fixed)");
        self.model_state()
            .ok_or(missing)?
            .set_noise_precision(precision)
    }

    /// `ModelState::noise_precision`; None for a backend without model state.
    pub fn noise_precision(&mut self) -> Result<Option<Vec<f32>>> {
        match self.model_state() {
            Some(state) => state.noise_precision(),
            None => Ok(None),
        }
    }
}
