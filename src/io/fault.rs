//! A full disk on demand, for tests: with `RMLD_TEST_FULL_DISK_AFTER=N` set, every output write of the process fails (out of space) once N bytes have been written; with `RMLD_TEST_DISK_FREE=N`, the check made before a run (`io::disk`) sees N bytes free.
//!
//! Tests cannot rely on mounting a small file system, and `ulimit -f` limits each file, not the
//! total: this budget fails a run at any chosen byte of all it writes (temporary files, NPY
//! streams, checkpoints, the publication journal), the way a disk that fills up does. Unset, it
//! costs one relaxed atomic load per write call.

use std::io::{Error, ErrorKind, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The environment variable: a byte count after which writes fail.
pub const FULL_DISK_ENV: &str = "RMLD_TEST_FULL_DISK_AFTER";

/// The environment variable: the free bytes `io::disk` sees, whatever the file system says.
pub const DISK_FREE_ENV: &str = "RMLD_TEST_DISK_FREE";

/// The free bytes [`DISK_FREE_ENV`] sets, if any.
pub fn simulated_free_bytes() -> Option<u64> {
    std::env::var(DISK_FREE_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
}

/// Bytes written through [`Budgeted`] writers so far.
static WRITTEN: AtomicU64 = AtomicU64::new(0);

fn budget() -> Option<u64> {
    static BUDGET: OnceLock<Option<u64>> = OnceLock::new();
    *BUDGET.get_or_init(|| {
        std::env::var(FULL_DISK_ENV)
            .ok()
            .and_then(|v| v.trim().parse().ok())
    })
}

/// How many of `len` bytes may still be written (all of them without a budget).
fn allowance(len: usize) -> std::io::Result<usize> {
    let Some(budget) = budget() else {
        return Ok(len);
    };
    let written = WRITTEN.fetch_add(len as u64, Ordering::Relaxed);
    let left = budget.saturating_sub(written);
    if left == 0 && len > 0 {
        return Err(Error::new(
            ErrorKind::StorageFull,
            format!("no space left on device (simulated by {FULL_DISK_ENV})"),
        ));
    }
    Ok(len.min(left as usize))
}

/// A writer that fails once the process's write budget is spent (a pass-through without one).
pub struct Budgeted<W>(pub W);

impl<W> Budgeted<W> {
    /// The writer inside.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.0
    }
}

impl<W: Write> Write for Budgeted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let allowed = allowance(buf.len())?;
        self.0.write(&buf[..allowed])
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_budget_writes_pass_through() {
        // The unit tests never set the variable: the writer is transparent.
        let mut out = Budgeted(Vec::new());
        out.write_all(b"abc").unwrap();
        assert_eq!(out.0, b"abc");
    }
}
