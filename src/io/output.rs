//! The one writer of a run's output folder: every file a run makes goes through it, so that a stopped run takes back all it wrote.

use std::fs::File;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{output_folder, partial_path, NpyStream};
use crate::Result;

/// A run's output folder and what the run wrote into it so far.
pub struct Output {
    /// The folder.
    pub dir: PathBuf,
    files: Vec<PathBuf>,
    streams: Vec<PathBuf>,
    lock: Option<File>,
}

impl Output {
    /// The folder `dir`, checked before any work for the files `names` (never over one of
    /// `inputs`; over another run's files only with `force`). Nothing is created yet.
    pub fn check(
        dir: &Path,
        names: &[&str],
        inputs: &[Option<&Path>],
        force: bool,
    ) -> Result<Output> {
        output_folder::check_output_folder(dir, names, inputs, force)?;
        Ok(Output::unchecked(dir))
    }

    /// The folder `dir`, checked already (a merge checks it before it reads the shards).
    pub fn unchecked(dir: &Path) -> Output {
        Output {
            dir: dir.to_path_buf(),
            files: Vec::new(),
            streams: Vec::new(),
            lock: None,
        }
    }

    /// Creates the folder and locks it for this run; `stale` files (a shard's manifest, which
    /// must not vouch for this run's files) are removed.
    pub fn open(&mut self, stale: &[&str]) -> Result<()> {
        super::prepare_output_dir(&self.dir)?;
        self.lock = Some(output_folder::lock_output(&self.dir)?);
        for name in stale {
            output_folder::remove_if_present(&self.dir.join(name))?;
        }
        Ok(())
    }

    /// Writes the file `name` by `write(path)`.
    pub fn write(&mut self, name: &str, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
        let path = self.dir.join(name);
        self.files.push(path.clone());
        write(&path)
    }

    /// A new NPY stream `name` of rows `tail`, written under a hidden partial name until it
    /// is finished.
    pub fn stream(&mut self, name: &str, tail: &[usize]) -> Result<NpyStream> {
        let path = self.dir.join(name);
        self.streams.push(path.clone());
        NpyStream::create(&path, tail)
    }

    /// Writes report.json (kept when the run stops).
    pub fn report(&self, report: &Value) -> Result<()> {
        super::write_json_atomic(&self.dir.join("report.json"), report)
    }

    /// Removes every file and stream written so far.
    pub fn discard(&mut self) {
        for path in self.files.drain(..) {
            let _ = std::fs::remove_file(&path);
        }
        for path in self.streams.drain(..) {
            let _ = std::fs::remove_file(partial_path(&path));
        }
    }
}
