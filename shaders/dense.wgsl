// Twin of `Dense::affine` (and `Mlp::infer`'s leaky ReLU) in src/amortize/mlp.rs, the learned
// sampler's layers: out (rows x n_out) = act(input (rows x n_in) . weights (n_in x n_out) + bias),
// act the leaky ReLU with slope `leak` below zero where `leaky` is 1, else the identity.
// A 16 x 16 workgroup computes a 16 x 16 output block in K-slices of 16 staged in workgroup
// memory; each invocation one output. The sum runs over k in increasing order (the CPU's gemm
// blocks it), so the two agree to rounding.

// Mirrored by `DenseParams` in src/backend/gpu/kernels/dense.rs.
struct DenseParams {
    rows: u32,
    n_in: u32,
    n_out: u32,
    leaky: u32,
    leak: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: DenseParams;
@group(0) @binding(1) var<storage, read> weights: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read> input: array<f32>;
@group(0) @binding(4) var<storage, read_write> output: array<f32>;

var<workgroup> tile_x: array<f32, 256>; // [row][k]
var<workgroup> tile_w: array<f32, 256>; // [k][column]

@compute @workgroup_size(16, 16)
fn dense_layer(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let row = wg.y * 16u + lid.y;
    let column = wg.x * 16u + lid.x;
    var acc = 0.0;
    for (var k0 = 0u; k0 < params.n_in; k0 += 16u) {
        var x = 0.0;
        if (row < params.rows && k0 + lid.x < params.n_in) {
            x = input[row * params.n_in + k0 + lid.x];
        }
        tile_x[lid.y * 16u + lid.x] = x;
        var w = 0.0;
        if (k0 + lid.y < params.n_in && column < params.n_out) {
            w = weights[(k0 + lid.y) * params.n_out + column];
        }
        tile_w[lid.y * 16u + lid.x] = w;
        workgroupBarrier();
        for (var k = 0u; k < 16u; k++) {
            acc += tile_x[lid.y * 16u + k] * tile_w[k * 16u + lid.x];
        }
        workgroupBarrier();
    }
    if (row < params.rows && column < params.n_out) {
        var v = acc + bias[column];
        if (params.leaky == 1u && v <= 0.0) {
            v *= params.leak;
        }
        output[row * params.n_out + column] = v;
    }
}
