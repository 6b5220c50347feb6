//! One group of chains: its device buffers, bind groups built once, and its recorded phases.

use std::sync::Arc;

use super::buffers::{storage, upload, ParamSlots, SlotLayout};
use super::context::GpuContext;
use super::kernels::{
    exact, gather, likelihood, matmul, select, ExactParams, GatherParams, Kernels, Launch,
    LikelihoodParams, MatmulParams, SelectParams, Slots, Stream,
};
use crate::methods::ChainOp;
use crate::{Error, Result};

/// MH terms per chain in the `terms` buffer (energy, difference, forward, reverse, kinetic).
pub const TERMS: usize = crate::backend::MhTerms::WORDS;

/// Shared, read-only device data every group binds.
pub struct Shared {
    /// A, d × p.
    pub dict: wgpu::Buffer,
    /// The dataset (see `upload_observations`).
    pub data: wgpu::Buffer,
    /// (first row, count) of the rows each chain draws from, two words per global chain.
    pub chain_rows: wgpu::Buffer,
    /// The prior's params (`prior_params`; 4 unread bytes for a prior without).
    pub prior_params: wgpu::Buffer,
    /// The likelihood's params (`likelihood_params`; 4 unread bytes for a likelihood without).
    pub likelihood_params: wgpu::Buffer,
    /// The pipelines compiled with the target's prior and likelihood.
    pub kernels: Arc<Kernels>,
}

/// What a group of chains is made of: its place among the backend's chains, its shape, and its
/// slices of the model's per-chain data.
pub struct GroupSpec<'a> {
    /// Global index of the first chain (within the backend).
    pub offset: usize,
    /// Chains in the group.
    pub chains: usize,
    /// Observation dimension d and code dimension p.
    pub shape: (usize, usize),
    /// Minibatch steps per outer iteration (T): the params slots.
    pub steps: u32,
    /// Each chain's offset, the row its residual subtracts (chains × d).
    pub offsets: &'a [f32],
    /// The likelihood's passes and per-chain data.
    pub likelihood: GroupLikelihood<'a>,
    /// The prior's latent state of the group's chains, and the bytes of its update's params.
    pub prior_state: Option<(&'a [f32], usize)>,
    /// The precision every chain starts with (1/σ², or 1 where the residuals arrive scaled).
    pub precision: f32,
}

/// What a group runs and uploads of the likelihood.
#[derive(Clone, Copy)]
pub struct GroupLikelihood<'a> {
    /// A step's residual subtracts the gathered minibatch mean (else the offset).
    pub gathers: bool,
    /// A step's residual goes through the likelihood's step pass.
    pub has_step: bool,
    /// States keep cached energies and scaled residuals (the likelihood's energy pass).
    pub caches_energy: bool,
    /// The group's rows of the likelihood's per-chain data.
    pub chains: Option<&'a [u8]>,
    /// Words of per-chain scratch.
    pub scratch_words: usize,
}

/// Chains `offset..offset + chains`, resident on the device.
pub struct ChainGroup {
    /// Global index of the first chain.
    pub offset: usize,
    /// Chains in the group.
    pub chains: usize,
    /// Positions X, chains × p.
    pub x: wgpu::Buffer,
    /// Residuals A X − offset, chains × d.
    pub residual_x: wgpu::Buffer,
    /// MH terms, TERMS per chain.
    pub terms: wgpu::Buffer,
    /// Accept mask, one word per chain.
    pub mask: wgpu::Buffer,
    z: wgpu::Buffer,
    /// The momentum r (after a proposal: HMC's r_L), chains × p.
    momentum: wgpu::Buffer,
    gradient_x: wgpu::Buffer,
    gradient_z: wgpu::Buffer,
    /// Minibatch steps per outer iteration (T).
    steps: usize,
    /// A step's residual subtracts the gathered minibatch mean.
    gathers: bool,
    slots: ParamSlots,
    sections: Sections,
    kernels: Arc<Kernels>,
    binds: Vec<Launch>,
    /// The likelihood's passes, for one that caches its energies.
    cached: Option<CachedLaunches>,
    /// The prior's latent state of the group's chains and its update's buffers.
    pub prior: Option<PriorState>,
    /// The likelihood's precision per chain (1/σ², or τ with `--noise gibbs`), read by the
    /// gradient steps, the full gradients and the MH terms.
    pub precision: wgpu::Buffer,
}

/// A stateful prior's device buffers for one group: the latent state the gradient steps, full
/// gradients and MH terms read (`Prior::state_width(p)` values per chain), the update's params
/// uniform and its per-chain status words.
pub struct PriorState {
    /// The latent state, chains × `Prior::state_width(p)`.
    pub state: wgpu::Buffer,
    /// The update's params (written before each update).
    pub params: wgpu::Buffer,
    /// Per chain: 1 when its last update was not finite (it kept its state), else 0.
    pub status: wgpu::Buffer,
}

/// The values the dynamics' kernels read that the backend fixes for a run; each family's params
/// take their part (`ChainGroup::write_params`).
#[derive(Clone, Copy, Debug)]
pub struct Constants {
    /// The run's seed.
    pub seed: u64,
    /// Global index of the backend's first chain (a shard's; 0 otherwise).
    pub chain_offset: u32,
    /// Observation dimension d.
    pub d: u32,
    /// Code dimension p.
    pub p: u32,
    /// Minibatch size m.
    pub batch: u32,
    /// 1: data packed 4 bytes per word; 0: f32 bits.
    pub u8_data: u32,
    /// scale / m, rounded on the host like the CPU.
    pub gather_factor: f32,
    /// Step size eta (epsilon for HMC, h for MALA).
    pub eta: f32,
    /// 1: inject SGHMC noise.
    pub noise: u32,
    /// sqrt(2 eta), rounded on the host like the CPU.
    pub noise_scale: f32,
    /// Delta of the MH proposal norms.
    pub delta: f32,
    /// 1: the MH terms add HMC's kinetic difference.
    pub kinetic: u32,
    /// 1: `--noise gibbs`: the precision buffers hold √τ and the moves are preconditioned.
    pub preconditioned: u32,
}

/// The group's params slots by family: per step (slot s for step s, 0..=T) for the families
/// whose WGSL reads the step (the likelihood's MH terms read slot 0), one slot for the others.
struct Sections {
    gather: Slots<GatherParams>,
    matmul: Slots<MatmulParams>,
    likelihood: Slots<LikelihoodParams>,
    select: Slots<SelectParams>,
    exact: Slots<ExactParams>,
}

/// A caching likelihood's passes: its step residual (None without a step pass), its energies at
/// Z and at X, and the selection of the energies and scaled residuals.
struct CachedLaunches {
    step: Option<Launch>,
    energy_z: Launch,
    energy_x: Launch,
    select: Launch,
}

/// Bind groups by role (several roles share a kernel).
#[derive(Clone, Copy)]
enum Role {
    Gather,
    StepResidual,
    Momentum,
    Step,
    ResidualZ,
    GradientZ,
    ResidualX,
    GradientX,
    Mh,
    Select,
    Mala,
    Drift,
    Kick,
}

/// The group's per-chain buffers (rows of p, of d, of a word or TERMS) and its uploads.
struct Buffers {
    x: wgpu::Buffer,
    z: wgpu::Buffer,
    gx: wgpu::Buffer,
    gz: wgpu::Buffer,
    momentum: wgpu::Buffer,
    rx: wgpu::Buffer,
    rz: wgpu::Buffer,
    ybar: wgpu::Buffer,
    step_residual: wgpu::Buffer,
    terms: wgpu::Buffer,
    mask: wgpu::Buffer,
    /// Each chain's offset.
    xbar: wgpu::Buffer,
    precision: wgpu::Buffer,
}

/// A caching likelihood's buffers: energies (a word per chain) and scaled residuals (rows of d)
/// at X and at Z, and the group's per-chain data and scratch.
struct CachedBuffers {
    ex: wgpu::Buffer,
    ez: wgpu::Buffer,
    sx: wgpu::Buffer,
    sz: wgpu::Buffer,
    chains: Option<wgpu::Buffer>,
    scratch: Option<wgpu::Buffer>,
}

impl Buffers {
    fn new(context: &GpuContext, spec: &GroupSpec) -> Buffers {
        let (d, p) = spec.shape;
        let rows =
            |label: &str, width: usize| storage(context, label, (4 * spec.chains * width) as u64);
        Buffers {
            x: rows("X", p),
            z: rows("Z", p),
            gx: rows("grad X", p),
            gz: rows("grad Z", p),
            momentum: rows("r", p),
            rx: rows("res X", d),
            rz: rows("res Z", d),
            ybar: rows("Ybar", d),
            step_residual: rows("step res", d),
            terms: rows("MH terms", TERMS),
            mask: rows("mask", 1),
            xbar: upload(context, "offset rows", bytemuck::cast_slice(spec.offsets)),
            // The likelihood's precision per chain, until a learned one is set
            // (`ModelState::set_noise_precision`).
            precision: upload(
                context,
                "precision",
                bytemuck::cast_slice(&vec![spec.precision; spec.chains]),
            ),
        }
    }
}

impl CachedBuffers {
    fn new(context: &GpuContext, spec: &GroupSpec) -> Option<CachedBuffers> {
        let l = spec.likelihood;
        if !l.caches_energy {
            return None;
        }
        let d = spec.shape.0;
        let rows =
            |label: &str, width: usize| storage(context, label, (4 * spec.chains * width) as u64);
        Some(CachedBuffers {
            ex: rows("energy X", 1),
            ez: rows("energy Z", 1),
            sx: rows("scaled X", d),
            sz: rows("scaled Z", d),
            chains: l
                .chains
                .map(|bytes| upload(context, "likelihood chains", bytes)),
            scratch: (l.scratch_words > 0).then(|| rows("likelihood scratch", l.scratch_words)),
        })
    }
}

impl ChainGroup {
    /// Allocates the group's buffers and bind groups (`spec`: its chains, its shape, its steps
    /// and its slices of the model's per-chain data).
    pub fn new(context: &GpuContext, shared: &Shared, spec: &GroupSpec) -> ChainGroup {
        let b = Buffers::new(context, spec);
        let cached = CachedBuffers::new(context, spec);
        let prior = spec.prior_state.map(|(state, params_bytes)| PriorState {
            state: upload(context, "prior state", bytemuck::cast_slice(state)),
            params: context.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("prior update params"),
                size: params_bytes.max(16) as u64,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            status: storage(context, "prior status", (4 * spec.chains) as u64),
        });
        let per_step = spec.steps as usize + 1;
        let mut layout = SlotLayout::new(context);
        let sections = Sections {
            gather: layout.per_step(per_step),
            matmul: layout.per_step(per_step),
            likelihood: layout.per_step(per_step),
            select: layout.once(),
            exact: layout.once(),
        };
        let slots = layout.build(context);
        let binder = Binder {
            kernels: &shared.kernels,
            device: &context.device,
            slots: &slots,
            sections: &sections,
            shared,
            shape: spec.shape,
        };
        // The pipelines built without the prior's state drop this binding: X stands in there.
        let prior_state = prior.as_ref().map_or(&b.x, |s| &s.state);
        let binds =
            binder.chain_launches(&b, cached.as_ref(), prior_state, spec.likelihood.gathers);
        let cached_launches = cached
            .as_ref()
            .map(|c| binder.cached_launches(&b, c, spec.likelihood.has_step));
        ChainGroup {
            offset: spec.offset,
            chains: spec.chains,
            x: b.x,
            residual_x: b.rx,
            terms: b.terms,
            mask: b.mask,
            z: b.z,
            momentum: b.momentum,
            gradient_x: b.gx,
            gradient_z: b.gz,
            steps: spec.steps as usize,
            gathers: spec.likelihood.gathers,
            slots,
            sections,
            kernels: shared.kernels.clone(),
            binds,
            cached: cached_launches,
            prior,
            precision: b.precision,
        }
    }

    /// The proposals Z and their momenta r (HMC's r_L after a proposal), each chains × p.
    pub fn proposal_buffers(&self) -> (&wgpu::Buffer, &wgpu::Buffer) {
        (&self.z, &self.momentum)
    }

    /// The group's prior state buffers (an internal error for a prior without state).
    pub fn prior(&self) -> Result<&PriorState> {
        self.prior
            .as_ref()
            .ok_or_else(|| Error::Internal("the chain group keeps no prior state".into()))
    }

    /// Writes every family's params slots for outer iteration `outer`, in one queue write.
    pub fn write_params(&self, context: &GpuContext, c: &Constants, outer: u32) {
        let stream = Stream::new(c.seed, c.chain_offset + self.offset as u32, outer);
        let s = &self.sections;
        let mut writer = self.slots.writer();
        writer
            .set_all(s.gather, |step| GatherParams {
                stream,
                d: c.d,
                batch: c.batch,
                step: step as u32,
                u8_data: c.u8_data,
                gather_factor: c.gather_factor,
                ..Default::default()
            })
            .set_all(s.matmul, |step| MatmulParams {
                stream,
                chains: self.chains as u32,
                d: c.d,
                p: c.p,
                // One offset row per chain, and one Ybar row.
                y_stride: c.d,
                step: step as u32,
                noise: c.noise,
                eta: c.eta,
                noise_scale: c.noise_scale,
                preconditioned: c.preconditioned,
                ..Default::default()
            })
            .set_all(s.likelihood, |step| LikelihoodParams {
                stream,
                d: c.d,
                p: c.p,
                batch: c.batch,
                step: step as u32,
                u8_data: c.u8_data,
                kinetic: c.kinetic,
                delta: c.delta,
                preconditioned: c.preconditioned,
            })
            .set(
                s.select,
                0,
                SelectParams {
                    d: c.d,
                    p: c.p,
                    ..Default::default()
                },
            )
            .set(
                s.exact,
                0,
                ExactParams {
                    stream,
                    p: c.p,
                    eta: c.eta,
                    noise_scale: c.noise_scale,
                    preconditioned: c.preconditioned,
                },
            );
        writer.finish(context);
    }

    fn run(&self, pass: &mut wgpu::ComputePass, role: Role, step: usize, groups: [u32; 3]) {
        self.kernels
            .dispatch(pass, &self.binds[role as usize], step, groups);
    }

    /// Runs one of a caching likelihood's passes (one workgroup per chain); nothing otherwise.
    fn run_cached(
        &self,
        pass: &mut wgpu::ComputePass,
        pick: impl for<'a> Fn(&'a CachedLaunches) -> Option<&'a Launch>,
        step: usize,
        groups: [u32; 3],
    ) {
        if let Some(launch) = self.cached.as_ref().and_then(pick) {
            self.kernels.dispatch(pass, launch, step, groups);
        }
    }

    /// Z's residual (with a caching likelihood's energy and scaled residual) and gradient.
    fn record_state_z(&self, pass: &mut wgpu::ComputePass, d: usize, p: usize) {
        self.record_state(pass, d, p, (Role::ResidualZ, false, Role::GradientZ));
    }

    /// The residual, the likelihood's energy pass (at X when `at_x`, else at Z) and the full
    /// gradient of X or of Z.
    fn record_state(
        &self,
        pass: &mut wgpu::ComputePass,
        d: usize,
        p: usize,
        (residual, at_x, gradient): (Role, bool, Role),
    ) {
        let chains = self.chains as u32;
        let products = |columns| self.kernels.product_groups(self.chains, columns);
        self.run(pass, residual, 0, products(d));
        let energy_pass = [chains, 1, 1];
        match at_x {
            true => self.run_cached(pass, |c| Some(&c.energy_x), 0, energy_pass),
            false => self.run_cached(pass, |c| Some(&c.energy_z), 0, energy_pass),
        }
        self.run(pass, gradient, 0, products(p));
    }

    /// Residual and full gradient at X (after positions were written).
    pub fn record_current(&self, pass: &mut wgpu::ComputePass, d: usize, p: usize) {
        self.record_state(pass, d, p, (Role::ResidualX, true, Role::GradientX));
    }

    /// Records a copy op of a method's program (`ChainOp::CopyPosition`, `CopyGradient`) into
    /// `encoder`, before the pass that runs the rest; false for any other op.
    pub fn record_copy(&self, encoder: &mut wgpu::CommandEncoder, op: ChainOp) -> bool {
        let (from, to) = match op {
            ChainOp::CopyPosition => (&self.x, &self.z),
            ChainOp::CopyGradient => (&self.gradient_x, &self.gradient_z),
            _ => return false,
        };
        encoder.copy_buffer_to_buffer(from, 0, to, 0, from.size());
        true
    }

    /// Records one pass op of a method's program (every `ChainOp` but the copies).
    ///
    /// Fails (`Error::Internal`) for a copy, or a minibatch step outside 1..=T (the T the group
    /// was built for: its params slots).
    pub fn record_op(
        &self,
        pass: &mut wgpu::ComputePass,
        op: ChainOp,
        d: usize,
        p: usize,
    ) -> Result<()> {
        let chains = self.chains as u32;
        let pg = (p as u32).div_ceil(64);
        let blocks = [(p as u32).div_ceil(4).div_ceil(64), chains, 1];
        match op {
            ChainOp::DrawMomentum => self.run(pass, Role::Momentum, 0, blocks),
            ChainOp::MinibatchStep(step) => self.record_step(pass, step as usize, d, p)?,
            ChainOp::LangevinProposal => self.run(pass, Role::Mala, 0, blocks),
            ChainOp::LeapfrogDrift => self.run(pass, Role::Drift, 0, [pg, chains, 1]),
            ChainOp::LeapfrogKick => self.run(pass, Role::Kick, 0, [pg, chains, 1]),
            ChainOp::ProposalState => self.record_state_z(pass, d, p),
            // The kinetic difference follows `Constants::kinetic`, set by the caller from this op.
            ChainOp::MhTerms { .. } => self.run(pass, Role::Mh, 0, [chains, 1, 1]),
            ChainOp::CopyPosition | ChainOp::CopyGradient => {
                return Err(Error::Internal(format!(
                    "{op:?} inside a compute pass: copies must open a method's program"
                )))
            }
        }
        Ok(())
    }

    /// Minibatch step `step` (1..=T): the gathered minibatch mean (a likelihood that gathers;
    /// the others' step product subtracts their offset), R = A Z − Y, the likelihood's step
    /// pass, and the fused gradient step.
    fn record_step(
        &self,
        pass: &mut wgpu::ComputePass,
        step: usize,
        d: usize,
        p: usize,
    ) -> Result<()> {
        if step == 0 || step > self.steps {
            return Err(Error::Internal(format!(
                "minibatch step {step} outside the {} steps the chain group was built for",
                self.steps
            )));
        }
        let chains = self.chains as u32;
        let products = |columns| self.kernels.product_groups(self.chains, columns);
        if self.gathers {
            let dg = (d as u32).div_ceil(64);
            self.run(pass, Role::Gather, step, [dg, chains, 1]);
        }
        self.run(pass, Role::StepResidual, step, products(d));
        self.run_cached(pass, |c| c.step.as_ref(), step, [chains, 1, 1]);
        self.run(pass, Role::Step, step, products(p));
        Ok(())
    }

    /// X ← Z where the mask (already written) says so.
    pub fn record_select(&self, pass: &mut wgpu::ComputePass, d: usize, p: usize) {
        let width = d.max(p) as u32;
        let chains = self.chains as u32;
        self.run(pass, Role::Select, 0, [width.div_ceil(64), chains, 1]);
        let groups = [(d as u32).div_ceil(64), chains, 1];
        self.run_cached(pass, |c| Some(&c.select), 0, groups);
    }
}

/// What binding a group's launches needs: the pipelines, the device, the params slots, the shared
/// buffers and the shape.
struct Binder<'a> {
    kernels: &'a Kernels,
    device: &'a wgpu::Device,
    slots: &'a ParamSlots,
    sections: &'a Sections,
    shared: &'a Shared,
    shape: (usize, usize),
}

impl Binder<'_> {
    /// The launches by `Role`: the step's, the states' and the method's kernels.
    fn chain_launches(
        &self,
        b: &Buffers,
        cached: Option<&CachedBuffers>,
        prior_state: &wgpu::Buffer,
        gathers: bool,
    ) -> Vec<Launch> {
        let (k, dev, s, sc, shared, shape) = (
            self.kernels,
            self.device,
            self.slots,
            self.sections,
            self.shared,
            self.shape,
        );
        // The full gradients read a caching likelihood's scaled residuals, else the residuals.
        let (gradient_in_x, gradient_in_z) = match cached {
            Some(c) => (&c.sx, &c.sz),
            None => (&b.rx, &b.rz),
        };
        // A step's residual subtracts the gathered Ybar, or the chain's offset.
        let step_y = if gathers { &b.ybar } else { &b.xbar };
        let gradient_step = matmul::GradientStepBuffers {
            dict: &shared.dict,
            lhs: &b.step_residual,
            position: &b.z,
            momentum: &b.momentum,
            chain_precision: &b.precision,
            prior_state,
            prior_params: &shared.prior_params,
        };
        let full_gradient = |lhs, out, position| matmul::FullGradientBuffers {
            dict: &shared.dict,
            lhs,
            out,
            position,
            chain_precision: &b.precision,
            prior_state,
            prior_params: &shared.prior_params,
        };
        let residual = |lhs, y, out| matmul::ResidualProductBuffers {
            dict: &shared.dict,
            lhs,
            y,
            out,
        };
        vec![
            gather::GatherBuffers {
                data: &shared.data,
                ybar: &b.ybar,
                chain_rows: &shared.chain_rows,
            }
            .bind(k, dev, s, sc.gather),
            residual(&b.z, step_y, &b.step_residual).bind(k, dev, s, sc.matmul, shape),
            matmul::DrawMomentumBuffers {
                momentum: &b.momentum,
            }
            .bind(k, dev, s, sc.matmul),
            gradient_step.bind(k, dev, s, sc.matmul, shape),
            residual(&b.z, &b.xbar, &b.rz).bind(k, dev, s, sc.matmul, shape),
            full_gradient(gradient_in_z, &b.gz, &b.z).bind(k, dev, s, sc.matmul, shape),
            residual(&b.x, &b.xbar, &b.rx).bind(k, dev, s, sc.matmul, shape),
            full_gradient(gradient_in_x, &b.gx, &b.x).bind(k, dev, s, sc.matmul, shape),
            self.mh_launch(b, cached, prior_state),
            select::SelectBuffers {
                accepted: &b.mask,
                z: &b.z,
                x: &b.x,
                gradient_z: &b.gz,
                gradient_x: &b.gx,
                residual_z: &b.rz,
                residual_x: &b.rx,
            }
            .bind(k, dev, s, sc.select),
            exact::MalaProposalBuffers {
                x: &b.x,
                gradient: &b.gx,
                z: &b.z,
                chain_precision: &b.precision,
            }
            .bind(k, dev, s, sc.exact),
            exact::LeapfrogDriftBuffers {
                gradient: &b.gz,
                z: &b.z,
                momentum: &b.momentum,
                chain_precision: &b.precision,
            }
            .bind(k, dev, s, sc.exact),
            exact::LeapfrogKickBuffers {
                gradient: &b.gz,
                momentum: &b.momentum,
            }
            .bind(k, dev, s, sc.exact),
        ]
    }

    /// The MH terms' launch: a likelihood without cached energies binds X in their place
    /// (its WGSL reads the residuals instead).
    fn mh_launch(
        &self,
        b: &Buffers,
        cached: Option<&CachedBuffers>,
        prior_state: &wgpu::Buffer,
    ) -> Launch {
        let (energy_x, energy_z) = match cached {
            Some(c) => (&c.ex, &c.ez),
            None => (&b.x, &b.x),
        };
        likelihood::MhTermsBuffers {
            x: &b.x,
            z: &b.z,
            residual_x: &b.rx,
            residual_z: &b.rz,
            gradient_x: &b.gx,
            gradient_z: &b.gz,
            terms: &b.terms,
            momentum: &b.momentum,
            energy_x,
            energy_z,
            chain_precision: &b.precision,
            prior_state,
            prior_params: &self.shared.prior_params,
        }
        .bind(
            self.kernels,
            self.device,
            self.slots,
            self.sections.likelihood,
        )
    }

    /// A caching likelihood's launches (the buffers it does not declare stand in as X).
    fn cached_launches(&self, b: &Buffers, c: &CachedBuffers, has_step: bool) -> CachedLaunches {
        let (k, dev, s, sc, shared) = (
            self.kernels,
            self.device,
            self.slots,
            self.sections,
            self.shared,
        );
        let chains = c.chains.as_ref().unwrap_or(&b.x);
        let scratch = c.scratch.as_ref().unwrap_or(&b.x);
        let energy = |at, energy, scaled| {
            likelihood::LikelihoodEnergyBuffers {
                data: &shared.data,
                likelihood_params: &shared.likelihood_params,
                likelihood_chains: chains,
                likelihood_scratch: scratch,
                at,
                energy,
                scaled,
            }
            .bind(k, dev, s, sc.likelihood)
        };
        CachedLaunches {
            step: has_step.then(|| {
                likelihood::LikelihoodStepBuffers {
                    data: &shared.data,
                    likelihood_params: &shared.likelihood_params,
                    likelihood_chains: chains,
                    likelihood_scratch: scratch,
                    step_residual: &b.step_residual,
                }
                .bind(k, dev, s, sc.likelihood)
            }),
            energy_z: energy(&b.rz, &c.ez, &c.sz),
            energy_x: energy(&b.rx, &c.ex, &c.sx),
            select: select::SelectCachedBuffers {
                accepted: &b.mask,
                energy_z: &c.ez,
                energy_x: &c.ex,
                scaled_z: &c.sz,
                scaled_x: &c.sx,
            }
            .bind(k, dev, s, sc.select),
        }
    }
}
