//! The random measurement matrix A (d × p): Gaussian N(0, 1/d) from the seed, or loaded from NPY.

use crate::rng::{Purpose, Stream, SHARED_CHAIN};

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
