//! Build identity: an xxh3-64 of the sources that decide what rmld computes, as `RMLD_BUILD`.
//!
//! The package version stays 0.1.0 while what a seed draws changes from commit to commit, so
//! checkpoints, shards, warm-ups and the code cache carry this hash instead: `rmld resume`,
//! `rmld merge` and a shard's warm-up refuse another build's files rather than join draws of
//! two behaviours, and the code cache does not serve another encoder's codes. The hash covers
//! `src/`, `shaders/`, `assets/`, the peer script `src/measure/peer.rs` embeds, `Cargo.toml`
//! and `Cargo.lock` (a dependency's version can change a result: `libm`, `rand_distr`), each
//! file by its path relative to the package and its bytes with CRLF read as LF, so a checkout
//! on Windows and one on Linux of one commit are one build. A missing file or folder (a
//! package without its lock file) is left out.

use std::fs;
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::Xxh3;

/// The folders and files hashed, relative to the package.
const INPUTS: [&str; 6] = [
    "src",
    "shaders",
    "assets",
    "benches/peers/numpy_step.py",
    "Cargo.toml",
    "Cargo.lock",
];

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let mut files = Vec::new();
    for input in INPUTS {
        println!("cargo:rerun-if-changed={input}");
        collect(&root, &root.join(input), &mut files);
    }
    files.sort();
    let mut hash = Xxh3::new();
    for (relative, path) in &files {
        let bytes = without_carriage_returns(&fs::read(path).unwrap_or_default());
        hash.update(relative.as_bytes());
        hash.update(&[0]);
        hash.update(&(bytes.len() as u64).to_le_bytes());
        hash.update(&bytes);
    }
    println!("cargo:rustc-env=RMLD_BUILD={:016x}", hash.digest());
}

/// Every file under `path` (or `path` itself), as (its path relative to `root` with `/`
/// separators, its path).
fn collect(root: &Path, path: &Path, files: &mut Vec<(String, PathBuf)>) {
    let Ok(meta) = fs::metadata(path) else {
        return;
    };
    if meta.is_dir() {
        let Ok(entries) = fs::read_dir(path) else {
            return;
        };
        for entry in entries.flatten() {
            collect(root, &entry.path(), files);
        }
    } else if meta.is_file() {
        let relative = path.strip_prefix(root).unwrap_or(path);
        let parts: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        files.push((parts.join("/"), path.to_path_buf()));
    }
}

/// `bytes` with each CRLF read as LF.
fn without_carriage_returns(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
            continue;
        }
        out.push(b);
    }
    out
}
