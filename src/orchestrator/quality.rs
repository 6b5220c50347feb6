//! The quality metrics of generated images run against the real data, with progress and a stop: the reference chosen (the test split beside the data, else a held-out part).

use std::path::Path;

use super::observer::{Notice, Observer, Phase};
use crate::diagnostics::quality::{
    choose_reference, evaluate, load_test_split, LabelledImages, QualityInputs, QualityReport,
    TestSplit, TrainSettings,
};
use crate::io::Dataset;
use crate::{Error, Result};

/// The metrics of `generated` (0..1 scale) against the real `train` images (one class set, any
/// storage). The reference is the labelled test split of the folder `data` (its first
/// `test_limit` images), else a seeded 10% of `train` held out. `None` when stopped.
pub fn judge(
    data: Option<&Path>,
    train: &Dataset,
    test_limit: Option<usize>,
    generated: &LabelledImages,
    seed: u64,
    observer: &dyn Observer,
) -> Result<Option<QualityReport>> {
    let train_images = LabelledImages::from_dataset(train, train.full_scale)?;
    let test = match test_limit {
        Some(0) => return Err(Error::usage("test_limit", "must be at least 1")),
        _ => load_test(data, train, test_limit, observer)?,
    };
    let (train_images, reference, reference_kind) = choose_reference(train_images, test, seed);
    observer.phase_start(&Phase {
        name: "sample quality",
        len: None,
        unit: "",
    });
    let report = evaluate(
        &QualityInputs {
            train: &train_images,
            reference: &reference,
            reference_kind,
            generated,
            seed,
            classifier: TrainSettings::default(),
            shape: Some((train.height, train.width)),
        },
        &|| observer.stop_requested(),
    );
    observer.phase_finish();
    report
}

/// The labelled test split beside `data` as `load_test_split` reads it; `None` (with a notice
/// when one exists but cannot serve) when there is none to use.
fn load_test(
    data: Option<&Path>,
    train: &Dataset,
    limit: Option<usize>,
    observer: &dyn Observer,
) -> Result<Option<LabelledImages>> {
    Ok(match load_test_split(data, train, limit)? {
        TestSplit::Absent => None,
        TestSplit::Unusable { source, problem } => {
            observer.notice(&Notice::TestSplitUnusable { source, problem });
            None
        }
        TestSplit::Usable(images) => Some(images),
    })
}
