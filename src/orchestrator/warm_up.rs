//! The warm-up on its own: the outer iterations up to the burn-in's end, after which `continue_run` goes on as one uninterrupted run would; saved for a run's shards to start from, and read back by them.

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Value};

use super::problem::ProblemSettings;
use super::resume::restore;
use super::shard::chain_slice;
use super::{continue_run, Checkpoint, ClassSteps, Hooks, SampleRun, SampleSink, SamplerSettings};
use crate::backend::Backend;
use crate::io::shards::{device_key, settings_hash, WarmUpManifest};
use crate::model::Target;
use crate::{Error, Result};

/// Runs `state`'s warm-up on `backend`: the outer iterations up to `burn_in` or, with an
/// automatic burn-in, up to where its monitor ends it (at most its cap, `burn_in`). Nothing is
/// kept; `progress` is told after each iteration, `stop` asked as `continue_run` asks it (the
/// run comes back `interrupted`). `continue_run` from the returned state draws what the
/// uninterrupted run draws after its warm-up.
pub fn warm_up(
    backend: &mut dyn Backend,
    target: &Target,
    settings: &SamplerSettings,
    state: SampleRun,
    burn_in: u32,
    progress: &mut dyn FnMut(u32),
    stop: &dyn Fn() -> bool,
) -> Result<SampleRun> {
    let mut sink = WarmUpSink {
        end: burn_in,
        last: state.completed,
    };
    let hooks = Hooks {
        sink: &mut sink,
        progress,
        stop,
        checkpoint_every: 0,
        checkpoint_due: &|| false,
        checkpoint: &mut |_, _| Ok(()),
    };
    continue_run(backend, target, settings, state, hooks)
}

/// Keeps nothing, and is full once the warm-up is over: after `end` iterations, or where an
/// automatic burn-in ended it.
struct WarmUpSink {
    end: u32,
    last: u32,
}

impl SampleSink for WarmUpSink {
    fn record(&mut self, outer: u32, _codes: &[f32], _images: &[f32]) -> Result<()> {
        self.last = outer;
        Ok(())
    }

    fn warm_up_ended(&mut self, outer: u32) {
        self.end = outer;
    }

    fn full(&self) -> bool {
        self.last >= self.end
    }
}

/// A warm-up's state file: the whole run's chains at the end of their burn-in, as a checkpoint
/// (the settings as given, the data's and dictionary's hashes, every chain's position and run).
pub const WARM_UP_STATE: &str = "warm-up.rmld";

/// What a warm-up is saved with besides its run.
pub struct WarmUpEnd<'a> {
    /// The command (`sample`, `augment`).
    pub command: &'a str,
    /// The settings as given (the state's configuration).
    pub config: Value,
    /// Their hash ([`settings_hash`](crate::io::shards::settings_hash)), which a shard compares
    /// with its own.
    pub settings: String,
    /// The device that ran it ([`device_key`](crate::io::shards::device_key)).
    pub device: String,
    /// The data's and the dictionary's hashes.
    pub hashes: (u64, u64),
    /// d and p.
    pub shape: (usize, usize),
    /// The seed.
    pub seed: u64,
}

/// Saves the warm-up `run`, whose chains are at `positions`, into `out`: its state, then its
/// description (last, so that a folder with a description holds a whole warm-up).
pub fn save_warm_up(
    out: &Path,
    end: WarmUpEnd,
    run: &SampleRun,
    positions: Vec<f32>,
) -> Result<WarmUpManifest> {
    let state = Checkpoint {
        config: end.config,
        data_hash: end.hashes.0,
        dictionary_hash: end.hashes.1,
        d: end.shape.0,
        p: end.shape.1,
        positions,
        run: run.clone(),
        // Checked by the shards against their settings' hash, not resumed.
        identity: None,
        written_by: None,
        device: None,
        wall_seconds: None,
    };
    state.write(&out.join(WARM_UP_STATE))?;
    let burn_in = run.burn_in.as_ref().map_or(run.completed, |m| m.burn_in());
    WarmUpManifest::write(
        out,
        end.command,
        (end.settings, end.device),
        end.seed,
        run.accepted.len(),
        burn_in,
        WARM_UP_STATE,
    )
}

/// A warm-up read back for a shard: its folder, description and state.
pub struct WarmUp {
    /// The folder.
    pub dir: PathBuf,
    /// Its description.
    pub manifest: WarmUpManifest,
    /// Its state: every chain at the end of the burn-in.
    pub state: Checkpoint,
}

/// A shard's part of a warm-up: a checkpoint of its chains to continue from, and the warm-up's
/// per-class steps numbered as in the whole run (the shard's checkpoint numbers them as its
/// chains meet them), for the shard's trace.
pub struct ShardStart {
    /// The shard's chains at the end of the burn-in.
    pub state: Checkpoint,
    /// The whole run's per-class steps (None without them).
    pub class_steps: Option<ClassSteps>,
}

impl WarmUp {
    /// Reads the warm-up in `dir`, checked: a warm-up of `command` made with the settings
    /// hashed as `settings`, its state intact and finished.
    pub fn read(dir: &Path, command: &str, settings: &str) -> Result<WarmUp> {
        let manifest = WarmUpManifest::read(dir, command, settings)?;
        let path = dir.join(&manifest.state_file);
        let bytes = manifest.state_bytes(dir)?;
        let state = Checkpoint::from_bytes(&bytes).map_err(|m| Error::input(&path, m))?;
        if state.run.interrupted || state.run.accepted.len() != manifest.chains {
            return Err(Error::input(
                &path,
                format!(
                    "does not hold the finished warm-up of the run's {} chains",
                    manifest.chains
                ),
            ));
        }
        Ok(WarmUp {
            dir: dir.to_path_buf(),
            manifest,
            state,
        })
    }

    /// The chains `range` of the warm-up's, for a shard on `device` whose data and dictionary
    /// hash to `hashes` (both checked against the warm-up's); `classes`: each of those chains'
    /// class in the whole run, with per-class steps.
    pub fn shard_start(
        &self,
        device: &str,
        hashes: (u64, u64),
        range: Range<usize>,
        classes: Option<&[u32]>,
    ) -> Result<ShardStart> {
        self.manifest.check_device(&self.dir, device)?;
        if hashes != (self.state.data_hash, self.state.dictionary_hash) {
            return Err(Error::input(
                self.dir.join(&self.manifest.state_file),
                "was made from other data or another dictionary than this shard reads (their \
                 hashes differ)",
            ));
        }
        Ok(ShardStart {
            state: chain_slice(&self.state, range, classes)?,
            class_steps: self.state.run.class_steps.clone(),
        })
    }
}

/// The hash a warm-up and its shards compare: every setting but where the run goes (the output
/// folder, `force`, the shard, the warm-up's own settings).
pub(crate) fn hashed<T: Serialize + Clone>(
    settings: &T,
    problem: fn(&mut T) -> &mut ProblemSettings,
) -> String {
    let mut cleared = settings.clone();
    problem(&mut cleared).clear_placement();
    settings_hash(&cleared)
}

/// The warm-up a shard with `warm_up` starts from, read and checked against the shard's
/// settings (`hash`) before any work; None for a run without one.
pub(crate) fn read_for_shard(
    problem: &ProblemSettings,
    command: &str,
    hash: impl FnOnce() -> String,
) -> Result<Option<WarmUp>> {
    match (&problem.warm_up, problem.shard) {
        (Some(dir), Some(_)) => WarmUp::read(dir, command, &hash()).map(Some),
        _ => Ok(None),
    }
}

/// The shard's chains `range` of `warm`, checked against the shard's device (`backend`) and its
/// inputs' `hashes`, put on `backend`: positions, the prior's state, the noise precision.
/// `classes`: each chain's class in the whole run, where the run adapts per class.
pub(crate) fn start_shard(
    warm: &WarmUp,
    backend: &mut dyn Backend,
    hashes: (u64, u64),
    range: Range<usize>,
    classes: Option<&[u32]>,
) -> Result<ShardStart> {
    let device = device_key(&json!(backend.info()));
    let start = warm.shard_start(&device, hashes, range, classes)?;
    restore(&start.state, backend)?;
    Ok(start)
}
