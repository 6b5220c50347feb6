//! The images a quality judgement reads: generated images with their labels, checked against the training set, and the test split beside the training images.

use std::path::{Path, PathBuf};

use super::LabelledImages;
use crate::io::{Dataset, Pixels};
use crate::{Error, Result};

/// Float images above this maximum cannot be on the 0..1 scale assumed for them.
const FLOAT_SCALE_SLACK: f32 = 2.0;

/// Where generated images and their labels are, and their full scale.
#[derive(Clone, Copy, Debug)]
pub struct GeneratedImages<'a> {
    /// The images: IDX, or an NPY of shape (N, d) or (N, h, w), uint8 or float.
    pub path: &'a Path,
    /// Their labels; `None`: the IDX labels file beside them.
    pub labels: Option<&'a Path>,
    /// The value of a full-intensity pixel; `None`: 255 for uint8, 1 for float.
    pub scale: Option<f32>,
}

/// The labelled test split beside the training images, when there is one.
#[derive(Clone, Debug)]
pub enum TestSplit {
    /// No folder of training images, or no test split in it.
    Absent,
    /// A test split that cannot serve as the reference.
    Unusable {
        /// Its images.
        source: PathBuf,
        /// What is wrong with it ("has no labels", ...).
        problem: String,
    },
    /// Its images on the 0..1 scale.
    Usable(LabelledImages),
}

/// The generated images on the 0..1 scale with their labels, checked against the training set
/// (its dimension, its classes `train_classes`) and kept to `classes`. Errors name the file, or the
/// setting (`generated_labels`, `generated_scale`) that would mend it.
pub fn load_generated(
    images: &GeneratedImages,
    train: &Dataset,
    train_classes: &[u32],
    classes: &[u32],
) -> Result<LabelledImages> {
    let path = images.path;
    let mut generated = Dataset::load(path)?;
    if let Some(labels) = images.labels {
        generated = generated.with_labels_file(labels)?;
    }
    let labels_name = images.labels.unwrap_or(path).to_path_buf();
    if generated.labels.is_none() {
        return Err(Error::usage(
            "generated_labels",
            format!(
                "{} has no labels file beside it: name the labels with `generated_labels`",
                path.display()
            ),
        ));
    }
    if generated.d != train.d {
        return Err(Error::input(
            path,
            format!(
                "images have {} values ({}×{}), but the training images {} have {} ({}×{})",
                generated.d,
                generated.height,
                generated.width,
                train.source.display(),
                train.d,
                train.height,
                train.width
            ),
        ));
    }
    let scale = match (images.scale, &generated.pixels) {
        (Some(s), _) if !(s.is_finite() && s > 0.0) => {
            return Err(Error::usage(
                "generated_scale",
                format!("must be a positive number, got {s}"),
            ))
        }
        (Some(s), _) => s,
        (None, Pixels::U8(_)) => 255.0,
        (None, Pixels::F32(v)) => {
            let max = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            if max > FLOAT_SCALE_SLACK {
                return Err(Error::input(
                    path,
                    format!(
                        "float images reach {max}, far above the 0..1 scale assumed for them: \
                         pass `generated_scale` with their full scale (e.g. 255)"
                    ),
                ));
            }
            1.0
        }
    };
    refuse_values_off_scale(path, &generated.pixels, scale, images.scale.is_some())?;
    let all = LabelledImages::from_dataset(&generated, scale)?;
    if let Some((i, bad)) = all
        .labels
        .iter()
        .enumerate()
        .find(|(_, l)| train_classes.binary_search(l).is_err())
    {
        return Err(Error::input(
            &labels_name,
            format!("label {bad} (image {i}) is not among the training classes {train_classes:?}"),
        ));
    }
    let kept = all.of_classes(classes);
    if kept.n() == 0 {
        return Err(Error::input(
            &labels_name,
            format!("no generated image is of the chosen classes {classes:?}"),
        ));
    }
    Ok(kept)
}

/// Refuses images whose values do not sit on `scale` (their full intensity): a value below 0
/// (images normalised to [−1, 1], or standardised) or, for a `given` scale, far above it (8-bit
/// pixels judged at scale 16). Judged as they are, their metrics would be off without a word.
fn refuse_values_off_scale(path: &Path, pixels: &Pixels, scale: f32, given: bool) -> Result<()> {
    let (least, most) = match pixels {
        Pixels::U8(v) => (0.0, v.iter().copied().max().unwrap_or(0) as f32),
        Pixels::F32(v) => v
            .iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            }),
    };
    // Smoothing and interpolation leave values a rounding below 0: a hundredth of the scale.
    if least < -0.01 * scale {
        return Err(Error::input(
            path,
            format!(
                "images hold {least}, below 0: their values must run from 0 to their full \
                 intensity (`generated_scale`, {scale} here); map images normalised to [-1, 1] \
                 or standardised back to that range first"
            ),
        ));
    }
    if given && most > FLOAT_SCALE_SLACK * scale {
        return Err(Error::input(
            path,
            format!(
                "images reach {most}, far above the `generated_scale` of {scale} given for \
                 them: give their full intensity (e.g. 255 for 8-bit pixels)"
            ),
        ));
    }
    Ok(())
}

/// The labelled test split beside `data` (a folder) with the training images' dimension, as
/// 0..1 images of its first `limit` rows.
pub fn load_test_split(
    data: Option<&Path>,
    train: &Dataset,
    limit: Option<usize>,
) -> Result<TestSplit> {
    let Some(dir) = data else {
        return Ok(TestSplit::Absent);
    };
    let Some(test) = Dataset::load_test_split(dir)? else {
        return Ok(TestSplit::Absent);
    };
    if test.labels.is_none() || test.d != train.d {
        return Ok(TestSplit::Unusable {
            source: test.source.clone(),
            problem: if test.labels.is_none() {
                "has no labels".to_string()
            } else {
                format!("has images of {} values, not {}", test.d, train.d)
            },
        });
    }
    let test = match limit {
        Some(n) if n < test.n => test.try_subset(&(0..n).collect::<Vec<_>>())?,
        _ => test,
    };
    LabelledImages::from_dataset(&test, test.full_scale).map(TestSplit::Usable)
}
