//! The WGSL kernels' shared pieces: the typed params blocks, the kernel handles, pipeline
//! compilation and caching.
//!
//! Each kernel family (its WGSL sources, entry points, bind-group layouts and its params block, a
//! `#[repr(C)]` struct mirrored by a WGSL struct of the same name in its shader file) is declared
//! in its own launcher module under `kernels/`, named after the WGSL file it runs.

use std::marker::PhantomData;

use bytemuck::Pod;

use super::buffers::ParamSlots;
use crate::model::Precision;

/// One member of a params struct as Rust lays it out: its name, its WGSL type, its byte offset,
/// and the layout of the struct it holds (None for a scalar).
#[derive(Clone, Copy, Debug)]
pub struct Member {
    /// The field's name (the WGSL member's).
    pub name: &'static str,
    /// The WGSL type it mirrors (`u32`, `f32`, or a struct's name).
    pub ty: &'static str,
    /// Its byte offset (`offset_of!`).
    pub offset: usize,
    /// The nested struct's layout, for a struct member.
    pub nested: Option<&'static Layout>,
}

/// A params struct's layout on the Rust side: the WGSL struct's name, its size and its members
/// in order (checked against the WGSL by `tests::params_match_the_wgsl`).
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// The struct's name, the same in Rust and WGSL.
    pub name: &'static str,
    /// `size_of` the struct.
    pub size: usize,
    /// Its fields, in order.
    pub members: &'static [Member],
}

/// A Rust struct mirroring a WGSL struct of the params uniform, member by member.
pub trait WgslStruct: Pod {
    /// Its layout, for the bind-group layouts and the layout test.
    const LAYOUT: Layout;
}

/// What a params member is: a 32-bit scalar, or a nested `WgslStruct`.
pub trait WgslMember {
    /// The WGSL type it mirrors.
    const WGSL_TYPE: &'static str;
    /// The nested struct's layout; None for a scalar.
    const NESTED: Option<&'static Layout>;
}

impl WgslMember for u32 {
    const WGSL_TYPE: &'static str = "u32";
    const NESTED: Option<&'static Layout> = None;
}

impl WgslMember for f32 {
    const WGSL_TYPE: &'static str = "f32";
    const NESTED: Option<&'static Layout> = None;
}

/// Declares a params struct mirrored by the WGSL struct of the same name: `#[repr(C)]`, `Pod`,
/// every field public and documented, its `Layout` built from `offset_of!`. The WGSL side pads
/// with the same `_padN` members, so both sizes are multiples of 16 (a uniform's).
macro_rules! wgsl_struct {
    ($(#[$doc:meta])* pub struct $name:ident {
        $($(#[$field_doc:meta])* $field:ident: $ty:ty,)+
    }) => {
        $(#[$doc])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
        pub struct $name {
            $($(#[$field_doc])* pub $field: $ty,)+
        }

        impl $crate::backend::gpu::kernels::WgslStruct for $name {
            const LAYOUT: $crate::backend::gpu::kernels::Layout =
                $crate::backend::gpu::kernels::Layout {
                    name: stringify!($name),
                    size: ::std::mem::size_of::<$name>(),
                    members: &[$($crate::backend::gpu::kernels::Member {
                        name: stringify!($field),
                        ty: <$ty as $crate::backend::gpu::kernels::WgslMember>::WGSL_TYPE,
                        offset: ::std::mem::offset_of!($name, $field),
                        nested: <$ty as $crate::backend::gpu::kernels::WgslMember>::NESTED,
                    }),+],
                };
        }

        impl $crate::backend::gpu::kernels::WgslMember for $name {
            const WGSL_TYPE: &'static str = stringify!($name);
            const NESTED: Option<&'static $crate::backend::gpu::kernels::Layout> =
                Some(&<$name as $crate::backend::gpu::kernels::WgslStruct>::LAYOUT);
        }

        const _: () = assert!(
            ::std::mem::size_of::<$name>() % 16 == 0,
            "a params struct's size is a multiple of 16 bytes"
        );
    };
}

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

/// Where one family's params slots lie in a `ParamSlots` buffer (`buffers::SlotLayout::per_step`
/// and `once`): `count` slots of `P`, `stride` bytes apart from byte `first`. Per step: slot s
/// holds step s (dispatches name their step); once: one slot, whatever the step (the family's
/// WGSL reads none).
pub struct Slots<P> {
    /// The `ParamSlots` buffer it lies in (`SlotLayout`'s number).
    pub(super) buffer: u64,
    pub(super) first: u64,
    pub(super) stride: u64,
    pub(super) count: usize,
    pub(super) per_step: bool,
    pub(super) params: PhantomData<fn() -> P>,
}

impl<P> Clone for Slots<P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for Slots<P> {}

impl<P> Slots<P> {
    /// Number of slots.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The slot a dispatch at `step` reads: `step` per step, else the one slot.
    ///
    /// # Panics
    /// When a per-step family has no slot `step` (a programming error; never another slot).
    fn slot(&self, step: usize) -> usize {
        if !self.per_step {
            return 0;
        }
        assert!(
            step < self.count,
            "step {step} outside the {} params slots",
            self.count
        );
        step
    }

    /// The dynamic offset of the slot a dispatch at `step` reads.
    pub fn offset(&self, step: usize) -> u32 {
        (self.first + self.slot(step) as u64 * self.stride) as u32
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
    /// `mh_terms`: the MH terms per chain.
    MhTerms,
    /// `select_accepted`: X ← Z where accepted.
    Select,
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
    /// `mixture_residual`: the mixture's minibatch step residual.
    MixtureResidual,
    /// `mh_terms_mixture`: MH terms from the mixture's cached energies.
    MhTermsMixture,
    /// `tangent_energy`: the tangent likelihood's energy and scaled residual.
    TangentEnergy,
    /// `tangent_step`: the tangent likelihood's step residual.
    TangentStep,
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
pub(crate) mod matmul;
pub(crate) mod mh_terms;
pub(crate) mod philox_probe;
pub(crate) mod select;
pub mod ssgl;
pub(crate) mod tangent;

pub use dense::{AdamParams, DenseParams};
pub use exact::ExactParams;
pub use fista::FistaParams;
pub use gather::GatherParams;
pub use kernel_hmc::KernelHmcParams;
pub use matmul::{GemmTile, MatmulParams, WIDE_TILE_MIN_CHAINS};
pub use mh_terms::MhTermsParams;
pub use philox_probe::PhiloxProbeParams;
pub use select::SelectParams;
pub use tangent::TangentParams;

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

/// One piece of a shader module: WGSL has no includes, so a module is its pieces concatenated.
#[derive(Clone, Copy, Debug)]
enum Source {
    /// A WGSL file's text.
    File(&'static str),
    /// The prior's WGSL (`Prior::wgsl`), supplied when the pipelines are built.
    Prior,
    /// The dictionary's binding and `dict_at` in the precision the pipelines are built for.
    Dict,
    /// The dictionary's binding and `dict_quad` in that precision.
    DictVec4,
    /// The products' tile (`GemmTile::wgsl`) the pipelines are built for.
    Tile,
}

impl Source {
    /// The piece's text, with `prior`'s WGSL, the dictionary stored in `precision` and the
    /// products' `tile`.
    fn text<'a>(&self, prior: &'a str, precision: Precision, tile: GemmTile) -> &'a str {
        match (self, precision) {
            (Source::Tile, _) => tile.wgsl(),
            (Source::File(text), _) => text,
            (Source::Prior, _) => prior,
            (Source::Dict, Precision::F32) => DICT_F32,
            (Source::Dict, Precision::F16) => DICT_F16,
            (Source::DictVec4, Precision::F32) => DICT_F32_VEC4,
            (Source::DictVec4, Precision::F16) => DICT_F16_VEC4,
        }
    }
}

/// A storage binding of an entry point: its number, its name in the WGSL, and its access.
#[derive(Clone, Copy, Debug)]
struct Binding {
    number: u32,
    name: &'static str,
    read_only: bool,
    /// Declared by a stateful prior's WGSL (`prior_state`): in the layout only of the pipelines
    /// built for such a prior (`Kernels::with_state`).
    state_only: bool,
}

/// A read-only storage binding (`var<storage, read>`).
const fn read(number: u32, name: &'static str) -> Binding {
    Binding {
        number,
        name,
        read_only: true,
        state_only: false,
    }
}

/// The stateful prior's per-chain state (`prior_state`, read-only, binding 12 of
/// `shaders/prior/ssgl.wgsl`): bound only where the pipelines were built with the state.
const PRIOR_STATE: Binding = Binding {
    number: 12,
    name: "prior_state",
    read_only: true,
    state_only: true,
};

/// A read-write storage binding (`var<storage, read_write>`).
const fn write(number: u32, name: &'static str) -> Binding {
    Binding {
        number,
        name,
        read_only: false,
        state_only: false,
    }
}

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

/// Every family, in the order their modules are compiled.
const FAMILIES: [&Family; 12] = [
    &philox_probe::FAMILY,
    &gather::FAMILY,
    &matmul::SCALAR,
    &mh_terms::FAMILY,
    &select::FAMILY,
    &fista::FAMILY,
    &exact::FAMILY,
    &matmul::VEC4,
    &kernel_hmc::FAMILY,
    &tangent::FAMILY,
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

/// Compiled pipelines with their explicit bind group layouts, indexed by `Kernel`'s discriminant.
pub struct Kernels {
    pipelines: Vec<(wgpu::BindGroupLayout, wgpu::ComputePipeline)>,
    /// Built for a prior with per-chain state: the `prior_state` bindings are in the layouts.
    stateful: bool,
    /// The products' tile these pipelines were built with.
    tile: GemmTile,
}

impl Kernels {
    /// Compiles every family's module, with `prior_wgsl` (a `Prior::wgsl()` of a prior without
    /// state) where a family takes the prior, and builds every pipeline (once per device and prior).
    pub fn new(device: &wgpu::Device, prior_wgsl: &str) -> Kernels {
        Kernels::with_state(device, prior_wgsl, false, Precision::F32, GemmTile::Narrow)
    }

    /// `new` for any prior and dictionary storage: with `stateful` (`Prior::has_state`) the
    /// entries that splice the prior also bind its per-chain state, `prior_state`; with
    /// `precision` F16 the products read A stored as f16 (`upload_dictionary`); the products
    /// (and the kernels fused with them) run `tile`.
    pub fn with_state(
        device: &wgpu::Device,
        prior_wgsl: &str,
        stateful: bool,
        precision: Precision,
        tile: GemmTile,
    ) -> Kernels {
        let modules: Vec<wgpu::ShaderModule> = FAMILIES
            .iter()
            .map(|family| {
                let source: String = family
                    .sources
                    .iter()
                    .map(|part| part.text(prior_wgsl, precision, tile))
                    .collect();
                device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(family.module),
                    source: wgpu::ShaderSource::Wgsl(source.into()),
                })
            })
            .collect();
        let pipelines = LOCATION
            .iter()
            .map(|&(family, entry)| {
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
                let bindings = bindings.iter().filter(|b| stateful || !b.state_only);
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
                let pipeline_layout =
                    device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                        label: Some(entry_point),
                        bind_group_layouts: &[Some(&layout)],
                        immediate_size: 0,
                    });
                let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(entry_point),
                    layout: Some(&pipeline_layout),
                    module: &modules[family],
                    entry_point: Some(entry_point),
                    compilation_options: Default::default(),
                    cache: None,
                });
                (layout, pipeline)
            })
            .collect();
        Kernels {
            pipelines,
            stateful,
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

    /// The bindings of `entry` these pipelines' layouts hold (its `prior_state` only when stateful).
    fn active(&self, entry: &Entry) -> Vec<Binding> {
        let keep = |b: &&Binding| self.stateful || !b.state_only;
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
            slots: Slots {
                buffer: slots.buffer,
                first: slots.first,
                stride: slots.stride,
                count: slots.count,
                per_step: slots.per_step,
                params: PhantomData,
            },
        }
    }

    /// `bind` for a family's typed buffer set: `names` must be the entry's binding names, in
    /// its order (checked, so a buffer set cannot bind a kernel it does not describe). A set's
    /// `prior_state` buffer is dropped where the pipelines have no prior state (any buffer
    /// stands in for it there).
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
            .filter(|(b, _)| self.stateful || !b.state_only)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Laplace, Prior};
    use wgpu::naga;

    /// The priors whose WGSL the families splice.
    fn priors() -> [Prior; 2] {
        [
            Prior::Laplace(Laplace { lam: 0.0 }),
            Prior::Ssgl(crate::model::Ssgl::default()),
        ]
    }

    /// A family's module source as `Kernels::new` concatenates it, with `prior`'s WGSL.
    fn source(family: &Family, prior: &Prior) -> String {
        source_tiled(family, prior, Precision::F32, GemmTile::Narrow)
    }

    /// `source` with the dictionary stored in `precision` and the products' `tile`.
    fn source_tiled(
        family: &Family,
        prior: &Prior,
        precision: Precision,
        tile: GemmTile,
    ) -> String {
        let prior = prior.wgsl();
        family
            .sources
            .iter()
            .map(|part| part.text(prior, precision, tile))
            .collect()
    }

    /// The WGSL name of a naga type: `u32`, `f32`, a struct's name, or its debug form.
    fn wgsl_type(module: &naga::Module, ty: naga::Handle<naga::Type>) -> String {
        let t = &module.types[ty];
        match &t.inner {
            naga::TypeInner::Scalar(naga::Scalar {
                kind: naga::ScalarKind::Uint,
                width: 4,
            }) => "u32".into(),
            naga::TypeInner::Scalar(naga::Scalar {
                kind: naga::ScalarKind::Float,
                width: 4,
            }) => "f32".into(),
            naga::TypeInner::Struct { .. } => t.name.clone().unwrap_or_default(),
            other => format!("{other:?}"),
        }
    }

    /// Every difference between the WGSL struct `ty` of `module` and the Rust `layout`: name,
    /// size, and each member's name, type and offset (nested structs member by member), each
    /// named by its path with both values.
    fn differences(
        module: &naga::Module,
        ty: naga::Handle<naga::Type>,
        layout: &Layout,
        path: &str,
    ) -> Vec<String> {
        let mut out = Vec::new();
        let t = &module.types[ty];
        let name = t.name.as_deref().unwrap_or("?");
        if name != layout.name {
            out.push(format!(
                "{path}: struct {name} in the WGSL, {} in Rust",
                layout.name
            ));
        }
        let naga::TypeInner::Struct { members, span } = &t.inner else {
            out.push(format!("{path}: not a struct in the WGSL ({:?})", t.inner));
            return out;
        };
        if *span as usize != layout.size {
            out.push(format!(
                "{path}: size {span} in the WGSL, {} in Rust",
                layout.size
            ));
        }
        for i in 0..members.len().max(layout.members.len()) {
            match (members.get(i), layout.members.get(i)) {
                (Some(w), Some(r)) => {
                    let wname = w.name.as_deref().unwrap_or("?");
                    let at = format!("{path}.{}", r.name);
                    if wname != r.name {
                        out.push(format!(
                            "{path}: member {i} is {wname} in the WGSL, {} in Rust",
                            r.name
                        ));
                    }
                    let wty = wgsl_type(module, w.ty);
                    if wty != r.ty {
                        out.push(format!("{at}: type {wty} in the WGSL, {} in Rust", r.ty));
                    }
                    if w.offset as usize != r.offset {
                        out.push(format!(
                            "{at}: offset {} in the WGSL, {} in Rust",
                            w.offset, r.offset
                        ));
                    }
                    if let Some(nested) = r.nested {
                        out.extend(differences(module, w.ty, nested, &at));
                    }
                }
                (Some(w), None) => out.push(format!(
                    "{path}.{}: at offset {} in the WGSL only",
                    w.name.as_deref().unwrap_or("?"),
                    w.offset
                )),
                (None, Some(r)) => out.push(format!(
                    "{path}.{}: at offset {} in Rust only",
                    r.name, r.offset
                )),
                (None, None) => {}
            }
        }
        out
    }

    /// The differences between a family's WGSL (its `var<uniform> params` at binding 0 and that
    /// variable's struct) and the Rust `layout`.
    fn family_differences(family: &Family, layout: &Layout) -> Vec<String> {
        priors()
            .iter()
            .flat_map(|prior| family_differences_with(family, layout, prior))
            .collect()
    }

    /// `family_differences` with one prior's WGSL spliced in.
    fn family_differences_with(family: &Family, layout: &Layout, prior: &Prior) -> Vec<String> {
        let module = match naga::front::wgsl::parse_str(&source(family, prior)) {
            Ok(module) => module,
            Err(e) => return vec![format!("{}: {}", family.module, e.emit_to_string(""))],
        };
        let params = module
            .global_variables
            .iter()
            .map(|(_, v)| v)
            .find(|v| v.name.as_deref() == Some("params"));
        let Some(params) = params else {
            return vec![format!("{}: no `params` variable", family.module)];
        };
        let mut out = Vec::new();
        let binding = params.binding.as_ref().map(|b| (b.group, b.binding));
        if params.space != naga::AddressSpace::Uniform || binding != Some((0, 0)) {
            out.push(format!(
                "{}: params is {:?} at {binding:?}, not a uniform at (0, 0)",
                family.module, params.space
            ));
        }
        out.extend(differences(&module, params.ty, layout, family.module));
        out
    }

    fn slots(per_step: bool) -> Slots<GatherParams> {
        Slots {
            buffer: 0,
            first: 64,
            stride: 32,
            count: if per_step { 3 } else { 1 },
            per_step,
            params: PhantomData,
        }
    }

    /// A dispatch at step s reads slot s of a per-step section, the one slot of the others.
    #[test]
    fn slots_give_each_step_its_own_offset() {
        let per_step = slots(true);
        let offsets: Vec<u32> = (0..3).map(|s| per_step.offset(s)).collect();
        assert_eq!(offsets, [64, 96, 128]);
        let once = slots(false);
        assert_eq!((once.offset(0), once.offset(7)), (64, 64));
    }

    /// A step past a per-step section is refused, never another slot.
    #[test]
    #[should_panic(expected = "step 3 outside the 3 params slots")]
    fn slots_refuse_a_step_past_the_section() {
        slots(true).offset(3);
    }

    /// Every family's params struct in Rust matches its WGSL struct: name, size, and each
    /// member's name, type and offset (parsed by naga, the front end wgpu compiles with).
    #[test]
    fn params_match_the_wgsl() {
        let mut all = Vec::new();
        for family in FAMILIES {
            all.extend(family_differences(family, family.params));
        }
        assert!(
            all.is_empty(),
            "{} differences:\n{}",
            all.len(),
            all.join("\n")
        );
    }

    /// The comparison reports a wrong layout member by member (so the test above can fail).
    #[test]
    fn params_check_reports_each_difference() {
        let found = family_differences(&select::FAMILY, &<FistaParams as WgslStruct>::LAYOUT);
        for expected in [
            "select: struct SelectParams in the WGSL, FistaParams in Rust",
            "select: size 16 in the WGSL, 32 in Rust",
            "select: member 2 is _pad0 in the WGSL, lam in Rust",
            "select.lam: type u32 in the WGSL, f32 in Rust",
            "select.tau: at offset 16 in Rust only",
        ] {
            assert!(
                found.iter().any(|f| f == expected),
                "missing {expected:?} in {found:#?}"
            );
        }
        let found = family_differences(&gather::FAMILY, &<TangentParams as WgslStruct>::LAYOUT);
        for expected in [
            "gather: member 0 is stream in the WGSL, d in Rust",
            "gather.d: type Stream in the WGSL, u32 in Rust",
            "gather._pad0: offset 16 in the WGSL, 4 in Rust",
            "gather.gather_factor: at offset 32 in the WGSL only",
        ] {
            assert!(
                found.iter().any(|f| f == expected),
                "missing {expected:?} in {found:#?}"
            );
        }
    }

    /// Every family's declared layout matches its WGSL: each entry point exists, and each
    /// binding is declared in the module's sources with that number, name and access.
    #[test]
    fn declared_layouts_match_the_wgsl() {
        for family in FAMILIES {
            let source: String = family
                .sources
                .iter()
                .map(|part| part.text("", Precision::F32, GemmTile::Narrow))
                .collect();
            // A stateful prior's bindings are declared by its WGSL (SSGL's `prior_state`).
            let stateful = source.clone() + Prior::Ssgl(crate::model::Ssgl::default()).wgsl();
            for entry in family.entries {
                let function = format!("fn {}(", entry.entry_point);
                assert!(source.contains(&function), "{}: {function}", family.module);
                for binding in entry.bindings {
                    let source = if binding.state_only {
                        &stateful
                    } else {
                        &source
                    };
                    let access = if binding.read_only {
                        "read"
                    } else {
                        "read_write"
                    };
                    let declaration = format!(
                        "@group(0) @binding({}) var<storage, {access}> {}:",
                        binding.number, binding.name
                    );
                    assert!(
                        source.contains(&declaration),
                        "{} {}: {declaration}",
                        family.module,
                        entry.entry_point
                    );
                }
            }
        }
    }

    /// Every family's module parses and validates (naga, as wgpu does before compiling) with
    /// each products' tile, dictionary precision and prior, so a tile that only a GPU would pick
    /// is checked without one.
    #[test]
    fn every_module_validates_with_each_tile() {
        let mut failures = Vec::new();
        for family in FAMILIES {
            for tile in [GemmTile::Narrow, GemmTile::Wide] {
                for precision in [Precision::F32, Precision::F16] {
                    for prior in priors() {
                        let text = source_tiled(family, &prior, precision, tile);
                        let at = format!("{} ({tile:?}, {precision:?}, {prior:?})", family.module);
                        let module = match naga::front::wgsl::parse_str(&text) {
                            Ok(module) => module,
                            Err(e) => {
                                failures.push(format!("{at}: {}", e.emit_to_string(&text)));
                                continue;
                            }
                        };
                        // unpack2x16float (the f16 dictionary) is core WGSL that naga files
                        // under this capability; wgpu grants it on every adapter we run.
                        let capabilities = naga::valid::Capabilities::default()
                            | naga::valid::Capabilities::SHADER_FLOAT16_IN_FLOAT32;
                        let mut validator = naga::valid::Validator::new(
                            naga::valid::ValidationFlags::all(),
                            capabilities,
                        );
                        if let Err(e) = validator.validate(&module) {
                            failures.push(format!("{at}: {}", e.emit_to_string(&text)));
                        }
                    }
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
