// Twin of src/backend/cpu/mh_terms.rs (compiled with the prior's and the likelihood's WGSL,
// shaders/prior/*.wgsl and shaders/likelihood/*.wgsl, and shaders/likelihood.wgsl, which declares
// `params`): per chain U(X), U(Z) - U(X) (the likelihood's `likelihood_fit` and `likelihood_terms`
// with the prior's terms, each one reduction of per-element differences), the forward and
// reverse proposal norms, and for HMC (kinetic 1) 1/2 ||r_L||^2 - 1/2 ||r_0||^2 with r_0 drawn
// again from its stream. One 256-wide workgroup per chain: strided partial sums, then a tree in
// workgroup memory (so sums round unlike the CPU's sequential ones, within f32 rounding).

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> z: array<f32>;
@group(0) @binding(3) var<storage, read> residual_x: array<f32>;
@group(0) @binding(4) var<storage, read> residual_z: array<f32>;
@group(0) @binding(5) var<storage, read> gradient_x: array<f32>;
@group(0) @binding(6) var<storage, read> gradient_z: array<f32>;
@group(0) @binding(7) var<storage, read_write> terms: array<f32>; // TERMS per chain
@group(0) @binding(8) var<storage, read> momentum: array<f32>; // r_L (HMC)
// The cached energies' data terms at X and Z, for a likelihood that caches them.
@group(0) @binding(9) var<storage, read> energy_x: array<f32>;
@group(0) @binding(10) var<storage, read> energy_z: array<f32>;
// The likelihood's precision per chain (1 / sigma^2 everywhere for a fixed sigma^2, sqrt(tau_c)
// with --noise gibbs; 1 where the likelihood's residuals arrive scaled).
@group(0) @binding(13) var<storage, read> chain_precision: array<f32>;

const TERMS: u32 = 5u;

var<workgroup> sums_a: array<vec4<f32>, 256>; // fit, fit difference, prior, prior difference
var<workgroup> sums_b: array<vec4<f32>, 256>; // forward, reverse, kinetic difference, unused

@compute @workgroup_size(256)
fn mh_terms(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let c = wg.x;
    let t = lid.x;
    let fit = likelihood_fit(c, t);
    let a = vec4<f32>(fit.x, fit.y, 0.0, 0.0);
    let sums = proposal_terms(c, t, a, chain_precision[c], params.preconditioned != 0u);
    if (t == 0u) {
        let prior = vec2<f32>(prior_weight() * sums.z, prior_weight() * sums.w);
        let energies = likelihood_terms(c, sums.xy, prior);
        terms[c * TERMS] = energies.x;
        terms[c * TERMS + 1u] = energies.y;
    }
}

// Adds the prior's sums to `a` (fit, fit difference, prior, prior difference), writes the forward,
// reverse and kinetic terms of chain c, and returns the reduced `a` (to every invocation). With
// `noise_units` (--noise gibbs) the step z - x is taken in noise units, times `step_scale`
// (sqrt(tau)).
fn proposal_terms(c: u32, t: u32, a_in: vec4<f32>, step_scale: f32, noise_units: bool) -> vec4<f32> {
    var a = a_in;
    var b = vec4<f32>(0.0);
    for (var j = t; j < params.p; j += 256u) {
        let idx = c * params.p + j;
        let xj = x[idx];
        let zj = z[idx];
        var step = zj - xj;
        if (noise_units) {
            step = step * step_scale;
        }
        let f = step + params.delta * gradient_x[idx];
        let r = -step + params.delta * gradient_z[idx];
        let px = prior_element(c, j, xj);
        a += vec4<f32>(0.0, 0.0, px, prior_element(c, j, zj) - px);
        b += vec4<f32>(f * f, r * r, 0.0, 0.0);
    }
    if (params.kinetic != 0u) {
        let key = chain_key(params.stream, c);
        for (var j = t; j < params.p; j += 256u) {
            let counter = vec4<u32>(j / 4u, 0u, params.stream.outer, PURPOSE_MOMENTUM);
            let r0 = normals_from_block(philox4x32_10(counter, key))[j % 4u];
            let rl = momentum[c * params.p + j];
            b.z += (rl - r0) * (rl + r0);
        }
    }
    sums_a[t] = a;
    sums_b[t] = b;
    workgroupBarrier();
    for (var half = 128u; half > 0u; half >>= 1u) {
        if (t < half) {
            sums_a[t] += sums_a[t + half];
            sums_b[t] += sums_b[t + half];
        }
        workgroupBarrier();
    }
    if (t == 0u) {
        terms[c * TERMS + 2u] = sums_b[0].x;
        terms[c * TERMS + 3u] = sums_b[0].y;
        terms[c * TERMS + 4u] = 0.5 * sums_b[0].z;
    }
    return sums_a[0];
}
