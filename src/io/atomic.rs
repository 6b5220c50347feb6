//! Atomic output: write a temporary file beside the target, fsync, rename; never leave half a file.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use crate::{Error, Result};

/// Distinguishes temporary files of concurrent writers within one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The directory holding `path` ("." for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// A fresh hidden temporary name beside `path`: `.NAME.tmp-PID-K`.
fn temp_path(path: &Path, dir: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let k = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".{name}.tmp-{}-{k}", std::process::id()))
}

/// Writes `path` atomically: `write` fills a temporary file in the same directory (so the rename
/// cannot cross file systems), which is flushed, fsynced and renamed over `path`. Readers see the
/// old content or the new, never a torn file. On any failure the temporary file is removed and
/// `Error::Output` names `path`.
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let output_error = |source| Error::Output {
        path: path.to_path_buf(),
        source,
    };
    let dir = parent_dir(path);
    let temp = temp_path(path, dir);
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
        .map_err(output_error)?;
    let result = fill_and_sync(file, write).and_then(|()| std::fs::rename(&temp, path));
    if let Err(e) = result {
        // Best effort: the original error matters more than a failed cleanup.
        let _ = std::fs::remove_file(&temp);
        return Err(output_error(e));
    }
    sync_dir(dir);
    Ok(())
}

fn fill_and_sync(
    file: File,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut out = BufWriter::new(file);
    write(&mut out)?;
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()
}

/// Makes the rename durable where the platform allows it; failure only weakens durability.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// Creates `dir` (and its parents) and checks that files can be created in it, so that a long run
/// fails at once rather than at its first output.
pub fn prepare_output_dir(dir: &Path) -> Result<()> {
    let output_error = |source| Error::Output {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(output_error)?;
    if !dir.is_dir() {
        let e = std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory");
        return Err(output_error(e));
    }
    let probe = temp_path(Path::new("rmld-probe"), dir);
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map_err(output_error)?;
    std::fs::remove_file(&probe).map_err(output_error)
}

/// Writes `value` as pretty-printed JSON (plus a final newline), atomically.
pub fn write_json_atomic<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    write_atomic(path, |w| {
        serde_json::to_writer_pretty(&mut *w, value).map_err(std::io::Error::other)?;
        w.write_all(b"\n")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        write_atomic(&path, |w| w.write_all(b"old")).unwrap();
        write_atomic(&path, |w| w.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let failed = write_atomic(&path, |_| Err(std::io::Error::other("boom")));
        assert!(matches!(failed, Err(Error::Output { .. })));
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"new",
            "failed write must keep the old file"
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "temp file left behind"
        );
    }

    #[test]
    fn bare_file_name_uses_current_dir() {
        assert_eq!(parent_dir(Path::new("a.json")), Path::new("."));
        assert_eq!(parent_dir(Path::new("x/a.json")), Path::new("x"));
    }
}
