//! Stage "LASSO starts": each chain starts at the LASSO code of an image of its class (Kernel HMC: at the image); Compression's samples are these starts.

use crate::backend::Backend;
use crate::model::Target;
use crate::orchestrator::{self, AugmentSink, SampleRun, SampleSink, SamplerSettings};
use crate::Result;

/// The phase's name.
pub(super) const PHASE: &str = "LASSO starts";

/// The chains started on `backend`: the state before their first outer iteration.
pub(super) fn starts(
    backend: &mut dyn Backend,
    target: &Target,
    settings: &SamplerSettings,
) -> Result<SampleRun> {
    orchestrator::start(backend, target, settings)
}

/// Compression's samples: the starts themselves (iteration 1 of a run of none), kept in `sink`.
pub(super) fn starts_as_samples(
    backend: &mut dyn Backend,
    state: SampleRun,
    sink: &mut AugmentSink,
) -> Result<SampleRun> {
    let codes = backend.positions()?;
    sink.record(1, &codes, &state.start_images)?;
    Ok(SampleRun {
        completed: 0,
        ..state
    })
}
