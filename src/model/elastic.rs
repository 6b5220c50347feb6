//! Elastic distortions (Simard et al. 2003) of a line-drawing set's images: method "deform"'s draws past four new images per original where the set's ink is strokes (docs/usefulness.md, "Elastic distortions past four per original").
//!
//! A class brought up many times its size (20 images to 400) gets each image's four moved
//! deformations and then, on a set of strokes (handwriting, sketches: most ink pixels
//! saturated), elastic distortions of its images in turn: a displacement field of uniform noise
//! smoothed by a Gaussian of 4 px and scaled by α px (`--elastic`: the quality preset's 17,
//! Simard's 34; at 28 px, both scaled with the side), the image resampled bilinearly there, 0
//! outside. Strokes wobble so; a garment's outline does not,
//! so a set of graded surfaces (most ink pixels between 0.1 and 0.9: Fashion-MNIST) keeps the
//! interpolants (`interpolation.rs`). Images under 28 px are never distorted (4 px is half an
//! 8 × 8 digit).

use super::deformation::{gaussian_filter, moves_anchor};
use super::interpolation::{turns, DEFORMATIONS_PER_IMAGE};
use crate::rng::{uniform_from_word, Purpose, Stream};
use rayon::prelude::*;

/// The displacement field's smoothing, in pixels at 28 px (Simard et al.'s σ); its scale α is
/// the run's `elastic` setting (Simard's 34; the quality preset's 17).
pub const SIGMA_PX: f64 = 4.0;

/// The largest scale α accepted, px at 28 px: three times Simard's, past any distortion that
/// keeps a drawing.
pub const MAX_ELASTIC: f32 = 100.0;

/// A pixel is ink above this value (0..1 scale), and graded (not saturated) below
/// [`SATURATED`].
pub const INK: f32 = 0.1;
pub const SATURATED: f32 = 0.9;

/// A set whose graded share of ink pixels reaches this is of surfaces, not strokes: MNIST
/// 0.50, Quick Draw 0.65, Fashion-MNIST 0.88 (all training images).
pub const SURFACE_SHARE: f64 = 0.8;

/// Whether a set of `n` images (`value(i, j)`: image i's pixel j on the 0..1 scale, dark
/// background) is of strokes: with some ink, and under [`SURFACE_SHARE`] of its ink pixels
/// graded.
pub fn strokes(
    n: usize,
    (height, width): (usize, usize),
    value: impl Fn(usize, usize) -> f32,
) -> bool {
    let (mut ink, mut graded) = (0usize, 0usize);
    for i in 0..n {
        for j in 0..height * width {
            let v = value(i, j);
            if v > INK {
                ink += 1;
                graded += usize::from(v < SATURATED);
            }
        }
    }
    ink > 0 && (graded as f64) < SURFACE_SHARE * ink as f64
}

/// Whether a set of strokes (or not) of images `width` pixels wide takes elastic distortions of
/// scale `alpha` past four new images per original: strokes of 28 px or more (those whose
/// anchors move by whole pixels; smaller images keep the interpolants), `alpha` above 0.
pub fn distorts(strokes: bool, width: usize, alpha: f64) -> bool {
    strokes && moves_anchor(width) && alpha > 0.0
}

/// Of `count` new images for a class of `n` images of strokes, how many are elastic
/// distortions: all those past [`DEFORMATIONS_PER_IMAGE`] per image.
pub fn distortion_count(n: usize, count: usize) -> usize {
    count.saturating_sub(DEFORMATIONS_PER_IMAGE * n)
}

/// `count` elastic distortions of scale `alpha` (px at 28 px) of the class whose `n` images
/// (rows of h × w, 0..1 scale) are `images`, as rows of h × w, with the image each distorts:
/// distortion i distorts [`turns`]' i-th image by the field of (`seed`, `label`, i).
pub fn distortions(
    images: &[f32],
    (height, width): (usize, usize),
    (count, alpha): (usize, f64),
    seed: u64,
    label: u32,
) -> (Vec<f32>, Vec<usize>) {
    let d = height * width;
    let n = images.len() / d.max(1);
    if n == 0 || count == 0 {
        return (Vec::new(), Vec::new());
    }
    let bases = turns(n, count, seed, label, Purpose::ElasticBases);
    let side = height as f64 / 28.0;
    // Every distortion's field has its own stream: drawn on any thread, the bytes are the same.
    let out = bases
        .par_iter()
        .enumerate()
        .flat_map_iter(|(i, &a)| {
            let mut words = vec![0u32; 2 * d];
            Stream::new(seed, label, i as u32, 0, Purpose::Elastic).fill_u32(&mut words);
            let noise: Vec<f64> = words
                .iter()
                .map(|&w| 2.0 * uniform_from_word(w) as f64 - 1.0)
                .collect();
            let (rows, cols) = noise.split_at(d);
            let image = &images[a * d..(a + 1) * d];
            distort(
                image,
                (height, width),
                (rows, cols),
                alpha * side,
                SIGMA_PX * side,
            )
        })
        .collect();
    (out, bases)
}

/// `image` (h × w) resampled at each pixel (r, c) plus the displacement (Δr, Δc) = `alpha` ×
/// the Gaussian of `sigma` px of `noise` (rows', then columns' noise; borders reflected), as
/// `scipy.ndimage.map_coordinates(image, [r + Δr, c + Δc], order=1)`: bilinear inside, 0 at a
/// point outside the image's pixel centres.
pub fn distort(
    image: &[f32],
    (height, width): (usize, usize),
    (row_noise, col_noise): (&[f64], &[f64]),
    alpha: f64,
    sigma: f64,
) -> Vec<f32> {
    let dr = gaussian_filter(row_noise, height, width, sigma);
    let dc = gaussian_filter(col_noise, height, width, sigma);
    let at = |r: usize, c: usize| image[r * width + c] as f64;
    let linear = |x: f64, n: usize| -> Option<(usize, usize, f64)> {
        if !(0.0..=(n - 1) as f64).contains(&x) {
            return None;
        }
        let low = (x.floor() as usize).min(n - 1);
        Some((low, (low + 1).min(n - 1), x - low as f64))
    };
    (0..height * width)
        .map(|j| {
            let (r, c) = ((j / width) as f64, (j % width) as f64);
            let sample = linear(r + alpha * dr[j], height).zip(linear(c + alpha * dc[j], width));
            let Some(((r0, r1, tr), (c0, c1, tc))) = sample else {
                return 0.0;
            };
            let top = (1.0 - tc) * at(r0, c0) + tc * at(r0, c1);
            let bottom = (1.0 - tc) * at(r1, c0) + tc * at(r1, c1);
            ((1.0 - tr) * top + tr * bottom) as f32
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distortions_take_every_draw_past_four_per_image() {
        assert_eq!(distortion_count(20, 380), 300);
        assert_eq!(distortion_count(50, 200), 0);
        assert_eq!(distortion_count(1, 7), 3);
    }

    /// Saturated strokes are strokes; graded surfaces and blank sets are not; strokes under
    /// 28 px are not distorted.
    #[test]
    fn a_set_is_of_strokes_when_most_of_its_ink_is_saturated() {
        let stroke = |_: usize, j: usize| [0.0, 1.0, 1.0, 0.5][j % 4];
        let surface = |_: usize, j: usize| [0.0, 0.4, 0.6, 0.95, 0.7, 0.8, 0.5][j % 7];
        assert!(strokes(3, (28, 28), stroke));
        assert!(!strokes(3, (28, 28), surface));
        assert!(!strokes(3, (28, 28), |_, _| 0.0));
        assert!(strokes(3, (8, 8), stroke));
        assert!(distorts(true, 28, 17.0));
        assert!(!distorts(true, 8, 17.0) && !distorts(false, 28, 17.0) && !distorts(true, 28, 0.0));
    }

    /// Against `scipy.ndimage.map_coordinates(image, [r + α G(u), c + α G(v)], order=1)` with
    /// G = `gaussian_filter(·, σ)` (scipy 1.17.1) for a fixed 6 × 5 image and noise: the points
    /// pushed past the image's edges give 0, the others scipy's bilinear values.
    #[test]
    fn a_distortion_is_scipys_map_coordinates_of_the_smoothed_field() {
        let (h, w) = (6, 5);
        let image: Vec<f32> = (0..h * w).map(|j| ((j * 7) % 11) as f32 / 10.0).collect();
        let u: Vec<f64> = (0..h * w)
            .map(|j| ((j * 13) % 17) as f64 / 8.0 - 1.0)
            .collect();
        let v: Vec<f64> = (0..h * w)
            .map(|j| ((j * 5) % 19) as f64 / 9.0 - 1.0)
            .collect();
        let found = distort(&image, (h, w), (&u, &v), 3.0, 1.2);
        let scipy = [
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.8208767581857624,
            0.470612269173652,
            0.2556987222218537,
            0.4132756331929191,
            0.24770793778173214,
            0.3063342724706175,
            0.6489295866853536,
            0.4616632719573597,
            0.42903241723393437,
            0.2817327022641346,
            0.36988536043040465,
            0.8610250292179689,
            0.596157073799216,
            0.44952032917661977,
            0.47327690786191756,
            0.32561376476968584,
            0.041836379406705544,
            0.39759667795475073,
            0.5348761881934387,
            0.6783525840514665,
            0.46965312177968477,
            0.0,
            0.5858598814357554,
            0.5576817821371068,
        ];
        let mismatches: Vec<String> = found
            .iter()
            .zip(&scipy)
            .enumerate()
            .filter(|(_, (a, b))| (**a as f64 - **b).abs() > 1e-6)
            .map(|(j, (a, b))| format!("pixel {j}: rmld {a}, scipy {b}"))
            .collect();
        assert!(mismatches.is_empty(), "{}", mismatches.join("; "));
    }
}
