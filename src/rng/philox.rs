//! Philox4x32-10, the counter-based generator shared bit for bit by the CPU and the WGSL kernels.
//!
//! A draw is a pure function of a key and a counter, so any chain's numbers for any step can be
//! made anywhere, in any order. rmld keys the generator by (seed, chain) and builds the counter as
//! `[block, step, outer iteration, purpose]` (see [`Stream`]); `shaders/philox.wgsl` is the twin.

const PHILOX_M0: u32 = 0xD251_1F53;
const PHILOX_M1: u32 = 0xCD9E_8D57;
const PHILOX_W0: u32 = 0x9E37_79B9;
const PHILOX_W1: u32 = 0xBB67_AE85;

#[inline(always)]
fn mul_hi_lo(a: u32, b: u32) -> (u32, u32) {
    let product = u64::from(a) * u64::from(b);
    ((product >> 32) as u32, product as u32)
}

/// One Philox4x32 block with 10 rounds (Salmon et al. 2011, Random123).
#[inline]
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let mut c = counter;
    let mut k = key;
    for round in 0..10 {
        if round > 0 {
            k[0] = k[0].wrapping_add(PHILOX_W0);
            k[1] = k[1].wrapping_add(PHILOX_W1);
        }
        let (hi0, lo0) = mul_hi_lo(PHILOX_M0, c[0]);
        let (hi1, lo1) = mul_hi_lo(PHILOX_M1, c[2]);
        c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0];
    }
    c
}

/// What a draw is for; the fourth counter word, so different uses never share numbers.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// Entries of the random dictionary A.
    Dictionary = 1,
    /// White-noise initial positions.
    InitNoise = 2,
    /// Which data point a chain's LASSO initialisation encodes.
    InitPick = 3,
    /// The momentum r_0 ~ N(0, I) drawn at the start of each outer iteration.
    Momentum = 4,
    /// Minibatch indices, m per chain per step.
    Minibatch = 5,
    /// The uniform of the Metropolis-Hastings test.
    Accept = 6,
    /// SGHMC noise injected inside the steps (equation 2), when enabled.
    SghmcNoise = 7,
    /// The fixed directions the diagnostics trace project codes on.
    Projection = 8,
    /// The Gaussian ξ of a MALA proposal Z = X − h∇U(X) + sqrt(2h)·ξ.
    MalaNoise = 9,
    /// The Gamma draw of a chain's noise precision (`--noise gibbs`), once per outer iteration.
    NoisePrecision = 10,
    /// The coefficients of a deformation draw along its anchor's transformation tangents.
    Deformation = 11,
    /// The order in which a class's images anchor deformation draws, one permutation per round.
    DeformationAnchors = 12,
    /// The neighbour and the step of an interpolant between a class's images.
    Interpolation = 13,
    /// The order in which a class's images start interpolants, one permutation per round.
    InterpolationBases = 14,
    /// The white noise of a deformation draw's shading field.
    Shading = 15,
    /// The uniform noise of an elastic distortion's displacement field.
    Elastic = 16,
    /// The order in which a class's images are distorted elastically, one permutation per round.
    ElasticBases = 17,
    /// Parametric dictionary learning (one stream per signal and MCMC iteration).
    DictionaryLearning = 20,
}

/// The generator key of one chain: the seed's low word, and its high word mixed with the chain.
#[inline]
pub fn chain_key(seed: u64, chain: u32) -> [u32; 2] {
    [seed as u32, ((seed >> 32) as u32) ^ chain]
}

/// The chain index used to key draws that belong to no chain (the dictionary).
pub const SHARED_CHAIN: u32 = u32::MAX;

/// The draws of one chain for one (outer iteration, step, purpose): element `i` of the stream
/// comes from block `i / 4`, word `i % 4`.
#[derive(Clone, Copy, Debug)]
pub struct Stream {
    key: [u32; 2],
    step: u32,
    outer: u32,
    purpose: Purpose,
}

impl Stream {
    /// The stream of `chain` under `seed` for the given outer iteration, step and purpose.
    pub fn new(seed: u64, chain: u32, outer: u32, step: u32, purpose: Purpose) -> Self {
        Stream {
            key: chain_key(seed, chain),
            step,
            outer,
            purpose,
        }
    }

    /// The four words of block `block`.
    #[inline]
    pub fn block(&self, block: u32) -> [u32; 4] {
        philox4x32_10(
            [block, self.step, self.outer, self.purpose as u32],
            self.key,
        )
    }

    /// Fills `out` with the raw words 0..out.len() of the stream.
    pub fn fill_u32(&self, out: &mut [u32]) {
        for (b, chunk) in out.chunks_mut(4).enumerate() {
            let words = self.block(b as u32);
            chunk.copy_from_slice(&words[..chunk.len()]);
        }
    }

    /// Fills `out` with standard normals; block b gives elements 4b..4b+4 by two Box-Muller pairs.
    pub fn fill_normal(&self, out: &mut [f32]) {
        for (b, chunk) in out.chunks_mut(4).enumerate() {
            let normals = normals_from_block(self.block(b as u32));
            chunk.copy_from_slice(&normals[..chunk.len()]);
        }
    }

    /// Fills `out` with indices uniform on 0..n (n > 0), one word each.
    pub fn fill_index(&self, n: u32, out: &mut [u32]) {
        self.fill_u32(out);
        for v in out.iter_mut() {
            *v = index_from_word(*v, n);
        }
    }

    /// The first uniform on [0, 1) of the stream.
    pub fn uniform(&self) -> f32 {
        uniform_from_word(self.block(0)[0])
    }
}

/// A uniform on [0, 1) with 24 random bits (exactly representable in f32).
#[inline]
pub fn uniform_from_word(word: u32) -> f32 {
    (word >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// A uniform on (0, 1], safe for a logarithm.
#[inline]
pub fn uniform_open_from_word(word: u32) -> f32 {
    ((word >> 8) + 1) as f32 * (1.0 / 16_777_216.0)
}

/// An index uniform on 0..n: the high word of word * n, so no division and negligible bias.
#[inline]
pub fn index_from_word(word: u32, n: u32) -> u32 {
    ((u64::from(word) * u64::from(n)) >> 32) as u32
}

/// Four standard normals from one block by the Box-Muller transform on (w0, w1) and (w2, w3).
#[inline]
pub fn normals_from_block(w: [u32; 4]) -> [f32; 4] {
    let (a0, a1) = box_muller(w[0], w[1]);
    let (b0, b1) = box_muller(w[2], w[3]);
    [a0, a1, b0, b1]
}

/// On the C library's `logf`, `cosf` and `sinf`, not `math::Portable`: the chains draw these
/// per coordinate, glibc's are about 10% faster here, and its FMA and plain builds agree on every
/// f32 argument of `logf` and on every one of `cosf` and `sinf` below 16 (the angle is at most
/// 2π), so the bits are the same on every CPU.
#[inline]
#[allow(clippy::disallowed_methods)]
fn box_muller(radius_word: u32, angle_word: u32) -> (f32, f32) {
    let radius = (-2.0 * uniform_open_from_word(radius_word).ln()).sqrt();
    let angle = std::f32::consts::TAU * uniform_from_word(angle_word);
    (radius * angle.cos(), radius * angle.sin())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random123's kat_vectors for philox4x32 with 10 rounds.
    #[test]
    fn known_answer_vectors() {
        let cases: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
            (
                [0, 0, 0, 0],
                [0, 0],
                [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8],
            ),
            (
                [u32::MAX; 4],
                [u32::MAX; 2],
                [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd],
            ),
            (
                [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
                [0xa4093822, 0x299f31d0],
                [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
            ),
        ];
        for (counter, key, expected) in cases {
            let got = philox4x32_10(counter, key);
            assert_eq!(got, expected, "counter {counter:08x?} key {key:08x?}");
        }
    }

    #[test]
    fn normals_have_unit_moments() {
        let s = Stream::new(7, 3, 1, 0, Purpose::Momentum);
        let mut v = vec![0f32; 400_000];
        s.fill_normal(&mut v);
        let n = v.len() as f64;
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
        // Standard errors: 1/sqrt(n) = 0.0016 for the mean, sqrt(2/n) = 0.0022 for the variance.
        assert!(mean.abs() < 5.0 * 0.0016, "mean {mean}");
        assert!((var - 1.0).abs() < 5.0 * 0.0022, "variance {var}");
    }

    #[test]
    fn indices_stay_in_range_and_cover_it() {
        let s = Stream::new(1, 0, 0, 0, Purpose::Minibatch);
        let mut idx = vec![0u32; 10_000];
        s.fill_index(10, &mut idx);
        let mut counts = [0usize; 10];
        for &i in &idx {
            counts[i as usize] += 1;
        }
        // Each count is Binomial(10000, 0.1): sd 30.
        for (k, &c) in counts.iter().enumerate() {
            assert!((c as i64 - 1000).abs() < 150, "bin {k}: {c}");
        }
    }
}
