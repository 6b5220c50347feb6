//! A time-boxed mutation fuzzer over every reader, run in CI on stable Rust: valid seed files
//! (raw and gzip'd) are mutated (bit flips, interesting values, truncation, insertion,
//! duplication, and mutation beneath the gzip layer) and fed to the readers, which must never
//! panic. Budget: RMLD_FUZZ_SECONDS per reader (default 4). Longer runs: `fuzz/` (cargo fuzz).

mod common;

use std::io::{Read, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use flate2::{read::GzDecoder, write::GzEncoder, Compression};
use rand::{Rng, SeedableRng};
use rmld::fuzzing::{feed, Reader};
use rmld::io::{self, Pixels};

fn file_bytes(write: impl FnOnce(&std::path::Path)) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seed");
    write(&path);
    std::fs::read(&path).unwrap()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn seeds(reader: Reader) -> Vec<Vec<u8>> {
    let pixels: Vec<u8> = (0..3 * 4 * 5).map(|i| (i * 37 % 256) as u8).collect();
    let idx_images = file_bytes(|p| io::write_idx_images(p, 3, 4, 5, &pixels).unwrap());
    let idx_labels = file_bytes(|p| io::write_idx_labels(p, &[1, 2, 3]).unwrap());
    let npy_u8 = file_bytes(|p| io::write_npy_u8(p, &[3, 20], &pixels).unwrap());
    let npy_f32 = file_bytes(|p| {
        io::write_npy_f32(
            p,
            &[3, 4, 5],
            &pixels.iter().map(|&v| v as f32 / 255.0).collect::<Vec<_>>(),
        )
        .unwrap()
    });
    let csv = file_bytes(|p| {
        io::write_csv(p, 4, &Pixels::U8(vec![0, 5, 16, 3, 7, 1, 0, 2]), &[4, 9]).unwrap()
    });
    let mut all = match reader {
        Reader::IdxImages => vec![idx_images],
        Reader::IdxLabels => vec![idx_labels],
        Reader::Npy => vec![npy_u8, npy_f32],
        Reader::Csv => vec![csv, digits_head()],
        Reader::Dataset => vec![idx_images, npy_u8, csv],
        Reader::Checkpoint => vec![checkpoint_seed()],
    };
    // Every data reader also takes gzip'd files (checkpoints are never compressed).
    if reader != Reader::Checkpoint {
        let zipped: Vec<Vec<u8>> = all
            .iter()
            .filter(|s| s[..2] != [0x1f, 0x8b])
            .map(|s| gzip(s))
            .collect();
        all.extend(zipped);
    }
    all
}

/// The first 20 rows of the embedded optdigits CSV.
fn digits_head() -> Vec<u8> {
    let mut text = String::new();
    GzDecoder::new(&include_bytes!("../assets/digits.csv.gz")[..])
        .read_to_string(&mut text)
        .unwrap();
    text.lines()
        .take(20)
        .flat_map(|l| l.bytes().chain([b'\n']))
        .collect()
}

fn checkpoint_seed() -> Vec<u8> {
    use rmld::backend::cpu::CpuBackend;
    use rmld::orchestrator::{self, Checkpoint, Init, SamplerSettings};
    let target = common::small_target(10, 4, 8, 0.1, 1);
    let s = SamplerSettings {
        chains: 2,
        samples: 2,
        dynamics: common::dynamics(0.01, 2, 2, 1),
        mh: true,
        discount: 1.0,
        init: Init::Noise,
        lasso_iterations: 1,
        adapt: None,
        auto_burn_in: None,
    };
    let mut backend = CpuBackend::new(target.clone(), s.dynamics.clone(), 2);
    let mut sink = orchestrator::MemorySink::default();
    let run = orchestrator::run(&mut backend, &target, &s, &mut sink, &mut |_| {}).unwrap();
    Checkpoint {
        config: serde_json::json!({"seed": 1}),
        data_hash: 3,
        dictionary_hash: 4,
        d: 4,
        p: 8,
        positions: sink.codes[16..].to_vec(),
        run,
        identity: None,
        written_by: None,
        device: None,
        wall_seconds: None,
    }
    .to_bytes()
}

const INTERESTING: [u32; 8] = [
    0,
    1,
    0x7f,
    0x80,
    0xff,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
];

fn mutate(rng: &mut impl Rng, seed: &[u8]) -> Vec<u8> {
    let mut v = seed.to_vec();
    if v.len() > 2 && v[..2] == [0x1f, 0x8b] && rng.random_bool(0.5) {
        // Mutate beneath the gzip layer so the parser, not the inflater, sees the damage.
        let mut inner = Vec::new();
        if GzDecoder::new(&v[..]).read_to_end(&mut inner).is_ok() && !inner.is_empty() {
            return gzip(&mutate(rng, &inner));
        }
    }
    for _ in 0..rng.random_range(1..4) {
        let len = v.len().max(1);
        match rng.random_range(0..6) {
            0 if !v.is_empty() => {
                let i = rng.random_range(0..v.len());
                v[i] ^= 1 << rng.random_range(0..8);
            }
            1 if !v.is_empty() => {
                let i = rng.random_range(0..v.len());
                v[i] = INTERESTING[rng.random_range(0..INTERESTING.len())] as u8;
            }
            2 => v.truncate(rng.random_range(0..len)),
            3 if v.len() >= 4 => {
                let i = rng.random_range(0..v.len() - 3);
                let word = INTERESTING[rng.random_range(0..INTERESTING.len())];
                let bytes = if rng.random_bool(0.5) {
                    word.to_be_bytes()
                } else {
                    word.to_le_bytes()
                };
                v[i..i + 4].copy_from_slice(&bytes);
            }
            4 => {
                let i = rng.random_range(0..=v.len());
                let extra: Vec<u8> = (0..rng.random_range(1..32)).map(|_| rng.random()).collect();
                v.splice(i..i, extra);
            }
            _ if !v.is_empty() => {
                let a = rng.random_range(0..v.len());
                let b = rng.random_range(a..=v.len().min(a + 64));
                let chunk = v[a..b].to_vec();
                let at = rng.random_range(0..=v.len());
                v.splice(at..at, chunk);
            }
            _ => v.push(rng.random()),
        }
    }
    v
}

#[test]
fn readers_survive_mutated_inputs() {
    let budget = Duration::from_secs_f64(
        std::env::var("RMLD_FUZZ_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(4.0),
    );
    let mut crashes = Vec::new();
    for (k, reader) in [
        Reader::IdxImages,
        Reader::IdxLabels,
        Reader::Npy,
        Reader::Csv,
        Reader::Dataset,
        Reader::Checkpoint,
    ]
    .into_iter()
    .enumerate()
    {
        let seeds = seeds(reader);
        for s in &seeds {
            assert!(feed(reader, s), "{reader:?}: a valid seed was refused");
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed + k as u64);
        let (start, mut executions, mut accepted) = (Instant::now(), 0u64, 0u64);
        while start.elapsed() < budget {
            let pick = rng.random_range(0..seeds.len());
            let input = mutate(&mut rng, &seeds[pick]);
            match catch_unwind(AssertUnwindSafe(|| feed(reader, &input))) {
                Ok(ok) => accepted += ok as u64,
                Err(_) => {
                    let path = std::env::temp_dir()
                        .join(format!("rmld-fuzz-crash-{reader:?}-{executions}.bin"));
                    let _ = std::fs::write(&path, &input);
                    crashes.push(format!(
                        "{reader:?}: panic on input saved to {}",
                        path.display()
                    ));
                }
            }
            executions += 1;
        }
        eprintln!(
            "fuzz smoke: {reader:?}: {executions} executions in {:.1} s, {accepted} accepted",
            start.elapsed().as_secs_f64()
        );
    }
    assert!(
        crashes.is_empty(),
        "{} crashes:\n{}",
        crashes.len(),
        crashes.join("\n")
    );
}
