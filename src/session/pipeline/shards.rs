//! How a run's work is split: the whole run, shard i of N (its part of every stage's units, saved with its trace and manifest), or the merge that joins the shards' parts and runs the rest as the whole run does.

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::io::shards::{self, Part, Shard, ShardFiles, MANIFEST};
use crate::orchestrator::{Checkpoint, SampleRun};
use crate::session::problem::Problem;
use crate::session::Outcome;
use crate::{Error, Result};

/// A shard's chains' finished run (a checkpoint of it, with the configuration), which the
/// merge joins.
pub const TRACE: &str = "trace.rmld";

/// How a run's work is split.
#[derive(Clone, Copy)]
pub(crate) enum Split<'a> {
    /// The whole run.
    Whole,
    /// Shard `i/N`: its part of the chains and of every encoding.
    Shard(Shard),
    /// The merge of these shards (checked, in order): their parts joined, nothing computed
    /// that a shard computed.
    Merge(&'a [ShardFiles]),
}

impl Split<'_> {
    /// The split a run's `shard` setting asks for.
    pub fn of(shard: Option<Shard>) -> Split<'static> {
        shard.map_or(Split::Whole, Split::Shard)
    }

    /// This run's part of `total` units: all of them but in a shard.
    pub fn part(&self, total: usize) -> Range<usize> {
        match self {
            Split::Shard(shard) => shard.range(total),
            _ => 0..total,
        }
    }

    /// This run's part of `total` chains: a shard's must hold one (an error naming `shard`).
    pub fn chains(&self, total: usize) -> Result<Range<usize>> {
        let range = self.part(total);
        match self {
            Split::Shard(shard) if range.is_empty() => Err(Error::usage(
                "shard",
                format!(
                    "{shard}: shard {} of {} holds none of the run's {total} chains (split the \
                     chains into at most {total} shards)",
                    shard.index, shard.count
                ),
            )),
            _ => Ok(range),
        }
    }
}

/// What a shard saves for the merge besides its part of the outputs.
pub(crate) struct ShardEnd<'a> {
    /// The command (`sample`, `augment`).
    pub command: &'a str,
    /// The shard's settings as given (the trace's configuration).
    pub config: Value,
    /// The configuration's hash ([`configuration`]).
    pub configuration: String,
    /// The data's and the dictionary's hashes.
    pub hashes: (u64, u64),
    /// d and p.
    pub shape: (usize, usize),
    /// The seed.
    pub seed: u64,
}

/// Ends shard `shard`, whose chains `chains` of `total` ran `run` to `positions`: writes its
/// trace, then the manifest of `names` (the trace and the manifest aside) in `out`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn finish_shard(
    out: &Path,
    end: ShardEnd,
    shard: Shard,
    (chains, total): (Range<usize>, usize),
    run: &SampleRun,
    positions: Vec<f32>,
    names: &[&str],
) -> Result<()> {
    let trace = Checkpoint {
        config: end.config,
        data_hash: end.hashes.0,
        dictionary_hash: end.hashes.1,
        d: end.shape.0,
        p: end.shape.1,
        positions,
        run: run.clone(),
    };
    trace.write(&out.join(TRACE))?;
    let mut files = names.to_vec();
    files.push(TRACE);
    shards::write_manifest(
        out,
        end.command,
        end.configuration,
        end.seed,
        shard,
        Part {
            unit: "chains".into(),
            start: chains.start,
            end: chains.end,
            total,
        },
        &files,
    )?;
    Ok(())
}

/// A shard's configuration hash: its settings `hashed` (the output folder and the shard
/// cleared by the caller), the device that ran it (report.json's `backend`: `auto` may pick the
/// CPU on one node and a GPU on another, and two GPU adapters round differently) and the
/// data's and dictionary's hashes.
pub(crate) fn configuration(hashed: &impl Serialize, info: &Value, hashes: (u64, u64)) -> String {
    shards::configuration_hash(&(hashed, shards::device_key(info)), hashes.0, hashes.1)
}

/// Shard `s`'s trace.
pub(crate) fn trace(s: &ShardFiles) -> Result<Checkpoint> {
    s.file(TRACE)?;
    Checkpoint::read(&s.dir.join(TRACE))
}

/// The settings the shards ran with (the first one's trace), for a merge into `out`.
pub(crate) fn merged_settings<T: DeserializeOwned>(
    first: &ShardFiles,
    trace: &Checkpoint,
) -> Result<T> {
    serde_json::from_value(trace.config.clone()).map_err(|e| {
        Error::input(
            first.dir.join(TRACE),
            format!("the shard's configuration is not one this rmld reads: {e}"),
        )
    })
}

/// Checks that a merge reads the data and dictionary the shards sampled (`trace`, the first
/// shard's).
pub(crate) fn check_inputs(
    first: &ShardFiles,
    trace: &Checkpoint,
    hashes: (u64, u64),
    problem: &Problem,
) -> Result<()> {
    if hashes != (trace.data_hash, trace.dictionary_hash) {
        return Err(Error::input(
            first.dir.join(TRACE),
            format!(
                "the shards sampled other data or another dictionary than {} and {} hold now \
                 (their hashes differ): merge where the shards' inputs are readable unchanged",
                problem.dataset.source.display(),
                problem.dictionary_source
            ),
        ));
    }
    Ok(())
}

/// The whole run's run joined from the shards' traces (each shard's chains, the same
/// iterations).
pub(crate) fn joined_run(shards: &[ShardFiles], runs: &[SampleRun]) -> Result<SampleRun> {
    let chains: Vec<usize> = shards
        .iter()
        .map(|s| s.manifest.part.end - s.manifest.part.start)
        .collect();
    crate::orchestrator::join::join_runs(runs, &chains, &|k| {
        let s = &shards[k];
        Error::input(
            s.dir.join(MANIFEST),
            format!(
                "shard {}'s trace does not fit its {} chains or the other shards' iterations",
                s.manifest.shard, chains[k]
            ),
        )
    })
}

/// The rows of the matrix `name` that the shards saved (`width` values each, every shard its
/// part of `total` rows), in order, handed to `sink` shard by shard.
pub(crate) fn join_rows(
    shards: &[ShardFiles],
    name: &str,
    (total, width): (usize, usize),
    sink: &mut dyn FnMut(&[f32]) -> Result<()>,
) -> Result<()> {
    for s in shards {
        let rows = s.manifest.shard.range(total).len();
        let (shape, values) = s.npy_f32(name)?;
        if shape != [rows, width] {
            return Err(Error::input(
                s.dir.join(name),
                format!(
                    "shard {}: shape {shape:?}, expected [{rows}, {width}]",
                    s.manifest.shard
                ),
            ));
        }
        sink(&values)?;
    }
    Ok(())
}

/// Merges the shard folders `dirs` (in any order) into `out`: checks that they are every shard
/// of one run (one configuration and seed, each part exactly once, every file as its manifest
/// says), then writes the files the single run writes. Nothing is written when a check fails;
/// files of those names already in `out` are replaced only with `force` (as a single run's).
///
/// The merged report.json equals the single run's except for timings, `backend` (the first
/// shard's machine) and, for augment, `code_cache` and `lasso` (how this process encoded: a
/// merge encodes nothing).
pub fn merge(out: &Path, dirs: &[PathBuf], force: bool) -> Result<Outcome> {
    let shards = shards::read_shards(dirs)?;
    if let Ok(resolved) = out.canonicalize() {
        if dirs
            .iter()
            .any(|d| d.canonicalize().is_ok_and(|d| d == resolved))
        {
            return Err(Error::usage(
                "out",
                format!(
                    "{} is one of the shards' folders: merge into another folder",
                    out.display()
                ),
            ));
        }
    }
    use crate::session::outputs;
    // Like the single run, the merge replaces files already in `out` only when asked to.
    let command = shards[0].manifest.command.as_str();
    let outputs = match command {
        "encode" => outputs::ENCODE_OUTPUTS,
        "sample" => outputs::SAMPLE_OUTPUTS,
        "augment" => outputs::AUGMENT_OUTPUTS,
        _ => &[],
    };
    outputs::check_output_folder(out, outputs, &[], force)?;
    match command {
        "encode" => crate::session::encode::merge_shards(out, &shards),
        "sample" => crate::session::sample::merge_shards(out, &shards),
        "augment" => crate::session::augment::merge_shards(out, &shards),
        other => Err(Error::input(
            shards[0].dir.join(MANIFEST),
            format!("shards of `{other}` cannot be merged by this rmld"),
        )),
    }
}
