//! Continuing a run from its checkpoint: the checkpoint checked against the run it continues, and the chains put back on a backend.

use std::path::Path;

use super::Checkpoint;
use crate::backend::Backend;
use crate::model::Target;
use crate::{Error, Result};

/// Checks that `checkpoint` (read from `path`) continues a run of `target` (`hashes` of the
/// data and dictionary that `sources` name) with `chains` chains and `samples` outer
/// iterations: the same inputs, shapes that fit, iterations left.
pub fn check_resumable(
    checkpoint: &Checkpoint,
    path: &Path,
    (target, hashes): (&Target, (u64, u64)),
    (chains, samples): (usize, u32),
    (data, dictionary): (&Path, &str),
) -> Result<()> {
    if hashes.0 != checkpoint.data_hash {
        return Err(Error::input(
            path,
            format!(
                "was made from other data than {} (the data's hash differs)",
                data.display()
            ),
        ));
    }
    if hashes.1 != checkpoint.dictionary_hash {
        return Err(Error::input(
            path,
            format!("was made with another dictionary than {dictionary} (its hash differs)"),
        ));
    }
    if checkpoint.d != target.d()
        || checkpoint.p != target.p()
        || checkpoint.positions.len() != chains * target.p()
    {
        return Err(Error::input(
            path,
            "its shapes do not match its configuration",
        ));
    }
    if checkpoint.run.completed >= samples {
        return Err(Error::input(
            path,
            format!(
                "the run is already complete ({} of {samples} outer iterations)",
                checkpoint.run.completed
            ),
        ));
    }
    Ok(())
}

/// Puts the checkpoint's chains back on `backend`: their positions, the prior's state and the
/// learned noise precision.
pub fn restore(checkpoint: &Checkpoint, backend: &mut dyn Backend) -> Result<()> {
    backend.load_positions(&checkpoint.positions)?;
    if !checkpoint.run.prior_state.is_empty() {
        backend.load_prior_state(&checkpoint.run.prior_state)?;
    }
    if !checkpoint.run.noise_precision.is_empty() {
        backend.set_noise_precision(&checkpoint.run.noise_precision)?;
    }
    Ok(())
}
