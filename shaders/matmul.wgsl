// Twin of src/backend/cpu/matmul.rs: the two dense products on chain-major blocks, A is d x p.
//   residual_product:  out (chains x d) = lhs (chains x p) . A^T - y   (per chain A z - y)
//   transpose_product: out (chains x p) = lhs (chains x d) . A         (per chain A^T r)
// Tiling: a 16 x 8 workgroup computes a 64 x 64 output block (64 chains x 64 columns) in K-slices
// of 16 staged in workgroup memory (2 x 4 KiB); each invocation keeps an 8 x 4 register tile
// (8 chains lid.y * 8.., 4 columns lid.x * 4..).
// The slices are stored as vec4 quads, [k][m / 4] and [k][n / 4], so the inner loop reads two lhs
// quads and one dict quad per k (3 workgroup loads per 32 FMAs, 0.094): a subgroup's 32 lanes read
// four lhs quads (broadcast) and 16 consecutive dict quads (conflict-free in every 8-lane phase of
// a 128-bit load).
// The vec4 loads' K loop is double-buffered in registers: the next slice's global loads are issued
// before the current slice's FMAs. tests/gemm_static.rs counts both from this text.
// The tile loads (and the `dict`/`lhs` bindings) come from matmul_scalar.wgsl (guarded scalar
// loads: any d, p and chain count) or matmul_vec4.wgsl (vec4 loads, for d and p multiples of 4);
// the sums are identical: each output is one f32 sum in increasing k either way.
// gradient_step.wgsl reuses `product_nn` with fused epilogues.

// Mirrored by `MatmulParams` in src/backend/gpu/kernels/matmul.rs: the products read the shape
// and y_stride; gradient_step.wgsl (and the prior's file, shaders/prior/*.wgsl, through lam) the rest.
struct MatmulParams {
    stream: Stream,
    chains: u32,      // rows in this group of buffers
    d: u32,
    p: u32,
    y_stride: u32,    // row stride of y in residual_product (0 broadcasts one row)
    step: u32,        // the step within the outer iteration, a counter word
    noise: u32,       // 1: inject SGHMC noise in gradient_step
    eta: f32,
    noise_scale: f32, // sqrt(2 eta), rounded on the host like the CPU
    inv_sigma2: f32,  // 1 / sigma^2, the likelihood's precision
    lam: f32,         // the prior's scalar (`Prior::gpu_scalar`)
    preconditioned: u32, // 1: --noise gibbs (chain_precision holds sqrt(tau); gradient_step.wgsl)
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: MatmulParams;

const TILE_M: u32 = 64u;
const TILE_N: u32 = 64u;
const TILE_K: u32 = 16u;
const TILE_M4: u32 = 16u; // TILE_M / 4: quads per staged lhs row
const TILE_N4: u32 = 16u; // TILE_N / 4: quads per staged dict row

@group(0) @binding(3) var<storage, read> y: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

var<workgroup> tile_l: array<vec4<f32>, 256>; // [k][m / 4]
var<workgroup> tile_r: array<vec4<f32>, 256>; // [k][n / 4]

// The register tile after the K loop, given the staged slices.
fn accumulate_slice(lid: vec3<u32>, acc: ptr<function, array<f32, 32>>) {
    for (var k = 0u; k < TILE_K; k++) {
        let a0 = tile_l[k * TILE_M4 + lid.y * 2u];
        let a1 = tile_l[k * TILE_M4 + lid.y * 2u + 1u];
        let b = tile_r[k * TILE_N4 + lid.x];
        for (var i = 0u; i < 4u; i++) {
            for (var jj = 0u; jj < 4u; jj++) {
                (*acc)[i * 4u + jj] += a0[i] * b[jj];
                (*acc)[(i + 4u) * 4u + jj] += a1[i] * b[jj];
            }
        }
    }
}

@compute @workgroup_size(16, 8)
fn residual_product(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let acc = product_nt(wg, lid);
    for (var i = 0u; i < 8u; i++) {
        let m = wg.y * TILE_M + lid.y * 8u + i;
        for (var jj = 0u; jj < 4u; jj++) {
            let n = wg.x * TILE_N + lid.x * 4u + jj;
            if (m < params.chains && n < params.d) {
                out[m * params.d + n] = acc[i * 4u + jj] - y[m * params.y_stride + n];
            }
        }
    }
}

@compute @workgroup_size(16, 8)
fn transpose_product(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let acc = product_nn(wg, lid);
    for (var i = 0u; i < 8u; i++) {
        let m = wg.y * TILE_M + lid.y * 8u + i;
        for (var jj = 0u; jj < 4u; jj++) {
            let n = wg.x * TILE_N + lid.x * 4u + jj;
            if (m < params.chains && n < params.p) {
                out[m * params.p + n] = acc[i * 4u + jj];
            }
        }
    }
}
