//! scripts/gpu-bench.sh on the CPU path: rmld bench and the NumPy peer in one call, one table.
//!
//! CI has no GPU and no PyTorch or JAX, so this runs the script with `--cpu --peers numpy` at a
//! tiny size with the Table 2 harness's Python (which has NumPy), checks the table's rows and its
//! ratio arithmetic, and byte-compiles the PyTorch and JAX peers (syntax only: importing them
//! needs the packages). A missing Python fails the test in CI (`gpu_common::gpu_required()`).

mod gpu_common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Table 2 harness's Python, or None where it is missing outside CI (a failure in CI).
fn python() -> Option<PathBuf> {
    let python = gpu_common::harness_python();
    if python.is_none() {
        assert!(
            !gpu_common::gpu_required(),
            "in CI the Python with NumPy (scripts/table2/setup_env.sh, RMLD_TABLE2_PYTHON) must \
             be present"
        );
        eprintln!("skipping: no Python with NumPy (run scripts/table2/setup_env.sh)");
    }
    python
}

fn script(args: &[&str]) -> std::process::Output {
    Command::new("bash")
        .arg(root().join("scripts/gpu-bench.sh"))
        .args(args)
        .env("RMLD", env!("CARGO_BIN_EXE_rmld"))
        .output()
        .expect("bash runs")
}

#[test]
fn gpu_bench_writes_one_table_with_rmld_and_the_numpy_peer_on_the_cpu_path() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bench");
    let ran = script(&[
        "--cpu",
        "--python",
        python.to_str().unwrap(),
        "--peers",
        "numpy",
        "--chains",
        "1,3",
        "--dim",
        "16",
        "--atoms",
        "64",
        "--images",
        "50",
        "--ceiling-size",
        "64",
        "--steps",
        "2",
        "--outer",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(ran.status.success(), "{stderr}");
    let table: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("table.json")).unwrap()).unwrap();
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{table}");
    for (row, chains) in rows.iter().zip([1, 3]) {
        assert_eq!(row["chains"], chains, "{row}");
        assert_eq!(row["backend"], "cpu", "{row}");
        let rmld = row["rmld_chain_steps_per_second"].as_f64().unwrap();
        let numpy = row["numpy_chain_steps_per_second"].as_f64().unwrap();
        assert!(rmld > 0.0 && numpy > 0.0, "{row}");
        let ratio = row["rmld_over_numpy"].as_f64().unwrap();
        assert!((ratio - rmld / numpy).abs() <= 1e-9 * ratio, "{row}");
        // The peak is rmld's own measured CPU ceiling on the CPU path.
        let gflops = row["rmld_gflops"].as_f64().unwrap();
        let peak = row["peak_gflops"].as_f64().unwrap();
        let fraction = row["fraction_of_peak"].as_f64().unwrap();
        assert!(
            (fraction - gflops / peak).abs() <= 1e-9 * fraction.max(1e-12),
            "{row}"
        );
        // Peers not asked for are marked, not invented.
        for peer in ["torch", "jax"] {
            assert!(
                row[format!("{peer}_chain_steps_per_second")].is_null(),
                "{row}"
            );
            assert_eq!(row[format!("{peer}_note")], "not run", "{row}");
        }
    }
    let markdown = std::fs::read_to_string(out.join("table.md")).unwrap();
    assert!(markdown.contains("| cpu | 3 |"), "{markdown}");
    let csv = std::fs::read_to_string(out.join("table.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
}

#[test]
fn gpu_bench_refuses_bad_settings_by_name() {
    for (args, expect) in [
        (&["--chains", "4,x"][..], "--chains"),
        (&["--peers", "numpy,tensorflow"][..], "--peers"),
        (&["--steps", "0"][..], "--steps"),
        (&["--gemm-tiles", "square"][..], "--gemm-tiles"),
        (&["--rmld", "/no/such/rmld"][..], "/no/such/rmld"),
    ] {
        let ran = script(args);
        let stderr = String::from_utf8_lossy(&ran.stderr);
        assert_eq!(ran.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
    }
}

/// With the device time of rmld's passes (a GPU with timestamp queries), the table gives the
/// chain-steps over that time and its ratio to PyTorch beside the wall-clock ones.
#[test]
fn bench_table_gives_the_device_time_rate_where_the_adapter_times_the_passes() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("rmld")).unwrap();
    let bench = serde_json::json!({
        "problem": { "d": 16, "p": 64, "batch": 8, "steps": 20, "outer": 3 },
        "ceilings": [],
        "rows": [
            { "backend": "gpu-wide", "device": "a GPU", "chains": 4096, "status": "ok",
              "chain_steps_per_second": 1.0e6, "gflops_counted": 12.0, "outer_iterations": 3,
              "device_seconds": 0.125 },
            { "backend": "cpu", "device": "a CPU", "chains": 4096, "status": "ok",
              "chain_steps_per_second": 1.0e5, "gflops_counted": 1.0, "outer_iterations": 3,
              "device_seconds": null }
        ]
    });
    std::fs::write(dir.path().join("rmld/bench.json"), bench.to_string()).unwrap();
    let torch =
        r#"{"peer": "torch", "chains": 4096, "device": "a GPU", "chain_steps_per_second": 2.0e6}"#;
    std::fs::write(dir.path().join("peers.jsonl"), format!("{torch}\n")).unwrap();
    let ran = Command::new(&python)
        .arg(root().join("benches/peers/bench_table.py"))
        .arg(dir.path())
        .args(["--peak-gflops", "1000"])
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let table: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("table.json")).unwrap()).unwrap();
    let (gpu, cpu) = (&table["rows"][0], &table["rows"][1]);
    // 4096 chains × 20 steps × 3 outer iterations over 0.125 s.
    let device = gpu["rmld_device_chain_steps_per_second"].as_f64().unwrap();
    assert!((device - 4096.0 * 60.0 / 0.125).abs() < 1e-6, "{gpu}");
    let ratio = gpu["rmld_device_over_torch"].as_f64().unwrap();
    assert!((ratio - device / 2.0e6).abs() < 1e-12, "{gpu}");
    assert_eq!(gpu["rmld_over_torch"].as_f64().unwrap(), 0.5, "{gpu}");
    assert!(cpu["rmld_device_chain_steps_per_second"].is_null(), "{cpu}");
    assert!(cpu["rmld_device_over_torch"].is_null(), "{cpu}");
    let markdown = std::fs::read_to_string(dir.path().join("table.md")).unwrap();
    assert!(
        markdown.contains("| gpu-wide | 4096 | 1,000,000 | 1,966,080 |"),
        "{markdown}"
    );
}

/// scripts/gpu-lease.sh (the lent GPU's one call) refuses what it cannot run, by name, before it
/// measures anything.
#[test]
fn gpu_lease_refuses_bad_settings_by_name() {
    let rmld = env!("CARGO_BIN_EXE_rmld");
    let mnist = root().join("tests");
    let mnist = mnist.to_str().unwrap();
    for (args, expect) in [
        (
            vec!["--rmld", "/no/such/rmld", "--mnist", mnist],
            "/no/such/rmld",
        ),
        (
            vec!["--rmld", rmld, "--mnist", "/no/such/mnist"],
            "/no/such/mnist",
        ),
        (
            vec!["--rmld", rmld, "--mnist", mnist, "--budget", "soon"],
            "--budget",
        ),
        (
            vec!["--rmld", rmld, "--mnist", mnist, "--chains", "4,x"],
            "--chains",
        ),
        (vec!["--rmld", rmld, "--fast"], "--fast"),
    ] {
        let out = tempfile::tempdir().unwrap();
        let ran = Command::new("bash")
            .arg(root().join("scripts/gpu-lease.sh"))
            .args(&args)
            .args(["--out", out.path().to_str().unwrap()])
            .output()
            .expect("bash runs");
        let stderr = String::from_utf8_lossy(&ran.stderr);
        assert_eq!(ran.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
        assert!(
            !out.path().join("lease.tgz").exists(),
            "{args:?} wrote a result"
        );
    }
}

/// The PyTorch and JAX peers compile (CI has neither package, so they are not run here; they
/// ran on this machine's CPU and are run on a GPU by scripts/gpu-bench.sh: docs/benchmarks.md).
#[test]
fn torch_and_jax_peers_are_valid_python() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    for peer in ["torch_step.py", "jax_hmc.py", "bench_table.py"] {
        let source = root().join("benches/peers").join(peer);
        let compiled = dir.path().join(format!("{peer}c"));
        let ran = Command::new(&python)
            .args(["-c", "import py_compile, sys; py_compile.compile(sys.argv[1], sys.argv[2], doraise=True)"])
            .arg(&source)
            .arg(&compiled)
            .output()
            .unwrap();
        assert!(
            ran.status.success(),
            "{}: {}",
            source.display(),
            String::from_utf8_lossy(&ran.stderr)
        );
        assert!(Path::new(&compiled).is_file());
    }
}
