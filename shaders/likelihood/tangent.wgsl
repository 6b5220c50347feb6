// Twin of `tangent_energy` and `tangent_step` in src/model/likelihood/tangent.rs: the tangent
// likelihood's residual r = A x - a times C^-1 = (I - Q diag(gamma) Q^T) / sigma^2, and its energy
// 1/2 (||r||^2 - sum_j gamma_j (q_j^T r)^2) / sigma^2. One 64-wide workgroup per chain (c), t the
// invocation; every invocation reads and writes only its own strided coordinates, so the in-place
// step needs no barrier beyond the reductions'. Sums over the workgroup run by a tree and round
// unlike the CPU's sequential sums, within f32 rounding. Compiled after workgroup_sum.wgsl.

// Mirrored by `TangentParams` in src/model/likelihood/tangent.rs.
struct TangentParams {
    k: u32,          // directions per chain (at most 64, `MAX_TANGENT_K` on the host: `dots`)
    inv_sigma2: f32, // 1 / sigma^2, rounded on the host
}

@group(0) @binding(16) var<storage, read> likelihood_params: TangentParams;
// Per chain its k orthonormal directions (k x d), then its k shrinkages gamma.
@group(0) @binding(17) var<storage, read> likelihood_chains: array<f32>;

// Where chain c's directions start; its shrinkages follow them.
fn tangent_base(c: u32) -> u32 {
    return c * likelihood_params.k * (params.d + 1u);
}

// (Q (gamma . dots))_i of chain c.
fn along(c: u32, i: u32, dots: ptr<function, array<f32, 64>>) -> f32 {
    let base = tangent_base(c);
    let k = likelihood_params.k;
    var sum = 0.0;
    for (var j = 0u; j < k; j++) {
        sum += likelihood_chains[base + j * params.d + i] * (likelihood_chains[base + k * params.d + j] * (*dots)[j]);
    }
    return sum;
}

// C^-1 r into `scaled` and 1/2 r^T C^-1 r into energy[c], r read from `at`.
fn likelihood_energy(c: u32, t: u32) {
    let row = c * params.d;
    let base = tangent_base(c);
    let k = likelihood_params.k;
    var dots: array<f32, 64>;
    var shrunk = 0.0;
    for (var j = 0u; j < k; j++) {
        var partial = 0.0;
        for (var i = t; i < params.d; i += WG) {
            partial += likelihood_chains[base + j * params.d + i] * at[row + i];
        }
        let dot = workgroup_sum(t, partial);
        dots[j] = dot;
        shrunk += likelihood_chains[base + k * params.d + j] * dot * dot;
    }
    var partial = 0.0;
    for (var i = t; i < params.d; i += WG) {
        let r = at[row + i];
        partial += r * r;
    }
    let norm2 = workgroup_sum(t, partial);
    for (var i = t; i < params.d; i += WG) {
        scaled[row + i] = (at[row + i] - along(c, i, &dots)) * likelihood_params.inv_sigma2;
    }
    if (t == 0u) {
        energy[c] = 0.5 * likelihood_params.inv_sigma2 * (norm2 - shrunk);
    }
}

// C^-1 r in place over the step's residual (the step needs no energy).
fn likelihood_step(c: u32, t: u32) {
    let row = c * params.d;
    let base = tangent_base(c);
    var dots: array<f32, 64>;
    for (var j = 0u; j < likelihood_params.k; j++) {
        var partial = 0.0;
        for (var i = t; i < params.d; i += WG) {
            partial += likelihood_chains[base + j * params.d + i] * step_residual[row + i];
        }
        dots[j] = workgroup_sum(t, partial);
    }
    for (var i = t; i < params.d; i += WG) {
        step_residual[row + i] = (step_residual[row + i] - along(c, i, &dots)) * likelihood_params.inv_sigma2;
    }
}

// The MH terms need no per-element sums: U(Z) - U(X) is the difference of the cached energies.
fn likelihood_fit(c: u32, t: u32) -> vec2<f32> {
    return vec2<f32>(0.0);
}

fn likelihood_terms(c: u32, fit: vec2<f32>, prior: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(energy_x[c] + prior.x, (energy_z[c] - energy_x[c]) + prior.y);
}
