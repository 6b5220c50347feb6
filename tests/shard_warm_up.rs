//! Shards of runs whose chains depend on each other during the burn-in (an adapted step size,
//! an automatic burn-in): the whole run's warm-up once (`--warm-up-only`), the shards from it
//! (`--warm-up`), then `rmld merge` write the single run's files byte for byte (`sample` with
//! RMLD, MALA and HMC at their defaults; `augment` at its default and with `--adapt`; on the
//! CPU and on lavapipe). A shard that cannot reproduce its run refuses it by name.

mod cli_common;
mod common;
mod gpu_common;

use std::path::{Path, PathBuf};

use cli_common::{json, rmld, stderr};

/// `rmld sample` of 7 chains × 10 outer iterations (no `--burn-in`: the method's default).
const SAMPLE: &[&str] = &[
    "sample",
    "--chains",
    "7",
    "--samples",
    "10",
    "--steps",
    "4",
    "--seed",
    "3",
];

/// `rmld augment` with the quality preset's HMC chains (its default method before deform; a
/// fixed burn-in of 20) on the first 150 embedded digits, 5 originals per new sample (10 chains
/// over 10 classes), seed 4; the cases give `--samples`.
const AUGMENT: &[&str] = &[
    "augment",
    "--preset",
    "quality",
    "--method",
    "hmc",
    "--limit",
    "150",
    "--ratio",
    "5:1",
    "--lasso-iterations",
    "30",
    "--seed",
    "4",
];

/// `base` + `extra` on `backend` into `out`; the run must succeed.
fn run(base: &[&str], backend: &str, out: &Path, extra: &[&str]) {
    let mut args = base.to_vec();
    args.extend_from_slice(extra);
    args.extend(["--backend", backend, "--out", out.to_str().unwrap()]);
    let done = rmld(&args);
    assert!(done.status.success(), "{args:?}: {}", stderr(&done));
}

/// The files under `dir` but its report and checkpoints, as paths relative to it (sorted).
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if !path.ends_with("report.json") && !path.ends_with("checkpoint.rmld") {
                found.push(path.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    found.sort();
    found
}

/// A report without the keys that hold timings, the host's memory or how this process encoded
/// (at any depth).
fn without_timings(mut report: serde_json::Value) -> serde_json::Value {
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
        "peak_rss_bytes",
        "min_ess_bulk_per_second",
        "ess_bulk_per_second",
        // Random per run (a checkpoint's identity), never equal between two runs.
        "run_id",
    ];
    fn strip(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(object) => {
                object.retain(|k, _| !TIMINGS.contains(&k.as_str()));
                object.values_mut().for_each(strip);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut report);
    report
}

/// The single run of `base` + `extra`, its warm-up, its 3 shards from the warm-up (in reverse
/// order) and their merge, in `dir`: the merge's files equal the single run's byte for byte,
/// its report but for timings.
fn shards_from_warm_up_match(dir: &Path, backend: &str, base: &[&str], extra: &[&str]) {
    shards_match(dir, backend, (base, extra), true);
}

/// As [`shards_from_warm_up_match`], the shards started from the warm-up when `warm_up`, else
/// run on their own (a run with no burn-in to share).
fn shards_match(dir: &Path, backend: &str, (base, extra): (&[&str], &[&str]), warm_up: bool) {
    let what = format!("{} {extra:?} on {backend}", base[0]);
    let single = dir.join("single");
    run(base, backend, &single, extra);
    let warm = dir.join("warm-up");
    if warm_up {
        let mut warm_extra = extra.to_vec();
        warm_extra.push("--warm-up-only");
        run(base, backend, &warm, &warm_extra);
    }
    let mut dirs = Vec::new();
    for i in (0..3).rev() {
        let out = dir.join(format!("shard-{i}"));
        let shard = format!("{i}/3");
        let mut all = extra.to_vec();
        all.extend(["--shard", &shard]);
        if warm_up {
            all.extend(["--warm-up", warm.to_str().unwrap()]);
        }
        // How often a shard checkpoints changes none of its draws: not part of the run.
        if base[0] == "sample" && i == 1 {
            all.extend(["--checkpoint-minutes", "5", "--checkpoint-every", "1000"]);
        }
        run(base, backend, &out, &all);
        dirs.push(out);
    }
    dirs.reverse();
    let merged = dir.join("merged");
    let mut args = vec!["merge", merged.to_str().unwrap()];
    args.extend(dirs.iter().map(|d| d.to_str().unwrap()));
    let done = rmld(&args);
    assert!(done.status.success(), "{what}: merge: {}", stderr(&done));
    let names = files(&single);
    assert!(names.len() >= 5, "{what}: the single run wrote {names:?}");
    assert_eq!(names, files(&merged), "{what}: the merge wrote other files");
    for name in &names {
        let a = std::fs::read(single.join(name)).unwrap();
        let b = std::fs::read(merged.join(name)).unwrap();
        assert!(
            a == b,
            "{what}: {} differs from the single run's",
            name.display()
        );
    }
    assert_eq!(
        without_timings(json(&single, "report.json")),
        without_timings(json(&merged, "report.json")),
        "{what}: report.json differs beyond timings"
    );
}

#[test]
fn sample_shards_from_a_warm_up_equal_the_single_run_on_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    for (k, method) in ["rmld", "mala", "hmc"].iter().enumerate() {
        let case = dir.path().join(format!("case-{k}"));
        shards_from_warm_up_match(&case, "cpu", SAMPLE, &["--method", method]);
    }
    // An automatic burn-in that settles before its cap (ended by its check of all the chains).
    let long = ["sample", "--chains", "5", "--samples", "40", "--seed", "2"];
    let case = dir.path().join("settled");
    shards_from_warm_up_match(&case, "cpu", &long, &["--method", "mala"]);
    let report = json(&case.join("single"), "report.json");
    let settled = &report["burn_in_auto"]["settled"];
    assert!(settled.is_boolean(), "no automatic burn-in in {report}");
}

/// augment's default method (deform: one exact draw per image, no chains to warm up, codes by
/// re-encoding) sharded by its draws: the merge is the single run's files.
#[test]
fn augment_default_shards_equal_the_single_run_on_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let base = [
        "augment",
        "--limit",
        "160",
        "--ratio",
        "4:1",
        "--lasso-iterations",
        "30",
        "--seed",
        "7",
    ];
    shards_match(dir.path(), "cpu", (&base, &[]), false);
    let report = json(&dir.path().join("single"), "report.json");
    assert_eq!(
        report["method"], "deform",
        "not the default method: {report}"
    );
    // Eight new images per original: past four, half are interpolants, left unsmoothed; a
    // shard must tell its interpolant rows as the whole run does.
    let many = dir.path().join("interpolants");
    let base = [
        "augment",
        "--limit",
        "60",
        "--ratio",
        "1:8",
        "--lasso-iterations",
        "30",
        "--seed",
        "5",
    ];
    shards_match(&many, "cpu", (&base, &[]), false);
    // On images of 28 px the draws are moved by whole pixels and shaded, each draw's field its
    // own stream: a shard shades its range as the whole run does.
    let data = dir.path().join("garments.npy");
    let labels = dir.path().join("garments-labels.npy");
    write_garments(&data, &labels, 24, false);
    let shaded = dir.path().join("shaded");
    let base = [
        "augment",
        "--data",
        data.to_str().unwrap(),
        "--labels",
        labels.to_str().unwrap(),
        "--ratio",
        "1:2",
        "--lasso-iterations",
        "20",
    ];
    shards_match(&shaded, "cpu", (&base, &[]), false);
    let report = json(&shaded.join("single"), "report.json");
    assert!(
        report["shade"].as_f64().unwrap() > 0.0,
        "not shaded: {report}"
    );
    // Dark ink on white is drawn inverted: each shard finds the whole set's background.
    write_garments(&data, &labels, 24, true);
    let white = dir.path().join("white");
    shards_match(&white, "cpu", (&base, &[]), false);
    let report = json(&white.join("single"), "report.json");
    assert_eq!(report["background"], "bright", "{report}");
    assert_eq!(report["ink"], "surfaces", "{report}");
    // Strokes brought past four new images per original take elastic distortions, each its own
    // stream and left unsmoothed: a shard distorts and tells its rows as the whole run does.
    write_strokes(&data, &labels, 24);
    let strokes = dir.path().join("strokes");
    let mut many = base.to_vec();
    many[6] = "1:8";
    shards_match(&strokes, "cpu", (&many, &[]), false);
    let report = json(&strokes.join("single"), "report.json");
    assert_eq!(report["ink"], "strokes", "{report}");
}

/// `n` stroke images (`common::stroke_images`) in two classes, and their labels.
fn write_strokes(data: &Path, labels: &Path, n: usize) {
    let classes: Vec<i64> = (0..n as i64).map(|i| i % 2).collect();
    rmld::io::write_npy_u8(data, &[n, 28, 28], &common::stroke_images(n)).unwrap();
    rmld::io::write_npy_i64(labels, &[n], &classes).unwrap();
}

/// `n` images of 28 × 28 (uint8) in two classes, a bright square or a graded bar on a dark
/// ground (`inverted`: dark on white), moved about, and their labels.
fn write_garments(data: &Path, labels: &Path, n: usize, inverted: bool) {
    let mut pixels = vec![0u8; n * 28 * 28];
    for (i, image) in pixels.chunks_mut(28 * 28).enumerate() {
        let (top, left) = (6 + i % 5, 5 + (i * 3) % 7);
        for r in top..top + 14 {
            for c in left..left + 12 {
                let v = if i % 2 == 0 {
                    220
                } else {
                    60 + 12 * (c - left)
                };
                image[r * 28 + c] = v as u8;
            }
        }
    }
    if inverted {
        pixels.iter_mut().for_each(|v| *v = 255 - *v);
    }
    let classes: Vec<i64> = (0..n as i64).map(|i| i % 2).collect();
    rmld::io::write_npy_u8(data, &[n, 28, 28], &pixels).unwrap();
    rmld::io::write_npy_i64(labels, &[n], &classes).unwrap();
}

#[test]
fn augment_shards_from_a_warm_up_equal_the_single_run_on_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [&[&str]; 3] = [
        &["--samples", "22"],
        &["--adapt", "--samples", "22"],
        &["--adapt", "--burn-in", "auto", "--samples", "12"],
    ];
    for (k, extra) in cases.iter().enumerate() {
        let case = dir.path().join(format!("case-{k}"));
        shards_from_warm_up_match(&case, "cpu", AUGMENT, extra);
    }
    // One kept draw per chain: three chains per class, each anchored to its own image. The
    // steps are per class (ten, labelled by class), not per chain, and a shard's chains find
    // their class's step (they once indexed the whole run's steps by their own numbering).
    let case = dir.path().join("classes-of-three-chains");
    shards_from_warm_up_match(&case, "cpu", AUGMENT, &["--adapt", "--samples", "1"]);
    let report = json(&case.join("single"), "report.json");
    let classes = report["adaptation"]["classes"].as_array().unwrap();
    let labels: Vec<u64> = classes
        .iter()
        .map(|c| c["class"].as_u64().unwrap())
        .collect();
    assert_eq!(labels, (0..10).collect::<Vec<u64>>(), "{report}");
    let chains = &report["settings"]["chains"];
    assert_eq!(chains, 30, "not three chains per class: {chains}");
}

#[test]
fn shards_from_a_warm_up_equal_the_single_run_on_lavapipe() {
    if gpu_common::context("shards from a warm-up on the GPU").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let case = dir.path().join("sample-hmc");
    shards_from_warm_up_match(&case, "gpu", SAMPLE, &["--method", "hmc"]);
    // The paper's preset: the quality preset's tangent target is slow on lavapipe.
    let case = dir.path().join("augment-adapt");
    let extra = [
        "--preset",
        "paper",
        "--method",
        "mala",
        "--adapt",
        "--burn-in",
        "auto",
        "--samples",
        "4",
    ];
    // AUGMENT without its preset and method.
    let base = [&AUGMENT[..1], &AUGMENT[5..]].concat();
    shards_from_warm_up_match(&case, "gpu", &base, &extra);
    // augment's default (deform: draws on the CPU, re-encoding on the GPU), shards on their own.
    let case = dir.path().join("augment-default");
    shards_match(&case, "gpu", (&base, &["--samples", "2"]), false);
}

/// `base` + `extra` on the CPU into `dir/refused` fails with exit status 2, a message holding
/// every one of `expect`, and writes nothing.
fn assert_refused(dir: &Path, base: &[&str], extra: &[&str], expect: &[&str]) {
    let out = dir.join("refused");
    let mut args = base.to_vec();
    args.extend_from_slice(extra);
    args.extend(["--backend", "cpu", "--out", out.to_str().unwrap()]);
    let done = rmld(&args);
    let message = stderr(&done);
    assert_eq!(done.status.code(), Some(2), "{args:?}: {message}");
    for text in expect {
        assert!(message.contains(text), "{args:?}: no {text:?} in {message}");
    }
    assert!(!out.exists(), "{args:?} wrote {}", out.display());
}

#[test]
fn shards_that_cannot_reproduce_their_run_refuse_it_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Without the warm-up: the run's adaptation or automatic burn-in, named.
    let needs = ["shard 1/3", "--warm-up-only", "--warm-up"];
    for (method, why) in [("mala", "automatic burn-in"), ("hmc", "automatic burn-in")] {
        let extra = ["--method", method, "--shard", "1/3"];
        assert_refused(d, SAMPLE, &extra, &[&needs[..], &[why, method]].concat());
    }
    let extra = ["--method", "mala", "--burn-in", "2", "--shard", "1/3"];
    let why = "adapts its step size across all the chains";
    assert_refused(d, SAMPLE, &extra, &[&needs[..], &[why]].concat());
    let why = "adapts each class's step size";
    assert_refused(
        d,
        AUGMENT,
        &["--adapt", "--samples", "22", "--shard", "1/3"],
        &[&needs[..], &[why, "--adapt"]].concat(),
    );
    let extra = ["--burn-in", "auto", "--samples", "22", "--shard", "1/3"];
    assert_refused(
        d,
        AUGMENT,
        &extra,
        &[&needs[..], &["automatic burn-in"]].concat(),
    );
    // A warm-up with a shard, a warm-up folder without one, one from other settings.
    let extra = ["--method", "hmc", "--warm-up-only", "--shard", "0/3"];
    assert_refused(d, SAMPLE, &extra, &["--warm-up-only", "0/3"]);
    let warm = d.join("warm-up");
    let warm_dir = warm.to_str().unwrap();
    assert_refused(
        d,
        SAMPLE,
        &["--warm-up", warm_dir],
        &["--warm-up", "--shard"],
    );
    run(SAMPLE, "cpu", &warm, &["--method", "hmc", "--warm-up-only"]);
    let extra = ["--method", "mala", "--shard", "0/3", "--warm-up", warm_dir];
    assert_refused(d, SAMPLE, &extra, &["warm-up.json", "other settings"]);
    let extra = ["--samples", "22", "--warm-up", warm_dir, "--shard", "0/3"];
    assert_refused(d, AUGMENT, &extra, &["warm-up.json", "sample"]);
    // Method compression runs no chains to warm up.
    let extra = [
        "--method",
        "compression",
        "--samples",
        "2",
        "--warm-up-only",
    ];
    let base = [&AUGMENT[..1], &AUGMENT[5..]].concat();
    assert_refused(d, &base, &extra, &["--warm-up-only", "compression"]);
    // Nor does deform, the default method.
    let extra = ["--warm-up-only"];
    assert_refused(d, &base, &extra, &["--warm-up-only", "deform"]);
    // A warm-up of another build (or of an older rmld, which recorded none): its chains might
    // go on differently here.
    let description = warm.join("warm-up.json");
    let written = std::fs::read(&description).unwrap();
    let mut edited: serde_json::Value = serde_json::from_slice(&written).unwrap();
    assert_eq!(edited["rmld_build"], rmld::BUILD);
    let this = format!("this shard runs build {}", rmld::BUILD);
    for (build, named) in [
        ("0123456789abcdef", "written by rmld build 0123456789abcdef"),
        ("", "written by an older rmld"),
    ] {
        edited["rmld_build"] = build.into();
        std::fs::write(&description, serde_json::to_vec(&edited).unwrap()).unwrap();
        let extra = ["--method", "hmc", "--shard", "0/3", "--warm-up", warm_dir];
        assert_refused(d, SAMPLE, &extra, &["warm-up.json", named, &this]);
    }
    std::fs::write(&description, &written).unwrap();
    // A warm-up's state changed since it was written.
    let state = warm.join("warm-up.rmld");
    let mut bytes = std::fs::read(&state).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&state, bytes).unwrap();
    let extra = ["--method", "hmc", "--shard", "0/3", "--warm-up", warm_dir];
    assert_refused(
        d,
        SAMPLE,
        &extra,
        &["warm-up.rmld", "run the warm-up again"],
    );
}
