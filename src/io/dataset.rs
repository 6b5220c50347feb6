//! Loading a [`Dataset`]: a directory of IDX files, one IDX/NPY/CSV file, or the embedded optdigits.

use std::path::{Path, PathBuf};

use super::csv::{parse_csv, CsvData};
use super::discover::{find_split, nothing_found, sibling_labels, Split};
use super::idx::{read_idx_images, read_idx_labels};
use super::input::{input_limit, sniff_file, Format, Input, MAX_DECOMPRESSED_BYTES};
use super::npy::{read_npy, read_npy_labels};
use super::{Dataset, Pixels};
use crate::{Error, Result};

/// The optdigits CSV compiled into the binary: 1797 images of 8×8, values 0..=16, labels 0..=9.
const EMBEDDED_CSV: &[u8] = include_bytes!("../../assets/digits.csv.gz");

/// The `source` of the embedded dataset.
pub const EMBEDDED_SOURCE: &str = "embedded optdigits (assets/digits.csv.gz)";

/// The name data given in memory (the Python package's arrays) goes by in messages and reports.
pub const ARRAY_SOURCE: &str = "<numpy array>";

/// The shared datasets folder: `$RMLD_DATASETS`, else `<crate root>/../shared/datasets`; `None`
/// when that is not a directory (tests then skip real-data checks).
pub fn shared_datasets_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("RMLD_DATASETS") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/datasets"),
    };
    dir.is_dir().then_some(dir)
}

/// Picture geometry for `d` values without one: square when `d` is a perfect square, else 1 × d.
pub fn geometry(d: usize) -> (usize, usize) {
    let side = d.isqrt();
    if side * side == d {
        (side, side)
    } else {
        (1, d)
    }
}

/// Full scale of float data: 1.0 for data already in [.., 1], else its maximum.
fn float_full_scale(values: &[f32]) -> f32 {
    let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if max <= 1.0 {
        1.0
    } else {
        max
    }
}

/// Full scale of float NPY data: as `float_full_scale`, except that values below zero mark
/// real-valued data (a regression's responses, `rmld sample --dictionary X.npy --data y.npy`),
/// taken as they are: full scale 1, so `--pixel-max 1` leaves them unscaled.
fn npy_float_full_scale(values: &[f32]) -> f32 {
    if values.iter().any(|&v| v < 0.0) {
        1.0
    } else {
        float_full_scale(values)
    }
}

/// Refuses float data so large that a sum of its rows (a minibatch's or a class's mean, taken
/// before the values are scaled to the model's units) could exceed f32's largest value: the
/// chains would see infinities and reject every proposal.
fn refuse_overflowing_sums(source: &Path, n: usize, pixels: &Pixels) -> Result<()> {
    let Pixels::F32(values) = pixels else {
        return Ok(());
    };
    let largest = values.iter().fold(0f32, |m, v| m.max(v.abs()));
    if (largest as f64) * (n as f64) <= f32::MAX as f64 {
        return Ok(());
    }
    Err(Error::input(
        source,
        format!(
            "values reach {largest:e}: a sum of its {n} rows could exceed f32's largest value \
             ({:e}), so the means taken before scaling would be infinite; divide the data by a \
             constant first (float pixels are scaled by their maximum, so that changes nothing \
             else)",
            f32::MAX
        ),
    ))
}

impl Dataset {
    /// Loads a dataset. A directory must hold IDX training images (`train-images-idx3-ubyte[.gz]`
    /// or `*-train-images-idx3-ubyte[.gz]`) and optionally the matching labels. A file is sniffed
    /// by content (gzip is looked into): IDX images (with a sibling `…labels-idx1…` file if there
    /// is one), NPY of shape (N, d) or (N, h, w), or else CSV (pixels then a label per row).
    /// A directory without IDX files but with `.npy` files (Quick Draw's one file per category)
    /// loads them all, labelled by the file's position in name order.
    pub fn load(path: &Path) -> Result<Dataset> {
        if path.is_dir() {
            return match find_split(path, Split::Train)? {
                Some(files) => Self::from_idx(&files.images, files.labels.as_deref()),
                None => Self::from_npy_classes(path),
            };
        }
        match sniff_file(path, input_limit()?)? {
            Format::Idx => Self::from_idx(path, sibling_labels(path).as_deref()),
            Format::Npy => Self::from_npy(path),
            Format::Text => {
                let data = parse_csv(Input::open(path, input_limit()?)?)?;
                Self::from_csv(path.to_path_buf(), data)
            }
        }
    }

    /// Loads the test split of a directory dataset (`t10k-images-idx3-ubyte[.gz]` or
    /// `*-test-images-idx3-ubyte[.gz]`, with labels if present); `None` when there is none.
    pub fn load_test_split(dir: &Path) -> Result<Option<Dataset>> {
        if !dir.is_dir() {
            return Ok(None);
        }
        match find_split(dir, Split::Test)? {
            Some(files) => Self::from_idx(&files.images, files.labels.as_deref()).map(Some),
            None => Ok(None),
        }
    }

    /// The embedded optdigits dataset (1797 × 64, full scale 16, labels 0..=9).
    pub fn embedded() -> Dataset {
        let name = Path::new(EMBEDDED_SOURCE);
        let parsed = Input::from_static(name, EMBEDDED_CSV, MAX_DECOMPRESSED_BYTES)
            .and_then(parse_csv)
            .and_then(|data| Self::from_csv(name.to_path_buf(), data));
        // The asset is fixed at build time and covered by tests: failure is a build defect.
        parsed.expect("the embedded optdigits CSV is valid")
    }

    /// [`Dataset::load`] for `Some(path)`, the embedded optdigits for `None`.
    pub fn load_or_embedded(path: Option<&Path>) -> Result<Dataset> {
        path.map_or_else(|| Ok(Self::embedded()), Self::load)
    }

    /// Replaces the labels with those of `path`: IDX labels, a 1-D integer NPY, or text with one
    /// integer per line. The count must equal `n`.
    pub fn with_labels_file(mut self, path: &Path) -> Result<Dataset> {
        let labels = match sniff_file(path, input_limit()?)? {
            Format::Idx => read_idx_labels(path)?.into_iter().map(u32::from).collect(),
            Format::Npy => read_npy_labels(path)?,
            Format::Text => read_text_labels(path)?,
        };
        if labels.len() != self.n {
            return Err(Error::input(
                path,
                format!(
                    "holds {} labels but the dataset {} has {} observations",
                    labels.len(),
                    self.source.display(),
                    self.n
                ),
            ));
        }
        self.labels = Some(labels);
        Ok(self)
    }

    /// The observations at `indices` (repeats allowed), in that order.
    ///
    /// # Panics
    /// If an index is `>= n`; use [`Dataset::try_subset`] for indices that come from the user.
    pub fn subset(&self, indices: &[usize]) -> Dataset {
        match self.try_subset(indices) {
            Ok(d) => d,
            Err(e) => panic!("{e}"),
        }
    }

    /// [`Dataset::subset`] that reports an out-of-range index as a usage error.
    pub fn try_subset(&self, indices: &[usize]) -> Result<Dataset> {
        if let Some(&bad) = indices.iter().find(|&&i| i >= self.n) {
            let msg = format!("index {bad} is out of range for {} observations", self.n);
            return Err(Error::usage("indices", msg));
        }
        let d = self.d;
        let pixels = match &self.pixels {
            Pixels::U8(v) => Pixels::U8(
                indices
                    .iter()
                    .flat_map(|&i| &v[i * d..(i + 1) * d])
                    .copied()
                    .collect(),
            ),
            Pixels::F32(v) => Pixels::F32(
                indices
                    .iter()
                    .flat_map(|&i| &v[i * d..(i + 1) * d])
                    .copied()
                    .collect(),
            ),
        };
        let labels = self
            .labels
            .as_ref()
            .map(|l| indices.iter().map(|&i| l[i]).collect());
        Ok(Dataset {
            n: indices.len(),
            pixels,
            labels,
            source: self.source.clone(),
            ..*self
        })
    }

    /// The number of distinct label values, when there are labels.
    pub fn label_count(&self) -> Option<usize> {
        let labels = self.labels.as_ref()?;
        let mut distinct = labels.clone();
        distinct.sort_unstable();
        distinct.dedup();
        Some(distinct.len())
    }

    fn from_idx(images: &Path, labels: Option<&Path>) -> Result<Dataset> {
        let idx = read_idx_images(images)?;
        let labels = match labels {
            None => None,
            Some(path) => {
                let labels = read_idx_labels(path)?;
                if labels.len() != idx.n {
                    return Err(Error::input(
                        path,
                        format!(
                            "holds {} labels but {} holds {} images (label/image count mismatch)",
                            labels.len(),
                            images.display(),
                            idx.n
                        ),
                    ));
                }
                Some(labels.into_iter().map(u32::from).collect())
            }
        };
        Ok(Dataset {
            source: images.to_path_buf(),
            n: idx.n,
            d: idx.height * idx.width,
            height: idx.height,
            width: idx.width,
            pixels: Pixels::U8(idx.pixels),
            full_scale: 255.0,
            labels,
        })
    }

    /// One class per `.npy` file of `dir` (name order), all of one image shape and pixel type.
    fn from_npy_classes(dir: &Path) -> Result<Dataset> {
        let names: Vec<String> = super::discover::file_names(dir)?
            .into_iter()
            .filter(|n| n.ends_with(".npy"))
            .collect();
        if names.is_empty() {
            return Err(nothing_found(dir));
        }
        let mut parts = Vec::with_capacity(names.len());
        for name in &names {
            parts.push(Self::from_npy(&dir.join(name))?);
        }
        let first = &parts[0];
        let (height, width, full_scale) = (first.height, first.width, first.full_scale);
        let mut labels = Vec::new();
        let mut pixels = match first.pixels {
            Pixels::U8(_) => Pixels::U8(Vec::new()),
            Pixels::F32(_) => Pixels::F32(Vec::new()),
        };
        for (class, (part, name)) in parts.iter().zip(&names).enumerate() {
            let same_kind = matches!(
                (&pixels, &part.pixels),
                (Pixels::U8(_), Pixels::U8(_)) | (Pixels::F32(_), Pixels::F32(_))
            );
            if (part.height, part.width) != (height, width) || !same_kind {
                return Err(Error::input(
                    dir.join(name),
                    format!(
                        "holds {}×{} images of another type or shape than {} ({height}×{width})",
                        part.height, part.width, names[0]
                    ),
                ));
            }
            match (&mut pixels, &part.pixels) {
                (Pixels::U8(all), Pixels::U8(v)) => all.extend_from_slice(v),
                (Pixels::F32(all), Pixels::F32(v)) => all.extend_from_slice(v),
                _ => {}
            }
            labels.extend(std::iter::repeat_n(class as u32, part.n));
        }
        let full_scale = parts
            .iter()
            .map(|p| p.full_scale)
            .fold(full_scale, f32::max);
        refuse_overflowing_sums(dir, labels.len(), &pixels)?;
        Ok(Dataset {
            source: dir.to_path_buf(),
            n: labels.len(),
            d: height * width,
            height,
            width,
            pixels,
            full_scale,
            labels: Some(labels),
        })
    }

    fn from_npy(path: &Path) -> Result<Dataset> {
        let array = read_npy(path)?;
        Self::from_array(path, &array.shape, array.data, None)
    }

    /// A dataset from values already in memory (NPY files, the Python package's arrays): shape
    /// (N, d) or (N, h, w), or one channel as Keras or PyTorch keep it, (N, h, w, 1) or
    /// (N, 1, h, w) (the same values in the same order), 8-bit or float values (a full-intensity pixel: 255 for 8-bit, 1 for
    /// floats within [.., 1], else their maximum), and optionally one label per observation.
    /// `source` names the data in messages and reports.
    pub fn from_array(
        source: &Path,
        shape: &[usize],
        pixels: Pixels,
        labels: Option<Vec<u32>>,
    ) -> Result<Dataset> {
        let (n, height, width) = match shape[..] {
            [n, d] => {
                let (h, w) = geometry(d);
                (n, h, w)
            }
            [n, h, w] | [n, h, w, 1] | [n, 1, h, w] => (n, h, w),
            _ => {
                let msg = format!(
                    "expected shape (N, d) or (N, h, w), or one channel (N, h, w, 1) or (N, 1, \
                     h, w), found {shape:?}"
                );
                return Err(Error::input(source, msg));
            }
        };
        if n == 0 || height == 0 || width == 0 {
            let msg = format!("the array holds no data (shape {shape:?})");
            return Err(Error::input(source, msg));
        }
        let values = match &pixels {
            Pixels::U8(v) => v.len(),
            Pixels::F32(v) => v.len(),
        };
        let needed = height.checked_mul(width).and_then(|d| d.checked_mul(n));
        if needed != Some(values) {
            let msg = format!("holds {values} values, which its shape {shape:?} does not fit");
            return Err(Error::input(source, msg));
        }
        if let Some(labels) = &labels {
            if labels.len() != n {
                let msg = format!("has {} labels for {n} observations", labels.len());
                return Err(Error::input(source, msg));
            }
        }
        refuse_overflowing_sums(source, n, &pixels)?;
        let full_scale = match &pixels {
            Pixels::U8(_) => 255.0,
            Pixels::F32(v) => npy_float_full_scale(v),
        };
        Ok(Dataset {
            source: source.to_path_buf(),
            n,
            d: height * width,
            height,
            width,
            pixels,
            full_scale,
            labels,
        })
    }

    fn from_csv(source: PathBuf, data: CsvData) -> Result<Dataset> {
        let CsvData {
            n,
            d,
            pixels,
            labels,
            max_value,
        } = data;
        refuse_overflowing_sums(&source, n, &pixels)?;
        let full_scale = match &pixels {
            Pixels::U8(_) if max_value <= 16.0 => 16.0,
            Pixels::U8(_) => 255.0,
            Pixels::F32(v) => float_full_scale(v),
        };
        let (height, width) = geometry(d);
        Ok(Dataset {
            source,
            n,
            d,
            height,
            width,
            pixels,
            full_scale,
            labels: Some(labels),
        })
    }
}

/// Labels as text: one non-negative integer per non-blank line.
fn read_text_labels(path: &Path) -> Result<Vec<u32>> {
    let mut input = Input::open(path, input_limit()?)?;
    let bytes = input.read_rest()?;
    let text = String::from_utf8_lossy(&bytes);
    let mut labels = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let label = line.trim().parse::<u32>().map_err(|_| {
            let shown: String = line.chars().take(40).collect();
            input.error(format!(
                "line {}: expected a non-negative integer label, found {shown:?}",
                i + 1
            ))
        })?;
        labels.push(label);
    }
    Ok(labels)
}
