//! All-or-nothing outputs: a run writes into a hidden staging folder inside OUT and publishes every file at once, through a journal a killed run's successor completes.
//!
//! A run's files are written into `OUT/.rmld-staging-RUN/` (same file system, so a rename never
//! copies). [`Staging::publish`] then writes the journal `OUT/.rmld-publish.json` (atomically: it
//! exists whole or not at all), renames each staged file over its final name, removes the earlier
//! run's outputs this run did not write, and deletes the journal and the staging folder. Renames
//! need no data blocks, so a full disk fails the run while it writes its staging folder, leaving
//! the earlier output as it was.
//!
//! What a stop at any point leaves, and what the next run on OUT does with it ([`recover`], called
//! under the run lock before anything else):
//! - before the journal exists: the earlier output untouched and a staging folder, which is
//!   removed (it is recognised by its name; no file of the user's is ever in it), unless it
//!   holds a sampling run's checkpoint: then it is listed as resumable, and `rmld resume`
//!   continues from it (a new run into OUT removes it only when told to replace OUT's files);
//! - after it: the journal names every file; the next run finishes the renames and removals
//!   (roll forward), so the output is the new run's, complete.
//!
//! Readers never see a mixture of two runs' files once recovery has run; report.json is published
//! last, so a folder holding report.json holds the run it describes.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Prefix of a staging folder's name inside OUT; the rest is the run id.
pub const STAGING_PREFIX: &str = ".rmld-staging-";
/// The publication journal inside OUT.
pub const JOURNAL: &str = ".rmld-publish.json";
/// Published after every other file: its presence says the rest is there.
const LAST: &str = "report.json";

/// What the journal records: enough to finish a publication that was stopped.
#[derive(Debug, Serialize, Deserialize)]
struct Journal {
    /// The staging folder's name inside OUT.
    staging: String,
    /// Files to move from the staging folder to OUT (paths relative to both), report.json last.
    files: Vec<String>,
    /// Earlier outputs in OUT to remove (names this run's command writes but this run did not).
    remove: Vec<String>,
}

/// A run's staging folder inside OUT, removed when dropped unless published.
#[derive(Debug)]
pub struct Staging {
    out: PathBuf,
    dir: PathBuf,
    published: bool,
}

/// What [`recover`] found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    /// Staging folders of runs that stopped before publishing, removed.
    pub removed: Vec<PathBuf>,
    /// A publication stopped half-way and completed (the staging folder it came from).
    pub completed: Option<PathBuf>,
    /// Staging folders of sampling runs that stopped before publishing and hold a checkpoint
    /// (`rmld resume` continues from one): kept.
    pub resumable: Vec<PathBuf>,
}

impl Recovery {
    /// True when nothing was found.
    pub fn is_empty(&self) -> bool {
        self.removed.is_empty() && self.completed.is_none() && self.resumable.is_empty()
    }
}

/// A fresh random id (128 bits as 32 hex digits): a run's, or a staging folder's.
pub fn new_run_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// True when the staging folder `dir` holds a sampling run's checkpoint.
pub fn holds_checkpoint(dir: &Path) -> bool {
    dir.join(super::output_folder::CHECKPOINT).is_file()
}

fn output_error(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Output {
        path: path.to_path_buf(),
        source,
    }
}

/// Refuses a relative name that could leave its folder (absolute, `..`, empty).
fn check_name(name: &str) -> Result<()> {
    let path = Path::new(name);
    let plain = !name.is_empty()
        && path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    if plain {
        Ok(())
    } else {
        Err(Error::Internal(format!(
            "staged output name {name:?} is not a plain relative path"
        )))
    }
}

impl Staging {
    /// Creates OUT (if needed) and the run's empty staging folder `OUT/.rmld-staging-RUN`.
    /// `run` must be unique to the run (a random id): an existing folder of that name is an error.
    pub fn begin(out: &Path, run: &str) -> Result<Staging> {
        check_name(run)?;
        std::fs::create_dir_all(out).map_err(output_error(out))?;
        let dir = out.join(format!("{STAGING_PREFIX}{run}"));
        std::fs::create_dir(&dir).map_err(output_error(&dir))?;
        Ok(Staging {
            out: out.to_path_buf(),
            dir,
            published: false,
        })
    }

    /// Takes over the staging folder `dir` inside `out` that a stopped run left (to continue
    /// that run: `rmld resume`); it is published, or kept, as one this run began. The atomic
    /// writes' temporary files a killed run left in it are removed: they were never outputs.
    pub fn adopt(out: &Path, dir: &Path) -> Result<Staging> {
        let name = file_name(dir);
        let inside = dir.parent() == Some(out) && name.starts_with(STAGING_PREFIX);
        if !inside || !dir.is_dir() {
            return Err(Error::Internal(format!(
                "{} is not a staging folder of {}",
                dir.display(),
                out.display()
            )));
        }
        for staged in staged_files(dir)? {
            let base = staged.rsplit('/').next().unwrap_or_default();
            if super::atomic::is_temporary_name(base) {
                super::remove_file_if_present(&dir.join(&staged))?;
            }
        }
        Ok(Staging {
            out: out.to_path_buf(),
            dir: dir.to_path_buf(),
            published: false,
        })
    }

    /// Leaves the staging folder in place when dropped (it holds what a later run continues).
    pub fn keep(mut self) -> PathBuf {
        self.published = true;
        self.dir.clone()
    }

    /// The staging folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The output folder the files are published into.
    pub fn out(&self) -> &Path {
        &self.out
    }

    /// Where the run writes `name` (a path relative to OUT, e.g. `sample_stats/energy.npy`)
    /// before publication; its parent folders are created.
    pub fn path(&self, name: &str) -> Result<PathBuf> {
        check_name(name)?;
        let path = self.dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(output_error(parent))?;
        }
        Ok(path)
    }

    /// Publishes every file in the staging folder under its name in OUT, and removes those of
    /// `outputs` (the names the command may write) that exist in OUT but this run did not write,
    /// so OUT never mixes two runs. report.json goes last. Returns the published names, sorted.
    pub fn publish(mut self, outputs: &[&str]) -> Result<Vec<String>> {
        let mut files = staged_files(&self.dir)?;
        files.sort_by_key(|name| (name == LAST, name.clone()));
        let remove: Vec<String> = outputs
            .iter()
            .filter(|name| !files.iter().any(|f| f == *name))
            .filter(|name| self.out.join(name).symlink_metadata().is_ok())
            .map(|name| name.to_string())
            .collect();
        for name in files.iter().chain(&remove) {
            check_name(name)?;
        }
        let journal = Journal {
            staging: file_name(&self.dir),
            files: files.clone(),
            remove,
        };
        super::write_json_atomic(&self.out.join(JOURNAL), &journal)?;
        self.published = true;
        finish(&self.out, &journal)?;
        files.sort();
        Ok(files)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.published {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Every file under `dir`, as paths relative to it with `/` separators.
fn staged_files(dir: &Path) -> Result<Vec<String>> {
    let mut found = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let folder = dir.join(&relative);
        for entry in std::fs::read_dir(&folder).map_err(output_error(&folder))? {
            let entry = entry.map_err(output_error(&folder))?;
            let name = relative.join(entry.file_name());
            let kind = entry.file_type().map_err(output_error(&entry.path()))?;
            if kind.is_dir() {
                pending.push(name);
            } else {
                let text = name.to_str().ok_or_else(|| {
                    Error::Internal(format!(
                        "staged file {} has a non-UTF-8 name",
                        name.display()
                    ))
                })?;
                found.push(text.replace(std::path::MAIN_SEPARATOR, "/"));
            }
        }
    }
    Ok(found)
}

/// Moves the journal's files into OUT and removes its stale outputs, then deletes the journal and
/// the staging folder. Idempotent: a file already moved is skipped, so a stopped publication can
/// be finished by running this again.
fn finish(out: &Path, journal: &Journal) -> Result<()> {
    let staging = out.join(&journal.staging);
    for name in &journal.remove {
        let path = out.join(name);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(output_error(&path)(e)),
        }
    }
    for name in &journal.files {
        let from = staging.join(name);
        let to = out.join(name);
        if from.symlink_metadata().is_err() {
            continue; // moved before the stop
        }
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(output_error(parent))?;
        }
        std::fs::rename(&from, &to).map_err(output_error(&to))?;
    }
    sync_dir(out);
    let journal_path = out.join(JOURNAL);
    std::fs::remove_file(&journal_path).map_err(output_error(&journal_path))?;
    let _ = std::fs::remove_dir_all(&staging);
    sync_dir(out);
    Ok(())
}

fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// Cleans up after a run on OUT that stopped (error, signal, kill -9, power loss): finishes a
/// publication its journal records, and removes every staging folder no journal names but those
/// holding a checkpoint (listed as resumable, oldest first). Call it holding OUT's run lock,
/// before the run looks at OUT's files. A missing OUT is nothing to do.
pub fn recover(out: &Path) -> Result<Recovery> {
    let mut recovery = Recovery::default();
    let journal_path = out.join(JOURNAL);
    if journal_path.symlink_metadata().is_ok() {
        let text = super::read_regular_file(&journal_path, "publication journal", 1 << 20)?;
        let journal: Journal = serde_json::from_slice(&text).map_err(|e| {
            Error::input(
                &journal_path,
                format!(
                    "is not a publication journal ({e}); an rmld run writes it while it publishes \
                     its outputs: remove it by hand if it is not rmld's"
                ),
            )
        })?;
        check_name(&journal.staging)?;
        if !journal.staging.starts_with(STAGING_PREFIX) {
            return Err(Error::input(
                &journal_path,
                "names a staging folder that is not rmld's",
            ));
        }
        for name in journal.files.iter().chain(&journal.remove) {
            check_name(name)?;
        }
        finish(out, &journal)?;
        recovery.completed = Some(out.join(&journal.staging));
    }
    let entries = match std::fs::read_dir(out) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(recovery),
        Err(e) => return Err(output_error(out)(e)),
    };
    for entry in entries {
        let entry = entry.map_err(output_error(out))?;
        let name = entry.file_name();
        let is_staging = name.to_str().is_some_and(|n| n.starts_with(STAGING_PREFIX))
            && entry.file_type().is_ok_and(|t| t.is_dir());
        if !is_staging {
            continue;
        }
        let path = entry.path();
        if holds_checkpoint(&path) {
            recovery.resumable.push(path);
        } else {
            std::fs::remove_dir_all(&path).map_err(output_error(&path))?;
            recovery.removed.push(path);
        }
    }
    recovery.removed.sort();
    let modified = |dir: &PathBuf| {
        let checkpoint = dir.join(super::output_folder::CHECKPOINT);
        checkpoint.metadata().and_then(|m| m.modified()).ok()
    };
    recovery.resumable.sort_by_key(modified);
    Ok(recovery)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::write(path, text).unwrap();
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn publish_replaces_the_earlier_run_and_removes_what_this_one_did_not_write() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        std::fs::create_dir(&out).unwrap();
        write(&out.join("codes.npy"), "old codes");
        write(&out.join("test-codes.npy"), "old test codes");
        write(&out.join("report.json"), "old report");
        write(&out.join("notes.txt"), "the user's");
        let staging = Staging::begin(&out, "a1").unwrap();
        write(&staging.path("codes.npy").unwrap(), "new codes");
        write(&staging.path("sample_stats/energy.npy").unwrap(), "energy");
        write(&staging.path("report.json").unwrap(), "new report");
        let outputs = [
            "codes.npy",
            "test-codes.npy",
            "report.json",
            "sample_stats/energy.npy",
        ];
        let published = staging.publish(&outputs).unwrap();
        assert_eq!(
            published,
            ["codes.npy", "report.json", "sample_stats/energy.npy"]
        );
        assert_eq!(read(&out.join("codes.npy")), "new codes");
        assert_eq!(read(&out.join("report.json")), "new report");
        assert_eq!(read(&out.join("sample_stats/energy.npy")), "energy");
        assert_eq!(read(&out.join("notes.txt")), "the user's");
        assert_eq!(
            names(&out),
            ["codes.npy", "notes.txt", "report.json", "sample_stats"]
        );
    }

    #[test]
    fn a_run_that_fails_before_publishing_leaves_the_earlier_output() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().to_path_buf();
        write(&out.join("codes.npy"), "old");
        {
            let staging = Staging::begin(&out, "b2").unwrap();
            write(&staging.path("codes.npy").unwrap(), "half");
            // dropped without publishing: an error path
        }
        assert_eq!(names(&out), ["codes.npy"]);
        assert_eq!(read(&out.join("codes.npy")), "old");
    }

    #[test]
    fn recovery_removes_a_killed_runs_staging_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().to_path_buf();
        write(&out.join("codes.npy"), "old");
        let staging = Staging::begin(&out, "c3").unwrap();
        write(&staging.path("codes.npy").unwrap(), "half");
        std::mem::forget(staging); // kill -9: no destructor runs
        let recovery = recover(&out).unwrap();
        assert_eq!(recovery.removed, [out.join(".rmld-staging-c3")]);
        assert_eq!(recovery.completed, None);
        assert_eq!(names(&out), ["codes.npy"]);
        assert_eq!(read(&out.join("codes.npy")), "old");
        assert!(recover(&out).unwrap().is_empty());
    }

    #[test]
    fn recovery_keeps_a_killed_runs_checkpoint_and_a_run_can_adopt_it() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().to_path_buf();
        let staging = Staging::begin(&out, "f6").unwrap();
        write(&staging.path("checkpoint.rmld").unwrap(), "state");
        write(&staging.path(".codes.npy.partial").unwrap(), "rows");
        // Half-written atomic writes of a run killed during them: never published.
        let torn = [
            "sample_stats/.energy.npy.tmp-Ab3xY9",
            ".report.json.tmp-000aZz",
        ];
        for name in torn {
            write(&staging.path(name).unwrap(), "half");
        }
        let dir = staging.keep();
        let recovery = recover(&out).unwrap();
        assert_eq!(recovery.resumable, std::slice::from_ref(&dir));
        assert!(recovery.removed.is_empty());
        let adopted = Staging::adopt(&out, &dir).unwrap();
        assert!(torn.iter().all(|name| !dir.join(name).exists()));
        assert!(dir.join(".codes.npy.partial").exists());
        write(&adopted.path("codes.npy").unwrap(), "all rows");
        std::fs::remove_file(adopted.path(".codes.npy.partial").unwrap()).unwrap();
        adopted.publish(&["codes.npy", "checkpoint.rmld"]).unwrap();
        assert_eq!(names(&out), ["checkpoint.rmld", "codes.npy"]);
        assert!(Staging::adopt(&out, tmp.path()).is_err());
    }

    #[test]
    fn recovery_finishes_a_publication_stopped_half_way() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().to_path_buf();
        write(&out.join("codes.npy"), "old codes");
        write(&out.join("labels.npy"), "old labels");
        write(&out.join("report.json"), "old report");
        let staging = Staging::begin(&out, "d4").unwrap();
        write(&staging.path("codes.npy").unwrap(), "new codes");
        write(&staging.path("report.json").unwrap(), "new report");
        // The journal written and the first rename done, then the process died.
        let journal = Journal {
            staging: ".rmld-staging-d4".into(),
            files: vec!["codes.npy".into(), "report.json".into()],
            remove: vec!["labels.npy".into()],
        };
        crate::io::write_json_atomic(&out.join(JOURNAL), &journal).unwrap();
        std::fs::rename(staging.path("codes.npy").unwrap(), out.join("codes.npy")).unwrap();
        std::mem::forget(staging);
        let recovery = recover(&out).unwrap();
        assert_eq!(recovery.completed, Some(out.join(".rmld-staging-d4")));
        assert_eq!(names(&out), ["codes.npy", "report.json"]);
        assert_eq!(read(&out.join("codes.npy")), "new codes");
        assert_eq!(read(&out.join("report.json")), "new report");
    }

    #[test]
    fn names_that_leave_the_folder_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let staging = Staging::begin(tmp.path(), "e5").unwrap();
        assert!(staging.path("../x").is_err());
        assert!(staging.path("/etc/passwd").is_err());
        assert!(staging.path("").is_err());
        assert!(Staging::begin(tmp.path(), "../e6").is_err());
    }

    #[test]
    fn a_journal_that_is_not_rmlds_is_refused_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        write(
            &tmp.path().join(JOURNAL),
            "{\"staging\": \"../elsewhere\", \"files\": [], \"remove\": []}",
        );
        let error = recover(tmp.path()).unwrap_err().to_string();
        assert!(
            error.contains("plain relative path") || error.contains(JOURNAL),
            "{error}"
        );
        write(&tmp.path().join(JOURNAL), "not json");
        let error = recover(tmp.path()).unwrap_err().to_string();
        assert!(error.contains(JOURNAL), "{error}");
    }
}
