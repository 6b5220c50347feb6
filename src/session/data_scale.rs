//! The quality default's step size, noise variance and smoothing scaled to the data (issue 21).
//!
//! The quality preset's η 0.007, σ² 0.01 and smoothing 0.5 px were tuned on 28 × 28 MNIST. On
//! other data they are rescaled by the data's own length scales: η (a distance in code space,
//! as leapfrog moves a position by η·momentum) by r / r_ref and σ² by (r / r_ref)², r being the
//! median distance from a training image to its nearest same-class image (0..1 pixels, among the
//! first `NN_PER_CLASS` images of each class, so that r does not shrink with the data's size)
//! and r_ref its value on MNIST; the smoothing (in pixels) by the image side over 28. On MNIST
//! the factors are 1 to within the reference's rounding (docs/adaptation.md, "Scales from the
//! data").

use crate::io::{Dataset, Pixels};

/// Images of each class compared for the nearest-neighbour distance (the first ones, in order).
pub(crate) const NN_PER_CLASS: usize = 100;

/// r on MNIST, where the quality preset was tuned: the median in-class nearest-neighbour distance
/// of the quality table's MNIST cut (1,000 images, numpy seed 0; the first 100 of each class);
/// 5.30 on the first 3,000 training images (which 100 images are taken moves it by about 10%).
pub(crate) const REFERENCE_NN_DISTANCE: f64 = 5.88;

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
}

impl DataScale {
    /// The scales of the images of `dataset` whose label is in `classes` (all when None);
    /// None when no class has two images, or when the median distance is zero (classes of
    /// repeated images), which would scale η and σ² to zero: the run then keeps the preset's.
    pub(crate) fn of(dataset: &Dataset, labels: &[u32], classes: Option<&[u32]>) -> Option<Self> {
        let nn_distance = median_class_nn(dataset, labels, classes)
            .filter(|r| r.is_finite() && *r > MIN_NN_DISTANCE)?;
        Some(DataScale {
            nn_distance,
            side: ((dataset.height * dataset.width) as f64).sqrt(),
        })
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

/// The median over images of the distance to the nearest other image of the same class, each
/// class represented by its first `NN_PER_CLASS` images.
pub(crate) fn median_class_nn(
    dataset: &Dataset,
    labels: &[u32],
    classes: Option<&[u32]>,
) -> Option<f64> {
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
    let mut nearest = Vec::new();
    for rows in members.values().filter(|r| r.len() >= 2) {
        let images: Vec<Vec<f64>> = rows
            .iter()
            .map(|&i| (0..d).map(|j| pixel(dataset, i, j)).collect())
            .collect();
        for (a, x) in images.iter().enumerate() {
            let best = images
                .iter()
                .enumerate()
                .filter(|&(b, _)| b != a)
                .map(|(_, y)| x.iter().zip(y).map(|(p, q)| (p - q) * (p - q)).sum::<f64>())
                .fold(f64::INFINITY, f64::min);
            nearest.push(best.sqrt());
        }
    }
    if nearest.is_empty() {
        return None;
    }
    nearest.sort_by(f64::total_cmp);
    let m = nearest.len();
    Some(if m % 2 == 1 {
        nearest[m / 2]
    } else {
        0.5 * (nearest[m / 2 - 1] + nearest[m / 2])
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
    fn repeated_images_give_no_scale() {
        let data = dataset(&[[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]]);
        assert_eq!(median_class_nn(&data, &[0, 0, 0], None), Some(0.0));
        assert_eq!(DataScale::of(&data, &[0, 0, 0], None), None);
    }
}
