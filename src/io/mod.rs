//! Data I/O: dataset readers (IDX, NPY, CSV), atomic writers, NPY/IDX/PNG/JSON outputs, the LASSO code cache.

use std::path::PathBuf;

pub(crate) mod atomic;
pub(crate) mod caption;
pub(crate) mod code_cache;
pub(crate) mod csv;
pub(crate) mod dataset;
pub(crate) mod discover;
pub(crate) mod disk;
pub(crate) mod fault;
pub(crate) mod hash;
pub(crate) mod idx;
pub(crate) mod input;
pub(crate) mod labelled;
pub(crate) mod npy;
pub(crate) mod npy_header;
pub(crate) mod npy_stream;
pub(crate) mod npy_write;
pub(crate) mod output;
pub(crate) mod output_folder;
pub(crate) mod png;
pub(crate) mod postprocess;
pub(crate) mod regular;
pub(crate) mod shards;
pub(crate) mod staging;

pub use atomic::{
    prepare_output_dir, remove_file_if_present, write_atomic, write_files_atomic, write_json_atomic,
};
pub use code_cache::default_code_cache;
pub use csv::{read_csv, read_csv_with_limit, write_csv, CsvData};
pub use dataset::{geometry, shared_datasets_dir, ARRAY_SOURCE, EMBEDDED_SOURCE};
pub use hash::hash_values;
pub use idx::{
    read_idx_images, read_idx_images_with_limit, read_idx_labels, read_idx_labels_with_limit,
    write_idx_images, write_idx_labels, IdxImages,
};
pub use input::{input_limit, Format, Input, MAX_DECOMPRESSED_BYTES, MAX_INPUT_BYTES_ENV};
pub use npy::{read_npy, read_npy_labels, read_npy_matrix_f32, read_npy_with_limit, NpyArray};
pub use npy_stream::{partial_path, NpyStream};
pub use npy_write::{write_npy_f32, write_npy_f64, write_npy_i64, write_npy_u32, write_npy_u8};
pub use output::Output;
pub use png::{write_png_grid, write_png_grid_captioned};
pub use postprocess::Rescale;
pub use regular::read_regular_file;
pub use shards::{
    FileEntry, Manifest, Part, Shard, ShardFiles, Split, WarmUpManifest, MANIFEST, WARM_UP_MANIFEST,
};
pub use staging::{new_run_id, recover, Recovery, Staging, JOURNAL, STAGING_PREFIX};

/// Raw pixel values as stored by the source: 8-bit data stays 8-bit (it is uploaded as such).
#[derive(Clone, Debug, PartialEq)]
pub enum Pixels {
    /// 8-bit values (IDX, Quick Draw NPY, optdigits CSV).
    U8(Vec<u8>),
    /// Float values (float NPY, non-integer CSV).
    F32(Vec<f32>),
}

/// How a dataset's values become model units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum DataScaling {
    /// Pixels: scaled to [0, pixel-max] by their full scale (255 for 8-bit data, 16 for
    /// optdigits; float data: 1 when within [.., 1], else its maximum; any negative value:
    /// real-valued, full scale 1).
    #[default]
    Auto,
    /// Real values taken as they are, in model units (regression responses, measurements).
    Raw,
}

impl DataScaling {
    /// Whether it is the default, `Auto` (left out of serialized settings).
    pub fn is_auto(&self) -> bool {
        *self == DataScaling::Auto
    }
}

/// A dataset of `n` observations of dimension `d = height * width`, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    /// Where it came from (a path, or "embedded optdigits").
    pub source: PathBuf,
    /// Number of observations.
    pub n: usize,
    /// Dimension of one observation.
    pub d: usize,
    /// Image geometry, kept for pictures (height * width == d).
    pub height: usize,
    /// Image geometry, kept for pictures (height * width == d).
    pub width: usize,
    /// n × d raw values, row-major.
    pub pixels: Pixels,
    /// The raw value of a full-intensity pixel (255 for 8-bit images, 16 for optdigits).
    pub full_scale: f32,
    /// One label per observation, when the source has them.
    pub labels: Option<Vec<u32>>,
}
