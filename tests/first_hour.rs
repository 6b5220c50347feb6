//! What a new user reads: summaries in the words they type, and errors named for what they are.

mod cli_common;
mod gpu_common;

use std::process::Command;

use cli_common::{json, rmld, small_augment, small_augment_with, stderr, stdout};

#[test]
fn the_augment_summary_names_the_method_as_the_user_typed_it() {
    let tmp = tempfile::tempdir().unwrap();
    for (method, debug) in [("kernel-hmc", "KernelHmc"), ("hmc", "Hmc")] {
        let out = tmp.path().join(method);
        let run = small_augment(&out, &["--method", method, "--batch", "8"]);
        let stdout = stdout(&run);
        assert!(run.status.success(), "{}", stderr(&run));
        assert!(
            stdout.contains(&format!("rmld augment ({method})")),
            "summary: {stdout}"
        );
        assert!(
            !stdout.contains(debug),
            "a Rust name in the summary: {stdout}"
        );
    }
}

#[test]
fn encode_reports_the_mean_squared_error_per_pixel() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("enc");
    let run = rmld(&[
        "encode",
        "--count",
        "20",
        "--backend",
        "cpu",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let report: serde_json::Value = json(&out, "report.json");
    let d = report["dictionary"]["d"].as_f64().unwrap();
    let per_pixel = report["mean_squared_error_per_pixel"].as_f64().unwrap();
    let per_image = report["squared_error_per_image"].as_f64().unwrap();
    assert!(per_pixel > 0.0 && per_pixel.is_finite());
    assert!(
        (per_pixel * d - per_image).abs() <= 1e-9 * per_image,
        "per pixel {per_pixel} × d {d} should be the per-image sum {per_image}"
    );
    let stdout = stdout(&run);
    assert!(
        stdout.contains("mean squared error per pixel"),
        "summary: {stdout}"
    );
}

#[test]
fn a_default_minibatch_fits_small_classes_and_an_explicit_one_is_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |name: &str, extra: &[&str]| {
        let out = tmp.path().join(name);
        (small_augment(&out, extra), out)
    };
    // The first 150 digits hold about 15 of each class, fewer than the default minibatch of 64.
    let (fitted, out) = run("default", &[]);
    assert!(fitted.status.success(), "{}", stderr(&fitted));
    let notes = stdout(&fitted);
    assert!(
        notes.contains("minibatch was lowered from 64 to"),
        "{notes}"
    );
    let report: serde_json::Value = json(&out, "report.json");
    let used = report["batch_fitted_to_classes"]["used"].as_u64().unwrap();
    assert!(used > 0 && used < 64, "{report}");
    // Asked for on the command line, a minibatch larger than a class is refused.
    let (refused, _) = run("explicit", &["--batch", "64"]);
    assert_eq!(refused.status.code(), Some(2));
    let refusal = stderr(&refused);
    assert!(
        refusal.contains("--batch") && refusal.contains("fewer than the minibatch"),
        "{refusal}"
    );
    // The default preset's deform runs no dynamics: its minibatch is neither fitted (no note)
    // nor a reason to refuse.
    let out = tmp.path().join("deform");
    let deform = small_augment_with(&out, "quality", &["--batch", "64"]);
    assert!(deform.status.success(), "{}", stderr(&deform));
    let summary = stdout(&deform);
    assert!(!summary.contains("minibatch"), "{summary}");
    let report: serde_json::Value = json(&out, "report.json");
    assert!(report.get("batch_fitted_to_classes").is_none(), "{report}");
}

#[test]
fn resume_after_the_output_was_deleted_says_what_happened() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let run = rmld(&[
        "sample",
        "--backend",
        "cpu",
        "--chains",
        "3",
        "--samples",
        "5",
        "--steps",
        "2",
        "--checkpoint-every",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    std::fs::remove_file(out.join("codes.npy")).unwrap();
    let resumed = rmld(&["resume", out.to_str().unwrap()]);
    let stderr = stderr(&resumed);
    assert_eq!(resumed.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("codes.npy")
            && stderr.contains("missing")
            && stderr.contains("rmld sample"),
        "{stderr}"
    );
    assert!(!stderr.contains("cannot write"), "{stderr}");
}

#[test]
fn sizes_that_cannot_fit_are_refused_before_anything_is_allocated_or_created() {
    if !std::path::Path::new("/proc/meminfo").exists() {
        eprintln!("no /proc/meminfo: the available memory is unknown here, nothing is refused");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 6] = [
        (&["sample", "--chains", "1000000000"], "--chains"),
        (&["sample", "--atoms", "1000000000"], "--atoms"),
        (&["encode", "--atoms", "1000000000"], "--atoms"),
        (&["bench", "--images", "10000000000"], "--images"),
        (&["bench", "--ceiling-size", "100000"], "--ceiling-size"),
        (&["augment", "--ratio", "1:100000"], "--ratio"),
    ];
    for (i, (args, setting)) in cases.iter().enumerate() {
        let out = tmp.path().join(format!("out{i}"));
        let mut all = args.to_vec();
        all.extend_from_slice(&["--backend", "cpu", "--out", out.to_str().unwrap()]);
        let run = rmld(&all);
        let stderr = stderr(&run);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(setting) && stderr.contains("available") && stderr.contains("needs"),
            "{args:?}: {stderr}"
        );
        assert!(!out.exists(), "{args:?} created its output folder");
    }
}

#[test]
fn bench_measures_a_software_renderer_only_when_asked_and_labels_it() {
    let Some(context) = gpu_common::context("bench software adapter") else {
        return;
    };
    if context.adapter.get_info().device_type != wgpu::DeviceType::Cpu {
        eprintln!("a real GPU: nothing to check about software renderers");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let bench = |backend: &str| {
        let out = tmp.path().join(backend);
        let run = rmld(&[
            "bench",
            "--backend",
            backend,
            "--chains",
            "1",
            "--dim",
            "16",
            "--images",
            "20",
            "--ceiling-size",
            "32",
            "--outer",
            "1",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(run.status.success(), "{}", stderr(&run));
        (
            stdout(&run),
            std::fs::read_to_string(out.join("bench.csv")).unwrap(),
            std::fs::read_to_string(out.join("bench.json")).unwrap(),
        )
    };
    let (stdout, csv, _) = bench("all");
    assert!(!csv.lines().any(|l| l.starts_with("gpu,")), "{csv}");
    assert!(stdout.contains("software renderer"), "{stdout}");
    let (_, csv, json) = bench("gpu");
    assert!(csv.lines().any(|l| l.starts_with("gpu,")), "{csv}");
    assert!(json.contains("[software renderer, not a GPU]"), "{json}");
}

#[test]
fn graphics_driver_noise_stays_out_of_the_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_rmld"))
        .args(["sample", "--chains", "2", "--samples", "1", "--out"])
        .arg(tmp.path().join("run"))
        .env_remove("XDG_RUNTIME_DIR")
        .output()
        .unwrap();
    let stderr = stderr(&run);
    assert!(run.status.success(), "{stderr}");
    assert!(
        !stderr.contains("XDG_RUNTIME_DIR"),
        "driver noise: {stderr}"
    );
}

#[test]
fn a_report_says_when_mh_accepted_everything_and_so_changed_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    // The paper's scale (pixel-max 255): every RMLD proposal is accepted.
    let run = rmld(&[
        "sample",
        "--chains",
        "4",
        "--samples",
        "2",
        "--backend",
        "cpu",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let report: serde_json::Value = json(&out, "report.json");
    assert_eq!(
        report["acceptance"]["overall"].as_f64(),
        Some(1.0),
        "{report}"
    );
    let note = report["mh_note"].as_str().expect("an mh_note");
    assert!(note.contains("changed nothing"), "{note}");
}

#[test]
fn encode_uses_the_names_augment_uses_and_keeps_the_old_ones() {
    let tmp = tempfile::tempdir().unwrap();
    for (i, (limit, iterations)) in [
        ("--limit", "--lasso-iterations"),
        ("--count", "--iterations"),
    ]
    .iter()
    .enumerate()
    {
        let out = tmp.path().join(format!("enc{i}"));
        let run = rmld(&[
            "encode",
            limit,
            "7",
            iterations,
            "10",
            "--backend",
            "cpu",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(run.status.success(), "{}", stderr(&run));
        let report: serde_json::Value = json(&out, "report.json");
        assert_eq!(report["encoded"], 7);
        assert_eq!(report["iterations"], 10);
    }
    let help = rmld(&["encode", "--help"]);
    let help = stdout(&help);
    assert!(
        help.contains("--limit") && help.contains("--lasso-iterations"),
        "{help}"
    );
    assert!(
        !help.contains("  --count") && !help.contains("  --iterations"),
        "{help}"
    );
    let bad = rmld(&["encode", "--lasso-iterations", "0", "--backend", "cpu"]);
    let stderr = stderr(&bad);
    assert!(
        stderr.contains("invalid setting --lasso-iterations"),
        "{stderr}"
    );
}

#[test]
fn an_interrupted_bench_writes_the_rows_it_finished() {
    use std::io::{BufRead, BufReader};
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("bench");
    let chains: Vec<String> = (1..=400).map(|c| c.to_string()).collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rmld"))
        .args([
            "bench",
            "--backend",
            "cpu",
            "--dim",
            "64",
            "--images",
            "200",
            "--ceiling-size",
            "64",
            "--outer",
            "1",
            "--chains",
            &chains.join(","),
            "--out",
        ])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The progress notices go to stderr.
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let mut lines = stderr.lines();
    // Stop once the first row is measured.
    for line in lines.by_ref() {
        if line.unwrap().contains("cpu C = 1:") {
            break;
        }
    }
    let killed = Command::new("kill")
        .args(["-s", "TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    for _ in lines {}
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "a SIGTERM'd bench exits 128 + 15");
    let report: serde_json::Value = json(&out, "bench.json");
    assert_eq!(report["interrupted"], true, "{report}");
    let rows = report["rows"].as_array().unwrap();
    let made = rows.iter().filter(|r| r["status"] == "ok").count();
    assert!((1..400).contains(&made), "{made} rows measured");
    // The rest are there, each saying why it was not measured: bench.csv alone tells.
    assert_eq!(rows.len(), 400);
    let csv = std::fs::read_to_string(out.join("bench.csv")).unwrap();
    let unmade = csv
        .lines()
        .filter(|l| l.contains(",skipped,") && l.contains("not measured: the run was interrupted"))
        .count();
    assert_eq!(unmade, 400 - made, "{csv}");
}

#[test]
fn augment_help_shows_what_the_default_preset_sets() {
    let help = rmld(&["augment", "--help"]);
    let help = stdout(&help);
    for shown in [
        "[quality preset: 1]",
        "[quality preset: tangent]",
        "[quality preset: deform]",
        "[quality preset: 0.007]",
    ] {
        assert!(help.contains(shown), "augment --help lacks {shown}: {help}");
    }
    let sample = rmld(&["sample", "--help"]);
    assert!(!stdout(&sample).contains("quality preset:"));
}

#[test]
fn amortize_train_help_says_out_is_the_model_file() {
    let help = stdout(&rmld(&["amortize", "train", "--help"]));
    assert!(help.contains("--out <MODEL>"), "{help}");
    assert!(help.contains("The model file to write"), "{help}");
    assert!(
        !help.contains("Output folder (created if missing"),
        "{help}"
    );
}

#[test]
fn encode_help_lists_only_what_encode_uses() {
    let help = rmld(&["encode", "--help"]);
    let help = stdout(&help);
    for unused in ["--target", "--sigma2", "--tangent-k", "--tangent-scale"] {
        assert!(
            !help.contains(unused),
            "encode --help lists {unused}: {help}"
        );
    }
    for used in [
        "--data",
        "--dictionary",
        "--lambda",
        "--pixel-max",
        "--limit",
    ] {
        assert!(help.contains(used), "encode --help lacks {used}");
    }
}

#[test]
fn the_default_tangent_k_fits_small_classes_and_an_explicit_one_is_checked() {
    let tmp = tempfile::tempdir().unwrap();
    // The default (quality) preset's tangent target wants k + 1 = 17 images per class; the
    // first 150 digits hold about 15 of each.
    let run = |name: &str, extra: &[&str]| {
        let out = tmp.path().join(name);
        let mut args = vec![
            "augment",
            "--preset",
            "quality",
            "--method",
            "hmc",
            "--limit",
            "150",
            "--samples",
            "1",
            "--burn-in",
            "1",
            "--no-quality",
            "--no-original-codes",
            "--backend",
            "cpu",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        (rmld(&args), out)
    };
    let (fitted, out) = run("default", &[]);
    assert!(fitted.status.success(), "{}", stderr(&fitted));
    let said = stdout(&fitted);
    assert!(
        said.contains("tangent target's k was lowered from 16 to"),
        "{said}"
    );
    let report = json(&out, "report.json");
    let used = report["tangent_k_fitted_to_classes"]["used"]
        .as_u64()
        .unwrap();
    assert!(used > 0 && used < 16, "{report}");
    // Asked for on the command line, a k a class cannot hold is refused.
    let (refused, _) = run("explicit", &["--tangent-k", "16"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("--tangent-k"),
        "{}",
        stderr(&refused)
    );
}
