//! One group of chains: its device buffers, bind groups built once, and its recorded phases.

use super::buffers::{storage, ParamSlots, SlotLayout};
use super::context::GpuContext;
use std::sync::Arc;

use super::kernels::{
    exact, gather, kernel_hmc, matmul, mh_terms, select, tangent, ExactParams, GatherParams,
    KernelHmcParams, Kernels, Launch, MatmulParams, MhTermsParams, SelectParams, Slots, Stream,
    TangentParams,
};
use crate::backend::kernel_hmc::ChainInfo;
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
    /// The pipelines compiled with the target's prior.
    pub kernels: Arc<Kernels>,
}

/// Chains `offset..offset + chains`, resident on the device.
pub struct ChainGroup {
    /// Global index of the first chain.
    pub offset: usize,
    /// Chains in the group.
    pub chains: usize,
    /// Positions X, chains × p.
    pub x: wgpu::Buffer,
    /// Residuals A X − xbar, chains × d.
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
    slots: ParamSlots,
    sections: Sections,
    kernels: Arc<Kernels>,
    binds: Vec<Launch>,
    /// The mixture's or the tangent target's extra passes, indexed by `MixtureRole`.
    mixture: Option<Vec<Launch>>,
    /// The SSGL prior's latent state of the group's chains and its update's buffers.
    pub prior: Option<PriorState>,
    /// The likelihood's precision per chain (1/σ², or τ with `--noise gibbs`), read by the
    /// gradient steps, the full gradients and the MH terms.
    pub precision: wgpu::Buffer,
}

/// A stateful prior's (SSGL's) device buffers for one group: the latent state the gradient
/// steps, full gradients and MH terms read (`ssgl::stride(p)` values per chain), the update's
/// params uniform and its per-chain status words.
pub struct PriorState {
    /// The latent state, chains × `ssgl::stride(p)`.
    pub state: wgpu::Buffer,
    /// `SsglParams` of the update (written before each update).
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
    /// The prior's scalar (`Prior::gpu_scalar`).
    pub lam: f32,
    /// Step size eta (epsilon for HMC, h for MALA).
    pub eta: f32,
    /// 1: inject SGHMC noise.
    pub noise: u32,
    /// sqrt(2 eta), rounded on the host like the CPU.
    pub noise_scale: f32,
    /// Delta of the MH proposal norms.
    pub delta: f32,
    /// 1/σ² (1 where the residuals arrive scaled: mixture, tangent).
    pub inv_sigma2: f32,
    /// 1: the MH terms add HMC's kinetic difference.
    pub kinetic: u32,
    /// 1: `--noise gibbs`: the precision buffers hold √τ and the moves are preconditioned.
    pub preconditioned: u32,
}

/// The group's params slots by family: per step (slot s for step s, 0..=T) for the families
/// whose WGSL reads the step, one slot for the others.
struct Sections {
    gather: Slots<GatherParams>,
    matmul: Slots<MatmulParams>,
    mh: Slots<MhTermsParams>,
    select: Slots<SelectParams>,
    exact: Slots<ExactParams>,
    /// The cached-energy targets' kernel-HMC passes: per step for the mixture (its step
    /// residual), one slot for the tangent target (only its select).
    kernel_hmc: Option<Slots<KernelHmcParams>>,
    tangent: Option<Slots<TangentParams>>,
}

/// What a cached-energy target's group uploads: the mixture's chain info and minibatch size, or
/// the tangent target's directions (chains × k × d), shrinkages (chains × k), k and 1/σ².
pub enum CachedEnergy<'a> {
    Mixture(&'a [ChainInfo], u32),
    Tangent {
        basis: &'a [f32],
        gamma: &'a [f32],
        k: u32,
        inv_sigma2: f32,
    },
}

/// The cached-energy targets' passes: the step residual (the mixture's minibatch softmax, the
/// tangent target's C⁻¹), the energies at Z and at X, and the selection of the energies and
/// scaled residuals.
#[derive(Clone, Copy)]
enum MixtureRole {
    Step,
    EnergyZ,
    EnergyX,
    Select,
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

impl ChainGroup {
    /// Allocates the group's buffers and bind groups; `steps` (T) fixes the params slots, and
    /// `xbar_rows` holds the mean of each of the group's chains (its class's, or xbar; zero for
    /// the mixture target, whose residual buffers hold A X; the anchors for the tangent target,
    /// whose step residuals are A Z − a, never gathered). `cached` is given for those two.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        context: &GpuContext,
        shared: &Shared,
        d: usize,
        p: usize,
        offset: usize,
        chains: usize,
        steps: u32,
        xbar_rows: &[f32],
        cached: Option<CachedEnergy>,
        prior_state: Option<&[f32]>,
        inv_sigma2: f32,
    ) -> ChainGroup {
        let rows = |label: &str, width: usize| storage(context, label, (4 * chains * width) as u64);
        let (x, z, gx, gz, momentum) = (
            rows("X", p),
            rows("Z", p),
            rows("grad X", p),
            rows("grad Z", p),
            rows("r", p),
        );
        let (rx, rz, ybar, step_residual) = (
            rows("res X", d),
            rows("res Z", d),
            rows("Ybar", d),
            rows("step res", d),
        );
        let (terms, mask) = (rows("MH terms", TERMS), rows("mask", 1));
        let xbar = super::buffers::upload(context, "xbar rows", bytemuck::cast_slice(xbar_rows));
        // The likelihood's precision per chain: 1/σ² (as the params' inv_sigma2) until a learned
        // one is set (`Backend::set_noise_precision`).
        let precision = super::buffers::upload(
            context,
            "precision",
            bytemuck::cast_slice(&vec![inv_sigma2; chains]),
        );
        let prior = prior_state.map(|state| PriorState {
            state: super::buffers::upload(context, "prior state", bytemuck::cast_slice(state)),
            params: context.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("ssgl params"),
                size: std::mem::size_of::<super::kernels::ssgl::SsglParams>() as u64,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            status: rows("prior status", 1),
        });
        // The kernels built without prior state drop this binding: X stands in for it there.
        let prior_state = prior.as_ref().map_or(&x, |s| &s.state);
        let per_step = steps as usize + 1;
        let mut layout = SlotLayout::new(context);
        let sections = Sections {
            gather: layout.per_step(per_step),
            matmul: layout.per_step(per_step),
            mh: layout.once(),
            select: layout.once(),
            exact: layout.once(),
            kernel_hmc: match &cached {
                Some(CachedEnergy::Mixture(..)) => Some(layout.per_step(per_step)),
                Some(CachedEnergy::Tangent { .. }) => Some(layout.once()),
                None => None,
            },
            tangent: match &cached {
                Some(CachedEnergy::Tangent { .. }) => Some(layout.once()),
                _ => None,
            },
        };
        let slots = layout.build(context);
        let k = &shared.kernels;
        let dev = &context.device;
        let s = &slots;
        let sc = &sections;
        // The products bind their vec4-load twins when the shapes allow (identical results).
        let shape = (d, p);
        // The cached energies and scaled residuals (the full gradients read these).
        let energies = cached.as_ref().map(|_| {
            (
                (rows("energy X", 1), rows("energy Z", 1)),
                (rows("scaled X", d), rows("scaled Z", d)),
            )
        });
        let (gradient_in_x, gradient_in_z) = match &energies {
            Some((_, (sx, sz))) => (sx, sz),
            None => (&rx, &rz),
        };
        let mixture_binds = match (&cached, &energies, sc.kernel_hmc) {
            (Some(cached), Some(((ex, ez), (sx, sz))), Some(hmc)) => {
                let select = kernel_hmc::KernelSelectBuffers {
                    accepted: &mask,
                    z: &rz,
                    x_out: &rx,
                    gradient_z: sz,
                    gradient_x_out: sx,
                    energy_z: ez,
                    energy_x_out: ex,
                }
                .bind(k, dev, s, hmc);
                Some(match cached {
                    CachedEnergy::Mixture(info, batch) => {
                        let batch = *batch as usize;
                        let info = super::buffers::upload(
                            context,
                            "mixture info",
                            bytemuck::cast_slice(info),
                        );
                        let (picks, weights) = (rows("picks", batch), rows("weights", batch));
                        let energy = |at: &wgpu::Buffer, e: &wgpu::Buffer, out: &wgpu::Buffer| {
                            kernel_hmc::KernelEnergyBuffers {
                                data: &shared.data,
                                chain_info: &info,
                                at,
                                energy: e,
                                gradient: out,
                            }
                            .bind(k, dev, s, hmc)
                        };
                        vec![
                            kernel_hmc::MixtureResidualBuffers {
                                data: &shared.data,
                                chain_info: &info,
                                picks: &picks,
                                weights: &weights,
                                step_image: &step_residual,
                            }
                            .bind(k, dev, s, hmc),
                            energy(&rz, ez, sz),
                            energy(&rx, ex, sx),
                            select,
                        ]
                    }
                    CachedEnergy::Tangent {
                        basis,
                        gamma,
                        k: directions,
                        inv_sigma2,
                    } => {
                        // Laid out above for this target: never None here.
                        let t = sc.tangent.expect("the tangent target's params slots");
                        let upload =
                            |label, data: &[u8]| super::buffers::upload(context, label, data);
                        let basis = upload("tangent basis", bytemuck::cast_slice(basis));
                        let gamma = upload("tangent gamma", bytemuck::cast_slice(gamma));
                        let info = upload(
                            "tangent info",
                            bytemuck::cast_slice(&[*directions, inv_sigma2.to_bits()]),
                        );
                        let energy = |at: &wgpu::Buffer, e: &wgpu::Buffer, out: &wgpu::Buffer| {
                            tangent::TangentEnergyBuffers {
                                basis: &basis,
                                gamma: &gamma,
                                tangent: &info,
                                residual: at,
                                energy: e,
                                scaled: out,
                            }
                            .bind(k, dev, s, t)
                        };
                        vec![
                            tangent::TangentStepBuffers {
                                basis: &basis,
                                gamma: &gamma,
                                tangent: &info,
                                step_residual: &step_residual,
                            }
                            .bind(k, dev, s, t),
                            energy(&rz, ez, sz),
                            energy(&rx, ex, sx),
                            select,
                        ]
                    }
                })
            }
            _ => None,
        };
        // The tangent target's step residual is A Z − a: its anchors, never a gathered Ybar.
        let step_y = match cached {
            Some(CachedEnergy::Tangent { .. }) => &xbar,
            _ => &ybar,
        };
        let mh = match &energies {
            Some(((ex, ez), _)) => mh_terms::MhTermsMixtureBuffers {
                x: &x,
                z: &z,
                gradient_x: &gx,
                gradient_z: &gz,
                terms: &terms,
                momentum: &momentum,
                energy_x: ex,
                energy_z: ez,
                prior_state,
            }
            .bind(k, dev, s, sc.mh),
            None => mh_terms::MhTermsBuffers {
                x: &x,
                z: &z,
                residual_x: &rx,
                residual_z: &rz,
                gradient_x: &gx,
                gradient_z: &gz,
                terms: &terms,
                momentum: &momentum,
                chain_precision: &precision,
                prior_state,
            }
            .bind(k, dev, s, sc.mh),
        };
        let binds = vec![
            gather::GatherBuffers {
                data: &shared.data,
                ybar: &ybar,
                chain_rows: &shared.chain_rows,
            }
            .bind(k, dev, s, sc.gather),
            matmul::ResidualProductBuffers {
                dict: &shared.dict,
                lhs: &z,
                y: step_y,
                out: &step_residual,
            }
            .bind(k, dev, s, sc.matmul, shape),
            matmul::DrawMomentumBuffers {
                momentum: &momentum,
            }
            .bind(k, dev, s, sc.matmul),
            matmul::GradientStepBuffers {
                dict: &shared.dict,
                lhs: &step_residual,
                position: &z,
                momentum: &momentum,
                chain_precision: &precision,
                prior_state,
            }
            .bind(k, dev, s, sc.matmul, shape),
            matmul::ResidualProductBuffers {
                dict: &shared.dict,
                lhs: &z,
                y: &xbar,
                out: &rz,
            }
            .bind(k, dev, s, sc.matmul, shape),
            matmul::FullGradientBuffers {
                dict: &shared.dict,
                lhs: gradient_in_z,
                out: &gz,
                position: &z,
                chain_precision: &precision,
                prior_state,
            }
            .bind(k, dev, s, sc.matmul, shape),
            matmul::ResidualProductBuffers {
                dict: &shared.dict,
                lhs: &x,
                y: &xbar,
                out: &rx,
            }
            .bind(k, dev, s, sc.matmul, shape),
            matmul::FullGradientBuffers {
                dict: &shared.dict,
                lhs: gradient_in_x,
                out: &gx,
                position: &x,
                chain_precision: &precision,
                prior_state,
            }
            .bind(k, dev, s, sc.matmul, shape),
            mh,
            select::SelectBuffers {
                accepted: &mask,
                z: &z,
                x: &x,
                gradient_z: &gz,
                gradient_x: &gx,
                residual_z: &rz,
                residual_x: &rx,
            }
            .bind(k, dev, s, sc.select),
            exact::MalaProposalBuffers {
                x: &x,
                gradient: &gx,
                z: &z,
                chain_precision: &precision,
            }
            .bind(k, dev, s, sc.exact),
            exact::LeapfrogDriftBuffers {
                gradient: &gz,
                z: &z,
                momentum: &momentum,
                chain_precision: &precision,
            }
            .bind(k, dev, s, sc.exact),
            exact::LeapfrogKickBuffers {
                gradient: &gz,
                momentum: &momentum,
            }
            .bind(k, dev, s, sc.exact),
        ];
        ChainGroup {
            offset,
            chains,
            x,
            residual_x: rx,
            terms,
            mask,
            z,
            momentum,
            gradient_x: gx,
            gradient_z: gz,
            steps: steps as usize,
            slots,
            sections,
            kernels: shared.kernels.clone(),
            binds,
            mixture: mixture_binds,
            prior,
            precision,
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
                // One xbar row per chain (its class's mean, or xbar repeated), and one Ybar row.
                y_stride: c.d,
                step: step as u32,
                noise: c.noise,
                eta: c.eta,
                noise_scale: c.noise_scale,
                inv_sigma2: c.inv_sigma2,
                lam: c.lam,
                preconditioned: c.preconditioned,
                ..Default::default()
            })
            .set(
                s.mh,
                0,
                MhTermsParams {
                    stream,
                    d: c.d,
                    p: c.p,
                    kinetic: c.kinetic,
                    delta: c.delta,
                    inv_sigma2: c.inv_sigma2,
                    lam: c.lam,
                    preconditioned: c.preconditioned,
                    ..Default::default()
                },
            )
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
        if let Some(hmc) = s.kernel_hmc {
            writer.set_all(hmc, |step| KernelHmcParams {
                stream,
                d: c.d,
                batch: c.batch,
                step: step as u32,
                u8_data: c.u8_data,
                noise: c.noise,
                eta: c.eta,
                noise_scale: c.noise_scale,
                delta: c.delta,
            });
        }
        if let Some(tangent) = s.tangent {
            writer.set(
                tangent,
                0,
                TangentParams {
                    d: c.d,
                    ..Default::default()
                },
            );
        }
        writer.finish(context);
    }

    fn run(&self, pass: &mut wgpu::ComputePass, role: Role, step: usize, groups: [u32; 3]) {
        self.kernels
            .dispatch(pass, &self.binds[role as usize], step, groups);
    }

    /// Runs a mixture pass; nothing for the paper's target.
    fn run_mixture(
        &self,
        pass: &mut wgpu::ComputePass,
        role: MixtureRole,
        step: usize,
        groups: [u32; 3],
    ) {
        if let Some(binds) = &self.mixture {
            self.kernels
                .dispatch(pass, &binds[role as usize], step, groups);
        }
    }

    /// Z's residual (A Z for the mixture, with its energy and scaled residual) and gradient.
    fn record_state_z(&self, pass: &mut wgpu::ComputePass, d: usize, p: usize) {
        let roles = (Role::ResidualZ, MixtureRole::EnergyZ, Role::GradientZ);
        self.record_state(pass, d, p, roles);
    }

    /// The residual, the mixture's energy pass and the full gradient of X or of Z.
    fn record_state(
        &self,
        pass: &mut wgpu::ComputePass,
        d: usize,
        p: usize,
        (residual, energy, gradient): (Role, MixtureRole, Role),
    ) {
        let chains = self.chains as u32;
        let products = |columns| self.kernels.product_groups(self.chains, columns);
        self.run(pass, residual, 0, products(d));
        self.run_mixture(pass, energy, 0, [chains, 1, 1]);
        self.run(pass, gradient, 0, products(p));
    }

    /// Residual and full gradient at X (after positions were written).
    pub fn record_current(&self, pass: &mut wgpu::ComputePass, d: usize, p: usize) {
        let roles = (Role::ResidualX, MixtureRole::EnergyX, Role::GradientX);
        self.record_state(pass, d, p, roles);
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
        let dg = (d as u32).div_ceil(64);
        let pg = (p as u32).div_ceil(64);
        let products = |columns| self.kernels.product_groups(self.chains, columns);
        let blocks = [(p as u32).div_ceil(4).div_ceil(64), chains, 1];
        match op {
            ChainOp::DrawMomentum => self.run(pass, Role::Momentum, 0, blocks),
            ChainOp::MinibatchStep(step) => {
                let step = step as usize;
                if step == 0 || step > self.steps {
                    return Err(Error::Internal(format!(
                        "minibatch step {step} outside the {} steps the chain group was built for",
                        self.steps
                    )));
                }
                // The mixture's Ybar stays zero (never gathered): its step residual starts as
                // A Z; the tangent target's step product reads its anchors instead.
                if self.mixture.is_none() {
                    self.run(pass, Role::Gather, step, [dg, chains, 1]);
                }
                self.run(pass, Role::StepResidual, step, products(d));
                self.run_mixture(pass, MixtureRole::Step, step, [chains, 1, 1]);
                self.run(pass, Role::Step, step, products(p));
            }
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

    /// X ← Z where the mask (already written) says so.
    pub fn record_select(&self, pass: &mut wgpu::ComputePass, d: usize, p: usize) {
        let width = d.max(p) as u32;
        self.run(
            pass,
            Role::Select,
            0,
            [width.div_ceil(64), self.chains as u32, 1],
        );
        self.run_mixture(
            pass,
            MixtureRole::Select,
            0,
            [(d as u32).div_ceil(64), self.chains as u32, 1],
        );
    }
}
