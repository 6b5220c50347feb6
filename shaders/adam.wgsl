// Twin of `Adam::step` in src/amortize/mlp.rs: one Adam step over `count` parameters, with the
// bias corrections c1 = 1 - beta1^t and c2 = 1 - beta2^t computed on the host in f32 as the CPU
// computes them.

// Mirrored by `AdamParams` in src/backend/gpu/kernels/dense.rs.
struct AdamParams {
    count: u32,
    lr: f32,
    beta1: f32,
    beta2: f32,
    c1: f32,
    c2: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: AdamParams;
@group(0) @binding(1) var<storage, read_write> values: array<f32>;
@group(0) @binding(2) var<storage, read> gradient: array<f32>;
@group(0) @binding(3) var<storage, read_write> first_moment: array<f32>;
@group(0) @binding(4) var<storage, read_write> second_moment: array<f32>;

@compute @workgroup_size(256)
fn adam_step(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let j = gid.y * groups.x * 256u + gid.x;
    if (j >= params.count) {
        return;
    }
    let g = gradient[j];
    let m = params.beta1 * first_moment[j] + (1.0 - params.beta1) * g;
    let v = params.beta2 * second_moment[j] + (1.0 - params.beta2) * g * g;
    first_moment[j] = m;
    second_moment[j] = v;
    values[j] = values[j] - params.lr * (m / params.c1) / (sqrt(v / params.c2) + 1e-8);
}
