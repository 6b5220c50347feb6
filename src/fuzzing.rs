//! Fuzzing entry points: each reader (of `io` and the orchestrator's checkpoints) on arbitrary
//! bytes must return Ok or a clear Err, never panic or allocate from an unchecked header. Shared
//! by the `fuzz/` cargo-fuzz targets and the time-boxed mutation test that CI runs.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// The decompressed-size limit the fuzzers read under: bombs are refused fast.
pub const FUZZ_LIMIT: u64 = 16 << 20;

/// Which reader an input is fed to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    /// IDX images (`read_idx_images_with_limit`).
    IdxImages,
    /// IDX labels (`read_idx_labels_with_limit`).
    IdxLabels,
    /// NPY arrays (`read_npy_with_limit`).
    Npy,
    /// The optdigits-style CSV (`read_csv_with_limit`).
    Csv,
    /// Any dataset file, sniffed (`Dataset::load`).
    Dataset,
    /// Checkpoints (`Checkpoint::from_bytes`).
    Checkpoint,
}

/// A file holding `bytes`, removed when dropped (the readers take paths).
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn scratch_file(bytes: &[u8]) -> Option<Scratch> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("rmld-fuzz-{}-{n}", std::process::id()));
    let scratch = Scratch(path);
    std::fs::File::create(&scratch.0)
        .ok()?
        .write_all(bytes)
        .ok()?;
    Some(scratch)
}

/// Feeds `bytes` to `reader`; returns whether it was accepted. Panics only if the reader does.
pub fn feed(reader: Reader, bytes: &[u8]) -> bool {
    if reader == Reader::Checkpoint {
        return crate::orchestrator::Checkpoint::from_bytes(bytes).is_ok();
    }
    let Some(scratch) = scratch_file(bytes) else {
        return false;
    };
    let path = &scratch.0;
    match reader {
        Reader::IdxImages => crate::io::idx::read_idx_images_with_limit(path, FUZZ_LIMIT).is_ok(),
        Reader::IdxLabels => crate::io::idx::read_idx_labels_with_limit(path, FUZZ_LIMIT).is_ok(),
        Reader::Npy => crate::io::npy::read_npy_with_limit(path, FUZZ_LIMIT).is_ok(),
        Reader::Csv => crate::io::csv::read_csv_with_limit(path, FUZZ_LIMIT).is_ok(),
        Reader::Dataset => crate::io::Dataset::load(path).is_ok(),
        Reader::Checkpoint => unreachable!("handled above"),
    }
}
