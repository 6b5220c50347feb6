//! The synthetic EDA experiment of Chaspari et al. (2016), Section VII-A/B (`rmld dictionary eda-experiment`): the run of `learn`'s settings, its report.
//!
//! The chains run once on all the synthetic signals (`learn::synthetic_eda`); then each fold's
//! held-out signals judge the dictionary combined from the others (`learn::eda`): Fig. 3's error
//! curves, Tables IV-VI beside the paper's values.

use std::time::Instant;

use super::dictionary::{interrupted_outcome, learn_signals};
use super::{Observer, Outcome};
use crate::io;
use crate::learn::combine::write_atoms_png;
use crate::learn::eda::FoldEvaluation;
use crate::learn::omp::coherence;
pub use crate::learn::EdaExperimentSettings;
use crate::learn::{remove_checkpoint, summarize, synthetic_eda, PAPER_SYNTHETIC};
use crate::model::AtomFamily;
use crate::Result;

/// Runs the experiment; report.json holds the error curves, coherences, Geweke pass rates and
/// MH acceptance beside the paper's values.
pub fn eda_experiment(
    settings: &EdaExperimentSettings,
    observer: &dyn Observer,
) -> Result<Outcome> {
    settings.validate()?;
    let family = AtomFamily::Eda { len: settings.len };
    let (signals, counts) = synthetic_eda(settings.signals, settings.len, settings.learn.seed);
    let atoms: Vec<usize> = counts.iter().map(|r| r + 1).collect();
    let mut output = io::Output::check(
        &settings.out,
        super::outputs::EDA_EXPERIMENT_OUTPUTS,
        &[],
        settings.learn.force,
    )?;
    output.open()?;
    let started = Instant::now();
    let learned = learn_signals(
        &family,
        &signals,
        &atoms,
        &settings.learn,
        &settings.out,
        observer,
    )?;
    if learned.interrupted {
        return Ok(interrupted_outcome(&learned, signals.len(), &settings.out));
    }
    let learn_seconds = started.elapsed().as_secs_f64();
    let folds = FoldEvaluation::of(
        &family,
        &signals,
        &learned.results,
        settings.folds,
        settings.learn.centers,
        settings.learn.seed,
        settings.omp_iterations,
    );
    write_atoms_png(&output.path("atoms.png")?, &family, &folds.first_fold)?;
    let (initial_curve, learned_curve) = (&folds.initial_curve, &folds.learned_curve);
    let summary = summarize(&family, &learned.results);
    let csv: String = std::iter::once("omp_iterations,initial,learned\n".to_string())
        .chain((0..settings.omp_iterations).map(|i| {
            format!(
                "{},{:.6},{:.6}\n",
                i + 1,
                initial_curve[i],
                learned_curve[i]
            )
        }))
        .collect();
    io::write_atomic(&output.path("fig3.csv")?, |w| w.write_all(csv.as_bytes()))?;
    let report = serde_json::json!({
        "experiment": "Chaspari et al. 2016, Section VII-A/B synthetic EDA, sampling with replacement",
        "settings": settings,
        "seconds_learning": learn_seconds,
        "seconds_total": started.elapsed().as_secs_f64(),
        "threads": rayon::current_num_threads(),
        "omp_iterations": (1..=settings.omp_iterations).collect::<Vec<_>>(),
        "relative_rms_initial": initial_curve,
        "relative_rms_learned": learned_curve,
        "atoms_initial": folds.initial.len(),
        "atoms_learned": folds.first_fold.len(),
        "coherence_initial": coherence(&folds.initial),
        "coherence_learned": folds.learned_coherence(),
        "learning": summary,
        "paper": PAPER_SYNTHETIC.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect::<serde_json::Map<_, _>>(),
    });
    output.report(&report)?;
    output.publish()?;
    remove_checkpoint(&settings.out)?;
    Ok(Outcome {
        interrupted: false,
        summary: summary_lines(settings, &report, &folds, learn_seconds),
        report,
        draw_stats: None,
    })
}

/// What `rmld dictionary eda-experiment` prints: Fig. 3's curves and Tables IV-VI beside the
/// paper's values, from the run's report.
fn summary_lines(
    settings: &EdaExperimentSettings,
    report: &serde_json::Value,
    folds: &FoldEvaluation,
    learn_seconds: f64,
) -> Vec<String> {
    let (initial_curve, learned_curve) = (&folds.initial_curve, &folds.learned_curve);
    let learned_coherence = folds.learned_coherence();
    let mut lines = vec![format!(
        "synthetic EDA: {} signals, {} iterations, N_b = {}, {} folds; learning took {:.0} s",
        settings.signals,
        settings.learn.iterations,
        settings.learn.centers,
        settings.folds,
        learn_seconds
    )];
    lines.push("relative RMS error vs OMP iterations (Fig. 3, synthetic):".into());
    let mode = if settings.learn.hyper.without_replacement {
        "w-o"
    } else {
        "w-"
    };
    lines.push(format!("  OMP it.   initial   learned (MCMC {mode} rplcm)"));
    for i in 0..settings.omp_iterations {
        lines.push(format!(
            "  {:>6}   {:>7.4}   {:>7.4}",
            i + 1,
            initial_curve[i],
            learned_curve[i]
        ));
    }
    lines.push(format!(
        "coherence (Table IV): initial {:.7} (paper 1), learned {:.7} (paper 0.9989)",
        report["coherence_initial"].as_f64().unwrap_or(f64::NAN),
        learned_coherence
    ));
    lines.push(format!(
        "Geweke P(|z| < 2) (Table V, synthetic; ours {mode} rplcm, paper w- rplcm):   ours   paper"
    ));
    let paper = |key: &str| {
        PAPER_SYNTHETIC
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| format!("{v:.2}"))
            .unwrap_or_else(|| "-".into())
    };
    if let Some(groups) = report["learning"]["geweke_pass"].as_object() {
        for (name, v) in groups {
            lines.push(format!(
                "  {:<16} {:>6.2}   {}",
                name,
                v.as_f64().unwrap_or(f64::NAN),
                paper(&format!("geweke {name}"))
            ));
        }
    }
    let paper_acceptance = if settings.learn.hyper.without_replacement {
        31.52
    } else {
        23.22
    };
    lines.push(format!(
        "MH acceptance (Table VI): {:.2}% (paper {paper_acceptance:.2}% {mode} rplcm)",
        100.0 * report["learning"]["mh_acceptance"].as_f64().unwrap_or(0.0)
    ));
    lines
}
