// Twin of src/model/likelihood/mixture.rs: the mixture likelihood, a Gaussian kernel density of
// A x over each chain's class, -log sum_i exp(-||A x - x_i||^2 / (2 h^2)). Its step residual is a
// minibatch's softmax-weighted residual, its energy the full class's by an online log-sum-exp;
// both one 64-wide workgroup per chain (c), t the invocation. Per-element sums run in the CPU's
// order; the reductions over the workgroup (maxima exactly, sums by a tree) round unlike the
// CPU's sequential sums, within f32 rounding. Compiled after philox.wgsl and workgroup_sum.wgsl,
// with a module that declares `params` (stream, d, batch, step, u8_data), `data` (the dataset),
// `step_residual`, `at`, `energy`, `scaled`, `energy_x` and `energy_z` (shaders/likelihood.wgsl
// and mh_terms.wgsl, or kernel_hmc.wgsl, whose Kernel HMC runs this density in image space).

struct ChainInfo {
    start: u32,  // first row of the class
    count: u32,  // rows in the class
    inv_h2: f32, // 1 / h^2, rounded on the host
    scale: f32,  // model value = raw x scale
}

// One row of a chain's minibatch and its weight (an exponent, then its softmax weight).
struct MixturePick {
    row: u32,
    weight: f32,
}

@group(0) @binding(17) var<storage, read> likelihood_chains: array<ChainInfo>;
@group(0) @binding(18) var<storage, read_write> likelihood_scratch: array<MixturePick>; // chains x batch

const CHUNK: u32 = 256u;      // class rows per chunk of the energy, as `CHUNK` in mixture.rs
const NEG_HUGE: f32 = -3.0e38; // the running maximum's start, as in mixture.rs

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

// -||v - x_i||^2 / (2 h^2) for row i, v being `at` or `step_residual` from `offset`; one
// invocation sums the d squares in coordinate order, as `exponent` in mixture.rs.
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
        let diff = step_residual[offset + j] - model_value(i, j, info.scale);
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

// Turns chain c's minibatch exponents in the scratch (largest `local_max` per invocation) into
// softmax weights with the max exponent subtracted, not yet normalised; returns their sum. Every
// invocation calls it, in uniform control flow, after its reads of the chain's row.
fn softmax_weights(c: u32, t: u32, local_max: f32) -> f32 {
    let base = c * params.batch;
    let top = workgroup_max(t, local_max);
    var local_sum = 0.0;
    for (var b = t; b < params.batch; b += WG) {
        let w = exp(likelihood_scratch[base + b].weight - top);
        likelihood_scratch[base + b].weight = w;
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
        let pick = likelihood_scratch[base + b];
        sum += pick.weight * model_value(pick.row, j, info.scale);
    }
    return sum;
}

// `mixture_residual` in mixture.rs, in place: step_residual holds A z and becomes
// (A z - sum_b w_b x_b) / h^2 (h^2 = sigma^2), the minibatch of m rows from the stream (seed,
// chain, outer, step, Minibatch) and its softmax weights with the max exponent subtracted.
fn likelihood_step(c: u32, t: u32) {
    let info = likelihood_chains[c];
    let row = c * params.d;
    let base = c * params.batch;
    var local_max = NEG_HUGE;
    for (var b = t; b < params.batch; b += WG) {
        let pick = minibatch_pick(c, b, info);
        let e = exponent_image(info, pick, row);
        likelihood_scratch[base + b] = MixturePick(pick, e);
        local_max = max(local_max, e);
    }
    let total = softmax_weights(c, t, local_max);
    for (var j = t; j < params.d; j += WG) {
        let mean = minibatch_weighted_sum(c, j, info);
        let idx = row + j;
        step_residual[idx] = (step_residual[idx] - mean / total) * info.inv_h2;
    }
}

// `kernel_energy` in mixture.rs: U(at) over the chain's full class into energy[c] and
// grad U(at) = (at - sum_i w_i x_i / S) / h^2 into `scaled`, by the online log-sum-exp over
// chunks of CHUNK rows (the scaled rows hold the rescaled weighted row sums until the end).
fn likelihood_energy(c: u32, t: u32) {
    let info = likelihood_chains[c];
    let row = c * params.d;
    for (var j = t; j < params.d; j += WG) {
        scaled[row + j] = 0.0;
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
            var acc = scaled[row + j] * rescale;
            for (var k = 0u; k < rows; k++) {
                acc += chunk_weights[k] * model_value(info.start + first + k, j, info.scale);
            }
            scaled[row + j] = acc;
        }
        running_max = new_max;
        workgroupBarrier(); // the next chunk overwrites chunk_weights
    }
    for (var j = t; j < params.d; j += WG) {
        scaled[row + j] = (at[row + j] - scaled[row + j] / running_sum) * info.inv_h2;
    }
    if (t == 0u) {
        energy[c] = -(running_max + log(running_sum));
    }
}

// The MH terms need no per-element sums: U(Z) - U(X) is the difference of the two cached
// energies (a log-sum-exp has no per-element form).
fn likelihood_fit(c: u32, t: u32) -> vec2<f32> {
    return vec2<f32>(0.0);
}

fn likelihood_terms(c: u32, fit: vec2<f32>, prior: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(energy_x[c] + prior.x, (energy_z[c] - energy_x[c]) + prior.y);
}
