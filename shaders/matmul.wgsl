// Twin of src/backend/cpu/matmul.rs: the two dense products on chain-major blocks, A is d x p.
//   residual_product:  out (chains x d) = lhs (chains x p) . A^T - y   (per chain A z - y)
//   transpose_product: out (chains x p) = lhs (chains x d) . A         (per chain A^T r)
// Tiling: the tile file spliced before this one (gemm_tile_narrow.wgsl or gemm_tile_wide.wgsl,
// `GemmTile`) sets the workgroup (WG_X x WG_Y), its output block (TILE_M x TILE_N), the K-slice
// staged in workgroup memory as vec4 quads ([k][m / 4] and [k][n / 4], permuted by `slot_l` /
// `slot_r`), the register tile (REG_M x REG_N per invocation, `tile_row` / `tile_col`) and the
// inner loop, `accumulate_slice`; tests/gemm_static.rs counts its workgroup loads per FMA and the
// bank conflicts of the loop and of the staging stores from the text.
// The tile loads (and the `dict`/`lhs` bindings) come from matmul_scalar.wgsl (guarded scalar
// loads: any d, p and chain count) or matmul_vec4.wgsl (vec4 loads, for d and p multiples of 4,
// with the K loop double-buffered in registers); the sums are identical: each output is one f32
// sum in increasing k, whatever the tile.
// gradient_step.wgsl reuses `product_nn` with fused epilogues.

// Mirrored by `MatmulParams` in src/backend/gpu/kernels/matmul.rs: the products read the shape
// and y_stride; gradient_step.wgsl the rest (the prior's file, shaders/prior/*.wgsl, reads p).
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
    preconditioned: u32, // 1: --noise gibbs (chain_precision holds sqrt(tau); gradient_step.wgsl)
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: MatmulParams;

// Where quad `quad` of k-row k of a staged slice lives. Each k-row's quads are permuted by an
// XOR with (k / 4) * 2, so the transposed staging stores (a lane writes the four k of one global
// quad, 4 lanes per row) land in 8 quads, hence 32 banks, where a plain [k][m / 4] layout puts 4
// lanes on each bank; the inner loop's reads stay conflict-free, the XOR permuting quads within
// aligned groups of 8. tests/gemm_static.rs counts both.
fn slot_l(k: u32, quad: u32) -> u32 {
    return k * TILE_M4 + (quad ^ ((k / 4u) * 2u));
}

fn slot_r(k: u32, quad: u32) -> u32 {
    return k * TILE_N4 + (quad ^ ((k / 4u) * 2u));
}

@group(0) @binding(3) var<storage, read> y: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG_X, WG_Y)
fn residual_product(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let acc = product_nt(wg, lid);
    for (var i = 0u; i < REG_M; i++) {
        let m = tile_row(wg.y, lid.y, i);
        for (var jj = 0u; jj < REG_N; jj++) {
            let n = tile_col(wg.x, lid.x, jj);
            if (m < params.chains && n < params.d) {
                out[m * params.d + n] = acc[i * REG_N + jj] - y[m * params.y_stride + n];
            }
        }
    }
}

@compute @workgroup_size(WG_X, WG_Y)
fn transpose_product(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let acc = product_nn(wg, lid);
    for (var i = 0u; i < REG_M; i++) {
        let m = tile_row(wg.y, lid.y, i);
        for (var jj = 0u; jj < REG_N; jj++) {
            let n = tile_col(wg.x, lid.x, jj);
            if (m < params.chains && n < params.p) {
                out[m * params.p + n] = acc[i * REG_N + jj];
            }
        }
    }
}
