//! Whole-file reads of the project's own small files (checkpoints, models, manifests, journals), bounded and only from regular files.
//!
//! A path the user controls can name a device (`/dev/zero`), a FIFO or a file far larger than any
//! file rmld writes; `std::fs::read` would grow without bound or block. These reads refuse
//! anything but a regular file (after following symbolic links) and any file longer than the
//! caller's bound, before reading a byte.

use std::io::Read;
use std::path::Path;

use crate::{Error, Result};

/// The bytes of `path`, a regular file of at most `max_bytes` bytes; `what` names the file in
/// errors ("checkpoint", "sampler model", ...). Devices, FIFOs, sockets and folders are refused
/// without opening them for reading, as is a file longer than `max_bytes`.
pub fn read_regular_file(path: &Path, what: &str, max_bytes: u64) -> Result<Vec<u8>> {
    let meta = std::fs::metadata(path)
        .map_err(|e| Error::input(path, format!("cannot read the {what}: {e}")))?;
    if !meta.is_file() {
        return Err(Error::input(
            path,
            format!("the {what} must be a regular file, not {}", kind(&meta)),
        ));
    }
    too_long(path, what, meta.len(), max_bytes)?;
    let file = std::fs::File::open(path)
        .map_err(|e| Error::input(path, format!("cannot open the {what}: {e}")))?;
    // The file may grow between the check and the read: read one byte past the bound to see it.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::input(path, format!("cannot read the {what}: {e}")))?;
    too_long(path, what, bytes.len() as u64, max_bytes)?;
    Ok(bytes)
}

fn too_long(path: &Path, what: &str, len: u64, max_bytes: u64) -> Result<()> {
    if len > max_bytes {
        return Err(Error::input(
            path,
            format!("the {what} is {len} bytes, more than the {max_bytes} such a file can hold"),
        ));
    }
    Ok(())
}

/// What a non-regular file is, in words.
pub(crate) fn kind(meta: &std::fs::Metadata) -> &'static str {
    if meta.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "a special file"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_small_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        std::fs::write(&path, b"abc").unwrap();
        assert_eq!(read_regular_file(&path, "checkpoint", 3).unwrap(), b"abc");
    }

    #[test]
    fn refuses_a_file_over_the_bound_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        std::fs::write(&path, b"abcd").unwrap();
        let e = read_regular_file(&path, "checkpoint", 3)
            .unwrap_err()
            .to_string();
        assert!(e.contains("checkpoint is 4 bytes, more than the 3"), "{e}");
        assert!(e.contains(&path.display().to_string()), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn refuses_devices_folders_and_fifos_through_links() {
        let tmp = tempfile::tempdir().unwrap();
        let link = tmp.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let e = read_regular_file(&link, "sampler model", 1 << 30)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a device"), "{e}");
        let e = read_regular_file(tmp.path(), "checkpoint", 10)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a folder"), "{e}");
        let fifo = tmp.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let e = read_regular_file(&fifo, "checkpoint", 10)
                .unwrap_err()
                .to_string();
            assert!(e.contains("FIFO"), "{e}");
        }
    }
}
