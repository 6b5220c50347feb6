// Twin of src/backend/kernel_hmc/cpu.rs (compiled after philox.wgsl, workgroup_sum.wgsl and the
// mixture likelihood's shaders/likelihood/mixture.wgsl, whose kernel density, minibatch weights and
// energy it runs): kernel HMC in image space (p = d) on the Gaussian kernel density of each
// chain's class. One 64-wide workgroup per chain (workgroup_id.x). Per-element sums run in the
// CPU's order; the reductions over the workgroup (maxima exactly, sums by a tree) round unlike
// the CPU's sequential sums, within f32 rounding. Every binding number is used by one variable
// only (17 and 18 are the mixture's chain info and minibatch scratch).

// Mirrored by `KernelHmcParams` in src/backend/gpu/kernels/kernel_hmc.rs; one slot per step.
struct KernelHmcParams {
    stream: Stream,
    d: u32,
    batch: u32,       // minibatch size m
    step: u32,        // the step within the outer iteration, a counter word
    u8_data: u32,     // 1: data packed 4 bytes per word; 0: f32 bits
    noise: u32,       // 1: inject SGHMC noise in kernel_step
    eta: f32,
    noise_scale: f32, // sqrt(2 eta), rounded on the host like the CPU
    delta: f32,       // eta T, the MH proposal norms' scale
}

@group(0) @binding(0) var<uniform> params: KernelHmcParams;

@group(0) @binding(1) var<storage, read> data: array<u32>; // u8 packed 4 per word, or f32 bits
// kernel_step
@group(0) @binding(3) var<storage, read_write> position: array<f32>;
@group(0) @binding(4) var<storage, read_write> momentum: array<f32>;
// kernel_energy (the mixture's energy pass, its scaled residual being the gradient here)
@group(0) @binding(7) var<storage, read> at: array<f32>;
@group(0) @binding(8) var<storage, read_write> energy: array<f32>;
@group(0) @binding(9) var<storage, read_write> scaled: array<f32>;
// kernel_mh_terms and kernel_select
@group(0) @binding(10) var<storage, read> x: array<f32>;
@group(0) @binding(11) var<storage, read> z: array<f32>;
@group(0) @binding(12) var<storage, read> gradient_x: array<f32>;
@group(0) @binding(13) var<storage, read> gradient_z: array<f32>;
@group(0) @binding(14) var<storage, read> energy_x: array<f32>;
@group(0) @binding(15) var<storage, read> energy_z: array<f32>;
@group(0) @binding(16) var<storage, read_write> terms: array<f32>; // KERNEL_TERMS per chain
@group(0) @binding(19) var<storage, read_write> gradient_x_out: array<f32>;
@group(0) @binding(20) var<storage, read_write> energy_x_out: array<f32>;
// The mixture's step residual (the sparse-code backends' step; no entry here reads it).
@group(0) @binding(21) var<storage, read_write> step_residual: array<f32>;
@group(0) @binding(23) var<storage, read> accepted: array<u32>;   // one word per chain, 0 = reject
@group(0) @binding(24) var<storage, read_write> x_out: array<f32>;

const KERNEL_TERMS: u32 = 5u;

var<workgroup> reduce2: array<vec2<f32>, 64>;

// -||z - x_i||^2 / (2 h^2) for row i, z being `position` from `offset`; one invocation sums the d
// squares in coordinate order, as `exponent` in mixture.rs (exponent_at there reads `at`).
fn exponent_position(info: ChainInfo, i: u32, offset: u32) -> f32 {
    var dist2 = 0.0;
    for (var j = 0u; j < params.d; j++) {
        let diff = position[offset + j] - model_value(i, j, info.scale);
        dist2 += diff * diff;
    }
    return -0.5 * info.inv_h2 * dist2;
}

// Element j of the SGHMC noise stream (seed, chain, outer, step, SghmcNoise).
fn sghmc_normal(chain: u32, j: u32) -> f32 {
    let counter = vec4<u32>(j / 4u, params.step, params.stream.outer, PURPOSE_SGHMC_NOISE);
    return normals_from_block(philox4x32_10(counter, chain_key(params.stream, chain)))[j % 4u];
}

// One momentum step of Algorithm 1 on the minibatch kernel gradient (params.step): m rows from
// the stream (seed, chain, outer, step, Minibatch), softmax weights over them with the max
// exponent subtracted, g = (z - sum_b w_b x_b) / h^2, r <- r - eta g - eta r (+ noise),
// z <- z + eta r.
@compute @workgroup_size(64)
fn kernel_step(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let c = wg.x;
    let t = lid.x;
    let info = likelihood_chains[c];
    let row = c * params.d;
    let base = c * params.batch;
    var local_max = NEG_HUGE;
    for (var b = t; b < params.batch; b += WG) {
        let pick = minibatch_pick(c, b, info);
        let e = exponent_position(info, pick, row);
        likelihood_scratch[base + b] = MixturePick(pick, e);
        local_max = max(local_max, e);
    }
    let total = softmax_weights(c, t, local_max);
    for (var j = t; j < params.d; j += WG) {
        let mean = minibatch_weighted_sum(c, j, info);
        let idx = row + j;
        let g = (position[idx] - mean / total) * info.inv_h2;
        let r = momentum[idx];
        var next = r - params.eta * g - params.eta * r;
        if (params.noise != 0u) {
            next += params.noise_scale * sghmc_normal(c, j);
        }
        momentum[idx] = next;
        position[idx] = position[idx] + params.eta * next;
    }
}

// U(at) over the chain's full class into energy[c] and grad U(at) into `scaled`: the mixture's
// energy (`likelihood_energy` in mixture.wgsl, `kernel_energy` in mixture.rs).
@compute @workgroup_size(64)
fn kernel_energy(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    likelihood_energy(wg.x, lid.x);
}

// The MH terms of Algorithm 3: U(X), U(Z) - U(X) as the difference of the two cached energies
// (a log-sum-exp has no per-element form), ||Z - X + delta grad U(X)||^2,
// ||X - Z + delta grad U(Z)||^2, and 0 for the kinetic term.
@compute @workgroup_size(64)
fn kernel_mh_terms(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let c = wg.x;
    let t = lid.x;
    var norms = vec2<f32>(0.0);
    for (var j = t; j < params.d; j += WG) {
        let idx = c * params.d + j;
        let step = z[idx] - x[idx];
        let f = step + params.delta * gradient_x[idx];
        let r = -step + params.delta * gradient_z[idx];
        norms += vec2<f32>(f * f, r * r);
    }
    reduce2[t] = norms;
    workgroupBarrier();
    for (var half = WG / 2u; half > 0u; half >>= 1u) {
        if (t < half) {
            reduce2[t] += reduce2[t + half];
        }
        workgroupBarrier();
    }
    if (t == 0u) {
        terms[c * KERNEL_TERMS] = energy_x[c];
        terms[c * KERNEL_TERMS + 1u] = energy_z[c] - energy_x[c];
        terms[c * KERNEL_TERMS + 2u] = reduce2[0].x;
        terms[c * KERNEL_TERMS + 3u] = reduce2[0].y;
        terms[c * KERNEL_TERMS + 4u] = 0.0;
    }
}

// X <- Z with its gradient and energy where accepted; invocation (j, chain) = (gid.x, gid.y).
@compute @workgroup_size(64)
fn kernel_select(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.y;
    let j = gid.x;
    if (accepted[c] == 0u || j >= params.d) {
        return;
    }
    let idx = c * params.d + j;
    x_out[idx] = z[idx];
    gradient_x_out[idx] = gradient_z[idx];
    if (j == 0u) {
        energy_x_out[c] = energy_z[c];
    }
}
