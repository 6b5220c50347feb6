//! A sampling run's draws streamed to `codes.npy` and `images.npy` under its keep policy, with what each checkpoint records of them (rows and hashes).

use std::cell::RefCell;
use std::rc::Rc;

use super::identity::StreamMark;
use super::{KeepPolicy, SampleSink};
use crate::diagnostics::degenerate::DrawWatch;
use crate::io::NpyStream;
use crate::Result;

/// The draws files' names, as a checkpoint's identity names them.
pub const CODES: &str = "codes.npy";
/// See [`CODES`].
pub const IMAGES: &str = "images.npy";

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
    /// The two files as the last sync left them (what the next checkpoint records).
    pub marks: Rc<RefCell<Vec<StreamMark>>>,
    /// The kept codes watched for signs of a degenerate run (since the run or its resumption).
    pub watch: DrawWatch,
}

impl SampleStreams {
    /// The streams, marked as they are now.
    pub fn new(
        codes: NpyStream,
        images: NpyStream,
        keep: KeepPolicy,
        burn_in: u32,
        samples: u32,
    ) -> Self {
        // The codes' rows are (C, p): the watch compares each chain's draws with its last.
        let shape = codes.shape();
        let (chains, width) = (shape[1], shape[2]);
        let streams = SampleStreams {
            watch: DrawWatch::new(chains, width),
            codes,
            images,
            keep,
            burn_in,
            samples,
            marks: Rc::default(),
        };
        streams.mark();
        streams
    }

    fn mark(&self) {
        let mark = |name: &str, stream: &NpyStream| StreamMark {
            name: name.into(),
            shape: stream.shape(),
            xxh3: stream.digest(),
        };
        *self.marks.borrow_mut() = vec![mark(CODES, &self.codes), mark(IMAGES, &self.images)];
    }
}

impl SampleSink for SampleStreams {
    fn record(&mut self, outer: u32, codes: &[f32], images: &[f32]) -> Result<()> {
        if self.keep.keeps(outer, self.burn_in, self.samples) {
            self.codes.append(codes)?;
            self.images.append(images)?;
            self.watch.observe(codes);
        }
        Ok(())
    }

    fn warm_up_ended(&mut self, outer: u32) {
        self.burn_in = outer;
    }

    fn sync(&mut self) -> Result<()> {
        self.codes.sync()?;
        self.images.sync()?;
        self.mark();
        Ok(())
    }
}
