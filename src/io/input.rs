//! Bounded input reading: gzip detected by magic, a decompressed-size limit, precise truncation errors.

use std::fs::File;
use std::io::{BufReader, Cursor, ErrorKind, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

use crate::{Error, Result};

/// Default cap on the bytes read (after decompression) from one input file: 4 GiB. It bounds the
/// memory a hostile or corrupt file (a gzip bomb, a lying header) can make us allocate.
pub const MAX_DECOMPRESSED_BYTES: u64 = 4 << 30;

/// Environment variable overriding [`MAX_DECOMPRESSED_BYTES`]: a positive byte count.
pub const MAX_INPUT_BYTES_ENV: &str = "RMLD_MAX_INPUT_BYTES";

/// The input size limit in force: `RMLD_MAX_INPUT_BYTES` if set, else [`MAX_DECOMPRESSED_BYTES`].
pub fn input_limit() -> Result<u64> {
    match std::env::var_os(MAX_INPUT_BYTES_ENV) {
        None => Ok(MAX_DECOMPRESSED_BYTES),
        Some(value) => parse_limit(&value.to_string_lossy()),
    }
}

/// Parses a limit given as a positive decimal byte count.
pub fn parse_limit(text: &str) -> Result<u64> {
    match text.trim().parse::<u64>() {
        Ok(v) if v > 0 => Ok(v),
        _ => Err(Error::usage(
            MAX_INPUT_BYTES_ENV,
            format!("expected a positive byte count, found {text:?}"),
        )),
    }
}

/// What a file holds, judged from its first (decompressed) bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// IDX (two zero bytes, then a type byte and a dimension count).
    Idx,
    /// NumPy `.npy` (starts with `\x93NUMPY`).
    Npy,
    /// Anything else: treated as text (CSV).
    Text,
}

/// A byte stream from one input file, transparently gunzipped when it starts with `1f 8b`, that
/// refuses to yield more than `limit` bytes and words every failure as an input error on the file.
pub struct Input {
    path: PathBuf,
    reader: Box<dyn Read>,
    gzip: bool,
    limit: u64,
    pos: u64,
    /// The size of the raw source when known (a plain file or memory); with `gzip` false it is
    /// the size of the stream, so a payload that fits in it may be allocated in one go.
    raw_len: Option<u64>,
}

impl Input {
    /// Opens `path`, reading at most `limit` (decompressed) bytes from it.
    pub fn open(path: &Path, limit: u64) -> Result<Input> {
        // A regular file only: a device such as /dev/urandom would be read to the input limit, a
        // folder not at all, and a pipe (`--data <(zcat …)`) is read twice (its format is sniffed
        // first), so the second open would wait for a writer for ever. Checked before opening:
        // opening a FIFO waits, its metadata does not.
        if let Ok(meta) = std::fs::metadata(path) {
            if !meta.is_file() {
                let kind = super::regular::kind(&meta);
                return Err(Error::input(
                    path,
                    format!("is {kind}, not a data file: save the data to a file and give that"),
                ));
            }
        }
        let file = File::open(path).map_err(|e| Error::input(path, format!("cannot open: {e}")))?;
        let raw_len = file
            .metadata()
            .ok()
            .filter(|m| m.is_file())
            .map(|m| m.len());
        Self::from_reader(path, Box::new(file), limit, raw_len)
    }

    /// Reads from memory (the embedded dataset); `name` is used in messages.
    pub fn from_static(name: &Path, bytes: &'static [u8], limit: u64) -> Result<Input> {
        Self::from_reader(name, Box::new(bytes), limit, Some(bytes.len() as u64))
    }

    fn from_reader(
        path: &Path,
        mut raw: Box<dyn Read>,
        limit: u64,
        raw_len: Option<u64>,
    ) -> Result<Input> {
        let mut magic = [0u8; 2];
        let got = fill(&mut raw, &mut magic)
            .map_err(|e| Error::input(path, format!("read error: {e}")))?;
        let gzip = got == 2 && magic == [0x1f, 0x8b];
        // Put the sniffed bytes back in front of the stream.
        let stream = BufReader::new(Cursor::new(magic[..got].to_vec()).chain(raw));
        let reader: Box<dyn Read> = if gzip {
            Box::new(MultiGzDecoder::new(stream))
        } else {
            Box::new(stream)
        };
        Ok(Input {
            path: path.to_path_buf(),
            reader,
            gzip,
            limit,
            pos: 0,
            raw_len: raw_len.filter(|_| !gzip),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file is gzip-compressed.
    pub fn is_gzip(&self) -> bool {
        self.gzip
    }

    /// Bytes read so far (after decompression).
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// An input error on this file; adds a hint when the name promises gzip and the content is not.
    pub fn error(&self, message: impl Into<String>) -> Error {
        let mut message = message.into();
        if gz_name(&self.path) && !self.gzip {
            message
                .push_str(" (note: the name ends in .gz but the content is not gzip-compressed)");
        }
        Error::input(&self.path, message)
    }

    fn read_error(&self, e: std::io::Error) -> Error {
        match (self.gzip, e.kind()) {
            (true, ErrorKind::UnexpectedEof) => self.error(format!("truncated gzip stream ({e})")),
            (true, _) => self.error(format!("corrupt gzip stream: {e}")),
            (false, _) => self.error(format!("read error: {e}")),
        }
    }

    fn limit_error(&self) -> Error {
        let what = if self.gzip {
            "decompressed size"
        } else {
            "size"
        };
        self.error(format!(
            "{what} exceeds the input limit of {} bytes (a decompression bomb or a corrupt file? \
             set {MAX_INPUT_BYTES_ENV} to raise the limit if the file is genuine)",
            self.limit
        ))
    }

    /// Fills as much of `buf` as the stream holds; returns the count (short only at end of data).
    pub fn read_up_to(&mut self, buf: &mut [u8]) -> Result<usize> {
        let room = self.limit.saturating_sub(self.pos);
        if buf.len() as u64 > room {
            return Err(self.limit_error());
        }
        let got = fill(&mut self.reader, buf).map_err(|e| self.read_error(e))?;
        self.pos += got as u64;
        Ok(got)
    }

    /// Whether `len` more bytes are within the limit and, the stream's size being known, present:
    /// then a buffer of exactly `len` bytes can be allocated before reading (it is no larger than
    /// the file itself).
    fn holds(&self, len: u64) -> bool {
        let room = self.limit.saturating_sub(self.pos);
        let left = self.raw_len.map(|n| n.saturating_sub(self.pos));
        len <= room && left.is_some_and(|left| len <= left)
    }

    fn truncated_error(&self, len: u64, got: u64, what: &str) -> Error {
        self.error(format!(
            "truncated: the header promises {what} ({len} bytes of data) but only {got} bytes follow"
        ))
    }

    fn trailing_error(&self, len: u64, what: &str) -> Error {
        self.error(format!(
            "trailing data after the {len} bytes of {what} that the header describes"
        ))
    }

    /// Refuses, from the header alone and before a byte of the payload is read (or
    /// decompressed), `len` more bytes that cannot be: more than a plain file holds, past the
    /// input limit, or more than this process can still allocate.
    fn check_promise(&self, len: u64, what: &str) -> Result<()> {
        // A plain file's size is the plainest truth: said first.
        if let Some(left) = self.raw_len.map(|n| n.saturating_sub(self.pos)) {
            if len > left {
                return Err(self.truncated_error(len, left, what));
            }
        }
        let room = self.limit.saturating_sub(self.pos);
        if len > room {
            return Err(self.error(format!(
                "the header promises {what} ({len} bytes of data), more than the input limit of \
                 {} bytes (a decompression bomb or a corrupt file? set {MAX_INPUT_BYTES_ENV} to \
                 raise the limit if the file is genuine)",
                self.limit
            )));
        }
        if let Some(available) = crate::alloc::checked_available() {
            if len > available {
                return Err(self.error(format!(
                    "the header promises {what}, which needs about {}, more than the {} this \
                     process can still allocate",
                    crate::alloc::human(len as f64),
                    crate::alloc::human(available as f64)
                )));
            }
        }
        Ok(())
    }

    /// A buffer for `len` bytes the header promised, allocated fallibly.
    fn payload_buffer<T>(&self, len: usize, what: &str) -> Result<Vec<T>> {
        let mut buf = Vec::new();
        buf.try_reserve_exact(len).map_err(|_| {
            self.error(format!(
                "cannot allocate {} for {what}: the machine (or a memory limit on this process) \
                 refused it",
                crate::alloc::human((len * std::mem::size_of::<T>()) as f64)
            ))
        })?;
        Ok(buf)
    }

    /// Reads exactly `len` more bytes that must end the file. `what` describes them for messages
    /// (e.g. "60000 images of 28×28"). The header's promise is checked first
    /// ([`Self::check_promise`]), then at most `len` + 1 bytes are read (or decompressed) into a
    /// buffer of `len`: a gzip'd header claiming terabytes costs nothing.
    pub fn read_payload(&mut self, len: u64, what: &str) -> Result<Vec<u8>> {
        self.check_promise(len, what)?;
        let n = usize::try_from(len).map_err(|_| self.error(format!("{what} is absurd")))?;
        let mut buf = self.payload_buffer(n, what)?;
        (&mut self.reader)
            .take(len)
            .read_to_end(&mut buf)
            .map_err(|e| self.read_error(e))?;
        let got = buf.len() as u64;
        self.pos += got;
        if got < len {
            return Err(self.truncated_error(len, got, what));
        }
        let mut probe = [0u8; 1];
        if fill(&mut self.reader, &mut probe).map_err(|e| self.read_error(e))? > 0 {
            self.pos += 1;
            return Err(self.trailing_error(len, what));
        }
        Ok(buf)
    }

    /// [`Self::read_payload`] of little-endian f32 values (`len` bytes, a multiple of 4), with the
    /// same checks and messages. When the file is known to hold them (a plain file, on a
    /// little-endian machine) they are read straight into one exactly sized `Vec<f32>`: no
    /// regrowth and no second copy.
    pub fn read_payload_f32(&mut self, len: u64, what: &str) -> Result<Vec<f32>> {
        self.check_promise(len, what)?;
        let count = usize::try_from(len / 4).ok();
        let (Some(count), true, true) = (
            count,
            cfg!(target_endian = "little") && len.is_multiple_of(4),
            self.holds(len),
        ) else {
            let bytes = self.read_payload(len, what)?;
            return Ok(bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect());
        };
        let mut values = self.payload_buffer::<f32>(count, what)?;
        values.resize(count, 0.0);
        let got = fill(&mut self.reader, bytemuck::cast_slice_mut(&mut values))
            .map_err(|e| self.read_error(e))? as u64;
        self.pos += got;
        if got < len {
            // The file shrank after it was opened.
            return Err(self.truncated_error(len, got, what));
        }
        let mut probe = [0u8; 1];
        let extra = fill(&mut self.reader, &mut probe).map_err(|e| self.read_error(e))?;
        if extra > 0 {
            self.pos += extra as u64;
            return Err(self.trailing_error(len, what));
        }
        Ok(values)
    }

    /// Reads the rest of the stream, refusing to go past the limit.
    pub fn read_rest(&mut self) -> Result<Vec<u8>> {
        let room = self.limit.saturating_sub(self.pos);
        // A plain file's size is known: one too large is refused before it is read.
        if let Some(left) = self.raw_len.map(|n| n.saturating_sub(self.pos)) {
            if left > room {
                return Err(self.limit_error());
            }
            if let Some(available) = crate::alloc::checked_available().filter(|&a| left > a) {
                return Err(self.error(format!(
                    "holds {}, more than the {} this process can still allocate",
                    crate::alloc::human(left as f64),
                    crate::alloc::human(available as f64)
                )));
            }
        }
        let mut buf = Vec::new();
        (&mut self.reader)
            .take(room.saturating_add(1))
            .read_to_end(&mut buf)
            .map_err(|e| self.read_error(e))?;
        self.pos += buf.len() as u64;
        if buf.len() as u64 > room {
            return Err(self.limit_error());
        }
        Ok(buf)
    }

    /// Sniffs the (decompressed) content. Consumes the first bytes: reopen to parse.
    pub fn sniff(&mut self) -> Result<Format> {
        let mut head = [0u8; SNIFF_BYTES];
        let within = SNIFF_BYTES.min(usize::try_from(self.limit).unwrap_or(SNIFF_BYTES));
        let got = self.read_up_to(&mut head[..within])?;
        if got == 0 {
            return Err(self.error("empty file"));
        }
        // A damaged NPY magic, or a .npy name, goes to the NPY reader, whose error says the magic
        // is wrong, rather than to the CSV reader's "not a text file".
        let format = match &head[..got] {
            [0x93, b'N', b'U', b'M', b'P', ..] => Format::Npy,
            [0, 0, _, _, ..] => Format::Idx,
            _ if npy_name(&self.path) => Format::Npy,
            _ => Format::Text,
        };
        // Binary bytes that are no IDX or NPY are refused from their head, not read whole (to
        // the input limit) as text first.
        if format == Format::Text && !looks_like_text(&head[..got]) {
            return Err(self.error(
                "matches no format rmld reads: not IDX, NPY or text (CSV), its first bytes \
                 being binary",
            ));
        }
        Ok(format)
    }
}

/// Bytes a sniff reads to tell text from binary.
pub(crate) const SNIFF_BYTES: usize = 4096;

/// Whether `head` can begin a text file: no NUL byte, and UTF-8 but for a character the cut
/// may have split at its end.
pub(crate) fn looks_like_text(head: &[u8]) -> bool {
    !head.contains(&0)
        && match std::str::from_utf8(head) {
            Ok(_) => true,
            Err(e) => e.error_len().is_none(),
        }
}

/// Reads until `buf` is full or the stream ends (a plain `read` may return short counts).
fn fill(reader: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Sniffs the format of the file at `path` (looking inside gzip).
pub fn sniff_file(path: &Path, limit: u64) -> Result<Format> {
    Input::open(path, limit)?.sniff()
}

/// True when the path's name ends in `.npy` or `.npy.gz`.
fn npy_name(path: &Path) -> bool {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let name = name.to_ascii_lowercase();
    name.ends_with(".npy") || name.ends_with(".npy.gz")
}

/// True when the path's name ends in `.gz` (writers compress such outputs).
pub(crate) fn gz_name(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_parsing() {
        assert_eq!(parse_limit(" 1048576 ").unwrap(), 1 << 20);
        for bad in ["0", "-1", "4G", ""] {
            assert!(
                matches!(parse_limit(bad), Err(Error::Usage { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn sniffs_formats_inside_gzip() {
        let sniff = |bytes: &'static [u8]| Input::from_static(Path::new("x"), bytes, 100)?.sniff();
        assert_eq!(sniff(b"\x93NUMPY\x01\x00").unwrap(), Format::Npy);
        assert_eq!(sniff(b"\0\0\x08\x03").unwrap(), Format::Idx);
        assert_eq!(sniff(b"1,2,3\n").unwrap(), Format::Text);
        // gzip of "1,2\n"
        let gz: &[u8] = &[
            0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0x33, 0xd4, 0x31, 0xe2, 2, 0, 0x33, 0x42, 0x21,
            0x55, 4, 0, 0, 0,
        ];
        let mut input = Input::from_static(Path::new("x"), gz, 100).unwrap();
        assert!(input.is_gzip());
        assert_eq!(input.read_rest().unwrap(), b"1,2\n");
        assert!(sniff(b"").is_err());
    }

    #[test]
    fn binary_bytes_of_no_format_are_refused_from_their_head() {
        let sniff =
            |bytes: &'static [u8]| Input::from_static(Path::new("x"), bytes, 1 << 20)?.sniff();
        let e = sniff(b"\xff\xfe1,2,3\n").unwrap_err().to_string();
        assert!(e.contains("matches no format"), "{e}");
        assert!(sniff(b"1,2\n3,\x004\n").is_err());
        // Text whose 4096th byte splits a character is still text.
        let mut text = vec![b'7'; SNIFF_BYTES - 1];
        text.extend_from_slice("é,1\n".as_bytes());
        assert_eq!(
            sniff(Box::leak(text.into_boxed_slice())).unwrap(),
            Format::Text
        );
        assert_eq!(
            sniff("\u{feff}label,x\n1,2\n".as_bytes()).unwrap(),
            Format::Text
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_device_is_refused_as_a_data_file() {
        let e = Input::open(Path::new("/dev/null"), 1 << 20)
            .err()
            .expect("refused");
        assert!(e.to_string().contains("a device, not a data file"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = Input::open(dir.path(), 1 << 20).err().expect("refused");
        assert!(e.to_string().contains("a folder, not a data file"), "{e}");
        // A named pipe would be opened twice (sniffed, then parsed): the second open waits for
        // a writer for ever.
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let e = Input::open(&fifo, 1 << 20).err().expect("refused");
            assert!(e.to_string().contains("FIFO"), "{e}");
        }
    }

    /// An IDX images header claiming `dims`, then `zeros` zero bytes, gzip'd.
    fn lying_idx_gz(dims: [u32; 3], zeros: usize) -> &'static [u8] {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&0x0803u32.to_be_bytes()).unwrap();
        for d in dims {
            gz.write_all(&d.to_be_bytes()).unwrap();
        }
        gz.write_all(&vec![0u8; zeros]).unwrap();
        Box::leak(gz.finish().unwrap().into_boxed_slice())
    }

    /// Reads the 16 header bytes, then asks for the payload the header promises.
    fn promised(bytes: &'static [u8], limit: u64, dims: [u32; 3]) -> (Input, String) {
        let mut input = Input::from_static(Path::new("bomb.gz"), bytes, limit).unwrap();
        let mut header = [0u8; 16];
        assert_eq!(input.read_up_to(&mut header).unwrap(), 16);
        let len = dims.iter().map(|&d| u64::from(d)).product();
        let e = input.read_payload(len, "images").unwrap_err().to_string();
        (input, e)
    }

    #[test]
    fn a_gzip_header_past_the_limit_is_refused_before_decompressing() {
        let dims = [1000, 1000, 1000];
        let (input, e) = promised(lying_idx_gz(dims, 1 << 20), 1 << 16, dims);
        assert!(e.contains("input limit") && e.contains("promises"), "{e}");
        assert_eq!(
            input.position(),
            16,
            "nothing past the header was decompressed"
        );
    }

    #[test]
    fn a_gzip_header_past_the_memory_is_refused_before_decompressing() {
        if crate::alloc::checked_available().is_none() {
            return; // no /proc/meminfo, or the check is turned off
        }
        let dims = [u32::MAX, 65_535, 65_535];
        let (input, e) = promised(lying_idx_gz(dims, 1 << 20), u64::MAX, dims);
        assert!(e.contains("this process can still allocate"), "{e}");
        assert_eq!(
            input.position(),
            16,
            "nothing past the header was decompressed"
        );
    }

    #[test]
    fn a_plain_header_promising_more_than_the_file_is_refused_unread() {
        let bytes: &'static [u8] = b"\0\0\x08\x03\0\0\0\x02\0\0\0\x02\0\0\0\x02abc";
        let mut input = Input::from_static(Path::new("x"), bytes, 100).unwrap();
        let mut header = [0u8; 16];
        input.read_up_to(&mut header).unwrap();
        let e = input
            .read_payload(8, "2 images of 2×2")
            .unwrap_err()
            .to_string();
        assert!(e.contains("only 3 bytes follow"), "{e}");
        assert_eq!(input.position(), 16);
        // A genuine payload is read whole, and one byte more is trailing data.
        let mut input = Input::from_static(Path::new("x"), bytes, 100).unwrap();
        input.read_up_to(&mut header).unwrap();
        let e = input.read_payload(2, "two bytes").unwrap_err().to_string();
        assert!(e.contains("trailing data"), "{e}");
    }
}
