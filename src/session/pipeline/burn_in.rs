//! Stage "burn-in": the chains' warm-up, fixed or automatic, with the step sizes adapting where asked; nothing is kept. The whole run's warm-up saved on its own for its shards (`warm_up_only`), and a shard's chains started from it.

use super::load::{Device, Loaded};
use super::stage::{Halt, Pipeline, Step};
use crate::backend::Backend;
use crate::model::Target;
use crate::orchestrator::warm_up::{ShardStart, WarmUp};
use crate::orchestrator::{self, SampleRun, SamplerSettings};
use crate::session::{warm_up, Outcome};
use crate::{Error, Result};

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

/// The shard's chains started from the whole run's warm-up `warm` on `backend`: its part of the
/// warm-up's state (checked against the shard's device and inputs), with the classes' steps
/// numbered as the shard's chains meet them.
pub(super) fn shard_start(
    run: &Loaded,
    backend: &mut dyn Backend,
    warm: &WarmUp,
) -> Result<ShardStart> {
    let classes = run.plan.class_of_chain();
    let range = run.chains.clone();
    let mine = classes.get(range.clone()).unwrap_or_default();
    warm_up::start_shard(warm, backend, run.hashes, range, Some(mine))
}

/// The whole run's warm-up alone (`warm_up_only`): every chain started and warmed up, saved for
/// the shards to start from; nothing else is computed or written.
pub(super) fn warm_up_only(
    pipe: &mut Pipeline,
    run: &Loaded,
    device: &mut Device,
) -> Step<Outcome> {
    let Some(backend) = device.backend.as_deref_mut() else {
        return Err(Error::Internal("a warm-up without a backend".into()).into());
    };
    let state = super::warmed_up(pipe, run, backend, run.args.burn_in_cap())?;
    let (_, seconds) = pipe.finish();
    let finished = warm_up::Finished {
        command: "augment",
        config: serde_json::to_value(&run.asked)
            .map_err(|e| Error::Internal(format!("configuration: {e}")))?,
        settings: warm_up::augment_hash(&run.asked),
        hashes: run.hashes,
        shape: (run.d, run.p),
        seed: run.args.problem.seed,
        out: &pipe.output.dir,
        dir: pipe.output.staged()?,
        seconds,
    };
    Ok(warm_up::finish(finished, backend, &state)?)
}
