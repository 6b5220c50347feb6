//! The synthetic EDA experiment of Chaspari et al. (2016), Section VII-A/B: Fig. 3's error curves, Tables IV-VI.
//!
//! N signals, each a constant c ~ U[0, 1] plus R ~ U{1..5} SCRs (raw phasic atoms, amplitude 1)
//! with t0 ~ U[1, 150], Trise, Tdecay ~ U[1, 20] (for 160 samples); signal i is learned with
//! K = L = R_i + 1 atoms. The chains run once on all signals; then, for each of the folds, the
//! dictionary combined (Algorithm 2) from the other folds' signals is judged by OMP on the
//! held-out ones (relative RMS error after 1..=10 OMP iterations), beside the initial Table III
//! dictionary.

use std::path::PathBuf;
use std::time::Instant;

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::dict_mcmc::{coherence, Initial, SignalResult};
use super::dictionary::{
    combine, interrupted_outcome, learn_signals, omp_error_curve, summarize, write_atoms_png,
    DictionarySettings,
};
use super::{Observer, Outcome};
use crate::io;
use crate::model::AtomFamily;
use crate::rng::{PhiloxRng, Purpose, Stream, SHARED_CHAIN};
use crate::{Error, Result};

/// The paper's numbers for the synthetic data, sampling with replacement (Tables IV-VI).
pub const PAPER_SYNTHETIC: &[(&str, f64)] = &[
    ("coherence initial", 1.0),
    ("coherence MCMC", 0.9989),
    ("geweke c", 0.93),
    ("geweke z", 0.93),
    ("geweke gamma_eps", 0.91),
    ("geweke pi", 0.93),
    ("geweke theta.t0", 0.68),
    ("geweke theta.trise", 0.91),
    ("geweke theta.tdecay", 0.92),
    ("geweke g.t0", 0.75),
    ("geweke g.trise", 0.90),
    ("geweke g.tdecay", 0.90),
    ("geweke G", 0.81),
    ("mh acceptance", 0.2322),
];

/// Settings of the synthetic experiment (`rmld dictionary eda-experiment`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EdaExperimentSettings {
    /// The output folder (report.json, fig3.csv, atoms.png; the checkpoint while running).
    pub out: PathBuf,
    /// Synthetic signals N (paper: 1000).
    pub signals: usize,
    /// Samples per signal (paper: 160, 5 s at 32 Hz).
    pub len: usize,
    /// Cross-validation folds (paper: 10).
    pub folds: usize,
    /// OMP iterations of the error curves (1..=this).
    pub omp_iterations: usize,
    /// The learning settings (iterations, burn-in, centres N_b, seed, hyperparameters).
    pub learn: DictionarySettings,
}

impl Default for EdaExperimentSettings {
    fn default() -> Self {
        EdaExperimentSettings {
            out: PathBuf::from("rmld-eda-experiment"),
            signals: 1000,
            len: 160,
            folds: 10,
            omp_iterations: 10,
            learn: DictionarySettings::default(),
        }
    }
}

/// The synthetic signals and their SCR counts R (seeded, Philox).
pub fn synthetic_eda(n: usize, len: usize, seed: u64) -> (Vec<Vec<f64>>, Vec<usize>) {
    let family = AtomFamily::Eda { len };
    let mut signals = Vec::with_capacity(n);
    let mut counts = Vec::with_capacity(n);
    let mut raw = vec![0.0; len];
    let t0_hi = (len as f64 - 10.0).max(2.0);
    for i in 0..n {
        let mut rng = PhiloxRng::new(Stream::new(
            seed,
            SHARED_CHAIN,
            i as u32,
            2,
            Purpose::DictionaryLearning,
        ));
        let c: f64 = rng.random();
        let r = rng.random_range(1..=5usize);
        let mut x = vec![c; len];
        for _ in 0..r {
            let t0 = rng.random_range(1.0..t0_hi);
            let rise = rng.random_range(1.0..20.0);
            let decay = rng.random_range(1.0..20.0);
            family.raw_atom(&[t0, rise, decay], &mut raw);
            x.iter_mut().zip(&raw).for_each(|(a, b)| *a += b);
        }
        signals.push(x);
        counts.push(r);
    }
    (signals, counts)
}

/// Runs the experiment; report.json holds the error curves, coherences, Geweke pass rates and
/// MH acceptance beside the paper's values.
pub fn eda_experiment(
    settings: &EdaExperimentSettings,
    observer: &dyn Observer,
) -> Result<Outcome> {
    settings.learn.validate()?;
    if settings.signals < 2 || settings.folds < 2 || settings.folds > settings.signals {
        return Err(Error::usage(
            "folds",
            format!(
                "need 2 ≤ folds ≤ signals, got {} folds for {} signals",
                settings.folds, settings.signals
            ),
        ));
    }
    if !(1..=50).contains(&settings.omp_iterations) {
        return Err(Error::usage(
            "omp_iterations",
            format!("must be in 1..=50, got {}", settings.omp_iterations),
        ));
    }
    if settings.len < 20 {
        return Err(Error::usage(
            "len",
            format!("must be at least 20 samples, got {}", settings.len),
        ));
    }
    let family = AtomFamily::Eda { len: settings.len };
    let (signals, counts) = synthetic_eda(settings.signals, settings.len, settings.learn.seed);
    let atoms: Vec<usize> = counts.iter().map(|r| r + 1).collect();
    io::prepare_output_dir(&settings.out)?;
    let _lock = super::lock_output(&settings.out)?;
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
    let initial = Initial::new(&family);
    let all: Vec<&Vec<f64>> = signals.iter().collect();
    let initial_curve = omp_error_curve(&initial.atoms, &all, settings.omp_iterations);
    let mut learned_curve = vec![0.0; settings.omp_iterations];
    let mut learned_coherence = 0.0;
    let mut atoms_learned = 0;
    for fold in 0..settings.folds {
        let test = |i: usize| i % settings.folds == fold;
        let train: Vec<&SignalResult> = learned
            .results
            .iter()
            .enumerate()
            .filter(|(i, _)| !test(*i))
            .map(|(_, r)| r)
            .collect();
        let held: Vec<&Vec<f64>> = signals
            .iter()
            .enumerate()
            .filter(|(i, _)| test(*i))
            .map(|(_, s)| s)
            .collect();
        let (final_atoms, _) = combine(
            &family,
            &train,
            settings.learn.centers,
            settings.learn.seed,
            fold as u32,
        );
        let curve = omp_error_curve(&final_atoms, &held, settings.omp_iterations);
        for (a, c) in learned_curve.iter_mut().zip(&curve) {
            *a += c * held.len() as f64 / signals.len() as f64;
        }
        if fold == 0 {
            learned_coherence = coherence(&final_atoms);
            atoms_learned = final_atoms.len();
            write_atoms_png(&settings.out.join("atoms.png"), &family, &final_atoms)?;
        }
    }
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
    io::write_atomic(&settings.out.join("fig3.csv"), |w| {
        w.write_all(csv.as_bytes())
    })?;
    let report = serde_json::json!({
        "experiment": "Chaspari et al. 2016, Section VII-A/B synthetic EDA, sampling with replacement",
        "settings": settings,
        "seconds_learning": learn_seconds,
        "seconds_total": started.elapsed().as_secs_f64(),
        "threads": rayon::current_num_threads(),
        "omp_iterations": (1..=settings.omp_iterations).collect::<Vec<_>>(),
        "relative_rms_initial": initial_curve,
        "relative_rms_learned": learned_curve,
        "atoms_initial": initial.atoms.len(),
        "atoms_learned": atoms_learned,
        "coherence_initial": coherence(&initial.atoms),
        "coherence_learned": learned_coherence,
        "learning": summary,
        "paper": PAPER_SYNTHETIC.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect::<serde_json::Map<_, _>>(),
    });
    io::write_json_atomic(&settings.out.join("report.json"), &report)?;
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
    Ok(Outcome {
        interrupted: false,
        report,
        summary: lines,
        draw_stats: None,
    })
}
