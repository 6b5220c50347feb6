//! Parametric dictionary learning (`rmld dictionary learn`): `learn`'s settings turned into a run, its outputs written.
//!
//! Each signal's chain runs independently (rayon, in chunks); after every chunk the finished
//! signals' results are checkpointed, so an interrupted run resumes where it stopped and ends bit
//! for bit as an uninterrupted one (`learn::SignalLearning`). Outputs, published together
//! (`io::Output`) or not at all: dictionary.npy (d × p, what `sample --dictionary` reads),
//! atoms.png and report.json.

use std::path::Path;
use std::time::Instant;

use super::{Notice, Observer, Outcome, Phase};
use crate::io::{self, Dataset};
use crate::learn::combine::{combine, to_dictionary, write_atoms_png};
use crate::learn::omp::coherence;
use crate::learn::settings::dataset_rows;
use crate::learn::{
    check_family, remove_checkpoint, summarize, Learned, SignalLearning, SignalResult,
    DICTIONARY_CHECKPOINT,
};
pub use crate::learn::{family_for, DictionarySettings, FamilyKind};
use crate::model::AtomFamily;
use crate::{Error, Result};

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
/// chunk and resuming from a checkpoint there that the same data and settings wrote. The
/// checkpoint stays: the caller removes it once its outputs are published.
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
        observer.notice(&Notice::LearningResumed {
            out: out.to_path_buf(),
            done: completed,
            signals: signals.len(),
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
        let mut output = io::Output::check(
            &s.out,
            super::outputs::DICTIONARY_OUTPUTS,
            &[s.data.as_deref()],
            s.force,
        )?;
        output.open()?;
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
            &output.path("dictionary.npy")?,
            &[dictionary.d, dictionary.p],
            &dictionary.a,
        )?;
        write_atoms_png(&output.path("atoms.png")?, &family, &final_atoms)?;
        output.report(&report)?;
        output.publish()?;
        remove_checkpoint(&s.out)?;
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
