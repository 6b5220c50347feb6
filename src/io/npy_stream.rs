//! A float32 NPY file written as samples arrive: rows are appended to a hidden `.partial` file
//! whose fixed-size header is rewritten with the row count at every sync, and which is renamed
//! over the final name when finished. Memory does not grow with the number of rows, an
//! interrupted run leaves a loadable file, and a resumed run truncates back to its checkpoint.
//!
//! Ours: `npyz`'s streaming writer (0.9.1) writes the shape only when finished (a placeholder
//! until then, so an interrupted file does not load) and cannot reopen a file at a given row
//! count; `ndarray-npy` needs the whole shape up front.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::npy_header::NPY_MAGIC;
use crate::{Error, Result};

/// Header size: fixed, so rewriting the count never moves the data (a multiple of 64, as NumPy
/// aligns its own headers).
const HEADER_BYTES: usize = 128;

/// An `.npy` file of shape (rows, tail...) growing one row block at a time.
pub struct NpyStream {
    path: PathBuf,
    partial: PathBuf,
    tail: Vec<usize>,
    row_values: usize,
    rows: usize,
    out: BufWriter<File>,
}

fn output_error(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Output {
        path: path.to_path_buf(),
        source,
    }
}

/// The hidden file a stream writes before it is finished: `.NAME.partial` beside `path`.
pub fn partial_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.partial"))
}

fn header(rows: usize, tail: &[usize]) -> Vec<u8> {
    let dims: Vec<String> = std::iter::once(rows)
        .chain(tail.iter().copied())
        .map(|d| d.to_string())
        .collect();
    let tuple = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {tuple}, }}");
    let mut out = NPY_MAGIC.to_vec();
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&((HEADER_BYTES - 10) as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(HEADER_BYTES - 1, b' ');
    out.push(b'\n');
    out
}

impl NpyStream {
    /// Starts `path` afresh with rows of shape `tail` (the product is the values per row).
    pub fn create(path: &Path, tail: &[usize]) -> Result<Self> {
        Self::open(path, tail, 0, true)
    }

    /// Reopens the `.partial` file of an interrupted run, keeping its first `rows` rows (those of
    /// the checkpoint) and dropping anything written after them.
    pub fn resume(path: &Path, tail: &[usize], rows: usize) -> Result<Self> {
        Self::open(path, tail, rows, false)
    }

    fn open(path: &Path, tail: &[usize], rows: usize, fresh: bool) -> Result<Self> {
        let partial = partial_path(path);
        let err = output_error(path);
        let row_values: usize = tail.iter().product();
        if header(usize::MAX, tail).len() > HEADER_BYTES
            || header(usize::MAX, tail)[HEADER_BYTES - 1] != b'\n'
        {
            return Err(Error::Internal(format!(
                "NPY stream: shape {tail:?} too long for the header"
            )));
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(fresh)
            .truncate(fresh)
            .open(&partial)
            .map_err(&err)?;
        if !fresh {
            let needed = (HEADER_BYTES + rows * row_values * 4) as u64;
            let have = file.metadata().map_err(&err)?.len();
            if have < needed {
                return Err(Error::input(
                    &partial,
                    format!("holds {have} bytes, fewer than the {needed} that the checkpoint's {rows} rows need"),
                ));
            }
            file.set_len(needed).map_err(&err)?;
        }
        file.seek(SeekFrom::Start(0)).map_err(&err)?;
        file.write_all(&header(rows, tail)).map_err(&err)?;
        file.seek(SeekFrom::End(0)).map_err(&err)?;
        Ok(NpyStream {
            path: path.to_path_buf(),
            partial,
            tail: tail.to_vec(),
            row_values,
            rows,
            out: BufWriter::new(file),
        })
    }

    /// Appends rows (a multiple of the row size).
    pub fn append(&mut self, values: &[f32]) -> Result<()> {
        debug_assert_eq!(values.len() % self.row_values.max(1), 0);
        let result = if cfg!(target_endian = "little") {
            self.out.write_all(bytemuck::cast_slice(values))
        } else {
            let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            self.out.write_all(&bytes)
        };
        result.map_err(output_error(&self.path))?;
        self.rows += values.len() / self.row_values.max(1);
        Ok(())
    }

    /// Rows written so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Makes everything written so far durable and the header's count match it.
    pub fn sync(&mut self) -> Result<()> {
        let err = output_error(&self.path);
        self.out.flush().map_err(&err)?;
        let file = self.out.get_mut();
        file.seek(SeekFrom::Start(0)).map_err(&err)?;
        file.write_all(&header(self.rows, &self.tail))
            .map_err(&err)?;
        file.seek(SeekFrom::End(0)).map_err(&err)?;
        file.sync_data().map_err(&err)
    }

    /// Syncs and renames the file to its final name.
    pub fn finish(mut self) -> Result<()> {
        self.sync()?;
        std::fs::rename(&self.partial, &self.path).map_err(output_error(&self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_syncs_resumes_and_finishes_as_valid_npy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npy");
        let mut s = NpyStream::create(&path, &[2, 3]).unwrap();
        s.append(&[1.0; 6]).unwrap();
        s.append(&[2.0; 12]).unwrap();
        s.sync().unwrap();
        s.append(&[9.0; 6]).unwrap(); // written after the "checkpoint": dropped on resume
        drop(s);
        let mut s = NpyStream::resume(&path, &[2, 3], 3).unwrap();
        s.append(&[3.0; 6]).unwrap();
        s.finish().unwrap();
        let array = crate::io::read_npy(&path).unwrap();
        assert_eq!(array.shape, vec![4, 2, 3]);
        let crate::io::Pixels::F32(v) = array.data else {
            panic!("float data")
        };
        assert_eq!(&v[..6], &[1.0; 6]);
        assert_eq!(&v[18..], &[3.0; 6]);
        assert!(!partial_path(&path).exists());
    }
}
