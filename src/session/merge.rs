//! `rmld merge`: the shard folders of one run read back and checked, then joined by the command that wrote them.

use std::path::{Path, PathBuf};

use crate::io::shards::{self, MANIFEST};
use crate::io::{write_json_atomic, Output};
use crate::orchestrator::resume::{left_by_a_run, Left};
use crate::session::Outcome;
use crate::{Error, Result};

/// Merges the shard folders `dirs` (in any order) into `out`: checks that they are every shard
/// of one run (one configuration and seed, each part exactly once, every file as its manifest
/// says), then writes the files the single run writes. Nothing is written when a check fails;
/// files of those names already in `out` are replaced only with `force` (as a single run's).
///
/// The merged report.json equals the single run's except for timings, `backend` (the first
/// shard's machine) and, for augment, `estimate` (a whole run leaves out what its code cache
/// holds), `code_cache` and `lasso` (how this process encoded: a merge encodes nothing).
pub fn merge(out: &Path, dirs: &[PathBuf], force: bool) -> Result<Outcome> {
    refuse_stopped_shards(dirs)?;
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
    let mut output = Output::check(out, outputs, &[], force)?;
    // A manifest left by a shard run here must not vouch for the merged files.
    output.also_replace(&[MANIFEST]);
    let recovery = output.recovery();
    let recovered = (recovery.completed.is_some() || !recovery.removed.is_empty()).then(|| {
        let notice = crate::session::Notice::StoppedRunFound {
            out: out.to_path_buf(),
            completed: recovery.completed.clone(),
            removed: recovery.removed.clone(),
            resumed: None,
        };
        format!("rmld merge: {notice}")
    });
    let mut outcome = match command {
        "encode" => crate::session::encode::merge_shards(&mut output, &shards),
        "sample" => crate::session::sample::merge_shards(&mut output, &shards),
        "augment" => crate::session::augment::merge_shards(output, &shards),
        other => Err(Error::input(
            shards[0].dir.join(MANIFEST),
            format!("shards of `{other}` cannot be merged by this rmld"),
        )),
    }?;
    outcome.summary.extend(recovered);
    Ok(outcome)
}

/// [`merge`], then the merged report's `dataset.source` set to `source` (written again,
/// atomically): for shards that read their data from a file standing in for it, which the
/// caller removes after the merge (the distributed front end's copy of an array, named
/// [`ARRAY_SOURCE`](crate::io::ARRAY_SOURCE) as in a single run's report).
pub fn merge_naming_data(
    out: &Path,
    dirs: &[PathBuf],
    force: bool,
    source: &str,
) -> Result<Outcome> {
    let mut outcome = merge(out, dirs, force)?;
    if let Some(dataset) = outcome.report.get_mut("dataset") {
        dataset["source"] = source.into();
        write_json_atomic(&out.join("report.json"), &outcome.report)?;
    }
    Ok(outcome)
}

/// A shard that was stopped (Ctrl-C, or killed after a checkpoint) has no manifest yet: it is
/// named with what finishes it, rather than as a folder that is not a shard's.
fn refuse_stopped_shards(dirs: &[PathBuf]) -> Result<()> {
    for dir in dirs {
        if dir.join(MANIFEST).symlink_metadata().is_ok() {
            continue;
        }
        if !matches!(left_by_a_run(dir), Left::Nothing) {
            return Err(Error::input(
                dir,
                format!(
                    "holds a stopped run, not a finished shard: finish it with `rmld resume {}`, \
                     then merge",
                    dir.display()
                ),
            ));
        }
    }
    Ok(())
}
