//! Deformation draws: a class's images moved along their transformation tangents (Simard's tangent distance), the exact Gaussian draws of docs/usefulness.md's "Proposed change".
//!
//! For an anchor image a (h × w, on the 0..1 scale), the tangents T are the derivatives of a
//! under rotation, scale, the two shears and thickness (plus the x and y shifts on images under
//! 28 px), computed on a smoothed by a Gaussian of max(0.5, 0.9 w/28) px with central
//! differences (numpy's `np.gradient`), coordinates in pixels from the image centre. A draw is
//! x = a + T (τ ∘ z), z ~ N(0, I): a Gaussian in image space with the low-rank covariance
//! T diag(τ²) Tᵀ, drawn exactly (no chain). Every image of a class anchors in turn (a seeded
//! permutation per round); on images of 28 px or more the anchor is first moved by whole
//! pixels (right, left, down, up in turn for each image, zeros shifted in): one, or on strokes
//! one per 28 px of width, rounded ([`anchor_move_px`]). The numbers are the
//! numpy prototype's (`scripts/usefulness/prototypes.py`, `proposal`), which this file
//! reproduces to rounding. A class brought past four new images per original takes half the
//! rest as interpolants between its images (`interpolation.rs`, the prototype's `p-beyond4`).
//! A set of dark ink on a bright background is drawn inverted ([`bright_background`]).

use super::elastic::{distortion_count, distortions};
use super::interpolation::{interpolant_count, interpolants, turns};
use super::learned_spreads::learned_tangent_stds;
use super::shading::shade;
use crate::math::Portable;
use crate::rng::{Purpose, Stream};
use rayon::prelude::*;

/// The image width (pixels) from which an anchor is moved by one whole pixel instead of
/// drawing along the shift tangents (one pixel is too far on the 8 × 8 digits).
pub const WHOLE_PIXEL_WIDTH: usize = 28;

/// The anchor moves (rows, columns) in turn: right, left, down, up, each by
/// [`anchor_move_px`] pixels.
pub const ANCHOR_MOVES: [(isize, isize); 4] = [(0, 1), (0, -1), (1, 0), (-1, 0)];

/// How many whole pixels an anchor `width` pixels wide is moved by: none under 28 px (the
/// shift tangents draw the translation); on strokes one per 28 px of width, rounded, as the
/// other pixel quantities scale (2 at 56 px: MNIST and Quick Draw resampled to 56 px gain
/// +0.6 and +0.2 over 1-pixel moves, docs/usefulness.md, "Session 38"); on graded surfaces
/// one (Fashion-MNIST at 56 px: −0.2 / +0.1 with two).
pub fn anchor_move_px(width: usize, strokes: bool) -> isize {
    match (moves_anchor(width), strokes) {
        (false, _) => 0,
        (true, false) => 1,
        (true, true) => ((width as f64 / WHOLE_PIXEL_WIDTH as f64).round() as isize).max(1),
    }
}

/// Standard deviations of the tangents' coefficients at 28 px: the prototype's DEFORM halved
/// (rotation 0.15 rad, scale and shears 0.12, thickness 0.4 px, times 0.5); the shift tangents'
/// is 1 px. Pixel quantities scale with the width over 28.
const ROTATION: f64 = 0.075;
const SCALE: f64 = 0.06;
const SHEAR: f64 = 0.06;
const THICKNESS_PX: f64 = 0.2;
const SHIFT_PX: f64 = 1.0;

/// scipy.ndimage's default truncation of a Gaussian filter, in standard deviations.
const TRUNCATE: f64 = 4.0;

/// Whether images `width` pixels wide draw their translation from moved anchors (else from the
/// shift tangents).
pub fn moves_anchor(width: usize) -> bool {
    width >= WHOLE_PIXEL_WIDTH
}

/// The coefficients' standard deviations τ, in the order of [`transformation_tangents`]'s
/// columns: the two shifts (images under 28 px only), rotation, scale, the two shears,
/// thickness.
pub fn tangent_stds(width: usize) -> Vec<f64> {
    let pixels = width as f64 / 28.0;
    let mut stds = Vec::with_capacity(7);
    if !moves_anchor(width) {
        stds.extend([SHIFT_PX * pixels; 2]);
    }
    stds.extend([ROTATION, SCALE, SHEAR, SHEAR, THICKNESS_PX * pixels]);
    stds
}

/// Reflects index `i` into 0..n as scipy.ndimage's `reflect` mode (d c b a | a b c d | d c b a).
fn reflect(i: isize, n: usize) -> usize {
    let period = 2 * n as isize;
    let m = i.rem_euclid(period);
    if m >= n as isize {
        (period - 1 - m) as usize
    } else {
        m as usize
    }
}

/// The image (rows of `width`) convolved with a Gaussian of `sigma` pixels along the rows'
/// axis then the columns', as `scipy.ndimage.gaussian_filter` (truncated at 4σ, borders
/// reflected).
pub fn gaussian_filter(image: &[f64], height: usize, width: usize, sigma: f64) -> Vec<f64> {
    filter_axes(image, (height, width), (sigma, sigma), reflect)
}

/// As [`gaussian_filter`] with `sigmas` (rows, columns) and the image periodic
/// (`mode="wrap"`): for a field with no edges.
pub fn gaussian_filter_wrapped(
    image: &[f64],
    shape: (usize, usize),
    sigmas: (f64, f64),
) -> Vec<f64> {
    filter_axes(image, shape, sigmas, |i, n| {
        i.rem_euclid(n as isize) as usize
    })
}

/// scipy's Gaussian weights of `sigma` pixels: radius ⌊4σ + ½⌋, normalised to sum 1.
fn gaussian_weights(sigma: f64) -> (isize, Vec<f64>) {
    let radius = (TRUNCATE * sigma + 0.5) as isize;
    let weights: Vec<f64> = (-radius..=radius)
        .map(|i| (-0.5 * (i * i) as f64 / (sigma * sigma)).exp_portable())
        .collect();
    let total: f64 = weights.iter().sum();
    (radius, weights.iter().map(|w| w / total).collect())
}

/// The separable filter along the rows' axis, then the columns', `border` taking an index past
/// the edge back into 0..n.
fn filter_axes(
    image: &[f64],
    (height, width): (usize, usize),
    (sigma_rows, sigma_cols): (f64, f64),
    border: impl Fn(isize, usize) -> usize,
) -> Vec<f64> {
    let (radius, weights) = gaussian_weights(sigma_rows);
    let mut across_rows = vec![0f64; image.len()];
    for r in 0..height {
        for c in 0..width {
            across_rows[r * width + c] = (-radius..=radius)
                .zip(&weights)
                .map(|(k, w)| w * image[border(r as isize + k, height) * width + c])
                .sum();
        }
    }
    let (radius, weights) = gaussian_weights(sigma_cols);
    let mut out = vec![0f64; image.len()];
    for r in 0..height {
        for c in 0..width {
            out[r * width + c] = (-radius..=radius)
                .zip(&weights)
                .map(|(k, w)| w * across_rows[r * width + border(c as isize + k, width)])
                .sum();
        }
    }
    out
}

/// numpy's `np.gradient` of an image: (d/d row, d/d column), central differences inside and
/// one-sided ones on the borders (a side of one pixel has none: 0).
pub fn gradient(image: &[f64], height: usize, width: usize) -> (Vec<f64>, Vec<f64>) {
    let at = |r: usize, c: usize| image[r * width + c];
    let difference = |i: usize, n: usize, f: &dyn Fn(usize) -> f64| -> f64 {
        match (n, i) {
            (0 | 1, _) => 0.0,
            (_, 0) => f(1) - f(0),
            (_, i) if i == n - 1 => f(n - 1) - f(n - 2),
            _ => (f(i + 1) - f(i - 1)) / 2.0,
        }
    };
    let mut rows = vec![0f64; image.len()];
    let mut cols = vec![0f64; image.len()];
    for r in 0..height {
        for c in 0..width {
            rows[r * width + c] = difference(r, height, &|i| at(i, c));
            cols[r * width + c] = difference(c, width, &|j| at(r, j));
        }
    }
    (rows, cols)
}

/// The transformation tangents of `image` (h × w, 0..1 scale), one column of d each, in the
/// order of [`tangent_stds`]: shift x, shift y (images under 28 px), rotation, scale, the
/// parallel and the diagonal shear, thickness; per pixel (shifts, thickness) or per unit
/// parameter, computed on the image smoothed by max(0.5, 0.9 w/28) px.
pub fn transformation_tangents(image: &[f64], height: usize, width: usize) -> Vec<Vec<f64>> {
    tangents(image, (height, width), !moves_anchor(width))
}

/// All seven of [`transformation_tangents`]' columns, the shifts whatever the size: what a
/// class's differences are fitted by (`learned_spreads`).
pub fn transformation_tangents_with_shifts(
    image: &[f64],
    height: usize,
    width: usize,
) -> Vec<Vec<f64>> {
    tangents(image, (height, width), true)
}

fn tangents(image: &[f64], (height, width): (usize, usize), shifts: bool) -> Vec<Vec<f64>> {
    let smooth = (0.9 * width as f64 / 28.0).max(0.5);
    let smoothed = gaussian_filter(image, height, width, smooth);
    let (gy, gx) = gradient(&smoothed, height, width);
    let centre = ((height as f64 - 1.0) / 2.0, (width as f64 - 1.0) / 2.0);
    let column = |f: &dyn Fn(f64, f64, f64, f64) -> f64| -> Vec<f64> {
        (0..height * width)
            .map(|i| {
                let (row, col) = ((i / width) as f64 - centre.0, (i % width) as f64 - centre.1);
                f(row, col, gy[i], gx[i])
            })
            .collect()
    };
    let mut tangents = Vec::with_capacity(7);
    if shifts {
        tangents.push(column(&|_, _, _, gx| -gx));
        tangents.push(column(&|_, _, gy, _| -gy));
    }
    tangents.push(column(&|row, col, gy, gx| row * gx - col * gy));
    tangents.push(column(&|row, col, gy, gx| -(col * gx + row * gy)));
    tangents.push(column(&|row, col, gy, gx| col * gx - row * gy));
    tangents.push(column(&|row, col, gy, gx| row * gx + col * gy));
    tangents.push(column(&|_, _, gy, gx| gx.hypot_portable(gy)));
    tangents
}

/// The image moved by (rows, columns) whole pixels, zeros shifted in.
pub fn moved(image: &[f64], height: usize, width: usize, (dy, dx): (isize, isize)) -> Vec<f64> {
    let mut out = vec![0f64; image.len()];
    for r in 0..height {
        for c in 0..width {
            let (from_r, from_c) = (r as isize - dy, c as isize - dx);
            if (0..height as isize).contains(&from_r) && (0..width as isize).contains(&from_c) {
                out[r * width + c] = image[from_r as usize * width + from_c as usize];
            }
        }
    }
    out
}

/// Whether a set of `n` images of h × w has a bright background: more than half of the pixels
/// on its images' outermost rings above one half (`value(i, j)`: image i's pixel j on the 0..1
/// scale). The draws take 0 for the background (a moved anchor shifts zeros in, shading scales
/// the ink), so such a set (dark ink on white) is drawn inverted, 1 − v, and inverted back.
pub fn bright_background(
    n: usize,
    (height, width): (usize, usize),
    value: impl Fn(usize, usize) -> f32,
) -> bool {
    let ring: Vec<usize> = (0..height * width)
        .filter(|j| {
            let (r, c) = (j / width, j % width);
            r == 0 || c == 0 || r + 1 == height || c + 1 == width
        })
        .collect();
    let bright = (0..n)
        .map(|i| ring.iter().filter(|&&j| value(i, j) > 0.5).count())
        .sum::<usize>();
    2 * bright > n * ring.len()
}

/// The anchors of `count` draws from a class of `n` images: every image in turn, a permutation
/// per round drawn from (`seed`, `label`, round).
pub fn anchors(n: usize, count: usize, seed: u64, label: u32) -> Vec<usize> {
    turns(n, count, seed, label, Purpose::DeformationAnchors)
}

/// Of `count` new images for a class of `n` images, how many come past its deformations (the
/// last ones, unshaded and unsmoothed): elastic distortions where the set `distorts`
/// (`elastic::distorts`: strokes of 28 px or more; [`distortion_count`]), else interpolants
/// ([`interpolant_count`]).
pub fn past_deformations(n: usize, count: usize, distorts: bool) -> usize {
    match distorts {
        true => distortion_count(n, count),
        false => interpolant_count(n, count),
    }
}

/// `count` new images of the class whose `n` images (rows of h × w, 0..1 scale) are `images`,
/// as rows of h × w (before post-processing), with the image each was drawn from: first the
/// deformations ([`deformations`]) shaded by `shading` (`shading::shade`), then, for a class
/// brought past four new images per original ([`past_deformations`]), unshaded, the elastic
/// distortions of its images of scale `alpha` where the set is distorted (`elastic::distorts`,
/// `elastic::distortions`), else the interpolants between them ([`interpolants`]). A class of
/// graded `surface`s draws with the tangent spreads learned from its images and moves its
/// anchors by one pixel; strokes with the fixed spreads and moves ([`anchor_move_px`]).
pub fn class_draws(
    images: &[f32],
    (height, width): (usize, usize),
    count: usize,
    (seed, label): (u64, u32),
    (shading, alpha, surface): (f64, Option<f64>, bool),
) -> (Vec<f32>, Vec<usize>) {
    let d = height * width;
    let n = images.len() / d.max(1);
    let past = past_deformations(n, count, alpha.is_some());
    let stds = match surface {
        true => learned_tangent_stds(images, (height, width)),
        false => None,
    };
    let stds = stds.unwrap_or_else(|| tangent_stds(width));
    let moves = anchor_move_px(width, !surface);
    let mut draws = deformations(
        images,
        (height, width),
        count - past,
        (seed, label),
        (&stds, moves),
    );
    shade(&mut draws, (height, width), shading, seed, label);
    let mut starts = anchors(n, count - past, seed, label);
    let (more, bases) = match alpha {
        Some(alpha) => distortions(images, (height, width), (past, alpha), seed, label),
        None => interpolants(images, d, past, seed, label),
    };
    draws.extend(more);
    starts.extend(bases);
    (draws, starts)
}

/// `count` deformation draws of the class whose `n` images (rows of h × w, 0..1 scale) are
/// `images`, as rows of h × w (before post-processing): draw j anchors on [`anchors`]' j-th
/// image, moved in its turn by `move_px` pixels (0: not moved, [`anchor_move_px`]), its
/// coefficients z the normals of (`seed`, `label`, j) times `stds`.
pub fn deformations(
    images: &[f32],
    (height, width): (usize, usize),
    count: usize,
    (seed, label): (u64, u32),
    (stds, move_px): (&[f64], isize),
) -> Vec<f32> {
    let d = height * width;
    let n = images.len() / d.max(1);
    // Each draw's anchor and its move: an image's k-th draw takes its k-th move in turn.
    let mut turns = vec![0usize; n];
    let visits: Vec<(usize, usize)> = anchors(n, count, seed, label)
        .into_iter()
        .map(|start| {
            let turn = turns[start];
            turns[start] += 1;
            (start, turn)
        })
        .collect();
    // Every draw has its own stream: drawn on any thread, the bytes are the same.
    visits
        .into_par_iter()
        .enumerate()
        .flat_map_iter(|(j, (start, turn))| {
            let image: Vec<f64> = images[start * d..(start + 1) * d]
                .iter()
                .map(|&v| v as f64)
                .collect();
            let anchor = match move_px {
                0 => image,
                k => {
                    let (dy, dx) = ANCHOR_MOVES[(turn + start) % 4];
                    moved(&image, height, width, (dy * k, dx * k))
                }
            };
            let tangents = transformation_tangents(&anchor, height, width);
            let mut z = vec![0f32; stds.len()];
            Stream::new(seed, label, j as u32, 0, Purpose::Deformation).fill_normal(&mut z);
            let mut draw = anchor;
            for ((tangent, std), &zi) in tangents.iter().zip(stds).zip(&z) {
                let coefficient = std * zi as f64;
                draw.iter_mut()
                    .zip(tangent)
                    .for_each(|(x, t)| *x += coefficient * t);
            }
            draw.into_iter().map(|v| v as f32)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ramp rising to the right: its x-shift tangent (the change when the image moves right)
    /// is minus its slope inside, and its y-shift tangent is 0.
    #[test]
    fn shift_tangent_of_a_ramp_is_minus_its_slope() {
        let (h, w) = (8, 12);
        let ramp: Vec<f64> = (0..h * w).map(|i| (i % w) as f64 * 0.1).collect();
        let tangents = transformation_tangents(&ramp, h, w);
        for r in 0..h {
            for c in 3..w - 3 {
                assert!((tangents[0][r * w + c] + 0.1).abs() < 1e-9, "({r}, {c})");
                assert!(tangents[1][r * w + c].abs() < 1e-9, "({r}, {c})");
            }
        }
    }

    /// A bright dot right of the centre: a small rotation by +θ (the prototype's convention,
    /// rows down) moves it down, so the rotation tangent is positive below the dot and
    /// negative above it.
    #[test]
    fn rotation_tangent_turns_a_dot_right_of_centre_downwards() {
        let (h, w) = (9, 9);
        let mut image = vec![0f64; h * w];
        image[4 * w + 7] = 1.0;
        let tangents = transformation_tangents(&image, h, w);
        let rotation = &tangents[2];
        assert!(rotation[5 * w + 7] > 1e-3, "{}", rotation[5 * w + 7]);
        assert!(rotation[3 * w + 7] < -1e-3, "{}", rotation[3 * w + 7]);
    }

    /// The tangents of a fixed 6 × 5 image against numpy's: `transformation_tangents(image,
    /// 0.5)` of scripts/usefulness/prototypes.py (scipy 1.17.1), keys shift_x, shift_y,
    /// rotation, scale, shear_parallel, shear_diagonal, thickness, at pixels 0, 7, 14, 29.
    #[test]
    fn tangents_match_the_numpy_prototype() {
        let (h, w) = (6, 5);
        let image: Vec<f64> = (0..h * w).map(|i| ((i * 7) % 11) as f64 / 10.0).collect();
        let tangents = transformation_tangents(&image, h, w);
        for (k, (tangent, expected)) in tangents.iter().zip(NUMPY_TANGENTS).enumerate() {
            for (&at, want) in [0usize, 7, 14, 29].iter().zip(expected) {
                assert!(
                    (tangent[at] - want).abs() < 1e-12,
                    "tangent {k}, pixel {at}: {} against {want}",
                    tangent[at]
                );
            }
        }
    }

    const NUMPY_TANGENTS: [[f64; 4]; 7] = [
        [
            -0.5077908193398114,
            0.190222343859307,
            -0.4155202204535099,
            0.24014357089209248,
        ],
        [
            -0.16610845852710615,
            -0.08459246266193343,
            0.24492334872698596,
            -0.17831420115569585,
        ],
        [
            -0.9372601312953163,
            0.2853335157889605,
            0.28208658722721697,
            -0.9569873295416229,
        ],
        [
            1.4308527849973882,
            0.12688869399290015,
            -0.9535021152705128,
            0.03450163889494534,
        ],
        [
            -0.6003104923618574,
            0.12688869399290015,
            0.7085787665435268,
            -0.9260726446734246,
        ],
        [
            -1.601693965403741,
            0.2853335157889605,
            -0.6976068076807269,
            -0.2437305249188395,
        ],
        [
            0.5342691608169503,
            0.2081836325039484,
            0.48233235466571617,
            0.29910681866951716,
        ],
    ];

    /// Up to four new images per original a class's draws are its deformations alone, byte for
    /// byte; past that, half the rest are interpolants, after the deformations.
    #[test]
    fn interpolants_join_the_deformations_past_four_per_image() {
        let (h, w) = (28, 28);
        let images: Vec<f32> = (0..3 * h * w)
            .map(|i| ((i * 13) % 17) as f32 / 16.0)
            .collect();
        let (draws, starts) = class_draws(&images, (h, w), 12, (5, 1), (0.0, None, false));
        assert_eq!(
            draws,
            deformations(&images, (h, w), 12, (5, 1), (&tangent_stds(w), 1))
        );
        assert_eq!(starts, anchors(3, 12, 5, 1));
        let (draws, starts) = class_draws(&images, (h, w), 20, (5, 1), (0.0, None, false));
        let between = interpolant_count(3, 20);
        assert_eq!(between, 4);
        let (mixed, bases) = interpolants(&images, h * w, between, 5, 1);
        assert_eq!(
            draws[..16 * h * w],
            deformations(&images, (h, w), 16, (5, 1), (&tangent_stds(w), 1))[..]
        );
        assert_eq!(draws[16 * h * w..], mixed[..]);
        assert_eq!(starts[16..], bases[..]);
    }

    /// On a set of strokes the deformations are the same up to four new images per original;
    /// past that every draw is an elastic distortion, after them.
    #[test]
    fn distortions_follow_the_deformations_past_four_per_image_on_strokes() {
        let (h, w) = (28, 28);
        let images: Vec<f32> = (0..3 * h * w)
            .map(|i| ((i * 13) % 17) as f32 / 16.0)
            .collect();
        let (draws, starts) = class_draws(&images, (h, w), 12, (5, 1), (0.1, Some(17.0), false));
        assert_eq!(
            (draws, starts),
            class_draws(&images, (h, w), 12, (5, 1), (0.1, None, false))
        );
        let (draws, starts) = class_draws(&images, (h, w), 20, (5, 1), (0.1, Some(17.0), false));
        assert_eq!(past_deformations(3, 20, true), 8);
        let (distorted, bases) = distortions(&images, (h, w), (8, 17.0), 5, 1);
        let (deformed, _) = class_draws(&images, (h, w), 12, (5, 1), (0.1, None, false));
        assert_eq!(draws[..12 * h * w], deformed[..]);
        assert_eq!(draws[12 * h * w..], distorted[..]);
        assert_eq!(starts[12..], bases[..]);
        let mut first_round = bases[..3].to_vec();
        first_round.sort_unstable();
        assert_eq!(first_round, vec![0, 1, 2]);
    }

    #[test]
    fn a_background_is_bright_when_most_of_the_border_rings_are() {
        // 5 × 4 images: a ring of 14 pixels around a 3 × 2 middle.
        let ring = |v: f32| -> Vec<f32> {
            (0..20)
                .map(|j| {
                    let (r, c) = (j / 4, j % 4);
                    let inside = (1..4).contains(&r) && (1..3).contains(&c);
                    if inside {
                        1.0 - v
                    } else {
                        v
                    }
                })
                .collect()
        };
        let bright =
            |images: &[Vec<f32>]| bright_background(images.len(), (5, 4), |i, j| images[i][j]);
        assert!(!bright(&[ring(0.0), ring(0.2)]));
        assert!(bright(&[ring(0.9), ring(1.0)]));
        // Half the ring pixels bright is not more than half.
        assert!(!bright(&[ring(0.0), ring(1.0)]));
        assert!(bright(&[ring(0.0), ring(1.0), ring(0.6)]));
        // The middle does not count: bright ink filling it leaves the background dark.
        assert!(!bright(&[ring(0.0)]));
        assert!(!bright(&[]));
    }

    #[test]
    fn moved_shifts_in_zeros() {
        let image: Vec<f64> = (1..=6).map(f64::from).collect();
        assert_eq!(
            moved(&image, 2, 3, (0, 1)),
            vec![0.0, 1.0, 2.0, 0.0, 4.0, 5.0]
        );
        assert_eq!(
            moved(&image, 2, 3, (-1, 0)),
            vec![4.0, 5.0, 6.0, 0.0, 0.0, 0.0]
        );
    }

    #[test]
    fn every_image_anchors_once_per_round() {
        let anchors = anchors(5, 12, 7, 3);
        for round in anchors.chunks(5).take(2) {
            let mut sorted = round.to_vec();
            sorted.sort_unstable();
            assert_eq!(sorted, vec![0, 1, 2, 3, 4]);
        }
        assert_eq!(anchors.len(), 12);
        assert_ne!(anchors[..5], anchors[5..10], "a new permutation per round");
    }

    /// The draws move their anchor by whole pixels, each image's four moves in turn: one on
    /// 28-px images, two on 56-px strokes and one on 56-px surfaces; with z = 0 a draw would be
    /// the moved anchor, and the tangent part is small.
    #[test]
    fn draws_on_large_images_stay_near_a_moved_anchor() {
        for (side, surface, step) in [(28, false, 1), (28, true, 1), (56, false, 2), (56, true, 1)]
        {
            assert_eq!(anchor_move_px(side, !surface), step);
            let (h, w) = (side, side);
            let mut image = vec![0f32; h * w];
            for r in h * 2 / 7..h * 5 / 7 {
                image[r * w + w / 2 - 1] = 1.0;
                image[r * w + w / 2] = 1.0;
            }
            // One image, so draw j anchors on it in its j-th turn.
            let (draws, _) = class_draws(&image, (h, w), 4, (1, 0), (0.0, None, surface));
            assert_eq!(draws.len(), 4 * h * w);
            let base: Vec<f64> = image.iter().map(|&v| v as f64).collect();
            let distance = |draw: &[f32], (dy, dx): (isize, isize)| {
                let other = moved(&base, h, w, (dy * step, dx * step));
                draw.iter()
                    .zip(&other)
                    .map(|(&x, a)| (x as f64 - a).powi(2))
                    .sum::<f64>()
                    .sqrt()
            };
            for (j, draw) in draws.chunks(h * w).enumerate() {
                let own = distance(draw, ANCHOR_MOVES[j % 4]);
                let others = ANCHOR_MOVES
                    .iter()
                    .filter(|&&m| m != ANCHOR_MOVES[j % 4])
                    .map(|&m| distance(draw, m))
                    .fold(f64::INFINITY, f64::min);
                let unmoved = distance(draw, (0, 0));
                assert!(
                    own < others && own < unmoved,
                    "{side} px, surface {surface}, draw {j}: {own} vs {others} and {unmoved}"
                );
            }
        }
        assert_eq!(anchor_move_px(27, true), 0);
        assert_eq!(anchor_move_px(41, true), 1);
        assert_eq!(anchor_move_px(42, true), 2);
        assert_eq!(anchor_move_px(84, true), 3);
    }

    /// A class of graded surfaces draws its deformations with the spreads learned from its
    /// images; strokes (learned false) with the fixed ones.
    #[test]
    fn learned_spreads_set_the_deformations_where_asked() {
        let (h, w) = (28, 28);
        let images: Vec<f32> = (0..5)
            .flat_map(|k| {
                (0..h * w).map(move |i| {
                    let (r, c) = (i / w, i % w);
                    0.1 + ((r * 3 + c * c + 7 * k) % 11) as f32 / 14.0
                })
            })
            .collect();
        let learned = learned_tangent_stds(&images, (h, w)).unwrap();
        assert_ne!(learned, tangent_stds(w));
        let (draws, _) = class_draws(&images, (h, w), 12, (5, 1), (0.0, None, true));
        assert_eq!(
            draws,
            deformations(&images, (h, w), 12, (5, 1), (&learned, 1))
        );
        let (draws, _) = class_draws(&images, (h, w), 12, (5, 1), (0.0, None, false));
        assert_eq!(
            draws,
            deformations(&images, (h, w), 12, (5, 1), (&tangent_stds(w), 1))
        );
    }
}
