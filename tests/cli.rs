//! The `rmld` binary end to end: the main job's outputs, and bad input refused with exit status 2,
//! one clear message, and nothing written to `--out`.

mod gpu_common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rmld::io::{self, Dataset};

fn rmld(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rmld"))
        .args(args)
        .output()
        .expect("the rmld binary runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `rmld sample` with `args` into a fresh folder and checks the refusal.
fn assert_refused(args: &[&str], expect_in_message: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let mut all = vec![
        "sample",
        "--backend",
        "cpu",
        "--out",
        out_dir.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let out = rmld(&all);
    let message = stderr(&out);
    assert_eq!(
        out.status.code(),
        Some(2),
        "args {args:?}: expected exit 2, got {:?}; stderr: {message}",
        out.status.code()
    );
    for needle in expect_in_message {
        assert!(
            message.contains(needle),
            "args {args:?}: message lacks {needle:?}: {message}"
        );
    }
    assert!(
        !message.contains("panicked"),
        "args {args:?} panicked: {message}"
    );
    let leftovers: Vec<PathBuf> = match std::fs::read_dir(&out_dir) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    };
    assert!(
        leftovers.is_empty(),
        "args {args:?} left files in --out: {leftovers:?}"
    );
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap();
}

fn idx_header(n: u32) -> Vec<u8> {
    let mut h = vec![0, 0, 8, 3];
    for v in [n, 28, 28] {
        h.extend_from_slice(&v.to_be_bytes());
    }
    h
}

#[test]
fn main_job_writes_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let status = rmld(&[
        "sample",
        "--backend",
        "cpu",
        "--chains",
        "8",
        "--samples",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(status.status.success(), "{}", stderr(&status));
    let codes = io::read_npy(&out.join("codes.npy")).unwrap();
    assert_eq!(codes.shape, vec![2, 8, 256]);
    let images = io::read_npy(&out.join("images.npy")).unwrap();
    assert_eq!(images.shape, vec![2, 8, 64]);
    let dictionary = io::read_npy(&out.join("dictionary.npy")).unwrap();
    assert_eq!(dictionary.shape, vec![64, 256]);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["settings"]["chains"], 8);
    let acceptance = report["acceptance"]["overall"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&acceptance));
    let png = std::fs::read(out.join("samples.png")).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let leftovers: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn encode_writes_codes_and_reconstructions() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("enc");
    let status = rmld(&[
        "encode",
        "--backend",
        "cpu",
        "--count",
        "20",
        "--iterations",
        "50",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(status.status.success(), "{}", stderr(&status));
    assert_eq!(
        io::read_npy(&out.join("codes.npy")).unwrap().shape,
        vec![20, 256]
    );
    assert_eq!(
        io::read_npy(&out.join("reconstructions.npy"))
            .unwrap()
            .shape,
        vec![20, 64]
    );
}

#[test]
fn bad_files_are_refused_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);

    let mut truncated = idx_header(10);
    truncated.extend(vec![0u8; 100]);
    write(&p("truncated-idx3-ubyte"), &truncated);
    assert_refused(
        &["--data", p("truncated-idx3-ubyte").to_str().unwrap()],
        &["truncated-idx3-ubyte"],
    );

    write(&p("train-images-idx3-ubyte.gz"), b"this is not gzip at all");
    assert_refused(
        &["--data", p("train-images-idx3-ubyte.gz").to_str().unwrap()],
        &["train-images-idx3-ubyte.gz"],
    );

    let mut wrong_magic = idx_header(1);
    wrong_magic[3] = 9;
    wrong_magic.extend(vec![0u8; 784]);
    write(&p("magic-idx3-ubyte"), &wrong_magic);
    assert_refused(
        &["--data", p("magic-idx3-ubyte").to_str().unwrap()],
        &["magic-idx3-ubyte", "magic"],
    );

    let mut claims_more = idx_header(1_000_000_000);
    claims_more.extend(vec![0u8; 784]);
    write(&p("claims-idx3-ubyte"), &claims_more);
    assert_refused(
        &["--data", p("claims-idx3-ubyte").to_str().unwrap()],
        &["claims-idx3-ubyte"],
    );

    let mut values = vec![0.5f32; 4 * 16];
    values[5] = f32::NAN;
    io::write_npy_f32(&p("nan.npy"), &[4, 16], &values).unwrap();
    assert_refused(&["--data", p("nan.npy").to_str().unwrap()], &["nan.npy"]);
    values[5] = f32::INFINITY;
    io::write_npy_f32(&p("inf.npy"), &[4, 16], &values).unwrap();
    assert_refused(&["--data", p("inf.npy").to_str().unwrap()], &["inf.npy"]);

    // A damaged NPY magic, or a .npy name on other bytes, is an NPY file's error, not the CSV
    // reader's "not a text file".
    let mut npy_magic = b"\x93NUMPX\x01\x00".to_vec();
    npy_magic.extend(vec![0u8; 120]);
    write(&p("badmagic.npy"), &npy_magic);
    write(&p("magic.bin"), &npy_magic);
    write(&p("text.npy"), b"1,2,3,0\n");
    for name in ["badmagic.npy", "magic.bin", "text.npy"] {
        assert_refused(
            &["--data", p(name).to_str().unwrap()],
            &[name, "bad NPY magic"],
        );
    }
    // ... and text under a .npy name (a CSV saved as x.npy) is said to look like text.
    assert_refused(
        &["--data", p("text.npy").to_str().unwrap()],
        &["text.npy", "looks like text (CSV?)", "rename it to .csv"],
    );

    // The embedded data have d = 64; a (63, 256) dictionary does not fit.
    io::write_npy_f32(&p("dict.npy"), &[63, 256], &vec![0.1; 63 * 256]).unwrap();
    assert_refused(
        &["--dictionary", p("dict.npy").to_str().unwrap()],
        &["dict.npy", "d = 64"],
    );
}

#[test]
fn bad_settings_are_refused() {
    for (flag, value) in [
        ("--eta", "0"),
        ("--eta", "-0.1"),
        ("--eta", "nan"),
        ("--batch", "0"),
        ("--steps", "0"),
        ("--chains", "0"),
        ("--samples", "0"),
        ("--discount", "0"),
        ("--discount", "-1"),
        ("--pixel-max", "0"),
        ("--lambda", "-1"),
    ] {
        let arg = format!("{flag}={value}");
        assert_refused(&[&arg], &[flag]);
    }
    // A --keep that keeps none of the samples after the burn-in.
    assert_refused(
        &["--chains", "8", "--samples", "4", "--keep", "every:5"],
        &[
            "--keep",
            "every:5 keeps none of the 4 samples",
            "every:4 at most",
        ],
    );
    assert_refused(
        &["--samples", "4", "--burn-in", "2", "--keep", "every:3"],
        &[
            "--keep",
            "burn-in of 2",
            "every:2 at most, or at least 5 samples",
        ],
    );
    // Not numbers at all: clap's own usage error, also status 2.
    assert_refused(&["--chains", "many"], &["--chains"]);
    // The learned noise's Gamma prior: named by its option, with the range.
    for (flag, value) in [
        ("--noise-e", "0"),
        ("--noise-e", "-1"),
        ("--noise-e", "inf"),
        ("--noise-f", "0"),
        ("--noise-f", "nan"),
    ] {
        let arg = format!("{flag}={value}");
        assert_refused(&["--noise", "gibbs", &arg], &[flag, "positive finite"]);
    }
    assert_refused(
        &["--noise", "gibbs", "--target", "tangent"],
        &["--noise", "--target"],
    );
}

/// `--burn-in auto` ends the warm-up on its own: the report and the summary say where, and the
/// files hold exactly the draws after it; bad values are refused by name.
#[test]
fn an_automatic_burn_in_says_where_it_ended() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out = rmld(&[
        "sample",
        "--backend",
        "cpu",
        "--method",
        "mala",
        "--chains",
        "16",
        "--samples",
        "80",
        "--burn-in",
        "auto",
        "--seed",
        "3",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("burn-in: automatic"), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("report.json")).unwrap()).unwrap();
    let auto = &report["burn_in_auto"];
    assert_eq!(auto["cap"], 40, "{auto}");
    assert_eq!(auto["window"], 10, "{auto}");
    let end = auto["ended_at"].as_u64().expect("the warm-up ended");
    assert!((20..=40).contains(&end), "{auto}");
    assert_eq!(report["burn_in"], end);
    assert_eq!(report["kept_samples"], 80 - end);
    let codes = io::read_npy(&out_dir.join("codes.npy")).unwrap();
    assert_eq!(codes.shape[0] as u64, 80 - end);
    assert_eq!(report["diagnostics"]["burn_in_excluded"], end);
    for bad in ["auto:0", "soon", "auto:x"] {
        assert_refused(&["--burn-in", bad], &["--burn-in"]);
    }
    assert_refused(&["--samples", "10", "--burn-in", "auto:10"], &["--burn-in"]);
    assert_refused(
        &["--samples", "10", "--burn-in", "auto", "--shard", "0/2"],
        &["automatic burn-in", "shard 0/2", "--warm-up-only"],
    );
}

/// Without `--burn-in`, MALA and HMC warm up automatically (at most half the samples) and RMLD,
/// `--no-adapt` keep every iteration, as `SampleSettings::with_default_warm_up` (a shard gets
/// the single run's default and starts from its warm-up: tests/shard_warm_up.rs).
#[test]
fn mala_and_hmc_warm_up_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let report = |name: &str, extra: &[&str]| {
        let out_dir = dir.path().join(name);
        let mut args = vec![
            "sample",
            "--backend",
            "cpu",
            "--chains",
            "8",
            "--samples",
            "40",
            "--seed",
            "5",
            "--out",
            out_dir.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = rmld(&args);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out_dir.join("report.json")).unwrap()).unwrap();
        report
    };
    for method in ["mala", "hmc"] {
        let r = report(method, &["--method", method]);
        assert_eq!(
            r["burn_in_auto"]["cap"], 20,
            "{method}: {}",
            r["burn_in_auto"]
        );
        let end = r["burn_in"].as_u64().unwrap();
        assert!((1..=20).contains(&end), "{method}: burn-in {end}");
        assert_eq!(r["kept_samples"], 40 - end, "{method}");
        assert!(r["adaptation"].is_object(), "{method}: no adaptation");
    }
    for (name, extra) in [
        ("rmld", &["--method", "rmld"][..]),
        ("no-adapt", &["--method", "mala", "--no-adapt"][..]),
    ] {
        let r = report(name, extra);
        assert_eq!(r["burn_in"], 0, "{name}");
        assert!(r["burn_in_auto"].is_null(), "{name}: {}", r["burn_in_auto"]);
    }
    // A given count is kept as given.
    let r = report("fixed", &["--method", "mala", "--burn-in", "5"]);
    assert_eq!(
        (r["burn_in"].as_u64(), r["burn_in_auto"].is_null()),
        (Some(5), true)
    );
}

/// `--precision f16`: the run says so in its report and computes with A rounded to f16 (so its
/// draws differ from f32's by rounding only); a dictionary f16 cannot hold is refused by name.
#[test]
fn f16_precision_is_reported_and_refused_where_it_cannot_hold_a() {
    let dir = tempfile::tempdir().unwrap();
    let run = |precision: &str| {
        let out_dir = dir.path().join(precision);
        let out = rmld(&[
            "sample",
            "--backend",
            "cpu",
            "--chains",
            "4",
            "--samples",
            "3",
            "--precision",
            precision,
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out_dir.join("report.json")).unwrap()).unwrap();
        let codes = match io::read_npy(&out_dir.join("codes.npy")).unwrap().data {
            io::Pixels::F32(v) => v,
            io::Pixels::U8(_) => panic!("codes.npy holds floats"),
        };
        (report, codes)
    };
    let (f32_report, f32_codes) = run("f32");
    let (f16_report, f16_codes) = run("f16");
    assert!(f32_report["dictionary"].get("precision").is_none());
    assert_eq!(f16_report["dictionary"]["precision"], "f16");
    let scale = f32_codes.iter().fold(0f32, |m, v| m.max(v.abs()));
    let gap = f32_codes
        .iter()
        .zip(&f16_codes)
        .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
    assert!(gap > 0.0 && gap < 0.02 * scale, "gap {gap}, scale {scale}");
    let big = dir.path().join("big.npy");
    let mut a = vec![0.1f32; 64 * 8];
    a[9] = 1.0e5;
    io::write_npy_f32(&big, &[64, 8], &a).unwrap();
    assert_refused(
        &["--precision", "f16", "--dictionary", big.to_str().unwrap()],
        &["--precision", "65504", "(1, 1)"],
    );
}

#[test]
fn an_unwritable_out_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    write(&file, b"x");
    let out = rmld(&[
        "sample",
        "--backend",
        "cpu",
        "--out",
        file.join("below").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("a-file"), "{}", stderr(&out));
}

#[test]
fn gpu_without_the_backend_is_a_clear_error() {
    // With no usable adapter (or no GPU backend), `--backend gpu` fails with status 1 and says why;
    // with one, it runs. Either way no panic. Where a GPU is required (CI), only success passes.
    let dir = tempfile::tempdir().unwrap();
    let out = rmld(&[
        "sample",
        "--backend",
        "gpu",
        "--chains",
        "2",
        "--samples",
        "1",
        "--out",
        dir.path().join("g").to_str().unwrap(),
    ]);
    match out.status.code() {
        Some(0) => {}
        Some(1) if gpu_common::gpu_required() => panic!(
            "no GPU adapter, but CI/RMLD_REQUIRE_GPU requires one: {}",
            stderr(&out)
        ),
        Some(1) => assert!(stderr(&out).contains("GPU"), "{}", stderr(&out)),
        other => panic!("unexpected status {other:?}: {}", stderr(&out)),
    }
}

#[test]
fn mnist_runs_from_its_standard_folder() {
    let Some(datasets) = io::shared_datasets_dir().filter(|d| d.join("mnist").is_dir()) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but the shared datasets are missing"
        );
        eprintln!("no ../shared/datasets/mnist (set RMLD_DATASETS): skipping mnist_runs_from_its_standard_folder");
        return;
    };
    let mnist = datasets.join("mnist");
    assert_eq!(Dataset::load(&mnist).unwrap().d, 784);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mnist");
    let status = rmld(&[
        "sample",
        "--backend",
        "cpu",
        "--data",
        mnist.to_str().unwrap(),
        "--init",
        "lasso",
        "--chains",
        "4",
        "--samples",
        "2",
        "--steps",
        "5",
        "--lasso-iterations",
        "50",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(status.status.success(), "{}", stderr(&status));
    assert_eq!(
        io::read_npy(&out.join("images.npy")).unwrap().shape,
        vec![2, 4, 784]
    );
}

#[test]
fn bench_writes_its_table_and_refuses_a_bad_chain_list() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bench");
    let args = |chains: &str| {
        rmld(&[
            "bench",
            "--backend",
            "cpu",
            "--chains",
            chains,
            "--dim",
            "16",
            "--atoms",
            "64",
            "--outer",
            "1",
            "--steps",
            "2",
            "--ceiling-size",
            "64",
            "--images",
            "50",
            "--out",
            out.to_str().unwrap(),
        ])
    };
    let run = args("1,2");
    assert!(run.status.success(), "{}", stderr(&run));
    let bench: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("bench.json")).unwrap()).unwrap();
    let rows = bench["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(
        std::fs::read_to_string(out.join("bench.csv"))
            .unwrap()
            .lines()
            .count()
            >= 3
    );
    assert_eq!(&std::fs::read(out.join("bench.png")).unwrap()[1..4], b"PNG");
    let refused = args("1,many");
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
}

/// `rmld bench --peer-python` runs the NumPy peer (benches/peers/numpy_step.py) beside the CPU
/// rows and reports rmld over NumPy; a Python that cannot run it leaves a note, not a failure.
/// The Python is the Table 2 harness's (`RMLD_TABLE2_PYTHON`, else target/table2-venv); in CI
/// (`gpu_common::gpu_required()`) a missing one fails the test.
#[test]
fn bench_runs_the_numpy_peer_beside_the_cpu_rows() {
    let Some(python) = gpu_common::harness_python() else {
        assert!(
            !gpu_common::gpu_required(),
            "in CI the Python with NumPy (scripts/table2/setup_env.sh, RMLD_TABLE2_PYTHON) must \
             be present"
        );
        eprintln!("skipping: no Python with NumPy (run scripts/table2/setup_env.sh)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let run = |python: &Path, out: &Path| {
        rmld(&[
            "bench",
            "--backend",
            "cpu",
            "--chains",
            "1,3",
            "--dim",
            "16",
            "--atoms",
            "64",
            "--outer",
            "1",
            "--steps",
            "2",
            "--ceiling-size",
            "64",
            "--images",
            "50",
            "--peer-python",
            python.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
    };
    let out = dir.path().join("bench");
    let ran = run(&python, &out);
    assert!(ran.status.success(), "{}", stderr(&ran));
    let stdout = String::from_utf8_lossy(&ran.stdout);
    assert!(stdout.contains("numpy peer at C = 3:"), "{stdout}");
    let bench: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("bench.json")).unwrap()).unwrap();
    let peers = bench["numpy_peer"]["rows"].as_array().unwrap();
    assert_eq!(peers.len(), 2, "{}", bench["notes"]);
    for (peer, chains) in peers.iter().zip([1, 3]) {
        assert_eq!(peer["chains"], chains);
        let numpy = peer["numpy_chain_steps_per_second"].as_f64().unwrap();
        let rmld = peer["rmld_chain_steps_per_second"].as_f64().unwrap();
        assert!(numpy > 0.0 && rmld > 0.0, "{peer}");
        assert!(
            (peer["rmld_over_numpy"].as_f64().unwrap() - rmld / numpy).abs() < 1e-9 * rmld / numpy
        );
    }
    // A Python that does not exist: the bench still writes its rows, with a note naming it.
    let out = dir.path().join("missing");
    let ran = run(&dir.path().join("no-such-python"), &out);
    assert!(ran.status.success(), "{}", stderr(&ran));
    let bench: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("bench.json")).unwrap()).unwrap();
    assert_eq!(bench["numpy_peer"]["rows"].as_array().unwrap().len(), 0);
    assert!(
        bench["notes"].to_string().contains("no-such-python"),
        "{}",
        bench["notes"]
    );
}

/// `rmld bench --backend gpu` at d = 16, p = 64 on 50 synthetic images into `out`, with
/// `options` (chains, outer iterations, steps, ...); its bench.json, after a success.
fn tiny_gpu_bench(out: &Path, options: &[&str]) -> serde_json::Value {
    let mut args = vec!["bench", "--backend", "gpu", "--dim", "16", "--atoms", "64"];
    args.extend_from_slice(&["--images", "50", "--out", out.to_str().unwrap()]);
    args.extend_from_slice(options);
    let run = rmld(&args);
    assert!(run.status.success(), "{}", stderr(&run));
    serde_json::from_slice(&std::fs::read(out.join("bench.json")).unwrap()).unwrap()
}

/// On a GPU, `rmld bench` times the device by timestamp queries where the adapter offers them
/// (lavapipe does), says so, and the device time of the passes fits inside their wall time.
#[test]
fn bench_times_the_gpu_by_timestamps_where_offered() {
    let Some(context) = gpu_common::context("bench_times_the_gpu_by_timestamps_where_offered")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bench = tiny_gpu_bench(
        &dir.path().join("bench"),
        &["--chains", "2", "--outer", "2", "--steps", "2"],
    );
    let row = &bench["rows"][0];
    assert_eq!(row["status"], "ok", "{row}");
    let timing = row["timing"].as_str().unwrap();
    if context.has_timestamps() {
        assert!(timing.starts_with("timestamp queries"), "{timing}");
        let (device, wall) = (
            row["device_seconds"].as_f64().unwrap(),
            row["seconds"].as_f64().unwrap(),
        );
        assert!(
            device > 0.0 && device <= wall,
            "device {device} s, wall {wall} s"
        );
        let fraction = row["device_ceiling_fraction"].as_f64().unwrap();
        assert!(fraction.is_finite() && fraction > 0.0, "{row}");
    } else {
        assert!(timing.starts_with("wall-clock"), "{timing}");
        assert!(row["device_seconds"].is_null(), "{row}");
    }
    for ceiling in bench["ceilings"][0]["extra"].as_array().unwrap() {
        let gflops = ceiling[1].as_f64().unwrap();
        assert!(gflops.is_finite() && gflops > 0.0, "{ceiling}");
    }
}

/// `rmld bench --gemm-tile auto,narrow,wide` measures a GPU row per tile and says which tile
/// each ran (a software renderer's auto choice is the narrow tile), and times the ceiling with
/// both tiles; a RMLD_GEMM_TILE it cannot read is refused by name.
#[test]
fn bench_measures_each_gemm_tile_asked_for() {
    if gpu_common::context("bench_measures_each_gemm_tile_asked_for").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bench");
    let bench = tiny_gpu_bench(
        &out,
        &[
            "--chains",
            "2,130",
            "--outer",
            "1",
            "--steps",
            "1",
            "--gemm-tile",
            "auto,narrow,wide",
        ],
    );
    let rows: Vec<(String, u64, String)> = bench["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["status"], "ok", "{r}");
            (
                r["backend"].as_str().unwrap().to_string(),
                r["chains"].as_u64().unwrap(),
                r["gemm_tile"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: Vec<(String, u64, String)> = [2, 130]
        .iter()
        .flat_map(|&c| {
            [
                ("gpu", c, "narrow"),
                ("gpu-narrow", c, "narrow"),
                ("gpu-wide", c, "wide"),
            ]
        })
        .map(|(b, c, t)| (b.to_string(), c, t.to_string()))
        .collect();
    assert_eq!(rows, want);
    let extra: Vec<&str> = bench["ceilings"][0]["extra"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e[0].as_str().unwrap())
        .collect();
    assert!(extra.contains(&"residual_product (wide tile)"), "{extra:?}");
    assert!(
        extra.contains(&"transpose_product (narrow tile)"),
        "{extra:?}"
    );
    let csv = std::fs::read_to_string(out.join("bench.csv")).unwrap();
    assert!(csv.lines().next().unwrap().ends_with(",gemm_tile"), "{csv}");
    assert!(csv.lines().nth(3).unwrap().ends_with(",wide"), "{csv}");

    let refused = Command::new(env!("CARGO_BIN_EXE_rmld"))
        .args([
            "sample",
            "--backend",
            "gpu",
            "--chains",
            "2",
            "--samples",
            "1",
            "--out",
        ])
        .arg(dir.path().join("sample"))
        .env("RMLD_GEMM_TILE", "square")
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let message = stderr(&refused);
    assert!(
        message.contains("RMLD_GEMM_TILE") && message.contains("square"),
        "{message}"
    );
    assert!(!dir.path().join("sample").join("codes.npy").exists());
}

/// The tangent target's settings are refused with exit status 2 before anything is written: k = 0,
/// k above 64, a negative or non-finite scale, and a dataset (the class of `sample`) of fewer
/// than k + 1 images.
#[test]
fn bad_tangent_settings_are_refused() {
    assert_refused(
        &["--target", "tangent", "--tangent-k", "0"],
        &["--tangent-k"],
    );
    assert_refused(
        &["--target", "tangent", "--tangent-k", "65"],
        &["--tangent-k"],
    );
    assert_refused(
        &["--target", "tangent", "--tangent-scale=-1"],
        &["--tangent-scale"],
    );
    assert_refused(
        &["--target", "tangent", "--tangent-scale", "NaN"],
        &["--tangent-scale"],
    );
    let dir = tempfile::tempdir().unwrap();
    let few = dir.path().join("five.npy");
    io::write_npy_f32(&few, &[5, 16], &vec![0.5; 5 * 16]).unwrap();
    assert_refused(
        &["--target", "tangent", "--data", few.to_str().unwrap()],
        &["--tangent-k", "fewer than k + 1"],
    );
}
