//! The kernel-HMC GPU backend: chains in image space on the device, one workgroup per chain.

// All T steps, the energy at Z and the MH terms go into one submission; only the MH terms are
// read back per outer iteration. The chains are not split into groups: `new` refuses shapes
// whose per-chain buffers pass the binding limit or whose chains pass the dispatch limit.

use std::sync::Arc;

use super::buffers::{self, storage, ParamSlots, SlotLayout};
use super::context::GpuContext;
use super::kernels::{
    kernel_hmc, matmul, KernelHmcParams, Kernels, Launch, MatmulParams, Slots, Stream,
};
use super::upload_observations;
use crate::backend::kernel_hmc::cpu::check_settings;
use crate::backend::kernel_hmc::KernelTarget;
use crate::backend::{Backend, BackendInfo, DynamicsSettings, MhTerms};
use crate::methods::ChainOp;
use crate::{Error, Result};

/// MH terms per chain in the `terms` buffer, as `KERNEL_TERMS` in the WGSL.
const TERMS: usize = MhTerms::WORDS;

/// Kernels bound by role, built once.
struct Binds {
    momentum: Launch,
    step: Launch,
    energy_x: Launch,
    energy_z: Launch,
    mh: Launch,
    select: Launch,
}

/// The params slots: the kernel-HMC family's per step (slot t for step t, 0..=T), the momentum
/// draw's (the matmul family's) one.
struct Sections {
    kernel_hmc: Slots<KernelHmcParams>,
    momentum: Slots<MatmulParams>,
}

/// C chains of kernel HMC on the GPU: X, Z, both gradients, r (C × d each), both energies (C),
/// the minibatch picks and weights (C × m), the MH terms and the accept mask.
pub struct KernelHmcGpu {
    context: Arc<GpuContext>,
    kernels: Arc<Kernels>,
    target: Arc<KernelTarget>,
    settings: DynamicsSettings,
    slots: ParamSlots,
    sections: Sections,
    x: wgpu::Buffer,
    z: wgpu::Buffer,
    gradient_x: wgpu::Buffer,
    energy_x: wgpu::Buffer,
    terms: wgpu::Buffer,
    mask: wgpu::Buffer,
    binds: Binds,
}

impl KernelHmcGpu {
    /// One chain per entry of `target.chain_rows` on the process's shared device, positions zero
    /// until loaded.
    ///
    /// Fails with `Error::Usage` as `KernelHmcCpu::new`, and with `Error::Gpu` without a device
    /// or when the chains or the data do not fit its limits.
    pub fn new(target: Arc<KernelTarget>, settings: DynamicsSettings) -> Result<Self> {
        // Before opening the device, so a usage error is not hidden behind a missing GPU.
        check_settings(&settings)?;
        Self::with_context(GpuContext::shared()?, target, settings)
    }

    /// As `new`, on a given context.
    pub fn with_context(
        context: Arc<GpuContext>,
        target: Arc<KernelTarget>,
        settings: DynamicsSettings,
    ) -> Result<Self> {
        check_settings(&settings)?;
        let (chains, d, batch) = (target.chains(), target.d(), settings.batch as usize);
        check_limits(&context, &target, chains, d.max(batch))?;
        let buffers = context.checked("allocating the kernel-hmc state", || {
            let rows =
                |label: &str, width: usize| storage(&context, label, (4 * chains * width) as u64);
            let info = buffers::upload(
                &context,
                "chain info",
                bytemuck::cast_slice(&target.chain_info()),
            );
            (
                info,
                [
                    rows("X", d),
                    rows("Z", d),
                    rows("grad X", d),
                    rows("grad Z", d),
                    rows("r", d),
                    rows("U(X)", 1),
                    rows("U(Z)", 1),
                    rows("picks and weights", 2 * batch),
                    rows("MH terms", TERMS),
                    rows("mask", 1),
                ],
            )
        })?;
        let data = upload_observations(&context, &target.observations)?;
        let (info, [x, z, gx, gz, momentum, ex, ez, scratch, terms, mask]) = buffers;
        let kernels = context.kernels()?;
        let mut layout = SlotLayout::new(&context);
        let sections = Sections {
            kernel_hmc: layout.per_step(settings.steps as usize + 1),
            momentum: layout.once(),
        };
        let slots = layout.build(&context);
        let binds = context.checked("binding the kernel-hmc buffers", || {
            let (k, dev, s, hmc) = (&*kernels, &context.device, &slots, sections.kernel_hmc);
            let energy = |at, energy, scaled| {
                kernel_hmc::KernelEnergyBuffers {
                    data: &data,
                    likelihood_chains: &info,
                    at,
                    energy,
                    scaled,
                }
                .bind(k, dev, s, hmc)
            };
            Binds {
                momentum: matmul::DrawMomentumBuffers {
                    momentum: &momentum,
                }
                .bind(k, dev, s, sections.momentum),
                step: kernel_hmc::KernelStepBuffers {
                    data: &data,
                    likelihood_chains: &info,
                    position: &z,
                    momentum: &momentum,
                    likelihood_scratch: &scratch,
                }
                .bind(k, dev, s, hmc),
                energy_x: energy(&x, &ex, &gx),
                energy_z: energy(&z, &ez, &gz),
                mh: kernel_hmc::KernelMhTermsBuffers {
                    x: &x,
                    z: &z,
                    gradient_x: &gx,
                    gradient_z: &gz,
                    energy_x: &ex,
                    energy_z: &ez,
                    terms: &terms,
                }
                .bind(k, dev, s, hmc),
                select: kernel_hmc::KernelSelectBuffers {
                    accepted: &mask,
                    z: &z,
                    x_out: &x,
                    gradient_z: &gz,
                    gradient_x_out: &gx,
                    energy_z: &ez,
                    energy_x_out: &ex,
                }
                .bind(k, dev, s, hmc),
            }
        })?;
        Ok(KernelHmcGpu {
            context,
            kernels,
            target,
            settings,
            slots,
            sections,
            x,
            z,
            gradient_x: gx,
            energy_x: ex,
            terms,
            mask,
            binds,
        })
    }

    /// The device this backend runs on.
    pub fn context(&self) -> &Arc<GpuContext> {
        &self.context
    }

    /// The cached full-class energies U(X), one per chain.
    pub fn energies(&self) -> Result<Vec<f32>> {
        self.read(&self.energy_x, self.chains())
    }

    /// The cached full-class gradients ∇U(X), C × d.
    pub fn gradients(&self) -> Result<Vec<f32>> {
        self.read(&self.gradient_x, self.chains() * self.target.d())
    }

    fn read(&self, buffer: &wgpu::Buffer, len: usize) -> Result<Vec<f32>> {
        buffers::read_f32(&self.context, buffer, len)
    }

    /// Every slot for outer iteration `outer`, in one queue write.
    fn write_params(&self, outer: u32) {
        let s = &self.settings;
        let observations = &self.target.observations;
        let d = observations.d as u32;
        let stream = Stream::new(s.seed, s.chain_offset, outer);
        let noise_scale = (2.0 * s.eta).sqrt();
        self.slots
            .writer()
            .set_all(self.sections.kernel_hmc, |step| KernelHmcParams {
                stream,
                d,
                batch: s.batch,
                step: step as u32,
                u8_data: super::dataset::u8_data(observations),
                noise: s.sghmc_noise as u32,
                eta: s.eta,
                noise_scale,
                delta: s.delta(),
            })
            .set(
                self.sections.momentum,
                0,
                // The momentum is drawn in image space: p = d.
                MatmulParams {
                    stream,
                    chains: self.chains() as u32,
                    d,
                    p: d,
                    ..Default::default()
                },
            )
            .finish(&self.context);
    }

    /// Records `record` into one compute pass after `copies`.
    fn record(
        &self,
        what: &str,
        copies: impl FnOnce(&mut wgpu::CommandEncoder),
        record: impl FnOnce(&mut wgpu::ComputePass),
    ) -> Result<wgpu::CommandEncoder> {
        self.context.checked(what, || {
            let mut encoder = self
                .context
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(what) });
            copies(&mut encoder);
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                record(&mut pass);
            }
            encoder
        })
    }

    /// Submits `encoder`, inside the error scope (encoding errors surface at finish and submit).
    fn submit(&self, encoder: wgpu::CommandEncoder) -> Result<()> {
        self.context.checked("submitting", || {
            self.context.queue.submit([encoder.finish()]);
        })
    }

    fn run(&self, pass: &mut wgpu::ComputePass, launch: &Launch, step: usize, groups: [u32; 3]) {
        self.kernels.dispatch(pass, launch, step, groups);
    }
}

/// Refuses what one group of buffers and one dispatch row cannot hold.
fn check_limits(
    context: &GpuContext,
    target: &KernelTarget,
    chains: usize,
    width: usize,
) -> Result<()> {
    let limit = context.binding_limit();
    let bytes = 4 * chains as u64 * width as u64;
    if bytes > limit || bytes / 4 > u32::MAX as u64 {
        return Err(Error::Gpu(format!(
            "{chains} chains of {width} values take {bytes} bytes per buffer, more than the \
             device binds at once ({limit}); run fewer chains"
        )));
    }
    let most = context.limits.max_compute_workgroups_per_dimension as usize;
    if chains > most {
        return Err(Error::Gpu(format!(
            "{chains} chains, more than the {most} workgroups one dispatch row allows"
        )));
    }
    let values = target.observations.n as u64 * target.observations.d as u64;
    if values > u32::MAX as u64 {
        return Err(Error::Gpu(format!(
            "the dataset has {values} values, more than 32-bit indices reach"
        )));
    }
    Ok(())
}

impl Backend for KernelHmcGpu {
    fn info(&self) -> BackendInfo {
        let (d, m) = (self.target.d(), self.settings.batch as usize);
        BackendInfo {
            kind: "gpu".into(),
            device: format!("{} (kernel-hmc)", self.context.describe()),
            // X, Z, both gradients, r; both energies; picks and weights; the terms and mask.
            bytes_per_chain: 4 * (5 * d + 2 + 2 * m + TERMS + 1 + 4),
        }
    }

    fn chains(&self) -> usize {
        self.target.chains()
    }

    fn load_positions(&mut self, positions: &[f32]) -> Result<()> {
        let chains = self.chains() as u32;
        if positions.len() != self.chains() * self.target.d() {
            return Err(Error::Internal(format!(
                "load_positions: {} values for {chains} chains of {} pixels",
                positions.len(),
                self.target.d()
            )));
        }
        buffers::write(&self.context, &self.x, 0, bytemuck::cast_slice(positions));
        self.write_params(0);
        let encoder = self.record(
            "loading positions",
            |_| {},
            |pass| self.run(pass, &self.binds.energy_x, 0, [chains, 1, 1]),
        )?;
        self.submit(encoder)
    }

    fn propose(&mut self, outer: u32) -> Result<Vec<MhTerms>> {
        let chains = self.chains() as u32;
        let d = self.target.d() as u32;
        self.write_params(outer);
        // RMLD's program (the only method Kernel HMC runs): its leading copy into the encoder,
        // the rest into one pass.
        let program = self.settings.method.program(&self.settings);
        let (copies, pass_ops) = program.split_at(
            program
                .iter()
                .take_while(|&&op| op == ChainOp::CopyPosition)
                .count(),
        );
        if let Some(op) = pass_ops.iter().find(|&&op| {
            !matches!(
                op,
                ChainOp::DrawMomentum
                    | ChainOp::MinibatchStep(_)
                    | ChainOp::ProposalState
                    | ChainOp::MhTerms { .. }
            )
        }) {
            return Err(Error::Internal(format!(
                "Kernel HMC runs RMLD's dynamics only, not {op:?}"
            )));
        }
        let steps = self.settings.steps;
        if let Some(op) = pass_ops
            .iter()
            .find(|&&op| matches!(op, ChainOp::MinibatchStep(s) if s == 0 || s > steps))
        {
            return Err(Error::Internal(format!(
                "{op:?} outside the {steps} steps the backend was built for"
            )));
        }
        let encoder = self.record(
            "one kernel-hmc outer iteration",
            |encoder| {
                for _ in copies {
                    encoder.copy_buffer_to_buffer(&self.x, 0, &self.z, 0, self.x.size());
                }
            },
            |pass| {
                let b = &self.binds;
                let momentum_groups = [d.div_ceil(4).div_ceil(64), chains, 1];
                for &op in pass_ops {
                    match op {
                        ChainOp::DrawMomentum => self.run(pass, &b.momentum, 0, momentum_groups),
                        ChainOp::MinibatchStep(step) => {
                            self.run(pass, &b.step, step as usize, [chains, 1, 1])
                        }
                        ChainOp::ProposalState => self.run(pass, &b.energy_z, 0, [chains, 1, 1]),
                        _ => self.run(pass, &b.mh, 0, [chains, 1, 1]),
                    }
                }
            },
        )?;
        let values: Vec<f32> = self.context.checked("reading the MH terms", || {
            buffers::read_back_after(
                &self.context,
                encoder,
                &[(&self.terms, 0, (4 * TERMS) as u64 * chains as u64)],
            )
        })??;
        Ok(MhTerms::from_words(&values))
    }

    fn accept(&mut self, accepted: &[bool]) -> Result<()> {
        let chains = self.chains() as u32;
        if accepted.len() != self.chains() {
            return Err(Error::Internal(format!(
                "accept: {} decisions for {chains} chains",
                accepted.len()
            )));
        }
        let mask: Vec<u32> = accepted.iter().map(|&a| a as u32).collect();
        buffers::write(&self.context, &self.mask, 0, bytemuck::cast_slice(&mask));
        let groups = [(self.target.d() as u32).div_ceil(64), chains, 1];
        let encoder = self.record(
            "accepting proposals",
            |_| {},
            |pass| self.run(pass, &self.binds.select, 0, groups),
        )?;
        self.submit(encoder)
    }

    fn positions(&mut self) -> Result<Vec<f32>> {
        self.read(&self.x, self.chains() * self.target.d())
    }

    fn images(&mut self) -> Result<Vec<f32>> {
        self.positions()
    }
}
