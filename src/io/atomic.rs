//! Atomic output: write a temporary file beside the target, fsync, rename; never leave half a file.
//!
//! The temporary file is a `tempfile` 3 `NamedTempFile` created in the target's own directory (so
//! the rename cannot cross file systems) with a hidden `.NAME.tmp-XXXXXX` name and the same mode a
//! plain `File::create` gives (0o666 less the umask, not tempfile's 0o600 default); it is
//! removed by its destructor on every failure path. What tempfile does not do we add: the data
//! is fsynced before `persist` (the rename) and the directory after it.

use std::io::{BufWriter, Write};
use std::path::Path;

use serde::Serialize;
use tempfile::{Builder, NamedTempFile};

use super::fault::Budgeted;
use crate::{Error, Result};

/// The directory holding `path` ("." for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The longest file name (bytes) most file systems take (Linux's NAME_MAX).
const NAME_MAX: usize = 255;

/// Bytes a temporary name adds to the target's: the leading dot, `.tmp-` and six random letters.
const TEMP_NAME_EXTRA: usize = 1 + 5 + 6;

/// The target's file name as the temporary name shows it, cut (at a character) so that the
/// temporary name stays within [`NAME_MAX`] however long the target's (a 255-byte name is legal).
fn temp_stem(path: &Path) -> String {
    let mut name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let room = NAME_MAX - TEMP_NAME_EXTRA;
    if name.len() > room {
        let cut = (0..=room).rev().find(|&i| name.is_char_boundary(i));
        name.truncate(cut.unwrap_or(0));
    }
    name
}

/// Whether the file name `name` is one of [`write_atomic`]'s temporary files (`.NAME.tmp-XXXXXX`),
/// which outlive their write only when the process was killed during it: never an output.
pub(crate) fn is_temporary_name(name: &str) -> bool {
    let (bytes, len) = (name.as_bytes(), name.len());
    len > TEMP_NAME_EXTRA
        && bytes[0] == b'.'
        && &bytes[len - 11..len - 6] == b".tmp-"
        && bytes[len - 6..].iter().all(u8::is_ascii_alphanumeric)
}

/// A fresh hidden temporary file beside `path`: `.NAME.tmp-XXXXXX`, created exclusively.
fn temp_file(path: &Path, dir: &Path) -> std::io::Result<NamedTempFile> {
    let prefix = format!(".{}.tmp-", temp_stem(path));
    let mut builder = Builder::new();
    builder.prefix(&prefix);
    #[cfg(unix)]
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        std::fs::Permissions::from_mode(0o666)
    };
    #[cfg(unix)]
    builder.permissions(mode);
    builder.tempfile_in(dir)
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
    let mut temp = temp_file(path, dir).map_err(output_error)?;
    // On an error `temp` is dropped here, which removes the temporary file.
    fill_and_sync(&mut temp, write).map_err(output_error)?;
    temp.persist(path).map_err(|e| output_error(e.error))?;
    sync_dir(dir);
    Ok(())
}

/// Writes several files as one output: each file's bytes fill a temporary file beside it
/// (flushed, fsynced) before any is renamed over its target, then the renames run in the order
/// given, so the last file's presence says the others are there. A failure while writing (a
/// full disk) leaves every target as it was and removes the temporary files; `Error::Output`
/// names the file that failed.
pub fn write_files_atomic(files: &[(&Path, &[u8])]) -> Result<()> {
    let output_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Output { path, source }
    };
    let mut filled = Vec::with_capacity(files.len());
    for &(path, bytes) in files {
        let dir = parent_dir(path);
        // On an error the temporary files filled so far are dropped here, which removes them.
        let mut temp = temp_file(path, dir).map_err(output_error(path))?;
        fill_and_sync(&mut temp, |w| w.write_all(bytes)).map_err(output_error(path))?;
        filled.push((path, dir, temp));
    }
    for (path, dir, temp) in filled {
        temp.persist(path)
            .map_err(|e| output_error(path)(e.error))?;
        sync_dir(dir);
    }
    Ok(())
}

/// Removes the file at `path`; one that is not there is fine (`Error::Output` otherwise).
pub fn remove_file_if_present(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(source) if source.kind() != std::io::ErrorKind::NotFound => Err(Error::Output {
            path: path.to_path_buf(),
            source,
        }),
        _ => Ok(()),
    }
}

fn fill_and_sync(
    temp: &mut NamedTempFile,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut out = BufWriter::new(Budgeted(temp.as_file_mut()));
    write(&mut out)?;
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.0.sync_all()
}

/// Makes the rename durable where the platform allows it; failure only weakens durability.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(dir) {
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
    let probe = temp_file(Path::new("rmld-probe"), dir).map_err(output_error)?;
    probe.close().map_err(output_error)
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
    fn temporary_names_are_told_from_outputs() {
        let dir = tempfile::tempdir().unwrap();
        for target in ["codes.npy", "acceptance_rate.npy", &"n".repeat(255)] {
            let temp = temp_file(&dir.path().join(target), dir.path()).unwrap();
            let name = temp
                .path()
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .to_string();
            assert!(is_temporary_name(&name), "{name}");
        }
        for output in [
            "codes.npy",
            ".codes.npy.partial",
            ".rmld.lock",
            ".x.tmp-12",
            "x.tmp-abcdef",
        ] {
            assert!(!is_temporary_name(output), "{output}");
        }
    }

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

    #[cfg(unix)]
    #[test]
    fn output_mode_is_that_of_file_create() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain.txt");
        std::fs::File::create(&plain).unwrap();
        let path = dir.path().join("atomic.txt");
        write_atomic(&path, |w| w.write_all(b"x")).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), mode(&plain));
    }

    #[test]
    fn prepare_output_dir_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("a/b");
        prepare_output_dir(&out).unwrap();
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
        let file = dir.path().join("f");
        std::fs::write(&file, b"").unwrap();
        assert!(prepare_output_dir(&file).is_err());
    }

    #[test]
    fn a_name_of_255_bytes_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let long = "q".repeat(250) + ".json";
        let path = dir.path().join(&long);
        write_json_atomic(&path, &[1, 2]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(serde_json::from_str::<Vec<u8>>(&text).unwrap(), [1, 2]);
        // Cut at a character: 3-byte characters across the limit.
        let wide = "é".repeat(100) + "€".repeat(18).as_str();
        assert!(wide.len() <= NAME_MAX);
        let stem = temp_stem(Path::new(&wide));
        assert!(stem.len() + TEMP_NAME_EXTRA <= NAME_MAX && wide.starts_with(&stem));
    }

    #[test]
    fn bare_file_name_uses_current_dir() {
        assert_eq!(parent_dir(Path::new("a.json")), Path::new("."));
        assert_eq!(parent_dir(Path::new("x/a.json")), Path::new("x"));
    }
}
