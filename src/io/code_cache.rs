//! A disk cache of LASSO codes keyed by the encoded rows, the dictionary, λ and the stop rule, so a repeated augmentation skips its encodings.
//!
//! One file per encoding, `codes-<key>.bin` in the cache folder, where the key
//! ([`CodeKey`]) is the 128-bit xxh3 of the encoded rows' f32 bytes (so the dataset,
//! its `limit`, the classes and the pixel scale), the dictionary's, λ, the iteration cap, the
//! duality-gap tolerance, the device and the rmld build (`crate::BUILD`: the package version
//! stays while the encoder changes; not the CPU's path: its products sum in one order on all). Layout: the magic
//! `RMLDCODE`, a u32 format version, u64 rows, u64 p, the 16-byte key, rows·p little-endian f32, and the xxh3-128 of those values. Files are written
//! atomically (`io::write_atomic`); one that does not read back whole and checksummed is
//! ignored with a notice (`Notice::CodeCacheIgnored`) and written again.

use std::io::Read;
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::Xxh3;

use crate::io;

const MAGIC: &[u8; 8] = b"RMLDCODE";
/// The entry format and the encoder's: bump it when either changes what a key's codes are.
pub(crate) const VERSION: u32 = 6;
const HEADER: usize = 8 + 4 + 8 + 8 + 16;

/// The folder `rmld augment` caches codes in when none is named: `$RMLD_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/rmld/codes`, else `$HOME/.cache/rmld/codes`; None when none is set.
pub fn default_code_cache() -> Option<PathBuf> {
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("RMLD_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("rmld").join("codes")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("rmld").join("codes")))
}

/// What identifies one encoding's codes: the rows, the dictionary, λ, the stop rule and the
/// device (not the CPU's product path: its products sum in one order on all).
pub(crate) struct CodeKey<'a> {
    /// The dictionary A (d × p).
    pub dictionary: &'a [f32],
    /// Rows' dimension d.
    pub d: usize,
    /// Atoms p.
    pub p: usize,
    /// λ.
    pub lam: f32,
    /// The iteration cap.
    pub iterations: u32,
    /// The duality-gap tolerance.
    pub tolerance: f32,
    /// The device that encodes.
    pub device: &'a str,
}

impl CodeKey<'_> {
    /// The key of encoding `rows` (each d values, model units) as these settings do.
    pub fn hash<R: AsRef<[f32]>>(&self, rows: impl Iterator<Item = R>) -> [u8; 16] {
        let mut h = Xxh3::new();
        h.update(crate::BUILD.as_bytes());
        h.update(&VERSION.to_le_bytes());
        h.update(self.device.as_bytes());
        for v in [self.d as u64, self.p as u64, self.iterations as u64] {
            h.update(&v.to_le_bytes());
        }
        h.update(&self.lam.to_le_bytes());
        h.update(&self.tolerance.to_le_bytes());
        h.update(bytemuck::cast_slice(self.dictionary));
        let mut count = 0u64;
        for row in rows {
            h.update(bytemuck::cast_slice(row.as_ref()));
            count += 1;
        }
        h.update(&count.to_le_bytes());
        h.digest128().to_le_bytes()
    }
}

/// The cache file of `key` in `dir`.
pub(crate) fn entry_path(dir: &Path, key: &[u8; 16]) -> PathBuf {
    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    dir.join(format!("codes-{hex}.bin"))
}

/// The codes (rows × p) cached under `key`: Ok(None) when there is no entry, Err(why) when
/// there is one that is not a whole, checksummed entry of that key and shape.
pub(crate) fn load(
    dir: &Path,
    key: &[u8; 16],
    rows: usize,
    p: usize,
) -> std::result::Result<Option<Vec<f32>>, String> {
    let path = entry_path(dir, key);
    // Only a regular file is opened: a FIFO would block the open, a device never end.
    match std::fs::metadata(&path) {
        Ok(meta) if !meta.is_file() => return Err("not a regular file".into()),
        _ => {}
    }
    let mut file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let values = rows * p;
    let expected = (HEADER + 4 * values + 16) as u64;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    if len != expected {
        return Err(format!("{len} bytes where {expected} were expected"));
    }
    let mut header = [0u8; HEADER];
    file.read_exact(&mut header).map_err(|e| e.to_string())?;
    let u64_at = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap());
    if &header[..8] != MAGIC
        || u32::from_le_bytes(header[8..12].try_into().unwrap()) != VERSION
        || u64_at(12) != rows as u64
        || u64_at(20) != p as u64
        || header[28..44] != key[..]
    {
        return Err("its header does not match this encoding".into());
    }
    let mut codes = vec![0f32; values];
    file.read_exact(bytemuck::cast_slice_mut(&mut codes))
        .map_err(|e| e.to_string())?;
    let mut sum = [0u8; 16];
    file.read_exact(&mut sum).map_err(|e| e.to_string())?;
    if cfg!(target_endian = "big") {
        codes
            .iter_mut()
            .for_each(|v| *v = f32::from_bits(u32::from_le(v.to_bits())));
    }
    if checksum(&codes) != sum {
        return Err("its checksum does not match its values".into());
    }
    Ok(Some(codes))
}

/// Writes `codes` (rows × p) under `key`, atomically.
pub(crate) fn store(
    dir: &Path,
    key: &[u8; 16],
    rows: usize,
    p: usize,
    codes: &[f32],
) -> crate::Result<()> {
    std::fs::create_dir_all(dir).map_err(|source| crate::Error::Output {
        path: dir.to_path_buf(),
        source,
    })?;
    io::write_atomic(&entry_path(dir, key), |w| {
        w.write_all(MAGIC)?;
        w.write_all(&VERSION.to_le_bytes())?;
        w.write_all(&(rows as u64).to_le_bytes())?;
        w.write_all(&(p as u64).to_le_bytes())?;
        w.write_all(key)?;
        for chunk in codes.chunks(1 << 16) {
            let bytes: Vec<u8> = chunk.iter().flat_map(|v| v.to_le_bytes()).collect();
            w.write_all(&bytes)?;
        }
        w.write_all(&checksum(codes))
    })
}

fn checksum(codes: &[f32]) -> [u8; 16] {
    let mut h = Xxh3::new();
    for v in codes {
        h.update(&v.to_le_bytes());
    }
    h.digest128().to_le_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_loads_and_refuses_a_damaged_entry() {
        let dir = tempfile::tempdir().unwrap();
        // A key as `CodeKey` makes them (its own test checks what it depends on).
        let key: [u8; 16] = std::array::from_fn(|i| (7 * i + 3) as u8);
        assert_eq!(load(dir.path(), &key, 2, 3), Ok(None));
        let codes = [0.0f32, 1.5, -2.0, 0.25, 0.0, 7.0];
        store(dir.path(), &key, 2, 3, &codes).unwrap();
        assert_eq!(load(dir.path(), &key, 2, 3), Ok(Some(codes.to_vec())));
        assert!(load(dir.path(), &key, 3, 2).is_err(), "another shape");
        let path = entry_path(dir.path(), &key);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[HEADER + 5] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let err = load(dir.path(), &key, 2, 3).unwrap_err();
        assert!(err.contains("checksum"), "{err}");
        std::fs::write(&path, &bytes[..20]).unwrap();
        assert!(load(dir.path(), &key, 2, 3).unwrap_err().contains("bytes"));
    }

    fn key_of(lam: f32, rows: &[Vec<f32>]) -> [u8; 16] {
        let a = [0.5f32; 6];
        CodeKey {
            dictionary: &a,
            d: 2,
            p: 3,
            lam,
            iterations: 10,
            tolerance: 1e-3,
            device: "cpu",
        }
        .hash(rows.iter())
    }

    #[test]
    fn the_key_holds_lambda_and_the_rows() {
        let rows = vec![vec![1.0f32, 2.0], vec![3.0, 4.0]];
        let key = key_of(0.1, &rows);
        assert_ne!(key, key_of(0.2, &rows), "λ is part of the key");
        assert_ne!(key, key_of(0.1, &rows[..1]), "the rows are part of the key");
    }
}
