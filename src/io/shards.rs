//! Deterministic shards (`shard = "i/N"`): the i-th of N disjoint parts of a run, the manifest a shard writes beside its files, and the shard folders read back and checked for a merge.
//!
//! A shard writes the outputs of its part of the work plus `manifest.json`: the configuration's
//! hash (every setting but the output folder and the shard, with the data's and the
//! dictionary's hashes), the seed, `i/N`, the part it covers and the xxh3-64 and size of each
//! file it wrote. [`read_shards`] checks the shards against each other (one configuration, one
//! seed, every part exactly once, every file intact) before a merge writes anything.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use xxhash_rust::xxh3::xxh3_64;

use crate::{Error, Result};

/// The most bytes of a shard manifest read (one lists a handful of files).
const MAX_MANIFEST_BYTES: u64 = 16 << 20;

/// The manifest's file name in a shard's output folder.
pub const MANIFEST: &str = "manifest.json";

/// The manifest format written by this version.
const MANIFEST_FORMAT: u32 = 1;

/// Shard `index` of `count` (written `index/count`, 0-based: `0/4` … `3/4`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Shard {
    /// Which part, from 0 to `count − 1`.
    pub index: u32,
    /// Into how many parts the work is split (at least 1).
    pub count: u32,
}

impl Shard {
    /// Shard `index` of `count`, checked.
    pub fn new(index: u32, count: u32) -> Result<Shard> {
        let shard = Shard { index, count };
        shard.check()?;
        Ok(shard)
    }

    /// Why this shard of a run whose warm-up couples its chains (`why`: what the run does)
    /// cannot run without the whole run's warm-up: its own chains would make another warm-up
    /// than the single run's. `otherwise`: the settings that make the run's chains independent.
    pub fn needs_warm_up(self, why: &str, otherwise: &str) -> Error {
        Error::usage(
            "warm_up",
            format!(
                "shard {self}: this run {why}, which a shard cannot do on its own chains: run \
                 the whole run's warm-up once with `warm_up_only` (the same settings, no shard) \
                 and start every shard from its folder with `warm_up`; or {otherwise}"
            ),
        )
    }

    /// Checks `count ≥ 1` and `index < count` (an error naming `shard`).
    pub fn check(&self) -> Result<()> {
        if self.count == 0 {
            return Err(Error::usage(
                "shard",
                format!(
                    "{}/{}: the number of shards must be at least 1",
                    self.index, self.count
                ),
            ));
        }
        if self.index >= self.count {
            return Err(Error::usage(
                "shard",
                format!(
                    "{}/{}: the shard index must be from 0 to {} (shards are numbered from 0)",
                    self.index,
                    self.count,
                    self.count - 1
                ),
            ));
        }
        Ok(())
    }

    /// This shard's contiguous part of `total` units: `[total·i/N, total·(i+1)/N)`.
    pub fn range(&self, total: usize) -> std::ops::Range<usize> {
        let at = |k: u32| (total as u128 * k as u128 / self.count.max(1) as u128) as usize;
        at(self.index)..at(self.index + 1)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = Error;

    /// Parses `i/N` and checks it.
    fn from_str(text: &str) -> Result<Shard> {
        let bad = || {
            Error::usage(
                "shard",
                format!(
                    "expected i/N with 0 ≤ i < N (e.g. 0/4 for the first of 4 shards), got {text:?}"
                ),
            )
        };
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let i: u32 = i.trim().parse().map_err(|_| bad())?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        Shard::new(i, n)
    }
}

impl TryFrom<String> for Shard {
    type Error = Error;
    fn try_from(text: String) -> Result<Shard> {
        text.parse()
    }
}

impl From<Shard> for String {
    fn from(shard: Shard) -> String {
        shard.to_string()
    }
}

/// The part of the work a shard covers: units `[start, end)` of `total`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Part {
    /// What is split: `originals` (encode).
    pub unit: String,
    /// First unit of the shard.
    pub start: usize,
    /// One past its last unit.
    pub end: usize,
    /// Units of the whole run.
    pub total: usize,
}

/// A file a shard wrote: its size and xxh3-64 (hex).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Size in bytes.
    pub bytes: u64,
    /// xxh3-64 of its bytes, 16 hex digits.
    pub xxh3: String,
}

/// What a shard wrote beside its outputs (`manifest.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The manifest's format (1).
    pub format: u32,
    /// The command the shard ran (`encode`).
    pub command: String,
    /// The rmld version that wrote it.
    pub rmld_version: String,
    /// The build that wrote it (`crate::BUILD`; empty in files of rmld builds before it was
    /// recorded): shards or a warm-up of two builds, which may draw differently, are refused.
    #[serde(default)]
    pub rmld_build: String,
    /// xxh3-64 (hex) of the configuration: every setting but `out` and `shard`, the kind of
    /// device that ran it (and a GPU's adapter), with the data's and the dictionary's hashes.
    pub configuration: String,
    /// The seed.
    pub seed: u64,
    /// Which shard, `i/N`.
    pub shard: Shard,
    /// The part of the work it covers.
    pub part: Part,
    /// Its output files (the manifest aside), by name.
    pub files: BTreeMap<String, FileEntry>,
}

/// xxh3-64 of `bytes` as 16 hex digits.
pub fn hex_hash(bytes: &[u8]) -> String {
    format!("{:016x}", xxh3_64(bytes))
}

/// The configuration hash of `settings` (serialised; their `out` and `shard` must be cleared by
/// the caller) and the data's and dictionary's hashes.
pub fn configuration_hash(settings: &impl Serialize, data: u64, dictionary: u64) -> String {
    let text = serde_json::to_string(settings).unwrap_or_default();
    let mut bytes = text.into_bytes();
    bytes.extend_from_slice(&data.to_le_bytes());
    bytes.extend_from_slice(&dictionary.to_le_bytes());
    hex_hash(&bytes)
}

/// The device part of a shard's configuration hash, from its report's `backend`: `auto` may
/// pick the CPU on one node and a GPU on another, and two GPU adapters round differently; CPU
/// results do not depend on the thread count.
pub fn device_key(backend: &Value) -> String {
    match backend["kind"].as_str() {
        Some("cpu") => "cpu".to_string(),
        _ => format!("{}: {}", backend["kind"], backend["device"]),
    }
}

/// Writes `manifest.json` into `out` for the files `names` already written there.
pub fn write_manifest(
    out: &Path,
    command: &str,
    configuration: String,
    seed: u64,
    shard: Shard,
    part: Part,
    names: &[&str],
) -> Result<Manifest> {
    let mut files = BTreeMap::new();
    for name in names {
        let path = out.join(name);
        let bytes = std::fs::read(&path).map_err(|e| Error::Output {
            path: path.clone(),
            source: e,
        })?;
        files.insert(
            name.to_string(),
            FileEntry {
                bytes: bytes.len() as u64,
                xxh3: hex_hash(&bytes),
            },
        );
    }
    let manifest = Manifest {
        format: MANIFEST_FORMAT,
        command: command.into(),
        rmld_version: env!("CARGO_PKG_VERSION").into(),
        rmld_build: crate::BUILD.into(),
        configuration,
        seed,
        shard,
        part,
        files,
    };
    super::write_json_atomic(&out.join(MANIFEST), &manifest)?;
    Ok(manifest)
}

/// A shard's configuration hash: its settings `hashed` (the output folder and the shard
/// cleared by the caller), the device that ran it (report.json's `backend`: `auto` may pick the
/// CPU on one node and a GPU on another, and two GPU adapters round differently) and the
/// data's and dictionary's hashes.
pub fn configuration(hashed: &impl Serialize, backend: &Value, hashes: (u64, u64)) -> String {
    configuration_hash(&(hashed, device_key(backend)), hashes.0, hashes.1)
}

/// How a run's work is split.
#[derive(Clone, Copy)]
pub enum Split<'a> {
    /// The whole run.
    Whole,
    /// Shard `i/N`: its part of the chains and of every encoding.
    Shard(Shard),
    /// The merge of these shards (checked, in order): their parts joined, nothing computed
    /// that a shard computed.
    Merge(&'a [ShardFiles]),
    /// The whole run's warm-up alone: every chain up to the end of its burn-in, saved for the
    /// shards to start from ([`WarmUpManifest`]).
    WarmUp,
}

impl Split<'_> {
    /// The split a run's `shard` and `warm_up_only` settings ask for.
    pub fn of(shard: Option<Shard>, warm_up_only: bool) -> Split<'static> {
        match (shard, warm_up_only) {
            (_, true) => Split::WarmUp,
            (Some(shard), false) => Split::Shard(shard),
            (None, false) => Split::Whole,
        }
    }

    /// This run's part of `total` units: all of them but in a shard.
    pub fn part(&self, total: usize) -> std::ops::Range<usize> {
        match self {
            Split::Shard(shard) => shard.range(total),
            _ => 0..total,
        }
    }

    /// This run's part of `total` chains: a shard's must hold one (an error naming `shard`).
    pub fn chains(&self, total: usize) -> Result<std::ops::Range<usize>> {
        let range = self.part(total);
        match self {
            Split::Shard(shard) if range.is_empty() => Err(Error::usage(
                "shard",
                format!(
                    "{shard}: shard {} of {} holds none of the run's {total} chains (split the \
                     chains into at most {total} shards)",
                    shard.index, shard.count
                ),
            )),
            _ => Ok(range),
        }
    }
}

/// Checks where a warm-up goes: `warm_up_only` makes the whole run's (no `shard`), `warm_up`
/// (a folder) starts a shard from one.
pub fn check_warm_up_settings(
    shard: Option<Shard>,
    warm_up_only: bool,
    warm_up: Option<&Path>,
) -> Result<()> {
    if let (true, Some(shard)) = (warm_up_only, shard) {
        return Err(Error::usage(
            "warm_up_only",
            format!(
                "runs the whole run's warm-up, on every chain, for all its shards: give no \
                 `shard` (got {shard}), then start each shard from it with `warm_up`"
            ),
        ));
    }
    if let (true, Some(_)) = (warm_up_only, warm_up) {
        return Err(Error::usage(
            "warm_up",
            "starts a shard from a warm-up, and `warm_up_only` makes one: give one of them",
        ));
    }
    if let (None, Some(dir)) = (shard, warm_up) {
        return Err(Error::usage(
            "warm_up",
            format!(
                "{} is where the shards of a run start from: give `shard` too (0/1 for one \
                 shard of all the chains)",
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// The description of a warm-up's state file, written beside it by a run with `warm_up_only`.
pub const WARM_UP_MANIFEST: &str = "warm-up.json";

/// The warm-up description's format written by this version.
const WARM_UP_FORMAT: u32 = 1;

/// What a warm-up (the whole run's chains up to the end of their burn-in) wrote beside its
/// state (`warm-up.json`): what made it, for a shard to check before it starts from it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WarmUpManifest {
    /// The format (1).
    pub format: u32,
    /// The command (`sample`, `augment`).
    pub command: String,
    /// The rmld version that wrote it.
    pub rmld_version: String,
    /// The build that wrote it (`crate::BUILD`; empty in files of rmld builds before it was
    /// recorded): shards or a warm-up of two builds, which may draw differently, are refused.
    #[serde(default)]
    pub rmld_build: String,
    /// xxh3-64 (hex) of the settings (`settings_hash`): every setting but the output folder,
    /// `force`, the shard and the warm-up's own.
    pub settings: String,
    /// The device that ran it (`device_key`): a shard on another kind of device would not
    /// continue its chains as the single run does.
    pub device: String,
    /// The seed.
    pub seed: u64,
    /// The chains of the whole run.
    pub chains: usize,
    /// The outer iteration the warm-up ended after (the burn-in).
    pub burn_in: u32,
    /// The state file's name.
    pub state_file: String,
    /// Its size and hash.
    pub state: FileEntry,
}

/// The hash a warm-up and its shards compare: `settings` serialised (their output folder,
/// shard and warm-up settings cleared by the caller).
pub fn settings_hash(settings: &impl Serialize) -> String {
    hex_hash(
        serde_json::to_string(settings)
            .unwrap_or_default()
            .as_bytes(),
    )
}

impl WarmUpManifest {
    /// The description of the warm-up whose state `state` (a file in `out`) was just written;
    /// written into `out` as [`WARM_UP_MANIFEST`].
    #[allow(clippy::too_many_arguments)]
    pub fn write(
        out: &Path,
        command: &str,
        (settings, device): (String, String),
        seed: u64,
        chains: usize,
        burn_in: u32,
        state: &str,
    ) -> Result<WarmUpManifest> {
        let path = out.join(state);
        let bytes = std::fs::read(&path).map_err(|e| Error::Output {
            path: path.clone(),
            source: e,
        })?;
        let entry = FileEntry {
            bytes: bytes.len() as u64,
            xxh3: hex_hash(&bytes),
        };
        let manifest = WarmUpManifest {
            format: WARM_UP_FORMAT,
            command: command.into(),
            rmld_version: env!("CARGO_PKG_VERSION").into(),
            rmld_build: crate::BUILD.into(),
            settings,
            device,
            seed,
            chains,
            burn_in,
            state_file: state.into(),
            state: entry,
        };
        super::write_json_atomic(&out.join(WARM_UP_MANIFEST), &manifest)?;
        Ok(manifest)
    }

    /// Reads the warm-up description in `dir` and checks that it is a warm-up of `command`
    /// made with the settings hashed as `settings` (errors naming the folder and what differs).
    pub fn read(dir: &Path, command: &str, settings: &str) -> Result<WarmUpManifest> {
        let path = dir.join(WARM_UP_MANIFEST);
        let text = std::fs::read(&path).map_err(|e| {
            Error::input(
                &path,
                format!(
                    "cannot read the warm-up's description ({e}): is {} the folder of a run \
                     with `warm_up_only`?",
                    dir.display()
                ),
            )
        })?;
        let manifest: WarmUpManifest = serde_json::from_slice(&text)
            .map_err(|e| Error::input(&path, format!("not a valid warm-up description: {e}")))?;
        if manifest.format != WARM_UP_FORMAT {
            return Err(Error::input(
                &path,
                format!(
                    "warm-up format {} (this rmld reads format {WARM_UP_FORMAT})",
                    manifest.format
                ),
            ));
        }
        if manifest.command != command {
            return Err(Error::input(
                &path,
                format!(
                    "is the warm-up of an `rmld {}` run, this is `rmld {command}`",
                    manifest.command
                ),
            ));
        }
        if manifest.rmld_build != crate::BUILD {
            return Err(Error::input(
                &path,
                format!(
                    "was written by {} and this shard runs build {} (`rmld --version`): another \
                     build may continue the chains differently, so the shards would not make the \
                     single run. Run the shards with the warm-up's build, or the warm-up again \
                     with this one",
                    crate::build_name(&manifest.rmld_build),
                    crate::BUILD
                ),
            ));
        }
        if manifest.settings != settings {
            return Err(Error::input(
                &path,
                "was made with other settings than this shard's (their hashes differ): a shard \
                 starts from the warm-up of its own run, made with the same settings (seed, \
                 chains, method, step size, burn-in, data, …) and no shard",
            ));
        }
        Ok(manifest)
    }

    /// Checks that the shard's device (`device`, `device_key`) is the warm-up's.
    pub fn check_device(&self, dir: &Path, device: &str) -> Result<()> {
        if self.device == device {
            return Ok(());
        }
        Err(Error::input(
            dir.join(WARM_UP_MANIFEST),
            format!(
                "the warm-up ran on {}, this shard runs on {device}: run the shards on the \
                 warm-up's kind of device (`backend`), or run the warm-up again on theirs",
                self.device
            ),
        ))
    }

    /// The warm-up's state file in `dir`, checked against this description.
    pub fn state_bytes(&self, dir: &Path) -> Result<Vec<u8>> {
        let (name, entry) = (&self.state_file, &self.state);
        if name.contains('/') || name.contains('\\') || name == ".." {
            return Err(Error::input(
                dir.join(WARM_UP_MANIFEST),
                format!("file name {name:?} in the warm-up's description"),
            ));
        }
        let path = dir.join(name);
        let bytes = std::fs::read(&path)
            .map_err(|e| Error::input(&path, format!("cannot read the warm-up's state ({e})")))?;
        if bytes.len() as u64 != entry.bytes || hex_hash(&bytes) != entry.xxh3 {
            return Err(Error::input(
                &path,
                format!(
                    "has {} bytes and hash {}, the warm-up's description says {} bytes and \
                     hash {} (truncated or changed since the warm-up wrote it: run the warm-up \
                     again)",
                    bytes.len(),
                    hex_hash(&bytes),
                    entry.bytes,
                    entry.xxh3
                ),
            ));
        }
        Ok(bytes)
    }
}

/// A shard read back for merging: its folder, manifest and files (checked against the manifest).
pub struct ShardFiles {
    /// The shard's folder.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
    /// Its files' bytes, by name.
    pub files: BTreeMap<String, Vec<u8>>,
}

impl ShardFiles {
    /// The bytes of the file `name` (an error naming the shard when the manifest lacks it).
    pub fn file(&self, name: &str) -> Result<&[u8]> {
        self.files.get(name).map(Vec::as_slice).ok_or_else(|| {
            Error::input(
                self.dir.join(name),
                format!(
                    "shard {} has no {name} in its manifest",
                    self.manifest.shard
                ),
            )
        })
    }

    /// The f32 NPY matrix `name`: its shape and values.
    pub fn npy_f32(&self, name: &str) -> Result<(Vec<usize>, Vec<f32>)> {
        self.file(name)?;
        super::read_npy_matrix_f32(&self.dir.join(name))
    }

    /// The f32 NPY matrix `name` of the shard's part of `total` rows of `width` values.
    pub fn rows(&self, name: &str, (total, width): (usize, usize)) -> Result<Vec<f32>> {
        let rows = self.manifest.shard.range(total).len();
        let (shape, values) = self.npy_f32(name)?;
        if shape != [rows, width] {
            return Err(Error::input(
                self.dir.join(name),
                format!(
                    "shard {}: shape {shape:?}, expected [{rows}, {width}]",
                    self.manifest.shard
                ),
            ));
        }
        Ok(values)
    }

    /// The JSON file `name`.
    pub fn json(&self, name: &str) -> Result<Value> {
        serde_json::from_slice(self.file(name)?).map_err(|e| {
            Error::input(
                self.dir.join(name),
                format!("shard {}: not valid JSON: {e}", self.manifest.shard),
            )
        })
    }
}

/// Reads a shard folder: its manifest, and every file it lists, each checked against the size
/// and hash the manifest recorded (a truncated or changed file is an error naming the shard).
fn read_shard(dir: &Path) -> Result<ShardFiles> {
    let path = dir.join(MANIFEST);
    if path.symlink_metadata().is_err() {
        return Err(Error::input(
            &path,
            format!(
                "cannot read the shard's manifest: is {} a shard's output folder?",
                dir.display()
            ),
        ));
    }
    let text = super::read_regular_file(&path, "shard manifest", MAX_MANIFEST_BYTES)?;
    let manifest: Manifest = serde_json::from_slice(&text)
        .map_err(|e| Error::input(&path, format!("not a valid shard manifest: {e}")))?;
    if manifest.format != MANIFEST_FORMAT {
        return Err(Error::input(
            &path,
            format!(
                "manifest format {} (this rmld reads format {MANIFEST_FORMAT})",
                manifest.format
            ),
        ));
    }
    manifest.shard.check().map_err(|_| {
        Error::input(
            &path,
            format!("invalid shard {} in the manifest", manifest.shard),
        )
    })?;
    let mut files = BTreeMap::new();
    for (name, entry) in &manifest.files {
        if name.contains('/') || name.contains('\\') || name == ".." {
            return Err(Error::input(
                &path,
                format!("file name {name:?} in the manifest"),
            ));
        }
        let file = dir.join(name);
        // No more than the manifest's size (one byte more shows a longer file).
        let what = format!("shard {}'s {name}", manifest.shard);
        let bytes = super::read_regular_file(&file, &what, entry.bytes)?;
        if bytes.len() as u64 != entry.bytes || hex_hash(&bytes) != entry.xxh3 {
            return Err(Error::input(
                &file,
                format!(
                    "shard {}: {name} has {} bytes and hash {}, its manifest says {} bytes and hash {} \
                     (truncated or changed since the shard wrote it: run shard {} again)",
                    manifest.shard,
                    bytes.len(),
                    hex_hash(&bytes),
                    entry.bytes,
                    entry.xxh3,
                    manifest.shard
                ),
            ));
        }
        files.insert(name.clone(), bytes);
    }
    Ok(ShardFiles {
        dir: dir.to_path_buf(),
        manifest,
        files,
    })
}

/// Reads the shard folders `dirs` and checks that they are the N shards of one run: one command,
/// configuration and seed, each index 0..N exactly once, parts that tile the work. Returns them
/// in index order.
pub fn read_shards(dirs: &[PathBuf]) -> Result<Vec<ShardFiles>> {
    if dirs.is_empty() {
        return Err(Error::usage("shards", "no shard folder to merge"));
    }
    let shards = dirs
        .iter()
        .map(|dir| read_shard(dir))
        .collect::<Result<Vec<_>>>()?;
    let first = &shards[0];
    let m0 = &first.manifest;
    for s in &shards[1..] {
        let m = &s.manifest;
        let differs = |what: &str, a: &dyn fmt::Display, b: &dyn fmt::Display| {
            Error::input(
                s.dir.join(MANIFEST),
                format!(
                    "shard {} ({}) has {what} {b}, shard {} ({}) has {a}: shards of different runs",
                    m.shard,
                    s.dir.display(),
                    m0.shard,
                    first.dir.display()
                ),
            )
        };
        if m.command != m0.command {
            return Err(differs("command", &m0.command, &m.command));
        }
        if m.rmld_build != m0.rmld_build {
            return Err(Error::input(
                s.dir.join(MANIFEST),
                format!(
                    "shard {} ({}) was written by {}, shard {} ({}) by {}: two builds may draw \
                     differently from one seed, so their shards do not make one run. Run every \
                     shard with one build",
                    m.shard,
                    s.dir.display(),
                    crate::build_name(&m.rmld_build),
                    m0.shard,
                    first.dir.display(),
                    crate::build_name(&m0.rmld_build)
                ),
            ));
        }
        if m.seed != m0.seed {
            return Err(differs("seed", &m0.seed, &m.seed));
        }
        if m.configuration != m0.configuration {
            return Err(differs(
                "configuration",
                &m0.configuration,
                &m.configuration,
            ));
        }
        if m.shard.count != m0.shard.count {
            return Err(differs("shard count", &m0.shard.count, &m.shard.count));
        }
        if m.part.total != m0.part.total || m.part.unit != m0.part.unit {
            return Err(differs("total", &m0.part.total, &m.part.total));
        }
    }
    let count = m0.shard.count as usize;
    let mut by_index: Vec<Option<usize>> = vec![None; count];
    for (k, s) in shards.iter().enumerate() {
        let index = s.manifest.shard.index as usize;
        if let Some(other) = by_index[index] {
            return Err(Error::input(
                &s.dir,
                format!(
                    "shard {} is given twice: {} and {}",
                    s.manifest.shard,
                    shards[other].dir.display(),
                    s.dir.display()
                ),
            ));
        }
        by_index[index] = Some(k);
    }
    let missing: Vec<String> = (0..count)
        .filter(|&i| by_index[i].is_none())
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(Error::usage(
            "shards",
            format!(
                "missing shard{} {} of the {count}: give every shard's folder",
                if missing.len() > 1 { "s" } else { "" },
                missing.join(", ")
            ),
        ));
    }
    let mut ordered: Vec<Option<ShardFiles>> = shards.into_iter().map(Some).collect();
    let shards: Vec<ShardFiles> = by_index
        .into_iter()
        .map(|k| ordered[k.unwrap_or_default()].take())
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| Error::Internal("shard order".into()))?;
    let mut at = 0;
    for s in &shards {
        let part = &s.manifest.part;
        let expected = s.manifest.shard.range(part.total);
        if part.start != at || part.start != expected.start || part.end != expected.end {
            return Err(Error::input(
                s.dir.join(MANIFEST),
                format!(
                    "shard {} covers {}..{} of {} {}, expected {}..{}",
                    s.manifest.shard,
                    part.start,
                    part.end,
                    part.total,
                    part.unit,
                    expected.start,
                    expected.end
                ),
            ));
        }
        at = part.end;
    }
    Ok(shards)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_checks() {
        assert_eq!(
            "2/4".parse::<Shard>().unwrap(),
            Shard { index: 2, count: 4 }
        );
        assert_eq!(
            " 0 / 1 ".parse::<Shard>().unwrap(),
            Shard { index: 0, count: 1 }
        );
        for bad in ["4/4", "0/0", "1", "a/2", "-1/3", "1/2/3", ""] {
            let e = bad.parse::<Shard>().unwrap_err();
            assert!(
                matches!(e, Error::Usage { field: "shard", .. }),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn ranges_tile_the_work() {
        for total in [0usize, 1, 5, 40, 1797] {
            for count in 1..=9u32 {
                let mut at = 0;
                for index in 0..count {
                    let r = Shard { index, count }.range(total);
                    assert_eq!(r.start, at);
                    at = r.end;
                }
                assert_eq!(at, total);
            }
        }
    }

    #[test]
    fn serialises_as_text() {
        let s = Shard { index: 1, count: 3 };
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"1/3\"");
        assert_eq!(serde_json::from_str::<Shard>("\"1/3\"").unwrap(), s);
        assert!(serde_json::from_str::<Shard>("\"3/3\"").is_err());
    }
}
