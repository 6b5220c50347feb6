//! A float32 NPY file written as samples arrive: rows are appended to a hidden `.partial` file
//! whose fixed-size header is rewritten with the row count at every sync, and which is renamed
//! over the final name when finished. Memory does not grow with the number of rows, an
//! interrupted run leaves a loadable file, and a resumed run truncates back to its checkpoint.
//!
//! Ours: `npyz`'s streaming writer (0.9.1) writes the shape only when finished (a placeholder
//! until then, so an interrupted file does not load) and cannot reopen a file at a given row
//! count; `ndarray-npy` needs the whole shape up front.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::Xxh3;

use super::fault::Budgeted;
use super::npy_header::{parse_header, NPY_MAGIC};
use crate::{Error, Result};

/// Header size: fixed, so rewriting the count never moves the data (a multiple of 64, as NumPy
/// aligns its own headers).
const HEADER_BYTES: usize = 128;

/// Bytes read at a time when a stream is checked or copied on resume.
const CHUNK: usize = 1 << 20;

/// An `.npy` file of shape (rows, tail...) growing one row block at a time, with an xxh3-64 of
/// its data so far (what a checkpoint records, and a resume checks, of the rows before it).
pub struct NpyStream {
    path: PathBuf,
    partial: PathBuf,
    tail: Vec<usize>,
    row_values: usize,
    rows: usize,
    hash: Box<Xxh3>, // boxed: its state is 600 bytes, the rest of the stream few
    out: BufWriter<Budgeted<File>>,
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

/// Where an earlier run's stream comes from on resume.
enum Source<'a> {
    /// Its partial file at this stream's own path, kept in place and cut back.
    InPlace,
    /// A finished file elsewhere, whose first rows are copied.
    Copy(&'a Path),
}

impl NpyStream {
    /// Starts `path` afresh with rows of shape `tail` (the product is the values per row).
    pub fn create(path: &Path, tail: &[usize]) -> Result<Self> {
        let mut stream = Self::open(path, tail, true)?;
        stream.write_header()?;
        Ok(stream)
    }

    /// Reopens the stream a stopped run left at `path` (its partial file; a finished file is
    /// moved back to it), keeping its first `rows` rows, which must hash to `xxh3` (what the
    /// run's checkpoint recorded), and dropping anything written after them.
    pub fn resume(path: &Path, tail: &[usize], rows: usize, xxh3: u64) -> Result<Self> {
        let partial = partial_path(path);
        if partial.symlink_metadata().is_err() && path.symlink_metadata().is_ok() {
            std::fs::rename(path, &partial).map_err(output_error(path))?;
        }
        Self::continued(path, tail, (rows, xxh3), Source::InPlace)
    }

    /// Starts `path` afresh with the first `rows` rows of the finished stream `source` (an
    /// earlier run's published file), which must hash to `xxh3`; `source` is only read.
    pub fn resume_from(
        source: &Path,
        path: &Path,
        tail: &[usize],
        rows: usize,
        xxh3: u64,
    ) -> Result<Self> {
        Self::continued(path, tail, (rows, xxh3), Source::Copy(source))
    }

    fn continued(
        path: &Path,
        tail: &[usize],
        (rows, xxh3): (usize, u64),
        source: Source,
    ) -> Result<Self> {
        let from = match source {
            Source::InPlace => partial_path(path),
            Source::Copy(source) => source.to_path_buf(),
        };
        let mut input = open_earlier(&from, tail, rows)?;
        let mut stream = Self::open(path, tail, matches!(source, Source::Copy(_)))?;
        let mut left = rows * stream.row_values * 4;
        let mut buffer = vec![0u8; CHUNK.min(left.max(1))];
        if matches!(source, Source::Copy(_)) {
            stream
                .out
                .write_all(&header(0, tail))
                .map_err(output_error(path))?;
        }
        while left > 0 {
            let n = left.min(buffer.len());
            input
                .read_exact(&mut buffer[..n])
                .map_err(|e| Error::input(&from, format!("cannot read it: {e}")))?;
            stream.hash.update(&buffer[..n]);
            if matches!(source, Source::Copy(_)) {
                stream
                    .out
                    .write_all(&buffer[..n])
                    .map_err(output_error(path))?;
            }
            left -= n;
        }
        if stream.hash.digest() != xxh3 {
            return Err(Error::input(
                &from,
                format!(
                    "its first {rows} rows are not those the run being resumed wrote (the file \
                     is another run's, or was changed since)"
                ),
            ));
        }
        stream.rows = rows;
        stream.out.flush().map_err(output_error(path))?;
        let file = stream.out.get_mut().get_mut();
        let end = (HEADER_BYTES + rows * stream.row_values * 4) as u64;
        file.set_len(end).map_err(output_error(path))?;
        stream.write_header()?;
        Ok(stream)
    }

    fn open(path: &Path, tail: &[usize], fresh: bool) -> Result<Self> {
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
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(fresh)
            .truncate(fresh)
            .open(&partial)
            .map_err(&err)?;
        Ok(NpyStream {
            path: path.to_path_buf(),
            partial,
            tail: tail.to_vec(),
            row_values,
            rows: 0,
            hash: Box::new(Xxh3::new()),
            out: BufWriter::new(Budgeted(file)),
        })
    }

    /// Writes the header with the row count so far and moves to the end of the data. The header
    /// rewrites bytes already there, so it needs no new space and is not charged to a test's
    /// full-disk budget (see `io::fault`), except when the file is new.
    fn write_header(&mut self) -> Result<()> {
        let err = output_error(&self.path);
        self.out.flush().map_err(&err)?;
        let file = self.out.get_mut().get_mut();
        let fresh = file.metadata().map_err(&err)?.len() < HEADER_BYTES as u64;
        file.seek(SeekFrom::Start(0)).map_err(&err)?;
        let bytes = header(self.rows, &self.tail);
        match fresh {
            true => self.out.get_mut().write_all(&bytes),
            false => self.out.get_mut().get_mut().write_all(&bytes),
        }
        .map_err(&err)?;
        self.out
            .get_mut()
            .get_mut()
            .seek(SeekFrom::End(0))
            .map_err(&err)?;
        Ok(())
    }

    /// Appends rows (a multiple of the row size).
    pub fn append(&mut self, values: &[f32]) -> Result<()> {
        debug_assert_eq!(values.len() % self.row_values.max(1), 0);
        let result = if cfg!(target_endian = "little") {
            let bytes: &[u8] = bytemuck::cast_slice(values);
            self.hash.update(bytes);
            self.out.write_all(bytes)
        } else {
            let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            self.hash.update(&bytes);
            self.out.write_all(&bytes)
        };
        result.map_err(output_error(&self.path))?;
        self.rows += values.len() / self.row_values.max(1);
        Ok(())
    }

    /// Rows `first..first + count` as written so far (those an earlier run wrote, on resume),
    /// read back from the file.
    pub fn read_rows(&mut self, first: usize, count: usize) -> Result<Vec<f32>> {
        let err = output_error(&self.path);
        if first + count > self.rows {
            return Err(Error::Internal(format!(
                "NPY stream: rows {first}..{} of {} read back",
                first + count,
                self.rows
            )));
        }
        self.out.flush().map_err(&err)?;
        let mut file = File::open(&self.partial).map_err(&err)?;
        let row_bytes = self.row_values * 4;
        file.seek(SeekFrom::Start((HEADER_BYTES + first * row_bytes) as u64))
            .map_err(&err)?;
        let mut bytes = vec![0u8; count * row_bytes];
        file.read_exact(&mut bytes).map_err(&err)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }

    /// Rows written so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The shape so far: the rows, then the shape of one row.
    pub fn shape(&self) -> Vec<usize> {
        std::iter::once(self.rows)
            .chain(self.tail.iter().copied())
            .collect()
    }

    /// The xxh3-64 of the data written so far (the rows' little-endian bytes).
    pub fn digest(&self) -> u64 {
        self.hash.digest()
    }

    /// Makes everything written so far durable and the header's count match it.
    pub fn sync(&mut self) -> Result<()> {
        self.write_header()?;
        let err = output_error(&self.path);
        self.out.get_mut().get_mut().sync_data().map_err(&err)
    }

    /// Syncs and renames the file to its final name.
    pub fn finish(mut self) -> Result<()> {
        self.sync()?;
        std::fs::rename(&self.partial, &self.path).map_err(output_error(&self.path))
    }
}

/// Opens an earlier run's stream `path` for reading at its first row, after checking that it is
/// a regular file holding float32 rows of shape `tail`, at least `rows` of them.
fn open_earlier(path: &Path, tail: &[usize], rows: usize) -> Result<File> {
    let bad = |message: String| Error::input(path, message);
    let meta = std::fs::metadata(path).map_err(|e| {
        bad(format!(
            "is missing ({e}): the stopped run's rows before its checkpoint were moved or \
             deleted, so it cannot be continued; start it afresh with `rmld sample` (the same \
             settings and seed give the same samples)"
        ))
    })?;
    if !meta.is_file() {
        return Err(bad("is not a regular file".into()));
    }
    let mut file = File::open(path).map_err(|e| bad(format!("cannot open it: {e}")))?;
    let mut preamble = [0u8; 10];
    let ok =
        file.read_exact(&mut preamble).is_ok() && &preamble[..6] == NPY_MAGIC && preamble[6] == 1;
    let text_len = u16::from_le_bytes([preamble[8], preamble[9]]) as usize;
    if !ok || 10 + text_len != HEADER_BYTES {
        return Err(bad(
            "is not an NPY stream rmld wrote (its header differs)".into()
        ));
    }
    let mut text = vec![0u8; text_len];
    file.read_exact(&mut text)
        .map_err(|e| bad(format!("cannot read its header: {e}")))?;
    let header = parse_header(&text).map_err(|e| bad(format!("bad NPY header: {e}")))?;
    let shape: Vec<usize> = header.shape.iter().map(|&d| d as usize).collect();
    let fits = header.descr == "<f4"
        && !header.fortran_order
        && shape.len() == tail.len() + 1
        && shape[1..] == *tail;
    if !fits {
        return Err(bad(format!(
            "holds rows of shape {:?} ({}), the run being resumed writes rows of shape {tail:?} \
             (float32): the file is another run's",
            &shape.get(1..).unwrap_or_default(),
            header.descr
        )));
    }
    let row_bytes = tail.iter().product::<usize>() as u64 * 4;
    let whole = (meta.len().saturating_sub(HEADER_BYTES as u64)) / row_bytes.max(1);
    let held = (shape[0] as u64).min(whole);
    if held < rows as u64 {
        return Err(bad(format!(
            "holds {held} rows, fewer than the {rows} the run being resumed had written"
        )));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(path: &Path) -> (Vec<usize>, Vec<f32>) {
        let array = crate::io::read_npy(path).unwrap();
        let crate::io::Pixels::F32(v) = array.data else {
            panic!("float data")
        };
        (array.shape, v)
    }

    #[test]
    fn grows_syncs_resumes_and_finishes_as_valid_npy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npy");
        let mut s = NpyStream::create(&path, &[2, 3]).unwrap();
        s.append(&[1.0; 6]).unwrap();
        s.append(&[2.0; 12]).unwrap();
        s.sync().unwrap();
        let mark = s.digest();
        s.append(&[9.0; 6]).unwrap(); // written after the "checkpoint": dropped on resume
        drop(s);
        let mut s = NpyStream::resume(&path, &[2, 3], 3, mark).unwrap();
        assert_eq!(s.digest(), mark);
        s.append(&[3.0; 6]).unwrap();
        s.finish().unwrap();
        let (shape, v) = values(&path);
        assert_eq!(shape, vec![4, 2, 3]);
        assert_eq!(&v[..6], &[1.0; 6]);
        assert_eq!(&v[18..], &[3.0; 6]);
        assert!(!partial_path(&path).exists());
    }

    #[test]
    fn a_finished_stream_is_copied_up_to_its_mark_and_left_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let earlier = dir.path().join("a/x.npy");
        std::fs::create_dir_all(earlier.parent().unwrap()).unwrap();
        let mut s = NpyStream::create(&earlier, &[2]).unwrap();
        s.append(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        let mark = s.digest();
        s.append(&[5.0, 6.0]).unwrap();
        s.finish().unwrap();
        let before = std::fs::read(&earlier).unwrap();
        let path = dir.path().join("x.npy");
        let mut s = NpyStream::resume_from(&earlier, &path, &[2], 2, mark).unwrap();
        s.append(&[7.0, 8.0]).unwrap();
        s.finish().unwrap();
        assert_eq!(
            values(&path),
            (vec![3, 2], vec![1.0, 2.0, 3.0, 4.0, 7.0, 8.0])
        );
        assert_eq!(std::fs::read(&earlier).unwrap(), before);
    }

    #[test]
    fn another_runs_stream_is_refused_naming_what_differs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npy");
        let mut s = NpyStream::create(&path, &[2, 3]).unwrap();
        s.append(&[1.0; 12]).unwrap();
        let mark = s.digest();
        s.finish().unwrap();
        let to = dir.path().join("y.npy");
        let error = |e: Error| e.to_string();
        let e = error(
            NpyStream::resume_from(&path, &to, &[4, 3], 1, mark)
                .err()
                .unwrap(),
        );
        assert!(
            e.contains("shape [2, 3]") && e.contains("another run"),
            "{e}"
        );
        let e = error(
            NpyStream::resume_from(&path, &to, &[2, 3], 3, mark)
                .err()
                .unwrap(),
        );
        assert!(e.contains("holds 2 rows, fewer than the 3"), "{e}");
        let e = error(
            NpyStream::resume_from(&path, &to, &[2, 3], 2, mark ^ 1)
                .err()
                .unwrap(),
        );
        assert!(e.contains("first 2 rows are not those"), "{e}");
        let e = error(
            NpyStream::resume_from(&path, &to, &[2, 3], 1, mark)
                .err()
                .unwrap(),
        );
        assert!(e.contains("first 1 rows"), "{e}");
        std::fs::write(&path, b"\x93NUMPY\x01\x00").unwrap();
        let e = error(
            NpyStream::resume_from(&path, &to, &[2, 3], 1, mark)
                .err()
                .unwrap(),
        );
        assert!(e.contains("not an NPY stream"), "{e}");
        let e = error(
            NpyStream::resume_from(dir.path(), &to, &[2, 3], 1, mark)
                .err()
                .unwrap(),
        );
        assert!(e.contains("not a regular file"), "{e}");
    }
}
