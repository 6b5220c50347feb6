// Twin of src/backend/cpu/tangent.rs (compiled after workgroup_sum.wgsl): the tangent target's
// residual r = A x - a times C^-1 = (I - Q diag(gamma) Q^T) / sigma^2, and its energy
// 1/2 (||r||^2 - sum_j gamma_j (q_j^T r)^2) / sigma^2. One 64-wide workgroup per chain
// (workgroup_id.x); every invocation reads and writes only its own strided coordinates, so the
// in-place step variant needs no barrier beyond the reductions'. Sums over the workgroup run by a
// tree and round unlike the CPU's sequential sums, within f32 rounding.

// Mirrored by `TangentParams` in src/backend/gpu/kernels/tangent.rs (k and 1/sigma^2 are per
// group, in the `tangent` binding).
struct TangentParams {
    d: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> params: TangentParams;

struct TangentInfo {
    k: u32,          // directions per chain (at most 64, `MAX_TANGENT_K` on the host: `dots`)
    inv_sigma2: f32, // 1 / sigma^2, rounded on the host
}

@group(0) @binding(1) var<storage, read> basis: array<f32>; // chains x k x d, orthonormal rows
@group(0) @binding(2) var<storage, read> gamma: array<f32>; // chains x k
@group(0) @binding(3) var<storage, read> tangent: TangentInfo;
// tangent_energy
@group(0) @binding(4) var<storage, read> residual: array<f32>; // chains x d: A x - a
@group(0) @binding(5) var<storage, read_write> energy: array<f32>; // chains
@group(0) @binding(6) var<storage, read_write> scaled: array<f32>; // chains x d: C^-1 r
// tangent_step
@group(0) @binding(7) var<storage, read_write> step_residual: array<f32>; // r, becomes C^-1 r

// (Q (gamma . dots))_i of chain c.
fn along(c: u32, i: u32, dots: ptr<function, array<f32, 64>>) -> f32 {
    var sum = 0.0;
    for (var j = 0u; j < tangent.k; j++) {
        sum += basis[(c * tangent.k + j) * params.d + i] * (gamma[c * tangent.k + j] * (*dots)[j]);
    }
    return sum;
}

// C^-1 r into `scaled` and 1/2 r^T C^-1 r into energy[c], r read from `residual`.
@compute @workgroup_size(64)
fn tangent_energy(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let c = wg.x;
    let t = lid.x;
    let row = c * params.d;
    var dots: array<f32, 64>;
    var shrunk = 0.0;
    for (var j = 0u; j < tangent.k; j++) {
        var partial = 0.0;
        for (var i = t; i < params.d; i += WG) {
            partial += basis[(c * tangent.k + j) * params.d + i] * residual[row + i];
        }
        let dot = workgroup_sum(t, partial);
        dots[j] = dot;
        shrunk += gamma[c * tangent.k + j] * dot * dot;
    }
    var partial = 0.0;
    for (var i = t; i < params.d; i += WG) {
        let r = residual[row + i];
        partial += r * r;
    }
    let norm2 = workgroup_sum(t, partial);
    for (var i = t; i < params.d; i += WG) {
        scaled[row + i] = (residual[row + i] - along(c, i, &dots)) * tangent.inv_sigma2;
    }
    if (t == 0u) {
        energy[c] = 0.5 * tangent.inv_sigma2 * (norm2 - shrunk);
    }
}

// C^-1 r in place over the step residual (the step needs no energy).
@compute @workgroup_size(64)
fn tangent_step(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let c = wg.x;
    let t = lid.x;
    let row = c * params.d;
    var dots: array<f32, 64>;
    for (var j = 0u; j < tangent.k; j++) {
        var partial = 0.0;
        for (var i = t; i < params.d; i += WG) {
            partial += basis[(c * tangent.k + j) * params.d + i] * step_residual[row + i];
        }
        dots[j] = workgroup_sum(t, partial);
    }
    for (var i = t; i < params.d; i += WG) {
        step_residual[row + i] = (step_residual[row + i] - along(c, i, &dots)) * tangent.inv_sigma2;
    }
}
