//! A sampling run's draws streamed to `codes.npy` and `images.npy` under its keep policy, and the streams reopened where a checkpoint left them.

use std::path::Path;

use super::{KeepPolicy, SampleSink};
use crate::io::{self, NpyStream};
use crate::{Error, Result};

/// Codes and images streamed to two NPY files under the keep policy.
pub struct SampleStreams {
    /// The codes, (draws, C, p).
    pub codes: NpyStream,
    /// The images, (draws, C, d).
    pub images: NpyStream,
    /// Which iterations are kept.
    pub keep: KeepPolicy,
    /// The burn-in (an automatic one's cap until it ends).
    pub burn_in: u32,
    /// Outer iterations after the burn-in.
    pub samples: u32,
}

impl SampleSink for SampleStreams {
    fn record(&mut self, outer: u32, codes: &[f32], images: &[f32]) -> Result<()> {
        if self.keep.keeps(outer, self.burn_in, self.samples) {
            self.codes.append(codes)?;
            self.images.append(images)?;
        }
        Ok(())
    }

    fn warm_up_ended(&mut self, outer: u32) {
        self.burn_in = outer;
    }

    fn sync(&mut self) -> Result<()> {
        self.codes.sync()?;
        self.images.sync()
    }
}

/// Reopens a stream at the checkpoint's row count; an interrupted run had finished it under its
/// final name, so that is moved back first.
pub fn resume_stream(path: &Path, tail: &[usize], rows: usize) -> Result<NpyStream> {
    let partial = io::partial_path(path);
    if !partial.exists() && !path.exists() {
        return Err(Error::input(
            path,
            "the interrupted run's output is missing (moved or deleted), so its samples before the \
             interruption are gone and it cannot be resumed: run `rmld sample` again with the same \
             settings (the same seed gives the same samples)",
        ));
    }
    if !partial.exists() && path.exists() {
        std::fs::rename(path, &partial).map_err(|source| Error::Output {
            path: path.to_path_buf(),
            source,
        })?;
    }
    NpyStream::resume(path, tail, rows)
}
