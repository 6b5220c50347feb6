//! Every signal's chain of a dictionary-learning run, in parallel chunks, checkpointed after each so a stopped run resumes bit for bit.

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use super::hyper::{DictionaryHyper, ParamPrior};
use super::signal_chain::{group_names, run_signal, Initial, SignalResult};
use crate::io;
use crate::model::AtomFamily;
use crate::{Error, Result};

/// The most bytes of a dictionary checkpoint read (bounded: the path is the user's).
const MAX_CHECKPOINT_BYTES: u64 = 1 << 30;

/// The checkpoint file of an unfinished dictionary-learning run, in its output folder.
pub const DICTIONARY_CHECKPOINT: &str = "dictionary-checkpoint.bin";

/// A dictionary checkpoint's layout, as `sample`'s checkpoint.rmld: the magic, the version (u32
/// LE), the postcard-encoded [`Checkpoint`], and an xxh3-64 checksum of everything before it, so a
/// damaged file is refused rather than resumed into another dictionary. Version 1 was the bare
/// postcard payload (no magic, no checksum).
const MAGIC: &[u8; 8] = b"RMLDDICT";
const VERSION: u32 = 2;

/// How every signal's chain runs (the part of a run's settings the chains read).
#[derive(Clone, Debug, PartialEq)]
pub struct ChainSettings {
    /// MCMC iterations per signal M.
    pub iterations: u32,
    /// Iterations left out of the Geweke diagnostic.
    pub burn_in: u32,
    /// The seed of every draw.
    pub seed: u64,
    /// Signals per checkpoint.
    pub chunk: usize,
    /// The model's hyperparameters.
    pub hyper: DictionaryHyper,
}

/// What a learning run returns: every finished signal's result, and whether it stopped early.
#[derive(Clone, Debug)]
pub struct Learned {
    /// One result per finished signal, in signal order.
    pub results: Vec<SignalResult>,
    /// True when the run was asked to stop before every signal was done.
    pub interrupted: bool,
}

#[derive(Serialize, Deserialize)]
struct Checkpoint {
    fingerprint: u64,
    results: Vec<SignalResult>,
}

/// A fingerprint of everything a run's results depend on.
fn fingerprint(
    family: &AtomFamily,
    signals: &[Vec<f64>],
    atoms: &[usize],
    settings: &ChainSettings,
) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    // The build too: another build's results beside this one's would make a dictionary of
    // neither.
    let key = serde_json::json!({
        "family": family, "iterations": settings.iterations, "burn_in": settings.burn_in,
        "seed": settings.seed, "hyper": settings.hyper, "atoms": atoms, "build": crate::BUILD,
    });
    h.update(key.to_string().as_bytes());
    for s in signals {
        for v in s {
            h.update(&v.to_le_bytes());
        }
    }
    h.digest()
}

/// Checks the settings that depend on the family (ν0 > Q − 1).
pub fn check_family(family: &AtomFamily, hyper: &DictionaryHyper) -> Result<()> {
    let q = family.q();
    let nu = hyper.wishart_dof_for(q);
    if nu <= q as f64 - 1.0 {
        return Err(Error::usage(
            "wishart_dof",
            format!(
                "must exceed the number of atom parameters − 1 ({} for {}), got {nu}",
                q - 1,
                family.label(),
            ),
        ));
    }
    Ok(())
}

/// The chains of a run's signals (signal i with `atoms[i]` atoms), with the results a checkpoint
/// in its folder already holds.
pub struct SignalLearning<'a> {
    family: &'a AtomFamily,
    signals: &'a [Vec<f64>],
    atoms: &'a [usize],
    settings: &'a ChainSettings,
    initial: Initial,
    prior: ParamPrior,
    fingerprint: u64,
    checkpoint: PathBuf,
    results: Vec<SignalResult>,
    resumed: bool,
}

/// Removes the checkpoint of a finished run from `out` (none there is fine).
pub fn remove_checkpoint(out: &Path) -> Result<()> {
    crate::io::remove_file_if_present(&out.join(DICTIONARY_CHECKPOINT))
}

impl<'a> SignalLearning<'a> {
    /// The run's chains, resuming from a checkpoint in `out` that the same data and settings
    /// wrote. Errors: settings the family refuses, or another run's checkpoint in `out`.
    pub fn open(
        family: &'a AtomFamily,
        signals: &'a [Vec<f64>],
        atoms: &'a [usize],
        settings: &'a ChainSettings,
        out: &Path,
    ) -> Result<Self> {
        check_family(family, &settings.hyper)?;
        if atoms.len() != signals.len() || signals.iter().any(|s| s.len() != family.dim()) {
            return Err(Error::Internal(format!(
                "{} signals, {} atom counts, family dimension {}",
                signals.len(),
                atoms.len(),
                family.dim()
            )));
        }
        let initial = Initial::new(family);
        let prior = ParamPrior::from_grid(&initial.params, family.q());
        let print = fingerprint(family, signals, atoms, settings);
        let path = out.join(DICTIONARY_CHECKPOINT);
        let mut results: Vec<SignalResult> = Vec::new();
        let resumed = path.exists();
        if resumed {
            let bytes =
                crate::io::read_regular_file(&path, "dictionary checkpoint", MAX_CHECKPOINT_BYTES)?;
            let checkpoint = Checkpoint::from_bytes(&bytes)
                .map_err(|e| Error::input(&path, format!("{e}: remove it to start afresh")))?;
            if checkpoint.fingerprint != print || checkpoint.results.len() > signals.len() {
                return Err(Error::usage(
                    "out",
                    format!(
                        "{} holds the checkpoint of a different run (other data or settings, or \
                         another rmld build than {}, which may learn differently): remove it or \
                         choose another output folder",
                        path.display(),
                        crate::BUILD
                    ),
                ));
            }
            results = checkpoint.results;
        }
        Ok(SignalLearning {
            family,
            signals,
            atoms,
            settings,
            initial,
            prior,
            fingerprint: print,
            checkpoint: path,
            results,
            resumed,
        })
    }

    /// Signals done: those of the checkpoint resumed from, if any (`None`: a fresh start).
    pub fn resumed(&self) -> Option<usize> {
        self.resumed.then_some(self.results.len())
    }

    /// Signals done so far.
    pub fn done(&self) -> usize {
        self.results.len()
    }

    /// Runs the remaining chains a chunk at a time: after each, `progress` is told the signals
    /// done and the checkpoint written; `stop` is asked before each, and true ends the run early
    /// (`interrupted`). The checkpoint outlives the run, the last chunk's too: the caller removes
    /// it ([`remove_checkpoint`]) once the outputs are published, so a failure while writing
    /// them loses no learning.
    pub fn run(
        mut self,
        progress: &mut dyn FnMut(usize),
        stop: &dyn Fn() -> bool,
    ) -> Result<Learned> {
        let total = self.signals.len();
        let mut interrupted = false;
        while self.results.len() < total {
            if stop() {
                interrupted = true;
                break;
            }
            let start = self.results.len();
            let end = (start + self.settings.chunk).min(total);
            let chunk: Vec<SignalResult> = (start..end)
                .into_par_iter()
                .map(|i| self.run_one(i))
                .collect();
            self.results.extend(chunk);
            progress(self.results.len());
            self.write_checkpoint()?;
        }
        Ok(Learned {
            results: self.results,
            interrupted,
        })
    }

    /// Signal i's chain.
    fn run_one(&self, i: usize) -> SignalResult {
        let s = self.settings;
        run_signal(
            self.family,
            &self.initial,
            &self.prior,
            &s.hyper,
            &self.signals[i],
            self.atoms[i],
            s.iterations,
            s.burn_in,
            s.seed,
            i as u32,
        )
    }

    fn write_checkpoint(&mut self) -> Result<()> {
        let checkpoint = Checkpoint {
            fingerprint: self.fingerprint,
            results: std::mem::take(&mut self.results),
        };
        let bytes = checkpoint.to_bytes();
        self.results = checkpoint.results;
        let bytes = bytes?;
        io::write_atomic(&self.checkpoint, |w| w.write_all(&bytes))
    }
}

impl Checkpoint {
    /// The file's bytes: magic, version, payload, checksum.
    fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&VERSION.to_le_bytes());
        let mut out = postcard::to_extend(self, out)
            .map_err(|e| Error::Internal(format!("dictionary checkpoint: {e}")))?;
        let checksum = xxh3_64(&out);
        out.extend_from_slice(&checksum.to_le_bytes());
        Ok(out)
    }

    /// Checks magic, version and checksum before decoding anything.
    fn from_bytes(bytes: &[u8]) -> std::result::Result<Checkpoint, String> {
        let fixed = MAGIC.len() + 4;
        if bytes.len() < fixed + 8 || &bytes[..MAGIC.len()] != MAGIC {
            return Err(format!(
                "not a dictionary checkpoint this rmld reads: it does not start with {} (one \
                 written by an rmld before checkpoints were checksummed, or another file)",
                String::from_utf8_lossy(MAGIC)
            ));
        }
        let version = u32::from_le_bytes(bytes[MAGIC.len()..fixed].try_into().unwrap_or_default());
        if version != VERSION {
            return Err(format!(
                "dictionary checkpoint version {version}, this rmld reads version {VERSION}"
            ));
        }
        let (body, checksum) = bytes.split_at(bytes.len() - 8);
        if xxh3_64(body) != u64::from_le_bytes(checksum.try_into().unwrap_or_default()) {
            return Err(
                "corrupt dictionary checkpoint: the checksum does not match (truncated or \
                 modified file)"
                    .into(),
            );
        }
        postcard::from_bytes(&body[fixed..])
            .map_err(|e| format!("corrupt dictionary checkpoint: {e}"))
    }
}

/// MH acceptance, Geweke pass rates per group and the mean OMP errors of a run's results, as JSON.
pub fn summarize(family: &AtomFamily, results: &[SignalResult]) -> serde_json::Value {
    let accepted: u64 = results.iter().map(|r| r.accepted).sum();
    let proposed: u64 = results.iter().map(|r| r.proposed).sum();
    let names = group_names(family);
    let mut geweke = serde_json::Map::new();
    for (g, name) in names.iter().enumerate() {
        let (pass, total) = results.iter().fold((0u64, 0u64), |(p, t), r| {
            let c = r.geweke.get(g).copied().unwrap_or([0, 0]);
            (p + c[0] as u64, t + c[1] as u64)
        });
        if total > 0 {
            geweke.insert(name.clone(), serde_json::json!(pass as f64 / total as f64));
        }
    }
    let n = results.len().max(1) as f64;
    serde_json::json!({
        "mh_acceptance": if proposed > 0 { accepted as f64 / proposed as f64 } else { 0.0 },
        "mh_proposals": proposed,
        "geweke_pass": geweke,
        "initial_error_mean": results.iter().map(|r| r.initial_error).sum::<f64>() / n,
        "best_error_mean": results.iter().map(|r| r.best_error).sum::<f64>() / n,
    })
}
