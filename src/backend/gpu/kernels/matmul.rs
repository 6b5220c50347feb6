//! Launcher for `matmul.wgsl` and `gradient_step.wgsl`: the products, the fused gradient step
//! and the momentum draw, in a scalar-load and a vec4-load module with identical results.
//!
//! Its params: `MatmulParams`, mirrored in `shaders/matmul.wgsl`.

use super::{
    read, wgsl_struct, write, Binding, Entry, Family, Kernel, Source, Stream, WgslStruct, PHILOX,
    PRIOR_PARAMS, PRIOR_STATE,
};

const MATMUL: &str = include_str!("../../../../shaders/matmul.wgsl");
const MATMUL_SCALAR: &str = include_str!("../../../../shaders/matmul_scalar.wgsl");
const MATMUL_VEC4: &str = include_str!("../../../../shaders/matmul_vec4.wgsl");
const GRADIENT_STEP: &str = include_str!("../../../../shaders/gradient_step.wgsl");
const TILE_NARROW: &str = include_str!("../../../../shaders/gemm_tile_narrow.wgsl");
const TILE_WIDE: &str = include_str!("../../../../shaders/gemm_tile_wide.wgsl");

/// The products' workgroup tile (`shaders/gemm_tile_*.wgsl`). Both sum each output in one f32
/// accumulator in increasing k, so they give the same bits; they differ in how much work an
/// invocation holds in registers and how many workgroups a product launches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum GemmTile {
    /// 16 × 8 invocations, a 64 × 64 output block, an 8 × 4 register tile (0.094 workgroup
    /// loads per FMA, 8 KiB of workgroup memory): within wgpu's downlevel limits, so every
    /// adapter runs it, and more workgroups at few chains.
    #[default]
    Narrow,
    /// 16 × 16 invocations, a 128 × 128 output block, an 8 × 8 register tile (0.0625 loads per
    /// FMA, 16 KiB of workgroup memory): for GPUs, where shared-memory bandwidth bounds the
    /// narrow tile, at chain counts that give enough 128-row blocks.
    Wide,
}

/// Chains from which `GemmTile::choose` takes the wide tile on a GPU. Measured on an NVIDIA H200
/// (Vulkan, 784 × 3136, device time of 60 steps; docs/benchmarks.md, "A real GPU"): the narrow
/// tile 37% faster at 1,024 chains, the two level at 4,096, the wide one 7% faster at 16,384.
pub const WIDE_TILE_MIN_CHAINS: usize = 4096;

impl GemmTile {
    /// The tile's WGSL (constants, workgroup arrays, `tile_row`, `tile_col`, `accumulate_slice`).
    pub(super) fn wgsl(self) -> &'static str {
        match self {
            GemmTile::Narrow => TILE_NARROW,
            GemmTile::Wide => TILE_WIDE,
        }
    }

    /// Rows and columns of the output block one workgroup computes.
    pub fn block(self) -> u32 {
        match self {
            GemmTile::Narrow => 64,
            GemmTile::Wide => 128,
        }
    }

    /// Invocations per workgroup.
    pub fn invocations(self) -> u32 {
        match self {
            GemmTile::Narrow => 128,
            GemmTile::Wide => 256,
        }
    }

    /// Bytes of workgroup memory the staged K-slices take.
    pub fn workgroup_bytes(self) -> u32 {
        2 * self.block() * 16 * 4
    }

    /// Its name in settings and reports (`narrow`, `wide`).
    pub fn name(self) -> &'static str {
        match self {
            GemmTile::Narrow => "narrow",
            GemmTile::Wide => "wide",
        }
    }

    /// Parses a setting's value: `narrow` or `wide`.
    pub fn parse(value: &str) -> Option<GemmTile> {
        match value {
            "narrow" => Some(GemmTile::Narrow),
            "wide" => Some(GemmTile::Wide),
            _ => None,
        }
    }

    /// Whether a device with `limits` can run the tile's kernels.
    pub fn fits(self, limits: &wgpu::Limits) -> bool {
        let side = self.invocations() / 16;
        limits.max_compute_invocations_per_workgroup >= self.invocations()
            && limits.max_compute_workgroup_size_x >= 16
            && limits.max_compute_workgroup_size_y >= side
            && limits.max_compute_workgroup_storage_size >= self.workgroup_bytes()
    }

    /// The tile for `chains` chains on an adapter of type `device`: the wide one on a GPU (not a
    /// software renderer such as lavapipe, which runs the shaders on the CPU) whose limits hold
    /// it, from `WIDE_TILE_MIN_CHAINS` chains; the narrow one otherwise.
    pub fn choose(device: wgpu::DeviceType, limits: &wgpu::Limits, chains: usize) -> GemmTile {
        let gpu = matches!(
            device,
            wgpu::DeviceType::DiscreteGpu
                | wgpu::DeviceType::IntegratedGpu
                | wgpu::DeviceType::VirtualGpu
        );
        if gpu && chains >= WIDE_TILE_MIN_CHAINS && GemmTile::Wide.fits(limits) {
            GemmTile::Wide
        } else {
            GemmTile::Narrow
        }
    }

    /// Workgroups of a product with `rows` output rows (chains) and `columns` output columns.
    pub fn groups(self, rows: usize, columns: usize) -> [u32; 3] {
        let block = self.block() as usize;
        [
            columns.div_ceil(block) as u32,
            rows.div_ceil(block) as u32,
            1,
        ]
    }
}

wgsl_struct! {
    /// `struct MatmulParams` in `shaders/matmul.wgsl` (a uniform, one slot per step). The
    /// products read the shape and `y_stride`; the gradient step and the momentum draw the rest.
    pub struct MatmulParams {
        /// The momentum's and the SGHMC noise's streams.
        stream: Stream,
        /// Rows in this group of buffers.
        chains: u32,
        /// Observation dimension d.
        d: u32,
        /// Code dimension p.
        p: u32,
        /// Row stride of y in `residual_product` (0 broadcasts one row).
        y_stride: u32,
        /// Step within the outer iteration (a counter word).
        step: u32,
        /// 1: inject SGHMC noise in `gradient_step`.
        noise: u32,
        /// Step size eta.
        eta: f32,
        /// sqrt(2 eta), rounded on the host like the CPU.
        noise_scale: f32,
        /// 1: `--noise gibbs`, chain_precision holds √τ and gradient_step moves the position
        /// by (eta·r)/√τ (preconditioned by 1/τ).
        preconditioned: u32,
        /// Padding to 16 bytes.
        _pad0: u32,
        /// Padding to 16 bytes.
        _pad1: u32,
        /// Padding to 16 bytes.
        _pad2: u32,
    }
}

const RESIDUAL_PRODUCT: &[Binding] = &[
    read(1, "dict"),
    read(2, "lhs"),
    read(3, "y"),
    write(4, "out"),
];
const TRANSPOSE_PRODUCT: &[Binding] = &[read(1, "dict"), read(2, "lhs"), write(4, "out")];
const DRAW_MOMENTUM: &[Binding] = &[write(6, "momentum")];
const GRADIENT_STEP_BINDINGS: &[Binding] = &[
    read(1, "dict"),
    read(2, "lhs"),
    write(5, "position"),
    write(6, "momentum"),
    read(13, "chain_precision"),
    PRIOR_STATE,
    PRIOR_PARAMS,
];
const FULL_GRADIENT: &[Binding] = &[
    read(1, "dict"),
    read(2, "lhs"),
    write(4, "out"),
    write(5, "position"),
    read(13, "chain_precision"),
    PRIOR_STATE,
    PRIOR_PARAMS,
];

/// The scalar-load module (any shape); takes the prior's WGSL.
pub(super) const SCALAR: Family = Family {
    module: "matmul",
    sources: &[
        Source::File(PHILOX),
        Source::Dict,
        Source::Tile,
        Source::File(MATMUL_SCALAR),
        Source::File(MATMUL),
        Source::Prior,
        Source::File(GRADIENT_STEP),
    ],
    params: &MatmulParams::LAYOUT,
    entries: &[
        Entry {
            kernel: Kernel::ResidualProduct,
            entry_point: "residual_product",
            bindings: RESIDUAL_PRODUCT,
        },
        Entry {
            kernel: Kernel::TransposeProduct,
            entry_point: "transpose_product",
            bindings: TRANSPOSE_PRODUCT,
        },
        Entry {
            kernel: Kernel::DrawMomentum,
            entry_point: "draw_momentum",
            bindings: DRAW_MOMENTUM,
        },
        Entry {
            kernel: Kernel::GradientStep,
            entry_point: "gradient_step",
            bindings: GRADIENT_STEP_BINDINGS,
        },
        Entry {
            kernel: Kernel::FullGradient,
            entry_point: "full_gradient",
            bindings: FULL_GRADIENT,
        },
    ],
};

/// The vec4-load module (d and p multiples of 4); takes the prior's WGSL.
pub(super) const VEC4: Family = Family {
    module: "matmul_vec4",
    sources: &[
        Source::File(PHILOX),
        Source::DictVec4,
        Source::Tile,
        Source::File(MATMUL_VEC4),
        Source::File(MATMUL),
        Source::Prior,
        Source::File(GRADIENT_STEP),
    ],
    params: &MatmulParams::LAYOUT,
    entries: &[
        Entry {
            kernel: Kernel::ResidualProductVec4,
            entry_point: "residual_product",
            bindings: RESIDUAL_PRODUCT,
        },
        Entry {
            kernel: Kernel::TransposeProductVec4,
            entry_point: "transpose_product",
            bindings: TRANSPOSE_PRODUCT,
        },
        Entry {
            kernel: Kernel::GradientStepVec4,
            entry_point: "gradient_step",
            bindings: GRADIENT_STEP_BINDINGS,
        },
        Entry {
            kernel: Kernel::FullGradientVec4,
            entry_point: "full_gradient",
            bindings: FULL_GRADIENT,
        },
    ],
};

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

buffers! {
    /// Buffers of `residual_product`.
    shaped ResidualProductBuffers(MatmulParams) => Kernel::ResidualProduct, { dict, lhs, y, out }
}

buffers! {
    /// Buffers of `transpose_product`.
    shaped TransposeProductBuffers(MatmulParams) => Kernel::TransposeProduct, { dict, lhs, out }
}

buffers! {
    /// Buffers of `draw_momentum`.
    DrawMomentumBuffers(MatmulParams) => Kernel::DrawMomentum, { momentum }
}

buffers! {
    /// Buffers of `gradient_step`.
    shaped GradientStepBuffers(MatmulParams) => Kernel::GradientStep, { dict, lhs, position, momentum, chain_precision, prior_state, prior_params }
}

buffers! {
    /// Buffers of `full_gradient`.
    shaped FullGradientBuffers(MatmulParams) => Kernel::FullGradient, { dict, lhs, out, position, chain_precision, prior_state, prior_params }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wide tile only on GPUs, from `WIDE_TILE_MIN_CHAINS` chains, within the limits.
    #[test]
    fn the_wide_tile_is_chosen_for_many_chains_on_a_gpu_that_holds_it() {
        let limits = wgpu::Limits::default();
        let many = WIDE_TILE_MIN_CHAINS;
        for gpu in [
            wgpu::DeviceType::DiscreteGpu,
            wgpu::DeviceType::IntegratedGpu,
            wgpu::DeviceType::VirtualGpu,
        ] {
            assert_eq!(GemmTile::choose(gpu, &limits, many), GemmTile::Wide);
            assert_eq!(GemmTile::choose(gpu, &limits, many - 1), GemmTile::Narrow);
        }
        for other in [wgpu::DeviceType::Cpu, wgpu::DeviceType::Other] {
            assert_eq!(GemmTile::choose(other, &limits, many), GemmTile::Narrow);
        }
        // wgpu's default limits hold both (256 invocations, 16 KiB); its downlevel limits
        // (16,352 bytes of workgroup memory) and fewer invocations, only the narrow one.
        assert!(GemmTile::Wide.fits(&limits) && GemmTile::Narrow.fits(&limits));
        let downlevel = wgpu::Limits::downlevel_defaults();
        assert!(GemmTile::Narrow.fits(&downlevel) && !GemmTile::Wide.fits(&downlevel));
        let gpu = wgpu::DeviceType::DiscreteGpu;
        assert_eq!(GemmTile::choose(gpu, &downlevel, many), GemmTile::Narrow);
        let fewer_invocations = wgpu::Limits {
            max_compute_invocations_per_workgroup: 128,
            ..limits
        };
        assert!(!GemmTile::Wide.fits(&fewer_invocations));
        assert!(GemmTile::Narrow.fits(&fewer_invocations));
    }

    /// Each tile's workgroups cover every output, with no block wholly outside.
    #[test]
    fn product_groups_cover_the_output() {
        for tile in [GemmTile::Narrow, GemmTile::Wide] {
            let b = tile.block() as usize;
            for (rows, columns) in [(1, 1), (b, b), (b + 1, 3 * b - 1), (4096, 784)] {
                let [x, y, z] = tile.groups(rows, columns);
                assert_eq!(z, 1);
                assert!(x as usize * b >= columns && (x as usize - 1) * b < columns);
                assert!(y as usize * b >= rows && (y as usize - 1) * b < rows);
            }
        }
        assert_eq!(GemmTile::Wide.groups(1024, 784), [7, 8, 1]);
        assert_eq!(GemmTile::Narrow.groups(1024, 784), [13, 16, 1]);
        assert_eq!(GemmTile::Wide.workgroup_bytes(), 16384);
        assert_eq!(GemmTile::Narrow.workgroup_bytes(), 8192);
    }
}
