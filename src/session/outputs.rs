//! Never write over an input or another run's files: a run's output files are checked against its inputs and the folder's contents before any work.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// What `rmld augment` writes into its output folder.
pub const AUGMENT_OUTPUTS: &[&str] = &[
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "generated-images-idx3-ubyte.gz",
    "generated-labels-idx1-ubyte.gz",
    "generated-codes.npy",
    "generated-labels.npy",
    "generated.png",
    "codes.npy",
    "labels.npy",
    "test-codes.npy",
    "test-labels.npy",
    "dictionary.npy",
    "report.json",
];

/// What `rmld sample` writes into its output folder.
pub const SAMPLE_OUTPUTS: &[&str] = &[
    "codes.npy",
    "images.npy",
    "dictionary.npy",
    "samples.png",
    "report.json",
    "checkpoint.rmld",
    "sample_stats/acceptance_rate.npy",
    "sample_stats/energy.npy",
    "sample_stats/step_size.npy",
    "sample_stats/diverging.npy",
    "sample_stats/n_steps.npy",
];

/// What `rmld encode` writes into its output folder.
pub const ENCODE_OUTPUTS: &[&str] = &[
    "codes.npy",
    "reconstructions.npy",
    "images.npy",
    "dictionary.npy",
    "reconstructions.png",
    "report.json",
];

/// What `rmld bench` writes into its output folder.
pub const BENCH_OUTPUTS: &[&str] = &["bench.json", "bench.csv", "bench.png"];

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
    let Some(existing) = outputs
        .iter()
        .map(|name| out.join(name))
        .find(|path| path.symlink_metadata().is_ok())
    else {
        return Ok(());
    };
    if held_by_another_run(out) {
        return Err(Error::usage(
            "out",
            format!(
                "another rmld run is writing into {} (it holds {})",
                out.display(),
                out.join(super::LOCK).display()
            ),
        ));
    }
    let resumable = outputs.contains(&super::CHECKPOINT) && out.join(super::CHECKPOINT).is_file();
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

/// True when the folder's run lock exists and another process holds it.
fn held_by_another_run(out: &Path) -> bool {
    let Ok(file) = std::fs::File::open(out.join(super::LOCK)) else {
        return false;
    };
    matches!(
        file.try_lock_shared(),
        Err(std::fs::TryLockError::WouldBlock)
    )
}

/// Fails (`Error::Usage` on `out`) when one of `outputs` in the folder `out` is, or resolves to,
/// one of `inputs`: a file, or every file directly inside a folder (a dataset folder holds its
/// splits and labels). Nothing is created or written.
pub fn refuse_overwriting_inputs(
    out: &Path,
    outputs: &[&str],
    inputs: &[Option<&Path>],
) -> Result<()> {
    let mut files: HashSet<PathBuf> = HashSet::new();
    for input in inputs.iter().flatten() {
        if input.is_dir() {
            if let Ok(entries) = std::fs::read_dir(input) {
                for entry in entries.flatten() {
                    if let Ok(path) = entry.path().canonicalize() {
                        files.insert(path);
                    }
                }
            }
        } else if let Ok(path) = input.canonicalize() {
            files.insert(path);
        }
    }
    for name in outputs {
        let path = out.join(name);
        if path
            .canonicalize()
            .is_ok_and(|resolved| files.contains(&resolved))
        {
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
