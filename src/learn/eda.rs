//! The synthetic EDA experiment of Chaspari et al. (2016), Section VII-A/B: its signals, and Fig. 3's cross-validated OMP error curves.
//!
//! N signals, each a constant c ~ U[0, 1] plus R ~ U{1..5} SCRs (raw phasic atoms, amplitude 1)
//! with t0 ~ U[1, 150], Trise, Tdecay ~ U[1, 20] (for 160 samples); signal i is learned with
//! K = L = R_i + 1 atoms. For each of the folds, the dictionary combined (Algorithm 2) from the
//! other folds' signals is judged by OMP on the held-out ones (relative RMS error after
//! 1..=`omp_iterations` OMP iterations), beside the initial Table III dictionary.

use rand::Rng;

use super::combine::combine;
use super::omp::{coherence, omp_error_curve, Atoms};
use super::signal_chain::{Initial, SignalResult};
use crate::model::AtomFamily;
use crate::rng::{PhiloxRng, Purpose, Stream, SHARED_CHAIN};

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

/// Fig. 3 and Table IV of a run: the error curves and coherences of the initial dictionary and of
/// the learned ones.
pub(crate) struct FoldEvaluation {
    /// Mean relative RMS error of the initial dictionary after 1..=`omp_iterations` OMP steps.
    pub initial_curve: Vec<f64>,
    /// The same of the learned dictionaries on their held-out signals, weighted by fold size.
    pub learned_curve: Vec<f64>,
    /// The initial dictionary.
    pub initial: Atoms,
    /// The dictionary learned without fold 0's signals.
    pub first_fold: Atoms,
}

impl FoldEvaluation {
    /// Cross-validates over `folds` folds (signal i is in fold i mod folds): each fold's signals
    /// judge the dictionary combined, with `centers` centres, from the other folds' `results`.
    pub fn of(
        family: &AtomFamily,
        signals: &[Vec<f64>],
        results: &[SignalResult],
        folds: usize,
        centers: usize,
        seed: u64,
        omp_iterations: usize,
    ) -> Self {
        let initial = Initial::new(family);
        let all: Vec<&Vec<f64>> = signals.iter().collect();
        let initial_curve = omp_error_curve(&initial.atoms, &all, omp_iterations);
        let mut learned_curve = vec![0.0; omp_iterations];
        let mut first_fold = None;
        for fold in 0..folds {
            let test = |i: usize| i % folds == fold;
            let train: Vec<&SignalResult> = results
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
            let (final_atoms, _) = combine(family, &train, centers, seed, fold as u32);
            let curve = omp_error_curve(&final_atoms, &held, omp_iterations);
            for (a, c) in learned_curve.iter_mut().zip(&curve) {
                *a += c * held.len() as f64 / signals.len() as f64;
            }
            first_fold.get_or_insert(final_atoms);
        }
        FoldEvaluation {
            initial_curve,
            learned_curve,
            initial: initial.atoms,
            first_fold: first_fold.unwrap_or(Atoms {
                d: family.dim(),
                cols: Vec::new(),
            }),
        }
    }

    /// The coherence of the dictionary learned without fold 0.
    pub fn learned_coherence(&self) -> f64 {
        coherence(&self.first_fold)
    }
}
