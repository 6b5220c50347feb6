//! `rmld sample --prior ssgl` as sparse Bayesian regression on a user's design matrix
//! (`--dictionary X.npy --data y.npy`), and its settings' errors as the command line prints them.

mod cli_common;
#[cfg(feature = "gpu")]
#[path = "gpu_common/mod.rs"]
mod gpu_common;

use cli_common::{json, rmld, stderr};

/// A small sparse regression: X (n × p) with entries from a fixed generator, β = (3, −2, 1.5, 0,
/// …), y = Xβ + noise; written as X.npy (n, p) and y.npy (1, n) into `dir`. `positive`: X's
/// entries are the generator's absolute values and β = (3, 2, 1.5, 0, …), so every response is
/// positive (and most above 1). Returns β's nonzero head.
fn write_problem(dir: &std::path::Path, (n, p): (usize, usize), positive: bool) -> [f32; 3] {
    let mut s = 12345u64;
    let mut normal = move || {
        // The sum of 12 uniforms minus 6: close enough to N(0, 1) for a design matrix.
        (0..12)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 40) as f32) / (1u64 << 24) as f32
            })
            .sum::<f32>()
            - 6.0
    };
    let x: Vec<f32> = (0..n * p)
        .map(|_| if positive { normal().abs() } else { normal() })
        .collect();
    let beta = if positive {
        [3.0f32, 2.0, 1.5]
    } else {
        [3.0f32, -2.0, 1.5]
    };
    let y: Vec<f32> = x
        .chunks(p)
        .map(|row| row.iter().zip(beta).map(|(a, b)| a * b).sum::<f32>() + 0.5 * normal())
        .collect();
    assert!(!positive || y.iter().all(|&v| v > 0.0), "{y:?}");
    rmld::io::write_npy_f32(&dir.join("X.npy"), &[n, p], &x).unwrap();
    rmld::io::write_npy_f32(&dir.join("y.npy"), &[1, n], &y).unwrap();
    beta
}

/// Samples the regression in `dir` (SSGL prior, MALA, 300 kept draws of 2 chains) with `extra`
/// options; returns the run and the posterior means of β.
fn regress(dir: &std::path::Path, p: usize, extra: &[&str]) -> (std::process::Output, Vec<f32>) {
    let out = dir.join("out");
    let path = |name: &str| dir.join(name).display().to_string();
    let (x, y, out_text) = (path("X.npy"), path("y.npy"), out.display().to_string());
    let mut args = vec![
        "sample",
        "--prior",
        "ssgl",
        "--dictionary",
        &x,
        "--data",
        &y,
        "--sigma2",
        "0.25",
        "--lambda",
        "1",
        "--method",
        "mala",
        "--eta",
        "0.0005",
        "--chains",
        "2",
        "--samples",
        "600",
        "--burn-in",
        "300",
        "--backend",
        "cpu",
        "--out",
        &out_text,
    ];
    args.extend_from_slice(extra);
    let run = rmld(&args);
    assert!(run.status.success(), "{}", stderr(&run));
    let report = json(&out, "report.json");
    assert_eq!(report["prior"]["kind"], "ssgl", "{report}");
    assert_eq!(report["prior"]["nonfinite_updates_discarded"], 0);
    let codes = rmld::io::read_npy(&out.join("codes.npy")).unwrap();
    assert_eq!(codes.shape, vec![300, 2, p]);
    let rmld::io::Pixels::F32(values) = codes.data else {
        panic!("codes are f32")
    };
    let draws = (values.len() / p) as f32;
    let mean: Vec<f32> = (0..p)
        .map(|j| values.iter().skip(j).step_by(p).sum::<f32>() / draws)
        .collect();
    (run, mean)
}

/// β's head recovered within 0.5, and the rest near 0.
fn assert_recovered(mean: &[f32], beta: [f32; 3]) {
    let rest = mean[3..].iter().map(|v| v.abs()).sum::<f32>() / (mean.len() - 3) as f32;
    eprintln!("posterior means {:?}, mean |rest| {rest}", &mean[..5]);
    for (j, want) in beta.iter().enumerate() {
        assert!(
            (mean[j] - want).abs() < 0.5,
            "beta {j}: {} vs {want}",
            mean[j]
        );
    }
    assert!(rest < 0.1, "mean |beta_j| beyond the signal: {rest}");
}

#[test]
fn sparse_regression_from_the_command_line_recovers_the_signal() {
    let dir = tempfile::tempdir().unwrap();
    let (n, p) = (40, 80);
    let beta = write_problem(dir.path(), (n, p), false);
    let (_, mean) = regress(dir.path(), p, &["--pixel-max", "1"]);
    assert_recovered(&mean, beta);
}

#[test]
fn positive_responses_are_regressed_as_they_are_with_data_scale_raw() {
    let dir = tempfile::tempdir().unwrap();
    let (n, p) = (40, 80);
    let beta = write_problem(dir.path(), (n, p), true);
    // Taken as pixels (the default), positive float data is divided by its maximum: said so.
    let (pixels, scaled) = regress(dir.path(), p, &["--pixel-max", "1"]);
    assert!(
        scaled[0] < 1.0,
        "β₀ {} is 3 over the largest response",
        scaled[0]
    );
    let note = String::from_utf8_lossy(&pixels.stderr).into_owned();
    assert!(
        note.contains("y.npy: float data up to") && note.contains("--data-scale raw"),
        "{note}"
    );
    std::fs::remove_dir_all(dir.path().join("out")).unwrap();
    let (raw, mean) = regress(dir.path(), p, &["--data-scale", "raw"]);
    assert!(
        !stderr(&raw).contains("float data up to"),
        "{}",
        stderr(&raw)
    );
    assert_recovered(&mean, beta);
}

#[test]
fn bad_ssgl_settings_name_their_option_and_range() {
    for (flag, value, range) in [
        ("--ssgl-v0", "0", "> 0"),
        ("--ssgl-v1", "-1", "> 0"),
        ("--ssgl-a", "0", "> 0"),
        ("--ssgl-b", "0", "> 0"),
        ("--ssgl-delta", "1.5", "(0, 1)"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let setting = format!("{flag}={value}");
        let run = rmld(&[
            "sample",
            "--prior",
            "ssgl",
            &setting,
            "--backend",
            "cpu",
            "--samples",
            "2",
            "--out",
            &dir.path().display().to_string(),
        ]);
        let err = stderr(&run);
        assert_eq!(run.status.code(), Some(2), "{flag}: {err}");
        assert!(err.contains(flag) && err.contains(range), "{flag}: {err}");
    }
}

#[test]
fn bench_measures_ssgl_beside_laplace_in_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let run = rmld(&[
        "bench",
        "--backend",
        "cpu",
        "--prior",
        "ssgl",
        "--chains",
        "2",
        "--outer",
        "1",
        "--dim",
        "16",
        "--images",
        "50",
        "--ceiling-size",
        "64",
        "--out",
        &out,
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let report = json(dir.path(), "bench.json");
    let backends: Vec<&str> = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["backend"].as_str().unwrap())
        .collect();
    assert_eq!(backends, ["cpu", "cpu-ssgl"], "{report}");
    for row in report["rows"].as_array().unwrap() {
        assert!(
            row["chain_steps_per_second"].as_f64().unwrap() > 0.0,
            "{row}"
        );
    }
}

/// `rmld bench --backend gpu --prior ssgl` measures the GPU with SSGL (rows `gpu-ssgl`) beside
/// Laplace in one run (on lavapipe: for correctness, not speed).
#[cfg(feature = "gpu")]
#[test]
fn bench_measures_gpu_ssgl_beside_laplace() {
    if gpu_common::context("bench_measures_gpu_ssgl_beside_laplace").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let run = rmld(&[
        "bench",
        "--backend",
        "gpu",
        "--prior",
        "ssgl",
        "--f16",
        "--chains",
        "2",
        "--outer",
        "1",
        "--dim",
        "16",
        "--images",
        "50",
        "--ceiling-size",
        "64",
        "--out",
        &out,
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let report = json(dir.path(), "bench.json");
    let rows = report["rows"].as_array().unwrap();
    let backends: Vec<&str> = rows
        .iter()
        .map(|r| r["backend"].as_str().unwrap())
        .collect();
    // The SSGL and the f16-dictionary variants beside the plain row, at every chain count.
    assert_eq!(backends, ["gpu", "gpu-ssgl", "gpu-f16"], "{report}");
    for row in rows {
        assert!(
            row["chain_steps_per_second"].as_f64().unwrap() > 0.0,
            "{row}"
        );
    }
}
