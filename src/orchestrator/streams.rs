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
    /// Every kept code, a resumed run's earlier ones included, watched for signs of a degenerate
    /// run.
    pub watch: DrawWatch,
}

/// Bytes of earlier draws read back at a time when a resumed run's watch catches up.
const REPLAY_BYTES: usize = 1 << 20;

impl SampleStreams {
    /// The streams, marked as they are now. Rows already in `codes` (a resumed run's) are shown
    /// to the watch first, so that the report judges the whole run, not what followed the
    /// checkpoint; they are read back only until the watch is settled (usually two rows).
    pub fn new(
        mut codes: NpyStream,
        images: NpyStream,
        keep: KeepPolicy,
        burn_in: u32,
        samples: u32,
    ) -> Result<Self> {
        // The codes' rows are (C, p): the watch compares each chain's draws with its first.
        let shape = codes.shape();
        let (rows, chains, width) = (shape[0], shape[1], shape[2]);
        let mut watch = DrawWatch::new(chains, width);
        let row_values = (chains * width).max(1);
        let block = (REPLAY_BYTES / (4 * row_values)).max(1);
        let mut row = 0;
        while row < rows && !watch.settled() {
            let n = block.min(rows - row);
            for draw in codes.read_rows(row, n)?.chunks_exact(row_values) {
                watch.observe(draw);
            }
            row += n;
        }
        if row < rows {
            watch.count_unseen(rows - row);
        }
        let streams = SampleStreams {
            watch,
            codes,
            images,
            keep,
            burn_in,
            samples,
            marks: Rc::default(),
        };
        streams.mark();
        Ok(streams)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::degenerate::{assess, Degenerate};

    const TAIL: [usize; 2] = [2, 3]; // 2 chains × 3 values

    /// A stream of `earlier` rows, stopped at a checkpoint and resumed, then given `later` rows:
    /// what the watch makes of the whole run.
    fn judged(earlier: &[[f32; 6]], later: &[[f32; 6]]) -> Degenerate {
        let dir = tempfile::tempdir().unwrap();
        let (codes, images) = (dir.path().join(CODES), dir.path().join(IMAGES));
        let mut first = NpyStream::create(&codes, &TAIL).unwrap();
        let mut shown = NpyStream::create(&images, &TAIL).unwrap();
        for row in earlier {
            first.append(row).unwrap();
            shown.append(row).unwrap();
        }
        first.sync().unwrap();
        shown.sync().unwrap();
        let (rows, hashes) = (earlier.len(), (first.digest(), shown.digest()));
        drop((first, shown));
        let codes = NpyStream::resume(&codes, &TAIL, rows, hashes.0).unwrap();
        let images = NpyStream::resume(&images, &TAIL, rows, hashes.1).unwrap();
        let mut streams = SampleStreams::new(codes, images, KeepPolicy::All, 0, 100).unwrap();
        for (k, row) in later.iter().enumerate() {
            streams
                .record(rows as u32 + k as u32 + 1, row, row)
                .unwrap();
        }
        assert_eq!(streams.watch.draws(), earlier.len() + later.len());
        assess(10, 0, Some(&streams.watch), None)
    }

    #[test]
    fn a_resumed_run_is_judged_on_its_draws_before_the_checkpoint_too() {
        let (a, b, zero) = ([1.0; 6], [1.0, 2.0, 1.0, 1.0, 1.0, 1.0], [0.0; 6]);
        // Moved before the checkpoint, still after it: not "no chain moved".
        assert!(!judged(&[a, b], &[b, b, b]).draws_identical);
        // Codes not zero before the checkpoint, zero after it: not "all codes zero".
        assert!(!judged(&[a, a], &[zero, zero]).codes_all_zero);
        // Never moved, before or after: still flagged.
        assert!(judged(&[a, a], &[a, a]).draws_identical);
        assert!(judged(&[zero], &[zero, zero]).codes_all_zero);
        // Stopped before any draw was kept: the watch starts from the resumed draws.
        assert!(judged(&[], &[a, a]).draws_identical);
        assert!(!judged(&[], &[a, b]).draws_identical);
    }
}
