//! A run's output folder: never written over an input or another run's files (checked against its inputs and the folder's contents before any work), and locked while a run writes into it (a one-file output by a lock file beside it).

use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// The lock file that keeps two runs out of one folder.
pub const LOCK: &str = ".rmld.lock";

/// A sampling run's checkpoint inside its output folder.
pub const CHECKPOINT: &str = "checkpoint.rmld";

/// The one check every run makes of its output folder before it loads anything: none of
/// `outputs` in `out` is, or resolves to, one of `inputs` (never, even with `force`), and, unless
/// `force`, none of them exists already (it was written by another run, or is the user's own:
/// replacing it is asked for with `force`). A folder another run holds is named as such.
/// Nothing is created or written.
pub fn check_output_folder(
    out: &Path,
    outputs: &[&str],
    inputs: &[Option<&Path>],
    force: bool,
) -> Result<()> {
    refuse_overwriting_inputs(out, outputs, inputs)?;
    if force {
        return Ok(());
    }
    if held_by_another_run(out)
        && outputs
            .iter()
            .any(|n| out.join(n).symlink_metadata().is_ok())
    {
        return Err(Error::usage(
            "out",
            format!(
                "another rmld run is writing into {} (it holds {})",
                out.display(),
                out.join(LOCK).display()
            ),
        ));
    }
    refuse_existing_outputs(out, outputs)
}

/// Fails when the one-file output `path` (a `what`: "model", "quality report") is not a regular
/// file (a folder, a device, a FIFO; also through a symbolic link: replacing `/dev/null` is never
/// what was meant, not even with `force`), or exists and `force` was not given (`Error::Usage`
/// on `out`); checked before any work, so a refused run writes nothing. A symbolic link to a
/// regular file is replaced by the new file (its target is kept).
pub fn refuse_existing_file(path: &Path, what: &str, force: bool) -> Result<()> {
    if path.symlink_metadata().is_err() {
        return Ok(());
    }
    if let Some(meta) = std::fs::metadata(path).ok().filter(|m| !m.is_file()) {
        return Err(Error::input(
            path,
            format!(
                "is {}, not a regular file: the {what} is written as a file; choose another path",
                super::regular::kind(&meta)
            ),
        ));
    }
    if !force {
        return Err(Error::usage(
            "out",
            format!(
                "{} exists (an earlier {what}, or a file of yours) and this run would replace \
                 it: choose another file, or give `force` to replace it",
                path.display()
            ),
        ));
    }
    Ok(())
}

/// [`refuse_overwriting_inputs`] for outputs named by their paths (a file output and the
/// files beside it) rather than by their names in one folder.
pub fn refuse_files_over_inputs(paths: &[&Path], inputs: &[Option<&Path>]) -> Result<()> {
    let files = input_files(inputs);
    match paths.iter().find(|p| is_one_of(p, &files)) {
        Some(path) => Err(Error::usage(
            "out",
            format!(
                "{} is an input of this run, and this run would write it: choose another path",
                path.display()
            ),
        )),
        None => Ok(()),
    }
}

/// Fails (`Error::Usage` on `out`) when one of `outputs` exists in `out`, naming it, and
/// pointing at `rmld resume` when the folder holds a checkpoint.
pub fn refuse_existing_outputs(out: &Path, outputs: &[&str]) -> Result<()> {
    let Some(existing) = first_existing(out, outputs) else {
        return Ok(());
    };
    let resumable =
        outputs.contains(&CHECKPOINT) && out.join(CHECKPOINT).is_file() && !finished_run(out);
    Err(Error::usage(
        "out",
        format!(
            "{} already exists (from another run, or a file of yours) and this run would replace \
             it: choose another output folder, or give `force` to replace the files this run \
             writes{}",
            existing.display(),
            if resumable {
                format!(
                    " (the folder holds a checkpoint: `rmld resume {}` continues that run)",
                    out.display()
                )
            } else {
                String::new()
            }
        ),
    ))
}

/// The first of `outputs` in `out` that exists (a file, a folder or a link), if any.
pub fn first_existing(out: &Path, outputs: &[&str]) -> Option<PathBuf> {
    outputs
        .iter()
        .map(|name| out.join(name))
        .find(|path| path.symlink_metadata().is_ok())
}

/// Fails (`Error::Usage` on `out`) when one of `paths` (a one-file output and the files and
/// folders beside it) is the code cache folder `cache`, lies inside it or holds it, also where
/// neither exists yet (compared as they resolve: links, `..`): the cache holds the codes this
/// run reads and writes (the folder it makes when missing), and is rmld's to clear.
pub fn refuse_outputs_in_code_cache(paths: &[&Path], cache: Option<&Path>) -> Result<()> {
    let Some(cache) = cache else {
        return Ok(());
    };
    let folder = resolved(cache);
    for path in paths {
        let output = resolved(path);
        let overlap = if output == folder {
            "is"
        } else if output.starts_with(&folder) {
            "is in"
        } else if folder.starts_with(&output) {
            "would hold"
        } else {
            continue;
        };
        return Err(Error::usage(
            "out",
            format!(
                "{} {overlap} the code cache folder {} (`code_cache`), which this run reads and \
                 writes codes in: choose another path, or another `code_cache`",
                path.display(),
                cache.display()
            ),
        ));
    }
    Ok(())
}

/// `path` made absolute with its deepest existing ancestor resolved (links, `..`) and the rest
/// appended, `..` and `.` taken lexically: where it is, or would be once made.
fn resolved(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    let base = loop {
        if let Ok(real) = existing.canonicalize() {
            break real;
        }
        match (existing.parent(), existing.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last.as_os_str().to_os_string());
                existing = parent;
            }
            // No ancestor resolves: compare it as written.
            _ => return absolute,
        }
    };
    let mut out = base;
    for name in rest.iter().rev() {
        match name.to_str() {
            Some("..") => {
                out.pop();
            }
            Some(".") => {}
            _ => out.push(name),
        }
    }
    out
}

/// The most bytes of a report.json read to learn what run a folder holds.
const MAX_REPORT_BYTES: u64 = 64 << 20;

/// The folder's report.json, if there is one that parses (bounded, regular files only): what
/// run the folder holds, and whether it finished.
pub fn read_report(dir: &Path) -> Result<Option<serde_json::Value>> {
    let path = dir.join("report.json");
    if path.symlink_metadata().is_err() {
        return Ok(None);
    }
    let bytes = super::read_regular_file(&path, "run report", MAX_REPORT_BYTES)?;
    Ok(serde_json::from_slice(&bytes).ok())
}

/// Whether the folder's report.json says its run finished (`"interrupted": false`): a
/// checkpoint beside it is then an earlier state of that run, not one to continue.
fn finished_run(out: &Path) -> bool {
    read_report(out)
        .ok()
        .flatten()
        .is_some_and(|report| report["interrupted"] == false)
}

/// True when the folder's run lock exists and another process holds it.
fn held_by_another_run(out: &Path) -> bool {
    let Ok(file) = std::fs::File::open(out.join(LOCK)) else {
        return false;
    };
    matches!(
        patiently(|| file.try_lock_shared()),
        Err(std::fs::TryLockError::WouldBlock)
    )
}

/// `try_lock` again for up to 100 ms while the lock is held: a process forked by another
/// thread of this one shares a just-released lock until it execs (a library caller or a test
/// binary that spawns processes), which is no other run.
fn patiently(
    mut try_lock: impl FnMut() -> std::result::Result<(), std::fs::TryLockError>,
) -> std::result::Result<(), std::fs::TryLockError> {
    let mut result = try_lock();
    for _ in 0..20 {
        if !matches!(result, Err(std::fs::TryLockError::WouldBlock)) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
        result = try_lock();
    }
    result
}

/// Fails (`Error::Usage` on `out`) when one of `outputs` in the folder `out` is, or resolves to,
/// one of `inputs`: a file, or a folder and every file directly inside it (a dataset folder
/// holds its splits and labels). Nothing is created or written.
pub fn refuse_overwriting_inputs(
    out: &Path,
    outputs: &[&str],
    inputs: &[Option<&Path>],
) -> Result<()> {
    let files = input_files(inputs);
    for name in outputs {
        let path = out.join(name);
        if is_one_of(&path, &files) {
            return Err(Error::usage(
                "out",
                format!(
                    "{} is an input of this run: writing the outputs into {} would replace it; \
                     choose another output folder",
                    path.display(),
                    out.display()
                ),
            ));
        }
    }
    Ok(())
}

/// The inputs, resolved: each file, and each folder with every file directly inside it.
fn input_files(inputs: &[Option<&Path>]) -> HashSet<PathBuf> {
    let mut files: HashSet<PathBuf> = HashSet::new();
    for input in inputs.iter().flatten() {
        if let Ok(path) = input.canonicalize() {
            files.insert(path);
        }
        if input.is_dir() {
            if let Ok(entries) = std::fs::read_dir(input) {
                for entry in entries.flatten() {
                    if let Ok(path) = entry.path().canonicalize() {
                        files.insert(path);
                    }
                }
            }
        }
    }
    files
}

/// True when `path` exists and resolves to one of `files`.
fn is_one_of(path: &Path, files: &HashSet<PathBuf>) -> bool {
    path.canonicalize()
        .is_ok_and(|resolved| files.contains(&resolved))
}

/// A run's exclusive lock on `DIR/.rmld.lock`, held while the value lives: a second run into
/// the same folder is refused. Dropped by a run that leaves the folder empty but for the lock,
/// it removes the lock file, and the folders the run made ([`RunLock::made`]). The lock of a
/// one-file output ([`lock_beside`]) is a file beside it, removed whenever the lock is dropped.
/// The operating system releases a lock whose process dies (kill -9): the file it leaves
/// holds no one off, and the next run takes it.
#[derive(Debug)]
pub struct RunLock {
    dir: PathBuf,
    /// The lock file beside a one-file output; `None` for a folder's `DIR/.rmld.lock`.
    beside: Option<PathBuf>,
    file: Option<File>,
    created: Option<PathBuf>,
}

impl RunLock {
    /// Records that this run made `top` (the topmost folder it created: OUT or an ancestor,
    /// as [`topmost_missing`] found before creating them), removed on release when empty.
    pub fn made(mut self, top: Option<PathBuf>) -> RunLock {
        self.created = top;
        self
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        if let Some(file) = self.file.take() {
            match &self.beside {
                Some(path) => {
                    if names_this_file(path, &file) {
                        let _ = std::fs::remove_file(path);
                    }
                    drop(file);
                    remove_made(&self.dir, self.created.as_deref());
                }
                None => release_lock(&self.dir, file, self.created.as_deref()),
            }
        }
    }
}

/// Locks the existing folder `out` for this run. The lock is taken on the file the path names
/// when it is taken: a run that opened the file just before its holder removed it (on release)
/// opens the new one and tries again, so two runs never hold locks on two files of one name.
pub fn lock_output(out: &Path) -> Result<RunLock> {
    let path = out.join(LOCK);
    let file = take_lock(&path, || held(out, &path))?;
    Ok(RunLock {
        dir: out.to_path_buf(),
        beside: None,
        file: Some(file),
        created: None,
    })
}

/// Locks the one-file output `output` (a model) for this run of a `what` ("training") by the
/// lock file `lock` beside it (`MODEL.lock`), creating the folder they go in when missing: a
/// second run is refused (`Error::Usage` on `out`, naming the output and the lock) while this
/// one holds it. Released when dropped: the lock file is removed, and so are the folders made
/// for it if they are left empty. A lock file a killed run left behind is taken over.
pub fn lock_beside(output: &Path, lock: &Path, what: &str) -> Result<RunLock> {
    let dir = match lock.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    if let Some(meta) = std::fs::metadata(lock).ok().filter(|m| !m.is_file()) {
        return Err(Error::input(
            lock,
            format!(
                "is {}, not the lock file of a {what}: the {what} of {} locks it; choose \
                 another path",
                super::regular::kind(&meta),
                output.display()
            ),
        ));
    }
    let top = topmost_missing(dir);
    std::fs::create_dir_all(dir).map_err(|source| Error::Output {
        path: dir.to_path_buf(),
        source,
    })?;
    let held = || {
        Error::usage(
            "out",
            format!(
                "another rmld {what} is writing {} (it holds {}): let it finish, or choose \
                 another `out`",
                output.display(),
                lock.display()
            ),
        )
    };
    let file = take_lock(lock, held).and_then(|file| {
        // rmld's lock files are empty: one with bytes in it is a file of the user's, which
        // releasing the lock would remove.
        match file.metadata() {
            Ok(meta) if meta.len() > 0 => Err(Error::input(
                lock,
                format!(
                    "holds data, so it is not the lock file of a {what} (an empty file): the \
                     {what} of {} locks it; move it, or choose another path",
                    output.display()
                ),
            )),
            _ => Ok(file),
        }
    });
    match file {
        Ok(file) => Ok(RunLock {
            dir: dir.to_path_buf(),
            beside: Some(lock.to_path_buf()),
            file: Some(file),
            created: top,
        }),
        Err(e) => {
            remove_made(dir, top.as_deref());
            Err(e)
        }
    }
}

/// Opens the lock file `path` (created when missing, never truncated) and takes its exclusive
/// lock; `held()` is the error when another process holds it. The lock is taken on the file the
/// path names when it is taken: a run that opened the file just before its holder removed it
/// (on release) opens the new one and tries again, so two runs never hold locks on two files
/// of one name.
fn take_lock(path: &Path, held: impl Fn() -> Error) -> Result<File> {
    for _ in 0..8 {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|source| Error::Output {
                path: path.to_path_buf(),
                source,
            })?;
        match patiently(|| file.try_lock()) {
            Ok(()) if names_this_file(path, &file) => return Ok(file),
            Ok(()) => continue,
            Err(std::fs::TryLockError::WouldBlock) => return Err(held()),
            Err(std::fs::TryLockError::Error(source)) => {
                return Err(Error::Output {
                    path: path.to_path_buf(),
                    source,
                })
            }
        }
    }
    Err(held())
}

/// Creates `out` (and its missing ancestors) and locks it for this run; the folders it made
/// are removed again if the run leaves them empty.
pub fn create_and_lock(out: &Path) -> Result<RunLock> {
    let top = topmost_missing(out);
    super::prepare_output_dir(out)?;
    Ok(lock_output(out)?.made(top))
}

fn held(out: &Path, path: &Path) -> Error {
    Error::usage(
        "out",
        format!(
            "another rmld run is writing into {} (it holds {})",
            out.display(),
            path.display()
        ),
    )
}

/// True when `path` still names the open `file` (it was not removed or replaced meanwhile).
fn names_this_file(path: &Path, file: &File) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(path), file.metadata()) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        path.is_file()
    }
}

/// Releases the run lock `lock` of `out` and tidies what a run that published nothing leaves:
/// when the folder holds nothing but the lock file, the file is removed (while still locked),
/// and so are the folders this run made (`created`: the topmost of them, `out` or one of its
/// ancestors), as far as they are empty. A folder with anything else in it keeps its lock file.
fn release_lock(out: &Path, lock: File, created: Option<&Path>) {
    let only_lock = std::fs::read_dir(out).is_ok_and(|entries| {
        entries
            .flatten()
            .all(|entry| entry.file_name() == std::ffi::OsStr::new(LOCK))
    });
    if only_lock && names_this_file(&out.join(LOCK), &lock) {
        let _ = std::fs::remove_file(out.join(LOCK));
        drop(lock);
        remove_made(out, created);
    }
}

/// Removes `dir` and its ancestors up to `created` (the topmost folder a run made; nothing
/// when `None`), as far as they are empty.
fn remove_made(dir: &Path, created: Option<&Path>) {
    let Some(top) = created else { return };
    // remove_dir fails, harmlessly, on a folder something was put in meanwhile.
    for dir in dir.ancestors() {
        if std::fs::remove_dir(dir).is_err() || dir == top {
            break;
        }
    }
}

/// The topmost of `dir` and its ancestors that does not exist yet (what creating `dir` makes).
pub fn topmost_missing(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .take_while(|a| !a.as_os_str().is_empty() && a.symlink_metadata().is_err())
        .last()
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_beside_a_file_refuses_a_second_run_and_leaves_nothing_when_dropped() {
        let tmp = tempfile::tempdir().unwrap();
        let model = tmp.path().join("new/sub/m.amz");
        let lock = tmp.path().join("new/sub/m.amz.lock");
        let first = lock_beside(&model, &lock, "training").unwrap();
        assert!(lock.is_file());
        let e = lock_beside(&model, &lock, "training")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("another rmld training is writing") && e.contains("m.amz.lock"),
            "{e}"
        );
        drop(first);
        assert!(!tmp.path().join("new").exists(), "the folders made stay");
        // A lock file a killed run left (no one holds it) is taken over, and removed.
        std::fs::write(tmp.path().join("m.amz.lock"), b"").unwrap();
        let (model, lock) = (tmp.path().join("m.amz"), tmp.path().join("m.amz.lock"));
        drop(lock_beside(&model, &lock, "training").unwrap());
        assert!(!lock.exists());
        // Not an rmld lock file: a file with data in it, or a folder; kept as they are.
        std::fs::write(&lock, b"mine").unwrap();
        let e = lock_beside(&model, &lock, "training")
            .unwrap_err()
            .to_string();
        assert!(e.contains("holds data"), "{e}");
        assert_eq!(std::fs::read(&lock).unwrap(), b"mine");
        std::fs::remove_file(&lock).unwrap();
        std::fs::create_dir(&lock).unwrap();
        let e = lock_beside(&model, &lock, "training")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not the lock file"), "{e}");
        assert!(lock.is_dir());
    }
}
