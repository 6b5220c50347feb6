//! Stage "sampling": the kept outer iterations, each class's first samples collected in (iteration, chain) order; or the amortized sampler's draws.

use serde_json::Value;

use super::stage::{Halt, Pipeline, Step};
use crate::backend::Backend;
use crate::model::Target;
use crate::orchestrator::amortized::amortized_generation;
use crate::orchestrator::{self, AugmentPlan, AugmentSink, Hooks, SampleRun, SamplerSettings};
use crate::session::settings::AugmentSettings;
use crate::Result;

/// The samples, the run that made them, its burn-in and the seconds since the run began.
pub(super) struct Generated {
    pub sink: AugmentSink,
    pub run: SampleRun,
    pub burn_in: u32,
    /// The amortized sampler's report (None: chains).
    pub amortized: Option<Value>,
    pub seconds: f64,
}

/// The phase's name.
pub(super) const PHASE: &str = "sampling";

/// The chains of `state`, warmed up for `burn_in` iterations, run on until `sink` holds every
/// sample of their classes; the progress bar counts the iterations after the burn-in.
pub(super) fn sampling(
    pipe: &Pipeline,
    backend: &mut dyn Backend,
    (target, settings): (&Target, &SamplerSettings),
    state: SampleRun,
    burn_in: u32,
    sink: &mut AugmentSink,
) -> Step<SampleRun> {
    let observer = pipe.observer;
    let hooks = Hooks {
        sink,
        progress: &mut |outer| observer.phase_advance(outer.saturating_sub(burn_in) as u64),
        stop: &|| observer.stop_requested(),
        checkpoint_every: 0,
        checkpoint_due: &|| false,
        checkpoint: &mut |_, _| Ok(()),
    };
    let run = orchestrator::continue_run(backend, target, settings, state, hooks)?;
    match run.interrupted {
        true => Err(Halt::Stopped),
        false => Ok(run),
    }
}

/// The amortized sampler's samples (`args.model`) of `plan`'s classes, and its report.
pub(super) fn amortized(
    args: &AugmentSettings,
    plan: &AugmentPlan,
    target: &Target,
    (height, width): (usize, usize),
) -> Result<(AugmentSink, SampleRun, Value)> {
    amortized_generation(
        (
            args.model.as_deref(),
            args.problem.backend,
            args.problem.seed,
            args.problem.pixel_max,
        ),
        plan,
        target,
        height,
        width,
    )
}
