//! The WGSL kernels' shared pieces: the `Params` block, the kernel handles, pipeline compilation and caching.
//!
//! Each kernel family (its WGSL sources, entry points and bind-group layouts) is declared in its
//! own launcher module under `kernels/`, named after the WGSL file it runs.

use bytemuck::{Pod, Zeroable};

/// Mirrors `struct Params` in `shaders/params.wgsl` field by field (a uniform; 96 bytes).
///
/// One layout shared by every kernel (one slot per step, chosen by dynamic offset); each family's
/// launcher module lists the fields its WGSL reads.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct Params {
    /// Rows in this group of buffers.
    pub chains: u32,
    /// Global index of the group's first chain: keys the generator.
    pub chain_offset: u32,
    /// Observation dimension d.
    pub d: u32,
    /// Code dimension p.
    pub p: u32,
    /// Observations in the dataset.
    pub n: u32,
    /// Minibatch size m.
    pub batch: u32,
    /// Low word of the seed.
    pub seed_lo: u32,
    /// High word of the seed.
    pub seed_hi: u32,
    /// Outer iteration (the generator counter).
    pub outer: u32,
    /// Step within the outer iteration (the generator counter).
    pub step: u32,
    /// 1: inject SGHMC noise in `gradient_step`.
    pub noise: u32,
    /// 1: data packed 4 bytes per word; 0: f32 bits.
    pub u8_data: u32,
    /// Row stride of y in `residual_product` (0 broadcasts one row).
    pub y_stride: u32,
    /// The prior's scalar (`Prior::gpu_scalar`; Laplace: lam), or FISTA's lam.
    pub lam: f32,
    /// Step size eta (epsilon for HMC, h for MALA).
    pub eta: f32,
    /// sqrt(2 eta), rounded on the host like the CPU (SGHMC and MALA).
    pub noise_scale: f32,
    /// scale / m, rounded on the host like the CPU.
    pub gather_factor: f32,
    /// Delta of the MH proposal norms: eta T (RMLD), h (MALA).
    pub delta: f32,
    /// FISTA 1/L.
    pub step_size: f32,
    /// FISTA lam/L.
    pub tau: f32,
    /// FISTA t/t'.
    pub c_u: f32,
    /// FISTA (t-1)/t'.
    pub c_prev: f32,
    /// 1/sigma², the likelihood's precision.
    pub inv_sigma2: f32,
    /// 1: `mh_terms` adds HMC's kinetic difference (the program's `ChainOp::MhTerms`).
    pub kinetic: u32,
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
}

/// Declares a family's typed buffer set for one entry point: a field per storage binding, named
/// and ordered as the entry declares them, and `bind` (the kernel and its bind group). `shaped`
/// entries take (d, p) and bind the vec4-load twin where the shape allows (`Kernel::for_shape`).
macro_rules! buffers {
    (@set $(#[$doc:meta])* $name:ident { $($field:ident),+ }) => {
        $(#[$doc])*
        pub(crate) struct $name<'a> {
            $(pub(crate) $field: &'a wgpu::Buffer,)+
        }

        impl $name<'_> {
            /// A bind group for `kernel` with these buffers, checked against its layout by name.
            fn bind_as(
                &self,
                kernels: &super::Kernels,
                device: &wgpu::Device,
                params: &wgpu::Buffer,
                kernel: super::Kernel,
            ) -> wgpu::BindGroup {
                let names = [$(stringify!($field)),+];
                let buffers = [$(self.$field),+];
                kernels.bind_named(device, kernel, params, &names, &buffers)
            }
        }
    };
    ($(#[$doc:meta])* $name:ident => $kernel:expr, { $($field:ident),+ $(,)? }) => {
        buffers!(@set $(#[$doc])* $name { $($field),+ });

        impl $name<'_> {
            /// The kernel and a bind group for it with these buffers and the params slots.
            pub(crate) fn bind(
                &self,
                kernels: &super::Kernels,
                device: &wgpu::Device,
                params: &wgpu::Buffer,
            ) -> (super::Kernel, wgpu::BindGroup) {
                ($kernel, self.bind_as(kernels, device, params, $kernel))
            }
        }
    };
    ($(#[$doc:meta])* shaped $name:ident => $kernel:expr, { $($field:ident),+ $(,)? }) => {
        buffers!(@set $(#[$doc])* $name { $($field),+ });

        impl $name<'_> {
            /// The kernel for a d × p shape (its vec4 twin where allowed) and a bind group for it
            /// with these buffers and the params slots.
            pub(crate) fn bind(
                &self,
                kernels: &super::Kernels,
                device: &wgpu::Device,
                params: &wgpu::Buffer,
                (d, p): (usize, usize),
            ) -> (super::Kernel, wgpu::BindGroup) {
                let kernel = $kernel.for_shape(d, p);
                (kernel, self.bind_as(kernels, device, params, kernel))
            }
        }
    };
}

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

/// `struct Params` and its binding 0, which every module starts with.
const PARAMS: &str = include_str!("../../../shaders/params.wgsl");
/// The counter-based generator, shared by every module that draws.
const PHILOX: &str = include_str!("../../../shaders/philox.wgsl");
/// The workgroup reduction, shared by the kernel-HMC and tangent modules.
const WORKGROUP_SUM: &str = include_str!("../../../shaders/workgroup_sum.wgsl");

/// One piece of a shader module: WGSL has no includes, so a module is its pieces concatenated.
#[derive(Clone, Copy, Debug)]
enum Source {
    /// A WGSL file's text.
    File(&'static str),
    /// The prior's WGSL (`Prior::wgsl`), supplied when the pipelines are built.
    Prior,
}

/// A storage binding of an entry point: its number, its name in the WGSL, and its access.
#[derive(Clone, Copy, Debug)]
struct Binding {
    number: u32,
    name: &'static str,
    read_only: bool,
}

/// A read-only storage binding (`var<storage, read>`).
const fn read(number: u32, name: &'static str) -> Binding {
    Binding {
        number,
        name,
        read_only: true,
    }
}

/// A read-write storage binding (`var<storage, read_write>`).
const fn write(number: u32, name: &'static str) -> Binding {
    Binding {
        number,
        name,
        read_only: false,
    }
}

/// An entry point of a family's module: the kernel it is, its WGSL name, and its storage
/// bindings in the order `Kernels::bind` takes buffers (binding 0 is always the params uniform).
#[derive(Clone, Copy, Debug)]
struct Entry {
    kernel: Kernel,
    entry_point: &'static str,
    bindings: &'static [Binding],
}

/// A kernel family: one shader module (its sources, concatenated) and the entry points it offers.
#[derive(Clone, Copy, Debug)]
struct Family {
    module: &'static str,
    sources: &'static [Source],
    entries: &'static [Entry],
}

/// Every family, in the order their modules are compiled.
const FAMILIES: [&Family; 10] = [
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
];

/// How many kernels `Kernel` names.
const KERNELS: usize = Kernel::TangentStep as usize + 1;

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

/// Compiled pipelines with their explicit bind group layouts, indexed by `Kernel`'s discriminant.
pub struct Kernels {
    pipelines: Vec<(wgpu::BindGroupLayout, wgpu::ComputePipeline)>,
}

impl Kernels {
    /// Compiles every family's module, with `prior_wgsl` (a `Prior::wgsl()`) where a family
    /// takes the prior, and builds every pipeline (once per device and prior).
    pub fn new(device: &wgpu::Device, prior_wgsl: &str) -> Kernels {
        let modules: Vec<wgpu::ShaderModule> = FAMILIES
            .iter()
            .map(|family| {
                let source: String = family
                    .sources
                    .iter()
                    .map(|part| match part {
                        Source::File(text) => text,
                        Source::Prior => prior_wgsl,
                    })
                    .collect();
                device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(family.module),
                    source: wgpu::ShaderSource::Wgsl(source.into()),
                })
            })
            .collect();
        let params_size = std::num::NonZeroU64::new(std::mem::size_of::<Params>() as u64);
        let pipelines = LOCATION
            .iter()
            .map(|&(family, entry)| {
                let Entry {
                    entry_point,
                    bindings,
                    ..
                } = FAMILIES[family].entries[entry];
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
                entries.extend(bindings.iter().map(|binding| wgpu::BindGroupLayoutEntry {
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
        Kernels { pipelines }
    }

    /// A bind group for `kernel`: the params buffer (one slot visible, chosen by dynamic offset)
    /// and `buffers` for its storage bindings in the order its family declares them.
    ///
    /// The positional form, for measuring one exact kernel (the benches); the backend binds
    /// through its families' typed buffer sets, which name every binding.
    ///
    /// # Panics
    /// When `buffers` does not have one buffer per declared binding (a programming error).
    pub fn bind(
        &self,
        device: &wgpu::Device,
        kernel: Kernel,
        params: &wgpu::Buffer,
        buffers: &[&wgpu::Buffer],
    ) -> wgpu::BindGroup {
        let entry = entry(kernel);
        assert_eq!(
            buffers.len(),
            entry.bindings.len(),
            "{} binds {:?}",
            entry.entry_point,
            entry.bindings.iter().map(|b| b.name).collect::<Vec<_>>()
        );
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: params,
                offset: 0,
                size: std::num::NonZeroU64::new(std::mem::size_of::<Params>() as u64),
            }),
        }];
        entries.extend(entry.bindings.iter().zip(buffers).map(|(binding, buffer)| {
            wgpu::BindGroupEntry {
                binding: binding.number,
                resource: buffer.as_entire_binding(),
            }
        }));
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(entry.entry_point),
            layout: &self.pipelines[kernel as usize].0,
            entries: &entries,
        })
    }

    /// `bind` for a family's typed buffer set: `names` must be the entry's binding names, in
    /// its order (checked, so a buffer set cannot bind a kernel it does not describe).
    ///
    /// # Panics
    /// When `names` are not `kernel`'s bindings (a programming error).
    fn bind_named(
        &self,
        device: &wgpu::Device,
        kernel: Kernel,
        params: &wgpu::Buffer,
        names: &[&str],
        buffers: &[&wgpu::Buffer],
    ) -> wgpu::BindGroup {
        let entry = entry(kernel);
        let declared: Vec<&str> = entry.bindings.iter().map(|b| b.name).collect();
        assert_eq!(names, declared, "{}'s bindings", entry.entry_point);
        self.bind(device, kernel, params, buffers)
    }

    /// Records one dispatch of `kernel` with params slot at byte `offset`.
    pub fn dispatch(
        &self,
        pass: &mut wgpu::ComputePass,
        kernel: Kernel,
        group: &wgpu::BindGroup,
        offset: u32,
        workgroups: [u32; 3],
    ) {
        pass.set_pipeline(&self.pipelines[kernel as usize].1);
        pass.set_bind_group(0, group, &[offset]);
        pass.dispatch_workgroups(workgroups[0], workgroups[1], workgroups[2]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every family's declared layout matches its WGSL: each entry point exists, and each
    /// binding is declared in the module's sources with that number, name and access.
    #[test]
    fn declared_layouts_match_the_wgsl() {
        for family in FAMILIES {
            let source: String = family
                .sources
                .iter()
                .map(|part| match part {
                    Source::File(text) => text,
                    Source::Prior => "",
                })
                .collect();
            for entry in family.entries {
                let function = format!("fn {}(", entry.entry_point);
                assert!(source.contains(&function), "{}: {function}", family.module);
                for binding in entry.bindings {
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
}
