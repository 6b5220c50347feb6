// Twin of src/backend/cpu/select.rs: X <- Z, with its gradient and residual (and a likelihood's
// cached energy and scaled residual), for accepted chains.

// Mirrored by `SelectParams` in src/backend/gpu/kernels/select.rs.
struct SelectParams {
    d: u32,
    p: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: SelectParams;

@group(0) @binding(1) var<storage, read> accepted: array<u32>; // one word per chain, 0 = reject
@group(0) @binding(2) var<storage, read> z: array<f32>;
@group(0) @binding(3) var<storage, read_write> x: array<f32>;
@group(0) @binding(4) var<storage, read> gradient_z: array<f32>;
@group(0) @binding(5) var<storage, read_write> gradient_x: array<f32>;
@group(0) @binding(6) var<storage, read> residual_z: array<f32>;
@group(0) @binding(7) var<storage, read_write> residual_x: array<f32>;

@compute @workgroup_size(64)
fn select_accepted(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.y;
    let j = gid.x;
    if (accepted[c] == 0u) {
        return;
    }
    if (j < params.p) {
        x[c * params.p + j] = z[c * params.p + j];
        gradient_x[c * params.p + j] = gradient_z[c * params.p + j];
    }
    if (j < params.d) {
        residual_x[c * params.d + j] = residual_z[c * params.d + j];
    }
}

// The cached energies and scaled residuals of a likelihood that keeps them, for accepted chains
// (X's residual is `select_accepted`'s).
@group(0) @binding(8) var<storage, read> energy_z: array<f32>;
@group(0) @binding(9) var<storage, read_write> energy_x: array<f32>;
@group(0) @binding(10) var<storage, read> scaled_z: array<f32>;
@group(0) @binding(11) var<storage, read_write> scaled_x: array<f32>;

@compute @workgroup_size(64)
fn select_cached(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.y;
    let j = gid.x;
    if (accepted[c] == 0u || j >= params.d) {
        return;
    }
    scaled_x[c * params.d + j] = scaled_z[c * params.d + j];
    if (j == 0u) {
        energy_x[c] = energy_z[c];
    }
}
