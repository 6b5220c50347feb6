// Twin of src/backend/cpu/matmul.rs: the two dense products on chain-major blocks, A is d x p.
//   residual_product:  out (chains x d) = lhs (chains x p) . A^T - y   (per chain A z - y)
//   transpose_product: out (chains x p) = lhs (chains x d) . A         (per chain A^T r)
// Tiling: a 16 x 16 workgroup computes a 64 x 64 output block (64 chains x 64 columns) in K-slices
// of 16 staged in workgroup memory (2 x 4 KiB); each invocation keeps a 4 x 4 register tile.
// Loads are scalar and guarded, so any d, p and chain count work (edges read zeros); each output
// is one f32 sum in increasing k. gradient_step.wgsl reuses `product_nn` with fused epilogues.

const TILE_M: u32 = 64u;
const TILE_N: u32 = 64u;
const TILE_K: u32 = 16u;

@group(0) @binding(1) var<storage, read> dict: array<f32>;
@group(0) @binding(2) var<storage, read> lhs: array<f32>;
@group(0) @binding(3) var<storage, read> y: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

var<workgroup> tile_l: array<f32, 1024>; // [k][m]
var<workgroup> tile_r: array<f32, 1024>; // [k][n]

// The register tile after the K loop, given the staged slices.
fn accumulate_slice(lid: vec3<u32>, acc: ptr<function, array<f32, 16>>) {
    for (var k = 0u; k < TILE_K; k++) {
        var a: array<f32, 4>;
        var b: array<f32, 4>;
        for (var i = 0u; i < 4u; i++) {
            a[i] = tile_l[k * TILE_M + lid.y * 4u + i];
            b[i] = tile_r[k * TILE_N + lid.x * 4u + i];
        }
        for (var i = 0u; i < 4u; i++) {
            for (var jj = 0u; jj < 4u; jj++) {
                (*acc)[i * 4u + jj] += a[i] * b[jj];
            }
        }
    }
}

// lhs (chains x K) . A^T with K = p, N = d: A is read along its rows (contiguous in k).
fn product_nt(wg: vec3<u32>, lid: vec3<u32>) -> array<f32, 16> {
    let tid = lid.y * 16u + lid.x;
    let row0 = wg.y * TILE_M;
    let col0 = wg.x * TILE_N;
    let kdim = params.p;
    var acc: array<f32, 16>;
    for (var k0 = 0u; k0 < kdim; k0 += TILE_K) {
        for (var r = 0u; r < 4u; r++) {
            let e = tid + r * 256u;
            let mk = e / TILE_K;
            let kk = e % TILE_K;
            let gk = k0 + kk;
            var v = 0.0;
            if (row0 + mk < params.chains && gk < kdim) {
                v = lhs[(row0 + mk) * kdim + gk];
            }
            tile_l[kk * TILE_M + mk] = v;
            var w = 0.0;
            if (col0 + mk < params.d && gk < kdim) {
                w = dict[(col0 + mk) * kdim + gk];
            }
            tile_r[kk * TILE_N + mk] = w;
        }
        workgroupBarrier();
        accumulate_slice(lid, &acc);
        workgroupBarrier();
    }
    return acc;
}

// lhs (chains x K) . A with K = d, N = p: A is read along its rows (contiguous in n).
fn product_nn(wg: vec3<u32>, lid: vec3<u32>) -> array<f32, 16> {
    let tid = lid.y * 16u + lid.x;
    let row0 = wg.y * TILE_M;
    let col0 = wg.x * TILE_N;
    let kdim = params.d;
    var acc: array<f32, 16>;
    for (var k0 = 0u; k0 < kdim; k0 += TILE_K) {
        for (var r = 0u; r < 4u; r++) {
            let e = tid + r * 256u;
            let mk = e / TILE_K;
            let kk = e % TILE_K;
            var v = 0.0;
            if (row0 + mk < params.chains && k0 + kk < kdim) {
                v = lhs[(row0 + mk) * kdim + k0 + kk];
            }
            tile_l[kk * TILE_M + mk] = v;
            let kn = e / TILE_N;
            let nn = e % TILE_N;
            var w = 0.0;
            if (k0 + kn < kdim && col0 + nn < params.p) {
                w = dict[(k0 + kn) * params.p + col0 + nn];
            }
            tile_r[kn * TILE_N + nn] = w;
        }
        workgroupBarrier();
        accumulate_slice(lid, &acc);
        workgroupBarrier();
    }
    return acc;
}

@compute @workgroup_size(16, 16)
fn residual_product(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let acc = product_nt(wg, lid);
    for (var i = 0u; i < 4u; i++) {
        let m = wg.y * TILE_M + lid.y * 4u + i;
        for (var jj = 0u; jj < 4u; jj++) {
            let n = wg.x * TILE_N + lid.x * 4u + jj;
            if (m < params.chains && n < params.d) {
                out[m * params.d + n] = acc[i * 4u + jj] - y[m * params.y_stride + n];
            }
        }
    }
}

@compute @workgroup_size(16, 16)
fn transpose_product(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let acc = product_nn(wg, lid);
    for (var i = 0u; i < 4u; i++) {
        let m = wg.y * TILE_M + lid.y * 4u + i;
        for (var jj = 0u; jj < 4u; jj++) {
            let n = wg.x * TILE_N + lid.x * 4u + jj;
            if (m < params.chains && n < params.p) {
                out[m * params.p + n] = acc[i * 4u + jj];
            }
        }
    }
}
