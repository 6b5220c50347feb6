//! The paper's "Kernel HMC" baseline: chains in image space on a Gaussian kernel density per class.
//!
//! Chain c sees only the rows `start_c..start_c + count_c` of the observations (its class) and
//! samples U_c(x) = −log Σ_i exp(−||x − x_i||² / (2 h_c²)) (+ const), x ∈ R^d in model units,
//! with the momentum steps of Algorithm 1 on minibatch kernel gradients and the MH terms of
//! Algorithm 3. `backend::kernel_hmc::cpu` and `backend::gpu::kernel_hmc` are the two backends; the bandwidth h_c is the median
//! pairwise distance of the class (the median heuristic) unless given.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytemuck::{Pod, Zeroable};

use crate::io::Pixels;
use crate::math::Portable;
use crate::model::Observations;
use crate::rng::{chain_key, philox::index_from_word, philox4x32_10, SHARED_CHAIN};
use crate::{Error, Result};

/// Pairs the median heuristic looks at, at most: every pair when a class has this many or fewer,
/// otherwise this many drawn at random.
pub const MAX_BANDWIDTH_PAIRS: usize = 2000;

/// The fourth Philox counter word of the median heuristic's pair draws. Not a `Purpose` variant
/// (those are the sampler's streams); chosen far from them ("khmc") so no stream shares it. The
/// key is (seed, `SHARED_CHAIN`) and the counter [block, start, count, this].
pub const BANDWIDTH_PURPOSE: u32 = 0x6B68_6D63;

/// What the kernels read of one chain, mirrored by `struct ChainInfo` in `shaders/kernel_hmc.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct ChainInfo {
    /// First row of the chain's class.
    pub start: u32,
    /// Rows in the class (at least 1).
    pub count: u32,
    /// 1/h², rounded once in f32 on the host so both backends multiply by the same number.
    pub inv_h2: f32,
    /// The observations' scale (model value = raw × scale), the same for every chain.
    pub scale: f32,
}

/// The kernel density targets of C chains: the observations, each chain's class rows and h².
#[derive(Clone, Debug)]
pub struct KernelTarget {
    /// The observations, sorted by class by the caller (model value = raw × scale).
    pub observations: Arc<Observations>,
    /// Per chain: [first row, number of rows] of its class.
    pub chain_rows: Vec<[u32; 2]>,
    /// Per chain: the bandwidth h² (model units squared).
    pub bandwidth2: Vec<f32>,
}

impl KernelTarget {
    /// The targets of `chain_rows.len()` chains with the given bandwidths h².
    ///
    /// Fails (`Error::Usage`) when there are no chains, the data are empty or inconsistent, a
    /// class is empty or runs past the data, or an h² is not positive and finite.
    pub fn new(
        observations: Arc<Observations>,
        chain_rows: Vec<[u32; 2]>,
        bandwidth2: Vec<f32>,
    ) -> Result<Self> {
        check_observations(&observations)?;
        if chain_rows.is_empty() {
            return Err(Error::usage(
                "chains",
                "kernel-hmc needs at least one chain",
            ));
        }
        for (c, &rows) in chain_rows.iter().enumerate() {
            check_rows(&observations, c, rows)?;
        }
        if bandwidth2.len() != chain_rows.len() {
            return Err(Error::usage(
                "bandwidth",
                format!(
                    "{} bandwidths for {} chains",
                    bandwidth2.len(),
                    chain_rows.len()
                ),
            ));
        }
        if let Some((c, h2)) = bandwidth2
            .iter()
            .enumerate()
            .find(|(_, h2)| !(h2.is_finite() && **h2 > 0.0 && (1.0 / **h2).is_finite()))
        {
            return Err(Error::usage(
                "bandwidth",
                format!("chain {c}: h² = {h2} must be positive, finite and invertible in f32"),
            ));
        }
        Ok(KernelTarget {
            observations,
            chain_rows,
            bandwidth2,
        })
    }

    /// The targets with h² of each class by the median heuristic (`median_bandwidth2` with
    /// `seed`), computed once per distinct row range.
    ///
    /// Fails as `new`, and when a class has no positive median distance (fewer than two rows, or
    /// mostly identical ones): give its bandwidth explicitly then.
    pub fn with_median_bandwidth(
        observations: Arc<Observations>,
        chain_rows: Vec<[u32; 2]>,
        seed: u64,
    ) -> Result<Self> {
        check_observations(&observations)?;
        let mut by_class = BTreeMap::new();
        let mut bandwidth2 = Vec::with_capacity(chain_rows.len());
        for (c, &rows) in chain_rows.iter().enumerate() {
            check_rows(&observations, c, rows)?;
            let h2 = *by_class.entry(rows).or_insert_with(|| {
                median_bandwidth2(&observations, rows[0] as usize, rows[1] as usize, seed) as f32
            });
            if !(h2.is_finite() && h2 > 0.0) {
                return Err(Error::usage(
                    "bandwidth",
                    format!(
                        "chain {c}: rows {}..{} have no positive median pairwise distance \
                         (fewer than two rows, or mostly identical ones); give h² explicitly",
                        rows[0],
                        rows[0] + rows[1]
                    ),
                ));
            }
            bandwidth2.push(h2);
        }
        Self::new(observations, chain_rows, bandwidth2)
    }

    /// Number of chains.
    pub fn chains(&self) -> usize {
        self.chain_rows.len()
    }

    /// Dimension d of an image (and of a chain's state).
    pub fn d(&self) -> usize {
        self.observations.d
    }

    /// What the kernels read per chain.
    pub fn chain_info(&self) -> Vec<ChainInfo> {
        self.chain_rows
            .iter()
            .zip(&self.bandwidth2)
            .map(|(&[start, count], &h2)| ChainInfo {
                start,
                count,
                inv_h2: 1.0 / h2,
                scale: self.observations.scale,
            })
            .collect()
    }

    /// U_c(x) = −log Σ_i exp(−||x − x_i||² / (2h²)) over chain c's class, in f64 (the
    /// reference; stable log-sum-exp). `x` has d values and `chain` must be a chain.
    pub fn energy_f64(&self, chain: usize, x: &[f32]) -> f64 {
        let (exponents, max) = self.exponents_f64(chain, x);
        let sum: f64 = exponents.iter().map(|e| (e - max).exp_portable()).sum();
        -(max + sum.ln_portable())
    }

    /// ∇U_c(x) = (x − Σ_i w_i x_i)/h², w = softmax of the exponents, in f64 (the reference).
    pub fn gradient_f64(&self, chain: usize, x: &[f32]) -> Vec<f64> {
        let (exponents, max) = self.exponents_f64(chain, x);
        let weights: Vec<f64> = exponents.iter().map(|e| (e - max).exp_portable()).collect();
        let total: f64 = weights.iter().sum();
        let [start, _] = self.chain_rows[chain];
        let mut mean = vec![0f64; self.d()];
        for (k, w) in weights.iter().enumerate() {
            let row = self.observations.row(start as usize + k);
            for (m, v) in mean.iter_mut().zip(row) {
                *m += w * v as f64;
            }
        }
        let h2 = self.bandwidth2[chain] as f64;
        x.iter()
            .zip(&mean)
            .map(|(&xj, m)| (xj as f64 - m / total) / h2)
            .collect()
    }

    /// The class's exponents −||x − x_i||²/(2h²) and their maximum, in f64.
    fn exponents_f64(&self, chain: usize, x: &[f32]) -> (Vec<f64>, f64) {
        let [start, count] = self.chain_rows[chain];
        let h2 = self.bandwidth2[chain] as f64;
        let exponents: Vec<f64> = (start..start + count)
            .map(|i| {
                let row = self.observations.row(i as usize);
                let dist2: f64 = x
                    .iter()
                    .zip(row)
                    .map(|(&a, b)| (a as f64 - b as f64).powi(2))
                    .sum();
                -dist2 / (2.0 * h2)
            })
            .collect();
        let max = exponents.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (exponents, max)
    }
}

fn check_observations(observations: &Observations) -> Result<()> {
    let (n, d) = (observations.n, observations.d);
    let len = match &observations.pixels {
        Pixels::U8(v) => v.len(),
        Pixels::F32(v) => v.len(),
    };
    if n == 0 || d == 0 || n.checked_mul(d) != Some(len) {
        return Err(Error::usage(
            "dataset",
            format!("kernel-hmc needs a non-empty n × d dataset (n {n}, d {d}, {len} values)"),
        ));
    }
    if n > u32::MAX as usize || !(observations.scale.is_finite() && observations.scale > 0.0) {
        return Err(Error::usage(
            "dataset",
            format!(
                "{n} rows with scale {}: at most 2^32 − 1 rows and a positive finite scale",
                observations.scale
            ),
        ));
    }
    Ok(())
}

fn check_rows(observations: &Observations, chain: usize, [start, count]: [u32; 2]) -> Result<()> {
    if count == 0 || start as u64 + count as u64 > observations.n as u64 {
        return Err(Error::usage(
            "classes",
            format!(
                "chain {chain}: rows {start}..{} must be non-empty and within the {} observations",
                start as u64 + count as u64,
                observations.n
            ),
        ));
    }
    Ok(())
}

/// h² by the median heuristic for rows `start..start + count`: the square of the median Euclidean
/// distance (model units) between two distinct rows, over every pair when there are at most
/// `MAX_BANDWIDTH_PAIRS`, else over that many pairs drawn uniformly (with replacement) from the
/// Philox stream keyed by (seed, `SHARED_CHAIN`) with counter [block, start, count,
/// `BANDWIDTH_PURPOSE`]. An even number of distances has the mean of the middle two as median.
/// Computed in f64; deterministic for a given seed.
///
/// NaN when the range holds fewer than two rows or runs past the observations.
pub fn median_bandwidth2(
    observations: &Observations,
    start: usize,
    count: usize,
    seed: u64,
) -> f64 {
    let fits = start
        .checked_add(count)
        .is_some_and(|end| end <= observations.n && end <= u32::MAX as usize);
    if count < 2 || !fits {
        return f64::NAN;
    }
    let all_pairs = count * (count - 1) / 2;
    let pairs: Vec<(usize, usize)> = if all_pairs <= MAX_BANDWIDTH_PAIRS {
        (0..count)
            .flat_map(|i| (i + 1..count).map(move |j| (i, j)))
            .collect()
    } else {
        let key = chain_key(seed, SHARED_CHAIN);
        // Two pairs per block: i uniform on 0..count, j uniform on the other count − 1 rows.
        (0..MAX_BANDWIDTH_PAIRS)
            .map(|q| {
                let counter = [
                    (q / 2) as u32,
                    start as u32,
                    count as u32,
                    BANDWIDTH_PURPOSE,
                ];
                let w = philox4x32_10(counter, key);
                let (a, b) = if q % 2 == 0 {
                    (w[0], w[1])
                } else {
                    (w[2], w[3])
                };
                let i = index_from_word(a, count as u32) as usize;
                let j = index_from_word(b, count as u32 - 1) as usize;
                (i, if j >= i { j + 1 } else { j })
            })
            .collect()
    };
    let scale = observations.scale as f64;
    let mut distances: Vec<f64> = pairs
        .iter()
        .map(|&(i, j)| {
            let (a, b) = (start + i, start + j);
            let raw: f64 = (0..observations.d)
                .map(|k| (observations.raw(a, k) as f64 - observations.raw(b, k) as f64).powi(2))
                .sum();
            raw.sqrt() * scale
        })
        .collect();
    distances.sort_by(f64::total_cmp);
    let mid = distances.len() / 2;
    let median = if distances.len() % 2 == 1 {
        distances[mid]
    } else {
        0.5 * (distances[mid - 1] + distances[mid])
    };
    median * median
}
