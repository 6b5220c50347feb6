//! The WGSL kernels: sources (listed once, here), the shared `Params` block, pipelines and layouts.

use bytemuck::{Pod, Zeroable};

/// Mirrors `struct Params` in `shaders/params.wgsl` field by field (a uniform; 96 bytes).
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

const PARAMS: &str = include_str!("../../../shaders/params.wgsl");
const PHILOX: &str = include_str!("../../../shaders/philox.wgsl");
const PHILOX_PROBE: &str = include_str!("../../../shaders/philox_probe.wgsl");
const GATHER: &str = include_str!("../../../shaders/gather.wgsl");
const MATMUL: &str = include_str!("../../../shaders/matmul.wgsl");
const MATMUL_SCALAR: &str = include_str!("../../../shaders/matmul_scalar.wgsl");
const MATMUL_VEC4: &str = include_str!("../../../shaders/matmul_vec4.wgsl");
const GRADIENT_STEP: &str = include_str!("../../../shaders/gradient_step.wgsl");
const MH_TERMS: &str = include_str!("../../../shaders/mh_terms.wgsl");
const SELECT: &str = include_str!("../../../shaders/select.wgsl");
const FISTA: &str = include_str!("../../../shaders/fista.wgsl");
const EXACT: &str = include_str!("../../../shaders/exact.wgsl");
const KERNEL_HMC: &str = include_str!("../../../shaders/kernel_hmc.wgsl");
const TANGENT: &str = include_str!("../../../shaders/tangent.wgsl");
const WORKGROUP_SUM: &str = include_str!("../../../shaders/workgroup_sum.wgsl");
/// Where a module takes the prior's WGSL (`Prior::wgsl`): the gradient-step and MH-term modules.
const PRIOR: &str = "";

/// The shader modules: WGSL has no includes, so a module is its files concatenated.
const MODULES: [(&str, &[&str]); 10] = [
    ("philox_probe", &[PARAMS, PHILOX, PHILOX_PROBE]),
    ("gather", &[PARAMS, PHILOX, GATHER]),
    (
        "matmul",
        &[PARAMS, PHILOX, MATMUL_SCALAR, MATMUL, PRIOR, GRADIENT_STEP],
    ),
    ("mh_terms", &[PARAMS, PHILOX, PRIOR, MH_TERMS]),
    ("select", &[PARAMS, SELECT]),
    ("fista", &[PARAMS, FISTA]),
    ("exact", &[PARAMS, PHILOX, EXACT]),
    (
        "matmul_vec4",
        &[PARAMS, PHILOX, MATMUL_VEC4, MATMUL, PRIOR, GRADIENT_STEP],
    ),
    ("kernel_hmc", &[PARAMS, PHILOX, WORKGROUP_SUM, KERNEL_HMC]),
    ("tangent", &[PARAMS, WORKGROUP_SUM, TANGENT]),
];

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

impl Kernel {
    /// The product kernels' vec4-load twins where every row of A and of the chain blocks starts
    /// on a 16-byte boundary (d and p multiples of 4); the results are identical.
    pub fn for_shape(self, d: usize, p: usize) -> Kernel {
        if !d.is_multiple_of(4) || !p.is_multiple_of(4) {
            return self;
        }
        match self {
            Kernel::ResidualProduct => Kernel::ResidualProductVec4,
            Kernel::TransposeProduct => Kernel::TransposeProductVec4,
            Kernel::GradientStep => Kernel::GradientStepVec4,
            Kernel::FullGradient => Kernel::FullGradientVec4,
            other => other,
        }
    }
}

const R: bool = true;
const W: bool = false;

/// A kernel's row: module index, entry point, storage bindings (number, read-only).
type Row = (Kernel, usize, &'static str, &'static [(u32, bool)]);

/// Per kernel: module, entry point, and its storage bindings (number, read-only) in the order
/// `Kernels::bind` takes buffers. Binding 0 is always the params uniform.
const TABLE: [Row; 28] = [
    (Kernel::PhiloxProbe, 0, "philox_probe", &[(1, R), (2, W)]),
    (Kernel::Gather, 1, "gather", &[(1, R), (2, W), (3, R)]),
    (
        Kernel::ResidualProduct,
        2,
        "residual_product",
        &[(1, R), (2, R), (3, R), (4, W)],
    ),
    (
        Kernel::TransposeProduct,
        2,
        "transpose_product",
        &[(1, R), (2, R), (4, W)],
    ),
    (Kernel::DrawMomentum, 2, "draw_momentum", &[(6, W)]),
    (
        Kernel::GradientStep,
        2,
        "gradient_step",
        &[(1, R), (2, R), (5, W), (6, W)],
    ),
    (
        Kernel::FullGradient,
        2,
        "full_gradient",
        &[(1, R), (2, R), (4, W), (5, W)],
    ),
    (
        Kernel::MhTerms,
        3,
        "mh_terms",
        &[
            (1, R),
            (2, R),
            (3, R),
            (4, R),
            (5, R),
            (6, R),
            (7, W),
            (8, R),
        ],
    ),
    (
        Kernel::Select,
        4,
        "select_accepted",
        &[(1, R), (2, R), (3, W), (4, R), (5, W), (6, R), (7, W)],
    ),
    (
        Kernel::FistaResidual,
        5,
        "fista_residual",
        &[(1, R), (2, R), (3, W)],
    ),
    (
        Kernel::FistaProx,
        5,
        "fista_prox",
        &[(1, R), (2, R), (3, W)],
    ),
    (
        Kernel::FistaObjective,
        5,
        "fista_objective",
        &[(1, R), (2, R), (4, R), (5, W), (6, W)],
    ),
    (
        Kernel::FistaUpdate,
        5,
        "fista_update",
        &[(1, R), (4, R), (6, W), (7, W), (8, W), (9, W), (10, W)],
    ),
    (
        Kernel::MalaProposal,
        6,
        "mala_proposal",
        &[(1, R), (2, R), (3, W)],
    ),
    (
        Kernel::LeapfrogDrift,
        6,
        "leapfrog_drift",
        &[(2, R), (3, W), (4, W)],
    ),
    (Kernel::LeapfrogKick, 6, "leapfrog_kick", &[(2, R), (4, W)]),
    (
        Kernel::ResidualProductVec4,
        7,
        "residual_product",
        &[(1, R), (2, R), (3, R), (4, W)],
    ),
    (
        Kernel::TransposeProductVec4,
        7,
        "transpose_product",
        &[(1, R), (2, R), (4, W)],
    ),
    (
        Kernel::GradientStepVec4,
        7,
        "gradient_step",
        &[(1, R), (2, R), (5, W), (6, W)],
    ),
    (
        Kernel::FullGradientVec4,
        7,
        "full_gradient",
        &[(1, R), (2, R), (4, W), (5, W)],
    ),
    (
        Kernel::KernelStep,
        8,
        "kernel_step",
        &[(1, R), (2, R), (3, W), (4, W), (5, W), (6, W)],
    ),
    (
        Kernel::KernelEnergy,
        8,
        "kernel_energy",
        &[(1, R), (2, R), (7, R), (8, W), (9, W)],
    ),
    (
        Kernel::KernelMhTerms,
        8,
        "kernel_mh_terms",
        &[
            (10, R),
            (11, R),
            (12, R),
            (13, R),
            (14, R),
            (15, R),
            (16, W),
        ],
    ),
    (
        Kernel::KernelSelect,
        8,
        "kernel_select",
        &[
            (17, R),
            (11, R),
            (18, W),
            (13, R),
            (19, W),
            (15, R),
            (20, W),
        ],
    ),
    (
        Kernel::MixtureResidual,
        8,
        "mixture_residual",
        &[(1, R), (2, R), (5, W), (6, W), (21, W)],
    ),
    (
        Kernel::MhTermsMixture,
        3,
        "mh_terms_mixture",
        &[
            (1, R),
            (2, R),
            (5, R),
            (6, R),
            (7, W),
            (8, R),
            (9, R),
            (10, R),
        ],
    ),
    (
        Kernel::TangentEnergy,
        9,
        "tangent_energy",
        &[(1, R), (2, R), (3, R), (4, R), (5, W), (6, W)],
    ),
    (
        Kernel::TangentStep,
        9,
        "tangent_step",
        &[(1, R), (2, R), (3, R), (7, W)],
    ),
];

// Every kernel has exactly one row, at the index of its discriminant: a kernel added to `Kernel`
// without its row (or rows out of order) fails to compile.
const _: () = {
    assert!(TABLE.len() == Kernel::TangentStep as usize + 1);
    let mut i = 0;
    while i < TABLE.len() {
        assert!(
            TABLE[i].0 as usize == i,
            "TABLE rows must follow Kernel's order"
        );
        i += 1;
    }
};

/// Compiled pipelines with their explicit bind group layouts, indexed like `TABLE`.
pub struct Kernels {
    pipelines: Vec<(wgpu::BindGroupLayout, wgpu::ComputePipeline)>,
}

impl Kernels {
    /// Compiles every module, with `prior_wgsl` (a `Prior::wgsl()`) where a module takes the
    /// prior, and builds every pipeline (once per device and prior).
    pub fn new(device: &wgpu::Device, prior_wgsl: &str) -> Kernels {
        let modules: Vec<wgpu::ShaderModule> = MODULES
            .iter()
            .map(|(name, parts)| {
                let source: String = parts
                    .iter()
                    .map(|&part| {
                        if std::ptr::eq(part, PRIOR) {
                            prior_wgsl
                        } else {
                            part
                        }
                    })
                    .collect();
                device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(name),
                    source: wgpu::ShaderSource::Wgsl(source.into()),
                })
            })
            .collect();
        let params_size = std::num::NonZeroU64::new(std::mem::size_of::<Params>() as u64);
        let pipelines = TABLE
            .iter()
            .map(|(_, module, entry, storage)| {
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
                entries.extend(storage.iter().map(|&(binding, read_only)| {
                    wgpu::BindGroupLayoutEntry {
                        binding,
                        visibility: wgpu::ShaderStages::COMPUTE,
                        ty: wgpu::BindingType::Buffer {
                            ty: wgpu::BufferBindingType::Storage { read_only },
                            has_dynamic_offset: false,
                            min_binding_size: None,
                        },
                        count: None,
                    }
                }));
                let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                    label: Some(entry),
                    entries: &entries,
                });
                let pipeline_layout =
                    device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                        label: Some(entry),
                        bind_group_layouts: &[Some(&layout)],
                        immediate_size: 0,
                    });
                let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(entry),
                    layout: Some(&pipeline_layout),
                    module: &modules[*module],
                    entry_point: Some(entry),
                    compilation_options: Default::default(),
                    cache: None,
                });
                (layout, pipeline)
            })
            .collect();
        Kernels { pipelines }
    }

    /// The kernel's row of `TABLE`: its discriminant, which the check below `TABLE` proves is
    /// its row at compile time (no lookup can miss or fall back to another kernel).
    fn index(kernel: Kernel) -> usize {
        kernel as usize
    }

    /// A bind group for `kernel`: the params buffer (one slot visible, chosen by dynamic offset)
    /// and `buffers` for its storage bindings in table order.
    pub fn bind(
        &self,
        device: &wgpu::Device,
        kernel: Kernel,
        params: &wgpu::Buffer,
        buffers: &[&wgpu::Buffer],
    ) -> wgpu::BindGroup {
        let index = Self::index(kernel);
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: params,
                offset: 0,
                size: std::num::NonZeroU64::new(std::mem::size_of::<Params>() as u64),
            }),
        }];
        entries.extend(
            TABLE[index]
                .3
                .iter()
                .zip(buffers)
                .map(|(&(binding, _), buffer)| wgpu::BindGroupEntry {
                    binding,
                    resource: buffer.as_entire_binding(),
                }),
        );
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(TABLE[index].2),
            layout: &self.pipelines[index].0,
            entries: &entries,
        })
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
        pass.set_pipeline(&self.pipelines[Self::index(kernel)].1);
        pass.set_bind_group(0, group, &[offset]);
        pass.dispatch_workgroups(workgroups[0], workgroups[1], workgroups[2]);
    }
}
