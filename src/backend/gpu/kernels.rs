//! The WGSL kernels' shared pieces: the typed params blocks, the kernel handles, pipeline
//! compilation and caching.
//!
//! Each kernel family (its WGSL sources, entry points, bind-group layouts and its params block, a
//! `#[repr(C)]` struct mirrored by a WGSL struct of the same name in its shader file) is declared
//! in its own launcher module under `kernels/`, named after the WGSL file it runs.

use std::sync::Arc;

use super::buffers::ParamSlots;
pub use super::buffers::Slots;
use super::context::GpuContext;
use crate::model::wgsl::WgslModel;
use crate::model::{Likelihood, Precision, Prior};
use crate::{Error, Result};

pub(crate) use crate::model::wgsl::wgsl_struct;
pub use crate::model::wgsl::{Layout, Member, WgslMember, WgslStruct};

wgsl_struct! {
    /// `struct Stream` in `shaders/philox.wgsl`: where a drawing kernel's Philox streams start
    /// (the key of chain c is [seed_lo, seed_hi ^ (chain_offset + c)], `outer` a counter word).
    /// The first member of every family's params that draws.
    pub struct Stream {
        /// Low word of the seed.
        seed_lo: u32,
        /// High word of the seed.
        seed_hi: u32,
        /// Global index of the group's first chain.
        chain_offset: u32,
        /// The outer iteration.
        outer: u32,
    }
}

impl Stream {
    /// The streams of chains from `chain_offset` on, at outer iteration `outer`.
    pub fn new(seed: u64, chain_offset: u32, outer: u32) -> Stream {
        Stream {
            seed_lo: seed as u32,
            seed_hi: (seed >> 32) as u32,
            chain_offset,
            outer,
        }
    }
}

/// A kernel bound to its buffers and to its family's params slots: dispatched at a step.
pub struct Launch {
    kernel: Kernel,
    group: wgpu::BindGroup,
    slots: Slots<()>,
}

impl Launch {
    /// The kernel it runs.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }
}

/// Every entry point the backend dispatches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// `philox_probe`: raw Philox blocks, for the parity tests.
    PhiloxProbe,
    /// `gather`: per-chain minibatch means.
    Gather,
    /// `residual_product`: R = A Z − Y.
    ResidualProduct,
    /// `transpose_product`: Aᵀ R.
    TransposeProduct,
    /// `draw_momentum`: r ~ N(0, I).
    DrawMomentum,
    /// `gradient_step`: Aᵀ R fused with the prior gradient and the Algorithm 1 update.
    GradientStep,
    /// `full_gradient`: Aᵀ R/σ² plus the prior gradient.
    FullGradient,
    /// `mh_terms`: the MH terms per chain, with the prior's and the likelihood's terms.
    MhTerms,
    /// `select_accepted`: X ← Z where accepted.
    Select,
    /// `select_cached`: a likelihood's cached energies and scaled residuals, where accepted.
    SelectCached,
    /// `fista_residual`: FISTA residual.
    FistaResidual,
    /// `fista_prox`: FISTA proximal step.
    FistaProx,
    /// `fista_objective`: FISTA objective per row.
    FistaObjective,
    /// `fista_update`: FISTA monotone update.
    FistaUpdate,
    /// `mala_proposal`: Z = X − h∇U(X) + √(2h)ξ.
    MalaProposal,
    /// `leapfrog_drift`: half kick and drift.
    LeapfrogDrift,
    /// `leapfrog_kick`: half kick.
    LeapfrogKick,
    /// `residual_product` with vec4 loads.
    ResidualProductVec4,
    /// `transpose_product` with vec4 loads.
    TransposeProductVec4,
    /// `gradient_step` with vec4 loads.
    GradientStepVec4,
    /// `full_gradient` with vec4 loads.
    FullGradientVec4,
    /// `kernel_step`: Kernel HMC momentum step.
    KernelStep,
    /// `kernel_energy`: kernel-density energy per chain.
    KernelEnergy,
    /// `kernel_mh_terms`: Kernel HMC MH terms.
    KernelMhTerms,
    /// `kernel_select`: Kernel HMC accept.
    KernelSelect,
    /// `likelihood_step_pass`: the likelihood's step residual.
    LikelihoodStep,
    /// `likelihood_energy_pass`: the likelihood's cached energy and scaled residual.
    LikelihoodEnergy,
    /// `dense_layer`: one layer of the learned sampler's network.
    DenseLayer,
    /// `dense_input_grad`: a layer's gradient with respect to its input.
    DenseInputGrad,
    /// `dense_weight_grad`: a layer's weight gradient.
    DenseWeightGrad,
    /// `dense_bias_grad`: a layer's bias gradient.
    DenseBiasGrad,
    /// `adam_step`: one Adam step of a parameter tensor.
    AdamStep,
}

/// Declares a family's typed buffer set for one entry point: a field per storage binding, named
/// and ordered as the entry declares them, and `bind` (the kernel bound to these buffers and to
/// slots of its family's params struct, the type in parentheses, checked at compile time against
/// the family that declares the kernel). `shaped` entries take (d, p) and bind the vec4-load twin
/// where the shape allows (`Kernel::for_shape`).
macro_rules! buffers {
    (@set $(#[$doc:meta])* $name:ident($params:ty) => $kernel:expr, { $($field:ident),+ }) => {
        $(#[$doc])*
        pub(crate) struct $name<'a> {
            $(pub(crate) $field: &'a wgpu::Buffer,)+
        }

        const _: () = assert!(
            super::reads($kernel, &<$params as super::WgslStruct>::LAYOUT),
            concat!(stringify!($kernel), "'s family reads another params struct")
        );

        impl $name<'_> {
            /// `kernel` bound to these buffers (checked against its layout by name) and `slots`.
            fn bind_as(
                &self,
                kernels: &super::Kernels,
                device: &wgpu::Device,
                params: &$crate::backend::gpu::buffers::ParamSlots,
                slots: super::Slots<$params>,
                kernel: super::Kernel,
            ) -> super::Launch {
                let names = [$(stringify!($field)),+];
                let buffers = [$(self.$field),+];
                kernels.bind_named(device, kernel, params, slots, &names, &buffers)
            }
        }
    };
    ($(#[$doc:meta])* $name:ident($params:ty) => $kernel:expr, { $($field:ident),+ $(,)? }) => {
        buffers!(@set $(#[$doc])* $name($params) => $kernel, { $($field),+ });

        impl $name<'_> {
            /// The kernel bound to these buffers and to `slots` of `params`.
            pub(crate) fn bind(
                &self,
                kernels: &super::Kernels,
                device: &wgpu::Device,
                params: &$crate::backend::gpu::buffers::ParamSlots,
                slots: super::Slots<$params>,
            ) -> super::Launch {
                self.bind_as(kernels, device, params, slots, $kernel)
            }
        }
    };
    ($(#[$doc:meta])* shaped $name:ident($params:ty) => $kernel:expr, { $($field:ident),+ $(,)? }) => {
        buffers!(@set $(#[$doc])* $name($params) => $kernel, { $($field),+ });

        impl $name<'_> {
            /// The kernel for a d × p shape (its vec4 twin where allowed) bound to these buffers
            /// and to `slots` of `params`.
            pub(crate) fn bind(
                &self,
                kernels: &super::Kernels,
                device: &wgpu::Device,
                params: &$crate::backend::gpu::buffers::ParamSlots,
                slots: super::Slots<$params>,
                (d, p): (usize, usize),
            ) -> super::Launch {
                self.bind_as(kernels, device, params, slots, $kernel.for_shape(d, p))
            }
        }
    };
}

pub(crate) mod dense;
pub(crate) mod exact;
pub(crate) mod fista;
pub(crate) mod gather;
pub(crate) mod kernel_hmc;
pub(crate) mod likelihood;
pub(crate) mod matmul;
pub(crate) mod philox_probe;
pub mod prior_update;
pub(crate) mod select;
#[cfg(test)]
mod tests;
mod unroll;

pub use dense::{AdamParams, DenseParams};
pub use exact::ExactParams;
pub use fista::FistaParams;
pub use gather::GatherParams;
pub use kernel_hmc::KernelHmcParams;
pub use likelihood::LikelihoodParams;
pub use matmul::{GemmTile, MatmulParams, WIDE_TILE_MIN_CHAINS};
pub use philox_probe::PhiloxProbeParams;
pub use select::SelectParams;

/// The counter-based generator and its `struct Stream`, shared by every module that draws.
const PHILOX: &str = include_str!("../../../shaders/philox.wgsl");
/// The workgroup reduction, shared by the kernel-HMC and tangent modules.
const WORKGROUP_SUM: &str = include_str!("../../../shaders/workgroup_sum.wgsl");

/// The dictionary's storage for the scalar-load products (`dict_at`), by precision.
const DICT_F32: &str = include_str!("../../../shaders/dict_f32.wgsl");
const DICT_F16: &str = include_str!("../../../shaders/dict_f16.wgsl");
/// The dictionary's storage for the vec4-load products (`dict_quad`), by precision.
const DICT_F32_VEC4: &str = include_str!("../../../shaders/dict_f32_vec4.wgsl");
const DICT_F16_VEC4: &str = include_str!("../../../shaders/dict_f16_vec4.wgsl");

/// The WGSL a set of pipelines splices in for the model it runs: the prior's and the
/// likelihood's (`Prior::wgsl_model`, `Likelihood::wgsl_model`).
#[derive(Clone, Copy, Debug)]
pub struct ModelWgsl {
    /// The prior's WGSL and what it reads.
    pub prior: WgslModel,
    /// The likelihood's WGSL and what it reads.
    pub likelihood: WgslModel,
}

impl ModelWgsl {
    /// The paper's model: the Laplace prior and the Gaussian likelihood.
    pub fn paper() -> ModelWgsl {
        ModelWgsl {
            prior: Prior::default().wgsl_model(),
            likelihood: Likelihood::PAPER_WGSL,
        }
    }

    /// Whether the pipelines bind what `condition` asks for.
    const fn holds(&self, condition: Condition) -> bool {
        match condition {
            Condition::Always => true,
            Condition::PriorState => self.prior.chains,
            Condition::PriorParams => self.prior.params.is_some(),
            Condition::LikelihoodParams => self.likelihood.params.is_some(),
            Condition::LikelihoodChains => self.likelihood.chains,
            Condition::LikelihoodScratch => self.likelihood.scratch,
        }
    }
}

/// One piece of a shader module: WGSL has no includes, so a module is its pieces concatenated.
#[derive(Clone, Copy, Debug)]
enum Source {
    /// A WGSL file's text.
    File(&'static str),
    /// The prior's WGSL (`ModelWgsl::prior`), supplied when the pipelines are built.
    Prior,
    /// The likelihood's WGSL (`ModelWgsl::likelihood`), supplied when the pipelines are built.
    Likelihood,
    /// The dictionary's binding and `dict_at` in the precision the pipelines are built for.
    Dict,
    /// The dictionary's binding and `dict_quad` in that precision.
    DictVec4,
    /// The products' tile (`GemmTile::wgsl`) the pipelines are built for.
    Tile,
}

impl Source {
    /// The piece's text, with the `model`'s WGSL, the dictionary stored in `precision` and the
    /// products' `tile`.
    fn text(&self, model: &ModelWgsl, precision: Precision, tile: GemmTile) -> &'static str {
        match (self, precision) {
            (Source::Tile, _) => tile.wgsl(),
            (Source::File(text), _) => text,
            (Source::Prior, _) => model.prior.wgsl,
            (Source::Likelihood, _) => model.likelihood.wgsl,
            (Source::Dict, Precision::F32) => DICT_F32,
            (Source::Dict, Precision::F16) => DICT_F16,
            (Source::DictVec4, Precision::F32) => DICT_F32_VEC4,
            (Source::DictVec4, Precision::F16) => DICT_F16_VEC4,
        }
    }
}

/// When a binding is in an entry's layout: always, or where the model's prior or likelihood
/// declares what it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Condition {
    /// Every pipeline binds it.
    Always,
    /// The prior's per-chain state (`prior_state`, SSGL's).
    PriorState,
    /// The prior's params (`prior_params`).
    PriorParams,
    /// The likelihood's params (`likelihood_params`).
    LikelihoodParams,
    /// The likelihood's per-chain data (`likelihood_chains`).
    LikelihoodChains,
    /// The likelihood's per-chain scratch (`likelihood_scratch`).
    LikelihoodScratch,
}

/// A storage binding of an entry point: its number, its name in the WGSL, its access, and when
/// the pipelines hold it.
#[derive(Clone, Copy, Debug)]
struct Binding {
    number: u32,
    name: &'static str,
    read_only: bool,
    condition: Condition,
}

impl Binding {
    /// A binding the model's WGSL declares, in the layouts only where it has what `condition`
    /// names.
    const fn when(number: u32, name: &'static str, read_only: bool, condition: Condition) -> Self {
        Binding {
            number,
            name,
            read_only,
            condition,
        }
    }
}

/// A read-only storage binding (`var<storage, read>`).
const fn read(number: u32, name: &'static str) -> Binding {
    Binding::when(number, name, true, Condition::Always)
}

/// A read-write storage binding (`var<storage, read_write>`).
const fn write(number: u32, name: &'static str) -> Binding {
    Binding::when(number, name, false, Condition::Always)
}

/// The stateful prior's per-chain state (`prior_state`, read-only, binding 12 of
/// `shaders/prior/ssgl.wgsl`).
const PRIOR_STATE: Binding = Binding::when(12, "prior_state", true, Condition::PriorState);

/// The prior's params (`prior_params`, read-only, binding 14 of `shaders/prior/laplace.wgsl`).
const PRIOR_PARAMS: Binding = Binding::when(14, "prior_params", true, Condition::PriorParams);

/// An entry point of a family's module: the kernel it is, its WGSL name, and its storage
/// bindings in the order `Kernels::bind` takes buffers (binding 0 is always the family's params
/// uniform).
#[derive(Clone, Copy, Debug)]
struct Entry {
    kernel: Kernel,
    entry_point: &'static str,
    bindings: &'static [Binding],
}

/// A kernel family: one shader module (its sources, concatenated, one of which declares the
/// params struct and `var<uniform> params`), its params struct, and the entry points it offers.
#[derive(Clone, Copy, Debug)]
struct Family {
    module: &'static str,
    sources: &'static [Source],
    params: &'static Layout,
    entries: &'static [Entry],
}

impl Family {
    /// The module's WGSL: its sources joined, with the model's prior and likelihood, A stored in
    /// `precision` and the products on `tile`, and its constant-count loops unrolled
    /// (`unroll`: the register tiles' indices become constants).
    fn source(&self, model: &ModelWgsl, precision: Precision, tile: GemmTile) -> String {
        let joined: String = self
            .sources
            .iter()
            .map(|part| part.text(model, precision, tile))
            .collect();
        unroll::unroll_constant_loops(&joined)
    }
}

/// Every family, in the order their modules are compiled.
const FAMILIES: [&Family; 11] = [
    &philox_probe::FAMILY,
    &gather::FAMILY,
    &matmul::SCALAR,
    &likelihood::FAMILY,
    &select::FAMILY,
    &fista::FAMILY,
    &exact::FAMILY,
    &matmul::VEC4,
    &kernel_hmc::FAMILY,
    &dense::FAMILY,
    &dense::ADAM_FAMILY,
];

/// How many kernels `Kernel` names.
const KERNELS: usize = Kernel::AdamStep as usize + 1;

/// Per kernel (by discriminant): its family's index in `FAMILIES` and its entry's index there.
/// Built at compile time: a kernel no family declares, or one declared twice, fails to compile,
/// so no lookup can miss or fall back to another kernel.
const LOCATION: [(usize, usize); KERNELS] = {
    let mut location = [(usize::MAX, 0); KERNELS];
    let mut f = 0;
    while f < FAMILIES.len() {
        let entries = FAMILIES[f].entries;
        let mut e = 0;
        while e < entries.len() {
            let kernel = entries[e].kernel as usize;
            assert!(
                location[kernel].0 == usize::MAX,
                "a kernel is declared by two entries"
            );
            location[kernel] = (f, e);
            let bindings = entries[e].bindings;
            let mut b = 0;
            while b < bindings.len() {
                assert!(bindings[b].number != 0, "binding 0 is the params uniform");
                let mut c = b + 1;
                while c < bindings.len() {
                    assert!(
                        bindings[b].number != bindings[c].number,
                        "an entry binds one number twice"
                    );
                    c += 1;
                }
                b += 1;
            }
            e += 1;
        }
        f += 1;
    }
    let mut k = 0;
    while k < KERNELS {
        assert!(location[k].0 != usize::MAX, "a kernel no family declares");
        k += 1;
    }
    location
};

/// The entry a kernel runs (resolved at compile time through `LOCATION`).
fn entry(kernel: Kernel) -> &'static Entry {
    let (family, entry) = LOCATION[kernel as usize];
    &FAMILIES[family].entries[entry]
}

/// The params struct a kernel's family reads.
const fn params_of(kernel: Kernel) -> &'static Layout {
    FAMILIES[LOCATION[kernel as usize].0].params
}

/// Whether `kernel`'s family reads the params struct `layout` (by name; compile-time checks).
const fn reads(kernel: Kernel, layout: &Layout) -> bool {
    let (a, b) = (params_of(kernel).name.as_bytes(), layout.name.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The pipeline of entry `entry` of family `family` (compiled as `module`) for `model`, with its
/// explicit layout: binding 0 the family's params uniform (a dynamic offset picks the slot), then
/// the entry's storage bindings that the model holds.
fn pipeline(
    device: &wgpu::Device,
    model: &ModelWgsl,
    module: &wgpu::ShaderModule,
    family: usize,
    entry: usize,
) -> (wgpu::BindGroupLayout, wgpu::ComputePipeline) {
    let Entry {
        entry_point,
        bindings,
        ..
    } = FAMILIES[family].entries[entry];
    let params_size = std::num::NonZeroU64::new(FAMILIES[family].params.size as u64);
    let mut entries = vec![wgpu::BindGroupLayoutEntry {
        binding: 0,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: true,
            min_binding_size: params_size,
        },
        count: None,
    }];
    let bindings = bindings.iter().filter(|b| model.holds(b.condition));
    entries.extend(bindings.map(|binding| wgpu::BindGroupLayoutEntry {
        binding: binding.number,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage {
                read_only: binding.read_only,
            },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }));
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some(entry_point),
        entries: &entries,
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(entry_point),
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(entry_point),
        layout: Some(&pipeline_layout),
        module,
        entry_point: Some(entry_point),
        compilation_options: Default::default(),
        cache: None,
    });
    (layout, pipeline)
}

/// Compiled pipelines with their explicit bind group layouts, indexed by `Kernel`'s discriminant.
pub struct Kernels {
    pipelines: Vec<(wgpu::BindGroupLayout, wgpu::ComputePipeline)>,
    /// The model the pipelines were built for: which conditional bindings their layouts hold.
    model: ModelWgsl,
    /// The products' tile these pipelines were built with.
    tile: GemmTile,
}

impl Kernels {
    /// Compiles every family's module, with the paper's model, f32 and the narrow tile.
    pub fn new(device: &wgpu::Device) -> Kernels {
        Kernels::build(
            device,
            &ModelWgsl::paper(),
            Precision::F32,
            GemmTile::Narrow,
        )
    }

    /// Compiles every family's module with the `model`'s WGSL spliced where a family takes the
    /// prior or the likelihood (the entries that splice them also bind what the model declares:
    /// its params, per-chain state or data, scratch), with A stored in `precision` (F16: the
    /// products read it with `unpack2x16float`, `upload_dictionary`) and the products (and the
    /// kernels fused with them) on `tile`; builds every pipeline.
    pub fn build(
        device: &wgpu::Device,
        model: &ModelWgsl,
        precision: Precision,
        tile: GemmTile,
    ) -> Kernels {
        let modules: Vec<wgpu::ShaderModule> = FAMILIES
            .iter()
            .map(|family| {
                let source = family.source(model, precision, tile);
                device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(family.module),
                    source: wgpu::ShaderSource::Wgsl(source.into()),
                })
            })
            .collect();
        let pipelines = LOCATION
            .iter()
            .map(|&(family, entry)| pipeline(device, model, &modules[family], family, entry))
            .collect();
        Kernels {
            pipelines,
            model: *model,
            tile,
        }
    }

    /// The products' tile these pipelines run.
    pub fn tile(&self) -> GemmTile {
        self.tile
    }

    /// Workgroups of a product kernel (or one fused with a product) writing `rows` × `columns`.
    pub fn product_groups(&self, rows: usize, columns: usize) -> [u32; 3] {
        self.tile.groups(rows, columns)
    }

    /// The bindings of `entry` these pipelines' layouts hold (the model's where it has them).
    fn active(&self, entry: &Entry) -> Vec<Binding> {
        let keep = |b: &&Binding| self.model.holds(b.condition);
        entry.bindings.iter().filter(keep).copied().collect()
    }

    /// `kernel` bound to `buffers` for its storage bindings, in the order its family declares
    /// them (without `prior_state` unless the pipelines were built with the prior's state), and
    /// to `slots` of `params` (one slot visible, chosen by dynamic offset).
    ///
    /// The positional form, for measuring one exact kernel (the benches); the backend binds
    /// through its families' typed buffer sets, which name every binding.
    ///
    /// # Panics
    /// When `P` is not the params struct of `kernel`'s family, or `buffers` does not have one
    /// buffer per declared binding (programming errors).
    pub fn bind<P: WgslStruct>(
        &self,
        device: &wgpu::Device,
        kernel: Kernel,
        params: &ParamSlots,
        slots: Slots<P>,
        buffers: &[&wgpu::Buffer],
    ) -> Launch {
        let entry = entry(kernel);
        let layout = params_of(kernel);
        assert_eq!(
            P::LAYOUT.name,
            layout.name,
            "{} reads {}",
            entry.entry_point,
            layout.name
        );
        assert_eq!(
            slots.buffer,
            params.id(),
            "{}: params slots of another buffer",
            entry.entry_point
        );
        let bindings = self.active(entry);
        assert_eq!(
            buffers.len(),
            bindings.len(),
            "{} binds {:?}",
            entry.entry_point,
            bindings.iter().map(|b| b.name).collect::<Vec<_>>()
        );
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: &params.buffer,
                offset: 0,
                size: std::num::NonZeroU64::new(layout.size as u64),
            }),
        }];
        entries.extend(bindings.iter().zip(buffers).map(|(binding, buffer)| {
            wgpu::BindGroupEntry {
                binding: binding.number,
                resource: buffer.as_entire_binding(),
            }
        }));
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(entry.entry_point),
            layout: &self.pipelines[kernel as usize].0,
            entries: &entries,
        });
        Launch {
            kernel,
            group,
            slots: slots.untyped(),
        }
    }

    /// `bind` for a family's typed buffer set: `names` must be the entry's binding names, in
    /// its order (checked, so a buffer set cannot bind a kernel it does not describe). A set's
    /// buffer for a binding the model does not declare (`prior_state`, `likelihood_params`, ...)
    /// is dropped (any buffer stands in for it there).
    ///
    /// # Panics
    /// When `names` are not `kernel`'s bindings (a programming error).
    fn bind_named<P: WgslStruct>(
        &self,
        device: &wgpu::Device,
        kernel: Kernel,
        params: &ParamSlots,
        slots: Slots<P>,
        names: &[&str],
        buffers: &[&wgpu::Buffer],
    ) -> Launch {
        let entry = entry(kernel);
        let declared: Vec<&str> = entry.bindings.iter().map(|b| b.name).collect();
        assert_eq!(names, declared, "{}'s bindings", entry.entry_point);
        let buffers: Vec<&wgpu::Buffer> = entry
            .bindings
            .iter()
            .zip(buffers)
            .filter(|(b, _)| self.model.holds(b.condition))
            .map(|(_, &buffer)| buffer)
            .collect();
        self.bind(device, kernel, params, slots, &buffers)
    }

    /// Records one dispatch of `launch` at `step`: its family's slot for that step (per-step
    /// families), or its one slot.
    ///
    /// # Panics
    /// When a per-step family has no slot for `step` (a programming error).
    pub fn dispatch(
        &self,
        pass: &mut wgpu::ComputePass,
        launch: &Launch,
        step: usize,
        workgroups: [u32; 3],
    ) {
        pass.set_pipeline(&self.pipelines[launch.kernel as usize].1);
        pass.set_bind_group(0, &launch.group, &[launch.slots.offset(step)]);
        pass.dispatch_workgroups(workgroups[0], workgroups[1], workgroups[2]);
    }
}

/// The environment variable that overrides `GemmTile::choose`: `narrow`, `wide` or `auto`.
pub const GEMM_TILE_VARIABLE: &str = "RMLD_GEMM_TILE";

impl GpuContext {
    /// The pipelines of the paper's model (the Laplace prior, the Gaussian likelihood), f32 and
    /// the narrow tile: what the kernels outside the chains' (FISTA, the dense network, the
    /// probes) run, compiled on first use.
    pub fn kernels(&self) -> Result<Arc<Kernels>> {
        self.kernels_with(&ModelWgsl::paper(), Precision::F32, GemmTile::Narrow)
    }

    /// The pipelines compiled with `prior`'s WGSL and the Gaussian likelihood's, A stored in
    /// `precision` and the products' `tile`.
    pub fn kernels_for(
        &self,
        prior: &Prior,
        precision: Precision,
        tile: GemmTile,
    ) -> Result<Arc<Kernels>> {
        let model = ModelWgsl {
            prior: prior.wgsl_model(),
            ..ModelWgsl::paper()
        };
        self.kernels_with(&model, precision, tile)
    }

    /// The pipelines compiled with `model`'s WGSL, A stored in `precision` and the products'
    /// `tile`, once per device and shared (cached by the four).
    ///
    /// Fails (`Error::Gpu`) when the tile passes the adapter's limits or compiling fails.
    pub fn kernels_with(
        &self,
        model: &ModelWgsl,
        precision: Precision,
        tile: GemmTile,
    ) -> Result<Arc<Kernels>> {
        if !tile.fits(&self.limits) {
            return Err(Error::Gpu(format!(
                "the {} GEMM tile needs {} invocations and {} bytes of workgroup memory per \
                 workgroup; this adapter allows {} and {}",
                tile.name(),
                tile.invocations(),
                tile.workgroup_bytes(),
                self.limits.max_compute_invocations_per_workgroup,
                self.limits.max_compute_workgroup_storage_size
            )));
        }
        let key = format!(
            "kernels: prior {}, likelihood {}, {precision:?}, {} tile",
            model.prior.name,
            model.likelihood.name,
            tile.name()
        );
        self.cached(&key, "compiling the kernels", || {
            Ok(Kernels::build(&self.device, model, precision, tile))
        })
    }

    /// The products' tile for `chains` chains: `asked` when given, else `RMLD_GEMM_TILE`'s
    /// (`narrow`, `wide`; `auto` or unset: `GemmTile::choose` from this adapter's type and
    /// limits). A value it cannot read is refused by name.
    pub fn gemm_tile(&self, asked: Option<GemmTile>, chains: usize) -> Result<GemmTile> {
        if let Some(tile) = asked {
            return Ok(tile);
        }
        let chosen = GemmTile::choose(self.device_type(), &self.limits, chains);
        match std::env::var(GEMM_TILE_VARIABLE) {
            Err(_) => Ok(chosen),
            Ok(value) if value == "auto" || value.is_empty() => Ok(chosen),
            Ok(value) => GemmTile::parse(&value).ok_or_else(|| Error::Usage {
                field: GEMM_TILE_VARIABLE,
                message: format!("expected narrow, wide or auto, found {value:?}"),
            }),
        }
    }
}
