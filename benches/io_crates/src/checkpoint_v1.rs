//! rmld's checkpoint format version 1 (JSON header + raw sections), copied from the commit before
//! the postcard change, to time it against version 2 in the same process.

use rmld::orchestrator::{Checkpoint, SampleRun, Timings, PROJECTIONS};
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

const MAGIC: &[u8; 8] = b"RMLDCKPT";
const VERSION: u32 = 1;
const MAX_HEADER_BYTES: usize = 1 << 24;

#[derive(Serialize, Deserialize)]
struct Header {
    config: serde_json::Value,
    data_hash: String,
    dictionary_hash: String,
    chains: usize,
    d: usize,
    p: usize,
    completed: u32,
    trace_stride: u32,
    traced_iterations: usize,
    start_indices: Option<Vec<usize>>,
    timings: Timings,
}

fn section_lengths(h: &Header) -> Option<[usize; 8]> {
    let cp = h.chains.checked_mul(h.p)?;
    let cd = h.chains.checked_mul(h.d)?;
    let tc = h.traced_iterations.checked_mul(h.chains)?;
    // Byte lengths: positions, start images, final images, accepted, divergent, log α, energies, projections.
    Some([
        cp.checked_mul(4)?,
        cd.checked_mul(4)?,
        cd.checked_mul(4)?,
        h.chains.checked_mul(4)?,
        h.chains.checked_mul(4)?,
        tc.checked_mul(8)?,
        tc.checked_mul(4)?,
        tc.checked_mul(PROJECTIONS * 4)?,
    ])
}

fn f32_bytes(v: &[f32]) -> impl Iterator<Item = u8> + '_ {
    v.iter().flat_map(|x| x.to_le_bytes())
}

/// The version-1 format (JSON header, raw little-endian sections), as rmld wrote it before
/// postcard: kept here only to time it against version 2.
pub struct V1;

impl V1 {
    /// The file's bytes.
    pub fn to_bytes(c: &Checkpoint) -> Vec<u8> {
        let run = &c.run;
        let chains = run.accepted.len();
        let header = Header {
            config: c.config.clone(),
            data_hash: format!("{:016x}", c.data_hash),
            dictionary_hash: format!("{:016x}", c.dictionary_hash),
            chains,
            d: c.d,
            p: c.p,
            completed: run.completed,
            trace_stride: run.trace_stride,
            traced_iterations: run.energies.len() / chains.max(1),
            start_indices: run.start_indices.clone(),
            timings: run.timings.clone(),
        };
        let json = serde_json::to_vec(&header).unwrap_or_default();
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(json.len() as u32).to_le_bytes());
        out.extend_from_slice(&json);
        out.extend(f32_bytes(&c.positions));
        out.extend(f32_bytes(&run.start_images));
        out.extend(f32_bytes(&run.final_images));
        out.extend(run.accepted.iter().flat_map(|x| x.to_le_bytes()));
        out.extend(run.divergent.iter().flat_map(|x| x.to_le_bytes()));
        out.extend(run.log_alpha.iter().flat_map(|x| x.to_le_bytes()));
        out.extend(f32_bytes(&run.energies));
        out.extend(f32_bytes(&run.projections));
        let checksum = xxh3_64(&out);
        out.extend_from_slice(&checksum.to_le_bytes());
        out
    }

    /// Parses a checkpoint from its bytes; the error says what is wrong.
    pub fn from_bytes(bytes: &[u8]) -> std::result::Result<Checkpoint, String> {
        let fixed = MAGIC.len() + 8;
        if bytes.len() < fixed + 8 {
            return Err(format!(
                "not an rmld checkpoint: {} bytes, too short for its header",
                bytes.len()
            ));
        }
        if &bytes[..8] != MAGIC {
            return Err("not an rmld checkpoint: the file does not start with RMLDCKPT".into());
        }
        let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap_or_default());
        if version != VERSION {
            return Err(format!(
                "checkpoint version {version}, this rmld reads version {VERSION}"
            ));
        }
        let header_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap_or_default()) as usize;
        if header_len > MAX_HEADER_BYTES || fixed + header_len + 8 > bytes.len() {
            return Err(format!(
                "truncated checkpoint: the header claims {header_len} bytes, the file has {}",
                bytes.len()
            ));
        }
        let (body, checksum) = bytes.split_at(bytes.len() - 8);
        if xxh3_64(body) != u64::from_le_bytes(checksum.try_into().unwrap_or_default()) {
            return Err(
                "corrupt checkpoint: the checksum does not match (truncated or modified file)"
                    .into(),
            );
        }
        let header: Header = serde_json::from_slice(&body[fixed..fixed + header_len])
            .map_err(|e| format!("corrupt checkpoint header: {e}"))?;
        let lengths = section_lengths(&header).ok_or("checkpoint header: sizes overflow")?;
        let total = lengths
            .iter()
            .try_fold(fixed + header_len, |acc, &l| acc.checked_add(l));
        if total != Some(body.len()) {
            return Err(format!(
                "checkpoint sections hold {} bytes, the header implies {total:?}",
                body.len() - fixed - header_len
            ));
        }
        if header.trace_stride == 0 || header.completed == 0 && header.traced_iterations > 0 {
            return Err("checkpoint header: inconsistent trace".into());
        }
        if header
            .start_indices
            .as_ref()
            .is_some_and(|v| v.len() != header.chains)
        {
            return Err(
                "checkpoint header: start_indices does not have one entry per chain".into(),
            );
        }
        let parse_hash = |s: &str| {
            u64::from_str_radix(s, 16).map_err(|_| format!("checkpoint header: bad hash {s:?}"))
        };
        let mut at = fixed + header_len;
        let mut take = |len: usize| {
            let s = &body[at..at + len];
            at += len;
            s
        };
        let f32s = |s: &[u8]| {
            s.chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect::<Vec<_>>()
        };
        let u32s = |s: &[u8]| {
            s.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect::<Vec<_>>()
        };
        let positions = f32s(take(lengths[0]));
        let start_images = f32s(take(lengths[1]));
        let final_images = f32s(take(lengths[2]));
        let accepted = u32s(take(lengths[3]));
        let divergent = u32s(take(lengths[4]));
        let log_alpha = take(lengths[5])
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap_or_default()))
            .collect();
        let energies = f32s(take(lengths[6]));
        let projections = f32s(take(lengths[7]));
        Ok(Checkpoint {
            config: header.config,
            data_hash: parse_hash(&header.data_hash)?,
            dictionary_hash: parse_hash(&header.dictionary_hash)?,
            d: header.d,
            p: header.p,
            positions,
            run: SampleRun {
                completed: header.completed,
                interrupted: false,
                trace_stride: header.trace_stride,
                final_images,
                projections,
                start_images,
                start_indices: header.start_indices,
                log_alpha,
                energies,
                accepted,
                divergent,
                timings: header.timings,
            },
        })
    }
}
