//! Data I/O: dataset readers (IDX, NPY, CSV), atomic writers, NPY/IDX/PNG/JSON outputs.

use std::path::PathBuf;

/// Raw pixel values as stored by the source: 8-bit data stays 8-bit (it is uploaded as such).
#[derive(Clone, Debug, PartialEq)]
pub enum Pixels {
    /// 8-bit values (IDX, Quick Draw NPY, optdigits CSV).
    U8(Vec<u8>),
    /// Float values (float NPY, non-integer CSV).
    F32(Vec<f32>),
}

/// A dataset of `n` observations of dimension `d = height * width`, row-major.
#[derive(Clone, Debug)]
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
