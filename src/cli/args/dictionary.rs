//! `rmld dictionary learn`'s and `rmld dictionary eda-experiment`'s arguments.

use std::path::PathBuf;

use clap::Args;

use rmld::session::{DictionarySettings, EdaExperimentSettings, FamilyKind};

/// The library's learning defaults, which the options below show and fill in.
fn learn() -> DictionarySettings {
    DictionarySettings::default()
}

/// The library's experiment defaults.
fn experiment() -> EdaExperimentSettings {
    EdaExperimentSettings::default()
}

#[derive(Args, Debug)]
pub struct DictCommonArgs {
    /// The output folder.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// MCMC iterations per signal (paper: 1000).
    #[arg(long, default_value_t = learn().iterations)]
    pub iterations: u32,
    /// Iterations left out of the Geweke diagnostic (paper: 100).
    #[arg(long, default_value_t = learn().burn_in)]
    pub burn_in: u32,
    /// K-means centres N_b of the combination step (paper: 100, 225, 400).
    #[arg(long, default_value_t = learn().centers)]
    pub centers: usize,
    /// The seed of every draw.
    #[arg(long, default_value_t = learn().seed)]
    pub seed: u64,
    /// Scale τ of the Student-t MH proposal, in the family's units. Default: 4 for EDA
    /// (samples), 0.3 for Gabor.
    #[arg(long, value_name = "TAU")]
    pub proposal_scale: Option<f64>,
    /// Degrees of freedom of the Student-t MH proposal.
    #[arg(long, default_value_t = learn().hyper.proposal_dof)]
    pub proposal_dof: f64,
    /// Nelder–Mead iterations per mode search.
    #[arg(long, default_value_t = learn().hyper.mode_iterations)]
    pub mode_iterations: u64,
    /// Signals per checkpoint.
    #[arg(long, default_value_t = learn().chunk)]
    pub chunk: usize,
    /// Sample atoms without replacement (the paper's Wallenius prior, Section II-B): a signal's
    /// atoms are distinct. Default: with replacement (Multinomial, Section II-A).
    #[arg(long)]
    pub without_replacement: bool,
    /// Replace the files an earlier run wrote into --out (otherwise the run is refused).
    #[arg(long)]
    pub force: bool,
}

impl DictCommonArgs {
    fn apply(&self, s: &mut DictionarySettings) {
        s.out = self.out.clone();
        s.iterations = self.iterations;
        s.burn_in = self.burn_in;
        s.centers = self.centers;
        s.seed = self.seed;
        s.chunk = self.chunk;
        s.hyper.proposal_scale = self.proposal_scale;
        s.hyper.proposal_dof = self.proposal_dof;
        s.hyper.mode_iterations = self.mode_iterations;
        s.hyper.without_replacement = self.without_replacement;
        s.force = self.force;
    }
}

/// `rmld dictionary learn`.
#[derive(Args, Debug)]
pub struct DictLearnArgs {
    /// The signals: an NPY of shape (N, d) or any dataset `sample` reads. Default: the embedded
    /// optdigits digits.
    #[arg(long, value_name = "PATH")]
    pub data: Option<PathBuf>,
    /// The atom family: eda (1-D signals) or gabor (square images).
    #[arg(long, value_enum, default_value_t = learn().family)]
    pub family: FamilyKind,
    /// Learn on the first N signals only.
    #[arg(long, value_name = "N")]
    pub signals: Option<usize>,
    /// Atoms per signal L.
    #[arg(long, default_value_t = learn().atoms_per_signal)]
    pub atoms_per_signal: usize,
    #[command(flatten)]
    pub common: DictCommonArgs,
}

impl DictLearnArgs {
    /// The library's settings.
    pub fn settings(&self) -> DictionarySettings {
        let mut s = DictionarySettings {
            data: self.data.clone(),
            family: self.family,
            signals: self.signals,
            atoms_per_signal: self.atoms_per_signal,
            ..Default::default()
        };
        self.common.apply(&mut s);
        s
    }
}

/// `rmld dictionary eda-experiment`.
#[derive(Args, Debug)]
pub struct EdaExperimentArgs {
    /// Synthetic signals (paper: 1000).
    #[arg(long, default_value_t = experiment().signals)]
    pub signals: usize,
    /// Cross-validation folds (paper: 10).
    #[arg(long, default_value_t = experiment().folds)]
    pub folds: usize,
    /// OMP iterations of the error curves.
    #[arg(long, default_value_t = experiment().omp_iterations)]
    pub omp_iterations: usize,
    #[command(flatten)]
    pub common: DictCommonArgs,
}

impl EdaExperimentArgs {
    /// The library's settings.
    pub fn settings(&self) -> EdaExperimentSettings {
        let mut s = EdaExperimentSettings {
            out: self.common.out.clone(),
            signals: self.signals,
            folds: self.folds,
            omp_iterations: self.omp_iterations,
            ..Default::default()
        };
        self.common.apply(&mut s.learn);
        s
    }
}
