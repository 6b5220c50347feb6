//! Stage "burn-in": the chains' warm-up, fixed or automatic, with the step sizes adapting where asked; nothing is kept.

use super::stage::{Halt, Pipeline, Step};
use crate::backend::Backend;
use crate::model::Target;
use crate::orchestrator::{self, SampleRun, SamplerSettings};

/// The phase's name.
pub(super) const PHASE: &str = "burn-in";

/// The chains of `state` warmed up: `cap` outer iterations, or fewer where an automatic burn-in
/// settles. Its progress bar counts the iterations.
pub(super) fn burn_in(
    pipe: &Pipeline,
    backend: &mut dyn Backend,
    target: &Target,
    settings: &SamplerSettings,
    state: SampleRun,
    cap: u32,
) -> Step<SampleRun> {
    let observer = pipe.observer;
    let run = orchestrator::warm_up(
        backend,
        target,
        settings,
        state,
        cap,
        &mut |outer| observer.phase_advance(outer as u64),
        &|| observer.stop_requested(),
    )?;
    match run.interrupted {
        true => Err(Halt::Stopped),
        false => Ok(run),
    }
}
