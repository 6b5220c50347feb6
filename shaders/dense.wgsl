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

// --- Training (twins of `Mlp::backward` in src/amortize/mlp.rs) ---------------------------------
// For a layer with input X (rows x n_in, the previous layer's activations), weights W and the
// gradient G (rows x n_out) of the loss with respect to its output (after the leaky ReLU's
// derivative, applied by the layer above):
//   dense_input_grad:  GX = G . W^T (rows x n_in), times the leaky ReLU's derivative at X where
//                      `leaky` is 1 (X is a hidden layer's activation: X > 0 exactly where its
//                      pre-activation is, as the slope is positive);
//   dense_weight_grad: GW = X^T . G (n_in x n_out);
//   dense_bias_grad:   Gb = the column sums of G.
// Each sum runs over its index in increasing order, in 16-wide slices staged in workgroup memory.

@group(0) @binding(5) var<storage, read> grad_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> grad_in: array<f32>;
@group(0) @binding(7) var<storage, read_write> grad_weights: array<f32>;
@group(0) @binding(8) var<storage, read_write> grad_bias: array<f32>;

@compute @workgroup_size(16, 16)
fn dense_input_grad(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let row = wg.y * 16u + lid.y;
    let column = wg.x * 16u + lid.x; // an input index i
    var acc = 0.0;
    for (var k0 = 0u; k0 < params.n_out; k0 += 16u) {
        var g = 0.0;
        if (row < params.rows && k0 + lid.x < params.n_out) {
            g = grad_out[row * params.n_out + k0 + lid.x];
        }
        tile_x[lid.y * 16u + lid.x] = g;
        // tile_w[k][i] = W[i][k0 + k], loaded by (lid.y = k, lid.x = i).
        var w = 0.0;
        if (column < params.n_in && k0 + lid.y < params.n_out) {
            w = weights[column * params.n_out + k0 + lid.y];
        }
        tile_w[lid.y * 16u + lid.x] = w;
        workgroupBarrier();
        for (var k = 0u; k < 16u; k++) {
            acc += tile_x[lid.y * 16u + k] * tile_w[k * 16u + lid.x];
        }
        workgroupBarrier();
    }
    if (row < params.rows && column < params.n_in) {
        var v = acc;
        if (params.leaky == 1u && input[row * params.n_in + column] <= 0.0) {
            v *= params.leak;
        }
        grad_in[row * params.n_in + column] = v;
    }
}

@compute @workgroup_size(16, 16)
fn dense_weight_grad(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let i = wg.y * 16u + lid.y;      // input index: the output row
    let column = wg.x * 16u + lid.x; // output index
    var acc = 0.0;
    for (var r0 = 0u; r0 < params.rows; r0 += 16u) {
        // tile_x[i][r] = X[r0 + r][i], loaded by (lid.y = r, lid.x = i).
        var x = 0.0;
        let ii = wg.y * 16u + lid.x;
        if (ii < params.n_in && r0 + lid.y < params.rows) {
            x = input[(r0 + lid.y) * params.n_in + ii];
        }
        tile_x[lid.x * 16u + lid.y] = x;
        var g = 0.0;
        if (r0 + lid.y < params.rows && column < params.n_out) {
            g = grad_out[(r0 + lid.y) * params.n_out + column];
        }
        tile_w[lid.y * 16u + lid.x] = g;
        workgroupBarrier();
        for (var r = 0u; r < 16u; r++) {
            acc += tile_x[lid.y * 16u + r] * tile_w[r * 16u + lid.x];
        }
        workgroupBarrier();
    }
    if (i < params.n_in && column < params.n_out) {
        grad_weights[i * params.n_out + column] = acc;
    }
}

@compute @workgroup_size(64)
fn dense_bias_grad(@builtin(global_invocation_id) gid: vec3<u32>) {
    let column = gid.x;
    if (column >= params.n_out) {
        return;
    }
    var acc = 0.0;
    for (var r = 0u; r < params.rows; r++) {
        acc += grad_out[r * params.n_out + column];
    }
    grad_bias[column] = acc;
}
