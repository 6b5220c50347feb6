//! Room on disk, checked before a run writes: the bytes its outputs will take against the free space of the file system that holds its output folder.
//!
//! A sampling run streams its draws for as long as it runs: `samples` of 2^32 − 1 would write
//! terabytes and fill the disk hours later, for this run and everything else on the machine.
//! The check is made once, before the run starts; a disk that fills during the run (another
//! writer) still fails it cleanly, with its checkpoint kept (`io::staging`).

use std::path::Path;

use crate::alloc::{human, largest_first};
use crate::{Error, Result};

/// The environment variable that, set to 1, skips the check: for a file system whose free space
/// says less than it can hold (compression, deduplication) or that reports none.
pub const SKIP_CHECK_ENV: &str = "RMLD_SKIP_DISK_CHECK";

/// Bytes an unprivileged writer may still write on the file system holding `path`, or its
/// nearest existing ancestor (an output folder is made when the run starts): statvfs's
/// available blocks times their size; None where that is unknown (not Unix, or the call fails).
/// Tests set it with `io::fault`'s `RMLD_TEST_DISK_FREE`.
pub fn free_bytes(path: &Path) -> Option<u64> {
    if let Some(free) = super::fault::simulated_free_bytes() {
        return Some(free);
    }
    let existing = path
        .ancestors()
        .map(|a| {
            if a.as_os_str().is_empty() {
                Path::new(".")
            } else {
                a
            }
        })
        .find(|a| a.exists())?;
    available_on(existing)
}

#[cfg(unix)]
fn available_on(path: &Path) -> Option<u64> {
    let stats = rustix::fs::statvfs(path).ok()?;
    // A file system of no blocks at all (some FUSE file systems) reports no size: unknown.
    if stats.f_blocks == 0 {
        return None;
    }
    // f_frsize is the unit of f_bavail; a few file systems report 0 there and mean f_bsize.
    let block = if stats.f_frsize > 0 {
        stats.f_frsize
    } else {
        stats.f_bsize
    };
    Some(stats.f_bavail.saturating_mul(block))
}

#[cfg(not(unix))]
fn available_on(_path: &Path) -> Option<u64> {
    None
}

/// What a run will write into one output folder, file by file: the estimate checked against the
/// disk before the run starts, and what the refusal lists.
#[derive(Clone, Debug, Default)]
pub struct Writes {
    files: Vec<(String, f64)>,
}

impl Writes {
    /// Nothing written yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `bytes` written as `what` (a file's name, or a description).
    pub fn add(mut self, what: impl Into<String>, bytes: f64) -> Self {
        self.files.push((what.into(), bytes));
        self
    }

    /// Every file's bytes.
    pub fn total(&self) -> f64 {
        self.files.iter().map(|f| f.1).sum()
    }

    /// Fails (`Error::Usage` on `setting`, the setting that sizes the outputs) when the outputs
    /// exceed the free space of the file system that will hold `folder`; `lower` says what the
    /// user can change. Nothing is refused where the free space is unknown or
    /// [`SKIP_CHECK_ENV`] is set to 1.
    pub fn check(&self, folder: &Path, setting: &'static str, lower: &str) -> Result<()> {
        match self.shortfall(folder) {
            Some(why) => Err(Error::usage(setting, format!("{why}: {lower}{SKIP_HINT}"))),
            None => Ok(()),
        }
    }

    /// Fails (`Error::Output` on `folder`, out of space) as [`Writes::check`] does, for a run
    /// whose settings are fixed (a resumption): `then` says what to do.
    pub fn check_room(&self, folder: &Path, then: &str) -> Result<()> {
        match self.shortfall(folder) {
            Some(why) => Err(Error::Output {
                path: folder.to_path_buf(),
                source: std::io::Error::new(
                    std::io::ErrorKind::StorageFull,
                    format!("{why}: {then}{SKIP_HINT}"),
                ),
            }),
            None => Ok(()),
        }
    }

    /// What is missing, or None when the outputs fit or the check is skipped.
    fn shortfall(&self, folder: &Path) -> Option<String> {
        if std::env::var(SKIP_CHECK_ENV).is_ok_and(|v| v == "1") {
            return None;
        }
        self.shortfall_against(free_bytes(folder)?, folder)
    }

    /// What is missing against `free` bytes.
    fn shortfall_against(&self, free: u64, folder: &Path) -> Option<String> {
        let needed = self.total();
        if needed.is_finite() && needed <= free as f64 {
            return None;
        }
        let listed = largest_first(self.files.iter().map(|f| (f.0.as_str(), f.1)));
        Some(format!(
            "the run's outputs would take {} on disk ({listed}), more than the {} free on \
             the file system of {}",
            human(needed),
            human(free as f64),
            folder.display()
        ))
    }
}

/// The refusals' last words.
const SKIP_HINT: &str =
    " (RMLD_SKIP_DISK_CHECK=1 skips this check where a file system holds more than it says)";

/// Bytes of an f32 NPY file of `rows` × `width` values (its header at most a few hundred).
pub fn npy_f32_bytes(rows: usize, width: usize) -> f64 {
    4.0 * rows as f64 * width as f64 + 256.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_that_fit_pass_and_larger_ones_are_described_file_by_file() {
        let writes = Writes::new()
            .add("codes.npy", 600.0)
            .add("images.npy", 400.0);
        let folder = Path::new("/data/run");
        assert_eq!(writes.shortfall_against(1000, folder), None);
        let why = writes.shortfall_against(999, folder).unwrap();
        for part in [
            "take 1000 bytes on disk",
            "(codes.npy 600 bytes, images.npy 400 bytes)",
            "999 bytes free",
            "/data/run",
        ] {
            assert!(why.contains(part), "{part:?} not in {why}");
        }
    }

    #[test]
    fn sizes_past_any_disk_are_refused_even_when_not_finite() {
        let writes = Writes::new().add("codes.npy", f64::INFINITY);
        assert!(writes.shortfall_against(u64::MAX, Path::new(".")).is_some());
    }

    #[test]
    fn the_refusals_name_the_setting_or_the_folder() {
        let writes = Writes::new().add("codes.npy", 1e30);
        let folder = tempfile::tempdir().unwrap();
        if free_bytes(folder.path()).is_none() {
            return; // not Unix: nothing is refused
        }
        match writes.check(folder.path(), "samples", "lower `samples`") {
            Err(Error::Usage { field, message }) => {
                assert_eq!(field, "samples");
                assert!(message.contains("lower `samples`") && message.contains(SKIP_CHECK_ENV));
            }
            other => panic!("expected a usage error, got {other:?}"),
        }
        match writes.check_room(folder.path(), "free some space") {
            Err(Error::Output { path, source }) => {
                assert_eq!(path, folder.path());
                assert_eq!(source.kind(), std::io::ErrorKind::StorageFull);
                assert!(source.to_string().contains("free some space"));
            }
            other => panic!("expected an output error, got {other:?}"),
        }
    }

    #[test]
    fn a_folder_not_made_yet_is_measured_on_its_nearest_existing_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        if cfg!(unix) {
            assert!(free_bytes(dir.path()).is_some());
            assert!(free_bytes(&dir.path().join("not/made/yet")).is_some());
            assert!(free_bytes(Path::new("relative-and-absent/folder")).is_some());
        }
    }
}
