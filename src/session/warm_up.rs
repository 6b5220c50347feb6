//! A run's warm-up shared by its shards: the whole run's chains up to the end of their burn-in saved (`warm_up_only`), and a shard's chains started from it (`warm_up`).
//!
//! Adapting the step size (on the mean acceptance of all chains, or of a class's) and an
//! automatic burn-in's settle check couple the chains until the burn-in ends; after it every
//! chain runs on its own. So the warm-up runs once, on every chain, and each shard continues
//! its chains from the warm-up's state: the shards then draw what the single run draws.

use std::path::Path;

use serde_json::{json, Value};

use super::settings::{AugmentSettings, SampleSettings};
use super::Outcome;
use crate::backend::Backend;
use crate::io::shards::device_key;
use crate::io::WARM_UP_MANIFEST;
use crate::orchestrator::report::{adaptation_json, burn_in_json};
use crate::orchestrator::warm_up::hashed;
pub(crate) use crate::orchestrator::warm_up::{read_for_shard, start_shard};
use crate::orchestrator::warm_up::{save_warm_up, WarmUpEnd, WARM_UP_STATE};
use crate::orchestrator::SampleRun;
use crate::{Error, Result};

/// What a run with `warm_up_only` writes.
pub(crate) const WARM_UP_OUTPUTS: &[&str] = &[WARM_UP_STATE, WARM_UP_MANIFEST, "report.json"];

/// The settings hash of a sampling run's warm-up (its checkpoint cadence aside).
pub(crate) fn sample_hash(args: &SampleSettings) -> String {
    hashed(&args.deciding_the_draws(), |s| &mut s.problem)
}

/// The settings hash of an augmentation's warm-up (its settings as given).
pub(crate) fn augment_hash(args: &AugmentSettings) -> String {
    hashed(args, |s| &mut s.problem)
}

/// What a finished warm-up is saved from.
pub(crate) struct Finished<'a> {
    /// The command (`sample`, `augment`).
    pub command: &'a str,
    /// The settings as given, and their hash.
    pub config: Value,
    pub settings: String,
    /// The data's and the dictionary's hashes, d and p, the seed.
    pub hashes: (u64, u64),
    pub shape: (usize, usize),
    pub seed: u64,
    /// The output folder (named in the summary) and the folder written: the run's staging
    /// folder, published by the caller.
    pub out: &'a Path,
    pub dir: &'a Path,
    /// Seconds since the run began.
    pub seconds: f64,
}

/// Saves the warm-up `run` of the chains on `backend` into `f.dir` (its state, its description,
/// and a report.json of what it adapted) and says what it did.
pub(crate) fn finish(f: Finished, backend: &mut dyn Backend, run: &SampleRun) -> Result<Outcome> {
    let info = json!(backend.info());
    let end = WarmUpEnd {
        command: f.command,
        config: f.config,
        settings: f.settings,
        device: device_key(&info),
        hashes: f.hashes,
        shape: f.shape,
        seed: f.seed,
    };
    // The prior's latent state as the chains leave the warm-up (a run of no iterations has
    // not read it back yet).
    let mut run = run.clone();
    run.prior_state = backend.prior_state()?.unwrap_or_default();
    let run = &run;
    let manifest = save_warm_up(f.dir, end, run, backend.positions()?)?;
    let mut report = serde_json::to_value(&manifest)
        .map_err(|e| Error::Internal(format!("warm-up description: {e}")))?;
    report["backend"] = info;
    report["seconds"] = json!(f.seconds);
    if let Some(adaptation) = adaptation_json(run, None) {
        report["adaptation"] = adaptation;
    }
    if let Some(monitor) = &run.burn_in {
        report["burn_in_auto"] = burn_in_json(monitor);
    }
    crate::io::write_json_atomic(&f.dir.join("report.json"), &report)?;
    let ended = match &run.burn_in {
        Some(m) if m.settled => format!("ended by its automatic burn-in after {}", m.burn_in()),
        Some(m) => format!("did not settle: ended at its cap, {}", m.burn_in()),
        None => format!("{}", manifest.burn_in),
    };
    let mut summary = vec![format!(
        "rmld {} warm-up: {} chains, {ended} outer iterations, in {:.1} s; wrote {}",
        f.command,
        manifest.chains,
        f.seconds,
        f.out.display()
    )];
    if let Some(a) = &run.adaptation {
        summary.push(format!(
            "step size adapted across the chains: {:.4e} → {:.4e}{}",
            a.initial_step,
            a.step(),
            a.trajectory.map_or(String::new(), |t| format!(
                ", trajectory length {:.4} → {:.4}",
                t.initial_length,
                t.length()
            ))
        ));
    }
    summary.push(format!(
        "start every shard from it: the same settings with `shard` I/N and `warm_up` {}, then \
         join the shards with `rmld merge`",
        f.out.display()
    ));
    Ok(Outcome {
        interrupted: false,
        report,
        summary,
        draw_stats: None,
    })
}
