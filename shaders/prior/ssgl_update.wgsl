// Twin of `sa_update` in src/model/prior/ssgl.rs: the SSGL prior's stochastic-approximation update
// (Deng et al. 2019, equations 12-15) of every chain's latent state. One 256-wide workgroup per chain: each
// invocation computes its coefficients' new (rho, kappa0, kappa1) and strided partial sums, a
// tree in workgroup memory reduces them (so sums round unlike the CPU's sequential ones, within
// f32 rounding), invocation 0 computes sigma and delta, and when everything is finite every
// invocation writes its coefficients (else the chain keeps its state and its status is 1).
// Its own parameters: `SsglUpdateParams` in src/model/prior/ssgl.rs.

struct SsglUpdateParams {
    chains: u32,
    d: u32,
    p: u32,
    stride: u32,           // 3p + 2 values per chain: rho, kappa0, kappa1 (p each), sigma, delta
    omega: f32,
    inv_v0: f32,
    inv_v1: f32,
    log_ratio: f32,        // ln(2 v0) - ln(2 pi v1) / 2
    r_a: f32,              // N + p + nu, N = d
    nu_lambda: f32,
    a_minus_1: f32,
    beta_denominator: f32, // a + b + p - 2
}

@group(0) @binding(0) var<uniform> params: SsglUpdateParams;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> residual: array<f32>;
@group(0) @binding(3) var<storage, read_write> state: array<f32>;
@group(0) @binding(4) var<storage, read_write> status: array<u32>;

var<workgroup> sums: array<vec4<f32>, 256>; // sum kappa0 |x|, sum kappa1 x^2, sum rho, ||r||^2
var<workgroup> verdict: vec2<f32>;          // new sigma, new delta
var<workgroup> finite: u32;

fn is_finite(v: f32) -> bool {
    // By the exponent bits: compilers may fold v == v away.
    return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

// The new (rho, kappa0, kappa1) of coefficient j of the chain starting at `base`.
fn coefficient(base: u32, j: u32, xj: f32, log_odds: f32, inv_sigma: f32, inv_sigma2: f32) -> vec3<f32> {
    let w = params.omega;
    let keep = 1.0 - w;
    let z = log_odds + params.log_ratio - 0.5 * xj * xj * inv_sigma2 * params.inv_v1 + abs(xj) * inv_sigma * params.inv_v0;
    let rho_tilde = 1.0 / (1.0 + exp(-z));
    let rho = keep * state[base + j] + w * rho_tilde;
    let kappa0 = keep * state[base + params.p + j] + w * ((1.0 - rho) * params.inv_v0);
    let kappa1 = keep * state[base + 2u * params.p + j] + w * (rho * params.inv_v1);
    return vec3<f32>(rho, kappa0, kappa1);
}

@compute @workgroup_size(256)
fn prior_update(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let c = wg.x;
    let t = lid.x;
    let p = params.p;
    let base = c * params.stride;
    let sigma = state[base + 3u * p];
    let delta = state[base + 3u * p + 1u];
    let inv_sigma = 1.0 / sigma;
    let inv_sigma2 = inv_sigma * inv_sigma;
    let log_odds = log(delta) - log(1.0 - delta);
    var a = vec4<f32>(0.0);
    for (var j = t; j < p; j += 256u) {
        let xj = x[c * p + j];
        let n = coefficient(base, j, xj, log_odds, inv_sigma, inv_sigma2);
        a += vec4<f32>(n.y * abs(xj), n.z * xj * xj, n.x, 0.0);
    }
    for (var i = t; i < params.d; i += 256u) {
        let r = residual[c * params.d + i];
        a.w += r * r;
    }
    sums[t] = a;
    workgroupBarrier();
    for (var half = 128u; half > 0u; half >>= 1u) {
        if (t < half) {
            sums[t] += sums[t + half];
        }
        workgroupBarrier();
    }
    if (t == 0u) {
        let s = sums[0];
        let r_c = s.w + s.y + params.nu_lambda;
        let sigma_tilde = (s.x + sqrt(s.x * s.x + 4.0 * params.r_a * r_c)) / (2.0 * params.r_a);
        let delta_tilde = (s.z + params.a_minus_1) / params.beta_denominator;
        let keep = 1.0 - params.omega;
        let sigma_new = keep * sigma + params.omega * sigma_tilde;
        let delta_new = keep * delta + params.omega * delta_tilde;
        verdict = vec2<f32>(sigma_new, delta_new);
        let ok = is_finite(s.x) && is_finite(s.y) && is_finite(s.z) && is_finite(s.w)
            && is_finite(sigma_new) && sigma_new > 0.0 && is_finite(delta_new);
        finite = select(0u, 1u, ok);
        status[c] = select(1u, 0u, ok);
    }
    // Every invocation reads its coefficients' old values before the barrier and writes only
    // its own afterwards, so no invocation reads a value another has replaced.
    workgroupBarrier();
    let ok = workgroupUniformLoad(&finite);
    if (ok == 0u) {
        return;
    }
    for (var j = t; j < p; j += 256u) {
        let n = coefficient(base, j, x[c * p + j], log_odds, inv_sigma, inv_sigma2);
        state[base + j] = n.x;
        state[base + p + j] = n.y;
        state[base + 2u * p + j] = n.z;
    }
    if (t == 0u) {
        state[base + 3u * p] = verdict.x;
        state[base + 3u * p + 1u] = verdict.y;
    }
}
