//! IDX files (MNIST, Fashion-MNIST, EMNIST): strict readers, raw or gzip'd, and atomic writers.

use std::io::Write;
use std::path::Path;

use flate2::write::GzEncoder;
use flate2::Compression;

use super::atomic::write_atomic;
use super::input::{gz_name, input_limit, Input};
use crate::{Error, Result};

/// Magic number of an IDX images file: unsigned bytes, 3 dimensions (N, height, width).
pub const IDX_IMAGES_MAGIC: u32 = 0x0000_0803;
/// Magic number of an IDX labels file: unsigned bytes, 1 dimension (N).
pub const IDX_LABELS_MAGIC: u32 = 0x0000_0801;

/// The content of an IDX images file.
#[derive(Clone, Debug, PartialEq)]
pub struct IdxImages {
    /// Number of images.
    pub n: usize,
    /// Rows per image.
    pub height: usize,
    /// Columns per image.
    pub width: usize,
    /// n × height × width bytes, row-major.
    pub pixels: Vec<u8>,
}

/// Reads an IDX images file (magic 0x00000803), within the global input limit.
pub fn read_idx_images(path: &Path) -> Result<IdxImages> {
    read_idx_images_with_limit(path, input_limit()?)
}

/// Reads an IDX images file, decompressing at most `limit` bytes.
pub fn read_idx_images_with_limit(path: &Path, limit: u64) -> Result<IdxImages> {
    let (dims, pixels) = read_idx(path, 3, limit)?;
    match dims[..] {
        [n, height, width] => Ok(IdxImages {
            n,
            height,
            width,
            pixels,
        }),
        _ => Err(Error::Internal(format!(
            "IDX reader returned dims {dims:?} for 3-D data"
        ))),
    }
}

/// Reads an IDX labels file (magic 0x00000801), within the global input limit.
pub fn read_idx_labels(path: &Path) -> Result<Vec<u8>> {
    read_idx_labels_with_limit(path, input_limit()?)
}

/// Reads an IDX labels file, decompressing at most `limit` bytes.
pub fn read_idx_labels_with_limit(path: &Path, limit: u64) -> Result<Vec<u8>> {
    Ok(read_idx(path, 1, limit)?.1)
}

/// Name of an IDX element type byte, for messages.
fn type_name(code: u8) -> &'static str {
    match code {
        0x08 => "unsigned byte",
        0x09 => "signed byte",
        0x0B => "short",
        0x0C => "int",
        0x0D => "float",
        0x0E => "double",
        _ => "unknown",
    }
}

/// Reads an unsigned-byte IDX file with `ndim` dimensions: returns the dims and the data.
fn read_idx(path: &Path, ndim: u8, limit: u64) -> Result<(Vec<usize>, Vec<u8>)> {
    let mut input = Input::open(path, limit)?;
    let expected = 0x0800 | u32::from(ndim);
    let kind = if ndim == 3 {
        "IDX images"
    } else {
        "IDX labels"
    };
    let mut magic = [0u8; 4];
    let got = input.read_up_to(&mut magic)?;
    if got == 0 {
        return Err(input.error(format!("empty file (expected {kind})")));
    }
    if got < 4 {
        return Err(input.error(format!(
            "truncated: the file ends after {got} bytes, inside the 4-byte IDX magic number"
        )));
    }
    let found = u32::from_be_bytes(magic);
    if magic[0] != 0 || magic[1] != 0 {
        return Err(input.error(format!(
            "wrong magic number 0x{found:08x}, expected 0x{expected:08x} ({kind}): not an IDX file"
        )));
    }
    if magic[2] != 0x08 {
        return Err(input.error(format!(
            "unsupported IDX data type 0x{:02x} ({}), only 0x08 (unsigned byte) is supported",
            magic[2],
            type_name(magic[2])
        )));
    }
    if magic[3] != ndim {
        let guess = match magic[3] {
            1 => " (this looks like a labels file)",
            3 => " (this looks like an images file)",
            _ => "",
        };
        return Err(input.error(format!(
            "wrong magic number 0x{found:08x}, expected 0x{expected:08x} ({kind}, {ndim} \
             dimension(s)): the file has {} dimension(s){guess}",
            magic[3]
        )));
    }
    let header_len = 4 + 4 * usize::from(ndim);
    let mut raw_dims = vec![0u8; 4 * usize::from(ndim)];
    let got = input.read_up_to(&mut raw_dims)?;
    if got < raw_dims.len() {
        return Err(input.error(format!(
            "truncated: the file ends inside the header ({} of {header_len} bytes)",
            4 + got
        )));
    }
    let dims: Vec<u32> = raw_dims
        .chunks_exact(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if let Some(axis) = dims.iter().position(|&d| d == 0) {
        return Err(input.error(format!("dimension {axis} is zero in the header {dims:?}")));
    }
    // Three u32 factors can overflow u64; such a header is a lie anyway.
    let len = dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(u64::from(d)));
    let len = len.ok_or_else(|| input.error(format!("header dimensions {dims:?} are absurd")))?;
    let what = match dims[..] {
        [n, h, w] => format!("{n} images of {h}×{w}"),
        _ => format!("{len} labels"),
    };
    let data = input.read_payload(len, &what)?;
    let dims = dims.iter().map(|&d| d as usize).collect();
    Ok((dims, data))
}

/// Writes the IDX header and data, gzip'd when `path` ends in `.gz`, atomically.
fn write_idx(path: &Path, magic: u32, dims: &[usize], data: &[u8]) -> Result<()> {
    let mut header = magic.to_be_bytes().to_vec();
    for &d in dims {
        let d = u32::try_from(d)
            .ok()
            .filter(|&d| d > 0)
            .ok_or_else(|| Error::Internal(format!("IDX dimension {d} out of range 1..2^32")))?;
        header.extend_from_slice(&d.to_be_bytes());
    }
    if dims.iter().product::<usize>() != data.len() {
        return Err(Error::Internal(format!(
            "IDX writer: dims {dims:?} do not match {} data bytes",
            data.len()
        )));
    }
    write_atomic(path, |w| {
        if gz_name(path) {
            let mut gz = GzEncoder::new(w, Compression::default());
            gz.write_all(&header)?;
            gz.write_all(data)?;
            gz.finish().map(|_| ())
        } else {
            w.write_all(&header)?;
            w.write_all(data)
        }
    })
}

/// Writes `n` images of `height × width` bytes as an IDX images file (gzip'd if the name ends in `.gz`).
pub fn write_idx_images(
    path: &Path,
    n: usize,
    height: usize,
    width: usize,
    pixels: &[u8],
) -> Result<()> {
    write_idx(path, IDX_IMAGES_MAGIC, &[n, height, width], pixels)
}

/// Writes labels as an IDX labels file (gzip'd if the name ends in `.gz`).
pub fn write_idx_labels(path: &Path, labels: &[u8]) -> Result<()> {
    write_idx(path, IDX_LABELS_MAGIC, &[labels.len()], labels)
}
