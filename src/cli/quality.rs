//! `rmld quality`: label preservation, novelty and diversity of generated images against the real data (also run by `rmld augment`).

use std::path::Path;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use rmld::diagnostics::quality::{
    choose_reference, evaluate, LabelledImages, QualityInputs, QualityReport, TrainSettings,
};
use rmld::io::{self, Dataset, Pixels};
use rmld::{Error, Result};

use super::args::QualityArgs;
use super::report::dataset_json;
use super::signals::StopRequest;
use super::Finished;

/// Float images above this maximum cannot be on the 0..1 scale assumed for them.
const FLOAT_SCALE_SLACK: f32 = 2.0;

pub fn quality(args: &QualityArgs) -> Result<Finished> {
    let started = Instant::now();
    let mut train = Dataset::load_or_embedded(args.data.as_deref())?;
    if let Some(path) = &args.labels {
        train = train.with_labels_file(path)?;
    }
    let Some(labels) = train.labels.clone() else {
        return Err(Error::input(
            &train.source,
            "has no labels, and the quality metrics are per class: put the labels file beside \
             the images (…-labels-idx1-ubyte[.gz]) or name it with --labels",
        ));
    };
    let mut rows: Vec<usize> = match args.limit {
        Some(0) => return Err(Error::usage("--limit", "must be at least 1")),
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
                "--classes",
                format!("class {bad} has no training images (classes present: {classes:?})"),
            ));
        }
        classes.retain(|c| chosen.contains(c));
        rows.retain(|&i| chosen.contains(&labels[i]));
    }
    let train = train.try_subset(&rows)?;
    let generated = load_generated(args, &train, &train_classes, &classes)?;
    let stop = StopRequest::install();
    let Some(report) = judge(
        args.data.as_deref(),
        &train,
        args.test_limit,
        &generated,
        args.seed,
        &|| stop.requested(),
    )?
    else {
        eprintln!("rmld quality: interrupted; no report written");
        return Ok(Finished::Interrupted {
            status: stop.exit_status(),
        });
    };
    let document = json!({
        "command": "quality",
        "rmld_version": env!("CARGO_PKG_VERSION"),
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
    if args.json {
        let text = serde_json::to_string_pretty(&document)
            .map_err(|e| Error::Internal(format!("cannot format the report: {e}")))?;
        println!("{text}");
    } else {
        println!(
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
        );
        println!("{}", report.summary_line());
    }
    Ok(Finished::Complete)
}

/// The generated images on the 0..1 scale with their labels, checked against the training set
/// (its dimension, its classes `train_classes`) and kept to `classes`.
fn load_generated(
    args: &QualityArgs,
    train: &Dataset,
    train_classes: &[u32],
    classes: &[u32],
) -> Result<LabelledImages> {
    let path = &args.generated;
    let mut generated = Dataset::load(path)?;
    if let Some(labels) = &args.generated_labels {
        generated = generated.with_labels_file(labels)?;
    }
    let labels_name = args
        .generated_labels
        .clone()
        .unwrap_or_else(|| path.to_path_buf());
    if generated.labels.is_none() {
        return Err(Error::usage(
            "--generated-labels",
            format!(
                "{} has no labels file beside it: name the labels with --generated-labels",
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
    let scale = match (args.generated_scale, &generated.pixels) {
        (Some(s), _) if !(s.is_finite() && s > 0.0) => {
            return Err(Error::usage(
                "--generated-scale",
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
                         pass --generated-scale with their full scale (e.g. 255)"
                    ),
                ));
            }
            1.0
        }
    };
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

/// The metrics of `generated` (0..1 scale) against the real `train` images (one class set, any
/// storage). The reference is the labelled test split of the folder `data` (its first
/// `test_limit` images), else a seeded 10% of `train` held out. `None` when stopped.
pub fn judge(
    data: Option<&Path>,
    train: &Dataset,
    test_limit: Option<usize>,
    generated: &LabelledImages,
    seed: u64,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<Option<QualityReport>> {
    let train_images = LabelledImages::from_dataset(train, train.full_scale)?;
    let test = match test_limit {
        Some(0) => return Err(Error::usage("--test-limit", "must be at least 1")),
        _ => load_test(data, train, test_limit)?,
    };
    let (train_images, reference, reference_kind) = choose_reference(train_images, test, seed);
    let spinner = ProgressBar::new_spinner().with_style(
        ProgressStyle::with_template("{spinner} sample quality ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    spinner.enable_steady_tick(Duration::from_millis(200));
    let report = evaluate(
        &QualityInputs {
            train: &train_images,
            reference: &reference,
            reference_kind,
            generated,
            seed,
            classifier: TrainSettings::default(),
        },
        stop,
    );
    spinner.finish_and_clear();
    report
}

/// The labelled test split beside `data` (a folder) with the training images' dimension, as
/// 0..1 images of its first `limit` rows; `None` (with a note when one exists but cannot serve)
/// otherwise.
fn load_test(
    data: Option<&Path>,
    train: &Dataset,
    limit: Option<usize>,
) -> Result<Option<LabelledImages>> {
    let Some(dir) = data else {
        return Ok(None);
    };
    let Some(test) = Dataset::load_test_split(dir)? else {
        return Ok(None);
    };
    if test.labels.is_none() || test.d != train.d {
        eprintln!(
            "rmld: note: the test split {} {}; holding out 10% of the training images as the \
             quality reference instead",
            test.source.display(),
            if test.labels.is_none() {
                "has no labels".to_string()
            } else {
                format!("has images of {} values, not {}", test.d, train.d)
            }
        );
        return Ok(None);
    }
    let test = match limit {
        Some(n) if n < test.n => test.try_subset(&(0..n).collect::<Vec<_>>())?,
        _ => test,
    };
    LabelledImages::from_dataset(&test, test.full_scale).map(Some)
}
