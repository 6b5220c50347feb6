//! `rmld resume`: the checkpoint that continues a run (the one an interrupted run published, or a newer one a killed or failed run left in its staging folder), checked against the outputs it continues, then the run driven on.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use crate::io::{self, NpyStream, Output};
use crate::orchestrator::identity::{configuration_hash, RunIdentity};
use crate::orchestrator::resume::{check_report, check_resumable, restore};
use crate::orchestrator::resume::{left_by_a_run, not_resumable, Left};
use crate::orchestrator::streams::{SampleStreams, CODES, IMAGES};
use crate::orchestrator::Checkpoint;
use crate::{Error, Result};

use super::observer::{Notice, Observer};
use super::problem::{load_problem, make_backend};
use super::sample::{drive, identity_config, output_names, shard_problem, tell_recovery};
use super::sample::{hashes, outputs_on_disk, Continued, RunClock, Sampler, CHECKPOINT};
use super::settings::SampleSettings;
use super::Outcome;

impl Sampler {
    /// Continues the run stopped in `dir` from its checkpoint (the one an interrupted run
    /// published, or the newer one a run that was killed or failed left in its staging folder);
    /// the samples equal those of an uninterrupted run on the same backend.
    pub fn resume(dir: &Path, observer: &dyn Observer) -> Result<Outcome> {
        resume(dir, observer)
    }
}

/// Where a run continues from: a checkpoint and, when a stopped run left it in its staging
/// folder, that folder (the run's draws so far are there); else the draws are the published
/// ones beside the checkpoint.
struct Source {
    checkpoint: PathBuf,
    staging: Option<PathBuf>,
    /// The other staging folders with a checkpoint: superseded once the run publishes.
    others: Vec<PathBuf>,
}

impl Source {
    /// The newest checkpoint in `dir`: the published one, or one in a staging folder a stopped
    /// run left (`resumable`, oldest first), whichever was written last.
    fn newest(dir: &Path, resumable: &[PathBuf]) -> Option<Source> {
        let published = dir.join(CHECKPOINT);
        let modified = |path: &Path| {
            path.symlink_metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH)
        };
        let staged = resumable.last();
        let use_staged = match (published.symlink_metadata().is_ok(), staged) {
            (_, None) => false,
            (false, Some(_)) => true,
            (true, Some(s)) => modified(&s.join(CHECKPOINT)) >= modified(&published),
        };
        if !use_staged && published.symlink_metadata().is_err() {
            return None;
        }
        let staging = staged.filter(|_| use_staged).cloned();
        let others = resumable
            .iter()
            .filter(|s| Some(*s) != staging.as_ref())
            .cloned()
            .collect();
        Some(Source {
            checkpoint: staging.as_ref().map_or(published, |s| s.join(CHECKPOINT)),
            staging,
            others,
        })
    }
}

/// Continues the run stopped in `dir`; see `Sampler::resume`.
pub(super) fn resume(dir: &Path, observer: &dyn Observer) -> Result<Outcome> {
    let started = Instant::now();
    if !dir.is_dir() {
        return Err(Error::input(
            dir,
            "is not a folder: `rmld resume` continues the sampling run in an output folder",
        ));
    }
    // What cannot be continued is refused before the lock is taken: the folder stays untouched.
    match left_by_a_run(dir) {
        Left::Nothing => return Err(not_resumable(dir, &dir.join(CHECKPOINT))),
        Left::Checkpoint => drop(Checkpoint::read(&dir.join(CHECKPOINT))?),
        Left::Staging => {}
    }
    let mut output = Output::unchecked(dir, &[]);
    output.lock_and_recover()?;
    let Some(source) = Source::newest(dir, &output.recovery().resumable) else {
        return Err(not_resumable(dir, &dir.join(CHECKPOINT)));
    };
    let path = &source.checkpoint;
    let checkpoint = Checkpoint::read(path)?;
    let Some(identity) = checkpoint.identity.clone() else {
        return Err(Error::input(
            path,
            "was written by an older rmld, without the identity of its run, so the outputs \
             beside it cannot be checked to be that run's: start the run afresh with `rmld \
             sample` (the same settings and seed give the same samples)",
        ));
    };
    check_build(path, checkpoint.written_by.as_deref())?;
    let mut args: SampleSettings =
        serde_json::from_value(checkpoint.config.clone()).map_err(|e| {
            Error::input(
                path,
                format!("the checkpoint's configuration is not one this rmld reads: {e}"),
            )
        })?;
    args.problem.out = dir.to_path_buf();
    let settings = args.sampler_settings()?;
    check_identity(path, &identity, &args, settings.chains)?;
    if source.staging.is_none() {
        check_report(dir, path, &identity)?;
    }
    output.also_replace(output_names(&args));
    output.also_replace(&[io::MANIFEST]);
    let problem = shard_problem(&args, load_problem(&args.problem)?)?;
    let target = &problem.target;
    let sources = (
        problem.dataset.source.as_path(),
        problem.dictionary_source.as_str(),
    );
    let run = (settings.chains, settings.samples);
    let from = (path.as_path(), source.staging.is_some());
    check_resumable(&checkpoint, from, (target, hashes(target)), run, sources)?;
    problem.check_sampler_fits(&args.problem, &settings)?;
    let mut backend = make_backend(
        args.problem.backend,
        observer,
        target,
        &settings.dynamics,
        settings.chains,
    )?;
    check_device(
        path,
        checkpoint.device.as_deref(),
        &io::shards::device_key(&serde_json::json!(backend.info())),
    )?;
    restore(&checkpoint, backend.as_mut())?;
    // An automatic burn-in's end so far (its cap while it still runs).
    let burn_in = checkpoint
        .run
        .burn_in
        .as_ref()
        .map_or(args.burn_in_cap(), |m| m.burn_in());
    let kept = args
        .keep
        .kept_up_to(checkpoint.run.completed, burn_in, args.samples);
    let (c, d, p) = (settings.chains, target.d(), target.p());
    let (codes_mark, images_mark) = stream_marks(path, &identity, kept, (c, d, p))?;
    // The remaining draws, and the earlier ones again where they are copied from the published
    // set rather than continued in place.
    let in_place = if source.staging.is_some() { kept } else { 0 };
    outputs_on_disk(&args, (c, d, p), in_place)
        .check_room(dir, "free that much space on its disk, then resume again")?;
    let streams = match &source.staging {
        Some(staging) => {
            output.adopt(staging)?;
            let staged = output.staged()?;
            (
                NpyStream::resume(&staged.join(CODES), &[c, p], kept, codes_mark)?,
                NpyStream::resume(&staged.join(IMAGES), &[c, d], kept, images_mark)?,
            )
        }
        None => {
            output.open()?;
            let staged = output.staged()?.to_path_buf();
            let from = |name: &str| dir.join(name);
            let copied = (
                NpyStream::resume_from(
                    &from(CODES),
                    &staged.join(CODES),
                    &[c, p],
                    kept,
                    codes_mark,
                )?,
                NpyStream::resume_from(
                    &from(IMAGES),
                    &staged.join(IMAGES),
                    &[c, d],
                    kept,
                    images_mark,
                )?,
            );
            // The published set keeps its checkpoint until a newer one replaces it, as an
            // uninterrupted run's does.
            checkpoint.write(&staged.join(CHECKPOINT))?;
            copied
        }
    };
    output.supersede(source.others.clone());
    tell_recovery(observer, &output, source.staging.as_deref());
    observer.notice(&Notice::Resuming {
        out: dir.to_path_buf(),
        completed: checkpoint.run.completed,
        samples: settings.samples,
    });
    let streams = SampleStreams::new(streams.0, streams.1, args.keep, burn_in, args.samples)?;
    // The report counts the run's earlier processes' seconds too.
    let clock = RunClock::since(started, checkpoint.wall_seconds.unwrap_or(0.0));
    let continued = Continued {
        backend,
        state: checkpoint.run,
        streams: Some(streams),
        identity,
        output,
    };
    let hashes = (checkpoint.data_hash, checkpoint.dictionary_hash);
    drive(
        &args, &problem, &settings, continued, hashes, clock, observer,
    )
}

/// The checksums the checkpoint at `path` records of codes.npy and images.npy, each checked to
/// record the shape its run's state implies: `kept` draws of `c` chains of `p` atoms and `d`
/// pixels.
fn stream_marks(
    path: &Path,
    identity: &RunIdentity,
    kept: usize,
    (c, d, p): (usize, usize, usize),
) -> Result<(u64, u64)> {
    let mark = |name: &str, shape: [usize; 3]| match identity.stream(name) {
        Some(mark) if mark.shape == shape => Ok(mark.xxh3),
        _ => Err(Error::input(
            path,
            format!(
                "its record of {name} does not say {shape:?} (what its run's state implies): a \
                 damaged or hand-made checkpoint"
            ),
        )),
    };
    Ok((mark(CODES, [kept, c, p])?, mark(IMAGES, [kept, c, d])?))
}

/// Checks that the checkpoint was written by this build (`crate::BUILD`): another build may
/// draw differently from the same state and seed, and a run continued by it would be neither
/// build's run, with nothing in its outputs to say so.
fn check_build(path: &Path, written_by: Option<&str>) -> Result<()> {
    if written_by == Some(crate::BUILD) {
        return Ok(());
    }
    Err(Error::input(
        path,
        format!(
            "was written by {}, and this is build {} (`rmld --version`): another build \
             may draw differently from the same state and seed, so its continuation would \
             not be the run's. Resume with the build that started the run, or start afresh \
             with `rmld sample` (the same settings and seed give the same samples with one \
             build)",
            crate::build_name(written_by.unwrap_or_default()),
            crate::BUILD
        ),
    ))
}

/// Checks that the chains go on on the device that ran them (`io::shards::device_key`): the
/// run's `backend` may be `auto`, which takes a GPU on one machine and the CPU on another, and
/// two GPU adapters (or drivers) round differently, so a continuation elsewhere would not be
/// the run's.
fn check_device(path: &Path, ran_on: Option<&str>, here: &str) -> Result<()> {
    match ran_on {
        Some(device) if device != here => Err(Error::input(
            path,
            format!(
                "the run's chains ran on {device}, and here they would go on on {here}: \
                 another device rounds differently, so the continuation would not be the \
                 run's. Resume where the run's device is (its report.json's `backend`), or \
                 start afresh with `rmld sample` and `--backend` naming this device"
            ),
        )),
        _ => Ok(()),
    }
}

/// Checks that the checkpoint's settings are those its identity was made from (a checkpoint
/// edited and resealed, or made by hand, is refused).
fn check_identity(
    path: &Path,
    identity: &RunIdentity,
    args: &SampleSettings,
    chains: usize,
) -> Result<()> {
    let differences = identity.differences((args.problem.seed, chains, args.samples));
    if !differences.is_empty()
        || configuration_hash(&identity_config(args)?) != identity.configuration
    {
        return Err(Error::input(
            path,
            format!(
                "its settings are not those its run was started with ({}): a damaged or \
                 hand-made checkpoint",
                if differences.is_empty() {
                    "their hash differs".to_string()
                } else {
                    differences.join(", ")
                }
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{check_build, check_device};
    use std::path::Path;

    #[test]
    fn only_this_builds_checkpoints_are_continued() {
        let path = Path::new("run/checkpoint.rmld");
        assert!(check_build(path, Some(crate::BUILD)).is_ok());
        let other = check_build(path, Some("0000000000000000"))
            .unwrap_err()
            .to_string();
        assert!(
            other.contains("rmld build 0000000000000000") && other.contains(crate::BUILD),
            "{other}"
        );
        let older = check_build(path, None).unwrap_err().to_string();
        assert!(
            older.contains("older rmld") && older.contains("start afresh"),
            "{older}"
        );
    }

    #[test]
    fn chains_go_on_only_on_the_device_that_ran_them() {
        let path = Path::new("run/checkpoint.rmld");
        assert!(check_device(path, Some("cpu"), "cpu").is_ok());
        let gpu = r#"gpu: "NVIDIA H100 (Vulkan)""#;
        let moved = check_device(path, Some(gpu), "cpu")
            .unwrap_err()
            .to_string();
        assert!(
            moved.contains("ran on gpu: \"NVIDIA H100") && moved.contains("go on on cpu"),
            "{moved}"
        );
        assert!(check_device(path, Some("cpu"), gpu).is_err());
    }
}
