//! Continuing a run from its checkpoint: the checkpoint checked against the run it continues, and the chains put back on a backend.

use std::path::Path;

use super::identity::RunIdentity;
use super::observer::{Notice, Observer};
use super::streams::{CODES, IMAGES};
use super::Checkpoint;
use crate::backend::Backend;
use crate::io::output_folder::{read_report, CHECKPOINT};
use crate::io::{self, Output};
use crate::model::Target;
use crate::{Error, Result};

/// Checks that `checkpoint` (read from `path`) continues a run of `target` (`hashes` of the
/// data and dictionary that `sources` name) with `chains` chains and `samples` outer
/// iterations: the same inputs, shapes that fit, iterations left. A checkpoint a run left
/// `staged` (killed or failed before it published) may also be complete: what is left is to
/// publish its outputs.
pub fn check_resumable(
    checkpoint: &Checkpoint,
    (path, staged): (&Path, bool),
    (target, hashes): (&Target, (u64, u64)),
    (chains, samples): (usize, u32),
    (data, dictionary): (&Path, &str),
) -> Result<()> {
    if hashes.0 != checkpoint.data_hash {
        return Err(Error::input(
            path,
            format!(
                "was made from other data than {} (the data's hash differs)",
                data.display()
            ),
        ));
    }
    if hashes.1 != checkpoint.dictionary_hash {
        return Err(Error::input(
            path,
            format!("was made with another dictionary than {dictionary} (its hash differs)"),
        ));
    }
    if checkpoint.d != target.d()
        || checkpoint.p != target.p()
        || checkpoint.positions.len() != chains * target.p()
    {
        return Err(Error::input(
            path,
            "its shapes do not match its configuration",
        ));
    }
    let done =
        checkpoint.run.completed > samples || (checkpoint.run.completed == samples && !staged);
    if done {
        return Err(Error::input(
            path,
            format!(
                "the run is already complete ({} of {samples} outer iterations)",
                checkpoint.run.completed
            ),
        ));
    }
    Ok(())
}

/// Puts the checkpoint's chains back on `backend`: their positions, the prior's state and the
/// learned noise precision.
pub fn restore(checkpoint: &Checkpoint, backend: &mut dyn Backend) -> Result<()> {
    backend.load_positions(&checkpoint.positions)?;
    if !checkpoint.run.prior_state.is_empty() {
        backend.load_prior_state(&checkpoint.run.prior_state)?;
    }
    if !checkpoint.run.noise_precision.is_empty() {
        backend.set_noise_precision(&checkpoint.run.noise_precision)?;
    }
    Ok(())
}

/// What a stopped run left in a folder for `resume` to continue.
pub enum Left {
    Nothing,
    /// A published checkpoint only.
    Checkpoint,
    /// A staging folder or a publication journal (recovery looks at them under the lock).
    Staging,
}

pub fn left_by_a_run(dir: &Path) -> Left {
    let staging =
        |name: &str| name.starts_with(io::staging::STAGING_PREFIX) || name == io::staging::JOURNAL;
    let staged = std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_str().is_some_and(staging))
    });
    match (staged, dir.join(CHECKPOINT).symlink_metadata().is_ok()) {
        (true, _) => Left::Staging,
        (false, true) => Left::Checkpoint,
        (false, false) => Left::Nothing,
    }
}

/// Checks that the outputs published beside the checkpoint `path` in `dir` are its run's: the
/// run id report.json gives (when it gives one) is the checkpoint's, else names what differs;
/// and that the run was stopped, not finished since the checkpoint.
pub fn check_report(dir: &Path, path: &Path, identity: &RunIdentity) -> Result<()> {
    let report_path = dir.join("report.json");
    let Some(report) = read_report(dir)? else {
        return Ok(());
    };
    let Some(run_id) = report["run_id"].as_str() else {
        return Ok(());
    };
    if run_id == identity.run_id {
        // The run finished after this checkpoint (one of `checkpoint_every`'s, or the one it was
        // resumed from): its outputs are whole, and going on would redo and replace them.
        if report["interrupted"].as_bool() != Some(false) {
            return Ok(());
        }
        let missing: Vec<&str> = [CODES, IMAGES]
            .into_iter()
            .filter(|name| dir.join(name).symlink_metadata().is_err())
            .collect();
        let outputs = match missing.as_slice() {
            [] => String::new(),
            names => format!(
                ", but {} missing: run `rmld sample` with its settings again (the same seed \
                 gives the same samples)",
                names.join(" and ") + if names.len() == 1 { " is" } else { " are" }
            ),
        };
        return Err(Error::input(
            path,
            format!(
                "the run is already complete ({} outer iterations, as {} says; the checkpoint \
                 is an earlier state of it){outputs}",
                report["completed_iterations"]
                    .as_u64()
                    .unwrap_or(identity.samples as u64),
                report_path.display()
            ),
        ));
    }
    let settings = &report["settings"];
    let theirs = (
        settings["dynamics"]["seed"].as_u64().unwrap_or(u64::MAX),
        settings["chains"].as_u64().unwrap_or(0) as usize,
        settings["samples"].as_u64().unwrap_or(0) as u32,
    );
    let mut differences = identity.differences(theirs);
    if differences.is_empty() {
        differences.push("the same seed, chains and outer iterations, but another run".into());
    }
    Err(Error::input(
        path,
        format!(
            "is the checkpoint of run {} (seed {}, {} chains, {} outer iterations), but the \
             outputs beside it are run {run_id}'s, as {} says (differs: {}): it was copied from \
             another run's folder; resume each run in its own folder",
            identity.run_id,
            identity.seed,
            identity.chains,
            identity.samples,
            report_path.display(),
            differences.join(", ")
        ),
    ))
}

/// Why a folder without a checkpoint cannot be resumed: what its report says it holds.
pub fn not_resumable(dir: &Path, path: &Path) -> Error {
    let report = read_report(dir).ok().flatten();
    let command = report
        .as_ref()
        .and_then(|r| r["command"].as_str().map(str::to_string));
    let interrupted = report.as_ref().is_some_and(|r| r["interrupted"] == true);
    let message = match command.as_deref() {
        Some("sample") if !interrupted => {
            "is missing: the run in this folder finished, there is nothing to continue".to_string()
        }
        Some(other @ ("augment" | "encode" | "bench")) => format!(
            "is missing: this folder holds an `rmld {other}` run, which cannot be resumed \
             (only `rmld sample` runs can); run `rmld {other}` again, with `force` to reuse the \
             folder"
        ),
        _ => format!(
            "is missing: {} holds no interrupted `rmld sample` run to continue (one writes its \
             checkpoint when interrupted, every `checkpoint_every` iterations, and once \
             `checkpoint_minutes` have passed since the last)",
            dir.display()
        ),
    };
    Error::input(path, message)
}

/// Tells the observer what the run found of a stopped earlier run in its folder and did about
/// it (`resumed`: the staging folder a resume continues).
pub fn tell_recovery(observer: &dyn Observer, output: &Output, resumed: Option<&Path>) {
    let recovery = output.recovery();
    if recovery.removed.is_empty() && recovery.completed.is_none() && resumed.is_none() {
        return;
    }
    observer.notice(&Notice::StoppedRunFound {
        out: output.dir.clone(),
        completed: recovery.completed.clone(),
        removed: recovery.removed.clone(),
        resumed: resumed.map(Path::to_path_buf),
    });
}

/// A failure during or after the run (a lost GPU, a full disk) names the checkpoint kept in
/// the staging folder to resume from; the error stays of its kind (its exit status).
pub fn with_resume_hint(e: Error, checkpoint: &Path, out: &Path) -> Error {
    let Ok(c) = Checkpoint::read(checkpoint) else {
        return e;
    };
    let hint = format!(
        "the run's last checkpoint (after outer iteration {}) is kept in {}: `rmld resume {}` \
         continues from it",
        c.run.completed,
        checkpoint.parent().unwrap_or(out).display(),
        out.display()
    );
    match e {
        Error::Output { path, source } => Error::Output {
            path,
            source: std::io::Error::new(source.kind(), format!("{source}; {hint}")),
        },
        Error::Input { path, message } => Error::Input {
            path,
            message: format!("{message}; {hint}"),
        },
        Error::Usage { field, message } => Error::Usage {
            field,
            message: format!("{message}; {hint}"),
        },
        Error::Gpu(message) => Error::Gpu(format!("{message}; {hint}")),
        Error::Internal(message) => Error::Internal(format!("{message}; {hint}")),
    }
}
