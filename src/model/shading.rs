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
use rayon::prelude::*;

/// The quality preset's amplitude on graded surfaces (`ink` "surfaces"), twice its 0.1 on
/// strokes: with the tangent spreads learned from each class it lifts Fashion-MNIST's RBF SVM
/// by half a point at the label preservation of before (docs/usefulness.md, "Tangent spreads
/// learned on surfaces"); on MNIST's strokes it costs the SVM (−0.4).
pub const SURFACE_SHADE: f32 = 0.2;

/// Classes of up to this many images take all of [`SURFACE_SHADE`] ...
const SURFACE_SHADE_FULL_UP_TO: usize = 100;

/// ... and from this many half of it, the strokes' 0.1: there it is as useful (Fashion-MNIST,
/// 200 and 500 per class) and keeps the labels (10,000 images: the RBF SVM judge's gap −2.6
/// against −4.8), docs/usefulness.md, "Session 37".
const SURFACE_SHADE_HALF_FROM: usize = 200;

/// The shading of a class of `images` originals on graded surfaces: [`SURFACE_SHADE`] up to
/// 100 images, half of it from 200, linear in between. The best shading shrinks as the class
/// grows, as a regulariser's weight does.
pub fn surface_shade(images: usize) -> f32 {
    let (full, half) = (SURFACE_SHADE_FULL_UP_TO, SURFACE_SHADE_HALF_FROM);
    let past = images.clamp(full, half) - full;
    SURFACE_SHADE - 0.5 * SURFACE_SHADE * past as f32 / (half - full) as f32
}

/// The field's Gaussian, standard deviation in pixels at 28 px.
const FIELD_PX: f64 = 6.0;

/// The field's grid is at most this many cells a side (28 px images: one cell a pixel).
const FIELD_GRID: usize = 28;

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
    // Every draw's field has its own stream: shaded on any thread, the bytes are the same.
    draws
        .par_chunks_exact_mut(d)
        .enumerate()
        .for_each(|(j, row)| {
            let field = unit_field((height, width), seed, label, j as u32);
            for (v, f) in row.iter_mut().zip(&field) {
                *v = (*v as f64 * (amplitude * f).exp_portable()) as f32;
            }
        });
}

/// Draw `draw`'s field: normals on a grid of at most 28 × 28, filtered periodically at 6 px ·
/// grid side/28, brought to h × w periodically and bilinearly where the image is larger (the
/// field varies over a fifth of the image: a finer grid adds nothing but a filter of hundreds
/// of taps per pixel, 85 ms a draw at 256 px), and divided by its standard deviation.
fn unit_field((height, width): (usize, usize), seed: u64, label: u32, draw: u32) -> Vec<f64> {
    let grid = (height.min(FIELD_GRID), width.min(FIELD_GRID));
    let mut noise = vec![0f32; grid.0 * grid.1];
    Stream::new(seed, label, draw, 0, Purpose::Shading).fill_normal(&mut noise);
    let white: Vec<f64> = noise.iter().map(|&v| v as f64).collect();
    let sigmas = (
        FIELD_PX * grid.0 as f64 / 28.0,
        FIELD_PX * grid.1 as f64 / 28.0,
    );
    let coarse = gaussian_filter_wrapped(&white, grid, sigmas);
    let mut field = match grid == (height, width) {
        true => coarse,
        false => periodic_bilinear(&coarse, grid, (height, width)),
    };
    let n = field.len() as f64;
    let mean = field.iter().sum::<f64>() / n;
    let spread = (field.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n).sqrt();
    // numpy's prototype divides by std + 1e-12, keeping the field's mean.
    field.iter_mut().for_each(|v| *v /= spread + 1e-12);
    field
}

/// `grid` values (rows of `from.1`) at (h, w) points, each axis's point k at grid position
/// k · from / to, interpolated linearly between a cell and the next, the last wrapping to the
/// first.
fn periodic_bilinear(grid: &[f64], from: (usize, usize), to: (usize, usize)) -> Vec<f64> {
    let taps = |n_from: usize, n_to: usize| -> Vec<(usize, usize, f64)> {
        (0..n_to)
            .map(|k| {
                let at = (k * n_from) as f64 / n_to as f64;
                let low = at.floor() as usize % n_from;
                (low, (low + 1) % n_from, at - at.floor())
            })
            .collect()
    };
    let (rows, cols) = (taps(from.0, to.0), taps(from.1, to.1));
    let mut out = Vec::with_capacity(to.0 * to.1);
    for &(r0, r1, tr) in &rows {
        for &(c0, c1, tc) in &cols {
            let at = |r: usize, c: usize| grid[r * from.1 + c];
            let top = (1.0 - tc) * at(r0, c0) + tc * at(r0, c1);
            let bottom = (1.0 - tc) * at(r1, c0) + tc * at(r1, c1);
            out.push((1.0 - tr) * top + tr * bottom);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surface_shade_halves_from_small_classes_to_large_ones() {
        assert_eq!(surface_shade(1), SURFACE_SHADE);
        assert_eq!(surface_shade(100), SURFACE_SHADE);
        assert_eq!(surface_shade(150), 0.75 * SURFACE_SHADE);
        assert_eq!(surface_shade(200), 0.1);
        assert_eq!(surface_shade(60_000), 0.1);
        // never rising with the class
        let shades: Vec<f32> = (0..300).map(surface_shade).collect();
        assert!(shades.windows(2).all(|w| w[1] <= w[0]), "{shades:?}");
    }

    /// The periodic filter against `scipy.ndimage.gaussian_filter(x, sigma=(1.3, 0.8),
    /// mode="wrap")` (scipy 1.17.1) of a fixed 6 × 5 image, whose rows' kernel (11 taps)
    /// wraps past the image.
    #[test]
    fn periodic_bilinear_keeps_the_grid_points_and_wraps() {
        let grid = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
        let out = periodic_bilinear(&grid, (2, 3), (4, 6));
        // Every other point is a grid value; the last column runs back towards the first.
        assert_eq!(out[0], 0.0);
        assert_eq!(out[2], 1.0);
        assert_eq!(out[2 * 6 + 4], 5.0);
        assert_eq!(out[5], 1.0);
        assert_eq!(out[6], 1.5);
        assert_eq!(periodic_bilinear(&grid, (2, 3), (2, 3)), grid);
    }

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

    /// A draw of a flat image at 0.5: its log-factors, ln(v / 0.5), and their spread.
    fn log_spread(row: &[f32]) -> (Vec<f64>, f64) {
        let logs: Vec<f64> = row
            .iter()
            .map(|&v| (v as f64 / 0.5).ln_portable())
            .collect();
        let n = logs.len() as f64;
        let mean = logs.iter().sum::<f64>() / n;
        let sd = (logs.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
        (logs, sd)
    }

    #[test]
    fn a_flat_image_takes_the_field_as_its_log_with_the_amplitudes_spread() {
        let (h, w) = (28, 28);
        let mut draws = vec![0.5f32; 3 * h * w];
        shade(&mut draws, (h, w), 0.1, 7, 2);
        for (j, row) in draws.chunks(h * w).enumerate() {
            let (logs, sd) = log_spread(row);
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
        // A large image's field comes from the 28 × 28 grid: unit spread, smooth, its own.
        let (h, w) = (200, 96);
        let mut large = vec![0.5f32; 2 * h * w];
        shade(&mut large, (h, w), 0.1, 3, 1);
        for row in large.chunks(h * w) {
            let (logs, sd) = log_spread(row);
            assert!((sd - 0.1).abs() < 1e-5, "spread {sd}");
            let step = (0..h * w - w)
                .map(|i| (logs[i + w] - logs[i]).abs())
                .fold(0f64, f64::max);
            assert!(step < 0.01, "a step of {step} between rows");
        }
        assert_ne!(large[..h * w], large[h * w..]);
        let small: Vec<f32> = vec![0.5; 64 * 2];
        let mut kept = small.clone();
        shade(&mut kept, (8, 8), 0.2, 1, 0);
        assert_eq!(kept, small);
    }
}
