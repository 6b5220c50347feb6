// Twin of src/backend/kernel_hmc/cpu.rs (compiled after philox.wgsl and workgroup_sum.wgsl): kernel HMC
// in image space (p = d) on the Gaussian kernel density of each chain's class. One 64-wide
// workgroup per chain (workgroup_id.x). Per-element sums run in the CPU's order; the reductions
// over the workgroup (maxima exactly, sums by a tree) round unlike the CPU's sequential sums,
// within f32 rounding. Every binding number is used by one variable only.

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

struct ChainInfo {
    start: u32,  // first row of the class
    count: u32,  // rows in the class
    inv_h2: f32, // 1 / h^2, rounded on the host
    scale: f32,  // model value = raw x scale
}

@group(0) @binding(1) var<storage, read> data: array<u32>; // u8 packed 4 per word, or f32 bits
@group(0) @binding(2) var<storage, read> chain_info: array<ChainInfo>;
// kernel_step
@group(0) @binding(3) var<storage, read_write> position: array<f32>;
@group(0) @binding(4) var<storage, read_write> momentum: array<f32>;
@group(0) @binding(5) var<storage, read_write> picks: array<u32>;   // chains x batch
@group(0) @binding(6) var<storage, read_write> weights: array<f32>; // chains x batch
// kernel_energy
@group(0) @binding(7) var<storage, read> at: array<f32>;
@group(0) @binding(8) var<storage, read_write> energy: array<f32>;
@group(0) @binding(9) var<storage, read_write> gradient: array<f32>;
// kernel_mh_terms and kernel_select
@group(0) @binding(10) var<storage, read> x: array<f32>;
@group(0) @binding(11) var<storage, read> z: array<f32>;
@group(0) @binding(12) var<storage, read> gradient_x: array<f32>;
@group(0) @binding(13) var<storage, read> gradient_z: array<f32>;
@group(0) @binding(14) var<storage, read> energy_x: array<f32>;
@group(0) @binding(15) var<storage, read> energy_z: array<f32>;
@group(0) @binding(16) var<storage, read_write> terms: array<f32>; // KERNEL_TERMS per chain
@group(0) @binding(17) var<storage, read> accepted: array<u32>;   // one word per chain, 0 = reject
@group(0) @binding(18) var<storage, read_write> x_out: array<f32>;
@group(0) @binding(19) var<storage, read_write> gradient_x_out: array<f32>;
@group(0) @binding(20) var<storage, read_write> energy_x_out: array<f32>;
// mixture_residual (the sparse-code backends' mixture target)
@group(0) @binding(21) var<storage, read_write> step_image: array<f32>;

const CHUNK: u32 = 256u;      // class rows per chunk of kernel_energy, as `CHUNK` in cpu.rs
const NEG_HUGE: f32 = -3.0e38; // the running maximum's start, as in cpu.rs
const KERNEL_TERMS: u32 = 5u;

var<workgroup> reduce2: array<vec2<f32>, 64>;
var<workgroup> chunk_weights: array<f32, 256>;

fn raw_value(flat: u32) -> f32 {
    if (params.u8_data != 0u) {
        return f32((data[flat / 4u] >> ((flat % 4u) * 8u)) & 0xFFu);
    }
    return bitcast<f32>(data[flat]);
}

// Row i, coordinate j, in model units.
fn model_value(i: u32, j: u32, scale: f32) -> f32 {
    return raw_value(i * params.d + j) * scale;
}

// Max over the workgroup (exact in any order). Every invocation calls it, in uniform control flow.
fn workgroup_max(t: u32, v: f32) -> f32 {
    reduce[t] = v;
    workgroupBarrier();
    for (var half = WG / 2u; half > 0u; half >>= 1u) {
        if (t < half) {
            reduce[t] = max(reduce[t], reduce[t + half]);
        }
        workgroupBarrier();
    }
    let result = reduce[0];
    workgroupBarrier();
    return result;
}

// -||v - x_i||^2 / (2 h^2) for row i, v being `position` or `at` from `offset`; one invocation
// sums the d squares in coordinate order, as `exponent` in cpu.rs.
fn exponent_position(info: ChainInfo, i: u32, offset: u32) -> f32 {
    var dist2 = 0.0;
    for (var j = 0u; j < params.d; j++) {
        let diff = position[offset + j] - model_value(i, j, info.scale);
        dist2 += diff * diff;
    }
    return -0.5 * info.inv_h2 * dist2;
}

fn exponent_at(info: ChainInfo, i: u32, offset: u32) -> f32 {
    var dist2 = 0.0;
    for (var j = 0u; j < params.d; j++) {
        let diff = at[offset + j] - model_value(i, j, info.scale);
        dist2 += diff * diff;
    }
    return -0.5 * info.inv_h2 * dist2;
}

fn exponent_image(info: ChainInfo, i: u32, offset: u32) -> f32 {
    var dist2 = 0.0;
    for (var j = 0u; j < params.d; j++) {
        let diff = step_image[offset + j] - model_value(i, j, info.scale);
        dist2 += diff * diff;
    }
    return -0.5 * info.inv_h2 * dist2;
}

// Row `b` of chain c's minibatch at step params.step: the stream (seed, chain, outer, step,
// Minibatch), uniform over the chain's class.
fn minibatch_pick(c: u32, b: u32, info: ChainInfo) -> u32 {
    let counter = vec4<u32>(b / 4u, params.step, params.stream.outer, PURPOSE_MINIBATCH);
    let word = philox4x32_10(counter, chain_key(params.stream, c))[b % 4u];
    return info.start + index_from_word(word, info.count);
}

// Turns chain c's minibatch exponents in `weights` (largest `local_max` per invocation) into
// softmax weights with the max exponent subtracted, not yet normalised; returns their sum. Every
// invocation calls it, in uniform control flow, after its reads of the chain's row.
fn softmax_weights(c: u32, t: u32, local_max: f32) -> f32 {
    let base = c * params.batch;
    let top = workgroup_max(t, local_max);
    var local_sum = 0.0;
    for (var b = t; b < params.batch; b += WG) {
        let w = exp(weights[base + b] - top);
        weights[base + b] = w;
        local_sum += w;
    }
    // The tree's barriers order the sum; the weights and picks in storage need their own.
    let total = workgroup_sum(t, local_sum);
    storageBarrier();
    return total;
}

// sum_b w_b x_b[j] over chain c's minibatch, as `softmax_weights` left it.
fn minibatch_weighted_sum(c: u32, j: u32, info: ChainInfo) -> f32 {
    let base = c * params.batch;
    var sum = 0.0;
    for (var b = 0u; b < params.batch; b++) {
        sum += weights[base + b] * model_value(picks[base + b], j, info.scale);
    }
    return sum;
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
    let info = chain_info[c];
    let row = c * params.d;
    let base = c * params.batch;
    var local_max = NEG_HUGE;
    for (var b = t; b < params.batch; b += WG) {
        let pick = minibatch_pick(c, b, info);
        let e = exponent_position(info, pick, row);
        picks[base + b] = pick;
        weights[base + b] = e;
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

// U(at) over the chain's full class into energy[c] and grad U(at) into gradient, by the online
// log-sum-exp over chunks of CHUNK rows of `kernel_energy` in cpu.rs (the gradient rows hold
// the rescaled weighted row sums until the end).
@compute @workgroup_size(64)
fn kernel_energy(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let c = wg.x;
    let t = lid.x;
    let info = chain_info[c];
    let row = c * params.d;
    for (var j = t; j < params.d; j += WG) {
        gradient[row + j] = 0.0;
    }
    var running_max = NEG_HUGE;
    var running_sum = 0.0;
    for (var first = 0u; first < info.count; first += CHUNK) {
        let rows = min(CHUNK, info.count - first);
        var local_max = NEG_HUGE;
        for (var k = t; k < rows; k += WG) {
            let e = exponent_at(info, info.start + first + k, row);
            chunk_weights[k] = e;
            local_max = max(local_max, e);
        }
        let new_max = max(running_max, workgroup_max(t, local_max));
        let rescale = exp(running_max - new_max);
        var local_sum = 0.0;
        for (var k = t; k < rows; k += WG) {
            let w = exp(chunk_weights[k] - new_max);
            chunk_weights[k] = w;
            local_sum += w;
        }
        running_sum = running_sum * rescale + workgroup_sum(t, local_sum);
        for (var j = t; j < params.d; j += WG) {
            var acc = gradient[row + j] * rescale;
            for (var k = 0u; k < rows; k++) {
                acc += chunk_weights[k] * model_value(info.start + first + k, j, info.scale);
            }
            gradient[row + j] = acc;
        }
        running_max = new_max;
        workgroupBarrier(); // the next chunk overwrites chunk_weights
    }
    for (var j = t; j < params.d; j += WG) {
        gradient[row + j] = (at[row + j] - gradient[row + j] / running_sum) * info.inv_h2;
    }
    if (t == 0u) {
        energy[c] = -(running_max + log(running_sum));
    }
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

// Twin of `mixture_residual` in cpu.rs: the mixture target's minibatch residual, in place:
// step_image holds A z and becomes (A z - sum_b w_b x_b) / h^2 (h^2 = sigma^2), with the
// minibatch and the softmax weights of kernel_step.
@compute @workgroup_size(64)
fn mixture_residual(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let c = wg.x;
    let t = lid.x;
    let info = chain_info[c];
    let row = c * params.d;
    let base = c * params.batch;
    var local_max = NEG_HUGE;
    for (var b = t; b < params.batch; b += WG) {
        let pick = minibatch_pick(c, b, info);
        let e = exponent_image(info, pick, row);
        picks[base + b] = pick;
        weights[base + b] = e;
        local_max = max(local_max, e);
    }
    let total = softmax_weights(c, t, local_max);
    for (var j = t; j < params.d; j += WG) {
        let mean = minibatch_weighted_sum(c, j, info);
        let idx = row + j;
        step_image[idx] = (step_image[idx] - mean / total) * info.inv_h2;
    }
}
