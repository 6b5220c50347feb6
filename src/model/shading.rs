//! Shading of deformation draws: each draw times exp(a · f), f a smooth random field of unit spread, light and shade that vary across the item (docs/usefulness.md, "Shading").
//!
//! The field is white noise (a Philox stream per class and draw, so a draw does not depend on
//! the others or on the shard) filtered by a periodic Gaussian of 6 px at 28 px (scaled with
//! each side) and divided by its own standard deviation. The draw is shaded as it is, before
//! the post-processing smooths and clips it (the numpy prototype, `scripts/usefulness/
//! prototypes.py`'s `shaded`, shades the post-processed draws: clipping first thinned the
//! strokes that overshoot 1, and cost MNIST's rare classes 0.7 points). On images under 28 px a field of under 2 px is pixel noise, which costs the classifiers
//! (docs/usefulness.md), so they are not shaded, as they are not moved by whole pixels.

use super::deformation::{gaussian_filter_wrapped, moves_anchor};
use crate::math::Portable;
use crate::rng::{Purpose, Stream};

/// The field's Gaussian, standard deviation in pixels at 28 px.
const FIELD_PX: f64 = 6.0;

/// The largest amplitude accepted: exp(±3a) spans a factor of e^6 at a = 1, past any shading.
pub const MAX_SHADE: f32 = 1.0;

/// Whether images `width` pixels wide are shaded (those whose anchors move by whole pixels).
pub fn shades(width: usize) -> bool {
    moves_anchor(width)
}

/// Shades `draws` (rows of h × w on the 0..1 scale, draw j of class `label` the j-th row) by
/// `amplitude` in place: row j ← row j · exp(amplitude · f_j), before the post-processing's
/// smoothing and clipping, as every draw. Nothing changes when `amplitude` is 0 or the images
/// are under 28 px wide.
pub fn shade(
    draws: &mut [f32],
    (height, width): (usize, usize),
    amplitude: f64,
    seed: u64,
    label: u32,
) {
    let d = height * width;
    if amplitude == 0.0 || !shades(width) || d == 0 {
        return;
    }
    let mut noise = vec![0f32; d];
    for (j, row) in draws.chunks_exact_mut(d).enumerate() {
        let field = unit_field(&mut noise, (height, width), seed, label, j as u32);
        for (v, f) in row.iter_mut().zip(&field) {
            *v = (*v as f64 * (amplitude * f).exp_portable()) as f32;
        }
    }
}

/// Draw `draw`'s field: its normals (into `noise`) filtered periodically at 6 px · side/28 and
/// divided by their standard deviation (all zeros stay zeros).
fn unit_field(
    noise: &mut [f32],
    (height, width): (usize, usize),
    seed: u64,
    label: u32,
    draw: u32,
) -> Vec<f64> {
    Stream::new(seed, label, draw, 0, Purpose::Shading).fill_normal(noise);
    let white: Vec<f64> = noise.iter().map(|&v| v as f64).collect();
    let sigmas = (
        FIELD_PX * height as f64 / 28.0,
        FIELD_PX * width as f64 / 28.0,
    );
    let mut field = gaussian_filter_wrapped(&white, (height, width), sigmas);
    let n = field.len() as f64;
    let mean = field.iter().sum::<f64>() / n;
    let spread = (field.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n).sqrt();
    // numpy's prototype divides by std + 1e-12, keeping the field's mean.
    field.iter_mut().for_each(|v| *v /= spread + 1e-12);
    field
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The periodic filter against `scipy.ndimage.gaussian_filter(x, sigma=(1.3, 0.8),
    /// mode="wrap")` (scipy 1.17.1) of a fixed 6 × 5 image, whose rows' kernel (11 taps)
    /// wraps past the image.
    #[test]
    fn the_periodic_filter_is_scipys() {
        let x: Vec<f64> = (0..30).map(|i| ((i * 37) % 11) as f64 / 10.0).collect();
        let y = gaussian_filter_wrapped(&x, (6, 5), (1.3, 0.8));
        let want = [
            (0, 0.3974123554918181),
            (7, 0.5134514380561013),
            (13, 0.5598574075627553),
            (29, 0.4721670885178084),
        ];
        for (i, v) in want {
            assert!(
                (y[i] - v).abs() < 1e-12,
                "[{i}]: {} against scipy's {v}",
                y[i]
            );
        }
        // A periodic filter keeps the sum.
        assert!((y.iter().sum::<f64>() - 14.5).abs() < 1e-12);
    }

    #[test]
    fn a_flat_image_takes_the_field_as_its_log_with_the_amplitudes_spread() {
        let (h, w) = (28, 28);
        let mut draws = vec![0.5f32; 3 * h * w];
        shade(&mut draws, (h, w), 0.1, 7, 2);
        for (j, row) in draws.chunks(h * w).enumerate() {
            let logs: Vec<f64> = row
                .iter()
                .map(|&v| (v as f64 / 0.5).ln_portable())
                .collect();
            let mean = logs.iter().sum::<f64>() / logs.len() as f64;
            let sd =
                (logs.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / logs.len() as f64).sqrt();
            assert!((sd - 0.1).abs() < 1e-5, "draw {j}: spread {sd}");
            // Smooth: neighbours differ by far less than the spread.
            let step = (0..h * w - 1)
                .filter(|i| (i + 1) % w != 0)
                .map(|i| (logs[i + 1] - logs[i]).abs())
                .fold(0f64, f64::max);
            assert!(step < 0.05, "draw {j}: a step of {step} between neighbours");
        }
        assert_ne!(
            draws[..h * w],
            draws[h * w..2 * h * w],
            "two draws, one field"
        );
    }

    #[test]
    fn draws_are_scaled_as_they_are_and_nothing_changes_at_zero_or_under_28_px() {
        let (h, w) = (28, 30);
        let row: Vec<f32> = (0..h * w).map(|i| (i % 7) as f32 * 0.3 - 0.4).collect();
        let mut shaded = row.repeat(2);
        shade(&mut shaded, (h, w), 0.2, 1, 0);
        for (v, x) in shaded.iter().zip(row.iter().cycle()) {
            // A positive factor: signs and zeros kept, values past 1 left to the clipping.
            assert!(v.signum() == x.signum() && (*x == 0.0) == (*v == 0.0));
            // The field keeps its mean (as the prototype's), a few of its spreads off zero.
            assert!((*v / x).ln_portable().abs() < 0.2 * 10.0 || *x == 0.0);
        }
        // The same draw index, the same field: a draw does not depend on the others.
        let mut one = row.clone();
        shade(&mut one, (h, w), 0.2, 1, 0);
        assert_eq!(one[..], shaded[..h * w]);
        let mut same = row.clone();
        shade(&mut same, (h, w), 0.0, 1, 0);
        assert_eq!(same, row);
        let small: Vec<f32> = vec![0.5; 64 * 2];
        let mut kept = small.clone();
        shade(&mut kept, (8, 8), 0.2, 1, 0);
        assert_eq!(kept, small);
    }
}
