//! The CPU backend: chains as row blocks, the two products per step against the packed dictionary
//! (`packed`: one summation order on every CPU path) and the element-wise kernels (the CPU twins
//! of the WGSL, named alike) through rayon.

#[cfg(feature = "blas")]
pub mod blas;
pub mod exact;
pub mod fista;
pub mod gather;
pub mod gradient_step;
pub mod lasso_admm;
pub mod leapfrog_carry;
pub mod matmul;
pub mod mh_terms;
pub mod packed;
pub mod select;

use std::sync::Arc;

use super::{Backend, BackendInfo, DynamicsSettings, Encode, MhTerms, ModelState, Tuning};
use crate::methods::ChainOp;
use crate::model::likelihood::StepDraw;
use crate::model::{Likelihood, Target};
use crate::{Error, Result};
use mh_terms::{ChainView, Kinetic, TermsModel};

/// Chain state on the host: current (x, residual, gradient), proposal alike, and scratch.
pub struct CpuBackend {
    target: Arc<Target>,
    settings: DynamicsSettings,
    chains: usize,
    chain_rows: Vec<[u32; 2]>,
    xbar_rows: Vec<f32>,
    x: Vec<f32>,
    x_residual: Vec<f32>,
    x_gradient: Vec<f32>,
    z: Vec<f32>,
    z_residual: Vec<f32>,
    z_gradient: Vec<f32>,
    momentum: Vec<f32>,
    ybar: Vec<f32>,
    step_residual: Vec<f32>,
    lipschitz: Option<f32>,
    /// A column by column (`matmul::columns_of`), for the leapfrog carry's sign flips.
    a_columns: Vec<f32>,
    /// A packed both ways (`packed::PackedMatrix`), which takes both products.
    a_packed: packed::PackedMatrix,
    /// The products' kernels (`RMLD_CPU_PATH`), for the report.
    cpu_path: packed::CpuPath,
    /// `encode`'s relative duality-gap stop (0: every iteration), and its counts so far.
    lasso_tolerance: f32,
    encode_stats: fista::EncodeStats,
    /// ρ and (ρI + AAᵀ)⁻¹ for the ADMM encoder, built at the first encoding that uses it
    /// (`Some(None)`: not positive definite, so FISTA encodes).
    admm_factor: Option<Option<lasso_admm::Factor>>,
    chunk: usize,
    /// The likelihood, as data: what the residuals subtract, its step and energy passes.
    likelihood: Likelihood,
    /// Its cached energies and scaled residuals, for a likelihood that keeps them.
    cached: Option<Cached>,
    /// Seconds per `CpuPhase` since timing was switched on (`with_phase_timing`).
    phase_seconds: Option<[f64; CpuPhase::COUNT]>,
    /// The step's products by the system OpenBLAS (`with_blas_products`; measuring only).
    #[cfg(feature = "blas")]
    blas_products: bool,
    /// The prior's latent state (`Prior::state_width(p)` values per chain), None for a prior
    /// without state.
    prior_state: Option<Vec<f32>>,
    /// The learned noise precision τ per chain (`--noise gibbs`), None for a fixed σ².
    precision: Option<Vec<f32>>,
    /// Per-chain step sizes (per-class adaptation), None: `settings.eta` for every chain.
    chain_steps: Option<Vec<f32>>,
    /// HMC carries its residual through a trajectory where that saves products
    /// (`leapfrog_carry`); false: every leapfrog step recomputes it with A, as the GPU does.
    leapfrog_carry: bool,
    carry: Option<leapfrog_carry::LeapfrogCarry>,
}

/// The parts of a proposal the CPU backend can time (`CpuBackend::with_phase_timing`), for
/// `rmld bench`'s breakdown of the very code path `sample` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuPhase {
    /// Gathering the per-chain minibatch means.
    Gather,
    /// A Z − Ybar (with the likelihood's step residual).
    ResidualProduct,
    /// Aᵀ R.
    TransposeProduct,
    /// The momentum draw and the fused momentum and position updates.
    Update,
    /// Z's full residual, energy and gradient.
    ProposalState,
    /// The MH terms.
    MhTerms,
    /// The prior's adaptive update (SSGL) and X's gradient under the new state.
    PriorUpdate,
}

impl CpuPhase {
    /// Number of phases.
    pub const COUNT: usize = 7;
}

/// A likelihood's cached state (mixture, tangent): at X and at Z, the energy's data term and the
/// scaled residual the gradient products read.
struct Cached {
    x_energy: Vec<f32>,
    z_energy: Vec<f32>,
    x_scaled: Vec<f32>,
    z_scaled: Vec<f32>,
}

/// Where `residual_and_gradient` leaves a likelihood's cached energies (C) and scaled residuals
/// (C × d), for a likelihood that keeps them.
type CachedOut<'a> = Option<(&'a mut [f32], &'a mut [f32])>;

impl CpuBackend {
    /// A backend for `chains` chains of `target`, all positions zero until loaded.
    ///
    /// # Panics
    /// If the target's class-conditional chains are not `chains` in number; see [`Self::try_new`].
    pub fn new(target: Arc<Target>, settings: DynamicsSettings, chains: usize) -> Self {
        match Self::try_new(target, settings, chains) {
            Ok(b) => b,
            Err(e) => panic!("{e}"),
        }
    }

    /// [`Self::new`] that reports a class layout for another number of chains as an error.
    pub fn try_new(target: Arc<Target>, settings: DynamicsSettings, chains: usize) -> Result<Self> {
        let (d, p) = (target.d(), target.p());
        let cpu_path = packed::CpuPath::selected()?;
        let chain_rows = target.chain_rows(chains)?;
        let likelihood = target.likelihood(chains)?;
        let prior_state = target.initial_prior_state(&likelihood, chains)?;
        // What each chain's residual subtracts (xbar_rows), and the step residual's start (ybar):
        // a gathered minibatch mean, or the offset itself.
        // The chains' state, sized by the user's settings: a refused allocation is an error
        // naming `chains`, never an abort (`crate::alloc`).
        let zeros = |len: usize, what: &str| crate::alloc::try_zeroed::<f32>(len, "chains", what);
        let xbar_rows =
            crate::alloc::try_copy(likelihood.offsets(), "chains", "the chains' offsets")?;
        let ybar = if likelihood.gathers() {
            zeros(chains * d, "the chains' minibatch means")?
        } else {
            crate::alloc::try_copy(&xbar_rows, "chains", "the chains' step residuals")?
        };
        let cached = match likelihood.caches_energy() {
            true => Some(Cached {
                x_energy: zeros(chains, "the chains' energies")?,
                z_energy: zeros(chains, "the chains' energies")?,
                x_scaled: zeros(chains * d, "the chains' scaled residuals")?,
                z_scaled: zeros(chains * d, "the chains' scaled residuals")?,
            }),
            false => None,
        };
        Ok(CpuBackend {
            settings,
            chains,
            chain_rows,
            xbar_rows,
            x: zeros(chains * p, "the chains' positions")?,
            x_residual: zeros(chains * d, "the chains' residuals")?,
            x_gradient: zeros(chains * p, "the chains' gradients")?,
            z: zeros(chains * p, "the chains' proposals")?,
            z_residual: zeros(chains * d, "the chains' residuals")?,
            z_gradient: zeros(chains * p, "the chains' gradients")?,
            momentum: zeros(chains * p, "the chains' momenta")?,
            ybar,
            step_residual: zeros(chains * d, "the chains' step residuals")?,
            lipschitz: None,
            a_columns: matmul::try_columns_of(&target.dictionary.a, d, p)?,
            a_packed: packed::PackedMatrix::try_both(&target.dictionary.a, d, p)?,
            cpu_path,
            lasso_tolerance: 0.0,
            encode_stats: fista::EncodeStats::default(),
            admm_factor: None,
            chunk: chains.max(1),
            likelihood,
            cached,
            phase_seconds: None,
            #[cfg(feature = "blas")]
            blas_products: false,
            prior_state,
            precision: None,
            chain_steps: None,
            leapfrog_carry: true,
            carry: None,
            target,
        })
    }

    /// Runs the products on blocks of at most `chunk` chains (default: all at once). The samples
    /// do not depend on it: every chain's numbers are its own.
    pub fn with_chunk_size(mut self, chunk: usize) -> Self {
        self.chunk = chunk.max(1);
        self
    }

    /// Recomputes HMC's residual with A at every leapfrog step, as the GPU does, instead of
    /// carrying it through the trajectory (`leapfrog_carry`): the GPU's CPU twin.
    pub fn with_recomputed_leapfrog(mut self) -> Self {
        self.leapfrog_carry = false;
        self
    }

    /// Times every phase of the proposals from now on (`phase_seconds`); the samples are the same.
    pub fn with_phase_timing(mut self) -> Self {
        self.phase_seconds = Some([0.0; CpuPhase::COUNT]);
        self
    }

    /// Seconds spent in each `CpuPhase` (indexed by it) since `with_phase_timing`, or None.
    pub fn phase_seconds(&self) -> Option<[f64; CpuPhase::COUNT]> {
        self.phase_seconds
    }

    /// Runs `f`, adding its wall time to `phase` when timing is on.
    fn timed<T>(&mut self, phase: CpuPhase, f: impl FnOnce(&mut Self) -> T) -> T {
        if self.phase_seconds.is_none() {
            return f(self);
        }
        let started = std::time::Instant::now();
        let out = f(self);
        if let Some(seconds) = &mut self.phase_seconds {
            seconds[phase as usize] += started.elapsed().as_secs_f64();
        }
        out
    }

    /// Runs the products (residual, transpose, full gradient) on the system OpenBLAS instead of
    /// the packed kernels: for `rmld bench`'s roofline only. Draws then differ in their last bits and a row's
    /// sums may depend on the chain count (OpenBLAS picks kernels by shape), so sampling never
    /// uses it.
    #[cfg(feature = "blas")]
    pub fn with_blas_products(mut self) -> Self {
        self.blas_products = true;
        self
    }

    /// Per chain A z − y, block by block.
    fn residual_product(&self, z: &[f32], y: &[f32], out: &mut [f32]) {
        let (d, p) = (self.target.d(), self.target.p());
        #[cfg(feature = "blas")]
        if self.blas_products {
            blas::residual_product(&self.target.dictionary.a, d, p, z, out);
            out.par_chunks_mut(d)
                .zip(y.par_chunks(d))
                .for_each(|(o, y)| o.iter_mut().zip(y).for_each(|(o, y)| *o -= y));
            return;
        }
        let blocks = z.chunks(self.chunk * p).zip(y.chunks(self.chunk * d));
        for ((z, y), out) in blocks.zip(out.chunks_mut(self.chunk * d)) {
            self.a_packed.residual_product(z, y, out);
        }
    }

    /// Per chain Aᵀ r, block by block.
    fn transpose_product(&self, r: &[f32], out: &mut [f32]) {
        let (d, p) = (self.target.d(), self.target.p());
        #[cfg(feature = "blas")]
        if self.blas_products {
            blas::transpose_product(&self.target.dictionary.a, d, p, r, out);
            return;
        }
        for (r, out) in r.chunks(self.chunk * d).zip(out.chunks_mut(self.chunk * p)) {
            self.a_packed.transpose_product(r, out);
        }
    }

    /// σ_max(A)², computed once.
    pub fn lipschitz(&mut self) -> f32 {
        *self
            .lipschitz
            .get_or_insert_with(|| self.target.dictionary.spectral_norm_squared() as f32)
    }

    /// 1/σ² as the gradient kernels apply it: a likelihood's scaled residuals (the mixture's,
    /// the tangent target's) arrive already scaled; a learned precision is one value per chain.
    fn gradient_inv_sigma2(&self) -> Vec<f32> {
        if self.likelihood.caches_energy() {
            vec![1.0]
        } else {
            self.likelihood_precision()
        }
    }

    /// The likelihood's precision as the kernels apply it: 1/σ², or with a learned precision
    /// (`--noise gibbs`, preconditioned dynamics) √τ per chain, f32 square roots of the f32 τ
    /// (the GPU uploads the same values).
    fn likelihood_precision(&self) -> Vec<f32> {
        match &self.precision {
            Some(tau) => tau.iter().map(|t| t.sqrt()).collect(),
            None => vec![self.target.inv_sigma2()],
        }
    }

    /// Residual A·pos − offset and full gradient ∇U(pos) for every chain; a likelihood that
    /// caches its energy leaves its energies and scaled residuals in `cached`.
    fn residual_and_gradient(
        &self,
        positions: &[f32],
        residual: &mut [f32],
        gradient: &mut [f32],
        cached: CachedOut,
    ) {
        self.residual_product(positions, &self.xbar_rows, residual);
        self.gradient_from_residual(positions, residual, gradient, cached);
    }

    /// The full gradient ∇U(pos) (and a caching likelihood's energies and scaled residuals)
    /// from the residual already in `residual`.
    fn gradient_from_residual(
        &self,
        positions: &[f32],
        residual: &[f32],
        gradient: &mut [f32],
        cached: CachedOut,
    ) {
        match cached {
            Some((energy, scaled)) => {
                self.likelihood.energy(residual, energy, scaled);
                self.transpose_product(scaled, gradient);
            }
            None => self.transpose_product(residual, gradient),
        }
        gradient_step::full_gradient_with(
            gradient,
            positions,
            self.target.p(),
            &self.target.prior,
            self.prior_state.as_deref(),
            &self.gradient_inv_sigma2(),
        );
    }

    /// The likelihood's step residual of step `step`, in place over A Z − offset (the mixture's
    /// minibatch softmax, the tangent target's C⁻¹; nothing for the Gaussian).
    fn likelihood_step_residual(&mut self, outer: u32, step: u32) {
        let s = &self.settings;
        let draw = StepDraw {
            seed: s.seed,
            first_chain: s.chain_offset,
            outer,
            step,
            batch: s.batch,
        };
        self.likelihood
            .step_residual(&draw, &mut self.step_residual);
    }

    /// Runs one chain operation of a method's program (`methods::ChainOp`) on every chain;
    /// returns the MH terms for `ChainOp::MhTerms`.
    fn apply(&mut self, op: ChainOp, outer: u32) -> Option<Vec<MhTerms>> {
        let (p, s) = (self.target.p(), &self.settings);
        let (seed, offset) = (s.seed, s.chain_offset);
        let steps = self.step_sizes();
        // --noise gibbs: the proposals move in noise units (√τ per chain).
        let scale = self
            .precision
            .is_some()
            .then(|| self.likelihood_precision());
        match op {
            ChainOp::CopyPosition => self.z.copy_from_slice(&self.x),
            ChainOp::CopyGradient => self.z_gradient.copy_from_slice(&self.x_gradient),
            ChainOp::DrawMomentum => {
                self.timed(CpuPhase::Update, |b| {
                    gradient_step::draw_momentum(seed, offset, outer, &mut b.momentum, p)
                });
                self.timed(CpuPhase::ProposalState, Self::start_carry);
            }
            ChainOp::MinibatchStep(step) => self.minibatch_step(outer, step),
            ChainOp::LangevinProposal => self.timed(CpuPhase::Update, |b| {
                exact::mala_proposal(
                    seed,
                    offset,
                    outer,
                    &b.x,
                    &b.x_gradient,
                    &mut b.z,
                    p,
                    &steps,
                    scale.as_deref(),
                )
            }),
            ChainOp::LeapfrogDrift if self.carries_trajectory() => {
                self.timed(CpuPhase::Update, |b| b.carried_drift(&steps))
            }
            ChainOp::LeapfrogDrift => self.timed(CpuPhase::Update, |b| {
                let scale = scale.as_deref();
                exact::leapfrog_drift(&b.z_gradient, &mut b.z, &mut b.momentum, &steps, scale, p)
            }),
            ChainOp::LeapfrogKick => self.timed(CpuPhase::Update, |b| {
                exact::leapfrog_kick(&b.z_gradient, &mut b.momentum, &steps, p);
                if b.carries_trajectory() {
                    b.carried_kick(&steps);
                }
            }),
            ChainOp::ProposalState if self.carries_trajectory() => {
                self.timed(CpuPhase::ProposalState, Self::carried_proposal_state)
            }
            ChainOp::ProposalState => self.timed(CpuPhase::ProposalState, Self::proposal_state),
            ChainOp::MhTerms { kinetic } => {
                return Some(self.timed(CpuPhase::MhTerms, |b| b.terms(outer, kinetic)))
            }
        }
        None
    }

    /// Step `step` of Algorithm 1 on Z: the minibatch mean (a likelihood that gathers; the
    /// others' step residual subtracts their offset, set at construction), the two products
    /// with the likelihood's step residual between them, and the fused update.
    fn minibatch_step(&mut self, outer: u32, step: u32) {
        let (p, s) = (self.target.p(), self.settings.clone());
        if self.likelihood.gathers() {
            self.timed(CpuPhase::Gather, |b| {
                gather::gather_from(
                    &b.target.observations,
                    &b.chain_rows,
                    s.seed,
                    s.chain_offset,
                    outer,
                    step,
                    s.batch,
                    &mut b.ybar,
                )
            });
        }
        self.timed(CpuPhase::ResidualProduct, |b| {
            let mut step_residual = std::mem::take(&mut b.step_residual);
            b.residual_product(&b.z, &b.ybar, &mut step_residual);
            b.step_residual = step_residual;
            b.likelihood_step_residual(outer, step);
        });
        self.timed(CpuPhase::TransposeProduct, |b| {
            let mut gradient = std::mem::take(&mut b.z_gradient);
            b.transpose_product(&b.step_residual, &mut gradient);
            b.z_gradient = gradient;
        });
        let noise = s
            .sghmc_noise
            .then_some((s.seed, s.chain_offset, outer, step));
        let inv_sigma2 = self.gradient_inv_sigma2();
        self.timed(CpuPhase::Update, |b| {
            gradient_step::gradient_step_with(
                &b.z_gradient,
                &mut b.z,
                &mut b.momentum,
                p,
                &b.target.prior,
                b.prior_state.as_deref(),
                &inv_sigma2,
                b.precision.is_some(),
                s.eta,
                noise,
            )
        });
    }

    /// Z's residual A Z − xbar and full gradient ∇U(Z).
    fn proposal_state(&mut self) {
        let (mut residual, mut gradient) = (
            std::mem::take(&mut self.z_residual),
            std::mem::take(&mut self.z_gradient),
        );
        let mut cached = self.cached.take();
        let out = cached
            .as_mut()
            .map(|m| (&mut m.z_energy[..], &mut m.z_scaled[..]));
        self.residual_and_gradient(&self.z, &mut residual, &mut gradient, out);
        self.cached = cached;
        self.z_residual = residual;
        self.z_gradient = gradient;
    }

    /// The step size of every chain (per-class adaptation), or the one of them all.
    fn step_sizes(&self) -> Vec<f32> {
        self.chain_steps
            .clone()
            .unwrap_or_else(|| vec![self.settings.eta])
    }

    /// The MH terms of every chain's proposal, with HMC's kinetic difference when `kinetic`.
    fn terms(&self, outer: u32, kinetic: bool) -> Vec<MhTerms> {
        let (d, p) = (self.target.d(), self.target.p());
        let s = &self.settings;
        let deltas: Vec<f32> = match &self.chain_steps {
            Some(steps) => steps.iter().map(|&eta| s.delta_at(eta)).collect(),
            None => vec![s.delta()],
        };
        let current = ChainView {
            position: &self.x,
            residual: &self.x_residual,
            gradient: &self.x_gradient,
        };
        let proposal = ChainView {
            position: &self.z,
            residual: &self.z_residual,
            gradient: &self.z_gradient,
        };
        let kinetic_terms = Kinetic {
            momentum: &self.momentum,
            seed: s.seed,
            outer,
            first_chain: s.chain_offset,
        };
        let model = TermsModel {
            prior: &self.target.prior,
            prior_state: self.prior_state.as_deref(),
            likelihood: &self.likelihood,
            energies: self
                .cached
                .as_ref()
                .map(|m| (&m.x_energy[..], &m.z_energy[..])),
            precision: &self.likelihood_precision(),
            preconditioned: self.precision.is_some(),
            deltas: &deltas,
        };
        mh_terms::mh_terms_with(
            &current,
            &proposal,
            (d, p),
            &model,
            kinetic.then_some(&kinetic_terms),
        )
    }
}

impl CpuBackend {
    /// X's cached residual, gradient (and the cached-energy targets' terms) from X and the prior's
    /// current state: the one path loading positions, resuming and the prior's update share, so
    /// a resumed run's gradients are bit for bit an uninterrupted run's.
    fn refresh_current(&mut self) {
        let (mut residual, mut gradient) = (
            std::mem::take(&mut self.x_residual),
            std::mem::take(&mut self.x_gradient),
        );
        let mut cached = self.cached.take();
        let out = cached
            .as_mut()
            .map(|m| (&mut m.x_energy[..], &mut m.x_scaled[..]));
        self.residual_and_gradient(&self.x, &mut residual, &mut gradient, out);
        self.cached = cached;
        self.x_residual = residual;
        self.x_gradient = gradient;
    }
}

/// "CPU, 1 thread" or "CPU, N threads": the rayon pool the CPU backends run on, for reports.
pub(crate) fn cpu_threads() -> String {
    match rayon::current_num_threads() {
        1 => "CPU, 1 thread".into(),
        n => format!("CPU, {n} threads"),
    }
}

impl Backend for CpuBackend {
    fn info(&self) -> BackendInfo {
        let (d, p) = (self.target.d(), self.target.p());
        BackendInfo {
            kind: "cpu".into(),
            device: format!("{}, {} products", cpu_threads(), self.cpu_path.name()),
            // A caching likelihood adds its scaled residuals (2d) and energies (2), and its
            // per-chain data (the tangent target's k directions and shrinkages).
            bytes_per_chain: 4 * (5 * p + 5 * d)
                + if self.cached.is_some() {
                    4 * (2 * d + 2)
                } else {
                    0
                }
                + self.likelihood.reported_chain_bytes(),
        }
    }

    fn chains(&self) -> usize {
        self.chains
    }

    fn load_positions(&mut self, positions: &[f32]) -> Result<()> {
        if positions.len() != self.x.len() {
            return Err(Error::Internal(format!(
                "load_positions: {} values for {} chains of {} atoms",
                positions.len(),
                self.chains,
                self.target.p()
            )));
        }
        self.x.copy_from_slice(positions);
        self.refresh_current();
        Ok(())
    }

    fn propose(&mut self, outer: u32) -> Result<Vec<MhTerms>> {
        let mut terms = None;
        for op in self.settings.method.program(&self.settings) {
            terms = self.apply(op, outer).or(terms);
        }
        terms.ok_or_else(|| Error::Internal("a method's program ended without MH terms".into()))
    }

    fn accept(&mut self, accepted: &[bool]) -> Result<()> {
        let (d, p) = (self.target.d(), self.target.p());
        select::select(accepted, &self.z, &mut self.x, p);
        select::select(accepted, &self.z_gradient, &mut self.x_gradient, p);
        select::select(accepted, &self.z_residual, &mut self.x_residual, d);
        if let Some(m) = &mut self.cached {
            select::select(accepted, &m.z_scaled, &mut m.x_scaled, d);
            select::select(accepted, &m.z_energy, &mut m.x_energy, 1);
        }
        Ok(())
    }

    fn positions(&mut self) -> Result<Vec<f32>> {
        Ok(self.x.clone())
    }

    fn images(&mut self) -> Result<Vec<f32>> {
        Ok(self
            .x_residual
            .iter()
            .zip(&self.xbar_rows)
            .map(|(r, m)| r + m)
            .collect())
    }

    super::offers_every_capability!();
}

impl Tuning for CpuBackend {
    fn set_step_size(&mut self, eta: f32) -> Result<()> {
        self.settings.eta = eta;
        self.chain_steps = None;
        Ok(())
    }

    fn set_chain_step_sizes(&mut self, steps: &[f32]) -> Result<()> {
        super::check_chain_steps(steps, self.chains, self.settings.method)?;
        self.chain_steps = Some(steps.to_vec());
        Ok(())
    }

    fn set_leapfrog_steps(&mut self, steps: u32) -> Result<()> {
        self.settings.leapfrog_steps = steps;
        Ok(())
    }

    fn proposals(&mut self) -> Result<(Vec<f32>, Vec<f32>)> {
        Ok((self.z.clone(), self.momentum.clone()))
    }
}

impl ModelState for CpuBackend {
    fn prior_update(&mut self, outer: u32) -> Result<Vec<u32>> {
        let (d, p) = (self.target.d(), self.target.p());
        let Some(mut state) = self.prior_state.take() else {
            return Err(Error::Internal(
                "prior_update: the prior has no adaptive state".into(),
            ));
        };
        self.timed(CpuPhase::PriorUpdate, |b| {
            let prior = b.target.prior;
            let status = prior.update_state(outer, &mut state, &b.x, &b.x_residual, (d, p));
            b.prior_state = Some(state);
            b.refresh_current();
            status
        })
    }

    fn prior_state(&mut self) -> Result<Option<Vec<f32>>> {
        Ok(self.prior_state.clone())
    }

    fn load_prior_state(&mut self, state: &[f32]) -> Result<()> {
        if let Some(i) = state.iter().position(|v| !v.is_finite()) {
            return Err(Error::Internal(format!(
                "load_prior_state: value {i} is {} (the prior's state must be finite)",
                state[i]
            )));
        }
        match &mut self.prior_state {
            Some(s) if s.len() == state.len() => s.copy_from_slice(state),
            _ => {
                return Err(Error::Internal(format!(
                    "load_prior_state: {} values, the backend holds {:?}",
                    state.len(),
                    self.prior_state.as_ref().map(Vec::len)
                )))
            }
        }
        self.refresh_current();
        Ok(())
    }

    fn set_noise_precision(&mut self, precision: &[f32]) -> Result<()> {
        super::check_precision(precision, self.chains, &self.likelihood)?;
        self.precision = Some(precision.to_vec());
        self.refresh_current();
        Ok(())
    }

    fn noise_precision(&mut self) -> Result<Option<Vec<f32>>> {
        Ok(self.precision.clone())
    }
}

impl Encode for CpuBackend {
    fn encode(&mut self, images: &[f32], lam: f32, iterations: u32) -> Result<Vec<f32>> {
        let never = || false;
        let codes = self.encode_or_stop(images, lam, iterations, &never)?;
        codes.ok_or_else(|| crate::Error::Internal("an encoding that cannot stop stopped".into()))
    }

    fn encode_or_stop(
        &mut self,
        images: &[f32],
        lam: f32,
        iterations: u32,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Vec<f32>>> {
        let (d, p) = (self.target.d(), self.target.p());
        let tolerance = self.lasso_tolerance;
        // With a tolerance, ADMM with the exact quadratic step where the d × d inverse is
        // small; FISTA with the gap stop beyond (and with none, FISTA's fixed iterations).
        let admm = tolerance > 0.0 && d <= lasso_admm::MAX_ROWS;
        if admm && self.admm_factor.is_none() {
            let factor = lasso_admm::Factor::new(&self.target.dictionary.a, d, p);
            self.admm_factor = Some(factor);
        }
        let encoded = match &self.admm_factor {
            Some(Some(factor)) if admm => {
                let problem = (&self.a_packed, factor, d, p);
                lasso_admm::encode_or_stop(problem, images, lam, iterations, tolerance, stop)
            }
            // The factor failed (a NaN in A), or no tolerance or too many rows: FISTA.
            _ => {
                let lipschitz = self.lipschitz();
                let problem = (&self.a_packed, d, p, lipschitz);
                fista::encode_until_or_stop(problem, images, lam, iterations, tolerance, stop)
            }
        };
        Ok(encoded.map(|(codes, stats)| {
            self.encode_stats.add(&stats);
            codes
        }))
    }

    fn set_lasso_tolerance(&mut self, tolerance: f32) {
        self.lasso_tolerance = tolerance;
    }

    fn encode_stats(&self) -> Option<fista::EncodeStats> {
        Some(self.encode_stats)
    }
}
