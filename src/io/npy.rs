//! NumPy `.npy` readers (v1, v2, v3; raw or gzip'd): strict header checks before any allocation.

use std::path::Path;

use super::input::{input_limit, Input};
use super::npy_header::{parse_header, NpyHeader, NPY_MAGIC};
use super::Pixels;
use crate::{Error, Result};

/// Headers longer than this are refused (NumPy itself refuses more than 10,000 bytes by default).
const MAX_HEADER_LEN: usize = 1 << 20;

/// A numeric array read from an `.npy` file: uint8 stays uint8, float32/float64 become f32.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyArray {
    /// The array's shape (C order).
    pub shape: Vec<usize>,
    /// The values, flattened in C order.
    pub data: Pixels,
}

/// The element types the readers understand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dtype {
    U8,
    F32,
    F64,
    /// Little-endian integer of `size` bytes (labels only).
    Int {
        size: usize,
        signed: bool,
    },
}

impl Dtype {
    fn parse(descr: &str) -> Option<Dtype> {
        Some(match descr {
            "|u1" | "<u1" | ">u1" | "u1" => Dtype::U8,
            "<f4" => Dtype::F32,
            "<f8" => Dtype::F64,
            "|i1" | "<i1" | "i1" => Dtype::Int {
                size: 1,
                signed: true,
            },
            "<u2" => Dtype::Int {
                size: 2,
                signed: false,
            },
            "<i2" => Dtype::Int {
                size: 2,
                signed: true,
            },
            "<u4" => Dtype::Int {
                size: 4,
                signed: false,
            },
            "<i4" => Dtype::Int {
                size: 4,
                signed: true,
            },
            "<u8" => Dtype::Int {
                size: 8,
                signed: false,
            },
            "<i8" => Dtype::Int {
                size: 8,
                signed: true,
            },
            _ => return None,
        })
    }

    fn size(self) -> usize {
        match self {
            Dtype::U8 => 1,
            Dtype::F32 => 4,
            Dtype::F64 => 8,
            Dtype::Int { size, .. } => size,
        }
    }
}

/// Shape as Python prints it, for messages.
pub(crate) fn shape_text(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Reads and validates the preamble and returns the header, the parsed dtype, the shape and the
/// raw C-order data bytes (read with a bound derived from the shape, after checking the shape).
fn read_raw(path: &Path, limit: u64) -> Result<(NpyHeader, Dtype, Vec<usize>, Vec<u8>)> {
    let mut input = Input::open(path, limit)?;
    let mut magic = [0u8; 8];
    let got = input.read_up_to(&mut magic)?;
    if got < 6 || &magic[..6] != NPY_MAGIC {
        let found = magic[..got.min(6)].escape_ascii().to_string();
        return Err(input.error(format!(
            "bad NPY magic: expected \"\\x93NUMPY\", found \"{found}\" (not a .npy file)"
        )));
    }
    if got < 8 {
        return Err(input.error("truncated: the file ends inside the NPY version bytes"));
    }
    let len_bytes = match magic[6] {
        1 => 2,
        2 | 3 => 4,
        v => return Err(input.error(format!("unsupported NPY format version {v}.{}", magic[7]))),
    };
    let mut raw_len = [0u8; 4];
    if input.read_up_to(&mut raw_len[..len_bytes])? < len_bytes {
        return Err(input.error("truncated: the file ends inside the NPY header length"));
    }
    let header_len = u32::from_le_bytes(raw_len) as usize;
    if header_len > MAX_HEADER_LEN {
        return Err(input.error(format!(
            "NPY header length {header_len} is implausibly large"
        )));
    }
    let mut text = vec![0u8; header_len];
    let got = input.read_up_to(&mut text)?;
    if got < header_len {
        return Err(input.error(format!(
            "truncated: the file ends inside the NPY header ({got} of {header_len} bytes)"
        )));
    }
    let header = parse_header(&text).map_err(|e| {
        let shown: String = String::from_utf8_lossy(&text).chars().take(200).collect();
        input.error(format!(
            "bad NPY header dict: {e} in {:?}",
            shown.trim_end()
        ))
    })?;
    let dtype = Dtype::parse(&header.descr).ok_or_else(|| {
        input.error(format!(
            "unsupported dtype '{}' (supported: '|u1', '<f4', '<f8'; integer labels also '<i8' etc.)",
            header.descr
        ))
    })?;
    let shape: Vec<usize> = header
        .shape
        .iter()
        .map(|&d| usize::try_from(d).unwrap_or(usize::MAX))
        .collect();
    if header.fortran_order && shape.iter().filter(|&&d| d > 1).count() > 1 {
        return Err(input.error(format!(
            "fortran_order True (column-major) arrays of shape {} are not supported: save a C-order \
             array (np.ascontiguousarray)",
            shape_text(&shape)
        )));
    }
    let bytes = shape
        .iter()
        .try_fold(dtype.size() as u64, |acc, &d| acc.checked_mul(d as u64));
    let bytes =
        bytes.ok_or_else(|| input.error(format!("shape {} is absurd", shape_text(&shape))))?;
    let what = format!(
        "an array of shape {} and dtype '{}'",
        shape_text(&shape),
        header.descr
    );
    let data = input.read_payload(bytes, &what)?;
    Ok((header, dtype, shape, data))
}

/// Decodes f32 values from little-endian bytes, rejecting NaN and infinities.
fn floats(path: &Path, dtype: Dtype, bytes: &[u8]) -> Result<Vec<f32>> {
    let values: Vec<f32> = match dtype {
        Dtype::F64 => bytes
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) as f32)
            .collect(),
        _ => bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    };
    if let Some(i) = values.iter().position(|v| !v.is_finite()) {
        let kind = if values[i].is_nan() {
            "NaN"
        } else {
            "infinite"
        };
        return Err(Error::input(
            path,
            format!("value at flat index {i} is {kind}"),
        ));
    }
    Ok(values)
}

/// Reads a uint8, float32 or float64 `.npy` (or `.npy.gz`) of any shape, within the input limit.
pub fn read_npy(path: &Path) -> Result<NpyArray> {
    read_npy_with_limit(path, input_limit()?)
}

/// [`read_npy`] with an explicit decompressed-size limit.
pub fn read_npy_with_limit(path: &Path, limit: u64) -> Result<NpyArray> {
    let (header, dtype, shape, bytes) = read_raw(path, limit)?;
    let data = match dtype {
        Dtype::U8 => Pixels::U8(bytes),
        Dtype::F32 | Dtype::F64 => Pixels::F32(floats(path, dtype, &bytes)?),
        Dtype::Int { .. } => {
            return Err(Error::input(
                path,
                format!(
                    "unsupported dtype '{}' for image data (supported: '|u1', '<f4', '<f8')",
                    header.descr
                ),
            ))
        }
    };
    Ok(NpyArray { shape, data })
}

/// Reads a 2-D float matrix (e.g. a d × p dictionary); uint8 data is converted to f32 as is.
pub fn read_npy_matrix_f32(path: &Path) -> Result<(Vec<usize>, Vec<f32>)> {
    let array = read_npy(path)?;
    if array.shape.len() != 2 {
        return Err(Error::input(
            path,
            format!(
                "expected a 2-D array, found shape {}",
                shape_text(&array.shape)
            ),
        ));
    }
    let data = match array.data {
        Pixels::F32(v) => v,
        Pixels::U8(v) => v.into_iter().map(f32::from).collect(),
    };
    Ok((array.shape, data))
}

/// Reads integer labels from a 1-D (or N × 1) `.npy` of any integer dtype; values must fit in u32.
pub fn read_npy_labels(path: &Path) -> Result<Vec<u32>> {
    let (header, dtype, shape, bytes) = read_raw(path, input_limit()?)?;
    if !matches!(shape[..], [_] | [_, 1]) {
        return Err(Error::input(
            path,
            format!(
                "labels must be a 1-D array, found shape {}",
                shape_text(&shape)
            ),
        ));
    }
    let (size, signed) = match dtype {
        Dtype::U8 => (1, false),
        Dtype::Int { size, signed } => (size, signed),
        _ => {
            let msg = format!(
                "labels must have an integer dtype, found '{}'",
                header.descr
            );
            return Err(Error::input(path, msg));
        }
    };
    let mut labels = Vec::with_capacity(bytes.len() / size);
    for (i, chunk) in bytes.chunks_exact(size).enumerate() {
        let mut wide = [0u8; 8];
        wide[..size].copy_from_slice(chunk);
        let negative = signed && chunk[size - 1] & 0x80 != 0;
        let value = u64::from_le_bytes(wide);
        match u32::try_from(value) {
            Ok(v) if !negative => labels.push(v),
            _ => {
                let msg = format!("label at index {i} is negative or does not fit in 32 bits");
                return Err(Error::input(path, msg));
            }
        }
    }
    Ok(labels)
}
