//! Settings of parametric dictionary learning (`DictionarySettings`) and of the synthetic EDA experiment, the atom family they name, and the signals a dataset gives.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::hyper::DictionaryHyper;
use super::signals::ChainSettings;
use crate::io::{Dataset, Pixels};
use crate::model::AtomFamily;
use crate::{Error, Result};

/// Which atom family to learn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
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
    /// Replace the files an earlier run wrote into `out` (otherwise the run is refused).
    pub force: bool,
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
            force: false,
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
                    "must leave at least 20 of the {} iterations for the Geweke diagnostic, so \
                     at most {}, got {}",
                    self.iterations,
                    self.iterations.saturating_sub(20),
                    self.burn_in
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

/// A dataset's rows as signals of f64 samples.
pub(crate) fn dataset_rows(dataset: &Dataset) -> Vec<Vec<f64>> {
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

impl EdaExperimentSettings {
    /// Checks the settings; errors name the setting and its range.
    pub fn validate(&self) -> Result<()> {
        self.learn.validate()?;
        if self.signals < 2 || self.folds < 2 || self.folds > self.signals {
            return Err(Error::usage(
                "folds",
                format!(
                    "need 2 ≤ folds ≤ signals, got {} folds for {} signals",
                    self.folds, self.signals
                ),
            ));
        }
        if !(1..=50).contains(&self.omp_iterations) {
            return Err(Error::usage(
                "omp_iterations",
                format!("must be in 1..=50, got {}", self.omp_iterations),
            ));
        }
        if self.len < 20 {
            return Err(Error::usage(
                "len",
                format!("must be at least 20 samples, got {}", self.len),
            ));
        }
        Ok(())
    }
}
