//! The tangent likelihood: each chain's neighbour span, its orthonormal basis and shrinkages
//! (computed on the host), and its energy and scaled residual on the CPU (the WGSL twin is
//! `shaders/likelihood/tangent.wgsl`).
//!
//! Chain c has an anchor image a_c (the image it starts from) and the k nearest images n_j of
//! its class (Euclidean, the anchor excluded); B_c = [n_j − a_c] (d × k). Its image-space
//! covariance is C_c = (s²/k)·B_c B_cᵀ + σ²·I, and
//!
//! ```text
//! C_c⁻¹ = (1/σ²)·(I − Q_c diag(γ_c) Q_cᵀ),  γ_j = λ_j/(λ_j + σ²),
//! ```
//!
//! with Q_c (d × k) orthonormal over span(B_c) and λ_j the eigenvalues of (s²/k)·B_c B_cᵀ. These
//! come from the k × k Gram (s²/k)·B_cᵀB_c (same non-zero eigenvalues), solved in f64 by Jacobi.

use std::sync::Arc;

use rayon::prelude::*;

use super::ChainData;
use crate::model::neighbours::nearest;
use crate::model::wgsl::{wgsl_struct, WgslModel, WgslStruct};
use crate::model::Observations;
use crate::{Error, Result};

/// The WGSL twin of `tangent_energy` and `tangent_step` (`likelihood_params`: `TangentParams`;
/// `likelihood_chains`: per chain its k directions, then its k shrinkages).
pub const WGSL: &str = include_str!("../../../shaders/likelihood/tangent.wgsl");

/// What the backends compile and bind for this likelihood.
pub const WGSL_MODEL: WgslModel = WgslModel {
    name: "tangent",
    wgsl: WGSL,
    params: Some(&TangentParams::LAYOUT),
    chains: true,
    scratch: false,
};

wgsl_struct! {
    /// `struct TangentParams` in `shaders/likelihood/tangent.wgsl`: its hyper-parameters as the
    /// WGSL reads them (`likelihood_params`).
    pub storage struct TangentParams {
        /// Directions per chain (at most `MAX_TANGENT_K`).
        k: u32,
        /// 1/σ², rounded on the host.
        inv_sigma2: f32,
    }
}

/// ½ rᵀ C⁻¹ r with r = A X − a_c, C = (s²/k)·B Bᵀ + σ²·I, for C chains.
#[derive(Clone, Debug)]
pub struct Tangent {
    /// The anchors a_c, C × d.
    pub anchors: Vec<f32>,
    /// The per-chain neighbour bases and shrinkages.
    pub basis: Arc<TangentBasis>,
    /// 1/σ².
    pub inv_sigma2: f32,
}

impl Tangent {
    /// C⁻¹ r in place for every chain (rows of d): the step's residual (no energy).
    pub fn step_residual(&self, residual: &mut [f32]) {
        let b = &self.basis;
        residual.par_chunks_mut(b.d).enumerate().for_each(|(c, r)| {
            tangent_step(b.chain_basis(c), b.chain_gamma(c), self.inv_sigma2, r)
        });
    }

    /// Every chain's energy ½ rᵀ C⁻¹ r and C⁻¹ r (`tangent_energy`).
    pub fn energy(&self, residual: &[f32], energy: &mut [f32], scaled: &mut [f32]) {
        let b = &self.basis;
        energy
            .par_iter_mut()
            .zip(scaled.par_chunks_mut(b.d))
            .zip(residual.par_chunks(b.d))
            .enumerate()
            .for_each(|(c, ((e, s), r))| {
                let (q, g) = (b.chain_basis(c), b.chain_gamma(c));
                *e = tangent_energy(q, g, self.inv_sigma2, r, s);
            });
    }

    /// Its params as the WGSL reads them.
    pub fn params(&self) -> TangentParams {
        TangentParams {
            k: self.basis.k as u32,
            inv_sigma2: self.inv_sigma2,
        }
    }

    /// Per chain its k directions (k·d) then its k shrinkages, as the WGSL reads them.
    pub(super) fn chain_data(&self) -> ChainData {
        let b = &self.basis;
        let chains = b.neighbours.len();
        let mut values = Vec::with_capacity(chains * b.k * (b.d + 1));
        for c in 0..chains {
            values.extend_from_slice(b.chain_basis(c));
            values.extend_from_slice(b.chain_gamma(c));
        }
        ChainData {
            bytes: bytemuck::cast_slice(&values).to_vec(),
            bytes_per_chain: 4 * b.k * (b.d + 1),
        }
    }
}

/// Most directions per chain: the WGSL kernel keeps the k coefficients in a private array.
pub const MAX_TANGENT_K: u32 = 64;

/// The tangent target's two settings (`--tangent-k`, `--tangent-scale`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TangentSettings {
    /// k: neighbours per chain.
    pub k: u32,
    /// s: the standard deviation along the neighbour directions, in units of their spread.
    pub scale: f32,
}

impl Default for TangentSettings {
    fn default() -> Self {
        TangentSettings { k: 8, scale: 1.0 }
    }
}

impl TangentSettings {
    /// Fails (`Error::Usage`) for k = 0, k > `MAX_TANGENT_K`, or a negative or non-finite scale.
    pub fn check(&self) -> Result<()> {
        if self.k == 0 || self.k > MAX_TANGENT_K {
            return Err(Error::usage(
                "tangent_k",
                format!(
                    "the tangent target needs 1 to {MAX_TANGENT_K} neighbours, got {}",
                    self.k
                ),
            ));
        }
        if !(self.scale.is_finite() && self.scale >= 0.0) {
            return Err(Error::usage(
                "tangent_scale",
                format!("must be a non-negative number, got {}", self.scale),
            ));
        }
        Ok(())
    }
}

/// Per chain the orthonormal directions q_j (rows of d) and shrinkages γ_j the kernels read.
#[derive(Clone, Debug, PartialEq)]
pub struct TangentBasis {
    /// Directions per chain (dropped ones are zero rows with γ = 0).
    pub k: usize,
    /// Observation dimension.
    pub d: usize,
    /// C × k × d: chain c's direction j is `basis[(c·k + j)·d..][..d]`.
    pub basis: Vec<f32>,
    /// C × k: γ_j = λ_j/(λ_j + σ²) in [0, 1).
    pub gamma: Vec<f32>,
    /// Per chain its k neighbour rows, nearest first.
    pub neighbours: Vec<Vec<usize>>,
}

impl TangentBasis {
    /// The bases of chains anchored at `anchors`, each chain's neighbours drawn from its class
    /// rows `class_rows[c]` = [first, count], with noise variance `sigma2`.
    ///
    /// Fails (`Error::Usage`) as `TangentSettings::check`, and when a class has fewer than k + 1
    /// images.
    pub fn new(
        observations: &Observations,
        anchors: &[usize],
        class_rows: &[[u32; 2]],
        settings: TangentSettings,
        sigma2: f32,
    ) -> Result<Self> {
        settings.check()?;
        let k = settings.k as usize;
        if let Some([first, count]) = class_rows.iter().find(|r| (r[1] as usize) < k + 1) {
            return Err(Error::usage(
                "tangent_k",
                format!(
                    "a class (rows {first}..{}) has {count} images, fewer than k + 1 = {} \
                     (the anchor and its k neighbours)",
                    first + count,
                    k + 1
                ),
            ));
        }
        let d = observations.d;
        let per_chain: Vec<(Vec<f32>, Vec<f32>, Vec<usize>)> = anchors
            .par_iter()
            .zip(class_rows.par_iter())
            .map(|(&anchor, &rows)| {
                let neighbours = nearest_in_class(observations, anchor, rows, k);
                let (q, gamma) =
                    chain_basis(observations, anchor, &neighbours, settings.scale, sigma2);
                (q, gamma, neighbours)
            })
            .collect();
        let mut basis = Vec::with_capacity(anchors.len() * k * d);
        let mut gamma = Vec::with_capacity(anchors.len() * k);
        let mut neighbours = Vec::with_capacity(anchors.len());
        for (q, g, n) in per_chain {
            basis.extend(q);
            gamma.extend(g);
            neighbours.push(n);
        }
        Ok(TangentBasis {
            k,
            d,
            basis,
            gamma,
            neighbours,
        })
    }

    /// Chain c's directions, k × d.
    pub fn chain_basis(&self, c: usize) -> &[f32] {
        &self.basis[c * self.k * self.d..(c + 1) * self.k * self.d]
    }

    /// Chain c's shrinkages, k.
    pub fn chain_gamma(&self, c: usize) -> &[f32] {
        &self.gamma[c * self.k..(c + 1) * self.k]
    }
}

/// The k rows of `rows` nearest to `anchor` in pixel space, the anchor itself excluded, nearest
/// first (ties by row index, so the choice is deterministic).
pub fn nearest_in_class(
    observations: &Observations,
    anchor: usize,
    [first, count]: [u32; 2],
    k: usize,
) -> Vec<usize> {
    let rows = (first as usize..(first + count) as usize).filter(|&i| i != anchor);
    nearest(
        &observations.row(anchor),
        rows.map(|i| (i, observations.row(i))),
        k,
    )
}

/// One chain's Q (k × d, f32) and γ (k) from its anchor and neighbours, all in f64 until stored.
fn chain_basis(
    observations: &Observations,
    anchor: usize,
    neighbours: &[usize],
    scale: f32,
    sigma2: f32,
) -> (Vec<f32>, Vec<f32>) {
    let (k, d) = (neighbours.len(), observations.d);
    let a = observations.row(anchor);
    // B's columns as rows: b_j = n_j − a.
    let b: Vec<Vec<f64>> = neighbours
        .iter()
        .map(|&i| {
            observations
                .row(i)
                .iter()
                .zip(&a)
                .map(|(&x, &y)| x as f64 - y as f64)
                .collect()
        })
        .collect();
    let factor = (scale as f64).powi(2) / k as f64;
    let mut gram = vec![0f64; k * k];
    for i in 0..k {
        for j in 0..=i {
            let v = factor * b[i].iter().zip(&b[j]).map(|(x, y)| x * y).sum::<f64>();
            gram[i * k + j] = v;
            gram[j * k + i] = v;
        }
    }
    let (values, vectors) = symmetric_eigen(&gram, k);
    // Directions with λ ≈ 0 (duplicate neighbours, s = 0) carry no variance: γ = 0 drops them,
    // and normalising B v there would only amplify rounding.
    let top = values.iter().fold(0f64, |m, &v| m.max(v));
    let mut q = vec![0f32; k * d];
    let mut gamma = vec![0f32; k];
    for j in 0..k {
        let lambda = values[j];
        if !(lambda > 1e-10 * top && lambda > 0.0) {
            continue;
        }
        let mut u = vec![0f64; d];
        for (m, bm) in b.iter().enumerate() {
            let v = vectors[m * k + j];
            u.iter_mut().zip(bm).for_each(|(u, &x)| *u += v * x);
        }
        let norm = u.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm == 0.0 {
            continue;
        }
        q[j * d..(j + 1) * d]
            .iter_mut()
            .zip(&u)
            .for_each(|(q, &x)| *q = (x / norm) as f32);
        gamma[j] = (lambda / (lambda + sigma2 as f64)) as f32;
    }
    (q, gamma)
}

/// Eigenvalues and eigenvectors of the symmetric n × n matrix `a` (row-major) by cyclic Jacobi
/// rotations in f64: returns (values, vectors) with eigenvector j in column j of `vectors`
/// (row-major n × n). Sweeps until the off-diagonal mass is below 1e-30 of the total (at most 100).
pub fn symmetric_eigen(a: &[f64], n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut m = a.to_vec();
    let mut v = vec![0f64; n * n];
    (0..n).for_each(|i| v[i * n + i] = 1.0);
    let total: f64 = m.iter().map(|x| x * x).sum();
    for _ in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| m[i * n + j].powi(2))
            .sum();
        if off <= 1e-30 * total || off == 0.0 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = m[p * n + q];
                if apq == 0.0 {
                    continue;
                }
                // The rotation that zeroes (p, q): tan θ = t, the smaller root for stability.
                let theta = (m[q * n + q] - m[p * n + p]) / (2.0 * apq);
                // f64::signum(0.0) is 1, so θ = 0 gives the 45° rotation.
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for r in 0..n {
                    let (mrp, mrq) = (m[r * n + p], m[r * n + q]);
                    m[r * n + p] = c * mrp - s * mrq;
                    m[r * n + q] = s * mrp + c * mrq;
                }
                for r in 0..n {
                    let (mpr, mqr) = (m[p * n + r], m[q * n + r]);
                    m[p * n + r] = c * mpr - s * mqr;
                    m[q * n + r] = s * mpr + c * mqr;
                }
                for r in 0..n {
                    let (vrp, vrq) = (v[r * n + p], v[r * n + q]);
                    v[r * n + p] = c * vrp - s * vrq;
                    v[r * n + q] = s * vrp + c * vrq;
                }
            }
        }
    }
    ((0..n).map(|i| m[i * n + i]).collect(), v)
}

// The CPU twins of `shaders/likelihood/tangent.wgsl`: one chain's residual r = A x − a times
// C⁻¹ = (1/σ²)(I − Q diag(γ) Qᵀ): scaled = (r − Q (γ ⊙ Qᵀ r))/σ² and energy
// = ½ (||r||² − Σ_j γ_j (q_jᵀ r)²)/σ², the data term of U (the MH terms add the prior's, as for
// the mixture). Sums run in coordinate order; the WGSL's workgroup trees round differently,
// within f32 rounding.
//
// Every sum is a plain left-to-right f32 sum from −0.0 (what `Iterator::sum` does), but the
// loops run several sums side by side: the k dot products q_jᵀ r `LANES` at a time over the
// coordinates, and Q (γ ⊙ Qᵀ r) as k passes over a d-long accumulator. A sum one at a time is
// a chain of dependent additions (9% of an `augment` run's time); side by side they pipeline
// and vectorise, and each one adds the same terms in the same order, so the bits are the same
// (`kernel_tests::side_by_side_sums_equal_one_at_a_time`).

/// Dot products accumulated side by side in [`projections`].
const LANES: usize = 8;

/// q_jᵀ r into `dots` for every direction j of `basis` (k × d); returns ||r||².
fn projections(basis: &[f32], residual: &[f32], dots: &mut [f32]) -> f32 {
    let d = residual.len();
    let mut norm2 = -0.0f32;
    for (block, out) in dots.chunks_mut(LANES).enumerate() {
        let rows = &basis[block * LANES * d..(block * LANES + out.len()) * d];
        let mut sums = [-0.0f32; LANES];
        if out.len() == LANES {
            let q: [&[f32]; LANES] = std::array::from_fn(|l| &rows[l * d..(l + 1) * d]);
            for (i, &r) in residual.iter().enumerate() {
                for l in 0..LANES {
                    sums[l] += q[l][i] * r;
                }
            }
        } else {
            for (l, sum) in sums.iter_mut().enumerate().take(out.len()) {
                let q = &rows[l * d..(l + 1) * d];
                for (&a, &r) in q.iter().zip(residual) {
                    *sum += a * r;
                }
            }
        }
        out.copy_from_slice(&sums[..out.len()]);
    }
    for &r in residual {
        norm2 += r * r;
    }
    norm2
}

/// (Q (γ ⊙ Qᵀ r))_i for every i into `along`, each summed over the directions in order.
fn along(basis: &[f32], gamma: &[f32], dots: &[f32], along: &mut [f32]) {
    let d = along.len();
    along.fill(-0.0);
    for (j, (&g, &t)) in gamma.iter().zip(dots).enumerate() {
        let weight = g * t;
        for (sum, &q) in along.iter_mut().zip(&basis[j * d..(j + 1) * d]) {
            *sum += q * weight;
        }
    }
}

/// C⁻¹ r into `scaled` and returns the energy ½ rᵀ C⁻¹ r, for one chain with directions `basis`
/// (k × d, orthonormal rows), shrinkages `gamma` (k) and 1/σ² `inv_sigma2`.
pub fn tangent_energy(
    basis: &[f32],
    gamma: &[f32],
    inv_sigma2: f32,
    residual: &[f32],
    scaled: &mut [f32],
) -> f32 {
    let mut dots = vec![0f32; gamma.len()];
    let norm2 = projections(basis, residual, &mut dots);
    let shrunk: f32 = dots.iter().zip(gamma).map(|(&t, &g)| g * t * t).sum();
    along(basis, gamma, &dots, scaled);
    for (s, &r) in scaled.iter_mut().zip(residual) {
        *s = (r - *s) * inv_sigma2;
    }
    0.5 * inv_sigma2 * (norm2 - shrunk)
}

/// C⁻¹ r in place (the step residual: the step needs no energy).
pub fn tangent_step(basis: &[f32], gamma: &[f32], inv_sigma2: f32, image: &mut [f32]) {
    let mut dots = vec![0f32; gamma.len()];
    projections(basis, image, &mut dots);
    let mut sums = vec![0f32; image.len()];
    along(basis, gamma, &dots, &mut sums);
    for (v, s) in image.iter_mut().zip(sums) {
        *v = (*v - s) * inv_sigma2;
    }
}

/// Tests of the energy and step kernels: their side-by-side sums against one-at-a-time ones.
#[cfg(test)]
mod kernel_tests {
    use super::*;

    /// The kernel as first written, one sum at a time (`Iterator::sum` in coordinate order).
    fn one_at_a_time(basis: &[f32], gamma: &[f32], inv: f32, r: &[f32]) -> (Vec<f32>, f32) {
        let d = r.len();
        let dots: Vec<f32> = (0..gamma.len())
            .map(|j| {
                basis[j * d..(j + 1) * d]
                    .iter()
                    .zip(r)
                    .map(|(a, b)| a * b)
                    .sum()
            })
            .collect();
        let norm2: f32 = r.iter().map(|v| v * v).sum();
        let shrunk: f32 = dots.iter().zip(gamma).map(|(&t, &g)| g * t * t).sum();
        let scaled = (0..d)
            .map(|i| {
                let along: f32 = gamma
                    .iter()
                    .zip(&dots)
                    .enumerate()
                    .map(|(j, (&g, &t))| basis[j * d + i] * (g * t))
                    .sum();
                (r[i] - along) * inv
            })
            .collect();
        (scaled, 0.5 * inv * (norm2 - shrunk))
    }

    /// Values in [−1, 1) from a 32-bit LCG, with some exact zeros (signed-zero cases).
    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(7);
        (0..n)
            .map(|i| {
                s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let v = (s >> 8) as f32 / (1u32 << 23) as f32 - 1.0;
                if i % 11 == 3 {
                    -0.0
                } else {
                    v
                }
            })
            .collect()
    }

    #[test]
    fn side_by_side_sums_equal_one_at_a_time() {
        let mut bad = Vec::new();
        for (d, k) in [
            (1, 1),
            (7, 3),
            (37, 8),
            (64, 9),
            (101, 16),
            (784, 17),
            (13, 0),
        ] {
            let basis = values(k * d, (d * 31 + k) as u32);
            let gamma = values(k, k as u32 + 5);
            let r = values(d, d as u32 + 9);
            let inv = 3.7f32;
            let (want, want_energy) = one_at_a_time(&basis, &gamma, inv, &r);
            let mut scaled = vec![0f32; d];
            let energy = tangent_energy(&basis, &gamma, inv, &r, &mut scaled);
            let mut stepped = r.clone();
            tangent_step(&basis, &gamma, inv, &mut stepped);
            if energy.to_bits() != want_energy.to_bits() {
                bad.push(format!("d {d} k {k} energy: {energy} vs {want_energy}"));
            }
            for (i, ((s, t), w)) in scaled.iter().zip(&stepped).zip(&want).enumerate() {
                if s.to_bits() != w.to_bits() || t.to_bits() != w.to_bits() {
                    bad.push(format!(
                        "d {d} k {k} [{i}]: energy's {s}, step's {t} vs {w}"
                    ));
                }
            }
        }
        assert!(bad.is_empty(), "{} differ:\n{}", bad.len(), bad.join("\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A V = V diag(values) and VᵀV = I on a fixed non-trivial symmetric matrix.
    #[test]
    fn jacobi_diagonalises_a_symmetric_matrix() {
        let n = 5;
        let mut a = vec![0f64; n * n];
        for i in 0..n {
            for j in 0..=i {
                let v = ((i * 7 + j * 3) % 5) as f64 - 1.5 + if i == j { 4.0 } else { 0.0 };
                a[i * n + j] = v;
                a[j * n + i] = v;
            }
        }
        let (values, vectors) = symmetric_eigen(&a, n);
        let mut bad = Vec::new();
        for j in 0..n {
            for i in 0..n {
                let av: f64 = (0..n).map(|m| a[i * n + m] * vectors[m * n + j]).sum();
                let want = values[j] * vectors[i * n + j];
                if (av - want).abs() > 1e-12 {
                    bad.push(format!("(A v_{j})[{i}] = {av}, λ v = {want}"));
                }
                let dot: f64 = (0..n)
                    .map(|m| vectors[m * n + i] * vectors[m * n + j])
                    .sum();
                let want = if i == j { 1.0 } else { 0.0 };
                if (dot - want).abs() > 1e-12 {
                    bad.push(format!("v_{i}·v_{j} = {dot}, want {want}"));
                }
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
}
