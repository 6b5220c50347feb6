//! The orchestrator: initialises chains, runs K outer iterations on a backend, decides MH on the
//! host, hands the samples to a sink and keeps a small per-iteration trace for diagnostics.

pub(crate) mod adapt;
pub(crate) mod amortized;
pub(crate) mod augment;
pub(crate) mod backend_choice;
pub(crate) mod balance;
pub(crate) mod burn_in;
pub(crate) mod checkpoint;
pub(crate) mod draw_stats;
pub(crate) mod encode;
pub(crate) mod encoder;
pub(crate) mod estimate;
pub(crate) mod identity;
pub(crate) mod observer;
pub(crate) mod phase_clock;
pub(crate) mod problem;
pub(crate) mod quality;
pub(crate) mod report;
pub(crate) mod resume;
pub(crate) mod sample_report;
pub(crate) mod settings;
pub(crate) mod shard;
pub(crate) mod streams;
pub(crate) mod warm_up;

use std::time::Instant;

use serde::Serialize;

pub use adapt::{
    halton, mean_acceptance, Adaptation, ClassSteps, StepAdaptation, TrajectoryAdaptation,
    HMC_TARGET_ACCEPTANCE, MALA_TARGET_ACCEPTANCE, MAX_LEAPFROG_STEPS,
};
pub use augment::{parse_ratio, AugmentPlan, AugmentSink};
pub use balance::Balance;
pub use burn_in::{AutoBurnIn, BurnInMonitor, SettleCheck};
pub use checkpoint::Checkpoint;
pub use settings::{Init, KeepPolicy, SamplerSettings};
pub use warm_up::warm_up;

use crate::backend::Backend;
use crate::diagnostics::degenerate::{self, Degenerate, DrawWatch};
use crate::methods::MhRule;
use crate::model::likelihood::start_rows_from;
use crate::model::{code_l1_norms, gibbs_precision, residual_norms, NoiseModel, Target};
use crate::rng::{Purpose, Stream, SHARED_CHAIN};
use crate::{Error, Result};

/// Number of fixed random projections of X traced per chain and iteration (for R-hat and ESS).
pub const PROJECTIONS: usize = 4;

/// Receives the samples as they are produced, so a run's memory does not grow with K.
pub trait SampleSink {
    /// Sample `outer` (1-based) of every chain: codes C × p and images C × d.
    fn record(&mut self, outer: u32, codes: &[f32], images: &[f32]) -> Result<()>;

    /// An automatic burn-in ended after outer iteration `outer`: the draws after it are kept.
    fn warm_up_ended(&mut self, _outer: u32) {}

    /// True once the sink holds every draw it wants: the run ends there, before its last
    /// iteration when an automatic burn-in ended early (not an interruption).
    fn full(&self) -> bool {
        false
    }

    /// Makes everything recorded so far durable; called before every checkpoint.
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
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

/// Iterations the trace keeps at most 2× of before it halves itself (doubling its stride), so a
/// run's memory stays bounded whatever K is.
pub const TRACE_CAP: usize = 1024;

/// Everything a run produced besides the samples themselves; with the chains' positions, it is
/// the complete state a checkpoint saves.
#[derive(Clone, Debug, Default)]
pub struct SampleRun {
    /// Outer iterations completed.
    pub completed: u32,
    /// True when the run stopped early (an interruption) before its K iterations.
    pub interrupted: bool,
    /// The trace holds the outer iterations that are multiples of this stride (1 until K > 2 × TRACE_CAP).
    pub trace_stride: u32,
    /// The last images A X^K, C × d.
    pub final_images: Vec<f32>,
    /// Per traced outer iteration and chain (K' × C × PROJECTIONS): ⟨v_i, X⟩ for unit v_i.
    pub projections: Vec<f32>,
    /// Images A X^0 the chains started from, C × d.
    pub start_images: Vec<f32>,
    /// The data points whose LASSO codes started the chains (LASSO initialisation only).
    pub start_indices: Option<Vec<usize>>,
    /// Per traced outer iteration and chain (K' × C): the MH decision's log α.
    pub log_alpha: Vec<f64>,
    /// Per traced outer iteration and chain (K' × C): U(X) − const before the iteration.
    pub energies: Vec<f32>,
    /// Accepted proposals per chain.
    pub accepted: Vec<u32>,
    /// Divergent (NaN or infinite) proposals per chain, all rejected.
    pub divergent: Vec<u32>,
    /// Per chain, the prior's adaptive updates (SSGL) whose new latent state was not finite:
    /// each was discarded (the chain kept its previous state), so no sample came from it.
    pub prior_nonfinite: Vec<u32>,
    /// The prior's latent state after `completed` iterations (SSGL: `ssgl::stride(p)` values per
    /// chain; empty for Laplace), as the last checkpoint saw it.
    pub prior_state: Vec<f32>,
    /// The learned noise precision τ per chain after `completed` iterations (`--noise gibbs`;
    /// empty for a fixed σ²).
    pub noise_precision: Vec<f32>,
    /// Per traced outer iteration and chain (K' × C): τ after the iteration (`--noise gibbs`;
    /// empty for a fixed σ²).
    pub noise_trace: Vec<f32>,
    /// Wall-clock seconds of each phase.
    pub timings: Timings,
    /// The step size's warm-up adaptation so far (None: the run does not adapt).
    pub adaptation: Option<StepAdaptation>,
    /// Per-class step sizes (`Adaptation::per_class`), beside `adaptation`'s pooled state.
    pub class_steps: Option<ClassSteps>,
    /// The automatic burn-in so far (None: a fixed burn-in, or none).
    pub burn_in: Option<BurnInMonitor>,
}

/// Wall-clock seconds spent in each phase of a run.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct Timings {
    /// Initialisation (LASSO encoding or noise) and upload.
    pub init_seconds: f64,
    /// The K outer iterations.
    pub sampling_seconds: f64,
    /// Of which in the host's MH decisions.
    pub host_mh_seconds: f64,
    /// Of which in the warm-up's adaptation (step size, ChEES's read-back and gradient).
    #[serde(default)]
    pub adaptation_seconds: f64,
}

/// The chains' starting positions (C × p) and, for LASSO starts, the data points encoded.
pub fn initial_positions(
    backend: &mut dyn Backend,
    target: &Target,
    settings: &SamplerSettings,
) -> Result<(Vec<f32>, Option<Vec<usize>>)> {
    let (p, chains) = (target.p(), settings.chains);
    let (seed, offset) = (settings.dynamics.seed, settings.dynamics.chain_offset);
    match settings.init {
        Init::Noise => {
            let mut positions = vec![0f32; chains * p];
            for (c, row) in positions.chunks_mut(p).enumerate() {
                Stream::new(seed, offset + c as u32, 0, 0, Purpose::InitNoise).fill_normal(row);
            }
            Ok((positions, None))
        }
        Init::Lasso | Init::Data => {
            // Each chain picks from its own rows: its class's, or every row.
            let rows = target.chain_rows(chains)?;
            let picks = start_rows_from(&rows, seed, offset);
            let images: Vec<f32> = picks
                .iter()
                .flat_map(|&i| target.observations.row(i))
                .collect();
            if settings.init == Init::Data {
                if target.d() != p {
                    return Err(Error::Internal(format!(
                        "data starts need codes of the images' size, got p = {p}, d = {}",
                        target.d()
                    )));
                }
                return Ok((images, Some(picks)));
            }
            let lam = lasso_lambda(target, &images, chains)?;
            let codes = backend.encode(&images, lam, settings.lasso_iterations)?;
            Ok((codes, Some(picks)))
        }
    }
}

/// The LASSO starts' penalty: `target.lam` for a fixed σ²; with `--noise gibbs`, where λ is in
/// noise units (U = τ/2·||A X − m||² + λ√τ·||X||₁), λ·ŝ with ŝ the RMS of the start images
/// around their chains' means (the noise level a code of zero leaves, an upper bound on σ), so
/// the start codes scale with the data: argmin ½||y − A x||² + λ·ŝ·||x||₁ is the mode of the
/// target at τ = 1/ŝ².
pub fn lasso_lambda(target: &Target, images: &[f32], chains: usize) -> Result<f32> {
    if target.noise.is_fixed() {
        return Ok(target.lam);
    }
    let means = target.xbar_rows(chains)?;
    let n = images.len().max(1) as f64;
    let ss: f64 = images
        .iter()
        .zip(&means)
        .map(|(&y, &m)| (y as f64 - m as f64).powi(2))
        .sum();
    Ok((target.lam as f64 * (ss / n).sqrt()) as f32)
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

/// What a run calls back into besides the backend.
pub struct Hooks<'a> {
    /// Receives every sample.
    pub sink: &'a mut dyn SampleSink,
    /// Told after each outer iteration.
    pub progress: &'a mut dyn FnMut(u32),
    /// Asked after each outer iteration; true stops the run early (it returns `interrupted`).
    pub stop: &'a dyn Fn() -> bool,
    /// Every this many outer iterations (0: never), and at an early stop, `checkpoint` is called
    /// with the run so far and the chains' positions (C × p).
    pub checkpoint_every: u32,
    /// Asked after each outer iteration but the last; true calls `checkpoint` then too (a
    /// checkpoint on a timer).
    pub checkpoint_due: &'a dyn Fn() -> bool,
    /// See `checkpoint_every`.
    pub checkpoint: &'a mut dyn FnMut(&SampleRun, &[f32]) -> Result<()>,
}

/// Runs K outer iterations of the chosen method (RMLD: Algorithms 1 and 3; MALA; HMC) on
/// `backend`, handing every sample to
/// `sink`; `progress` is told after each outer iteration.
pub fn run(
    backend: &mut dyn Backend,
    target: &Target,
    settings: &SamplerSettings,
    sink: &mut dyn SampleSink,
    progress: &mut dyn FnMut(u32),
) -> Result<SampleRun> {
    let state = start(backend, target, settings)?;
    let hooks = Hooks {
        sink,
        progress,
        stop: &|| false,
        checkpoint_every: 0,
        checkpoint_due: &|| false,
        checkpoint: &mut |_, _| Ok(()),
    };
    continue_run(backend, target, settings, state, hooks)
}

/// Initialises the chains (noise or LASSO starts) on `backend`: the state before iteration 1.
pub fn start(
    backend: &mut dyn Backend,
    target: &Target,
    settings: &SamplerSettings,
) -> Result<SampleRun> {
    settings.validate()?;
    let chains = settings.chains;
    let started = Instant::now();
    target.noise.validate()?;
    let (positions, start_indices) = initial_positions(backend, target, settings)?;
    backend.load_positions(&positions)?;
    let start_images = backend.images()?;
    // A learned precision starts at its conditional draw given X^0 (outer iteration 0's stream).
    let noise_precision = noise_step(backend, target, settings, &start_images, &positions, 0)?;
    let mut run = SampleRun {
        trace_stride: 1,
        final_images: start_images.clone(),
        start_images,
        start_indices,
        accepted: vec![0; chains],
        divergent: vec![0; chains],
        prior_nonfinite: vec![0; chains],
        noise_precision,
        adaptation: settings.adapt.map(|a| {
            StepAdaptation::with_trajectory(
                settings.dynamics.eta,
                settings.dynamics.leapfrog_steps,
                a,
            )
        }),
        burn_in: settings.auto_burn_in.map(BurnInMonitor::new),
        class_steps: match settings.adapt {
            Some(a) if a.per_class => {
                let classes = class_of_chain(target, chains)?;
                let count = classes.iter().max().map_or(0, |&k| k as usize + 1);
                Some(ClassSteps::new(count, settings.dynamics.eta, a))
            }
            _ => None,
        },
        ..SampleRun::default()
    };
    run.timings.init_seconds = started.elapsed().as_secs_f64();
    Ok(run)
}

/// The Gibbs step of the noise precision (`NoiseModel::Gibbs`) after outer iteration `outer`
/// (0: the start): per chain τ from its conditional given X (`model::gibbs_precision`: the
/// residual ||A X − m||² from X's images and the chain's mean m, and ||X||₁ from `codes`),
/// drawn on the host from the chain's NoisePrecision stream (so every backend draws the same τ
/// from the same X), then set on the backend. Empty for a fixed σ².
pub fn noise_step(
    backend: &mut dyn Backend,
    target: &Target,
    settings: &SamplerSettings,
    images: &[f32],
    codes: &[f32],
    outer: u32,
) -> Result<Vec<f32>> {
    let NoiseModel::Gibbs { e, f } = target.noise else {
        return Ok(Vec::new());
    };
    let (chains, d, p) = (settings.chains, target.d(), target.p());
    let (seed, offset) = (settings.dynamics.seed, settings.dynamics.chain_offset);
    let means = target.xbar_rows(chains)?;
    let l1 = code_l1_norms(codes, p);
    let tau: Vec<f32> = residual_norms(images, &means, d)
        .iter()
        .zip(&l1)
        .enumerate()
        .map(|(c, (&r2, &l1))| {
            let chain = offset + c as u32;
            gibbs_precision(e, f, d, p, target.lam, r2, l1, seed, chain, outer)
        })
        .collect();
    backend.set_noise_precision(&tau)?;
    Ok(tau)
}

/// Runs the outer iterations after `state.completed` up to K; `backend` must hold the chains'
/// positions at `state` (after `start`, or loaded from a checkpoint). The samples are a pure
/// function of the seed and the iteration, so a continued run equals an uninterrupted one.
pub fn continue_run(
    backend: &mut dyn Backend,
    target: &Target,
    settings: &SamplerSettings,
    mut run: SampleRun,
    hooks: Hooks,
) -> Result<SampleRun> {
    settings.validate()?;
    let chains = settings.chains;
    let (seed, offset) = (settings.dynamics.seed, settings.dynamics.chain_offset);
    let mut rule = MhRule {
        enabled: settings.mh,
        discount: settings.discount,
        delta: settings.dynamics.delta(),
        method: settings.dynamics.method,
    };
    // An adapting run's step size is the adaptation's (also after a resume), fed to the backend
    // and to the MH rule's Δ before every iteration that changes it.
    let mut dynamics = settings.dynamics.clone();
    if run.adaptation.and_then(|a| a.trajectory).is_some() {
        // The backend's leapfrog count is the last iteration's, not the settings' (a run
        // continued after its warm-up): the first iteration sets its own.
        dynamics.leapfrog_steps = 0;
    }
    let classes = match run.class_steps {
        Some(_) => class_of_chain(target, chains)?,
        None => Vec::new(),
    };
    // Per-class steps: each chain's Δ for the MH rule (None: the rule's one Δ).
    let mut chain_delta = None;
    let mut steps = StepFeed {
        rule: &mut rule,
        dynamics: &mut dynamics,
        chain_delta: &mut chain_delta,
        classes: &classes,
    };
    steps.feed(backend, &run)?;
    let mut warmup_alpha = Vec::with_capacity(chains);
    // ChEES needs each warm-up iteration's starting positions.
    let chees = |run: &SampleRun| {
        run.adaptation
            .is_some_and(|a| !a.frozen() && a.trajectory.is_some())
    };
    let mut before = if chees(&run) {
        backend.positions()?
    } else {
        Vec::new()
    };
    let p = target.p();
    let projections = projection_vectors(p);
    let sampling = Instant::now();
    let already = run.timings.sampling_seconds;
    for outer in run.completed + 1..=settings.samples {
        // ChEES's jittered leapfrog count of this iteration (during the warm-up and after it).
        if let Some(t) = run.adaptation.and_then(|a| a.trajectory) {
            let leapfrog = t.steps_at(outer, steps.dynamics.eta);
            if leapfrog != steps.dynamics.leapfrog_steps {
                steps.dynamics.leapfrog_steps = leapfrog;
                backend.set_leapfrog_steps(leapfrog)?;
            }
        }
        let terms = backend.propose(outer)?;
        let host = Instant::now();
        let traced = outer.is_multiple_of(run.trace_stride);
        let ids = (seed, offset, outer);
        let mask = steps.decide(&terms, ids, traced, &mut run, &mut warmup_alpha);
        let warm_up = (warmup_alpha.as_slice(), before.as_slice(), chees(&run));
        adapt(backend, &mut run, &mut steps, warm_up, outer)?;
        run.timings.host_mh_seconds += host.elapsed().as_secs_f64();
        backend.accept(&mask)?;
        prior_update(backend, target, (&mut run, chains), outer)?;
        let codes = backend.positions()?;
        if chees(&run) {
            before.clone_from(&codes);
        }
        let images = backend.images()?;
        if target.noise.is_gibbs() {
            run.noise_precision = noise_step(backend, target, settings, &images, &codes, outer)?;
            if traced {
                run.noise_trace.extend_from_slice(&run.noise_precision);
            }
        }
        if traced {
            run.trace_projections(&codes, &projections, p);
            run.thin_trace_if_full(chains);
        }
        let checking = Instant::now();
        let ended = end_warm_up(&mut run, settings, outer);
        if run.burn_in.is_some() {
            run.timings.adaptation_seconds += checking.elapsed().as_secs_f64();
        }
        if ended {
            steps.feed(backend, &run)?;
            hooks.sink.warm_up_ended(outer);
        }
        (hooks.sink).record(outer, &codes, &images)?;
        run.final_images = images;
        run.completed = outer;
        run.timings.sampling_seconds = already + sampling.elapsed().as_secs_f64();
        (hooks.progress)(outer);
        let going_on = outer < settings.samples;
        let stopping = going_on && (hooks.stop)();
        let every = hooks.checkpoint_every > 0 && outer.is_multiple_of(hooks.checkpoint_every);
        if stopping || every || (going_on && (hooks.checkpoint_due)()) {
            hooks.sink.sync()?;
            run.prior_state = backend.prior_state()?.unwrap_or_default();
            (hooks.checkpoint)(&run, &codes)?;
        }
        if stopping {
            run.interrupted = true;
            break;
        }
        if hooks.sink.full() {
            break;
        }
    }
    run.prior_state = backend.prior_state()?.unwrap_or_default();
    Ok(run)
}

/// The prior's adaptive update after the accept of outer iteration `outer`, where it adapts
/// (SSGL): each of the `chains` chains' discarded non-finite updates counted in `run`.
fn prior_update(
    backend: &mut dyn Backend,
    target: &Target,
    (run, chains): (&mut SampleRun, usize),
    outer: u32,
) -> Result<()> {
    if target.prior.ssgl().is_some_and(|s| s.adapts_at(outer)) {
        let status = backend.prior_update(outer)?;
        run.prior_nonfinite.resize(chains, 0);
        for (count, s) in run.prior_nonfinite.iter_mut().zip(status) {
            *count += s;
        }
    }
    Ok(())
}

/// The automatic burn-in's check after outer iteration `outer`; when it ends the warm-up there,
/// the step size (and ChEES's length) freeze at the last window's values. True when it ended.
fn end_warm_up(run: &mut SampleRun, settings: &SamplerSettings, outer: u32) -> bool {
    let Some(monitor) = run.burn_in.as_mut() else {
        return false;
    };
    let trace = burn_in::TraceView {
        chains: settings.chains,
        stride: run.trace_stride.max(1),
        log_alpha: &run.log_alpha,
        energies: &run.energies,
        projections: &run.projections,
        per_chain: PROJECTIONS,
        noise: &run.noise_trace,
    };
    let adapting = run.adaptation.filter(|a| !a.frozen());
    let target = adapting.map(|a| a.target);
    let chees = adapting.is_some_and(|a| a.trajectory.is_some());
    if !monitor.after_iteration(outer, &trace, target, chees) {
        return false;
    }
    if let (Some(a), Some(log_step)) = (run.adaptation.as_mut(), monitor.last_window_log_step) {
        if !a.frozen() {
            a.freeze_at(log_step);
            if let Some(c) = run.class_steps.as_mut() {
                c.freeze(a);
            }
        }
    }
    true
}

/// Each chain's class index (0, 1, … in the order the classes first appear among the chains):
/// all 0 without classes. An anchored chain (local, tangent) counts in its image's class, not as
/// a class of its own ([`Target::chain_classes`]).
pub fn class_of_chain(target: &Target, chains: usize) -> Result<Vec<u32>> {
    target.chain_classes(chains)
}

/// What an adapting run's step sizes reach: the backend, the MH rule's Δ and the dynamics the
/// loop counts leapfrog steps with.
struct StepFeed<'a> {
    rule: &'a mut MhRule,
    dynamics: &'a mut crate::methods::DynamicsSettings,
    chain_delta: &'a mut Option<Vec<f32>>,
    classes: &'a [u32],
}

impl StepFeed<'_> {
    /// Every chain's MH decision on its proposal's `terms` at `outer` (each chain's own Δ with
    /// per-class steps), counted in `run` and traced there when `traced`; `log_alpha` gets
    /// every chain's log α. Returns the accept mask.
    fn decide(
        &self,
        terms: &[crate::methods::MhTerms],
        (seed, offset, outer): (u64, u32, u32),
        traced: bool,
        run: &mut SampleRun,
        log_alpha: &mut Vec<f64>,
    ) -> Vec<bool> {
        let mut mask = vec![false; terms.len()];
        log_alpha.clear();
        for (c, t) in terms.iter().enumerate() {
            let decision = match self.chain_delta.as_deref() {
                Some(delta) => MhRule {
                    delta: delta[c],
                    ..*self.rule
                },
                None => *self.rule,
            }
            .decide(t, seed, offset + c as u32, outer);
            log_alpha.push(decision.log_alpha);
            mask[c] = decision.accepted;
            run.accepted[c] += decision.accepted as u32;
            run.divergent[c] += decision.divergent as u32;
            if traced {
                run.log_alpha.push(decision.log_alpha);
                run.energies.push(t.energy_current);
            }
        }
        mask
    }

    /// Feeds the run's adapted step size (and per-class steps) to the backend and the MH rule.
    fn feed(&mut self, backend: &mut dyn Backend, run: &SampleRun) -> Result<()> {
        let Some(a) = &run.adaptation else {
            return Ok(());
        };
        set_step(backend, self.rule, self.dynamics, a.step())?;
        if let Some(c) = &run.class_steps {
            let per_chain = c.chain_steps(self.classes);
            backend.set_chain_step_sizes(&per_chain)?;
            *self.chain_delta = Some(
                per_chain
                    .iter()
                    .map(|&eta| self.dynamics.delta_at(eta))
                    .collect(),
            );
        }
        Ok(())
    }
}

/// The warm-up's work after the decisions of `outer` (`warm_up`: their log α, the positions
/// before the proposals, and whether ChEES adapts): the automatic burn-in records the step (and
/// ChEES's length); an adaptation not yet frozen observes the log α (and ChEES the proposals
/// (Z, r), read back here) and its step is fed on.
fn adapt(
    backend: &mut dyn Backend,
    run: &mut SampleRun,
    steps: &mut StepFeed,
    (log_alpha, before, chees): (&[f64], &[f32], bool),
    outer: u32,
) -> Result<()> {
    let adapting = Instant::now();
    let proposals = if chees {
        Some(backend.proposals()?)
    } else {
        None
    };
    if let Some(m) = run.burn_in.as_mut().filter(|m| m.warming_up()) {
        let a = run.adaptation.as_ref();
        m.record(
            a.map(|_| steps.dynamics.eta),
            a.and_then(|a| a.trajectory).map(|t| t.length()),
        );
    }
    if let Some(a) = run.adaptation.as_mut().filter(|a| !a.frozen()) {
        match run.class_steps.as_mut() {
            Some(c) => c.observe(a, log_alpha, steps.classes),
            None => a.observe(log_alpha),
        }
        let step = a.step();
        if let (Some(t), Some((z, r))) = (a.trajectory.as_mut(), &proposals) {
            let leapfrog = steps.dynamics.leapfrog_steps;
            t.observe(before, z, r, log_alpha, halton(outer), leapfrog, step);
        }
        steps.feed(backend, run)?;
        run.timings.adaptation_seconds += adapting.elapsed().as_secs_f64();
    }
    Ok(())
}

/// Feeds an adapted step size to the backend and to the MH rule's Δ when it changed.
fn set_step(
    backend: &mut dyn Backend,
    rule: &mut MhRule,
    dynamics: &mut crate::methods::DynamicsSettings,
    step: f32,
) -> Result<()> {
    if step.to_bits() != dynamics.eta.to_bits() {
        if !(step.is_finite() && step > 0.0) {
            return Err(Error::Internal(format!(
                "step-size adaptation reached a step size of {step}"
            )));
        }
        dynamics.eta = step;
        rule.delta = dynamics.delta();
        backend.set_step_size(step)?;
    }
    Ok(())
}

impl crate::diagnostics::ChainTrace for SampleRun {
    fn completed(&self) -> u32 {
        self.completed
    }
    fn accepted(&self) -> &[u32] {
        &self.accepted
    }
    fn divergent(&self) -> &[u32] {
        &self.divergent
    }
    fn log_alpha(&self) -> &[f64] {
        &self.log_alpha
    }
    fn energies(&self) -> &[f32] {
        &self.energies
    }
    fn projections(&self) -> &[f32] {
        &self.projections
    }
    fn projections_per_draw(&self) -> usize {
        PROJECTIONS
    }
    fn trace_stride(&self) -> u32 {
        self.trace_stride.max(1)
    }
    fn noise_trace(&self) -> &[f32] {
        &self.noise_trace
    }
    fn start_indices(&self) -> Option<&[usize]> {
        self.start_indices.as_deref()
    }
}

impl SampleRun {
    /// Appends the projections ⟨v_i, X⟩ of every chain's position (`codes`, C × p) on the fixed
    /// `projections` (PROJECTIONS × p) to the trace.
    fn trace_projections(&mut self, codes: &[f32], projections: &[f32], p: usize) {
        for x in codes.chunks(p) {
            self.projections.extend(
                projections
                    .chunks(p)
                    .map(|v| v.iter().zip(x).map(|(a, b)| a * b).sum::<f32>()),
            );
        }
    }

    /// Keeps every other traced iteration once the trace holds 2 × TRACE_CAP of them.
    fn thin_trace_if_full(&mut self, chains: usize) {
        let iterations = self.energies.len() / chains.max(1);
        if iterations < 2 * TRACE_CAP {
            return;
        }
        // Traced iterations are the multiples of the stride: keep the multiples of twice it.
        let keep = |v: &mut Vec<f32>, width: usize| {
            let kept: Vec<f32> = v
                .chunks(width)
                .skip(1)
                .step_by(2)
                .flatten()
                .copied()
                .collect();
            *v = kept;
        };
        keep(&mut self.energies, chains);
        keep(&mut self.projections, chains * PROJECTIONS);
        if !self.noise_trace.is_empty() {
            keep(&mut self.noise_trace, chains);
        }
        let kept: Vec<f64> = self
            .log_alpha
            .chunks(chains)
            .skip(1)
            .step_by(2)
            .flatten()
            .copied()
            .collect();
        self.log_alpha = kept;
        self.trace_stride *= 2;
    }

    /// The signs of a degenerate run seen in its proposals (every one divergent) and, where
    /// watched, its kept draws (`diagnostics::degenerate`).
    pub fn degenerate(&self, draws: Option<&DrawWatch>) -> Degenerate {
        let proposals = self.completed as u64 * self.divergent.len() as u64;
        let divergences = self.divergent.iter().map(|&n| n as u64).sum();
        degenerate::assess(proposals, divergences, draws, None)
    }

    /// Accepted proposals over all proposals.
    pub fn acceptance_rate(&self) -> f64 {
        let proposals = (self.completed as usize * self.accepted.len()).max(1) as f64;
        self.accepted.iter().map(|&a| a as f64).sum::<f64>() / proposals
    }

    /// The mean Euclidean distance between each chain's starting image and its last image.
    pub fn mean_distance_moved(&self) -> f64 {
        let moved = self.distances_moved();
        moved.iter().sum::<f64>() / moved.len().max(1) as f64
    }

    /// Per chain, the Euclidean distance between its starting image and its last image (empty
    /// when the images are missing).
    pub fn distances_moved(&self) -> Vec<f64> {
        let chains = self.accepted.len().max(1);
        let d = self.start_images.len() / chains;
        if d == 0 || self.final_images.len() != self.start_images.len() {
            return Vec::new();
        }
        self.final_images
            .chunks(d)
            .zip(self.start_images.chunks(d))
            .map(|(a, b)| {
                a.iter()
                    .zip(b)
                    .map(|(x, y)| ((x - y) as f64).powi(2))
                    .sum::<f64>()
                    .sqrt()
            })
            .collect()
    }
}
