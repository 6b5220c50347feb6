//! The random measurement matrix A (d × p): Gaussian N(0, 1/d) from the seed, or loaded from NPY.

use crate::rng::{Purpose, Stream, SHARED_CHAIN};

/// How the dictionary's entries are stored for the products: f32, or f16 (half the bytes; the
/// products still multiply and sum in f32, so only A's entries are rounded).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// 32-bit floats (the default).
    #[default]
    F32,
    /// IEEE 754 half precision (`half::f16`, round to nearest even), widened to f32 when read.
    F16,
}

/// A dictionary A of shape d × p, row-major (`a[i * p + j]` is A_ij).
#[derive(Clone, Debug, PartialEq)]
pub struct Dictionary {
    /// Observation dimension (rows).
    pub d: usize,
    /// Number of atoms, the code dimension (columns).
    pub p: usize,
    /// The entries, row-major.
    pub a: Vec<f32>,
}

impl Dictionary {
    /// A with every entry rounded to `precision` (still held as f32, so every backend and the
    /// host compute with exactly the values a device storing f16 reads); F32 leaves it as is.
    /// An entry beyond f16's range (|a| > 65504) becomes infinite: `check_precision` refuses that.
    pub fn rounded_to(mut self, precision: Precision) -> Self {
        if precision == Precision::F16 {
            for v in &mut self.a {
                *v = half::f16::from_f32(*v).to_f32();
            }
        }
        self
    }

    /// Refuses a dictionary that `precision` cannot hold: for F16, an entry beyond f16's largest
    /// finite value 65504 (reported with its row and column), or one that rounds to zero while
    /// not zero in more than half of the entries (a scale f16 cannot resolve).
    pub fn check_precision(&self, precision: Precision) -> crate::Result<()> {
        if precision != Precision::F16 {
            return Ok(());
        }
        let max = half::f16::MAX.to_f32();
        if let Some(i) = self.a.iter().position(|v| v.abs() > max) {
            return Err(crate::Error::usage(
                "precision",
                format!(
                    "f16 holds entries up to 65504 in magnitude; the dictionary's entry ({}, {}) \
                     is {}: use f32",
                    i / self.p.max(1),
                    i % self.p.max(1),
                    self.a[i]
                ),
            ));
        }
        let lost = self
            .a
            .iter()
            .filter(|&&v| v != 0.0 && half::f16::from_f32(v).to_f32() == 0.0)
            .count();
        if 2 * lost > self.a.len() {
            return Err(crate::Error::usage(
                "precision",
                format!(
                    "{lost} of the dictionary's {} entries round to zero in f16 (smallest \
                     subnormal 6e-8): use f32",
                    self.a.len()
                ),
            ));
        }
        Ok(())
    }

    /// The entries as f16 bit patterns, two per little-endian u32 word (entry 2j in word j's low
    /// half, as WGSL's unpack2x16float reads it), padded with a zero to whole words.
    pub fn f16_words(&self) -> Vec<u32> {
        self.a
            .chunks(2)
            .map(|pair| {
                let bits = |v: Option<&f32>| v.map_or(0, |&v| half::f16::from_f32(v).to_bits());
                bits(pair.first()) as u32 | (bits(pair.get(1)) as u32) << 16
            })
            .collect()
    }

    /// A Gaussian dictionary with i.i.d. N(0, 1/d) entries drawn from the seed's shared stream.
    pub fn gaussian(d: usize, p: usize, seed: u64) -> Self {
        let mut a = vec![0f32; d * p];
        let scale = 1.0 / (d as f32).sqrt();
        // One stream per row keeps block indices small for any p.
        for (row, chunk) in a.chunks_mut(p).enumerate() {
            Stream::new(seed, SHARED_CHAIN, row as u32, 0, Purpose::Dictionary).fill_normal(chunk);
            chunk.iter_mut().for_each(|v| *v *= scale);
        }
        Dictionary { d, p, a }
    }

    /// The d × d identity: codes are the images themselves (pixel-space samplers).
    pub fn identity(d: usize) -> Self {
        let mut a = vec![0f32; d * d];
        a.iter_mut().step_by(d + 1).for_each(|v| *v = 1.0);
        Dictionary { d, p: d, a }
    }

    /// The (d, p) f32 matrix of the NPY file `path`, for data of dimension `d`: an error names
    /// the file when its shape does not fit or an atom is all zeros, and `atoms` when it asks
    /// for another p.
    pub fn from_npy(path: &std::path::Path, d: usize, atoms: Option<usize>) -> crate::Result<Self> {
        use crate::Error;
        let (shape, a) = crate::io::read_npy_matrix_f32(path)?;
        if shape.len() != 2 || shape[0] != d {
            return Err(Error::input(
                path,
                format!("shape {shape:?} does not fit the data: expected (d, p) with d = {d}, the data's dimension"),
            ));
        }
        if atoms.is_some_and(|p| p != shape[1]) {
            return Err(Error::usage(
                "atoms",
                format!(
                    "{} atoms asked for, but {} has {}",
                    atoms.unwrap_or(0),
                    path.display(),
                    shape[1]
                ),
            ));
        }
        let p = shape[1];
        if let Some(j) = (0..p).find(|&j| (0..d).all(|i| a[i * p + j] == 0.0)) {
            return Err(Error::input(
                path,
                format!(
                    "column {j} (atom {j} of {p}) is all zeros: every atom needs a nonzero norm"
                ),
            ));
        }
        Ok(Dictionary { d, p, a })
    }

    /// A X for one code x (length p), in f64, for references and tests.
    pub fn apply_f64(&self, x: &[f64]) -> Vec<f64> {
        self.a
            .chunks(self.p)
            .map(|row| row.iter().zip(x).map(|(&a, &x)| a as f64 * x).sum())
            .collect()
    }

    /// Aᵀ r for one residual r (length d), in f64.
    pub fn apply_transpose_f64(&self, r: &[f64]) -> Vec<f64> {
        let mut out = vec![0f64; self.p];
        for (row, &ri) in self.a.chunks(self.p).zip(r) {
            for (o, &a) in out.iter_mut().zip(row) {
                *o += a as f64 * ri;
            }
        }
        out
    }

    /// The largest singular value squared, σ_max(A)², by power iteration on AᵀA (f64).
    /// FISTA's step is its inverse. Iterates until the estimate moves by less than 1e-7 relative
    /// (at most 500 products), then adds 1% so the step stays safe if convergence was slow.
    pub fn spectral_norm_squared(&self) -> f64 {
        let mut v = vec![1.0 / (self.p as f64).sqrt(); self.p];
        // A deterministic, non-symmetric start avoids starting orthogonal to the top vector.
        for (j, vj) in v.iter_mut().enumerate() {
            *vj *= 1.0 + 0.5 * ((j as f64) * 0.618_033_988_75).fract();
        }
        let mut estimate = 0.0;
        for _ in 0..500 {
            let av = self.apply_f64(&v);
            let w = self.apply_transpose_f64(&av);
            let norm = w.iter().map(|x| x * x).sum::<f64>().sqrt();
            if norm == 0.0 {
                return 0.0;
            }
            let next = norm / v.iter().map(|x| x * x).sum::<f64>().sqrt();
            v = w.iter().map(|x| x / norm).collect();
            let converged = (next - estimate).abs() <= 1e-7 * next;
            estimate = next;
            if converged {
                break;
            }
        }
        estimate * 1.01
    }
}

#[cfg(test)]
mod precision_tests {
    use super::*;

    #[test]
    fn f16_words_hold_the_rounded_entries_in_order() {
        let d = Dictionary {
            d: 1,
            p: 3,
            a: vec![1.0, -0.1, 3.0e-3],
        };
        let r = d.clone().rounded_to(Precision::F16);
        assert_eq!(r.a[0], 1.0);
        assert_ne!(r.a[1], -0.1f32);
        assert!((r.a[1] + 0.1).abs() < 1e-4);
        let words = d.f16_words();
        assert_eq!(words.len(), 2);
        let unpack =
            |w: u32, half_index: u32| half::f16::from_bits((w >> (16 * half_index)) as u16);
        assert_eq!(unpack(words[0], 0).to_f32(), r.a[0]);
        assert_eq!(unpack(words[0], 1).to_f32(), r.a[1]);
        assert_eq!(unpack(words[1], 0).to_f32(), r.a[2]);
        assert_eq!(words[1] >> 16, 0, "padding");
        // Rounding is idempotent: packing the rounded dictionary gives the same words.
        assert_eq!(r.f16_words(), words);
    }

    #[test]
    fn f16_refuses_what_it_cannot_hold() {
        let big = Dictionary {
            d: 2,
            p: 2,
            a: vec![0.0, 1.0, 7.0e4, 0.5],
        };
        let e = big.check_precision(Precision::F16).unwrap_err().to_string();
        assert!(e.contains("65504") && e.contains("(1, 0)"), "{e}");
        let tiny = Dictionary {
            d: 1,
            p: 2,
            a: vec![1e-9, 1e-9],
        };
        assert!(tiny.check_precision(Precision::F16).is_err());
        assert!(big.check_precision(Precision::F32).is_ok());
    }
}
