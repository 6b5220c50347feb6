// Twin of src/backend/cpu/fista.rs: the element-wise and per-row kernels of monotone FISTA; the
// two products per iteration are matmul.wgsl's. Objectives are f32 here (WGSL has no f64).

// Mirrored by `FistaParams` in src/backend/gpu/kernels/fista.rs; one slot per iteration.
struct FistaParams {
    d: u32,
    p: u32,
    lam: f32,
    step_size: f32, // 1/L
    tau: f32,       // lam/L
    c_u: f32,       // t/t'
    c_prev: f32,    // (t-1)/t'
    _pad0: u32,
}

@group(0) @binding(0) var<uniform> params: FistaParams;

@group(0) @binding(1) var<storage, read> left: array<f32>;
@group(0) @binding(2) var<storage, read> right: array<f32>;
@group(0) @binding(3) var<storage, read_write> result: array<f32>;

// result = left - right (rows of d): the residual A y - x.
@compute @workgroup_size(64)
fn fista_residual(@builtin(global_invocation_id) gid: vec3<u32>) {
    let idx = gid.y * params.d + gid.x;
    if (gid.x < params.d) {
        result[idx] = left[idx] - right[idx];
    }
}

fn soft_threshold(v: f32, tau: f32) -> f32 {
    if (v > tau) {
        return v - tau;
    }
    if (v < -tau) {
        return v + tau;
    }
    return 0.0;
}

// result = soft(y - g / L, lam / L) with left = y, right = g (rows of p).
@compute @workgroup_size(64)
fn fista_prox(@builtin(global_invocation_id) gid: vec3<u32>) {
    let idx = gid.y * params.p + gid.x;
    if (gid.x < params.p) {
        result[idx] = soft_threshold(left[idx] - params.step_size * right[idx], params.tau);
    }
}

@group(0) @binding(4) var<storage, read> candidate: array<f32>;  // u, rows of p
@group(0) @binding(5) var<storage, read_write> objective: array<f32>; // one per row
@group(0) @binding(6) var<storage, read_write> improved: array<u32>;  // one per row
@group(0) @binding(7) var<storage, read_write> code: array<f32>;      // z, rows of p
@group(0) @binding(8) var<storage, read_write> extrapolated: array<f32>; // y, rows of p
@group(0) @binding(9) var<storage, read_write> code_image: array<f32>;   // A z, rows of d
@group(0) @binding(10) var<storage, read_write> extrapolated_image: array<f32>; // A y, rows of d

var<workgroup> partial: array<f32, 256>;

// Per row (one workgroup): F(u) = 1/2 ||A u - x||^2 + lam ||u||_1 with left = A u, right = x;
// u replaces z only when F(u) <= F(z) (the monotone rule).
@compute @workgroup_size(256)
fn fista_objective(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let row = wg.x;
    let t = lid.x;
    var fit = 0.0;
    for (var j = t; j < params.d; j += 256u) {
        let r = left[row * params.d + j] - right[row * params.d + j];
        fit += r * r;
    }
    var l1 = 0.0;
    for (var j = t; j < params.p; j += 256u) {
        l1 += abs(candidate[row * params.p + j]);
    }
    partial[t] = 0.5 * fit + params.lam * l1;
    workgroupBarrier();
    for (var half = 128u; half > 0u; half >>= 1u) {
        if (t < half) {
            partial[t] += partial[t + half];
        }
        workgroupBarrier();
    }
    if (t == 0u) {
        let value = partial[0];
        let better = value <= objective[row];
        improved[row] = select(0u, 1u, better);
        if (better) {
            objective[row] = value;
        }
    }
}

// z <- u where improved, then y = z + c_u (u - z) + c_prev (z - z_prev); A z and A y alike
// (left = A u).
@compute @workgroup_size(64)
fn fista_update(@builtin(global_invocation_id) gid: vec3<u32>) {
    let row = gid.y;
    let j = gid.x;
    let take = improved[row] != 0u;
    if (j < params.p) {
        let idx = row * params.p + j;
        let u = candidate[idx];
        let previous = code[idx];
        let next = select(previous, u, take);
        code[idx] = next;
        extrapolated[idx] = next + params.c_u * (u - next) + params.c_prev * (next - previous);
    }
    if (j < params.d) {
        let idx = row * params.d + j;
        let u = left[idx];
        let previous = code_image[idx];
        let next = select(previous, u, take);
        code_image[idx] = next;
        extrapolated_image[idx] = next + params.c_u * (u - next) + params.c_prev * (next - previous);
    }
}
