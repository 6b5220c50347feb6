//! The quality default's step size, noise variance and smoothing scaled to the data (issue 21).
//!
//! The quality preset's η 0.007, σ² 0.01 and smoothing 0.5 px were tuned on 28 × 28 MNIST. On
//! other data they are rescaled by the data's own length scales: η (a distance in code space,
//! as leapfrog moves a position by η·momentum) by r / r_ref and σ² by (r / r_ref)², r being the
//! median distance from a training image to its nearest same-class image (0..1 pixels, among the
//! first `NN_PER_CLASS` images of each class, so that r does not shrink with the data's size)
//! and r_ref its value on MNIST; the smoothing (in pixels) by the image side over 28. On MNIST
//! the factors are 1 to within the reference's rounding (docs/adaptation.md, "Scales from the
//! data"). The tangent target's span s narrows with the classes' separation: by m / m_ref when
//! the class margin m (the median over images of the nearest other-class distance over the
//! nearest same-class distance, minus 1) is below MNIST's m_ref, so that chains on classes that sit
//! closer together than MNIST's stay in their class; it never widens past the preset's.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::io::{Dataset, Pixels};

/// Images of each class compared for the nearest-neighbour distance (the first ones, in order).
pub(crate) const NN_PER_CLASS: usize = 100;

/// r on MNIST, where the quality preset was tuned: the median in-class nearest-neighbour distance
/// of the quality table's MNIST cut (1,000 images, numpy seed 0; the first 100 of each class);
/// 5.30 on the first 3,000 training images (which 100 images are taken moves it by about 10%).
pub(crate) const REFERENCE_NN_DISTANCE: f64 = 5.88;

/// m on MNIST, where the tangent scale s = 3 was tuned: the class margin of the quality table's
/// MNIST cut (0.213 with numpy seed 0; 0.222 and 0.226 on cuts of 2,000 and 3,000 images with
/// seeds 1 and 2; Fashion-MNIST 0.135-0.173, Quick Draw 0.32-0.36, the 8 × 8 digits 0.71-0.77).
pub(crate) const REFERENCE_CLASS_MARGIN: f64 = 0.22;

/// Below this median distance (0..1 pixels) the data is taken as repeated images, not a scale.
const MIN_NN_DISTANCE: f64 = 1e-6;

/// The image side (pixels) the smoothing's 0.5 px was chosen at.
pub(crate) const REFERENCE_SIDE: f64 = 28.0;

/// The data's length scales and the factors they give.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct DataScale {
    /// Median in-class nearest-neighbour distance, 0..1 pixels.
    pub nn_distance: f64,
    /// Image side, √(height · width).
    pub side: f64,
    /// The class margin m (None with fewer than two classes of two images).
    pub class_margin: Option<f64>,
}

impl DataScale {
    /// The scales of the images of `dataset` whose label is in `classes` (all when None);
    /// None when no class has two images, or when the median distance is zero (classes of
    /// repeated images), which would scale η and σ² to zero: the run then keeps the preset's.
    pub(crate) fn of(dataset: &Dataset, labels: &[u32], classes: Option<&[u32]>) -> Option<Self> {
        let neighbours = class_neighbours(dataset, labels, classes);
        let nn_distance = median(neighbours.iter().map(|n| n.same).collect())
            .filter(|r| r.is_finite() && *r > MIN_NN_DISTANCE)?;
        Some(DataScale {
            nn_distance,
            side: ((dataset.height * dataset.width) as f64).sqrt(),
            class_margin: class_margin(&neighbours),
        })
    }

    /// The factor of the tangent target's span s: min(1, m / m_ref), 1 without a margin.
    pub(crate) fn tangent_ratio(&self) -> f64 {
        self.class_margin
            .map_or(1.0, |m| (m / REFERENCE_CLASS_MARGIN).clamp(0.0, 1.0))
    }

    /// The factor of η (σ²'s is its square).
    pub(crate) fn length_ratio(&self) -> f64 {
        self.nn_distance / REFERENCE_NN_DISTANCE
    }

    /// The factor of the smoothing's standard deviation in pixels.
    pub(crate) fn side_ratio(&self) -> f64 {
        self.side / REFERENCE_SIDE
    }
}

/// Pixel `j` of image `i` on the 0..1 scale.
fn pixel(dataset: &Dataset, i: usize, j: usize) -> f64 {
    let raw = match &dataset.pixels {
        Pixels::U8(v) => v[i * dataset.d + j] as f64,
        Pixels::F32(v) => v[i * dataset.d + j] as f64,
    };
    raw / dataset.full_scale as f64
}

/// An image's nearest same-class and other-class distances (0..1 pixels; infinite when none).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Neighbours {
    pub same: f64,
    pub other: f64,
}

/// Per image of the chosen classes' first `NN_PER_CLASS` images (classes of at least two), its
/// nearest same-class and other-class distances among those images.
pub(crate) fn class_neighbours(
    dataset: &Dataset,
    labels: &[u32],
    classes: Option<&[u32]>,
) -> Vec<Neighbours> {
    let mut members = std::collections::BTreeMap::<u32, Vec<usize>>::new();
    for (i, &label) in labels.iter().enumerate().take(dataset.n) {
        if classes.is_some_and(|c| !c.contains(&label)) {
            continue;
        }
        let rows = members.entry(label).or_default();
        if rows.len() < NN_PER_CLASS {
            rows.push(i);
        }
    }
    let d = dataset.d;
    let images: Vec<(u32, Vec<f64>)> = members
        .iter()
        .filter(|(_, rows)| rows.len() >= 2)
        .flat_map(|(&label, rows)| {
            rows.iter()
                .map(move |&i| (label, (0..d).map(|j| pixel(dataset, i, j)).collect()))
        })
        .collect();
    images
        .par_iter()
        .enumerate()
        .map(|(a, (label, x))| {
            let mut nearest = Neighbours {
                same: f64::INFINITY,
                other: f64::INFINITY,
            };
            for (b, (other_label, y)) in images.iter().enumerate() {
                if b == a {
                    continue;
                }
                let distance = squared_distance(x, y);
                let slot = if other_label == label {
                    &mut nearest.same
                } else {
                    &mut nearest.other
                };
                *slot = slot.min(distance);
            }
            Neighbours {
                same: nearest.same.sqrt(),
                other: nearest.other.sqrt(),
            }
        })
        .collect()
}

/// ||x − y||² summed in eight lanes (independent additions, which vectorise; one chain of 784
/// dependent additions took 0.33 s of a first MNIST `augment`).
fn squared_distance(x: &[f64], y: &[f64]) -> f64 {
    const LANES: usize = 8;
    let mut lanes = [0f64; LANES];
    let (xs, ys) = (x.chunks_exact(LANES), y.chunks_exact(LANES));
    let tail: f64 = (xs.remainder().iter().zip(ys.remainder()))
        .map(|(p, q)| (p - q) * (p - q))
        .sum();
    for (x, y) in xs.zip(ys) {
        for ((lane, p), q) in lanes.iter_mut().zip(x).zip(y) {
            *lane += (p - q) * (p - q);
        }
    }
    lanes.iter().sum::<f64>() + tail
}

/// The median over images of the distance to the nearest other image of the same class, each
/// class represented by its first `NN_PER_CLASS` images.
/// Which of the quality preset's MNIST-tuned constants `rmld augment` rescales to the data
/// (η by r / r_ref, σ² by (r / r_ref)², the smoothing by side / 28; r the median in-class
/// nearest-neighbour distance, r_ref its value on MNIST; the tangent scale by the class margin
/// m / m_ref when below 1; the tangent target's k to at most one direction per
/// `PIXELS_PER_TANGENT_DIRECTION` pixels).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScaleFit {
    /// Rescale the step size η.
    pub eta: bool,
    /// Rescale the noise variance σ².
    pub sigma2: bool,
    /// Rescale the smoothing's standard deviation.
    pub smooth: bool,
    /// Narrow the tangent target's span s by the class margin (min(1, m / m_ref), s ≥ 1).
    #[serde(default)]
    pub tangent_scale: bool,
    /// Lower the tangent target's k on small images, to at most one neighbour direction per
    /// `PIXELS_PER_TANGENT_DIRECTION` pixels (never raised).
    #[serde(default)]
    pub tangent_k: bool,
}

/// The tangent target's span keeps to a small share of the image's dimensions: its k neighbour
/// directions are at most one per this many pixels. MNIST's 784 pixels allow 98, far above the
/// preset's 16; the 8 × 8 digits' 64 allow 8, where 16 directions span a quarter of all pixel
/// directions and carried 4-7% of samples across classes on 4 of 8 cuts (docs/adaptation.md).
pub const PIXELS_PER_TANGENT_DIRECTION: usize = 8;

impl ScaleFit {
    /// All five rescaled.
    pub const ALL: ScaleFit = ScaleFit {
        eta: true,
        sigma2: true,
        smooth: true,
        tangent_scale: true,
        tangent_k: true,
    };

    /// Whether any is rescaled.
    pub fn any(&self) -> bool {
        self.eta || self.sigma2 || self.smooth || self.tangent_scale || self.tangent_k
    }
}

#[cfg(test)]
pub(crate) fn median_class_nn(
    dataset: &Dataset,
    labels: &[u32],
    classes: Option<&[u32]>,
) -> Option<f64> {
    median(
        class_neighbours(dataset, labels, classes)
            .iter()
            .map(|n| n.same)
            .collect(),
    )
}

/// The class margin: the median over images of other / same − 1 (images with both distances
/// finite and a same-class distance above `MIN_NN_DISTANCE`); None when no image has both.
pub(crate) fn class_margin(neighbours: &[Neighbours]) -> Option<f64> {
    median(
        neighbours
            .iter()
            .filter(|n| n.other.is_finite() && n.same.is_finite() && n.same > MIN_NN_DISTANCE)
            .map(|n| n.other / n.same - 1.0)
            .collect(),
    )
}

/// The median of `values` (the mean of the middle two for an even count); None when empty.
fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let m = values.len();
    Some(if m % 2 == 1 {
        values[m / 2]
    } else {
        0.5 * (values[m / 2 - 1] + values[m / 2])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dataset(rows: &[[f32; 2]]) -> Dataset {
        Dataset {
            source: "test".into(),
            n: rows.len(),
            d: 2,
            height: 1,
            width: 2,
            pixels: Pixels::F32(rows.iter().flatten().copied().collect()),
            full_scale: 1.0,
            labels: None,
        }
    }

    #[test]
    fn median_nearest_neighbour_within_classes() {
        // Class 0: points 0, 1, 3 on a line (nearest 1, 1, 2); class 1: 10 and 14 (4, 4).
        let data = dataset(&[[0.0, 0.0], [10.0, 0.0], [1.0, 0.0], [3.0, 0.0], [14.0, 0.0]]);
        let labels = [0, 1, 0, 0, 1];
        // Sorted 1, 1, 2, 4, 4: median 2.
        assert_eq!(median_class_nn(&data, &labels, None), Some(2.0));
        // Class 1 alone: 4.
        assert_eq!(median_class_nn(&data, &labels, Some(&[1])), Some(4.0));
        // A class of one image has no neighbour.
        assert_eq!(median_class_nn(&data, &[0, 1, 2, 3, 4], None), None);
    }

    #[test]
    fn distances_are_on_the_unit_scale() {
        let mut data = dataset(&[[0.0, 0.0], [0.0, 8.0]]);
        data.full_scale = 16.0;
        assert_eq!(median_class_nn(&data, &[0, 0], None), Some(0.5));
    }

    #[test]
    fn class_margin_is_the_median_ratio_of_other_to_same_class_distances() {
        // Class 0: 0, 1, 3; class 1: 10, 14. Nearest same / other: 0 → 1 / 10, 1 → 1 / 9,
        // 3 → 2 / 7, 10 → 4 / 7, 14 → 4 / 11: ratios − 1 = 9, 8, 2.5, 0.75, 1.75; median 2.5.
        let data = dataset(&[[0.0, 0.0], [10.0, 0.0], [1.0, 0.0], [3.0, 0.0], [14.0, 0.0]]);
        let labels = [0, 1, 0, 0, 1];
        let scale = DataScale::of(&data, &labels, None).unwrap();
        assert_eq!(scale.class_margin, Some(2.5));
        // Wide apart: the span is not widened past the preset's.
        assert_eq!(scale.tangent_ratio(), 1.0);
        // One class: no margin, no change.
        let one = DataScale::of(&data, &labels, Some(&[0])).unwrap();
        assert_eq!((one.class_margin, one.tangent_ratio()), (None, 1.0));
        // Classes closer than MNIST's: the span narrows by m / m_ref.
        let close = dataset(&[[0.0, 0.0], [1.0, 0.0], [1.1, 0.0], [2.1, 0.0]]);
        let scale = DataScale::of(&close, &[0, 0, 1, 1], None).unwrap();
        let m = scale.class_margin.unwrap();
        // Every image: same 1, other 0.1 or 1.1 (inner pair 0.1): ratios − 1 = 0.1, −0.9, −0.9, 0.1.
        assert!((m - (-0.4)).abs() < 1e-6, "{m}");
        assert_eq!(scale.tangent_ratio(), 0.0);
        let scale = DataScale {
            class_margin: Some(0.11),
            ..scale
        };
        assert!((scale.tangent_ratio() - 0.5).abs() < 1e-12);
    }

    #[test]
    fn repeated_images_give_no_scale() {
        let data = dataset(&[[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]]);
        assert_eq!(median_class_nn(&data, &[0, 0, 0], None), Some(0.0));
        assert_eq!(DataScale::of(&data, &[0, 0, 0], None), None);
    }
}
