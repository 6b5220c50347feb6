//! The paper's central Table 2 observations on a fixed MNIST subset, through `rmld augment` and
//! the scikit-learn harness (scripts/table2/evaluate.py), which also proves that our IDX/NPY
//! outputs load in NumPy.

mod gpu_common;

use std::path::PathBuf;
use std::process::Command;

use rmld::io::shared_datasets_dir;

#[test]
fn compression_beats_pixels_and_rmld_does_not_hurt_compression() {
    let (Some(datasets), Some(python)) = (shared_datasets_dir(), gpu_common::harness_python())
    else {
        // Required where the GPU is: scripts/test.sh sets RMLD_REQUIRE_GPU=1 with the datasets beside it.
        assert!(
            !gpu_common::gpu_required(),
            "in CI the datasets (../shared/datasets or RMLD_DATASETS) and the harness's Python \
             (scripts/table2/setup_env.sh, RMLD_TABLE2_PYTHON) must be present"
        );
        eprintln!(
            "skipping: no shared datasets or no Python for scripts/table2 (run \
             scripts/table2/setup_env.sh)"
        );
        return;
    };
    let mnist = datasets.join("mnist");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rmld");
    // 3,000 training and 1,000 test images, fixed seeds; 50 FISTA iterations keep the encoding
    // of 4,000 images to a minute or two on 2 cores.
    let run = Command::new(env!("CARGO_BIN_EXE_rmld"))
        .args([
            "augment",
            "--preset",
            "paper",
            "--backend",
            "cpu",
            "--seed",
            "0",
            "--limit",
            "3000",
        ])
        .args([
            "--encode-test",
            "--test-limit",
            "1000",
            "--lasso-iterations",
            "50",
        ])
        .arg("--data")
        .arg(&mnist)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "rmld augment failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let json = dir.path().join("table2.json");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/table2/evaluate.py");
    let eval = Command::new(&python)
        .arg(&script)
        .arg("--dataset")
        .arg(&mnist)
        .arg("--rmld")
        .arg(&out)
        .args([
            "--limit-test",
            "1000",
            "--classifiers",
            "svm",
            "--seeds",
            "3",
            "--quiet",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&eval.stdout);
    assert!(
        eval.status.success(),
        "evaluate.py failed: {}\n{table}",
        String::from_utf8_lossy(&eval.stderr)
    );
    eprintln!("{table}");
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let mean = |row: &str| -> f64 {
        results["rows"][row]["classifiers"]["svm"]["mean"]
            .as_f64()
            .unwrap_or_else(|| panic!("no svm mean for {row}"))
    };
    let (original, compression, rmld) = (mean("Original"), mean("Compression"), mean("RMLD"));
    // The paper: spectral codes beat pixels for every linear classifier.
    assert!(
        compression < original,
        "Compression {compression:.2}% is not below Original {original:.2}%"
    );
    // The paper: RMLD augmentation improves Compression marginally. We assert it does not make it
    // worse beyond one binomial standard error of a ~9% error on 1,000 test images (0.9 points).
    assert!(
        rmld <= compression + 0.9,
        "RMLD {rmld:.2}% is worse than Compression {compression:.2}% by more than 0.9 points"
    );
}
