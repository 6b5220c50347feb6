//! Tangent spreads learned from a class of graded surfaces: how far its images differ from their nearest class image along each transformation tangent (docs/usefulness.md, "Tangent spreads learned on surfaces").
//!
//! Method deform draws each tangent's coefficient with a fixed spread tuned on handwriting
//! (`deformation::tangent_stds`). Garments barely turn or shear and vary in width all round, so
//! on a set of graded surfaces (Fashion-MNIST) each class's spreads are read off its images:
//! every image's difference to its nearest image of the class, least-squares fitted by the
//! image's seven tangents (the two shifts, rotation, scale, two shears, thickness), and each
//! coefficient's robust spread (1.4826 × median |c|) over the class, halved as the fixed
//! spreads are. The prototype is `scripts/usefulness/prototypes.py`'s `learned_tangent_stds`.

use rayon::prelude::*;

use super::deformation::{moves_anchor, transformation_tangents_with_shifts};
use super::neighbours::nearest;

/// The drawn spread over the learned one, as the fixed spreads are half the prototype's DEFORM.
pub const LEARNED_FACTOR: f64 = 0.5;

/// Images of a class whose nearest neighbours are fitted (its first ones): enough for a median,
/// and a class of 6,000 costs 200 nearest-neighbour searches, not 6,000.
pub const FITTED_IMAGES: usize = 200;

/// The consistency factor of the median absolute value for a normal's standard deviation.
const MAD_TO_SD: f64 = 1.4826;

/// The coefficients' standard deviations learned from the class whose `n` images (rows of h ×
/// w, 0..1 scale) are `images`, in the order of `deformation::tangent_stds` (the shifts only
/// under 28 px); None for a class of fewer than two images.
pub fn learned_tangent_stds(images: &[f32], (height, width): (usize, usize)) -> Option<Vec<f64>> {
    let d = height * width;
    let n = images.len() / d.max(1);
    if n < 2 {
        return None;
    }
    let row = |i: usize| &images[i * d..(i + 1) * d];
    let coefficients: Vec<[f64; 7]> = (0..n.min(FITTED_IMAGES))
        .into_par_iter()
        .map(|i| {
            let others = (0..n).filter(|&j| j != i).map(|j| (j, row(j)));
            let j = nearest(row(i), others, 1)[0];
            let image: Vec<f64> = row(i).iter().map(|&v| v as f64).collect();
            let difference: Vec<f64> = row(j)
                .iter()
                .zip(row(i))
                .map(|(&b, &a)| (b - a) as f64)
                .collect();
            least_squares(
                &transformation_tangents_with_shifts(&image, height, width),
                &difference,
            )
        })
        .collect();
    let spread = |k: usize| {
        let mut magnitudes: Vec<f64> = coefficients.iter().map(|c| c[k].abs()).collect();
        LEARNED_FACTOR * MAD_TO_SD * median(&mut magnitudes)
    };
    // The fitted columns: shift x, shift y, rotation, scale, two shears, thickness.
    let first = if moves_anchor(width) { 2 } else { 0 };
    Some((first..7).map(spread).collect())
}

/// The coefficients c minimising ||T c − y|| for the seven columns of T (`columns`), by the
/// normal equations with a ridge of 1e-9 of their mean diagonal, so that a blank image (all
/// tangents 0) gets c = 0 as numpy's minimum-norm solution does.
fn least_squares(columns: &[Vec<f64>], y: &[f64]) -> [f64; 7] {
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let mut gram = [[0f64; 7]; 7];
    let mut rhs = [0f64; 7];
    for a in 0..7 {
        rhs[a] = dot(&columns[a], y);
        for b in 0..=a {
            gram[a][b] = dot(&columns[a], &columns[b]);
            gram[b][a] = gram[a][b];
        }
    }
    let ridge = 1e-9 * (0..7).map(|a| gram[a][a]).sum::<f64>() / 7.0;
    if ridge == 0.0 {
        return [0.0; 7];
    }
    (0..7).for_each(|a| gram[a][a] += ridge);
    solve(gram, rhs)
}

/// x with `a` x = `b` for a symmetric positive definite `a`, by Gaussian elimination.
fn solve(mut a: [[f64; 7]; 7], mut b: [f64; 7]) -> [f64; 7] {
    for k in 0..7 {
        let pivot = a[k];
        for r in k + 1..7 {
            let factor = a[r][k] / pivot[k];
            a[r].iter_mut()
                .zip(&pivot)
                .skip(k)
                .for_each(|(v, p)| *v -= factor * p);
            b[r] -= factor * b[k];
        }
    }
    let mut x = [0f64; 7];
    for k in (0..7).rev() {
        let tail: f64 = (k + 1..7).map(|c| a[k][c] * x[c]).sum();
        x[k] = (b[k] - tail) / a[k][k];
    }
    x
}

/// numpy's median: the middle value, or the mean of the middle two.
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let m = values.len();
    match m {
        0 => 0.0,
        _ if m % 2 == 1 => values[m / 2],
        _ => 0.5 * (values[m / 2 - 1] + values[m / 2]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::Portable;
    use crate::model::deformation::tangent_stds;

    /// A known mixture of the tangents is recovered exactly.
    #[test]
    fn least_squares_recovers_a_mixture_of_the_tangents() {
        let (h, w) = (12, 12);
        let image: Vec<f64> = (0..h * w)
            .map(|i| {
                let (r, c) = ((i / w) as f64 - 5.5, (i % w) as f64 - 4.0);
                (-(r * r + 2.0 * c * c) / 10.0).exp_portable()
            })
            .collect();
        let columns = transformation_tangents_with_shifts(&image, h, w);
        let want = [0.3, -0.2, 0.05, -0.04, 0.02, 0.01, 0.5];
        let y: Vec<f64> = (0..h * w)
            .map(|i| (0..7).map(|k| want[k] * columns[k][i]).sum())
            .collect();
        let got = least_squares(&columns, &y);
        for k in 0..7 {
            assert!(
                (got[k] - want[k]).abs() < 1e-6,
                "column {k}: {} want {}",
                got[k],
                want[k]
            );
        }
        assert_eq!(least_squares(&columns, &vec![0.0; h * w]), [0.0; 7]);
        let blank = transformation_tangents_with_shifts(&vec![0.0; h * w], h, w);
        assert_eq!(least_squares(&blank, &y), [0.0; 7]);
    }

    /// A class of rings whose stroke widens (both edges move apart, the centre line stays)
    /// learns a thickness spread and little else; the spreads come in `tangent_stds`' order and
    /// number.
    #[test]
    fn a_class_that_varies_in_thickness_learns_thickness() {
        let (h, w) = (28, 28);
        let disc = |half_width: f64| -> Vec<f32> {
            (0..h * w)
                .map(|i| {
                    let (r, c) = ((i / w) as f64 - 13.5, (i % w) as f64 - 13.5);
                    let edge = half_width - ((r * r + c * c).sqrt() - 8.0).abs();
                    (0.5 + edge / 1.6).clamp(0.0, 1.0) as f32
                })
                .collect()
        };
        let images: Vec<f32> = (0..6).flat_map(|k| disc(1.5 + 0.3 * k as f64)).collect();
        let stds = learned_tangent_stds(&images, (h, w)).unwrap();
        assert_eq!(stds.len(), tangent_stds(w).len());
        let thickness = stds[4];
        assert!(thickness > 0.1, "thickness spread {thickness}");
        for (k, s) in stds[..4].iter().enumerate() {
            assert!(
                s.abs() < 0.2 * thickness,
                "tangent {k}: {s} against {thickness}"
            );
        }
        assert_eq!(learned_tangent_stds(&images[..h * w], (h, w)), None);
        assert_eq!(median(&mut [3.0, 1.0, 2.0, 10.0]), 2.5);
    }
}
