//! Parametric dictionary learning (`rmld dictionary learn`): per-signal MH-within-Gibbs, then Algorithm 2's K-means combination.
//!
//! Each signal's chain ([`run_signal`](super::dict_mcmc)) runs independently (rayon, in chunks);
//! after every chunk the finished signals' results are checkpointed, so an interrupted run resumes
//! where it stopped and ends bit for bit as an uninterrupted one. The best dictionary of every
//! signal (lowest OMP error) gives the parameters of the atoms OMP picks from it; K-means on
//! them gives the final atoms (for EDA: the learned (Trise, Tdecay) shapes replicated over the
//! onsets t0 ∈ {0, 10, ...}, beside the fixed tonic atoms). Outputs, each written atomically:
//! dictionary.npy (d × p, what `sample --dictionary` reads), atoms.png and report.json.

use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::dict_mcmc::{
    coherence, group_names, kmeans, omp, run_signal, Atoms, DictionaryHyper, Initial, ParamPrior,
    SignalResult,
};
use super::{Observer, Outcome, Phase};
use crate::io::{self, Dataset, Pixels};
use crate::model::{AtomFamily, Dictionary};
use crate::{Error, Result};

/// The checkpoint file of an unfinished dictionary-learning run, in its output folder.
pub const DICTIONARY_CHECKPOINT: &str = "dictionary-checkpoint.bin";

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

/// Checks the settings that depend on the family (ν0 > Q − 1).
fn check_family(family: &AtomFamily, hyper: &DictionaryHyper) -> Result<()> {
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

/// What [`learn_signals`] returns: every finished signal's result, and whether it stopped early.
#[derive(Clone, Debug)]
pub struct Learned {
    /// One result per finished signal, in signal order.
    pub results: Vec<SignalResult>,
    /// True when the observer asked to stop before every signal was done.
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
    settings: &DictionarySettings,
) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let key = serde_json::json!({
        "family": family, "iterations": settings.iterations, "burn_in": settings.burn_in,
        "seed": settings.seed, "hyper": settings.hyper, "atoms": atoms,
    });
    h.update(key.to_string().as_bytes());
    for s in signals {
        for v in s {
            h.update(&v.to_le_bytes());
        }
    }
    h.digest()
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
    if path.exists() {
        let bytes = std::fs::read(&path).map_err(|source| Error::Output {
            path: path.clone(),
            source,
        })?;
        let checkpoint: Checkpoint = postcard::from_bytes(&bytes)
            .map_err(|e| Error::input(&path, format!("not a dictionary checkpoint: {e}")))?;
        if checkpoint.fingerprint != print || checkpoint.results.len() > signals.len() {
            return Err(Error::usage(
                "out",
                format!(
                    "{} holds the checkpoint of a different run (other data or settings): \
                     remove it or choose another output folder",
                    path.display()
                ),
            ));
        }
        results = checkpoint.results;
        observer.notice(&super::Notice::Resuming {
            out: out.to_path_buf(),
            completed: results.len() as u32,
            samples: signals.len() as u32,
        });
    }
    observer.phase_start(&Phase {
        name: "dictionary learning",
        len: Some(signals.len() as u64),
        unit: "signals",
    });
    observer.phase_advance(results.len() as u64);
    let mut interrupted = false;
    while results.len() < signals.len() {
        if observer.stop_requested() {
            interrupted = true;
            break;
        }
        let start = results.len();
        let end = (start + settings.chunk).min(signals.len());
        let chunk: Vec<SignalResult> = (start..end)
            .into_par_iter()
            .map(|i| {
                run_signal(
                    family,
                    &initial,
                    &prior,
                    &settings.hyper,
                    &signals[i],
                    atoms[i],
                    settings.iterations,
                    settings.burn_in,
                    settings.seed,
                    i as u32,
                )
            })
            .collect();
        results.extend(chunk);
        observer.phase_advance(results.len() as u64);
        if results.len() < signals.len() {
            let checkpoint = Checkpoint {
                fingerprint: print,
                results,
            };
            let bytes = postcard::to_allocvec(&checkpoint)
                .map_err(|e| Error::Internal(format!("dictionary checkpoint: {e}")))?;
            io::write_atomic(&path, |w| w.write_all(&bytes))?;
            results = checkpoint.results;
        }
    }
    observer.phase_finish();
    if !interrupted && path.exists() {
        std::fs::remove_file(&path).map_err(|source| Error::Output {
            path: path.clone(),
            source,
        })?;
    }
    Ok(Learned {
        results,
        interrupted,
    })
}

/// The final dictionary from the signals' best parameters (Algorithm 2): K-means with `centers`
/// centres (over (Trise, Tdecay) for EDA, replicated over the onsets; over all parameters for
/// Gabor), after the family's fixed atoms. Returns the atoms and the centres' parameters.
pub(crate) fn combine(
    family: &AtomFamily,
    results: &[&SignalResult],
    centers: usize,
    seed: u64,
    stream: u32,
) -> (Atoms, Vec<Vec<f64>>) {
    let points: Vec<Vec<f64>> = results
        .iter()
        .flat_map(|r| r.best_params.iter().cloned())
        .collect();
    let q = family.q();
    let units = family.units();
    let shifts = family.shifts();
    let dims: Vec<usize> = if shifts.is_empty() {
        (0..q).collect()
    } else {
        (1..q).collect()
    };
    let centres = kmeans(&points, &dims, &units, centers, seed, stream);
    let d = family.dim();
    // The fixed atoms, less those equal to an earlier one up to sign (Table III's three constant
    // tonic atoms are one atom up to sign; the learned dictionary keeps one).
    let mut cols: Vec<f64> = Vec::new();
    for a in family.fixed_atoms() {
        let duplicate = cols
            .chunks(d)
            .any(|b| b.iter().zip(&a).map(|(x, y)| x * y).sum::<f64>().abs() > 1.0 - 1e-12);
        if !duplicate {
            cols.extend_from_slice(&a);
        }
    }
    let mut params = Vec::new();
    let mut a = vec![0.0; d];
    for c in &centres {
        let thetas: Vec<Vec<f64>> = if shifts.is_empty() {
            vec![c.clone()]
        } else {
            shifts
                .iter()
                .map(|&t0| std::iter::once(t0).chain(c.iter().copied()).collect())
                .collect()
        };
        for t in thetas {
            let t: Vec<f64> = t
                .iter()
                .zip(family.ranges())
                .map(|(&v, (lo, hi))| v.clamp(lo, hi))
                .collect();
            if family.atom(&t, &mut a) {
                cols.extend_from_slice(&a);
                params.push(t);
            }
        }
    }
    (Atoms { d, cols }, params)
}

/// Atoms as the crate's d × p row-major f32 dictionary.
pub(crate) fn to_dictionary(atoms: &Atoms) -> Dictionary {
    let (d, p) = (atoms.d, atoms.len());
    let mut a = vec![0f32; d * p];
    for j in 0..p {
        for (i, &v) in atoms.col(j).iter().enumerate() {
            a[i * p + j] = v as f32;
        }
    }
    Dictionary { d, p, a }
}

/// Writes at most 256 atoms as a PNG grid: Gabor atoms as images (scaled by their largest
/// |value|), 1-D atoms as 32-pixel-high line plots.
pub(crate) fn write_atoms_png(path: &Path, family: &AtomFamily, atoms: &Atoms) -> Result<()> {
    let shown = atoms.len().min(256);
    let d = atoms.d;
    match *family {
        AtomFamily::Gabor { side } => {
            let mut tiles = Vec::with_capacity(shown * d);
            for k in 0..shown {
                let col = atoms.col(k);
                let top = col.iter().fold(1e-12f64, |m, v| m.max(v.abs()));
                tiles.extend(col.iter().map(|v| (v / top) as f32));
            }
            io::write_png_grid(path, &[(&tiles, shown)], side, side, 16, (-1.0, 1.0), 3)
        }
        AtomFamily::Eda { .. } => {
            let h = 32usize;
            let mut tiles = vec![0f32; shown * h * d];
            for k in 0..shown {
                let col = atoms.col(k);
                let lo = col.iter().cloned().fold(f64::INFINITY, f64::min);
                let hi = col.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let span = (hi - lo).max(1e-12);
                let row = |v: f64| ((h - 1) as f64 * (1.0 - (v - lo) / span)).round() as usize;
                let tile = &mut tiles[k * h * d..(k + 1) * h * d];
                for t in 0..d {
                    let (a, b) = if t + 1 < d {
                        (row(col[t]), row(col[t + 1]))
                    } else {
                        (row(col[t]), row(col[t]))
                    };
                    for y in a.min(b)..=a.max(b) {
                        tile[y * d + t] = 1.0;
                    }
                }
            }
            io::write_png_grid(path, &[(&tiles, shown)], h, d, 4, (0.0, 1.0), 2)
        }
    }
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

/// MH acceptance, Geweke pass rates per group and the mean OMP errors of a run's results, as JSON.
pub(crate) fn summarize(family: &AtomFamily, results: &[SignalResult]) -> serde_json::Value {
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

/// Mean OMP relative RMS error after 1..=`max_iterations` steps of the signals on `atoms` (a
/// signal whose OMP stops early keeps its last error).
pub(crate) fn omp_error_curve(
    atoms: &Atoms,
    signals: &[&Vec<f64>],
    max_iterations: usize,
) -> Vec<f64> {
    let sums = signals
        .par_iter()
        .map(|x| {
            let (_, _, errs) = omp(atoms, x, max_iterations);
            (0..max_iterations)
                .map(|i| errs.get(i).or(errs.last()).copied().unwrap_or(1.0))
                .collect::<Vec<f64>>()
        })
        .reduce(
            || vec![0.0; max_iterations],
            |a, b| a.iter().zip(&b).map(|(x, y)| x + y).collect(),
        );
    sums.iter()
        .map(|v| v / signals.len().max(1) as f64)
        .collect()
}
