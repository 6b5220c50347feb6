//! Parametric dictionary learning (`rmld dictionary learn`): settings, validated and turned into a run of `learn`.
//!
//! Each signal's chain runs independently (rayon, in chunks); after every chunk the finished
//! signals' results are checkpointed, so an interrupted run resumes where it stopped and ends bit
//! for bit as an uninterrupted one (`learn::SignalLearning`). Outputs, each written atomically:
//! dictionary.npy (d × p, what `sample --dictionary` reads), atoms.png and report.json.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{Notice, Observer, Outcome, Phase};
use crate::io::{self, Dataset, Pixels};
use crate::learn::combine::{combine, to_dictionary, write_atoms_png};
use crate::learn::omp::coherence;
use crate::learn::{
    check_family, summarize, ChainSettings, DictionaryHyper, Learned, SignalLearning, SignalResult,
    DICTIONARY_CHECKPOINT,
};
use crate::model::AtomFamily;
use crate::{Error, Result};

/// Which atom family to learn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FamilyKind {
    /// EDA tonic (fixed) and phasic (learned) atoms for 1-D signals of d samples.
    #[default]
    Eda,
    /// 2-D Gabor atoms for square images of d = side² pixels.
    Gabor,
}

/// Settings of `rmld dictionary learn`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DictionarySettings {
    /// The signals: an NPY file (n × d) or any dataset `sample` reads.
    pub data: Option<PathBuf>,
    /// The atom family.
    pub family: FamilyKind,
    /// The output folder.
    pub out: PathBuf,
    /// Learn on the first `signals` signals only (all by default).
    pub signals: Option<usize>,
    /// Atoms per signal L (the per-signal dictionary's size K = L; default 4).
    pub atoms_per_signal: usize,
    /// MCMC iterations per signal M (paper: 1000).
    pub iterations: u32,
    /// Iterations left out of the Geweke diagnostic (paper: 100).
    pub burn_in: u32,
    /// K-means centres N_b of Algorithm 2 (paper: 100, 225, 400).
    pub centers: usize,
    /// The seed of every draw.
    pub seed: u64,
    /// Signals per checkpoint.
    pub chunk: usize,
    /// The model's hyperparameters.
    pub hyper: DictionaryHyper,
}

impl Default for DictionarySettings {
    fn default() -> Self {
        DictionarySettings {
            data: None,
            family: FamilyKind::Eda,
            out: PathBuf::from("rmld-dictionary"),
            signals: None,
            atoms_per_signal: 4,
            iterations: 1000,
            burn_in: 100,
            centers: 100,
            seed: 0,
            chunk: 32,
            hyper: DictionaryHyper::default(),
        }
    }
}

impl DictionarySettings {
    /// Checks the settings that do not need the data; errors name the setting and its range.
    pub fn validate(&self) -> Result<()> {
        let positive = |name: &'static str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(Error::usage(
                    name,
                    format!("must be a positive number, got {v}"),
                ))
            }
        };
        if !(1..=64).contains(&self.atoms_per_signal) {
            return Err(Error::usage(
                "atoms_per_signal",
                format!("must be in 1..=64, got {}", self.atoms_per_signal),
            ));
        }
        if self.iterations < 20 {
            return Err(Error::usage(
                "iterations",
                format!("must be at least 20, got {}", self.iterations),
            ));
        }
        if self.burn_in >= self.iterations || self.iterations - self.burn_in < 20 {
            return Err(Error::usage(
                "burn_in",
                format!(
                    "must leave at least 20 of the {} iterations, got {}",
                    self.iterations, self.burn_in
                ),
            ));
        }
        if self.centers == 0 {
            return Err(Error::usage("centers", "must be at least 1"));
        }
        if self.chunk == 0 {
            return Err(Error::usage("chunk", "must be at least 1"));
        }
        if self.signals == Some(0) {
            return Err(Error::usage("signals", "must be at least 1"));
        }
        let h = &self.hyper;
        positive("alpha", h.alpha)?;
        positive("noise_shape", h.noise_shape)?;
        positive("noise_rate", h.noise_rate)?;
        positive("coefficient_precision", h.coefficient_precision)?;
        positive("noise_start", h.noise_start)?;
        positive("proposal_dof", h.proposal_dof)?;
        if let Some(v) = h.proposal_scale {
            positive("proposal_scale", v)?;
        }
        if let Some(v) = h.wishart_dof {
            positive("wishart_dof", v)?;
        }
        if h.mode_iterations == 0 || h.mode_iterations > 10_000 {
            return Err(Error::usage(
                "mode_iterations",
                format!("must be in 1..=10000, got {}", h.mode_iterations),
            ));
        }
        Ok(())
    }

    /// What the signals' chains read of these settings.
    pub fn chains(&self) -> ChainSettings {
        ChainSettings {
            iterations: self.iterations,
            burn_in: self.burn_in,
            seed: self.seed,
            chunk: self.chunk,
            hyper: self.hyper.clone(),
        }
    }
}

/// The family for signals of dimension d: EDA of d samples, Gabor of side √d (d must be a square).
pub fn family_for(kind: FamilyKind, d: usize) -> Result<AtomFamily> {
    let family = match kind {
        FamilyKind::Eda => AtomFamily::Eda { len: d },
        FamilyKind::Gabor => {
            let side = (d as f64).sqrt().round() as usize;
            if side * side != d {
                return Err(Error::usage(
                    "family",
                    format!("Gabor atoms need square images, but the data's dimension {d} is not a square"),
                ));
            }
            AtomFamily::Gabor { side }
        }
    };
    family.validate()?;
    Ok(family)
}

/// The outcome of a learning run stopped after `learned.results` of `signals` signals: the
/// command to run again and the checkpoint it resumes from.
pub(crate) fn interrupted_outcome(learned: &Learned, signals: usize, out: &Path) -> Outcome {
    Outcome {
        interrupted: true,
        report: serde_json::Value::Null,
        summary: vec![format!(
            "interrupted after {} of {} signals; run the same command again to resume from {}",
            learned.results.len(),
            signals,
            out.join(DICTIONARY_CHECKPOINT).display()
        )],
        draw_stats: None,
    }
}

/// Runs every signal's chain (signal i with `atoms[i]` atoms), checkpointing into `out` after each
/// chunk and resuming from a checkpoint there that the same data and settings wrote.
pub fn learn_signals(
    family: &AtomFamily,
    signals: &[Vec<f64>],
    atoms: &[usize],
    settings: &DictionarySettings,
    out: &Path,
    observer: &dyn Observer,
) -> Result<Learned> {
    let chains = settings.chains();
    let learning = SignalLearning::open(family, signals, atoms, &chains, out)?;
    if let Some(completed) = learning.resumed() {
        observer.notice(&Notice::Resuming {
            out: out.to_path_buf(),
            completed: completed as u32,
            samples: signals.len() as u32,
        });
    }
    observer.phase_start(&Phase {
        name: "dictionary learning",
        len: Some(signals.len() as u64),
        unit: "signals",
    });
    observer.phase_advance(learning.done() as u64);
    let learned = learning.run(&mut |done| observer.phase_advance(done as u64), &|| {
        observer.stop_requested()
    });
    observer.phase_finish();
    learned
}

fn dataset_rows(dataset: &Dataset) -> Vec<Vec<f64>> {
    let d = dataset.d;
    match &dataset.pixels {
        Pixels::U8(v) => v
            .chunks(d)
            .map(|r| r.iter().map(|&x| x as f64).collect())
            .collect(),
        Pixels::F32(v) => v
            .chunks(d)
            .map(|r| r.iter().map(|&x| x as f64).collect())
            .collect(),
    }
}

/// Learns a parametric dictionary from a dataset and writes dictionary.npy, atoms.png and
/// report.json into `settings.out`.
pub struct DictionaryLearner {
    settings: DictionarySettings,
}

impl DictionaryLearner {
    /// A learner with these settings.
    pub fn new(settings: DictionarySettings) -> Self {
        DictionaryLearner { settings }
    }

    /// Loads the data, learns (resuming a checkpoint in the output folder) and writes the outputs.
    pub fn run(&self, observer: &dyn Observer) -> Result<Outcome> {
        let s = &self.settings;
        s.validate()?;
        let dataset = Dataset::load_or_embedded(s.data.as_deref())?;
        if dataset.n == 0 {
            return Err(Error::input(
                &dataset.source,
                "the dataset holds no observations",
            ));
        }
        let family = family_for(s.family, dataset.d)?;
        let mut signals = dataset_rows(&dataset);
        if let Some(n) = s.signals {
            signals.truncate(n);
        }
        for (i, sig) in signals.iter().enumerate() {
            if let Some(j) = sig.iter().position(|v| !v.is_finite()) {
                return Err(Error::input(
                    &dataset.source,
                    format!("signal {i} holds a non-finite value at index {j}"),
                ));
            }
        }
        check_family(&family, &s.hyper)?;
        io::prepare_output_dir(&s.out)?;
        let _lock = super::lock_output(&s.out)?;
        let atoms = vec![s.atoms_per_signal; signals.len()];
        let started = Instant::now();
        let learned = learn_signals(&family, &signals, &atoms, s, &s.out, observer)?;
        if learned.interrupted {
            return Ok(interrupted_outcome(&learned, signals.len(), &s.out));
        }
        let refs: Vec<&SignalResult> = learned.results.iter().collect();
        let (final_atoms, params) = combine(&family, &refs, s.centers, s.seed, 0);
        let dictionary = to_dictionary(&final_atoms);
        let summary = summarize(&family, &learned.results);
        let mut report = serde_json::json!({
            "family": family,
            "data": dataset.source,
            "signals": signals.len(),
            "settings": s,
            "atoms": dictionary.p,
            "dimension": dictionary.d,
            "coherence": coherence(&final_atoms),
            "seconds": started.elapsed().as_secs_f64(),
            "learned_parameters": params,
            "atoms_png_shows": final_atoms.len().min(256),
        });
        if let (Some(obj), serde_json::Value::Object(more)) = (report.as_object_mut(), summary) {
            obj.extend(more);
        }
        io::write_npy_f32(
            &s.out.join("dictionary.npy"),
            &[dictionary.d, dictionary.p],
            &dictionary.a,
        )?;
        write_atoms_png(&s.out.join("atoms.png"), &family, &final_atoms)?;
        io::write_json_atomic(&s.out.join("report.json"), &report)?;
        Ok(Outcome {
            interrupted: false,
            summary: vec![format!(
                "learned {} {} atoms (d = {}) from {} signals: MH acceptance {:.1}%, mean OMP error {:.4} (initial {:.4}); wrote {}",
                dictionary.p,
                family.label(),
                dictionary.d,
                signals.len(),
                100.0 * report["mh_acceptance"].as_f64().unwrap_or(0.0),
                report["best_error_mean"].as_f64().unwrap_or(f64::NAN),
                report["initial_error_mean"].as_f64().unwrap_or(f64::NAN),
                s.out.join("dictionary.npy").display()
            )],
            report,
            draw_stats: None,
        })
    }
}
