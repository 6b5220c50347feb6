//! Labelled data for per-class runs: the labels a training set must have, the test split beside it, labels and pixels as the IDX and NPY outputs store them, and the per-class picture.

use std::path::Path;
use std::sync::Arc;

use super::{Dataset, Pixels};
use crate::{Error, Result};

/// `dataset` with the labels of the file `labels` when given, cut to its first `limit` images;
/// an error when it has no labels (the work is per class).
pub fn labelled(
    mut dataset: Arc<Dataset>,
    labels: Option<&Path>,
    limit: Option<usize>,
) -> Result<Arc<Dataset>> {
    if let Some(path) = labels {
        dataset = Arc::new(Arc::unwrap_or_clone(dataset).with_labels_file(path)?);
    }
    if dataset.labels.is_none() {
        return Err(Error::input(
            &dataset.source,
            "has no labels, and augmentation is per class: put the labels file beside the \
             images (…-labels-idx1-ubyte[.gz]) or name it with `labels`",
        ));
    }
    match limit {
        Some(0) => Err(Error::usage("limit", "must be at least 1")),
        Some(n) if n < dataset.n => dataset
            .try_subset(&(0..n).collect::<Vec<_>>())
            .map(Arc::new),
        _ => Ok(dataset),
    }
}

/// Refuses `test_limit` where it would cut nothing: `data` has no test split beside it (the
/// embedded digits, a file, a folder without t10k files), so the quality metrics' reference is
/// a held-out part of the training images; or nothing reads the test split (`used` false: no
/// quality metrics and no test codes).
pub fn refuse_unused_test_limit(
    data: Option<&Path>,
    test_limit: Option<usize>,
    used: bool,
) -> Result<()> {
    if test_limit.is_none() {
        return Ok(());
    }
    if !used {
        return Err(Error::usage(
            "test_limit",
            "cuts the test split, which this run does not read (it computes no quality metrics \
             and no test codes): leave it out",
        ));
    }
    let split = match data.filter(|d| d.is_dir()) {
        Some(dir) => super::discover::find_split(dir, super::discover::Split::Test)?,
        None => None,
    };
    if split.is_none() {
        let source = data.map_or("the embedded digits".into(), |d| d.display().to_string());
        return Err(Error::usage(
            "test_limit",
            format!(
                "there is no test split beside {source} (t10k-images-idx3-ubyte[.gz] or \
                 *-test-images-idx3-ubyte[.gz]), so no test image to cut: the quality metrics' \
                 reference is a held-out part of the training images; leave it out"
            ),
        ));
    }
    Ok(())
}

/// The labelled test split in the folder `dir` (the training data's), with `train`'s image
/// size, cut to its first `limit` images.
pub fn test_split(dir: Option<&Path>, train: &Dataset, limit: Option<usize>) -> Result<Dataset> {
    let dir = dir.ok_or_else(|| {
        Error::usage(
            "encode_test",
            "needs `data` naming a folder with a test split",
        )
    })?;
    let test = Dataset::load_test_split(dir)?.ok_or_else(|| {
        Error::input(
            dir,
            "holds no test split (t10k-images-idx3-ubyte[.gz] or *-test-images-idx3-ubyte[.gz]) for `encode_test`",
        )
    })?;
    if test.d != train.d {
        return Err(Error::input(
            &test.source,
            format!(
                "images have {} values, the training images {}",
                test.d, train.d
            ),
        ));
    }
    if test.labels.is_none() {
        return Err(Error::input(&test.source, "has no labels file beside it"));
    }
    match limit {
        Some(0) => Err(Error::usage("test_limit", "must be at least 1")),
        Some(n) if n < test.n => test.try_subset(&(0..n).collect::<Vec<_>>()),
        _ => Ok(test),
    }
}

/// The images as 8-bit pixels (full scale mapped to 255).
pub fn pixels_u8(dataset: &Dataset) -> Vec<u8> {
    let full = dataset.full_scale;
    match &dataset.pixels {
        Pixels::U8(v) if full == 255.0 => v.clone(),
        Pixels::U8(v) => v
            .iter()
            .map(|&x| (x as f32 * 255.0 / full).round().clamp(0.0, 255.0) as u8)
            .collect(),
        Pixels::F32(v) => v
            .iter()
            .map(|&x| (x * 255.0 / full).round().clamp(0.0, 255.0) as u8)
            .collect(),
    }
}

/// Labels as IDX bytes; IDX labels are single bytes.
pub fn idx_labels(labels: &[u32]) -> Result<Vec<u8>> {
    labels
        .iter()
        .map(|&l| {
            u8::try_from(l).map_err(|_| {
                Error::usage(
                    "labels",
                    format!("label {l} does not fit an IDX labels file (0..=255)"),
                )
            })
        })
        .collect()
}

/// Labels as the NPY outputs store them.
pub fn labels_i64(labels: &[u32]) -> Vec<i64> {
    labels.iter().map(|&l| l as i64).collect()
}

/// A PNG of one row per class: `real` images of the class (0..255, rows of h × w; fewer leave
/// blanks), then its first generated images (0..255 bytes), `columns` in all.
pub fn write_class_grid(
    path: &Path,
    classes: &[(Vec<f32>, &[u8])],
    (h, w): (usize, usize),
    (real, columns): (usize, usize),
) -> Result<()> {
    let d = h * w;
    let mut flat = Vec::with_capacity(classes.len() * columns * d);
    for (shown, generated) in classes {
        let start = flat.len();
        flat.extend(shown.iter().take(real * d));
        flat.resize(start + real * d, 0.0);
        let room = (columns - real) * d;
        flat.extend(generated.iter().take(room).map(|&v| v as f32));
        flat.resize(start + columns * d, 0.0);
    }
    super::write_png_grid(
        path,
        &[(&flat, classes.len() * columns)],
        h,
        w,
        columns,
        (0.0, 255.0),
        (112 / h.max(w)).clamp(1, 8),
    )
}
