//! CPU twin of `shaders/tangent.wgsl`: one chain's residual r = A x − a times C⁻¹, and its energy.
//!
//! With C⁻¹ = (1/σ²)(I − Q diag(γ) Qᵀ) (see `target::tangent`): scaled = (r − Q (γ ⊙ Qᵀ r))/σ²
//! and energy = ½ (||r||² − Σ_j γ_j (q_jᵀ r)²)/σ², the data term of U (lam·||x||₁ is added by
//! the MH terms, as for the mixture). Sums run in coordinate order; the WGSL's workgroup trees
//! round differently, within f32 rounding.

/// q_jᵀ r into `dots` for every direction j of `basis` (k × d); returns ||r||².
fn projections(basis: &[f32], residual: &[f32], dots: &mut [f32]) -> f32 {
    let d = residual.len();
    for (j, dot) in dots.iter_mut().enumerate() {
        let q = &basis[j * d..(j + 1) * d];
        *dot = q.iter().zip(residual).map(|(a, b)| a * b).sum();
    }
    residual.iter().map(|v| v * v).sum()
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
    for (i, (s, &r)) in scaled.iter_mut().zip(residual).enumerate() {
        *s = (r - along(basis, gamma, &dots, i)) * inv_sigma2;
    }
    0.5 * inv_sigma2 * (norm2 - shrunk)
}

/// C⁻¹ r in place (the step residual: the step needs no energy).
pub fn tangent_step(basis: &[f32], gamma: &[f32], inv_sigma2: f32, image: &mut [f32]) {
    let mut dots = vec![0f32; gamma.len()];
    projections(basis, image, &mut dots);
    for (i, v) in image.iter_mut().enumerate() {
        *v = (*v - along(basis, gamma, &dots, i)) * inv_sigma2;
    }
}

/// (Q (γ ⊙ Qᵀ r))_i, summed over the directions in order.
#[inline]
fn along(basis: &[f32], gamma: &[f32], dots: &[f32], i: usize) -> f32 {
    let d = basis.len() / gamma.len().max(1);
    gamma
        .iter()
        .zip(dots)
        .enumerate()
        .map(|(j, (&g, &t))| basis[j * d + i] * (g * t))
        .sum()
}
