//! The posterior: observations in model units, xbar, lam, the prior and the likelihood's settings,
//! and f64 reference energy and gradients.

use std::sync::Arc;

use super::{ChainClasses, Dictionary, Laplace, Prior, TangentBasis, TangentSettings, TargetKind};
use crate::io::{Dataset, Pixels};
use crate::{Error, Result};

/// The observations as the backends see them: model value = raw value × `scale`.
#[derive(Clone, Debug)]
pub struct Observations {
    /// Number of observations.
    pub n: usize,
    /// Dimension of one observation.
    pub d: usize,
    /// n × d raw values, row-major (8-bit data stays 8-bit).
    pub pixels: Pixels,
    /// Multiplier from raw values to model units.
    pub scale: f32,
}

impl Observations {
    /// The dataset's pixels scaled so that a full-intensity pixel is worth `pixel_max`.
    pub fn from_dataset(dataset: &Dataset, pixel_max: f32) -> Self {
        Observations {
            n: dataset.n,
            d: dataset.d,
            pixels: dataset.pixels.clone(),
            scale: pixel_max / dataset.full_scale,
        }
    }

    /// Observation `i` in model units.
    pub fn row(&self, i: usize) -> Vec<f32> {
        let range = i * self.d..(i + 1) * self.d;
        match &self.pixels {
            Pixels::U8(v) => v[range].iter().map(|&x| x as f32 * self.scale).collect(),
            Pixels::F32(v) => v[range].iter().map(|&x| x * self.scale).collect(),
        }
    }

    /// The raw value at (observation i, coordinate j), as f32.
    #[inline]
    pub fn raw(&self, i: usize, j: usize) -> f32 {
        match &self.pixels {
            Pixels::U8(v) => v[i * self.d + j] as f32,
            Pixels::F32(v) => v[i * self.d + j],
        }
    }

    /// The mean observation, in model units (accumulated in f64).
    pub fn mean(&self) -> Vec<f32> {
        self.mean_of_rows(0, self.n)
    }

    /// The mean of rows `first..first + count` (a class's), in model units (accumulated in f64).
    pub fn mean_of_rows(&self, first: usize, count: usize) -> Vec<f32> {
        let mut sum = vec![0f64; self.d];
        for i in first..first + count {
            for (j, s) in sum.iter_mut().enumerate() {
                *s += self.raw(i, j) as f64;
            }
        }
        sum.iter()
            .map(|&s| (s / count.max(1) as f64) as f32 * self.scale)
            .collect()
    }

    /// The mean of the rows `indices`, in model units; the CPU twin of the gather kernel.
    pub fn batch_mean(&self, indices: &[u32], out: &mut [f32]) {
        match &self.pixels {
            // 8-bit rows sum in integers: every partial sum of up to 257 values of at most 255
            // fits a u16 (and any sum below 2^24 is exact in f32), so the result equals the f32
            // sum bit for bit, at twice the SIMD lanes and without a conversion per pixel.
            Pixels::U8(v) if indices.len() <= U16_SUM_ROWS => {
                let mut sum = vec![0u16; self.d];
                for &i in indices {
                    let row = &v[i as usize * self.d..(i as usize + 1) * self.d];
                    sum.iter_mut().zip(row).for_each(|(s, &x)| *s += x as u16);
                }
                out.iter_mut().zip(&sum).for_each(|(o, &s)| *o = s as f32);
            }
            Pixels::U8(v) => {
                out.iter_mut().for_each(|o| *o = 0.0);
                for &i in indices {
                    let row = &v[i as usize * self.d..(i as usize + 1) * self.d];
                    out.iter_mut().zip(row).for_each(|(o, &x)| *o += x as f32);
                }
            }
            Pixels::F32(v) => {
                out.iter_mut().for_each(|o| *o = 0.0);
                for &i in indices {
                    let row = &v[i as usize * self.d..(i as usize + 1) * self.d];
                    out.iter_mut().zip(row).for_each(|(o, &x)| *o += x);
                }
            }
        }
        let factor = self.scale / indices.len() as f32;
        out.iter_mut().for_each(|o| *o *= factor);
    }
}

/// The most 8-bit rows `batch_mean` sums in u16: 257 · 255 = 65535.
const U16_SUM_ROWS: usize = 257;

/// The RMLD posterior U(X) = 1/(2σ²)·||A X − xbar||² + lam·||X||₁ (+ const), with its data.
/// σ² = 1 is the paper's model; a larger σ² widens the posterior of A X.
#[derive(Clone, Debug)]
pub struct Target {
    /// The measurement matrix A (d × p).
    pub dictionary: Arc<Dictionary>,
    /// The observations minibatches are drawn from.
    pub observations: Arc<Observations>,
    /// The mean observation (model units).
    pub xbar: Vec<f32>,
    /// The LASSO penalty lam of the chains' starts, and the Laplace prior's rate by default.
    pub lam: f32,
    /// The prior over the codes (`Target::new`: Laplace with rate lam).
    pub prior: Prior,
    /// The likelihood's noise variance σ² (1 in the paper).
    pub sigma2: f32,
    /// Class-conditional chains; `None`: every chain sees every row and xbar.
    pub classes: Option<ChainClasses>,
    /// The energy the backends run (set by `with_kind`).
    pub kind: TargetKind,
    /// The tangent target's k and scale (read by `with_kind(TargetKind::Tangent, ..)`).
    pub tangent: TangentSettings,
    /// The tangent target's per-chain bases (set by `with_kind(TargetKind::Tangent, ..)`).
    pub tangent_basis: Option<Arc<TangentBasis>>,
    /// The noise model: σ² fixed (the default) or a per-chain precision learned by Gibbs.
    pub noise: super::NoiseModel,
    /// How a device stores A (`with_precision`); the dictionary's entries are already rounded to
    /// it, so every backend and the host compute with the values the device reads.
    pub precision: super::Precision,
}

impl Target {
    /// The prior's latent state for `chains` chains as a backend starts it (checked against
    /// the likelihood its update reads: SSGL's σ update reads a Gaussian residual), or None for
    /// a prior without state.
    pub fn initial_prior_state(
        &self,
        likelihood: &super::Likelihood,
        chains: usize,
    ) -> Result<Option<Vec<f32>>> {
        let Some(state) = self.prior.initial_state(chains, self.p())? else {
            return Ok(None);
        };
        if !likelihood.is_gaussian_residual() {
            return Err(Error::usage(
                "prior",
                "the ssgl prior runs with the paper and local targets (its σ update reads the \
                 Gaussian residual), not mixture or tangent",
            ));
        }
        Ok(Some(state))
    }

    /// The posterior of `observations` under `dictionary` with prior rate `lam`.
    pub fn new(dictionary: Arc<Dictionary>, observations: Arc<Observations>, lam: f32) -> Self {
        let xbar = observations.mean();
        Target {
            dictionary,
            observations,
            xbar,
            lam,
            prior: Prior::Laplace(Laplace { lam }),
            sigma2: 1.0,
            classes: None,
            kind: TargetKind::Paper,
            tangent: TangentSettings::default(),
            tangent_basis: None,
            noise: super::NoiseModel::Fixed,
            precision: super::Precision::F32,
        }
    }

    /// The same target with class-conditional chains (rows of a class contiguous).
    pub fn with_classes(mut self, classes: ChainClasses) -> Self {
        self.classes = Some(classes);
        self
    }

    /// Per chain its class, numbered 0, 1, … as the classes first appear among the chains (all
    /// 0 without classes). An anchored chain (local and tangent targets) keeps the class of the
    /// image it is anchored to, though it draws from that image alone.
    pub fn chain_classes(&self, chains: usize) -> Result<Vec<u32>> {
        self.check_chains(chains)?;
        Ok(match &self.classes {
            Some(c) => c.numbered(),
            None => vec![0; chains],
        })
    }

    /// Per chain (first row, row count) of the observations its minibatches come from.
    pub fn chain_rows(&self, chains: usize) -> Result<Vec<[u32; 2]>> {
        self.check_chains(chains)?;
        Ok(match &self.classes {
            Some(c) => c.rows.clone(),
            None => vec![[0, self.observations.n as u32]; chains],
        })
    }

    /// Per chain the mean its full-data energy uses (xbar, or its class's mean), C × d.
    pub fn xbar_rows(&self, chains: usize) -> Result<Vec<f32>> {
        self.check_chains(chains)?;
        Ok(match &self.classes {
            Some(c) => c.means.clone(),
            None => self.xbar.repeat(chains),
        })
    }

    fn check_chains(&self, chains: usize) -> Result<()> {
        match &self.classes {
            Some(c) if c.chains() != chains => Err(Error::Internal(format!(
                "the target describes classes for {} chains, the backend runs {chains}",
                c.chains()
            ))),
            Some(c) => {
                match c.rows.iter().find(|[first, count]| {
                    (*first as usize + *count as usize) > self.observations.n
                }) {
                    Some(r) => Err(Error::Internal(format!(
                        "chain rows {r:?} pass the {} observations",
                        self.observations.n
                    ))),
                    None => Ok(()),
                }
            }
            None => Ok(()),
        }
    }

    /// The same posterior with another prior over the codes (lam still sets the LASSO starts).
    pub fn with_prior(mut self, prior: Prior) -> Self {
        self.prior = prior;
        self
    }

    /// The posterior with A stored in `precision`: its entries rounded to it (F16: to the
    /// nearest half-precision value), checked first that it can hold them.
    pub fn with_precision(mut self, precision: super::Precision) -> Result<Self> {
        self.dictionary.check_precision(precision)?;
        if precision != self.precision {
            let rounded = Dictionary::clone(&self.dictionary).rounded_to(precision);
            self.dictionary = Arc::new(rounded);
            self.precision = precision;
        }
        Ok(self)
    }

    /// The same posterior with noise variance `sigma2` (must be positive and finite).
    pub fn with_sigma2(mut self, sigma2: f32) -> Self {
        self.sigma2 = sigma2;
        self
    }

    /// The same posterior with the noise model `noise` (checked by the orchestrator's start).
    pub fn with_noise(mut self, noise: super::NoiseModel) -> Self {
        self.noise = noise;
        self
    }

    /// 1/σ², rounded once in f32 as every kernel receives it.
    pub fn inv_sigma2(&self) -> f32 {
        1.0 / self.sigma2
    }

    /// Observation dimension d.
    pub fn d(&self) -> usize {
        self.dictionary.d
    }

    /// Code dimension p.
    pub fn p(&self) -> usize {
        self.dictionary.p
    }
}

/// sign(x) with sign(0) = 0, as the subgradient of |x| the paper uses.
#[inline]
pub fn sign(x: f32) -> f32 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 8-bit rows' integer sums (up to 257 rows in u16, more in f32) equal the f32 sum of
    /// the pixels bit for bit, repeated rows included.
    #[test]
    fn batch_mean_of_8_bit_rows_equals_the_f32_sum() {
        let (n, d) = (300, 13);
        let pixels: Vec<u8> = (0..n * d).map(|i| (i * 97 % 256) as u8).collect();
        let rows = Observations {
            n,
            d,
            pixels: Pixels::U8(pixels.clone()),
            scale: 1.0 / 255.0,
        };
        for count in [1, 64, 257, 258, 600] {
            let indices: Vec<u32> = (0..count).map(|k| (k * 7 % n) as u32).collect();
            let mut reference = vec![0f32; d];
            for &i in &indices {
                for (r, &x) in reference.iter_mut().zip(&pixels[i as usize * d..][..d]) {
                    *r += x as f32;
                }
            }
            let factor = rows.scale / count as f32;
            reference.iter_mut().for_each(|r| *r *= factor);
            let mut out = vec![f32::NAN; d];
            rows.batch_mean(&indices, &mut out);
            for (j, (a, b)) in out.iter().zip(&reference).enumerate() {
                assert_eq!(
                    a.to_bits(),
                    b.to_bits(),
                    "{count} rows, pixel {j}: {a} vs {b}"
                );
            }
        }
    }
}
