//! The one writer of a run's output folder: every file a run makes goes into its staging folder, and all of them are published at once or none is.
//!
//! [`Output::check`] checks the folder before any work and takes its run lock; recovery of a
//! stopped earlier run (see `io::staging`) happens then. [`Output::open`] begins the staging
//! folder; [`Output::publish`] moves its files over OUT's in one journalled step. A run that
//! fails or is dropped before publishing leaves OUT as it was, and its staging folder is removed
//! unless it holds a checkpoint (a sampling run's, which `rmld resume` continues); a folder the
//! run created and left empty is removed with its lock file.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::staging::{self, holds_checkpoint, new_run_id, Recovery, Staging};
use super::{output_folder, NpyStream};
use crate::{Error, Result};

/// A run's output folder, its lock, and the staging folder the run writes into.
pub struct Output {
    /// The folder.
    pub dir: PathBuf,
    names: Vec<String>,
    lock: Option<output_folder::RunLock>,
    staging: Option<Staging>,
    recovery: Recovery,
    /// Leftover staging folders to remove once this run has published.
    superseded: Vec<PathBuf>,
}

impl Output {
    /// The folder `dir`, checked before any work for the files `names` (never over one of
    /// `inputs`; over another run's files, or over a stopped run's checkpoint, only with
    /// `force`). An existing folder is locked for this run and cleaned of what a stopped run left
    /// ([`Output::recovery`] says what); nothing else is created yet. A publication a killed run
    /// left half done is finished first, even when this run is then refused.
    pub fn check(
        dir: &Path,
        names: &[&str],
        inputs: &[Option<&Path>],
        force: bool,
    ) -> Result<Output> {
        let mut output = Output::unchecked(dir, names);
        // A publication a killed run left half done is finished first, even for a run that is
        // then refused: otherwise the folder would go on holding two runs' files side by side,
        // which is what the refusal's "already exists" would then point at.
        if dir.join(staging::JOURNAL).symlink_metadata().is_ok() {
            output.lock_and_recover()?;
            output.lock = None; // the check below probes the lock as it would any other run's
        }
        // Otherwise refused before the lock is taken: a refused run leaves the folder untouched.
        output_folder::check_output_folder(dir, names, inputs, force)?;
        if dir.symlink_metadata().is_ok() {
            let finished = std::mem::take(&mut output.recovery);
            output.lock_and_recover()?;
            output.recovery.completed = finished.completed;
            output.recovery.removed.extend(finished.removed);
        }
        if let Some(leftover) = output.recovery.resumable.last() {
            if !force {
                return Err(Error::usage(
                    "out",
                    format!(
                        "{} holds the checkpoint of a sampling run that stopped before it \
                         published its outputs (killed, or a failure): `rmld resume {}` \
                         continues it; give `force` to discard it",
                        leftover.display(),
                        dir.display()
                    ),
                ));
            }
            for path in std::mem::take(&mut output.recovery.resumable) {
                std::fs::remove_dir_all(&path).map_err(|source| Error::Output {
                    path: path.clone(),
                    source,
                })?;
                output.recovery.removed.push(path);
            }
        }
        Ok(output)
    }

    /// The folder `dir`, to write `names` into, not checked (a merge checks it before it reads
    /// the shards; `rmld resume` continues a run in it).
    pub fn unchecked(dir: &Path, names: &[&str]) -> Output {
        Output {
            dir: dir.to_path_buf(),
            names: names.iter().map(|n| n.to_string()).collect(),
            lock: None,
            staging: None,
            recovery: Recovery::default(),
            superseded: Vec::new(),
        }
    }

    /// Locks the folder (which must exist and be a folder) and recovers what a stopped run
    /// left in it (staging folders with a checkpoint are kept, see [`Recovery::resumable`]).
    pub fn lock_and_recover(&mut self) -> Result<()> {
        if self.lock.is_some() {
            return Ok(());
        }
        let dir = &self.dir;
        if !dir.is_dir() {
            return Err(Error::usage(
                "out",
                format!(
                    "{} is {}, not a folder: the outputs go into a folder; choose another path",
                    dir.display(),
                    if dir.exists() { "a file" } else { "missing" }
                ),
            ));
        }
        self.lock = Some(output_folder::lock_output(dir)?);
        self.recovery = staging::recover(dir)?;
        Ok(())
    }

    /// What the check found of a stopped earlier run and did about it.
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    /// Creates the folder, locks it for this run and begins the run's staging folder.
    pub fn open(&mut self) -> Result<()> {
        if self.lock.is_none() {
            // This run makes the folder: its lock removes it again if nothing is published.
            self.lock = Some(output_folder::create_and_lock(&self.dir)?);
            self.recovery = staging::recover(&self.dir)?;
        }
        self.staging = Some(Staging::begin(&self.dir, &new_run_id()[..16])?);
        Ok(())
    }

    /// Continues in the staging folder `dir` a stopped run left in the folder (`rmld resume`).
    pub fn adopt(&mut self, dir: &Path) -> Result<()> {
        self.lock_and_recover()?;
        self.staging = Some(Staging::adopt(&self.dir, dir)?);
        Ok(())
    }

    /// Adds `names` to those the run writes: an earlier run's files of these names are removed
    /// when this run publishes without writing them.
    pub fn also_replace(&mut self, names: &[&str]) {
        self.names.extend(names.iter().map(|n| n.to_string()));
    }

    /// Also removes these leftover staging folders once this run has published.
    pub fn supersede(&mut self, dirs: Vec<PathBuf>) {
        self.superseded.extend(dirs);
    }

    /// The staging folder (after [`Output::open`]).
    pub fn staged(&self) -> Result<&Path> {
        self.staging
            .as_ref()
            .map(Staging::dir)
            .ok_or_else(|| Error::Internal("output folder written before it was opened".into()))
    }

    /// Where the run writes the file `name` (its parent folders are created).
    pub fn path(&self, name: &str) -> Result<PathBuf> {
        match &self.staging {
            Some(staging) => staging.path(name),
            None => Err(Error::Internal(format!(
                "{name} written before the output folder was opened"
            ))),
        }
    }

    /// Writes the file `name` by `write(path)`.
    pub fn write(&mut self, name: &str, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
        write(&self.path(name)?)
    }

    /// A new NPY stream `name` of rows `tail`.
    pub fn stream(&mut self, name: &str, tail: &[usize]) -> Result<NpyStream> {
        NpyStream::create(&self.path(name)?, tail)
    }

    /// Writes report.json (published last).
    pub fn report(&self, report: &Value) -> Result<()> {
        super::write_json_atomic(&self.path("report.json")?, report)
    }

    /// True when the folder holds a file of one of the names this run writes (an earlier
    /// run's output).
    pub fn holds_earlier_output(&self) -> bool {
        self.names
            .iter()
            .any(|name| self.dir.join(name).symlink_metadata().is_ok())
    }

    /// Publishes every file written: they replace the folder's files of the same names, and
    /// the earlier run's files of this command's names that this run did not write are removed.
    pub fn publish(&mut self) -> Result<()> {
        let staging = self.staging.take().ok_or_else(|| {
            Error::Internal("output folder published before it was opened".into())
        })?;
        let names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        staging.publish(&names)?;
        for dir in self.superseded.drain(..) {
            let _ = std::fs::remove_dir_all(dir);
        }
        Ok(())
    }

    /// Drops every file written so far (the staging folder is removed, checkpoint or not).
    pub fn discard(&mut self) {
        self.staging = None;
    }

    /// Writes report.json alone and publishes it, when the folder holds no earlier output
    /// (which it would otherwise replace by a report of a run that kept nothing); drops every
    /// other file written. True when published.
    pub fn publish_report_alone(&mut self, report: &Value) -> Result<bool> {
        self.discard();
        if self.holds_earlier_output() {
            return Ok(false);
        }
        self.open()?;
        self.report(report)?;
        self.publish()?;
        Ok(true)
    }
}

impl Drop for Output {
    /// A staging folder holding a checkpoint outlives a failed run: `rmld resume` continues it.
    /// A run that leaves the folder empty but for its lock removes the lock file, and the
    /// folder too when it created it.
    fn drop(&mut self) {
        if let Some(staging) = self.staging.take() {
            if holds_checkpoint(staging.dir()) {
                staging.keep();
            }
        }
        // Then the lock is released (its own Drop tidies an empty folder).
        self.lock = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != output_folder::LOCK)
            .collect();
        v.sort();
        v
    }

    #[test]
    fn nothing_is_visible_before_publication_and_everything_after() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let mut output = Output::check(&out, &["a.json", "report.json"], &[], false).unwrap();
        assert!(!out.exists(), "the check creates nothing");
        output.open().unwrap();
        output
            .write("a.json", |p| crate::io::write_json_atomic(p, &1))
            .unwrap();
        output.report(&serde_json::json!({"done": true})).unwrap();
        assert_eq!(names(&out).len(), 1, "only the staging folder");
        output.publish().unwrap();
        assert_eq!(names(&out), ["a.json", "report.json"]);
    }

    #[test]
    fn a_failed_run_leaves_the_earlier_output_and_a_checkpoint_survives_it() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().to_path_buf();
        std::fs::write(out.join("a.json"), "1").unwrap();
        {
            let mut output = Output::check(&out, &["a.json"], &[], true).unwrap();
            output.open().unwrap();
            std::fs::write(output.path("a.json").unwrap(), "2").unwrap();
        }
        assert_eq!(names(&out), ["a.json"]);
        assert_eq!(std::fs::read_to_string(out.join("a.json")).unwrap(), "1");
        let kept = {
            let mut output = Output::check(&out, &["a.json"], &[], true).unwrap();
            output.open().unwrap();
            std::fs::write(output.path("checkpoint.rmld").unwrap(), "state").unwrap();
            output.staged().unwrap().to_path_buf()
        };
        assert!(kept.join("checkpoint.rmld").is_file());
        let refused = Output::check(&out, &["b.json"], &[], false).err().unwrap();
        assert!(refused.to_string().contains("rmld resume"), "{refused}");
        let output = Output::check(&out, &["b.json"], &[], true).unwrap();
        assert_eq!(output.recovery().removed, [kept]);
        drop(output);
        assert_eq!(names(&out), ["a.json"]);
    }

    #[test]
    fn a_refused_run_first_finishes_a_publication_a_killed_run_left_half_done() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().to_path_buf();
        std::fs::write(out.join("a.json"), "old a").unwrap();
        std::fs::write(out.join("b.json"), "old b").unwrap();
        // A --force run staged a.json and b.json, journalled them, moved a.json and was killed.
        let staging = staging::Staging::begin(&out, "k1").unwrap();
        for (name, text) in [("a.json", "new a"), ("b.json", "new b")] {
            std::fs::write(staging.path(name).unwrap(), text).unwrap();
        }
        let staged = staging
            .path("a.json")
            .unwrap()
            .parent()
            .unwrap()
            .to_path_buf();
        std::mem::forget(staging); // killed: its Drop does not run
        let journal = serde_json::json!({
            "staging": staged.file_name().unwrap().to_str().unwrap(),
            "files": ["a.json", "b.json"],
            "remove": [],
        });
        crate::io::write_json_atomic(&out.join(staging::JOURNAL), &journal).unwrap();
        std::fs::rename(staged.join("a.json"), out.join("a.json")).unwrap();
        // The next run, without --force, is refused; the folder then holds the killed run's
        // two files, not a new a.json beside an old b.json.
        let refused = Output::check(&out, &["a.json", "b.json"], &[], false)
            .err()
            .unwrap();
        assert!(refused.to_string().contains("already exists"), "{refused}");
        assert_eq!(names(&out), ["a.json", "b.json"]);
        for (name, text) in [("a.json", "new a"), ("b.json", "new b")] {
            assert_eq!(std::fs::read_to_string(out.join(name)).unwrap(), text);
        }
    }

    #[test]
    fn a_file_named_as_the_folder_is_refused_in_words() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let e = Output::check(&file, &["a.json"], &[], true).err().unwrap();
        assert!(e.to_string().contains("is a file, not a folder"), "{e}");
    }

    #[test]
    fn a_stopped_run_publishes_its_report_only_into_a_folder_without_earlier_output() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().to_path_buf();
        let report = serde_json::json!({"interrupted": true});
        let mut output = Output::check(&out, &["a.json", "report.json"], &[], false).unwrap();
        output.open().unwrap();
        std::fs::write(output.path("a.json").unwrap(), "half").unwrap();
        assert!(output.publish_report_alone(&report).unwrap());
        drop(output);
        assert_eq!(names(&out), ["report.json"]);
        std::fs::write(out.join("a.json"), "earlier").unwrap();
        let mut output = Output::check(&out, &["a.json", "report.json"], &[], true).unwrap();
        output.open().unwrap();
        assert!(!output.publish_report_alone(&report).unwrap());
        assert_eq!(names(&out), ["a.json", "report.json"]);
    }

    #[test]
    fn a_failed_run_leaves_no_folder_it_made_and_no_lock_in_an_empty_one() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("new/deeper/out");
        {
            let mut output = Output::check(&out, &["a.json"], &[], false).unwrap();
            output.open().unwrap();
            std::fs::write(output.path("a.json").unwrap(), "half").unwrap();
        }
        assert!(
            !tmp.path().join("new").exists(),
            "the folders the run made are gone"
        );
        assert!(tmp.path().exists());

        let empty = tmp.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        {
            let mut output = Output::check(&empty, &["a.json"], &[], false).unwrap();
            output.open().unwrap();
        }
        assert!(empty.is_dir(), "a folder the user made stays");
        assert_eq!(
            std::fs::read_dir(&empty).unwrap().count(),
            0,
            "and holds no lock file"
        );

        let mut output = Output::check(&empty, &["a.json"], &[], false).unwrap();
        output.open().unwrap();
        std::fs::write(output.path("a.json").unwrap(), "1").unwrap();
        output.publish().unwrap();
        drop(output);
        assert_eq!(names(&empty), ["a.json"]);
        assert!(
            empty.join(output_folder::LOCK).is_file(),
            "a published folder keeps its lock"
        );
    }

    #[test]
    fn a_lock_on_a_removed_lock_file_is_not_taken() {
        let tmp = tempfile::tempdir().unwrap();
        let first = output_folder::lock_output(tmp.path()).unwrap();
        // A second run's handle on the same file, as if opened just before the holder left.
        let stale = std::fs::File::open(tmp.path().join(output_folder::LOCK)).unwrap();
        drop(first);
        assert!(!tmp.path().join(output_folder::LOCK).exists());
        assert!(stale.try_lock().is_ok(), "the removed file's lock is free");
        // Yet the folder is not held: the next run locks the file its path names now.
        let next = output_folder::lock_output(tmp.path()).unwrap();
        assert!(tmp.path().join(output_folder::LOCK).is_file());
        let e = output_folder::lock_output(tmp.path()).err().unwrap();
        assert!(e.to_string().contains("another rmld run"), "{e}");
        drop(next);
    }
}
