//! Sample quality of generated images against real ones: label preservation, novelty, diversity.
//!
//! All metrics work on images as f32 on the 0..1 scale (a raw pixel divided by its full scale,
//! e.g. an IDX byte / 255), so they compare across methods and datasets. Three sets take part:
//! - `train`: real labelled training images; the classifier learns from them and they are the
//!   reference of the nearest-neighbour distances and of the real diversity;
//! - `reference`: real labelled images held out from `train` (the test split, or a seeded 10% of
//!   the training images): they calibrate every metric, since a new member of the data
//!   distribution should score like them;
//! - `generated`: the images to judge, each with the class it was generated for.
//!
//! The metrics:
//! - **label preservation**: the fraction of generated images that a softmax-regression classifier
//!   trained on `train` assigns to their class; its accuracy on `reference` sits beside it, and,
//!   for pictures, its accuracy on the training images each moved by one pixel: a linear judge
//!   of pixels is sensitive to position, more so the more images it learns from (MNIST, 10,000
//!   images: 85.5% of 1-pixel moves of its own training images against 90.9% of test images),
//!   and that line tells what a move alone costs under it (docs/quality.md).
//! - **novelty**: each generated image's Euclidean distance to its nearest training image divided
//!   by the median of the same distance over the reference images: copies score 0, new members
//!   of the distribution about 1 (the reference images' median is 1 by construction).
//! - **diversity**: per class, the mean pairwise distance among the generated images divided by
//!   the same among the class's training images (at most [`MAX_DIVERSITY_IMAGES`] per side, a
//!   seeded subsample); a collapse onto one image scores 0, the reference images about 1.

pub(crate) mod classifier;
pub(crate) mod distances;
pub(crate) mod inputs;

use std::time::Instant;

use serde::Serialize;

use crate::io::{Dataset, Pixels};
use crate::rng::philox::index_from_word;
use crate::rng::{Purpose, Stream};
use crate::{Error, Result};
pub use classifier::{train, train_until, Softmax, TrainSettings};
pub use distances::{mean_pairwise_distance, nearest_neighbours, Stop};
pub use inputs::{load_generated, load_test_split, GeneratedImages, TestSplit};

/// The fraction of the training images of each class held out as the reference when there is no
/// test split.
pub const HELD_OUT_FRACTION: f64 = 0.1;
/// At most this many images per side (generated, real) enter a class's mean pairwise distance: a
/// seeded subsample beyond it (the mean over the ~500,000 pairs of 1,000 MNIST digits of a class
/// has a sampling error of about 1%).
pub const MAX_DIVERSITY_IMAGES: usize = 1000;
/// Novelty below this marks a near copy of a training image.
pub const NEAR_COPY_NOVELTY: f64 = 0.1;
/// The chain index keying the metrics' seeded draws (no sampler chain reaches it).
const QUALITY_STREAM: u32 = u32::MAX - 1;

/// Images with one label each, values on the 0..1 scale, row-major.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LabelledImages {
    /// Values per image.
    pub d: usize,
    /// n × d values.
    pub values: Vec<f32>,
    /// n labels.
    pub labels: Vec<u32>,
}

impl LabelledImages {
    /// Images from values already on the 0..1 scale.
    ///
    /// # Errors
    /// A usage error when the number of values is not `labels.len() · d`.
    pub fn new(d: usize, values: Vec<f32>, labels: Vec<u32>) -> Result<Self> {
        if values.len() != labels.len() * d {
            return Err(Error::usage(
                "images",
                format!(
                    "{} values do not make {} images of {d} values",
                    values.len(),
                    labels.len()
                ),
            ));
        }
        Ok(LabelledImages { d, values, labels })
    }

    /// The images of a labelled dataset, each raw value divided by `scale` (the dataset's
    /// `full_scale` for real data).
    ///
    /// # Errors
    /// An input error naming the dataset when it has no labels.
    pub fn from_dataset(dataset: &Dataset, scale: f32) -> Result<Self> {
        let labels = dataset.labels.clone().ok_or_else(|| {
            Error::input(
                &dataset.source,
                "has no labels, and the quality metrics are per class",
            )
        })?;
        let values = match &dataset.pixels {
            Pixels::U8(v) => v.iter().map(|&x| x as f32 / scale).collect(),
            Pixels::F32(v) => v.iter().map(|&x| x / scale).collect(),
        };
        Self::new(dataset.d, values, labels)
    }

    /// Number of images.
    pub fn n(&self) -> usize {
        self.labels.len()
    }

    /// The images at `rows`, in that order.
    pub fn subset(&self, rows: &[usize]) -> Self {
        let d = self.d;
        LabelledImages {
            d,
            values: rows
                .iter()
                .flat_map(|&i| &self.values[i * d..(i + 1) * d])
                .copied()
                .collect(),
            labels: rows.iter().map(|&i| self.labels[i]).collect(),
        }
    }

    /// Only the images whose label is in `classes` (order kept).
    pub fn of_classes(&self, classes: &[u32]) -> Self {
        let rows: Vec<usize> = (0..self.n())
            .filter(|&i| classes.contains(&self.labels[i]))
            .collect();
        self.subset(&rows)
    }

    /// The distinct labels, ascending.
    pub fn classes(&self) -> Vec<u32> {
        let mut classes = self.labels.clone();
        classes.sort_unstable();
        classes.dedup();
        classes
    }

    /// The rows labelled `label`, ascending.
    fn rows_of(&self, label: u32) -> Vec<usize> {
        (0..self.n()).filter(|&i| self.labels[i] == label).collect()
    }
}

/// Where the reference images come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ReferenceKind {
    /// The dataset's labelled test split.
    #[serde(rename = "test split")]
    TestSplit,
    /// A seeded 10% of the training images of each class, excluded from the classifier's
    /// training and from the nearest-neighbour reference.
    #[serde(rename = "held-out 10% of training")]
    HeldOut,
}

/// `k` distinct indices of 0..n (all of them when k ≥ n), ascending: a partial Fisher-Yates
/// shuffle driven by Philox under `seed`, with `tag` and `part` telling draws apart.
pub fn seeded_sample(n: usize, k: usize, seed: u64, tag: u32, part: u32) -> Vec<usize> {
    if k >= n {
        return (0..n).collect();
    }
    let mut order: Vec<usize> = (0..n).collect();
    let mut words = vec![0u32; k];
    Stream::new(seed, QUALITY_STREAM, tag, part, Purpose::InitPick).fill_u32(&mut words);
    for (i, &w) in words.iter().enumerate() {
        let j = i + index_from_word(w, (n - i) as u32) as usize;
        order.swap(i, j);
    }
    let mut picked = order[..k].to_vec();
    picked.sort_unstable();
    picked
}

/// Splits `train` into (the rest, the reference): per class a seeded [`HELD_OUT_FRACTION`] of its
/// images (rounded, at least one of a class with two or more), order kept in both parts.
pub fn hold_out(train: &LabelledImages, seed: u64) -> (LabelledImages, LabelledImages) {
    let mut held = vec![false; train.n()];
    for (k, label) in train.classes().into_iter().enumerate() {
        let rows = train.rows_of(label);
        let n = rows.len();
        let count = if n >= 2 {
            ((n as f64 * HELD_OUT_FRACTION).round() as usize).clamp(1, n - 1)
        } else {
            0
        };
        for i in seeded_sample(n, count, seed, 1, k as u32) {
            held[rows[i]] = true;
        }
    }
    let (reference, rest): (Vec<usize>, Vec<usize>) = (0..train.n()).partition(|&i| held[i]);
    (train.subset(&rest), train.subset(&reference))
}

/// The training set and the reference: `test` (kept to the training classes) when it holds any
/// image, else a [`hold_out`] of `train`.
pub fn choose_reference(
    train: LabelledImages,
    test: Option<LabelledImages>,
    seed: u64,
) -> (LabelledImages, LabelledImages, ReferenceKind) {
    let classes = train.classes();
    match test.map(|t| t.of_classes(&classes)) {
        Some(test) if test.n() > 0 && test.d == train.d => (train, test, ReferenceKind::TestSplit),
        _ => {
            let (rest, reference) = hold_out(&train, seed);
            (rest, reference, ReferenceKind::HeldOut)
        }
    }
}

/// What [`evaluate`] compares.
#[derive(Clone, Debug)]
pub struct QualityInputs<'a> {
    /// Real training images: the classifier's training set and the distances' reference.
    pub train: &'a LabelledImages,
    /// Real images outside `train` that calibrate the metrics.
    pub reference: &'a LabelledImages,
    /// Where `reference` comes from.
    pub reference_kind: ReferenceKind,
    /// The generated images, labelled with the class they were generated for.
    pub generated: &'a LabelledImages,
    /// Seed of the diversity subsamples.
    pub seed: u64,
    /// How the classifier is trained.
    pub classifier: TrainSettings,
    /// The images' (height, width) when they are pictures: the training images moved by one
    /// pixel then calibrate label preservation ([`moved_one_pixel`]).
    pub shape: Option<(usize, usize)>,
}

/// The 10%, 50% and 90% quantiles.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Quantiles {
    /// 10th percentile.
    pub q10: f64,
    /// Median.
    pub q50: f64,
    /// 90th percentile.
    pub q90: f64,
}

/// Image counts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Counts {
    /// Real training images (classifier and nearest-neighbour reference).
    pub train: usize,
    /// Real reference images.
    pub reference: usize,
    /// Generated images.
    pub generated: usize,
    /// Classes of the training images.
    pub classes: usize,
}

/// Label preservation of one class.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClassLabelPreservation {
    /// The class label.
    pub label: u32,
    /// Generated images of the class.
    pub generated: usize,
    /// The fraction of them the classifier assigns to the class.
    pub preserved: f64,
    /// The classifier's accuracy on the class's reference images (None without any).
    pub classifier_test_accuracy: Option<f64>,
}

/// Label preservation overall and per class.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LabelPreservation {
    /// The fraction of all generated images assigned to their class.
    pub overall: f64,
    /// Per class, in label order.
    pub per_class: Vec<ClassLabelPreservation>,
}

/// The classifier and how it was trained.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClassifierSummary {
    /// "softmax regression (multinomial logistic regression) with bias, L2 penalty, L-BFGS".
    pub model: &'static str,
    /// The classifier's training settings.
    pub settings: TrainSettings,
    /// L-BFGS iterations run.
    pub iterations: usize,
    /// Final training loss (mean cross-entropy plus the penalty).
    pub loss: f64,
    /// Accuracy on its own training images.
    pub train_accuracy: f64,
    /// Seconds spent training.
    pub seconds: f64,
}

/// Novelty statistics of a set of images.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NoveltyStats {
    /// Images.
    pub count: usize,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub median: f64,
    /// 10th, 50th and 90th percentiles.
    pub quantiles: Quantiles,
    /// The fraction with novelty below [`NEAR_COPY_NOVELTY`].
    pub near_copy_fraction: f64,
}

/// Novelty of one class's generated images.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClassNovelty {
    /// The class label.
    pub label: u32,
    #[serde(flatten)]
    /// The class's statistics.
    pub stats: NoveltyStats,
}

/// Novelty overall and per class.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Novelty {
    #[serde(flatten)]
    /// Over every generated image.
    pub overall: NoveltyStats,
    /// The threshold of a near copy ([`NEAR_COPY_NOVELTY`]).
    pub near_copy_threshold: f64,
    /// The unit of novelty: the median distance (0..1 pixel scale) from a reference image to
    /// its nearest training image.
    pub reference_median_distance: f64,
    /// Per class, in label order.
    pub per_class: Vec<ClassNovelty>,
}

/// Diversity of one class.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClassDiversity {
    /// The class label.
    pub label: u32,
    /// Generated images of the class.
    pub generated: usize,
    /// Mean pairwise distance among generated images / among the class's training images
    /// (None with fewer than two on either side).
    pub ratio: Option<f64>,
    /// Mean pairwise distance among the (subsampled) generated images.
    pub generated_mean_distance: Option<f64>,
    /// Mean pairwise distance among the (subsampled) training images of the class.
    pub train_mean_distance: Option<f64>,
    /// The same ratio for the class's reference images (None with fewer than two).
    pub reference_ratio: Option<f64>,
}

/// Diversity per class and its mean over classes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Diversity {
    /// Mean of the per-class ratios that exist.
    pub mean: Option<f64>,
    /// Images per side at most ([`MAX_DIVERSITY_IMAGES`]).
    pub max_images_per_side: usize,
    /// Per class, in label order.
    pub per_class: Vec<ClassDiversity>,
}

/// The reference images scored like generated ones: what a new member of the data distribution
/// gets.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReferenceScores {
    /// The classifier's accuracy on them (= their label preservation; None with a single class).
    pub label_preservation: Option<f64>,
    /// The classifier's accuracy on its training images each moved by one pixel
    /// ([`moved_one_pixel`]): the label preservation of a plain 1-pixel move under this judge
    /// (None with a single class or images of no known shape).
    pub moved_one_pixel_label_preservation: Option<f64>,
    /// Median novelty: 1 by construction.
    pub novelty_median: f64,
    /// Mean novelty (about 1 when the distances are not skewed).
    pub novelty_mean: f64,
    /// Mean over classes of their diversity ratio.
    pub diversity: Option<f64>,
}

/// Everything the quality metrics say, for `report.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QualityReport {
    /// Where the reference images come from.
    pub reference: ReferenceKind,
    /// How many images of each kind were used.
    pub counts: Counts,
    /// None with a single class (no classifier to train).
    pub label_preservation: Option<LabelPreservation>,
    /// The classifier's accuracy on the reference images (None with a single class).
    pub classifier_test_accuracy: Option<f64>,
    /// None with a single class.
    pub classifier: Option<ClassifierSummary>,
    /// Nearest-neighbour distances to the real images.
    pub novelty: Novelty,
    /// Pairwise distances within each class.
    pub diversity: Diversity,
    /// The reference images' own scores.
    pub reference_scores: ReferenceScores,
    /// Seconds spent on all of it.
    pub seconds: f64,
}

/// The q-quantile (linear interpolation) of sorted values; NaN when empty.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let at = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
    sorted[lo] + (at - lo as f64) * (sorted[hi] - sorted[lo])
}

fn novelty_stats(values: &[f64]) -> NoveltyStats {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = values.len().max(1) as f64;
    NoveltyStats {
        count: values.len(),
        mean: values.iter().sum::<f64>() / n,
        median: quantile(&sorted, 0.5),
        quantiles: Quantiles {
            q10: quantile(&sorted, 0.1),
            q50: quantile(&sorted, 0.5),
            q90: quantile(&sorted, 0.9),
        },
        near_copy_fraction: values.iter().filter(|&&v| v < NEAR_COPY_NOVELTY).count() as f64 / n,
    }
}

fn mean_of(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, count) = values.fold((0.0, 0usize), |(s, c), v| (s + v, c + 1));
    (count > 0).then(|| sum / count as f64)
}

/// Mean pairwise distance of at most [`MAX_DIVERSITY_IMAGES`] of `rows` of `set`.
fn subsampled_spread(set: &LabelledImages, rows: &[usize], seed: u64, part: u32) -> Option<f64> {
    let picked = seeded_sample(rows.len(), MAX_DIVERSITY_IMAGES, seed, 2, part);
    let rows: Vec<usize> = picked.iter().map(|&i| rows[i]).collect();
    mean_pairwise_distance(&set.subset(&rows).values, set.d)
}

/// Checks that `set` matches the training images in dimension and classes.
fn check_against_train(
    set: &LabelledImages,
    what: &'static str,
    classes: &[u32],
    d: usize,
) -> Result<()> {
    if set.d != d {
        return Err(Error::usage(
            what,
            format!("images have {} values, the training images {d}", set.d),
        ));
    }
    if let Some(bad) = set
        .labels
        .iter()
        .find(|l| classes.binary_search(l).is_err())
    {
        return Err(Error::usage(
            what,
            format!("label {bad} is not among the training classes {classes:?}"),
        ));
    }
    Ok(())
}

/// Whether `predicted` equals `labels`, over all images or those labelled `only`; None for none.
fn hit_rate(predicted: &[u32], labels: &[u32], only: Option<u32>) -> Option<f64> {
    let (mut hits, mut count) = (0usize, 0usize);
    for (p, l) in predicted.iter().zip(labels) {
        if only.is_none_or(|c| c == *l) {
            count += 1;
            hits += usize::from(p == l);
        }
    }
    (count > 0).then(|| hits as f64 / count as f64)
}

/// The moves of [`moved_one_pixel`], (rows, columns): right, left, down, up.
pub const ONE_PIXEL_MOVES: [(isize, isize); 4] = [(0, 1), (0, -1), (1, 0), (-1, 0)];

/// `images` (rows of h × w) each moved by one pixel, image i by [`ONE_PIXEL_MOVES`]`[i % 4]`,
/// the edge row or column repeated into the pixels left empty (so that a bright background
/// stays bright).
pub fn moved_one_pixel(images: &[f32], (height, width): (usize, usize)) -> Vec<f32> {
    let d = height * width;
    let clamp = |v: isize, n: usize| v.clamp(0, n as isize - 1) as usize;
    images
        .chunks_exact(d.max(1))
        .enumerate()
        .flat_map(|(i, image)| {
            let (dr, dc) = ONE_PIXEL_MOVES[i % 4];
            (0..d).map(move |j| {
                let (r, c) = ((j / width) as isize, (j % width) as isize);
                image[clamp(r - dr, height) * width + clamp(c - dc, width)]
            })
        })
        .collect()
}

/// `model`'s accuracy on `train`'s images each moved by one pixel ([`moved_one_pixel`]), a
/// block of images at a time (no second copy of the training set); None for none.
fn moved_hit_rate(model: &Softmax, train: &LabelledImages, shape: (usize, usize)) -> Option<f64> {
    // A multiple of 4: each image keeps its move (its index mod 4) within its block.
    const BLOCK: usize = 1024;
    let d = shape.0 * shape.1;
    let (mut hits, mut count) = (0usize, 0usize);
    for (b, block) in train.values.chunks(BLOCK * d).enumerate() {
        let moved = moved_one_pixel(block, shape);
        let labels = &train.labels[b * BLOCK..b * BLOCK + block.len() / d];
        let predicted = model.predict(&moved);
        hits += predicted.iter().zip(labels).filter(|(p, l)| p == l).count();
        count += labels.len();
    }
    (count > 0).then(|| hits as f64 / count as f64)
}

/// Label preservation, the classifier's reference accuracy and its summary.
fn label_scores(
    model: &Softmax,
    train: &LabelledImages,
    reference: &LabelledImages,
    generated: &LabelledImages,
    generated_classes: &[u32],
    settings: TrainSettings,
    seconds: f64,
) -> (LabelPreservation, f64, ClassifierSummary) {
    let reference_predicted = model.predict(&reference.values);
    let generated_predicted = model.predict(&generated.values);
    let accuracy = hit_rate(&reference_predicted, &reference.labels, None).unwrap_or(f64::NAN);
    let preservation = LabelPreservation {
        overall: hit_rate(&generated_predicted, &generated.labels, None).unwrap_or(f64::NAN),
        per_class: generated_classes
            .iter()
            .map(|&c| ClassLabelPreservation {
                label: c,
                generated: generated.labels.iter().filter(|&&l| l == c).count(),
                preserved: hit_rate(&generated_predicted, &generated.labels, Some(c))
                    .unwrap_or(f64::NAN),
                classifier_test_accuracy: hit_rate(
                    &reference_predicted,
                    &reference.labels,
                    Some(c),
                ),
            })
            .collect(),
    };
    let summary = ClassifierSummary {
        model: "softmax regression (multinomial logistic regression) with bias and L2 penalty, \
                trained full-batch by L-BFGS",
        settings,
        iterations: model.iterations,
        loss: model.loss,
        train_accuracy: model.accuracy(&train.values, &train.labels),
        seconds,
    };
    (preservation, accuracy, summary)
}

/// Novelty of the generated images, per class and overall, in units of the reference images'
/// median nearest-training-image distance; and the reference images' own. `None` when stopped.
fn novelty(
    inputs: &QualityInputs,
    generated_classes: &[u32],
    stop: Stop,
) -> Result<Option<(Novelty, NoveltyStats)>> {
    let QualityInputs {
        train,
        reference,
        generated,
        ..
    } = inputs;
    let d = train.d;
    let Some(reference_nn) = nearest_neighbours(&reference.values, &train.values, d, stop) else {
        return Ok(None);
    };
    let Some(generated_nn) = nearest_neighbours(&generated.values, &train.values, d, stop) else {
        return Ok(None);
    };
    let mut reference_distances: Vec<f64> = reference_nn.iter().map(|&(v, _)| v).collect();
    reference_distances.sort_by(f64::total_cmp);
    let unit = quantile(&reference_distances, 0.5);
    if unit.is_nan() || unit <= 0.0 {
        return Err(Error::usage(
            "reference images",
            "their median distance to the nearest training image is 0 (copies of training \
             images): novelty has no unit",
        ));
    }
    let novelty: Vec<f64> = generated_nn.iter().map(|&(v, _)| v / unit).collect();
    let reference_novelty: Vec<f64> = reference_nn.iter().map(|&(v, _)| v / unit).collect();
    let per_class = generated_classes
        .iter()
        .map(|&c| {
            let values: Vec<f64> = generated
                .rows_of(c)
                .into_iter()
                .map(|i| novelty[i])
                .collect();
            ClassNovelty {
                label: c,
                stats: novelty_stats(&values),
            }
        })
        .collect();
    let novelty = Novelty {
        overall: novelty_stats(&novelty),
        near_copy_threshold: NEAR_COPY_NOVELTY,
        reference_median_distance: unit,
        per_class,
    };
    Ok(Some((novelty, novelty_stats(&reference_novelty))))
}

/// Diversity of the generated images per class, against the class's training images; and the
/// reference images' mean ratio.
fn diversity(
    inputs: &QualityInputs,
    classes: &[u32],
    generated_classes: &[u32],
) -> (Diversity, Option<f64>) {
    let QualityInputs {
        train,
        reference,
        generated,
        ..
    } = inputs;
    // Diversity.
    let mut per_class = Vec::new();
    let mut reference_ratios = Vec::new();
    for &c in generated_classes {
        let k = classes.binary_search(&c).unwrap_or(0) as u32;
        let real = subsampled_spread(train, &train.rows_of(c), inputs.seed, 3 * k);
        let rows = generated.rows_of(c);
        let spread = subsampled_spread(generated, &rows, inputs.seed, 3 * k + 1);
        let reference_spread =
            subsampled_spread(reference, &reference.rows_of(c), inputs.seed, 3 * k + 2);
        let ratio = |v: Option<f64>| match (v, real) {
            (Some(v), Some(r)) if r > 0.0 => Some(v / r),
            _ => None,
        };
        if let Some(r) = ratio(reference_spread) {
            reference_ratios.push(r);
        }
        per_class.push(ClassDiversity {
            label: c,
            generated: rows.len(),
            ratio: ratio(spread),
            generated_mean_distance: spread,
            train_mean_distance: real,
            reference_ratio: ratio(reference_spread),
        });
    }
    let diversity = Diversity {
        mean: mean_of(per_class.iter().filter_map(|c| c.ratio)),
        max_images_per_side: MAX_DIVERSITY_IMAGES,
        per_class,
    };
    (diversity, mean_of(reference_ratios.into_iter()))
}

/// Computes every metric. `None` when `stop` asked to stop midway.
///
/// # Errors
/// A usage error when there are no generated or no reference images, no
/// training images, or a set whose dimension or labels do not match the training images. With a
/// single class there is no classifier: label preservation is None, the rest is computed.
pub fn evaluate(inputs: &QualityInputs, stop: Stop) -> Result<Option<QualityReport>> {
    let started = Instant::now();
    let QualityInputs {
        train,
        reference,
        generated,
        ..
    } = inputs;
    let d = train.d;
    let classes = train.classes();
    check_against_train(generated, "generated images", &classes, d)?;
    check_against_train(reference, "reference images", &classes, d)?;
    if train.n() == 0 {
        return Err(Error::usage("training images", "there are none"));
    }
    if generated.n() == 0 {
        return Err(Error::usage("generated images", "there are none to judge"));
    }
    if reference.n() == 0 {
        return Err(Error::usage(
            "reference images",
            "there are no real images outside the training set to calibrate the metrics",
        ));
    }

    // Label preservation (needs two classes or more to mean anything).
    let training = Instant::now();
    let model = if classes.len() >= 2 {
        let model =
            classifier::train_until(&train.values, &train.labels, d, &inputs.classifier, stop)?;
        let Some(model) = model else {
            return Ok(None);
        };
        Some(model)
    } else {
        None
    };
    let classifier_seconds = training.elapsed().as_secs_f64();
    let generated_classes = generated.classes();
    let moved = match (model.as_ref(), inputs.shape) {
        (Some(model), Some((h, w))) if h * w == d && h >= 2 && w >= 2 => {
            moved_hit_rate(model, train, (h, w))
        }
        _ => None,
    };
    let labels = model.as_ref().map(|model| {
        label_scores(
            model,
            train,
            reference,
            generated,
            &generated_classes,
            inputs.classifier,
            classifier_seconds,
        )
    });
    let (label_preservation, classifier_test_accuracy, classifier) = match labels {
        Some((preservation, accuracy, summary)) => {
            (Some(preservation), Some(accuracy), Some(summary))
        }
        None => (None, None, None),
    };

    let Some((novelty, reference_novelty)) = novelty(inputs, &generated_classes, stop)? else {
        return Ok(None);
    };
    if stop() {
        return Ok(None);
    }
    let (diversity, reference_diversity) = diversity(inputs, &classes, &generated_classes);
    Ok(Some(QualityReport {
        reference: inputs.reference_kind,
        counts: Counts {
            train: train.n(),
            reference: reference.n(),
            generated: generated.n(),
            classes: classes.len(),
        },
        label_preservation,
        classifier_test_accuracy,
        classifier,
        novelty,
        diversity,
        reference_scores: ReferenceScores {
            label_preservation: classifier_test_accuracy,
            moved_one_pixel_label_preservation: moved,
            novelty_median: reference_novelty.median,
            novelty_mean: reference_novelty.mean,
            diversity: reference_diversity,
        },
        seconds: started.elapsed().as_secs_f64(),
    }))
}

impl QualityReport {
    /// One line for a command's closing summary.
    pub fn summary_line(&self) -> String {
        let reference = match self.reference {
            ReferenceKind::TestSplit => "real test",
            ReferenceKind::HeldOut => "real held-out",
        };
        let diversity = self
            .diversity
            .mean
            .map_or("n/a".to_string(), |v| format!("{v:.2}"));
        let moved = self
            .reference_scores
            .moved_one_pixel_label_preservation
            .map_or(String::new(), |m| {
                format!(", on its training images moved one pixel {:.1}%", 100.0 * m)
            });
        let labels = match (&self.label_preservation, self.classifier_test_accuracy) {
            (Some(p), Some(a)) => format!(
                "label preservation {:.1}% (classifier on {reference} {:.1}%{moved})",
                100.0 * p.overall,
                100.0 * a
            ),
            _ => "label preservation n/a (one class)".to_string(),
        };
        format!(
            "quality: {labels}, novelty {:.2} (median; {:.1}% near copies), diversity {diversity}",
            self.novelty.overall.median,
            100.0 * self.novelty.overall.near_copy_fraction,
        )
    }
}
