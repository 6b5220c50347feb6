// Philox4x32-10, the twin of src/rng/philox.rs: same words bit for bit. WGSL has no u64, so the
// 32x32 -> 64 products are built from 16-bit halves.

const PHILOX_M0: u32 = 0xD2511F53u;
const PHILOX_M1: u32 = 0xCD9E8D57u;
const PHILOX_W0: u32 = 0x9E3779B9u;
const PHILOX_W1: u32 = 0xBB67AE85u;

const PURPOSE_MOMENTUM: u32 = 4u;
const PURPOSE_MINIBATCH: u32 = 5u;
const PURPOSE_SGHMC_NOISE: u32 = 7u;
const PURPOSE_MALA_NOISE: u32 = 9u;

// High word of the 64-bit product a*b.
fn mul_hi(a: u32, b: u32) -> u32 {
    let a_lo = a & 0xFFFFu;
    let a_hi = a >> 16u;
    let b_lo = b & 0xFFFFu;
    let b_hi = b >> 16u;
    let ll = a_lo * b_lo;
    let lh = a_lo * b_hi;
    let hl = a_hi * b_lo;
    let hh = a_hi * b_hi;
    let mid = (ll >> 16u) + (lh & 0xFFFFu) + (hl & 0xFFFFu);
    return hh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u);
}

fn philox4x32_10(counter: vec4<u32>, key: vec2<u32>) -> vec4<u32> {
    var c = counter;
    var k = key;
    for (var round = 0u; round < 10u; round++) {
        if (round > 0u) {
            k = vec2<u32>(k.x + PHILOX_W0, k.y + PHILOX_W1);
        }
        let hi0 = mul_hi(PHILOX_M0, c.x);
        let lo0 = PHILOX_M0 * c.x;
        let hi1 = mul_hi(PHILOX_M1, c.z);
        let lo1 = PHILOX_M1 * c.z;
        c = vec4<u32>(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    }
    return c;
}

// Where a drawing kernel's streams start, mirrored by `Stream` in src/backend/gpu/kernels.rs: the
// first member of the params of every family that draws.
struct Stream {
    seed_lo: u32,
    seed_hi: u32,
    chain_offset: u32, // global index of the group's first chain
    outer: u32,        // the outer iteration, a counter word
}

// The key of the group's chain `chain`: [seed_lo, seed_hi ^ global chain], as `chain_key`.
fn chain_key(stream: Stream, chain: u32) -> vec2<u32> {
    return vec2<u32>(stream.seed_lo, stream.seed_hi ^ (stream.chain_offset + chain));
}

// Uniform on 0..n: the high word of word * n.
fn index_from_word(word: u32, n: u32) -> u32 {
    return mul_hi(word, n);
}

fn uniform_from_word(word: u32) -> f32 {
    return f32(word >> 8u) * (1.0 / 16777216.0);
}

fn uniform_open_from_word(word: u32) -> f32 {
    return f32((word >> 8u) + 1u) * (1.0 / 16777216.0);
}

// ln(u) for u in (0, 1]. Near 1 by the atanh series ln u = 2 atanh((u-1)/(u+1)): WGSL's log
// is only bounded to 2^-21 absolute on [0.5, 2], which would swamp -2 ln u as u -> 1 and put
// normals near 0 off the CPU's by 1e-5.
fn log_unit(u: f32) -> f32 {
    if (u < 0.75) {
        return log(u);
    }
    let s = (u - 1.0) / (u + 1.0);
    let s2 = s * s;
    let series = 1.0 + s2 * (1.0 / 3.0 + s2 * (1.0 / 5.0 + s2 * (1.0 / 7.0 + s2 * (1.0 / 9.0 + s2 / 11.0))));
    return 2.0 * s * series;
}

// Four normals by Box-Muller on (w0, w1) and (w2, w3), as `normals_from_block`.
fn normals_from_block(w: vec4<u32>) -> vec4<f32> {
    let tau = 6.2831855;
    let ra = sqrt(-2.0 * log_unit(uniform_open_from_word(w.x)));
    let aa = tau * uniform_from_word(w.y);
    let rb = sqrt(-2.0 * log_unit(uniform_open_from_word(w.z)));
    let ab = tau * uniform_from_word(w.w);
    return vec4<f32>(ra * cos(aa), ra * sin(aa), rb * cos(ab), rb * sin(ab));
}
