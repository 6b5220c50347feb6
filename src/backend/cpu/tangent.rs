//! CPU twin of `shaders/tangent.wgsl`: one chain's residual r = A x − a times C⁻¹, and its energy.
//!
//! With C⁻¹ = (1/σ²)(I − Q diag(γ) Qᵀ) (see `target::tangent`): scaled = (r − Q (γ ⊙ Qᵀ r))/σ²
//! and energy = ½ (||r||² − Σ_j γ_j (q_jᵀ r)²)/σ², the data term of U (lam·||x||₁ is added by
//! the MH terms, as for the mixture). Sums run in coordinate order; the WGSL's workgroup trees
//! round differently, within f32 rounding.
//!
//! Every sum is a plain left-to-right f32 sum from −0.0 (what `Iterator::sum` does), but the
//! loops run several sums side by side: the k dot products q_jᵀ r `LANES` at a time over the
//! coordinates, and Q (γ ⊙ Qᵀ r) as k passes over a d-long accumulator. A sum one at a time is
//! a chain of dependent additions (9% of an `augment` run's time); side by side they pipeline
//! and vectorise, and each one adds the same terms in the same order, so the bits are the same
//! (`tests::side_by_side_sums_equal_one_at_a_time`).

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

#[cfg(test)]
mod tests {
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
