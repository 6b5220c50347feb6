//! Judging generated images (`judge_images`): label preservation, novelty and diversity against the real data (also run by the augmentation).

use std::path::PathBuf;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::diagnostics::quality::{load_generated, GeneratedImages};
use crate::io::{self, Dataset};
use crate::{Error, Result};

use super::observer::Observer;
use super::Outcome;
pub(crate) use crate::orchestrator::quality::judge;
use crate::orchestrator::report::dataset_json;

/// Settings of judging a set of generated images with labels (`judge_images`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QualitySettings {
    /// The generated images: IDX images, or an NPY of shape (N, d) or (N, h, w), uint8 or float.
    pub generated: PathBuf,
    /// Their labels (IDX, 1-D integer NPY or text); `None`: the IDX labels file beside them.
    pub generated_labels: Option<PathBuf>,
    /// The value of a full-intensity pixel in `generated`; `None`: 255 for uint8, 1 for float.
    pub generated_scale: Option<f32>,
    /// The real training images, as for an augmentation; `None`: the embedded digits. A labelled
    /// test split in the folder is the reference; without one, a seeded 10% is held out.
    pub data: Option<PathBuf>,
    /// Labels for `data` when they are not beside it.
    pub labels: Option<PathBuf>,
    /// Only these classes; `None`: every class of the training data.
    pub classes: Option<Vec<u32>>,
    /// Use only the first N training images (before `classes` filters them).
    pub limit: Option<usize>,
    /// Use only the first N test images.
    pub test_limit: Option<usize>,
    /// Seed of the held-out split and the diversity subsamples.
    pub seed: u64,
    /// Write the report (JSON) here, atomically.
    pub out: Option<PathBuf>,
    /// Replace `out` when it exists (an earlier report, or a file of yours); without it such a
    /// run is refused before any work.
    #[serde(default)]
    pub force: bool,
}

/// Judges `args.generated` against the real data: the report (also written to `args.out`), and
/// its summary lines. Stopped early, nothing is written and `interrupted` is set.
pub fn judge_images(args: &QualitySettings, observer: &dyn Observer) -> Result<Outcome> {
    let started = Instant::now();
    // The numbers first: a bad one is named before any file is read.
    if let Some(s) = args
        .generated_scale
        .filter(|s| !(s.is_finite() && *s > 0.0))
    {
        return Err(Error::usage(
            "generated_scale",
            format!("must be a positive number, got {s}"),
        ));
    }
    for (name, limit) in [("limit", args.limit), ("test_limit", args.test_limit)] {
        if limit == Some(0) {
            return Err(Error::usage(name, "must be at least 1"));
        }
    }
    crate::io::labelled::refuse_unused_test_limit(args.data.as_deref(), args.test_limit, true)?;
    if let Some(out) = &args.out {
        let inputs = [
            Some(args.generated.as_path()),
            args.generated_labels.as_deref(),
            args.data.as_deref(),
            args.labels.as_deref(),
        ];
        crate::io::output_folder::refuse_files_over_inputs(&[out], &inputs)?;
        crate::io::output_folder::refuse_existing_file(out, "quality report", args.force)?;
    }
    let mut train = Dataset::load_or_embedded(args.data.as_deref())?;
    if let Some(path) = &args.labels {
        train = train.with_labels_file(path)?;
    }
    let Some(labels) = train.labels.clone() else {
        return Err(Error::input(
            &train.source,
            "has no labels, and the quality metrics are per class: put the labels file beside \
             the images (…-labels-idx1-ubyte[.gz]) or name it with `labels`",
        ));
    };
    let mut rows: Vec<usize> = match args.limit {
        Some(0) => return Err(Error::usage("limit", "must be at least 1")),
        Some(n) => (0..n.min(train.n)).collect(),
        None => (0..train.n).collect(),
    };
    let mut classes: Vec<u32> = rows.iter().map(|&i| labels[i]).collect();
    classes.sort_unstable();
    classes.dedup();
    let train_classes = classes.clone();
    if let Some(chosen) = &args.classes {
        if let Some(bad) = chosen.iter().find(|c| classes.binary_search(c).is_err()) {
            return Err(Error::usage(
                "classes",
                format!("class {bad} has no training images (classes present: {classes:?})"),
            ));
        }
        classes.retain(|c| chosen.contains(c));
        rows.retain(|&i| chosen.contains(&labels[i]));
    }
    let train = train.try_subset(&rows)?;
    let images = GeneratedImages {
        path: &args.generated,
        labels: args.generated_labels.as_deref(),
        scale: args.generated_scale,
    };
    let generated = load_generated(&images, &train, &train_classes, &classes)?;
    let Some(report) = judge(
        args.data.as_deref(),
        &train,
        args.test_limit,
        &generated,
        args.seed,
        observer,
    )?
    else {
        return Ok(Outcome {
            interrupted: true,
            report: serde_json::Value::Null,
            summary: Vec::new(),
            draw_stats: None,
        });
    };
    let document = json!({
        "command": "quality",
        "rmld_version": env!("CARGO_PKG_VERSION"),
        "rmld_build": crate::BUILD,
        "generated": args.generated.display().to_string(),
        "generated_labels": args.generated_labels.as_ref().map(|p| p.display().to_string()),
        "dataset": dataset_json(&train),
        "seed": args.seed,
        "quality": report,
        "seconds": started.elapsed().as_secs_f64(),
    });
    if let Some(out) = &args.out {
        io::write_json_atomic(out, &document)?;
    }
    let summary = vec![
        format!(
            "rmld quality: {} generated images of {} classes against {} training and {} reference \
             images ({}) in {:.1} s",
            report.counts.generated,
            report.novelty.per_class.len(),
            report.counts.train,
            report.counts.reference,
            serde_json::to_value(report.reference)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            started.elapsed().as_secs_f64()
        ),
        report.summary_line(),
    ];
    Ok(Outcome {
        interrupted: false,
        report: document,
        summary,
        draw_stats: None,
    })
}
