//! Class-conditional augmentation (`Augmenter`): chains per class in one run, their samples mixed with the originals and written as IDX, NPY and PNG.

use std::time::Instant;

use crate::io::{Output, ShardFiles, Split};
use crate::orchestrator::shard::{shard_settings, shard_trace};
use crate::Result;

use super::observer::{Observer, Silent};
use super::settings::AugmentSettings;
use super::Outcome;

/// Generates a class-conditional augmentation set into `settings.problem.out`: new samples per
/// class (one per `ratio` originals) mixed with the originals, written as MNIST-style IDX, NPY
/// codes and labels, a PNG grid per class and report.json, with the sample-quality metrics.
#[derive(Clone, Debug)]
pub struct Augmenter {
    settings: AugmentSettings,
}

impl Augmenter {
    /// An augmentation with these settings (checked when it runs).
    pub fn new(settings: AugmentSettings) -> Self {
        Augmenter { settings }
    }

    /// The settings.
    pub fn settings(&self) -> &AugmentSettings {
        &self.settings
    }

    /// Runs the whole pipeline, phase by phase ([`AUGMENT_PHASES`](crate::session::AUGMENT_PHASES),
    /// each one's time in report.json's `phase_seconds`), announcing a run estimated to take
    /// over a minute (`Notice::Estimate`). An augmentation cannot be resumed: stopped early by
    /// the observer, in any phase, it keeps no output (every data file is written in the last
    /// phase, and those already written are removed), writes a report.json that says where it
    /// stopped, and sets `interrupted`. With `problem.shard` set it runs that shard's part of
    /// the chains and of the encodings (see [`merge`](crate::session::merge), which joins the
    /// shards into this run's files).
    pub fn run(&self, observer: &dyn Observer) -> Result<Outcome> {
        self.run_with(observer, &[])
    }

    /// [`Augmenter::run`], publishing the JSON files `extra` (names in the output folder, and
    /// their values) with the outputs of a finished run: all of them or none (a training's
    /// stamp on its teacher, which says the files beside it are that teacher's).
    pub(crate) fn run_with(
        &self,
        observer: &dyn Observer,
        extra: &[(&str, &serde_json::Value)],
    ) -> Result<Outcome> {
        let problem = &self.settings.problem;
        let split = Split::of(problem.shard, problem.warm_up_only);
        super::pipeline::augment(&self.settings, observer, split, None, extra)
    }
}

/// Joins the shards of an augmentation (checked and in order) into the single run's files: the
/// configuration comes from the first shard's trace; the data, labels and dictionary are read
/// again, the samples joined in the single run's order, and the rest (post-processing, the
/// quality metrics, the picture, the report) made as the single run makes them.
pub(crate) fn merge_shards(output: Output, parts: &[ShardFiles]) -> Result<Outcome> {
    let started = Instant::now();
    let trace = shard_trace(&parts[0])?;
    let mut args: AugmentSettings = shard_settings(&parts[0], &trace)?;
    args.problem.shard = None;
    args.problem.warm_up = None;
    args.problem.out = output.dir.clone();
    let merge = Split::Merge(parts);
    let mut outcome = super::pipeline::augment(&args, &Silent, merge, Some(output), &[])?;
    outcome.summary.insert(
        0,
        format!(
            "rmld merge: {} shards of augment in {:.1} s",
            parts.len(),
            started.elapsed().as_secs_f64()
        ),
    );
    Ok(outcome)
}
