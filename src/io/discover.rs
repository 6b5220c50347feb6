//! Finding the IDX images and labels files of a split in a dataset directory (MNIST/EMNIST names).

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// Which split of a directory dataset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// `train-images-idx3-ubyte[.gz]`, `*-train-images-idx3-ubyte[.gz]`.
    Train,
    /// `t10k-images-idx3-ubyte[.gz]`, `*-test-images-idx3-ubyte[.gz]`.
    Test,
}

/// The files of one split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitFiles {
    /// The IDX images file.
    pub images: PathBuf,
    /// The matching IDX labels file, when present.
    pub labels: Option<PathBuf>,
}

impl Split {
    /// Whether `stem` (a file name without `.gz`) names this split's images file. The MNIST
    /// originals also circulate as `train-images.idx3-ubyte`, so the dot form is accepted.
    fn matches(self, stem: &str) -> bool {
        let (bare, prefixed) = match self {
            Split::Train => ("train-images", "-train-images"),
            Split::Test => ("t10k-images", "-test-images"),
        };
        ["-idx3-ubyte", ".idx3-ubyte"].iter().any(|suffix| {
            stem.strip_suffix(suffix)
                .is_some_and(|head| head == bare || head.ends_with(prefixed))
        })
    }

    /// What was looked for, for messages.
    pub fn patterns(self) -> &'static str {
        match self {
            Split::Train => "train-images-idx3-ubyte[.gz] or *-train-images-idx3-ubyte[.gz]",
            Split::Test => "t10k-images-idx3-ubyte[.gz] or *-test-images-idx3-ubyte[.gz]",
        }
    }
}

/// The names of the plain files in `dir`, sorted (non-UTF-8 names are skipped).
pub fn file_names(dir: &Path) -> Result<Vec<String>> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| Error::input(dir, format!("cannot list the directory: {e}")))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry =
            entry.map_err(|e| Error::input(dir, format!("cannot list the directory: {e}")))?;
        if entry.path().is_file() {
            if let Ok(name) = entry.file_name().into_string() {
                names.push(name);
            }
        }
    }
    names.sort();
    Ok(names)
}

/// Strips one `.gz` suffix.
fn stem(name: &str) -> &str {
    name.strip_suffix(".gz").unwrap_or(name)
}

/// Finds `split`'s images file in `dir` and its labels file (the same name with `images`→`labels`
/// and `idx3`→`idx1`). An uncompressed copy is preferred over the `.gz` (as `gunzip -k` leaves
/// both); two different datasets in one directory are an error rather than a guess.
pub fn find_split(dir: &Path, split: Split) -> Result<Option<SplitFiles>> {
    let names = file_names(dir)?;
    let mut stems: Vec<&str> = names
        .iter()
        .map(|n| stem(n))
        .filter(|s| split.matches(s))
        .collect();
    stems.sort_unstable();
    stems.dedup();
    let stem = match stems[..] {
        [] => return Ok(None),
        [one] => one,
        _ => {
            return Err(Error::input(
                dir,
                format!(
                    "several image files match {}: {}; pass one of them as a file",
                    split.patterns(),
                    stems.join(", ")
                ),
            ))
        }
    };
    let pick = |stem: &str| {
        [stem.to_string(), format!("{stem}.gz")]
            .into_iter()
            .find(|n| names.contains(n))
            .map(|n| dir.join(n))
    };
    let images = pick(stem).ok_or_else(|| Error::Internal(format!("lost {stem} in {dir:?}")))?;
    let labels = pick(&labels_stem(stem));
    Ok(Some(SplitFiles { images, labels }))
}

/// The labels file name matching an images file name (without `.gz`).
pub fn labels_stem(images_stem: &str) -> String {
    images_stem
        .replacen("images", "labels", 1)
        .replacen("idx3", "idx1", 1)
}

/// The sibling labels file of an IDX images file given directly, if one exists.
pub fn sibling_labels(images: &Path) -> Option<PathBuf> {
    let name = images.file_name()?.to_str()?;
    let stem = stem(name);
    if !stem.contains("images") || !stem.contains("idx3") {
        return None;
    }
    let labels = labels_stem(stem);
    let dir = images.parent()?;
    [labels.clone(), format!("{labels}.gz")]
        .into_iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
}

/// Explains why no training images were found in `dir`, listing what was looked for and what is there.
pub fn nothing_found(dir: &Path) -> Error {
    let names = file_names(dir).unwrap_or_default();
    let mut message = format!(
        "no training images found: looked for {}",
        Split::Train.patterns()
    );
    let labels: Vec<&String> = names.iter().filter(|n| n.contains("labels-idx1")).collect();
    if !labels.is_empty() {
        let list: Vec<&str> = labels.iter().map(|s| s.as_str()).collect();
        message.push_str(&format!(
            "; found labels ({}) but no images",
            list.join(", ")
        ));
    }
    let direct: Vec<&str> = names
        .iter()
        .filter(|n| {
            [".npy", ".npy.gz", ".csv", ".csv.gz"]
                .iter()
                .any(|e| n.ends_with(e))
        })
        .map(|s| s.as_str())
        .collect();
    if !direct.is_empty() {
        message.push_str(&format!(
            "; pass one of these files instead: {}",
            direct.join(", ")
        ));
    }
    Error::input(dir, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_names() {
        for name in [
            "train-images-idx3-ubyte",
            "emnist-letters-train-images-idx3-ubyte",
            "train-images.idx3-ubyte",
        ] {
            assert!(Split::Train.matches(name), "{name}");
        }
        for name in [
            "t10k-images-idx3-ubyte",
            "emnist-letters-test-images-idx3-ubyte",
        ] {
            assert!(Split::Test.matches(name), "{name}");
        }
        for name in [
            "train-labels-idx1-ubyte",
            "xtrain-images-idx3-ubyte",
            "t10k-images-idx3-ubyte",
        ] {
            assert!(!Split::Train.matches(name), "{name}");
        }
        assert_eq!(
            labels_stem("emnist-letters-train-images-idx3-ubyte"),
            "emnist-letters-train-labels-idx1-ubyte"
        );
    }
}
