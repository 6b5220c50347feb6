//! The GPU backend (wgpu): chains resident on the device, one submission per outer iteration.

// Only the MH scalars are read back per outer iteration; chains split into groups of buffers
// when a per-chain buffer would pass the binding limit (see `group_size`).

pub(crate) mod buffers;
pub(crate) mod context;
mod dataset;
pub mod dense;
pub mod dense_train;
mod fista;
mod group;
pub(crate) mod kernel_hmc;
pub(crate) mod kernels;
pub(crate) mod probe;
pub(crate) mod timer;

pub use context::{adapter_available, software_adapter, GpuContext};
use dataset::{gather_params, upload_observations};
pub use kernel_hmc::KernelHmcGpu;
pub use kernels::{GemmTile, ModelWgsl, GEMM_TILE_VARIABLE, WIDE_TILE_MIN_CHAINS};

/// The device-side pieces the GPU twin tests and kernel benchmarks drive directly (kernel
/// handles, the params block, buffer helpers, the Philox probe). Not a stable API.
#[doc(hidden)]
pub mod testing {
    pub use super::buffers::{storage, upload, ParamSlots, SlotLayout};
    pub use super::dataset::{gather_params, upload_observations};
    pub use super::kernels::prior_update::prior_update;
    pub use super::kernels::*;
    pub use super::probe::*;
}

use std::sync::Arc;

use super::{Backend, BackendInfo, DynamicsSettings, Encode, MhTerms, ModelState, Tuning};
use crate::methods::ChainOp;
use crate::model::wgsl::WgslBytes;
use crate::model::{Likelihood, Target};
use crate::{Error, Result};
use group::{ChainGroup, Constants, GroupLikelihood, GroupSpec, Shared, TERMS};
use kernels::prior_update::{PriorUpdateKernel, UpdateBuffers};
use timer::PassTimer;

/// Options of the GPU backend.
#[derive(Clone, Debug, Default)]
pub struct GpuOptions {
    /// Caps the bytes of any per-chain buffer below the device's binding limit (tests use it to
    /// force several groups).
    pub max_binding_bytes: Option<u64>,
    /// Times the outer iteration's passes on the device with timestamp queries, where the
    /// device offers them (`Backend::device_seconds`); `rmld bench` turns it on.
    pub timestamps: bool,
    /// No group holds chains of two classes (a class's chains are contiguous), so each class
    /// can run its own step size (`Backend::set_chain_step_sizes`, per-class adaptation).
    pub class_groups: bool,
    /// The products' tile; None: `GpuContext::gemm_tile`'s choice for the chain count (the
    /// adapter's, or `RMLD_GEMM_TILE`'s). Both tiles give the same bits.
    pub gemm_tile: Option<GemmTile>,
}

/// A on the device in `precision` (`Target::with_precision`): its f32 entries, or their f16 bit
/// patterns two per word, read by the products with `unpack2x16float` and widened to f32.
fn upload_dictionary(
    context: &GpuContext,
    dictionary: &crate::model::Dictionary,
    precision: crate::model::Precision,
) -> wgpu::Buffer {
    match precision {
        crate::model::Precision::F32 => {
            buffers::upload(context, "A", bytemuck::cast_slice(&dictionary.a))
        }
        crate::model::Precision::F16 => buffers::upload(
            context,
            "A (f16)",
            bytemuck::cast_slice(&dictionary.f16_words()),
        ),
    }
}

/// Device time of the propose and accept passes, by timestamp queries.
struct DeviceClock {
    propose: PassTimer,
    accept: PassTimer,
    /// The accept timer holds a resolve no read-back has fetched yet.
    accept_unread: bool,
    seconds: f64,
}

/// C chains on the GPU, in groups of buffers that each fit the binding limit.
pub struct GpuBackend {
    context: Arc<GpuContext>,
    target: Arc<Target>,
    settings: DynamicsSettings,
    chains: usize,
    shared: Shared,
    xbar_rows: Vec<f32>,
    /// The likelihood, as data.
    likelihood: Likelihood,
    /// What its cached energies, per-chain data and scratch add per chain, in bytes.
    cached_bytes_per_chain: usize,
    groups: Vec<ChainGroup>,
    group_size: usize,
    limit: u64,
    lipschitz: Option<f32>,
    clock: Option<DeviceClock>,
    /// The prior's update pipeline (None for a prior without state).
    prior_update: Option<Arc<PriorUpdateKernel>>,
    /// The learned noise precision τ per chain as last set (`--noise gibbs`), None for a
    /// fixed σ².
    precision: Option<Vec<f32>>,
    /// Per group, its chains' own step size (per-class adaptation), None: `settings.eta`.
    group_steps: Option<Vec<f32>>,
}

/// The groups' (first chain, chains): runs of `group_size`, and with `by_class` also cut where
/// a chain's class (`Target::chain_classes`) changes.
fn group_ranges(classes: &[u32], group_size: usize, by_class: bool) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut start = 0;
    for c in 1..=classes.len() {
        let class_ends = by_class && c < classes.len() && classes[c] != classes[c - 1];
        if c == classes.len() || c - start == group_size || class_ends {
            ranges.push((start, c - start));
            start = c;
        }
    }
    ranges
}

impl GpuBackend {
    /// Recomputes every group's residual and gradient at X (after new positions or a new prior
    /// state were written), in one submission.
    fn refresh_current(&self, label: &str, d: usize, p: usize) -> Result<()> {
        let constants = self.constants();
        for g in &self.groups {
            g.write_params(&self.context, &constants, 0);
        }
        let encoder = self.submit(
            label,
            None,
            |_, _| {},
            |g, pass| g.record_current(pass, d, p),
        )?;
        // Encoding errors surface at finish and submit, so those run inside the error scope too.
        self.context.checked("submitting", || {
            self.context.queue.submit([encoder.finish()])
        })?;
        Ok(())
    }

    /// A backend for `chains` chains of `target` on the process's shared device, positions zero
    /// until loaded.
    pub fn new(
        target: Arc<Target>,
        settings: DynamicsSettings,
        chains: usize,
        options: GpuOptions,
    ) -> Result<Self> {
        Self::with_context(GpuContext::shared()?, target, settings, chains, options)
    }

    /// As `new`, on a given context.
    pub fn with_context(
        context: Arc<GpuContext>,
        target: Arc<Target>,
        settings: DynamicsSettings,
        chains: usize,
        options: GpuOptions,
    ) -> Result<Self> {
        let (d, p) = (target.d(), target.p());
        if chains == 0 || d == 0 || p == 0 || settings.batch == 0 || target.observations.n == 0 {
            return Err(Error::usage(
                "chains",
                "chains, d, p, the batch and the dataset must all be non-empty",
            ));
        }
        let device_limit = context.binding_limit();
        if (4 * d * p) as u64 > device_limit {
            return Err(Error::Gpu(format!(
                "A takes {} bytes, more than the device binds at once ({device_limit})",
                4 * d * p
            )));
        }
        let limit = options
            .max_binding_bytes
            .unwrap_or(u64::MAX)
            .min(device_limit);
        // The likelihood and the prior as data: what each chain's residual subtracts, the
        // passes and per-chain data the likelihood needs, the prior's latent state.
        let likelihood = target.likelihood(chains)?;
        let prior_state = target.initial_prior_state(&likelihood, chains)?;
        let state_width = target.prior.state_width(p);
        let chain_data = likelihood.gpu_chains();
        let scratch_words = likelihood.scratch_words(settings.batch);
        // Bytes per chain a caching likelihood adds: its scaled residuals (2d), energies (2),
        // per-chain data and scratch.
        let cached_bytes_per_chain = if likelihood.caches_energy() {
            4 * (2 * d + 2) + likelihood.reported_chain_bytes() + 4 * scratch_words
        } else {
            0
        };
        // The widest per-chain buffer: a row of d or p, the likelihood's data or scratch, or the
        // prior's state.
        let width = d
            .max(p)
            .max(chain_data.as_ref().map_or(0, |c| c.bytes_per_chain / 4))
            .max(scratch_words)
            .max(state_width);
        let group_size = group_size(limit, width, chains)?;
        // The gather kernel reads chain `chain_offset + c`'s rows (the stream's global index):
        // a shard's rows follow `chain_offset` unused entries.
        let mut chain_rows = vec![[0u32; 2]; settings.chain_offset as usize];
        chain_rows.extend(target.chain_rows(chains)?);
        let tile = context.gemm_tile(options.gemm_tile, chains)?;
        let shared = upload_shared(&context, &target, &likelihood, &chain_rows, tile)?;
        let ranges = group_ranges(
            &target.chain_classes(chains)?,
            group_size,
            options.class_groups,
        );
        let model = GroupModel {
            likelihood: &likelihood,
            chain_data: chain_data.as_ref(),
            scratch_words,
            prior_state: prior_state.as_deref(),
            state_width,
            update_bytes: target
                .prior
                .update_kernel(1, 1, (d, p))
                .map_or(0, |(_, params)| params.bytes.len()),
            // The precision the gradient kernels apply: 1 where the residuals arrive scaled.
            precision: if likelihood.caches_energy() {
                1.0
            } else {
                target.inv_sigma2()
            },
        };
        let groups = context.checked("allocating the chain state", || {
            ranges
                .iter()
                .map(|&range| model.group(&context, &shared, (d, p), settings.steps, range))
                .collect::<Vec<_>>()
        })?;
        let xbar_rows = likelihood.offsets().to_vec();
        let prior_update = match target.prior.update_kernel(1, 1, (d, p)) {
            Some((wgsl, _)) if prior_state.is_some() => {
                Some(PriorUpdateKernel::for_prior(&context, wgsl)?)
            }
            _ => None,
        };
        let clock = match (
            options.timestamps,
            PassTimer::new(&context, 1),
            PassTimer::new(&context, 1),
        ) {
            (true, Some(propose), Some(accept)) => Some(DeviceClock {
                propose,
                accept,
                accept_unread: false,
                seconds: 0.0,
            }),
            _ => None,
        };
        Ok(GpuBackend {
            context,
            target,
            settings,
            chains,
            shared,
            xbar_rows,
            likelihood,
            cached_bytes_per_chain,
            groups,
            group_size,
            limit,
            lipschitz: None,
            clock,
            prior_update,
            precision: None,
            group_steps: None,
        })
    }

    /// Chains per group of buffers.
    pub fn group_size(&self) -> usize {
        self.group_size
    }

    /// Number of groups the chains are split into.
    pub fn groups(&self) -> usize {
        self.groups.len()
    }

    /// The products' tile this backend's pipelines run.
    pub fn gemm_tile(&self) -> GemmTile {
        self.shared.kernels.tile()
    }

    /// The device this backend runs on.
    pub fn context(&self) -> &Arc<GpuContext> {
        &self.context
    }

    /// The values the dynamics' kernels read (groups fill in their chains, each family's params
    /// its part); the MH terms' kinetic difference off.
    fn constants(&self) -> Constants {
        let s = &self.settings;
        let t = &self.target;
        let gather = gather_params(&t.observations, s.seed, 0, 0, s.batch);
        Constants {
            seed: s.seed,
            chain_offset: s.chain_offset,
            d: gather.d,
            p: t.p() as u32,
            batch: s.batch,
            u8_data: gather.u8_data,
            gather_factor: gather.gather_factor,
            eta: s.eta,
            noise: s.sghmc_noise as u32,
            noise_scale: (2.0 * s.eta).sqrt(),
            delta: s.delta(),
            kinetic: 0,
            preconditioned: self.precision.is_some() as u32,
        }
    }

    /// Records `record` for every group into one compute pass after `copies`, timed by `timer`
    /// when given (its resolve recorded after the pass); returns the encoder for the caller to submit.
    fn submit(
        &self,
        what: &str,
        timer: Option<&PassTimer>,
        copies: impl Fn(&ChainGroup, &mut wgpu::CommandEncoder),
        record: impl Fn(&ChainGroup, &mut wgpu::ComputePass),
    ) -> Result<wgpu::CommandEncoder> {
        self.context.checked(what, || {
            let mut encoder = self
                .context
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(what) });
            for g in &self.groups {
                copies(g, &mut encoder);
            }
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some(what),
                    timestamp_writes: timer.map(|t| t.writes(0)),
                });
                for g in &self.groups {
                    record(g, &mut pass);
                }
            }
            if let Some(t) = timer {
                t.resolve(&mut encoder);
            }
            encoder
        })
    }

    /// Reads `width` f32 per chain of one buffer of every group, in chain order.
    fn read_rows(
        &self,
        pick: impl Fn(&ChainGroup) -> &wgpu::Buffer,
        width: usize,
    ) -> Result<Vec<f32>> {
        let pieces: Vec<_> = self
            .groups
            .iter()
            .map(|g| (pick(g), 0, (4 * g.chains * width) as u64))
            .collect();
        let encoder = self
            .context
            .device
            .create_command_encoder(&Default::default());
        buffers::read_back_after(&self.context, encoder, &pieces)
    }
}

/// Chains per group so that a per-chain buffer of `width` f32 stays within `limit` bytes, and the
/// dispatches within 65,535 workgroups per dimension.
fn group_size(limit: u64, width: usize, chains: usize) -> Result<usize> {
    let per_chain = 4 * width as u64;
    let fit = (limit / per_chain).min(65_535) as usize;
    if fit == 0 {
        return Err(Error::Gpu(format!(
            "one chain needs {per_chain} bytes per buffer, more than the {limit} allowed"
        )));
    }
    Ok(fit.min(chains))
}

/// A's, the data's and the model's device buffers every group binds, and the pipelines compiled
/// for the target's prior and likelihood.
fn upload_shared(
    context: &Arc<GpuContext>,
    target: &Target,
    likelihood: &Likelihood,
    chain_rows: &[[u32; 2]],
    tile: GemmTile,
) -> Result<Shared> {
    let model = ModelWgsl {
        prior: target.prior.wgsl_model(),
        likelihood: likelihood.wgsl_model(),
    };
    let params = |label, bytes: Option<WgslBytes>| {
        let bytes = bytes.map_or_else(|| vec![0; 4], |b| b.bytes);
        buffers::upload(context, label, &bytes)
    };
    context.checked("uploading A and the data", || -> Result<Shared> {
        Ok(Shared {
            dict: upload_dictionary(context, &target.dictionary, target.precision),
            data: upload_observations(context, &target.observations)?,
            chain_rows: buffers::upload(context, "rows", bytemuck::cast_slice(chain_rows)),
            prior_params: params("prior params", target.prior.gpu_params()),
            likelihood_params: params("likelihood params", likelihood.gpu_params()),
            kernels: context.kernels_with(&model, target.precision, tile)?,
        })
    })?
}

/// What each group takes of the model: the likelihood's passes and per-chain data, the prior's
/// latent state, and the precision the chains start with.
struct GroupModel<'a> {
    likelihood: &'a Likelihood,
    chain_data: Option<&'a crate::model::ChainData>,
    scratch_words: usize,
    prior_state: Option<&'a [f32]>,
    state_width: usize,
    update_bytes: usize,
    precision: f32,
}

impl GroupModel<'_> {
    /// The group of chains `offset..offset + count`.
    fn group(
        &self,
        context: &GpuContext,
        shared: &Shared,
        (d, p): (usize, usize),
        steps: u32,
        (offset, count): (usize, usize),
    ) -> ChainGroup {
        let l = self.likelihood;
        let width = self.state_width;
        let spec = GroupSpec {
            offset,
            chains: count,
            shape: (d, p),
            steps,
            offsets: &l.offsets()[offset * d..(offset + count) * d],
            likelihood: GroupLikelihood {
                gathers: l.gathers(),
                has_step: l.has_step(),
                caches_energy: l.caches_energy(),
                chains: self.chain_data.map(|c| {
                    let w = c.bytes_per_chain;
                    &c.bytes[offset * w..(offset + count) * w]
                }),
                scratch_words: self.scratch_words,
            },
            prior_state: self.prior_state.map(|s| {
                let rows = &s[offset * width..(offset + count) * width];
                (rows, self.update_bytes)
            }),
            precision: self.precision,
        };
        ChainGroup::new(context, shared, &spec)
    }
}

impl Backend for GpuBackend {
    fn info(&self) -> BackendInfo {
        let (d, p) = (self.target.d(), self.target.p());
        BackendInfo {
            kind: "gpu".into(),
            device: self.context.describe(),
            // X, Z, both gradients, r (p each); both residuals, Ybar, step residual, the
            // chain's offset (d each); the MH terms, the mask word and its two row words; the
            // prior's latent state and its status word.
            bytes_per_chain: 4 * (5 * p + 5 * d + TERMS + 3)
                + self.cached_bytes_per_chain
                + self
                    .prior_update
                    .as_ref()
                    .map_or(0, |_| 4 * (self.target.prior.state_width(p) + 1)),
        }
    }

    fn chains(&self) -> usize {
        self.chains
    }

    fn load_positions(&mut self, positions: &[f32]) -> Result<()> {
        let (d, p) = (self.target.d(), self.target.p());
        if positions.len() != self.chains * p {
            return Err(Error::Internal(format!(
                "load_positions: {} values for {} chains of {p} atoms",
                positions.len(),
                self.chains
            )));
        }
        for g in &self.groups {
            let rows = &positions[g.offset * p..(g.offset + g.chains) * p];
            buffers::write(&self.context, &g.x, 0, bytemuck::cast_slice(rows));
        }
        self.refresh_current("loading positions", d, p)
    }

    fn propose(&mut self, outer: u32) -> Result<Vec<MhTerms>> {
        let (d, p) = (self.target.d(), self.target.p());
        let s = &self.settings;
        // The method's program: its leading copies go into the encoder, the rest into one pass
        // that ends with the MH terms (whose kinetic difference the params switch on).
        let program = s.method.program(s);
        let copies = program
            .iter()
            .take_while(|&&op| matches!(op, ChainOp::CopyPosition | ChainOp::CopyGradient))
            .count();
        let (copy_ops, pass_ops) = program.split_at(copies);
        let Some(&ChainOp::MhTerms { kinetic }) = pass_ops.last() else {
            return Err(Error::Internal(format!(
                "{:?}'s program must end with its MH terms",
                s.method
            )));
        };
        let constants = Constants {
            kinetic: kinetic as u32,
            ..self.constants()
        };
        for (i, g) in self.groups.iter().enumerate() {
            match &self.group_steps {
                Some(steps) => {
                    let own = Constants {
                        eta: steps[i],
                        noise_scale: (2.0 * steps[i]).sqrt(),
                        delta: s.delta_at(steps[i]),
                        ..constants
                    };
                    g.write_params(&self.context, &own, outer)
                }
                None => g.write_params(&self.context, &constants, outer),
            }
        }
        let recorded = std::cell::Cell::new(Ok(()));
        let encoder = self.submit(
            "one outer iteration",
            self.clock.as_ref().map(|c| &c.propose),
            |g, encoder| {
                for &op in copy_ops {
                    g.record_copy(encoder, op);
                }
            },
            |g, pass| {
                for &op in pass_ops {
                    if let Err(e) = g.record_op(pass, op, d, p) {
                        recorded.set(Err(e));
                        return;
                    }
                }
            },
        )?;
        recorded.into_inner()?;
        let mut pieces: Vec<_> = self
            .groups
            .iter()
            .map(|g| (&g.terms, 0, (4 * TERMS * g.chains) as u64))
            .collect();
        // The timestamps ride home with the MH terms: no extra round trip.
        let timers: Vec<&PassTimer> = match &self.clock {
            Some(c) if c.accept_unread => vec![&c.propose, &c.accept],
            Some(c) => vec![&c.propose],
            None => Vec::new(),
        };
        pieces.extend(timers.iter().map(|t| t.piece()));
        let timer_bytes: usize = timers.iter().map(|t| t.bytes()).sum();
        let bytes = self.context.checked("reading the MH terms", || {
            buffers::read_back_after(&self.context, encoder, &pieces)
        })??;
        let (terms, mut stamps) = bytes.split_at(bytes.len() - timer_bytes);
        let mut seconds = 0.0;
        for t in timers {
            let (mine, rest) = stamps.split_at(t.bytes());
            seconds += t.seconds(mine).iter().sum::<f64>();
            stamps = rest;
        }
        if let Some(c) = &mut self.clock {
            c.seconds += seconds;
            c.accept_unread = false;
        }
        let values: Vec<f32> = bytemuck::pod_collect_to_vec(terms);
        Ok(MhTerms::from_words(&values))
    }

    fn accept(&mut self, accepted: &[bool]) -> Result<()> {
        let (d, p) = (self.target.d(), self.target.p());
        if accepted.len() != self.chains {
            return Err(Error::Internal(format!(
                "accept: {} decisions for {} chains",
                accepted.len(),
                self.chains
            )));
        }
        for g in &self.groups {
            let mask: Vec<u32> = accepted[g.offset..g.offset + g.chains]
                .iter()
                .map(|&a| a as u32)
                .collect();
            buffers::write(&self.context, &g.mask, 0, bytemuck::cast_slice(&mask));
        }
        let encoder = self.submit(
            "accepting proposals",
            self.clock.as_ref().map(|c| &c.accept),
            |_, _| {},
            |g, pass| g.record_select(pass, d, p),
        )?;
        // Encoding errors surface at finish and submit, so those run inside the error scope too.
        self.context.checked("submitting", || {
            self.context.queue.submit([encoder.finish()])
        })?;
        if let Some(c) = &mut self.clock {
            c.accept_unread = true;
        }
        Ok(())
    }

    fn positions(&mut self) -> Result<Vec<f32>> {
        self.read_rows(|g| &g.x, self.target.p())
    }

    fn images(&mut self) -> Result<Vec<f32>> {
        let d = self.target.d();
        let mut residual = self.read_rows(|g| &g.residual_x, d)?;
        for (row, mean) in residual.chunks_mut(d).zip(self.xbar_rows.chunks(d)) {
            row.iter_mut().zip(mean).for_each(|(r, m)| *r += m);
        }
        Ok(residual)
    }

    fn device_seconds(&mut self) -> Result<Option<f64>> {
        let Some(clock) = &mut self.clock else {
            return Ok(None);
        };
        if clock.accept_unread {
            let bytes = buffers::read_back(&self.context, &[clock.accept.piece()])?;
            clock.seconds += clock.accept.seconds(&bytes).iter().sum::<f64>();
            clock.accept_unread = false;
        }
        Ok(Some(clock.seconds))
    }

    super::offers_every_capability!();
}

impl Drop for GpuBackend {
    /// The read-back staging buffer the shared context kept for this backend's sizes goes with
    /// it, so a long-lived process (Python) does not hold up to 512 MiB it no longer reads into.
    fn drop(&mut self) {
        self.context.release_staging();
    }
}

impl Tuning for GpuBackend {
    fn set_step_size(&mut self, eta: f32) -> Result<()> {
        self.settings.eta = eta;
        self.group_steps = None;
        Ok(())
    }

    fn set_chain_step_sizes(&mut self, steps: &[f32]) -> Result<()> {
        super::check_chain_steps(steps, self.chains, self.settings.method)?;
        let mut per_group = Vec::with_capacity(self.groups.len());
        for g in &self.groups {
            let own = &steps[g.offset..g.offset + g.chains];
            if own.iter().any(|s| s.to_bits() != own[0].to_bits()) {
                return Err(Error::Internal(format!(
                    "chains {}..{} share a group but not a step size: build the backend with \
                     GpuOptions::class_groups",
                    g.offset,
                    g.offset + g.chains
                )));
            }
            per_group.push(own[0]);
        }
        self.group_steps = Some(per_group);
        Ok(())
    }

    fn set_leapfrog_steps(&mut self, steps: u32) -> Result<()> {
        self.settings.leapfrog_steps = steps;
        Ok(())
    }

    fn proposals(&mut self) -> Result<(Vec<f32>, Vec<f32>)> {
        let p = self.target.p();
        let z = self.read_rows(|g| g.proposal_buffers().0, p)?;
        let r = self.read_rows(|g| g.proposal_buffers().1, p)?;
        Ok((z, r))
    }
}

impl Encode for GpuBackend {
    fn encode(&mut self, images: &[f32], lam: f32, iterations: u32) -> Result<Vec<f32>> {
        self.encode_or_stop(images, lam, iterations, &|| false)?
            .ok_or_else(|| Error::Internal("encode: stopped with no stop asked".into()))
    }

    /// Asks `stop` between the submissions of a group's iterations (`fista::encode`).
    fn encode_or_stop(
        &mut self,
        images: &[f32],
        lam: f32,
        iterations: u32,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Vec<f32>>> {
        let lipschitz = *self
            .lipschitz
            .get_or_insert_with(|| self.target.dictionary.spectral_norm_squared() as f32);
        fista::encode(self, images, lam, iterations, lipschitz, stop)
    }

    /// FISTA here runs every iteration.
    fn set_lasso_tolerance(&mut self, tolerance: f32) {
        let _ = tolerance;
    }

    fn encode_stats(&self) -> Option<super::EncodeStats> {
        None
    }
}

impl ModelState for GpuBackend {
    fn prior_update(&mut self, outer: u32) -> Result<Vec<u32>> {
        let Some(kernel) = &self.prior_update else {
            return Err(Error::Internal(
                "prior_update: the prior has no adaptive state".into(),
            ));
        };
        let (d, p) = (self.target.d(), self.target.p());
        let mut pieces = Vec::with_capacity(self.groups.len());
        for g in &self.groups {
            let prior = g.prior()?;
            if let Some((_, params)) = self.target.prior.update_kernel(outer, g.chains, (d, p)) {
                self.context
                    .queue
                    .write_buffer(&prior.params, 0, &params.bytes);
            }
            pieces.push((&prior.status, 0, (4 * g.chains) as u64));
        }
        // The update of every group, submitted; then X's residual and gradient under the new
        // state (as the CPU's `refresh_current`), with the status words read back after it.
        self.context.checked("the prior's update", || {
            let mut encoder =
                self.context
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("prior_update"),
                    });
            for g in &self.groups {
                if let Some(prior) = &g.prior {
                    let buffers = UpdateBuffers {
                        params: &prior.params,
                        x: &g.x,
                        residual: &g.residual_x,
                        state: &prior.state,
                        status: &prior.status,
                        chains: g.chains as u32,
                    };
                    kernel.record(&self.context.device, &mut encoder, &buffers);
                }
            }
            self.context.queue.submit([encoder.finish()]);
        })?;
        let refresh = self.submit(
            "refreshing X under the prior's new state",
            None,
            |_, _| {},
            |g, pass| g.record_current(pass, d, p),
        )?;
        self.context
            .checked("reading the prior's update status", || {
                buffers::read_back_after(&self.context, refresh, &pieces)
            })?
    }

    fn prior_state(&mut self) -> Result<Option<Vec<f32>>> {
        if self.prior_update.is_none() {
            return Ok(None);
        }
        let width = self.target.prior.state_width(self.target.p());
        let mut pieces = Vec::with_capacity(self.groups.len());
        for g in &self.groups {
            pieces.push((&g.prior()?.state, 0, (4 * g.chains * width) as u64));
        }
        Ok(Some(buffers::read_back(&self.context, &pieces)?))
    }

    fn load_prior_state(&mut self, state: &[f32]) -> Result<()> {
        let (d, p) = (self.target.d(), self.target.p());
        let width = self.target.prior.state_width(p);
        if let Some(i) = state.iter().position(|v| !v.is_finite()) {
            return Err(Error::Internal(format!(
                "load_prior_state: value {i} is {} (the prior's state must be finite)",
                state[i]
            )));
        }
        if self.prior_update.is_none() || state.len() != self.chains * width {
            return Err(Error::Internal(format!(
                "load_prior_state: {} values, the backend holds {:?}",
                state.len(),
                self.prior_update.as_ref().map(|_| self.chains * width)
            )));
        }
        for g in &self.groups {
            let rows = &state[g.offset * width..(g.offset + g.chains) * width];
            buffers::write(
                &self.context,
                &g.prior()?.state,
                0,
                bytemuck::cast_slice(rows),
            );
        }
        self.refresh_current("refreshing X under the loaded prior state", d, p)
    }

    fn set_noise_precision(&mut self, precision: &[f32]) -> Result<()> {
        crate::backend::check_precision(precision, self.chains, &self.likelihood)?;
        // The kernels read √τ (gradients in noise units, preconditioned moves), the f32 square
        // roots of the f32 τ as the CPU backend takes them.
        let roots: Vec<f32> = precision.iter().map(|t| t.sqrt()).collect();
        for g in &self.groups {
            let rows = &roots[g.offset..g.offset + g.chains];
            buffers::write(&self.context, &g.precision, 0, bytemuck::cast_slice(rows));
        }
        self.precision = Some(precision.to_vec());
        let (d, p) = (self.target.d(), self.target.p());
        self.refresh_current("refreshing X under the new noise precision", d, p)
    }

    fn noise_precision(&mut self) -> Result<Option<Vec<f32>>> {
        Ok(self.precision.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::group_ranges;

    #[test]
    fn class_groups_cut_where_the_class_changes() {
        let classes = [0, 0, 1, 1, 1, 0];
        assert_eq!(group_ranges(&classes, 4, false), [(0, 4), (4, 2)]);
        assert_eq!(group_ranges(&classes, 4, true), [(0, 2), (2, 3), (5, 1)]);
        assert_eq!(
            group_ranges(&classes, 2, true),
            [(0, 2), (2, 2), (4, 1), (5, 1)]
        );
        assert_eq!(group_ranges(&classes[..1], 4, true), [(0, 1)]);
    }
}
