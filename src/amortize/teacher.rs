//! The teacher run's generated codes read back per class, for the amortised sampler to fit.

use std::path::{Path, PathBuf};

use super::{CodeModel, ModelShape};
use crate::io::{self, hash_values};
use crate::{Error, Result};

/// The most bytes of the teacher's stamp or report read.
pub const MAX_JSON_BYTES: u64 = 64 << 20;

/// What the fitting learns from: the teacher's generated codes per class, and the model's shape.
pub struct TeacherSamples {
    /// The model's shape: image size, code length, the dictionary's hash, the classes.
    pub shape: ModelShape,
    /// Each class's generated codes, row after row, in the order of `shape.classes`.
    pub per_class: Vec<Vec<f32>>,
    /// Generated codes in all.
    pub samples: usize,
}

/// Reads the teacher's generated codes, labels, dictionary and report from its folder.
pub fn read_teacher(tdir: &Path) -> Result<TeacherSamples> {
    let codes_path = tdir.join("generated-codes.npy");
    let (shape, codes) = io::read_npy_matrix_f32(&codes_path)?;
    let labels = io::read_npy_labels(&tdir.join("generated-labels.npy"))?;
    let (dshape, dict) = io::read_npy_matrix_f32(&tdir.join("dictionary.npy"))?;
    let report: serde_json::Value = serde_json::from_slice(&io::read_regular_file(
        &tdir.join("report.json"),
        "teacher's report",
        MAX_JSON_BYTES,
    )?)
    .map_err(|e| Error::input(tdir.join("report.json"), e.to_string()))?;
    let p = shape[1];
    if labels.len() != shape[0] || dshape[1] != p {
        return Err(Error::input(
            &codes_path,
            "the teacher's codes, labels and dictionary disagree in size",
        ));
    }
    let dim = |k: &str| report["dataset"][k].as_u64().unwrap_or(0) as usize;
    let mut classes: Vec<u32> = labels.clone();
    classes.sort_unstable();
    classes.dedup();
    let per_class: Vec<Vec<f32>> = classes
        .iter()
        .map(|&c| {
            labels
                .iter()
                .zip(codes.chunks_exact(p))
                .filter(|(&l, _)| l == c)
                .flat_map(|(_, row)| row.iter().copied())
                .collect()
        })
        .collect();
    let shape = ModelShape {
        height: dim("height"),
        width: dim("width"),
        p,
        dictionary_hash: hash_values(
            &[dshape[0] as u64, dshape[1] as u64],
            bytemuck::cast_slice(&dict),
        ),
        classes,
    };
    Ok(TeacherSamples {
        shape,
        per_class,
        samples: labels.len(),
    })
}

/// The teacher's folder for model file `model`: `MODEL.teacher` beside it.
pub fn teacher_dir(model: &Path) -> PathBuf {
    with_suffix(model, ".teacher")
}

/// The checkpoint of a training into `model`: `MODEL.partial` beside it.
pub fn partial_path(model: &Path) -> PathBuf {
    with_suffix(model, ".partial")
}

pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Reads and checks a model file (magic, version, length, checksum, sizes).
pub fn load_model(path: &Path) -> Result<CodeModel> {
    CodeModel::load(path)
}

/// Writes `model` to `path` atomically.
pub fn save_model(path: &Path, model: &CodeModel) -> Result<()> {
    model.save(path)
}
