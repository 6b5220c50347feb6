//! Deterministic shards: `encode`, `sample` and `augment` with `--shard i/N` then `rmld merge`
//! write the single run's files byte for byte (CPU for N = 1, 3, 4; lavapipe for N = 3), and
//! broken shard sets are refused with exit status 2, a message naming the shard, and nothing
//! written.

mod cli_common;
mod gpu_common;

use std::path::{Path, PathBuf};

use cli_common::{json, rmld, stderr};

/// The files a single `rmld encode` writes (report.json is compared aside).
const FILES: &[&str] = &[
    "codes.npy",
    "reconstructions.npy",
    "dictionary.npy",
    "reconstructions.png",
];

/// `rmld encode` of the first `count` embedded digits with 30 FISTA iterations, seed 5.
fn encode(out: &Path, backend: &str, count: &str, extra: &[&str]) {
    let mut args = vec!["encode", "--count", count, "--iterations", "30"];
    if !extra.contains(&"--seed") {
        args.extend(["--seed", "5"]);
    }
    args.extend(["--backend", backend, "--out", out.to_str().unwrap()]);
    args.extend_from_slice(extra);
    let run = rmld(&args);
    assert!(run.status.success(), "{args:?}: {}", stderr(&run));
}

/// Runs the N shards into `dir/shard-i` (in reverse order: order must not matter).
fn shards(dir: &Path, backend: &str, count: &str, n: u32, extra: &[&str]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for i in (0..n).rev() {
        let out = dir.join(format!("shard-{i}"));
        let shard = format!("{i}/{n}");
        let mut all = vec!["--shard", shard.as_str()];
        all.extend_from_slice(extra);
        encode(&out, backend, count, &all);
        dirs.push(out);
    }
    dirs
}

fn merge(out: &Path, dirs: &[PathBuf]) -> std::process::Output {
    let mut args = vec!["merge".to_string(), out.display().to_string()];
    args.extend(dirs.iter().map(|d| d.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    rmld(&args)
}

/// The merged folder holds the single run's files byte for byte, and its report equals the
/// single run's but for `seconds`.
fn assert_same_as_single(single: &Path, merged: &Path, what: &str) {
    for name in FILES {
        let a = std::fs::read(single.join(name)).unwrap();
        let b = std::fs::read(merged.join(name)).unwrap();
        assert!(a == b, "{what}: {name} differs from the single run's");
    }
    let mut a = json(single, "report.json");
    let mut b = json(merged, "report.json");
    for report in [&mut a, &mut b] {
        report.as_object_mut().unwrap().remove("seconds");
    }
    assert_eq!(a, b, "{what}: report.json differs beyond seconds");
}

#[test]
fn merged_shards_equal_the_single_run_on_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    // 41 rows: parts of unequal sizes; 4 shards of 1024-row batches would hide a batch effect,
    // so the count is above one shard's worth of tiny parts but small enough to be quick.
    let single = dir.path().join("single");
    encode(&single, "cpu", "41", &[]);
    // N = 12: shards of 3 and 4 rows, where gemm takes another path than for 41 rows.
    for n in [1u32, 3, 4, 12] {
        let base = dir.path().join(format!("n{n}"));
        let dirs = shards(&base, "cpu", "41", n, &[]);
        let merged = base.join("merged");
        let run = merge(&merged, &dirs);
        assert!(run.status.success(), "N = {n}: {}", stderr(&run));
        assert_same_as_single(&single, &merged, &format!("N = {n}"));
        // A shard run again writes the same bytes (shards are idempotent).
        if n == 3 {
            let again = base.join("again");
            encode(&again, "cpu", "41", &["--shard", "1/3"]);
            for name in ["codes.npy", "reconstructions.npy", "manifest.json"] {
                let a = std::fs::read(base.join("shard-1").join(name)).unwrap();
                let b = std::fs::read(again.join(name)).unwrap();
                if name == "manifest.json" {
                    // The manifest hashes report.json, which holds the shard's seconds.
                    let strip = |t: &[u8]| {
                        let mut v: serde_json::Value = serde_json::from_slice(t).unwrap();
                        v["files"].as_object_mut().unwrap().remove("report.json");
                        v
                    };
                    assert_eq!(strip(&a), strip(&b));
                } else {
                    assert!(a == b, "shard 1/3 run twice: {name} differs");
                }
            }
        }
    }
}

/// A shard whose rows straddle the single run's 1024-row batches makes a backend per batch; the
/// merged report still counts every row's encoding (`lasso`), as the single run's does.
#[test]
fn merged_shards_across_a_batch_boundary_count_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let single = dir.path().join("single");
    encode(&single, "cpu", "1100", &[]);
    let dirs = shards(dir.path(), "cpu", "1100", 2, &[]);
    let merged = dir.path().join("merged");
    let run = merge(&merged, &dirs);
    assert!(run.status.success(), "{}", stderr(&run));
    assert_same_as_single(&single, &merged, "1100 rows, N = 2");
    assert_eq!(json(&merged, "report.json")["lasso"]["rows"], 1100);
}

#[test]
fn merged_shards_equal_the_single_run_on_lavapipe() {
    if gpu_common::context("shards on the GPU").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let single = dir.path().join("single");
    encode(&single, "gpu", "23", &[]);
    let dirs = shards(dir.path(), "gpu", "23", 3, &[]);
    let merged = dir.path().join("merged");
    let run = merge(&merged, &dirs);
    assert!(run.status.success(), "{}", stderr(&run));
    assert_same_as_single(&single, &merged, "GPU, N = 3");
    // A shard run on the CPU does not join shards run on the GPU (the numbers may differ).
    let cpu = dir.path().join("cpu-shard-0");
    encode(&cpu, "cpu", "23", &["--shard", "0/3"]);
    // dirs holds shards 2, 1, 0.
    let run = merge(
        &dir.path().join("mixed"),
        &[dirs[0].clone(), dirs[1].clone(), cpu],
    );
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert!(stderr(&run).contains("configuration"), "{}", stderr(&run));
    assert!(!dir.path().join("mixed").exists());
}

/// `rmld merge` refuses with exit status 2, a message holding `expect`, and no OUT folder.
fn assert_refused(dirs: &[PathBuf], expect: &[&str], what: &str) {
    let out = dirs[0]
        .parent()
        .unwrap()
        .join(format!("merged-{}", what.replace(' ', "-")));
    let run = merge(&out, dirs);
    let message = stderr(&run);
    assert_eq!(run.status.code(), Some(2), "{what}: {message}");
    for e in expect {
        assert!(message.contains(e), "{what}: {e:?} not in {message:?}");
    }
    assert_eq!(message.lines().count(), 1, "{what}: one line: {message}");
    assert!(!out.exists(), "{what}: {} was created", out.display());
}

#[test]
fn broken_shard_sets_are_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let dirs = shards(dir.path(), "cpu", "12", 3, &[]);
    // dirs holds shards 2, 1, 0 in that order.
    assert_refused(&dirs[..2], &["missing shard 0/3"], "missing");
    assert_refused(
        &[
            dirs[0].clone(),
            dirs[1].clone(),
            dirs[2].clone(),
            dirs[1].clone(),
        ],
        &["shard 1/3 is given twice"],
        "duplicated",
    );
    let other_seed = shards(&dir.path().join("seed"), "cpu", "12", 3, &["--seed", "6"]);
    assert_refused(
        &[dirs[0].clone(), dirs[1].clone(), other_seed[2].clone()],
        &["shard 0/3", "seed 6", "different runs"],
        "two seeds",
    );
    let other_lambda = shards(
        &dir.path().join("lambda"),
        "cpu",
        "12",
        3,
        &["--lambda", "4"],
    );
    assert_refused(
        &[other_lambda[0].clone(), dirs[1].clone(), dirs[2].clone()],
        &["shard 1/3", "configuration", "different runs"],
        "two configurations",
    );
    // A shard of another build (or of an older rmld, which recorded none): two builds may
    // draw differently from one seed.
    let manifest = dirs[1].join("manifest.json");
    let written = std::fs::read(&manifest).unwrap();
    let mut edited: serde_json::Value = serde_json::from_slice(&written).unwrap();
    assert_eq!(edited["rmld_build"], rmld::BUILD);
    for (build, named) in [
        ("0123456789abcdef", "by rmld build 0123456789abcdef"),
        ("", "by an older rmld"),
    ] {
        edited["rmld_build"] = build.into();
        std::fs::write(&manifest, serde_json::to_vec(&edited).unwrap()).unwrap();
        let this = format!("by rmld build {}", rmld::BUILD);
        assert_refused(
            &dirs,
            &["shard 1/3", named, &this, "one build"],
            &format!("two builds {build}"),
        );
    }
    std::fs::write(&manifest, &written).unwrap();
    // A truncated file: the merge names the shard and the file.
    let codes = dirs[1].join("codes.npy");
    let bytes = std::fs::read(&codes).unwrap();
    std::fs::write(&codes, &bytes[..bytes.len() / 2]).unwrap();
    assert_refused(&dirs, &["shard 1/3", "codes.npy", "truncated"], "truncated");
    std::fs::write(&codes, &bytes).unwrap();
    // A folder without a manifest.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_refused(
        &[dirs[0].clone(), empty.clone()],
        &["manifest.json", "shard"],
        "no manifest",
    );
    // Intact again: the merge succeeds.
    let merged = dir.path().join("ok");
    assert!(merge(&merged, &dirs).status.success());
    // Merging again into the merged folder: refused (its files would be replaced), they stay
    // as they are; with --force the merge replaces them.
    let codes = std::fs::read(merged.join("codes.npy")).unwrap();
    std::fs::write(merged.join("codes.npy"), b"mine").unwrap();
    let again = merge(&merged, &dirs);
    let message = stderr(&again);
    assert_eq!(again.status.code(), Some(2), "{message}");
    for part in ["already exists", "--force"] {
        assert!(message.contains(part), "{part:?} missing from: {message}");
    }
    assert_eq!(std::fs::read(merged.join("codes.npy")).unwrap(), b"mine");
    let mut args = vec![
        "merge".to_string(),
        merged.display().to_string(),
        "--force".into(),
    ];
    args.extend(dirs.iter().map(|d| d.display().to_string()));
    let forced = rmld(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(forced.status.success(), "{}", stderr(&forced));
    assert_eq!(std::fs::read(merged.join("codes.npy")).unwrap(), codes);
}

#[test]
fn bad_shard_options_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    for (args, expect) in [
        (vec!["encode", "--shard", "3/3"], "0 to 2"),
        (vec!["encode", "--shard", "0/0"], "at least 1"),
        (vec!["encode", "--shard", "x"], "i/N"),
        (
            vec!["sample", "--chains", "3", "--shard", "0/4"],
            "holds none of the 3 chains",
        ),
        (
            vec![
                "augment",
                "--preset",
                "quality",
                "--method",
                "hmc",
                "--limit",
                "150",
                "--ratio",
                "5:1",
                "--samples",
                "3",
                "--shard",
                "0/40",
            ],
            "holds none of the run's 10 chains",
        ),
        (
            vec![
                "sample",
                "--method",
                "mala",
                "--burn-in",
                "2",
                "--shard",
                "0/2",
            ],
            "pass --no-adapt with --shard",
        ),
    ] {
        let mut all = args.clone();
        all.extend(["--backend", "cpu", "--out", out.to_str().unwrap()]);
        let run = rmld(&all);
        let message = stderr(&run);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {message}");
        assert!(message.contains("--shard"), "{args:?}: {message}");
        assert!(message.contains(expect), "{args:?}: {message}");
        assert!(!out.exists(), "{args:?} wrote {}", out.display());
    }
}

#[test]
fn the_library_checks_the_shard_in_its_settings() {
    let mut settings = rmld::session::EncodeSettings::default();
    settings.problem.shard = Some(rmld::session::Shard { index: 2, count: 2 });
    let e = settings.validate().unwrap_err();
    assert!(
        matches!(e, rmld::Error::Usage { field: "shard", .. }),
        "{e}"
    );
    // Serialised (checkpoints, Python's settings) the shard is text, and left out when unset.
    settings.problem.shard = Some("1/2".parse().unwrap());
    let value = serde_json::to_value(&settings).unwrap();
    assert_eq!(value["problem"]["shard"], "1/2");
    let back: rmld::session::EncodeSettings = serde_json::from_value(value).unwrap();
    assert_eq!(back.problem.shard, settings.problem.shard);
    let unset = serde_json::to_value(rmld::session::EncodeSettings::default()).unwrap();
    assert!(unset["problem"].get("shard").is_none());
}

/// The files a single `rmld sample` writes (report.json is compared aside).
const SAMPLE_FILES: &[&str] = &[
    "codes.npy",
    "images.npy",
    "dictionary.npy",
    "samples.png",
    "sample_stats/acceptance_rate.npy",
    "sample_stats/energy.npy",
    "sample_stats/step_size.npy",
    "sample_stats/diverging.npy",
    "sample_stats/n_steps.npy",
];

/// `rmld sample` of 7 chains × 10 outer iterations (burn-in 3) with `extra`, seed 3.
fn sample(out: &Path, backend: &str, extra: &[&str]) {
    let mut args = vec![
        "sample",
        "--chains",
        "7",
        "--samples",
        "10",
        "--burn-in",
        "3",
        "--steps",
        "4",
        "--seed",
        "3",
    ];
    args.extend(["--backend", backend, "--out", out.to_str().unwrap()]);
    args.extend_from_slice(extra);
    let run = rmld(&args);
    assert!(run.status.success(), "{args:?}: {}", stderr(&run));
}

/// Samples the N shards into `dir/shard-i` (in reverse order), merges them into `dir/merged`
/// and checks the files against `single`'s, byte for byte, and the report but for the keys
/// that hold timings or the host's memory.
fn sample_shards_match(single: &Path, dir: &Path, backend: &str, n: u32, extra: &[&str]) {
    let mut dirs = Vec::new();
    for i in (0..n).rev() {
        let out = dir.join(format!("shard-{i}"));
        let shard = format!("{i}/{n}");
        let mut all = vec!["--shard", shard.as_str()];
        all.extend_from_slice(extra);
        sample(&out, backend, &all);
        dirs.push(out);
    }
    let merged = dir.join("merged");
    let run = merge(&merged, &dirs);
    let what = format!("sample {extra:?}, N = {n}");
    assert!(run.status.success(), "{what}: {}", stderr(&run));
    for name in SAMPLE_FILES {
        let a = std::fs::read(single.join(name)).unwrap();
        let b = std::fs::read(merged.join(name)).unwrap();
        assert!(a == b, "{what}: {name} differs from the single run's");
    }
    let strip = |dir: &Path| {
        let mut report = json(dir, "report.json");
        let r = report.as_object_mut().unwrap();
        r.remove("timings");
        r.remove("peak_rss_bytes");
        // A random id per run (what `rmld resume` checks a checkpoint against).
        r.remove("run_id");
        let diagnostics = r["diagnostics"].as_object_mut().unwrap();
        diagnostics.remove("min_ess_bulk_per_second");
        for q in diagnostics["quantities"].as_array_mut().unwrap() {
            q.as_object_mut().unwrap().remove("ess_bulk_per_second");
        }
        report
    };
    assert_eq!(
        strip(single),
        strip(&merged),
        "{what}: report.json differs beyond timings"
    );
}

#[test]
fn merged_sample_shards_equal_the_single_run_on_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let single = dir.path().join("single");
    sample(&single, "cpu", &[]);
    for n in [1u32, 3, 4] {
        sample_shards_match(&single, &dir.path().join(format!("n{n}")), "cpu", n, &[]);
    }
    // MALA from noise on the local target: per-chain anchors, MALA noise and noise starts.
    // And the tangent target's per-chain bases (every proposal accepted, so the dynamics'
    // draws reach the samples), and kernel HMC on the mixture target. MALA and HMC keep their
    // step size (`--no-adapt`): no warm-up needed (adapting runs: tests/shard_warm_up.rs).
    // And SSGL adapting its prior over the burn-in (its report's `adapt_iterations` too).
    let cases: [&[&str]; 4] = [
        &[
            "--method",
            "mala",
            "--init",
            "noise",
            "--target",
            "local",
            "--no-adapt",
        ],
        &["--method", "rmld", "--target", "tangent", "--no-mh"],
        &[
            "--method",
            "hmc",
            "--target",
            "mixture",
            "--eta",
            "0.001",
            "--no-adapt",
        ],
        &["--prior", "ssgl"],
    ];
    for (k, extra) in cases.iter().enumerate() {
        let single = dir.path().join(format!("single-{k}"));
        sample(&single, "cpu", extra);
        sample_shards_match(
            &single,
            &dir.path().join(format!("case-{k}")),
            "cpu",
            3,
            extra,
        );
    }
}

#[test]
fn merged_sample_shards_equal_the_single_run_on_lavapipe() {
    if gpu_common::context("sample shards on the GPU").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let single = dir.path().join("single");
    sample(&single, "gpu", &[]);
    sample_shards_match(&single, dir.path(), "gpu", 3, &[]);
    // Kernel HMC on the mixture target (its own streams and per-chain rows).
    let extra = [
        "--method",
        "hmc",
        "--target",
        "mixture",
        "--eta",
        "0.001",
        "--no-adapt",
    ];
    let single = dir.path().join("single-hmc");
    sample(&single, "gpu", &extra);
    sample_shards_match(&single, &dir.path().join("hmc"), "gpu", 3, &extra);
}

/// The files a single `rmld augment` writes without `--encode-test` (report.json aside).
const AUGMENT_FILES: &[&str] = &[
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "generated-images-idx3-ubyte.gz",
    "generated-labels-idx1-ubyte.gz",
    "generated-codes.npy",
    "generated-labels.npy",
    "generated.png",
    "codes.npy",
    "labels.npy",
    "dictionary.npy",
];

/// `rmld augment` of the first 150 embedded digits, 5 originals per new sample, 3 samples per
/// chain after a burn-in of 2 (10 chains over 10 classes: shards split classes), seed 4.
fn augment(out: &Path, backend: &str, extra: &[&str]) {
    let mut args = vec![
        "augment",
        "--preset",
        "paper",
        "--limit",
        "150",
        "--samples",
        "3",
        "--burn-in",
        "2",
        "--lasso-iterations",
        "30",
    ];
    for (option, default) in [("--seed", "4"), ("--ratio", "5:1")] {
        if !extra.contains(&option) {
            args.extend([option, default]);
        }
    }
    args.extend(["--backend", backend, "--out", out.to_str().unwrap()]);
    args.extend_from_slice(extra);
    let run = rmld(&args);
    assert!(run.status.success(), "{args:?}: {}", stderr(&run));
}

/// Runs the N augment shards into `dir/shard-i` (in reverse order) and returns their folders.
fn augment_shards(dir: &Path, backend: &str, n: u32, extra: &[&str]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for i in (0..n).rev() {
        let out = dir.join(format!("shard-{i}"));
        let shard = format!("{i}/{n}");
        let mut all = vec!["--shard", shard.as_str()];
        all.extend_from_slice(extra);
        augment(&out, backend, &all);
        dirs.push(out);
    }
    dirs
}

/// A report without the keys that hold timings (at any depth).
fn without_timings(mut report: serde_json::Value) -> serde_json::Value {
    // `code_cache` and `lasso` describe how this process encoded (a merge encodes nothing and
    // reads no cache), not the run's results.
    const TIMINGS: &[&str] = &[
        "code_cache",
        // How long this process expected to take (leaving out what its code cache holds).
        "estimate",
        "lasso",
        "seconds",
        "phase_seconds",
        "timings",
        "generation_seconds",
        "samples_per_second",
    ];
    fn strip(value: &mut serde_json::Value) {
        if let Some(object) = value.as_object_mut() {
            object.retain(|k, _| !TIMINGS.contains(&k.as_str()));
            object.values_mut().for_each(strip);
        }
    }
    strip(&mut report);
    report
}

/// Augments the N shards, merges them into `dir/merged` and checks the files against
/// `single`'s byte for byte, and the report (quality metrics included) but for timings.
fn augment_shards_match(single: &Path, dir: &Path, backend: &str, n: u32, extra: &[&str]) {
    let dirs = augment_shards(dir, backend, n, extra);
    let merged = dir.join("merged");
    let run = merge(&merged, &dirs);
    let what = format!("augment {extra:?} on {backend}, N = {n}");
    assert!(run.status.success(), "{what}: {}", stderr(&run));
    for name in AUGMENT_FILES {
        let a = std::fs::read(single.join(name));
        let b = std::fs::read(merged.join(name));
        match (a, b) {
            (Ok(a), Ok(b)) => assert!(a == b, "{what}: {name} differs from the single run's"),
            (Err(_), Err(_)) => {}
            (a, b) => panic!(
                "{what}: {name} in one folder only ({} / {})",
                a.is_ok(),
                b.is_ok()
            ),
        }
    }
    let (a, b) = (json(single, "report.json"), json(&merged, "report.json"));
    // The quality metrics are in the compared report: the merge recomputes them on the whole set.
    assert!(a["quality"].is_object(), "{what}: no quality metrics");
    assert_eq!(
        without_timings(a),
        without_timings(b),
        "{what}: report.json differs beyond timings"
    );
}

#[test]
fn merged_augment_shards_equal_the_single_run_on_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let single = dir.path().join("single");
    augment(&single, "cpu", &["--reencode"]);
    for n in [1u32, 3, 4] {
        let base = dir.path().join(format!("n{n}"));
        augment_shards_match(&single, &base, "cpu", n, &["--reencode"]);
    }
    // Kernel HMC (images, no codes) and Compression (LASSO starts only, one chain per sample);
    // and 2 samples re-encoded per shard against the single run's 10 (when gemm took the CPU's
    // products, its path by the row count made these differ unless the shard padded them; the
    // packed kernels sum in one order whatever the rows); and deform without --reencode, which
    // writes no codes (its shards once stopped writing a codes part of no values).
    let cases: [&[&str]; 4] = [
        &["--method", "kernel-hmc"],
        &["--method", "compression"],
        &["--ratio", "50:1", "--reencode"],
        &["--method", "deform", "--reencode", "false"],
    ];
    for (k, extra) in cases.iter().enumerate() {
        let single = dir.path().join(format!("single-{k}"));
        augment(&single, "cpu", extra);
        let n = if k == 2 { 5 } else { 3 };
        augment_shards_match(
            &single,
            &dir.path().join(format!("case-{k}")),
            "cpu",
            n,
            extra,
        );
    }
}

#[test]
fn merged_augment_shards_equal_the_single_run_on_lavapipe() {
    if gpu_common::context("augment shards on the GPU").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let single = dir.path().join("single");
    augment(&single, "gpu", &["--reencode"]);
    augment_shards_match(&single, dir.path(), "gpu", 3, &["--reencode"]);
}

#[test]
fn broken_augment_shard_sets_are_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let dirs = augment_shards(dir.path(), "cpu", 3, &[]);
    // dirs holds shards 2, 1, 0 in that order.
    assert_refused(&dirs[1..], &["missing shard 2/3"], "augment missing");
    assert_refused(
        &[
            dirs[0].clone(),
            dirs[1].clone(),
            dirs[1].clone(),
            dirs[2].clone(),
        ],
        &["shard 1/3 is given twice"],
        "augment duplicated",
    );
    let other_seed = augment_shards(&dir.path().join("seed"), "cpu", 3, &["--seed", "6"]);
    assert_refused(
        &[dirs[0].clone(), other_seed[1].clone(), dirs[2].clone()],
        &["shard 1/3", "seed 6", "different runs"],
        "augment two seeds",
    );
    let other_ratio = augment_shards(&dir.path().join("ratio"), "cpu", 3, &["--eta", "0.02"]);
    assert_refused(
        &[dirs[0].clone(), dirs[1].clone(), other_ratio[2].clone()],
        &["shard 0/3", "different runs"],
        "augment two configurations",
    );
    let images = dirs[2].join("generated-images.npy");
    let bytes = std::fs::read(&images).unwrap();
    std::fs::write(&images, &bytes[..bytes.len() - 7]).unwrap();
    assert_refused(
        &dirs,
        &["shard 0/3", "generated-images.npy", "truncated"],
        "augment truncated",
    );
    std::fs::write(&images, &bytes).unwrap();
    let merged = dir.path().join("ok");
    let run = merge(&merged, &dirs);
    assert!(run.status.success(), "{}", stderr(&run));
}

/// Asks the run to stop once it has reported `after` steps of progress in `phase`.
struct StopAfter {
    phase: &'static str,
    after: u64,
    current: std::sync::Mutex<&'static str>,
    seen: std::sync::atomic::AtomicU64,
}

impl StopAfter {
    fn new(phase: &'static str, after: u64) -> Self {
        StopAfter {
            phase,
            after,
            current: std::sync::Mutex::new(""),
            seen: Default::default(),
        }
    }
}

impl rmld::session::Observer for StopAfter {
    fn phase_start(&self, phase: &rmld::session::Phase) {
        *self.current.lock().unwrap() = phase.name;
    }
    fn phase_advance(&self, position: u64) {
        if *self.current.lock().unwrap() == self.phase {
            self.seen
                .fetch_max(position, std::sync::atomic::Ordering::SeqCst);
        }
    }
    fn stop_requested(&self) -> bool {
        self.seen.load(std::sync::atomic::Ordering::SeqCst) >= self.after
    }
}

/// The bytes of each of `names` in `dir` (a missing file as None).
fn files(dir: &Path, names: &[&str]) -> Vec<Option<Vec<u8>>> {
    names
        .iter()
        .map(|n| std::fs::read(dir.join(n)).ok())
        .collect()
}

#[test]
fn an_interrupted_sample_shard_resumed_merges_to_the_single_run() {
    use rmld::session::{merge, BackendChoice, SampleSettings, Sampler, Silent};
    let dir = tempfile::tempdir().unwrap();
    let settings = |out: PathBuf, shard: Option<&str>| {
        let mut s = SampleSettings {
            chains: 7,
            samples: 10,
            burn_in: 3,
            ..Default::default()
        };
        s.dynamics.steps = 4;
        s.problem.seed = 3;
        s.problem.backend = BackendChoice::Cpu;
        s.problem.out = out;
        s.problem.shard = shard.map(|t| t.parse().unwrap());
        s
    };
    let single = dir.path().join("single");
    Sampler::new(settings(single.clone(), None))
        .run(&Silent)
        .unwrap();
    let dirs: Vec<PathBuf> = (0..3).map(|i| dir.path().join(format!("s{i}"))).collect();
    for (i, out) in dirs.iter().enumerate() {
        let shard = format!("{i}/3");
        let sampler = Sampler::new(settings(out.clone(), Some(&shard)));
        if i == 1 {
            // Stopped after 4 of its 10 outer iterations: a checkpoint, no manifest.
            let outcome = sampler.run(&StopAfter::new("sampling", 4)).unwrap();
            assert!(outcome.interrupted);
            assert!(out.join(rmld::session::CHECKPOINT).exists());
            let e = merge(&dir.path().join("early"), &dirs, false).unwrap_err();
            assert!(e.to_string().contains("rmld resume"), "{e}");
            assert!(!dir.path().join("early").exists());
            let outcome = Sampler::resume(out, &Silent).unwrap();
            assert!(!outcome.interrupted);
        } else {
            sampler.run(&Silent).unwrap();
        }
    }
    let merged = dir.path().join("merged");
    merge(&merged, &dirs, false).unwrap();
    assert_eq!(
        files(&single, SAMPLE_FILES),
        files(&merged, SAMPLE_FILES),
        "the merge with a resumed shard differs from the single run"
    );
}

#[test]
fn an_interrupted_augment_shard_run_again_merges_to_the_single_run() {
    use rmld::session::{merge, AugmentSettings, Augmenter, BackendChoice, Silent};
    let dir = tempfile::tempdir().unwrap();
    let settings = |out: PathBuf, shard: Option<&str>| {
        let mut s = AugmentSettings::paper();
        s.limit = Some(150);
        s.ratio = 5.0;
        s.samples = 3;
        s.burn_in = 2;
        s.dynamics.lasso_iterations = 30;
        s.problem.seed = 4;
        s.problem.backend = BackendChoice::Cpu;
        s.problem.out = out;
        s.problem.force = true;
        s.problem.shard = shard.map(|t| t.parse().unwrap());
        s
    };
    let single = dir.path().join("single");
    Augmenter::new(settings(single.clone(), None))
        .run(&Silent)
        .unwrap();
    let dirs: Vec<PathBuf> = (0..3).map(|i| dir.path().join(format!("s{i}"))).collect();
    for (i, out) in dirs.iter().enumerate() {
        let shard = format!("{i}/3");
        let augmenter = Augmenter::new(settings(out.clone(), Some(&shard)));
        if i == 2 {
            // An augmentation does not resume: stopped in its burn-in it keeps no output and
            // no manifest, and is run again.
            let outcome = augmenter.run(&StopAfter::new("burn-in", 1)).unwrap();
            assert!(outcome.interrupted);
            assert!(!out.join(rmld::session::MANIFEST).exists());
            assert!(merge(&dir.path().join("early"), &dirs, false).is_err());
        }
        assert!(!augmenter.run(&Silent).unwrap().interrupted);
    }
    let merged = dir.path().join("merged");
    merge(&merged, &dirs, false).unwrap();
    assert_eq!(
        files(&single, AUGMENT_FILES),
        files(&merged, AUGMENT_FILES),
        "the merge with a shard run again differs from the single run"
    );
}
