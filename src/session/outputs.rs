//! Never write over an input: a run's output files are checked against its input files before any work.

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
