//! Behaviour fingerprint: small fixed-seed `rmld sample`/`augment`/`encode` runs whose outputs must
//! not change unless a commit says why.
//!
//! Each case's files are hashed (NPY: dtype, shape and data; other outputs: their bytes) and
//! summed (f32 NPY: Σx and Σ|x|), and compared with `tests/data/fingerprint.json`. The hashes are
//! exact for the machine class they were recorded on (on the CPU any x86-64 with FMA: its
//! products sum in one order on every path, `RMLD_CPU_PATH`, its f64 math functions are the libm
//! crate's, `rmld::math`, and glibc's f32 ones agreed with FMA hidden; the GPU's adapter and
//! driver decide the lavapipe rounding); on another
//! class the sums must agree to 1e-3 relative instead. A change that alters the draws on
//! purpose re-records with `RMLD_FINGERPRINT_WRITE=1 cargo test --test fingerprint` and says why
//! in its commit.

mod gpu_common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

/// One output file's fingerprint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct FilePrint {
    /// xxh3 of the NPY's dtype, shape and data (or of the whole file), in hex.
    hash: String,
    /// Σx and Σ|x| over an f32 NPY's values (absent for other files).
    sums: Option<[f64; 2]>,
}

/// Every case's files, with the machine class they were recorded on.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    cpu_class: String,
    gpu_class: String,
    cases: BTreeMap<String, BTreeMap<String, FilePrint>>,
}

/// (name, arguments) of the CPU cases: every method, every target, both augment presets, encode.
/// MALA and HMC give `--burn-in 0`: the no-warm-up runs recorded before they warmed up by default
/// (the default warm-up has its own test, `tests/cli.rs::mala_and_hmc_warm_up_by_default`).
const CPU_CASES: &[(&str, &str)] = &[
    ("sample-rmld-paper", "sample --chains 6 --samples 3 --seed 7"),
    (
        "sample-mala-mixture",
        "sample --method mala --target mixture --chains 6 --samples 3 --seed 7 --pixel-max 4 --eta 0.005 --burn-in 0",
    ),
    (
        "sample-hmc-tangent",
        "sample --method hmc --target tangent --chains 6 --samples 3 --seed 7 --pixel-max 4 --eta 0.005 --tangent-k 4 --burn-in 0",
    ),
    (
        "sample-rmld-local-noise",
        "sample --target local --init noise --sghmc-noise --chains 5 --samples 3 --seed 3",
    ),
    (
        "augment-quality",
        "augment --preset quality --method hmc --limit 400 --batch 8 --no-quality --samples 2 --burn-in 2 --seed 1",
    ),
    ("augment-paper", "augment --preset paper --limit 400 --batch 8 --no-quality --seed 1"),
    (
        "augment-kernel-hmc",
        "augment --method kernel-hmc --limit 400 --batch 8 --no-quality --seed 2",
    ),
    ("encode", "encode --count 40 --iterations 50"),
];

/// The GPU cases (lavapipe is slow: the cheap ones).
const GPU_CASES: &[&str] = &[
    "sample-rmld-paper",
    "sample-mala-mixture",
    "sample-hmc-tangent",
    "encode",
];

fn record_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fingerprint.json")
}

/// The CPU's class: x86-64 with FMA (every AVX2 and AVX-512 CPU, whose products sum in one
/// order, `backend::cpu::packed`, and whose glibc runs the same FMA versions of exp and log),
/// or the architecture's name.
fn cpu_class() -> String {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("fma") {
        return "x86_64-fma".into();
    }
    std::env::consts::ARCH.into()
}

/// Runs one case into a fresh folder and fingerprints every output but the report and the lock.
fn run_case(args: &str, backend: &str) -> BTreeMap<String, FilePrint> {
    let out = tempfile::tempdir().expect("a temporary folder");
    // An empty code cache: codes an earlier build cached under the same key (a hand run's
    // ~/.cache) would otherwise stand in for this build's encoder.
    let cache = tempfile::tempdir().expect("a temporary folder");
    let status = Command::new(env!("CARGO_BIN_EXE_rmld"))
        .args(args.split_whitespace())
        .args(["--backend", backend, "--out"])
        .arg(out.path())
        .env("RMLD_CACHE_DIR", cache.path())
        .output()
        .expect("running rmld");
    assert!(
        status.status.success(),
        "rmld {args} --backend {backend} failed: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    let mut prints = BTreeMap::new();
    print_folder(out.path(), "", &mut prints);
    prints
}

/// Fingerprints every file in `dir` (and its subfolders, e.g. `sample_stats/`), named by its path
/// under the output folder (`prefix`), but the report and hidden files.
fn print_folder(dir: &Path, prefix: &str, prints: &mut BTreeMap<String, FilePrint>) {
    for entry in std::fs::read_dir(dir).expect("reading the output folder") {
        let path = entry.expect("an entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name == "report.json" || name.starts_with('.') {
            continue;
        }
        let name = format!("{prefix}{name}");
        if path.is_dir() {
            print_folder(&path, &format!("{name}/"), prints);
            continue;
        }
        let bytes = std::fs::read(&path).expect("reading an output");
        prints.insert(name.clone(), fingerprint(&name, &bytes));
    }
}

fn fingerprint(name: &str, bytes: &[u8]) -> FilePrint {
    if !name.ends_with(".npy") {
        return FilePrint {
            hash: format!("{:016x}", xxhash_rust::xxh3::xxh3_64(bytes)),
            sums: None,
        };
    }
    let (major, start) = (bytes[6], if bytes[6] == 1 { 10 } else { 12 });
    let len = if major == 1 {
        u16::from_le_bytes([bytes[8], bytes[9]]) as usize
    } else {
        u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize
    };
    let header = String::from_utf8_lossy(&bytes[start..start + len]);
    let field = |key: &str| {
        let at = header
            .find(key)
            .unwrap_or_else(|| panic!("{name}: no {key}"))
            + key.len();
        let rest = header[at..].trim_start_matches([':', ' ', '\'']);
        let end = if key == "'shape'" {
            rest.find(')').unwrap() + 1
        } else {
            rest.find('\'').unwrap()
        };
        rest[..end].to_string()
    };
    let (descr, shape) = (field("'descr'"), field("'shape'"));
    let data = &bytes[start + len..];
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(descr.as_bytes());
    hasher.update(shape.replace(' ', "").as_bytes());
    hasher.update(data);
    let sums = (descr == "<f4").then(|| {
        data.chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()) as f64)
            .fold([0.0, 0.0], |[s, a], x| [s + x, a + x.abs()])
    });
    FilePrint {
        hash: format!("{:016x}", hasher.digest()),
        sums,
    }
}

/// Every difference between the recorded and the measured prints of one case.
fn differences(
    case: &str,
    want: &BTreeMap<String, FilePrint>,
    got: &BTreeMap<String, FilePrint>,
    exact: bool,
) -> Vec<String> {
    let mut bad = Vec::new();
    let names: std::collections::BTreeSet<_> = want.keys().chain(got.keys()).collect();
    for name in names {
        let (w, g) = (want.get(name), got.get(name));
        match (w, g) {
            (Some(w), Some(g)) if exact && w.hash != g.hash => bad.push(format!(
                "{case}/{name}: hash {} recorded, {} now (sums {:?} vs {:?})",
                w.hash, g.hash, w.sums, g.sums
            )),
            (Some(w), Some(g)) if !exact => {
                if let (Some(ws), Some(gs)) = (w.sums, g.sums) {
                    for (i, (a, b)) in ws.iter().zip(gs).enumerate() {
                        if (a - b).abs() > 1e-3 * a.abs().max(b.abs()).max(1.0) {
                            bad.push(format!("{case}/{name}: sum {i} was {a}, now {b}"));
                        }
                    }
                }
            }
            (Some(_), None) => bad.push(format!("{case}/{name}: no longer written")),
            (None, Some(_)) => bad.push(format!("{case}/{name}: new output, not recorded")),
            _ => {}
        }
    }
    bad
}

/// The GPU's class: adapter name and driver, or None without an adapter.
fn gpu_class() -> Option<String> {
    let context = gpu_common::context("fingerprint")?;
    Some(context.describe())
}

#[test]
fn outputs_match_the_recorded_fingerprint() {
    let writing = std::env::var("RMLD_FINGERPRINT_WRITE").is_ok_and(|v| v == "1");
    let recorded: Record = if writing {
        Record::default()
    } else {
        serde_json::from_str(&std::fs::read_to_string(record_path()).expect("the record"))
            .expect("a valid record")
    };
    let cpu = cpu_class();
    let gpu = gpu_class();
    let mut measured = Record {
        cpu_class: cpu.clone(),
        gpu_class: gpu.clone().unwrap_or_default(),
        ..Record::default()
    };
    let mut bad = Vec::new();
    for (name, args) in CPU_CASES {
        let got = run_case(args, "cpu");
        let key = format!("cpu/{name}");
        if let Some(want) = recorded.cases.get(&key) {
            bad.extend(differences(&key, want, &got, recorded.cpu_class == cpu));
        } else if !writing {
            bad.push(format!("{key}: not recorded"));
        }
        measured.cases.insert(key, got);
    }
    if let Some(gpu) = &gpu {
        for name in GPU_CASES {
            let args = CPU_CASES.iter().find(|(n, _)| n == name).unwrap().1;
            let got = run_case(args, "gpu");
            let key = format!("gpu/{name}");
            if let Some(want) = recorded.cases.get(&key) {
                bad.extend(differences(&key, want, &got, &recorded.gpu_class == gpu));
            } else if !writing {
                bad.push(format!("{key}: not recorded"));
            }
            measured.cases.insert(key, got);
        }
    }
    if writing {
        let text = serde_json::to_string_pretty(&measured).unwrap() + "\n";
        std::fs::write(record_path(), text).expect("writing the record");
        eprintln!("fingerprint: recorded {}", record_path().display());
        return;
    }
    assert!(
        bad.is_empty(),
        "{} fingerprint difference(s) (a change of behaviour must say why and re-record with \
         RMLD_FINGERPRINT_WRITE=1):\n{}",
        bad.len(),
        bad.join("\n")
    );
}
