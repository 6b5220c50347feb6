//! The orchestrator: initialises chains, runs K outer iterations on a backend, decides MH on the
//! host, hands the samples to a sink and keeps a small per-iteration trace for diagnostics.

pub mod settings;

use std::time::Instant;

use serde::Serialize;

pub use settings::{Init, SamplerSettings};

use crate::backend::Backend;
use crate::dynamics::MhRule;
use crate::rng::{philox::index_from_word, Purpose, Stream, SHARED_CHAIN};
use crate::target::Target;
use crate::Result;

/// Number of fixed random projections of X traced per chain and iteration (for R-hat and ESS).
pub const PROJECTIONS: usize = 4;

/// Receives the samples as they are produced, so a run's memory does not grow with K.
pub trait SampleSink {
    /// Sample `outer` (1-based) of every chain: codes C × p and images C × d.
    fn record(&mut self, outer: u32, codes: &[f32], images: &[f32]) -> Result<()>;
}

/// Keeps every sample in memory: codes K × C × p and images K × C × d.
#[derive(Clone, Debug, Default)]
pub struct MemorySink {
    /// Codes X^k, K × C × p (sample k of chain c at (k·C + c)·p).
    pub codes: Vec<f32>,
    /// Images A X^k, K × C × d.
    pub images: Vec<f32>,
}

impl SampleSink for MemorySink {
    fn record(&mut self, _outer: u32, codes: &[f32], images: &[f32]) -> Result<()> {
        self.codes.extend_from_slice(codes);
        self.images.extend_from_slice(images);
        Ok(())
    }
}

/// Everything a run produced besides the samples themselves.
#[derive(Clone, Debug, Default)]
pub struct SampleRun {
    /// The last images A X^K, C × d.
    pub final_images: Vec<f32>,
    /// Per outer iteration and chain (K × C × PROJECTIONS): ⟨v_i, X⟩ for fixed random unit v_i.
    pub projections: Vec<f32>,
    /// Images A X^0 the chains started from, C × d.
    pub start_images: Vec<f32>,
    /// The data points whose LASSO codes started the chains (LASSO initialisation only).
    pub start_indices: Option<Vec<usize>>,
    /// Per outer iteration and chain (K × C): the MH decision's log α.
    pub log_alpha: Vec<f64>,
    /// Per outer iteration and chain (K × C): U(X) − const before the iteration.
    pub energies: Vec<f32>,
    /// Accepted proposals per chain.
    pub accepted: Vec<u32>,
    /// Divergent (NaN or infinite) proposals per chain, all rejected.
    pub divergent: Vec<u32>,
    /// Wall-clock seconds of each phase.
    pub timings: Timings,
}

/// Wall-clock seconds spent in each phase of a run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Timings {
    /// Initialisation (LASSO encoding or noise) and upload.
    pub init_seconds: f64,
    /// The K outer iterations.
    pub sampling_seconds: f64,
    /// Of which in the host's MH decisions.
    pub host_mh_seconds: f64,
}

/// The chains' starting positions (C × p) and, for LASSO starts, the data points encoded.
pub fn initial_positions(
    backend: &mut dyn Backend,
    target: &Target,
    settings: &SamplerSettings,
) -> Result<(Vec<f32>, Option<Vec<usize>>)> {
    let (p, chains) = (target.p(), settings.chains);
    let seed = settings.dynamics.seed;
    match settings.init {
        Init::Noise => {
            let mut positions = vec![0f32; chains * p];
            for (c, row) in positions.chunks_mut(p).enumerate() {
                Stream::new(seed, c as u32, 0, 0, Purpose::InitNoise).fill_normal(row);
            }
            Ok((positions, None))
        }
        Init::Lasso => {
            let n = target.observations.n as u32;
            let picks: Vec<usize> = (0..chains)
                .map(|c| {
                    index_from_word(
                        Stream::new(seed, c as u32, 0, 0, Purpose::InitPick).block(0)[0],
                        n,
                    ) as usize
                })
                .collect();
            let images: Vec<f32> = picks
                .iter()
                .flat_map(|&i| target.observations.row(i))
                .collect();
            let codes = backend.encode(&images, target.lam, settings.lasso_iterations)?;
            Ok((codes, Some(picks)))
        }
    }
}

/// The fixed unit vectors the trace projects X on (PROJECTIONS × p), from the seed-independent
/// shared stream so every run of a problem traces the same directions.
pub fn projection_vectors(p: usize) -> Vec<f32> {
    let mut v = vec![0f32; PROJECTIONS * p];
    for (i, row) in v.chunks_mut(p).enumerate() {
        Stream::new(0, SHARED_CHAIN, i as u32, 0, Purpose::Projection).fill_normal(row);
        let norm = row
            .iter()
            .map(|x| x * x)
            .sum::<f32>()
            .sqrt()
            .max(f32::MIN_POSITIVE);
        row.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// Runs K outer iterations of the chosen method (RMLD: Algorithms 1 and 3; MALA; HMC) on `backend`, handing every sample to
/// `sink`; `progress` is told after each outer iteration.
pub fn run(
    backend: &mut dyn Backend,
    target: &Target,
    settings: &SamplerSettings,
    sink: &mut dyn SampleSink,
    progress: &mut dyn FnMut(u32),
) -> Result<SampleRun> {
    settings.validate()?;
    let chains = settings.chains;
    let seed = settings.dynamics.seed;
    let started = Instant::now();
    let (positions, start_indices) = initial_positions(backend, target, settings)?;
    backend.load_positions(&positions)?;
    let start_images = backend.images()?;
    let mut run = SampleRun {
        start_images,
        start_indices,
        accepted: vec![0; chains],
        divergent: vec![0; chains],
        ..SampleRun::default()
    };
    run.timings.init_seconds = started.elapsed().as_secs_f64();

    let rule = MhRule {
        enabled: settings.mh,
        discount: settings.discount,
        delta: settings.dynamics.delta(),
        method: settings.dynamics.method,
    };
    let p = target.p();
    let projections = projection_vectors(p);
    let sampling = Instant::now();
    for outer in 1..=settings.samples {
        let terms = backend.propose(outer)?;
        let host = Instant::now();
        let mut mask = vec![false; chains];
        for (c, t) in terms.iter().enumerate() {
            let decision = rule.decide(t, seed, c as u32, outer);
            mask[c] = decision.accepted;
            run.accepted[c] += decision.accepted as u32;
            run.divergent[c] += decision.divergent as u32;
            run.log_alpha.push(decision.log_alpha);
            run.energies.push(t.energy_current);
        }
        run.timings.host_mh_seconds += host.elapsed().as_secs_f64();
        backend.accept(&mask)?;
        let codes = backend.positions()?;
        let images = backend.images()?;
        for x in codes.chunks(p) {
            run.projections.extend(
                projections
                    .chunks(p)
                    .map(|v| v.iter().zip(x).map(|(a, b)| a * b).sum::<f32>()),
            );
        }
        sink.record(outer, &codes, &images)?;
        run.final_images = images;
        progress(outer);
    }
    run.timings.sampling_seconds = sampling.elapsed().as_secs_f64();
    Ok(run)
}

impl SampleRun {
    /// Accepted proposals over all proposals.
    pub fn acceptance_rate(&self) -> f64 {
        let proposals = self.log_alpha.len().max(1) as f64;
        self.accepted.iter().map(|&a| a as f64).sum::<f64>() / proposals
    }

    /// The mean Euclidean distance between each chain's starting image and its last image.
    pub fn mean_distance_moved(&self) -> f64 {
        let chains = self.accepted.len().max(1);
        let d = self.start_images.len() / chains;
        if d == 0 || self.final_images.len() != self.start_images.len() {
            return 0.0;
        }
        let total: f64 = self
            .final_images
            .chunks(d)
            .zip(self.start_images.chunks(d))
            .map(|(a, b)| {
                a.iter()
                    .zip(b)
                    .map(|(x, y)| ((x - y) as f64).powi(2))
                    .sum::<f64>()
                    .sqrt()
            })
            .sum();
        total / chains as f64
    }
}
