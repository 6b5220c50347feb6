//! Checkpoints: the complete state of a run (positions, counters, trace, configuration, hashes of
//! the data and the dictionary) in one checksummed file, written atomically and read strictly.
//!
//! Layout (version 10, as version 9 with the seconds the run's processes had run, after the
//! device; version 9, as version 8 with the rmld build that wrote it, `crate::BUILD`, and the
//! device that ran the chains, `io::shards::device_key`, after the identity; version 8, as
//! version 5 with the run's identity, `RunIdentity`, after the header;
//! version 5, as version 4, whose `--noise gibbs` runs are refused: their model changed; version 3 lacked the learned noise precision, its trace and the step size's
//! warm-up adaptation state, version 2 the prior's state and its non-finite counts): `RMLDCKPT`, version (u32 LE), header length (u32 LE), the header, the
//! sections, and an xxh3-64 checksum of everything before it. Header and sections are serde
//! structs encoded with `postcard` 1 (compact binary: varint lengths and integers). The
//! configuration, an arbitrary JSON value that postcard cannot self-describe, is kept as JSON
//! text in the header; each section is a serde byte string of its values' little-endian bytes,
//! which postcard writes as a length and a copy. Magic, version, lengths and checksum are checked
//! before anything is decoded; postcard refuses truncated or trailing bytes, serde caps what a
//! claimed sequence length preallocates, and every section's length is checked against the
//! header's dimensions before its values are copied out. Version 1 files (JSON header, raw
//! sections) are refused with a message saying so. A file is read only when it is a regular file
//! no longer than its header's dimensions allow.
//!
//! Speed (`benches/io_crates`, a 40 MB checkpoint of 1024 chains with a full trace, median of 21
//! runs on a loaded 2-core VM): encoding takes 34 ms (version 1: 34 ms), decoding 38 ms
//! (version 1: 42 ms). With the sections as serde sequences of numbers, one serde call per
//! value, encoding took 39 ms against version 1's 27 ms in an earlier run, hence the byte strings.

use std::borrow::Cow;
use std::path::Path;

use bytemuck::Pod;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use super::identity::RunIdentity;
use super::{SampleRun, Timings, PROJECTIONS};
use crate::io::{read_regular_file, write_atomic};
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"RMLDCKPT";
const VERSION: u32 = 5;
/// Version 6 is version 5 with the automatic burn-in's state after the header
/// (`BurnInMonitor`); only a run with an automatic burn-in writes it, so every other run's
/// checkpoint stays a version 5 file that older rmld builds read.
const AUTO_BURN_IN_VERSION: u32 = 6;
/// Version 7 is version 5 with the automatic burn-in's state (or none) and the per-class step
/// sizes' state (`ClassSteps`) after the header; only a run that adapts per class writes it.
const CLASS_STEPS_VERSION: u32 = 7;
/// Version 8 is version 7 (the automatic burn-in's and the per-class step sizes' states, or
/// none) with the run's identity after them: every sampling run writes it; a file without one
/// (a shard's trace) is written in the versions before.
const IDENTITY_VERSION: u32 = 8;
/// Version 9 is version 8 with the build that wrote the file (`crate::BUILD`) and the device
/// that ran the chains after the identity: every sampling run's checkpoint; `rmld resume`
/// refuses another build's, or a continuation on another device (either could draw
/// differently from the run so far). Version 8 files are still read, as written by no known
/// build on no known device.
const BUILD_VERSION: u32 = 9;
/// Version 10 is version 9 with the seconds the run's processes had run when the file was
/// written, so that a resumed run's report and summary count the whole run's time, not only
/// the last process's. Every sampling run's checkpoint; version 9 files read as 0 s.
const WALL_VERSION: u32 = 10;
/// Version 4 has version 5's layout; only its `--noise gibbs` runs had another model (the prior and
/// the moves were not in noise units), so a version 4 file is read when its noise is fixed.
const SAME_LAYOUT_VERSION: u32 = 4;
/// Headers larger than this are refused before reading them.
const MAX_HEADER_BYTES: usize = 1 << 24;

/// A saved run: everything `continue_run` needs to carry on bit for bit.
#[derive(Clone, Debug)]
pub struct Checkpoint {
    /// The configuration that made the run (the CLI's arguments), opaque here.
    pub config: serde_json::Value,
    /// xxh3-64 of the data the chains sample (see `hash_values`).
    pub data_hash: u64,
    /// xxh3-64 of the dictionary A.
    pub dictionary_hash: u64,
    /// Observation dimension d.
    pub d: usize,
    /// Code dimension p.
    pub p: usize,
    /// The chains' positions X after `run.completed` iterations, C × p.
    pub positions: Vec<f32>,
    /// The run so far.
    pub run: SampleRun,
    /// What makes the run this one (version 8; None in older files and in shards' traces).
    pub identity: Option<RunIdentity>,
    /// The build (`crate::BUILD`) that wrote the file, as read back (version 9; None in older
    /// files and in shards' traces). Writing ignores it: a file with an identity records the
    /// build that writes it.
    pub written_by: Option<String>,
    /// The device that ran the chains (`io::shards::device_key`: `cpu`, or a GPU's adapter and
    /// driver), written with the identity (version 9; None in older files and shards' traces).
    pub device: Option<String>,
    /// Seconds the run's processes had run when the file was written (version 10; None in
    /// older files and in shards' traces), written with the identity.
    pub wall_seconds: Option<f64>,
}

/// The run's scalars: dimensions, counters, hashes and the configuration (as JSON text).
#[derive(Serialize, Deserialize)]
struct Header {
    config_json: String,
    data_hash: u64,
    dictionary_hash: u64,
    chains: usize,
    d: usize,
    p: usize,
    completed: u32,
    trace_stride: u32,
    traced_iterations: usize,
    start_indices: Option<Vec<usize>>,
    timings: Timings,
    /// The step size's dual-averaging state (version 4), None for a run that does not adapt.
    adaptation: Option<super::StepAdaptation>,
}

/// The arrays, each as one serde byte string of its values' little-endian bytes: postcard writes
/// a length and copies the bytes, where a sequence would cost one serde call per value (see the
/// module doc for the numbers).
#[derive(Serialize)]
struct SectionsOut<'a> {
    positions: LeBytes<'a>,
    start_images: LeBytes<'a>,
    final_images: LeBytes<'a>,
    accepted: LeBytes<'a>,
    divergent: LeBytes<'a>,
    log_alpha: LeBytes<'a>,
    energies: LeBytes<'a>,
    projections: LeBytes<'a>,
    prior_nonfinite: LeBytes<'a>,
    prior_state: LeBytes<'a>,
    noise_precision: LeBytes<'a>,
    noise_trace: LeBytes<'a>,
}

/// The same fields read back, borrowed from the file's bytes (decoded after the length checks).
#[derive(Deserialize)]
struct SectionsIn<'a> {
    positions: &'a [u8],
    start_images: &'a [u8],
    final_images: &'a [u8],
    accepted: &'a [u8],
    divergent: &'a [u8],
    log_alpha: &'a [u8],
    energies: &'a [u8],
    projections: &'a [u8],
    prior_nonfinite: &'a [u8],
    prior_state: &'a [u8],
    noise_precision: &'a [u8],
    noise_trace: &'a [u8],
}

/// Numbers' little-endian bytes, serialized as a byte string (borrowed on little-endian machines).
struct LeBytes<'a>(Cow<'a, [u8]>);

impl<'a> LeBytes<'a> {
    fn of<T: Pod>(values: &'a [T]) -> Self {
        if cfg!(target_endian = "little") {
            LeBytes(Cow::Borrowed(bytemuck::cast_slice(values)))
        } else {
            let mut bytes = bytemuck::cast_slice::<T, u8>(values).to_vec();
            bytes
                .chunks_exact_mut(std::mem::size_of::<T>())
                .for_each(<[u8]>::reverse);
            LeBytes(Cow::Owned(bytes))
        }
    }
}

impl Serialize for LeBytes<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

/// The values of a byte string whose length was checked to be a whole number of them.
fn from_le_bytes<T: Pod>(bytes: &[u8]) -> Vec<T> {
    let mut values = vec![T::zeroed(); bytes.len() / std::mem::size_of::<T>()];
    let out: &mut [u8] = bytemuck::cast_slice_mut(&mut values);
    out.copy_from_slice(&bytes[..out.len()]);
    if cfg!(target_endian = "big") {
        out.chunks_exact_mut(std::mem::size_of::<T>())
            .for_each(<[u8]>::reverse);
    }
    values
}

/// Decodes one postcard value that must fill `bytes` exactly.
fn decode_exact<'a, T: Deserialize<'a>>(
    bytes: &'a [u8],
    what: &str,
) -> std::result::Result<T, String> {
    match postcard::take_from_bytes(bytes) {
        Ok((value, [])) => Ok(value),
        Ok((_, rest)) => Err(format!(
            "corrupt checkpoint {what}: {} bytes left over after it",
            rest.len()
        )),
        Err(e) => Err(format!("corrupt checkpoint {what}: {e}")),
    }
}

impl Checkpoint {
    /// The file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let run = &self.run;
        let chains = run.accepted.len();
        let header = Header {
            config_json: self.config.to_string(),
            data_hash: self.data_hash,
            dictionary_hash: self.dictionary_hash,
            chains,
            d: self.d,
            p: self.p,
            completed: run.completed,
            trace_stride: run.trace_stride,
            traced_iterations: run.energies.len() / chains.max(1),
            start_indices: run.start_indices.clone(),
            timings: run.timings.clone(),
            adaptation: run.adaptation,
        };
        let sections = SectionsOut {
            positions: LeBytes::of(&self.positions),
            start_images: LeBytes::of(&run.start_images),
            final_images: LeBytes::of(&run.final_images),
            accepted: LeBytes::of(&run.accepted),
            divergent: LeBytes::of(&run.divergent),
            log_alpha: LeBytes::of(&run.log_alpha),
            energies: LeBytes::of(&run.energies),
            projections: LeBytes::of(&run.projections),
            prior_nonfinite: LeBytes::of(&run.prior_nonfinite),
            prior_state: LeBytes::of(&run.prior_state),
            noise_precision: LeBytes::of(&run.noise_precision),
            noise_trace: LeBytes::of(&run.noise_trace),
        };
        // Serializing plain structs into a Vec cannot fail (no maps, no unknown lengths).
        let (version, header) = match (&run.burn_in, &run.class_steps) {
            (burn_in, class_steps) if self.identity.is_some() => (
                WALL_VERSION,
                postcard::to_allocvec(&(
                    &header,
                    burn_in,
                    class_steps,
                    &self.identity,
                    crate::BUILD,
                    self.device.as_deref().unwrap_or_default(),
                    self.wall_seconds.unwrap_or_default(),
                )),
            ),
            (burn_in, Some(c)) => (
                CLASS_STEPS_VERSION,
                postcard::to_allocvec(&(&header, burn_in, c)),
            ),
            (None, None) => (VERSION, postcard::to_allocvec(&header)),
            (Some(b), None) => (AUTO_BURN_IN_VERSION, postcard::to_allocvec(&(&header, b))),
        };
        let header = header.unwrap_or_default();
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
        out.extend_from_slice(&header);
        let out = postcard::to_extend(&sections, out).unwrap_or_default();
        let mut out = out;
        let checksum = xxh3_64(&out);
        out.extend_from_slice(&checksum.to_le_bytes());
        out
    }

    /// Writes the checkpoint atomically (a reader sees the previous checkpoint or this one).
    pub fn write(&self, path: &Path) -> Result<()> {
        let bytes = self.to_bytes();
        write_atomic(path, |w| w.write_all(&bytes))
    }

    /// Reads and validates a checkpoint file: a regular file, no longer than its header's
    /// dimensions allow (read no further).
    pub fn read(path: &Path) -> Result<Checkpoint> {
        let bound = length_bound(path)?;
        let bytes = read_regular_file(path, "checkpoint", bound)?;
        Self::from_bytes(&bytes).map_err(|message| Error::input(path, message))
    }

    /// Parses a checkpoint from its bytes; the error says what is wrong.
    pub fn from_bytes(bytes: &[u8]) -> std::result::Result<Checkpoint, String> {
        let (version, header_len) = check_frame(bytes)?;
        let body = &bytes[..bytes.len() - 8];
        let (header, sections) = body[FIXED..].split_at(header_len);
        let ((header, burn_in, class_steps, identity), stamp) = decode_header(version, header)?;
        let sections: SectionsIn = decode_exact(sections, "sections")?;
        let config: serde_json::Value = serde_json::from_str(&header.config_json)
            .map_err(|e| format!("corrupt checkpoint header: the configuration: {e}"))?;
        check_sections(version, &header, &sections)?;
        check_header(&header)?;
        if identity.as_ref().is_some_and(|i| i.chains != header.chains) {
            return Err("checkpoint header: its identity's chains differ from its own".into());
        }
        Ok(Checkpoint {
            config,
            data_hash: header.data_hash,
            dictionary_hash: header.dictionary_hash,
            d: header.d,
            p: header.p,
            positions: from_le_bytes(sections.positions),
            run: SampleRun {
                completed: header.completed,
                interrupted: false,
                trace_stride: header.trace_stride,
                final_images: from_le_bytes(sections.final_images),
                projections: from_le_bytes(sections.projections),
                start_images: from_le_bytes(sections.start_images),
                start_indices: header.start_indices,
                log_alpha: from_le_bytes(sections.log_alpha),
                energies: from_le_bytes(sections.energies),
                accepted: from_le_bytes(sections.accepted),
                divergent: from_le_bytes(sections.divergent),
                prior_nonfinite: from_le_bytes(sections.prior_nonfinite),
                prior_state: from_le_bytes(sections.prior_state),
                noise_precision: from_le_bytes(sections.noise_precision),
                noise_trace: from_le_bytes(sections.noise_trace),
                timings: header.timings,
                adaptation: header.adaptation,
                class_steps,
                burn_in,
            },
            identity,
            written_by: stamp.build,
            device: stamp.device,
            wall_seconds: stamp.wall_seconds,
        })
    }
}

/// The most bytes the checkpoint at `path` may have: its frame and header as they are, and
/// sections as large as the header's dimensions allow. A head that does not decode allows
/// itself and a checksum (reading it then says what is wrong).
fn length_bound(path: &Path) -> Result<u64> {
    use std::io::Read;
    let meta = std::fs::metadata(path)
        .map_err(|e| Error::input(path, format!("cannot read the checkpoint: {e}")))?;
    if !meta.is_file() {
        // Refused, with the kind of file named, without opening it.
        return read_regular_file(path, "checkpoint", 0).map(|_| 0);
    }
    let mut file = std::fs::File::open(path)
        .map_err(|e| Error::input(path, format!("cannot open the checkpoint: {e}")))?;
    let mut head = vec![0u8; FIXED];
    let head_bound = (FIXED + 8) as u64;
    if file.read_exact(&mut head).is_err() {
        return Ok(meta.len().min(head_bound));
    }
    let version = u32::from_le_bytes(head[8..12].try_into().unwrap_or_default());
    if &head[..8] != MAGIC || !KNOWN_VERSIONS.contains(&version) {
        // Not a checkpoint, or one of another version: said from the head alone, whatever the
        // file's length.
        let mut probe = head;
        probe.extend_from_slice(&[0; 8]);
        let message = check_frame(&probe).err().unwrap_or_default();
        return Err(Error::input(path, message));
    }
    let header_len = u32::from_le_bytes(head[12..16].try_into().unwrap_or_default()) as usize;
    if header_len > MAX_HEADER_BYTES {
        return Ok(head_bound);
    }
    let mut header = vec![0u8; header_len];
    let fixed = (FIXED + header_len + 8) as u64;
    if file.read_exact(&mut header).is_err() {
        return Ok(fixed);
    }
    Ok(match decode_header(version, &header) {
        Ok(((h, ..), ..)) => sections_bound(&h).map_or(u64::MAX, |s| s.saturating_add(fixed)),
        Err(_) => fixed,
    })
}

/// The most bytes the sections of a checkpoint with `header`'s dimensions take (each section
/// at its largest, with postcard's length prefix); None on overflow.
fn sections_bound(header: &Header) -> Option<u64> {
    let (c, d, p, t) = (
        header.chains as u64,
        header.d as u64,
        header.p as u64,
        header.traced_iterations as u64,
    );
    let per_chain = p
        .checked_add(d.checked_mul(2)?)?
        .checked_add(5)?
        .checked_add(p.checked_mul(3)?.checked_add(2)?)?;
    let per_traced = 2 + 1 + PROJECTIONS as u64 + 1;
    let values = c
        .checked_mul(per_chain)?
        .checked_add(t.checked_mul(c)?.checked_mul(per_traced)?)?;
    values.checked_mul(4)?.checked_add(12 * 10)
}

/// The versions this rmld reads.
const KNOWN_VERSIONS: [u32; 7] = [
    VERSION,
    SAME_LAYOUT_VERSION,
    AUTO_BURN_IN_VERSION,
    CLASS_STEPS_VERSION,
    IDENTITY_VERSION,
    BUILD_VERSION,
    WALL_VERSION,
];

/// Bytes before the header: the magic, the version and the header's length.
const FIXED: usize = MAGIC.len() + 8;

/// Checks the frame around header and sections (length, magic, a version this rmld reads, the
/// header's length, the checksum); returns the version and the header's length.
fn check_frame(bytes: &[u8]) -> std::result::Result<(u32, usize), String> {
    if bytes.len() < FIXED + 8 {
        return Err(format!(
            "not an rmld checkpoint: {} bytes, too short for its header",
            bytes.len()
        ));
    }
    if &bytes[..8] != MAGIC {
        return Err("not an rmld checkpoint: the file does not start with RMLDCKPT".into());
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap_or_default());
    if !KNOWN_VERSIONS.contains(&version) {
        let hint = if version == 3 {
            " (written by an rmld before the learned noise precision and the step size's \
             warm-up adaptation were saved: start the run afresh)"
        } else if version == 2 {
            " (written by an rmld before the ssgl prior's state was saved: start the run \
             afresh)"
        } else if version < WALL_VERSION {
            " (written by an older rmld: start the run afresh)"
        } else {
            " (written by a newer rmld)"
        };
        return Err(format!(
            "checkpoint version {version}, this rmld reads versions 4 to \
             {WALL_VERSION}{hint}"
        ));
    }
    let header_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap_or_default()) as usize;
    if header_len > MAX_HEADER_BYTES || FIXED + header_len + 8 > bytes.len() {
        return Err(format!(
            "truncated checkpoint: the header claims {header_len} bytes, the file has {}",
            bytes.len()
        ));
    }
    let (body, checksum) = bytes.split_at(bytes.len() - 8);
    if xxh3_64(body) != u64::from_le_bytes(checksum.try_into().unwrap_or_default()) {
        return Err(
            "corrupt checkpoint: the checksum does not match (truncated or modified file)".into(),
        );
    }
    Ok((version, header_len))
}

/// A header with what may follow it: the automatic burn-in's state, the per-class step sizes'
/// and the run's identity.
type FullHeader = (
    Header,
    Option<super::BurnInMonitor>,
    Option<super::ClassSteps>,
    Option<RunIdentity>,
);

/// What a file records of where it came from: the build that wrote it and the device that ran
/// the chains (version 9 on), and the seconds the run's processes had run (version 10).
#[derive(Default)]
struct Stamp {
    build: Option<String>,
    device: Option<String>,
    wall_seconds: Option<f64>,
}

/// The header of a file of `version`, with the automatic burn-in's state (version 6, and
/// optionally 7 to 10), the per-class step sizes' (version 7, optionally 8 to 10), the run's
/// identity (versions 8 to 10), and its `Stamp` after it.
fn decode_header(version: u32, header: &[u8]) -> std::result::Result<(FullHeader, Stamp), String> {
    type WithClassSteps = (Header, Option<super::BurnInMonitor>, super::ClassSteps);
    type WithBuild = (
        Header,
        Option<super::BurnInMonitor>,
        Option<super::ClassSteps>,
        Option<RunIdentity>,
        String,
        String,
    );
    let without_identity = |version: u32| {
        format!("corrupt checkpoint header: a version {version} file without its identity")
    };
    let unstamped = Stamp::default;
    let (full, stamp): (FullHeader, Stamp) = match version {
        AUTO_BURN_IN_VERSION => {
            let (header, burn_in): (Header, super::BurnInMonitor) = decode_exact(header, "header")?;
            ((header, Some(burn_in), None, None), unstamped())
        }
        CLASS_STEPS_VERSION => {
            let (header, burn_in, steps): WithClassSteps = decode_exact(header, "header")?;
            ((header, burn_in, Some(steps), None), unstamped())
        }
        IDENTITY_VERSION => (decode_exact(header, "header")?, unstamped()),
        BUILD_VERSION | WALL_VERSION => {
            // Version 10 appends the seconds (postcard writes a tuple as its fields in turn).
            let ((header, burn_in, steps, identity, build, device), wall) = match version {
                WALL_VERSION => {
                    let (stamped, wall): (WithBuild, f64) = decode_exact(header, "header")?;
                    (stamped, Some(wall))
                }
                _ => (decode_exact::<WithBuild>(header, "header")?, None),
            };
            if let Some(wall) = wall.filter(|w| !(w.is_finite() && *w >= 0.0)) {
                return Err(format!("corrupt checkpoint header: {wall} seconds of run"));
            }
            let stamp = Stamp {
                build: Some(build),
                device: Some(device),
                wall_seconds: wall,
            };
            ((header, burn_in, steps, identity), stamp)
        }
        _ => (
            (decode_exact::<Header>(header, "header")?, None, None, None),
            unstamped(),
        ),
    };
    if version >= IDENTITY_VERSION && full.3.is_none() {
        return Err(without_identity(version));
    }
    Ok((full, stamp))
}

/// Checks every section's length against the header's dimensions before any value is copied.
fn check_sections(
    version: u32,
    header: &Header,
    sections: &SectionsIn,
) -> std::result::Result<(), String> {
    let (chains, d, p) = (header.chains, header.d, header.p);
    let traced = header.traced_iterations;
    let s = sections;
    let expected = [
        ("positions", s.positions, 4, chains.checked_mul(p)),
        ("start images", s.start_images, 4, chains.checked_mul(d)),
        ("final images", s.final_images, 4, chains.checked_mul(d)),
        ("accepted counts", s.accepted, 4, Some(chains)),
        ("divergent counts", s.divergent, 4, Some(chains)),
        ("log α trace", s.log_alpha, 8, traced.checked_mul(chains)),
        ("energy trace", s.energies, 4, traced.checked_mul(chains)),
        (
            "projection trace",
            s.projections,
            4,
            traced
                .checked_mul(chains)
                .and_then(|t| t.checked_mul(PROJECTIONS)),
        ),
    ];
    check_chain_state(version, header, sections)?;
    for (what, bytes, size, implied) in expected {
        if bytes.len() % size != 0 {
            return Err(format!(
                "checkpoint sections: the {what} are {} bytes, not a whole number of \
                 {size}-byte values",
                bytes.len()
            ));
        }
        let found = bytes.len() / size;
        if Some(found) != implied {
            return Err(format!(
                "checkpoint sections: the {what} hold {found} values, the header's dimensions \
                 (chains {chains}, d {d}, p {p}, traced iterations {traced}) imply {implied:?}"
            ));
        }
    }
    Ok(())
}

/// Checks the sections of the per-chain state besides the positions: the prior's state and
/// non-finite counts, the learned noise precision and its trace.
fn check_chain_state(
    version: u32,
    header: &Header,
    sections: &SectionsIn,
) -> std::result::Result<(), String> {
    let (chains, p, traced) = (header.chains, header.p, header.traced_iterations);
    // The prior's state: empty (Laplace) or SSGL's 3p + 2 values per chain; its counts: none
    // or one per chain.
    let state_values = sections.prior_state.len() / 4;
    let state_width = p.checked_mul(3).and_then(|w| w.checked_add(2));
    if !sections.prior_state.len().is_multiple_of(4)
        || state_values != 0
            && Some(state_values) != state_width.and_then(|w| w.checked_mul(chains))
    {
        return Err(format!(
            "checkpoint sections: the prior state is {} bytes, neither empty nor 3p + 2 \
             floats per chain (chains {chains}, p {p})",
            sections.prior_state.len()
        ));
    }
    // The learned noise precision (`--noise gibbs`): none, or one f32 per chain and its
    // trace one per chain and traced iteration.
    let (tau, tau_trace) = (sections.noise_precision.len(), sections.noise_trace.len());
    if version == SAME_LAYOUT_VERSION && tau > 0 {
        return Err(format!(
            "checkpoint version {version} of a --noise gibbs run, this rmld reads version                  {VERSION} (written by an rmld whose --noise gibbs prior and moves were not in                  noise units: start the run afresh)"
        ));
    }
    if tau != 0 && tau != chains.saturating_mul(4)
        || (tau == 0) != (tau_trace == 0) && traced > 0
        || tau_trace != 0 && Some(tau_trace) != traced.checked_mul(chains * 4)
    {
        return Err(format!(
            "checkpoint sections: the noise precision is {tau} bytes and its trace \
             {tau_trace}, neither empty nor one f32 per chain ({chains}) and per chain and \
             traced iteration ({traced})"
        ));
    }
    let counts = sections.prior_nonfinite.len();
    if counts != 0 && counts != chains.saturating_mul(4) {
        return Err(format!(
            "checkpoint sections: the prior's non-finite counts are {counts} bytes, neither \
             empty nor one u32 per chain ({chains})"
        ));
    }
    Ok(())
}

/// Checks the header's trace counters and start indices.
fn check_header(header: &Header) -> std::result::Result<(), String> {
    if header.trace_stride == 0 || header.completed == 0 && header.traced_iterations > 0 {
        return Err("checkpoint header: inconsistent trace".into());
    }
    if header
        .start_indices
        .as_ref()
        .is_some_and(|v| v.len() != header.chains)
    {
        return Err("checkpoint header: start_indices does not have one entry per chain".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Checkpoint {
        let (chains, d, p, traced) = (2, 3, 4, 2);
        let ramp = |n: usize, k: f32| (0..n).map(|i| i as f32 * k - 1.5).collect::<Vec<_>>();
        Checkpoint {
            config: serde_json::json!({"chains": chains, "step": 0.1, "name": "x"}),
            data_hash: 0x0123_4567_89ab_cdef,
            dictionary_hash: u64::MAX,
            d,
            p,
            positions: ramp(chains * p, 0.25),
            run: SampleRun {
                completed: 5,
                interrupted: false,
                trace_stride: 2,
                final_images: ramp(chains * d, 0.5),
                projections: ramp(traced * chains * PROJECTIONS, 0.125),
                start_images: ramp(chains * d, -0.5),
                start_indices: Some(vec![7, 3]),
                log_alpha: vec![-0.5, f64::NEG_INFINITY, 0.0, -1e-300],
                energies: ramp(traced * chains, 3.0),
                accepted: vec![4, 1],
                divergent: vec![0, 2],
                prior_nonfinite: vec![1, 0],
                prior_state: ramp(chains * (3 * p + 2), 0.75),
                noise_precision: vec![0.5, 2.0],
                noise_trace: ramp(traced * chains, 0.0625),
                timings: Timings {
                    init_seconds: 0.5,
                    sampling_seconds: 2.25,
                    host_mh_seconds: 0.125,
                    adaptation_seconds: 0.0,
                },
                adaptation: Some(super::super::StepAdaptation::with_trajectory(
                    0.25,
                    3,
                    super::super::Adaptation {
                        iterations: 4,
                        target: 0.8,
                        chees: true,
                        per_class: false,
                    },
                )),
                burn_in: None,
                class_steps: None,
            },
            identity: None,
            written_by: None,
            device: None,
            wall_seconds: None,
        }
    }

    /// A file made of `body` with a valid checksum appended.
    fn seal(mut body: Vec<u8>) -> Vec<u8> {
        let checksum = xxh3_64(&body);
        body.extend_from_slice(&checksum.to_le_bytes());
        body
    }

    #[test]
    fn round_trips_bit_for_bit() {
        let c = sample();
        let bytes = c.to_bytes();
        let back = Checkpoint::from_bytes(&bytes).unwrap();
        assert_eq!(back.to_bytes(), bytes);
        assert_eq!(back.config, c.config);
        assert_eq!(back.positions, c.positions);
        assert_eq!(back.run.log_alpha[1], f64::NEG_INFINITY);
        assert_eq!(back.run.start_indices, c.run.start_indices);
        assert_eq!(back.run.timings.sampling_seconds, 2.25);
        assert_eq!(back.run.adaptation, c.run.adaptation);
    }

    #[test]
    fn an_automatic_burn_in_travels_in_a_version_6_file_and_others_stay_version_5() {
        let mut c = sample();
        let plain = c.to_bytes();
        assert_eq!(u32::from_le_bytes(plain[8..12].try_into().unwrap()), 5);
        let mut monitor = super::super::BurnInMonitor::new(super::super::AutoBurnIn { cap: 40 });
        monitor.record(Some(0.1), None);
        c.run.burn_in = Some(monitor);
        let bytes = c.to_bytes();
        assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 6);
        let back = Checkpoint::from_bytes(&bytes).unwrap();
        assert_eq!(back.run.burn_in, c.run.burn_in);
        assert_eq!(Checkpoint::from_bytes(&plain).unwrap().run.burn_in, None);
    }

    #[test]
    fn per_class_steps_travel_in_a_version_7_file() {
        let mut c = sample();
        let adaptation = super::super::Adaptation {
            iterations: 4,
            target: 0.574,
            chees: false,
            per_class: true,
        };
        let mut steps = super::super::ClassSteps::new(2, 0.3, adaptation);
        let mut pooled = super::super::StepAdaptation::new(0.3, adaptation);
        steps.observe(&mut pooled, &[-0.1, -2.0], &[0, 1]);
        c.run.class_steps = Some(steps);
        for burn_in in [
            None,
            Some(super::super::BurnInMonitor::new(super::super::AutoBurnIn {
                cap: 8,
            })),
        ] {
            c.run.burn_in = burn_in;
            let bytes = c.to_bytes();
            assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 7);
            let back = Checkpoint::from_bytes(&bytes).unwrap();
            assert_eq!(back.run.class_steps, c.run.class_steps);
            assert_eq!(back.run.burn_in, c.run.burn_in);
        }
    }

    #[test]
    fn a_checkpoint_with_an_identity_records_the_build_that_wrote_it() {
        let mut c = sample();
        c.identity = Some(RunIdentity {
            run_id: "r".into(),
            configuration: 7,
            seed: 3,
            chains: 2,
            samples: 9,
            streams: Vec::new(),
        });
        c.written_by = Some("not this build".into());
        c.device = Some("gpu: some adapter".into());
        c.wall_seconds = Some(12.5);
        let bytes = c.to_bytes();
        assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 10);
        let back = Checkpoint::from_bytes(&bytes).unwrap();
        assert_eq!(back.written_by.as_deref(), Some(crate::BUILD));
        assert_eq!((&back.device, back.wall_seconds), (&c.device, Some(12.5)));
        assert_eq!(back.identity, c.identity);
        for wall in [-1.0, f64::NAN] {
            let bad = Checkpoint {
                wall_seconds: Some(wall),
                ..c.clone()
            };
            let err = Checkpoint::from_bytes(&bad.to_bytes()).unwrap_err();
            assert!(err.contains("seconds of run"), "{err}");
        }
        // Version 9 (no seconds) and version 8 (nor the build and device) files still read.
        let (header, burn_in, steps, identity, build, device, _): (
            Header,
            Option<super::super::BurnInMonitor>,
            Option<super::super::ClassSteps>,
            Option<RunIdentity>,
            String,
            String,
            f64,
        ) = postcard::from_bytes(&bytes[FIXED..FIXED + header_len(&bytes)]).unwrap();
        let as_version = |version: u32, old_header: Vec<u8>| {
            let mut old = MAGIC.to_vec();
            old.extend_from_slice(&version.to_le_bytes());
            old.extend_from_slice(&(old_header.len() as u32).to_le_bytes());
            old.extend_from_slice(&old_header);
            old.extend_from_slice(&bytes[FIXED + header_len(&bytes)..bytes.len() - 8]);
            Checkpoint::from_bytes(&seal(old)).unwrap()
        };
        let nine = (&header, &burn_in, &steps, &identity, &build, &device);
        let nine = as_version(9, postcard::to_allocvec(&nine).unwrap());
        assert_eq!(nine.written_by.as_deref(), Some(crate::BUILD));
        assert_eq!((&nine.device, nine.wall_seconds), (&c.device, None));
        let eight = (&header, &burn_in, &steps, &identity);
        let old = as_version(8, postcard::to_allocvec(&eight).unwrap());
        assert_eq!((old.written_by, old.device), (None, None));
        assert_eq!(old.identity, c.identity);
        assert_eq!(old.positions, c.positions);
    }

    /// The header length a checkpoint's frame gives.
    fn header_len(bytes: &[u8]) -> usize {
        u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize
    }

    #[test]
    fn old_and_foreign_versions_are_refused_by_name() {
        let mut bytes = sample().to_bytes();
        bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
        let err = Checkpoint::from_bytes(&seal(bytes[..bytes.len() - 8].to_vec())).unwrap_err();
        assert!(err.contains("version 1") && err.contains("older"), "{err}");
        bytes[8..12].copy_from_slice(&11u32.to_le_bytes());
        let err = Checkpoint::from_bytes(&bytes).unwrap_err();
        assert!(err.contains("version 11") && err.contains("newer"), "{err}");
        let err = Checkpoint::from_bytes(b"\x93NUMPY\x01\x00v\x00{'descr': '<f4'}").unwrap_err();
        assert!(err.contains("RMLDCKPT"), "{err}");
    }

    #[test]
    fn version_4_is_read_for_fixed_noise_and_refused_for_gibbs() {
        let as_version_4 = |checkpoint: &Checkpoint| {
            let bytes = checkpoint.to_bytes();
            let mut body = bytes[..bytes.len() - 8].to_vec();
            body[8..12].copy_from_slice(&4u32.to_le_bytes());
            seal(body)
        };
        let gibbs = sample();
        assert!(!gibbs.run.noise_precision.is_empty());
        let err = Checkpoint::from_bytes(&as_version_4(&gibbs)).unwrap_err();
        assert!(
            err.contains("version 4") && err.contains("--noise gibbs"),
            "{err}"
        );
        let mut fixed = sample();
        fixed.run.noise_precision.clear();
        fixed.run.noise_trace.clear();
        let read = Checkpoint::from_bytes(&as_version_4(&fixed)).expect("a fixed-noise version 4");
        assert_eq!(read.positions, fixed.positions);
    }

    #[test]
    fn hostile_payloads_with_valid_checksums_are_refused_without_panic() {
        let bytes = sample().to_bytes();
        let body = &bytes[..bytes.len() - 8];
        let header_len = u32::from_le_bytes(body[12..16].try_into().unwrap()) as usize;
        // Every single-byte change of the payload, resealed: an error or a consistent checkpoint.
        for at in 16..body.len() {
            for value in [0x00, 0x01, 0x7f, 0x80, 0xff] {
                let mut bad = body.to_vec();
                bad[at] = value;
                if let Ok(c) = Checkpoint::from_bytes(&seal(bad)) {
                    assert_eq!(c.positions.len(), c.run.accepted.len() * c.p);
                }
            }
        }
        // Every truncation of the payload, resealed; and trailing bytes.
        for cut in 16..body.len() {
            assert!(Checkpoint::from_bytes(&seal(body[..cut].to_vec())).is_err());
        }
        let mut long = body.to_vec();
        long.push(0);
        let err = Checkpoint::from_bytes(&seal(long)).unwrap_err();
        assert!(err.contains("left over"), "{err}");
        // A sequence claiming 2^62 elements allocates nothing absurd: it runs out of bytes.
        let mut huge = body[..16 + header_len].to_vec();
        huge.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x3f]);
        huge.extend_from_slice(&[0; 64]);
        assert!(Checkpoint::from_bytes(&seal(huge)).is_err());
    }

    #[test]
    fn sections_must_match_the_header() {
        let mut c = sample();
        c.positions.pop();
        let err = Checkpoint::from_bytes(&c.to_bytes()).unwrap_err();
        assert!(err.contains("positions hold 7 values"), "{err}");
    }
}
