// Twin of src/backend/cpu/exact.rs: the element-wise steps of the exact methods. MALA's proposal
// from the cached full gradient, and the two halves of a leapfrog step around the full gradient
// (which the matmul module's full_gradient computes at the new position).

// Mirrored by `ExactParams` in src/backend/gpu/kernels/exact.rs.
struct ExactParams {
    stream: Stream,
    p: u32,
    eta: f32,         // h (MALA), epsilon (leapfrog)
    noise_scale: f32, // sqrt(2 h), rounded on the host like the CPU
    preconditioned: u32, // 1: --noise gibbs, moves divided by chain_precision (sqrt(tau))
}

@group(0) @binding(0) var<uniform> params: ExactParams;

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> gradient: array<f32>;
@group(0) @binding(3) var<storage, read_write> z: array<f32>;
@group(0) @binding(4) var<storage, read_write> momentum: array<f32>;
@group(0) @binding(13) var<storage, read> chain_precision: array<f32>;

// Z = X - h grad U(X) + sqrt(2h) xi, xi from (seed, chain, outer, 0, MalaNoise); one Philox block
// (four elements) per invocation.
@compute @workgroup_size(64)
fn mala_proposal(@builtin(global_invocation_id) gid: vec3<u32>) {
    let chain = gid.y;
    let block = gid.x;
    if (block * 4u >= params.p) {
        return;
    }
    let counter = vec4<u32>(block, 0u, params.stream.outer, PURPOSE_MALA_NOISE);
    let normals = normals_from_block(philox4x32_10(counter, chain_key(params.stream, chain)));
    for (var q = 0u; q < 4u; q++) {
        let j = block * 4u + q;
        if (j < params.p) {
            let idx = chain * params.p + j;
            if (params.preconditioned != 0u) {
                z[idx] = x[idx] + (params.noise_scale * normals[q] - params.eta * gradient[idx]) / chain_precision[chain];
            } else {
                z[idx] = x[idx] - params.eta * gradient[idx] + params.noise_scale * normals[q];
            }
        }
    }
}

// r <- r - (eps/2) grad U(z); z <- z + eps r.
@compute @workgroup_size(64)
fn leapfrog_drift(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    if (j >= params.p) {
        return;
    }
    let idx = gid.y * params.p + j;
    let half = 0.5 * params.eta;
    let r = momentum[idx] - half * gradient[idx];
    momentum[idx] = r;
    if (params.preconditioned != 0u) {
        z[idx] = z[idx] + (params.eta * r) / chain_precision[gid.y];
    } else {
        z[idx] = z[idx] + params.eta * r;
    }
}

// r <- r - (eps/2) grad U(z) with the gradient at the new z.
@compute @workgroup_size(64)
fn leapfrog_kick(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    if (j >= params.p) {
        return;
    }
    let idx = gid.y * params.p + j;
    momentum[idx] = momentum[idx] - 0.5 * params.eta * gradient[idx];
}
