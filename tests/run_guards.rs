//! Issue 43, items 3 and 4: runs too large for the process's memory refused with exit 2 (never an abort), the memory estimate against the measured peak, and degenerate runs warned about.
//!
//! The memory cases run the binary under an address-space limit (`ulimit -v` in a shell), the
//! way a container or a shared machine limits it: once refused by the estimate before anything
//! is allocated, once (the estimate skipped) by the fallible allocations behind it.

mod cli_common;

use std::path::Path;
use std::process::{Command, Output};

use cli_common::{json, rmld, stderr};
use rmld::io;

/// A deterministic pseudo-random value in [0, 1) for index `i` (no RNG crate needed here).
fn unit(i: usize) -> f32 {
    let x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((x >> 40) as f32) / (1u64 << 24) as f32
}

/// `n` float images of `d` pixels in [0, scale).
fn write_data(path: &Path, n: usize, d: usize, scale: f32) {
    let values: Vec<f32> = (0..n * d).map(|i| unit(i) * scale).collect();
    io::write_npy_f32(path, &[n, d], &values).unwrap();
}

/// A d × p dictionary of values in [−scale, scale).
fn write_dictionary(path: &Path, d: usize, p: usize, scale: f32) {
    let values: Vec<f32> = (0..d * p)
        .map(|i| (2.0 * unit(i + 7) - 1.0) * scale)
        .collect();
    io::write_npy_f32(path, &[d, p], &values).unwrap();
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `rmld ARGS` under an address-space limit of `kib` KiB, with `env` set.
fn rmld_limited(kib: u64, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_rmld"))
        .args(args);
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("sh runs")
}

/// A refusal: exit 2 (not an abort's signal), its message naming `setting`.
fn assert_refused(out: &Output, setting: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(setting), "{err}");
    assert!(
        !err.contains("memory allocation of"),
        "an abort's message: {err}"
    );
}

/// Steps, leapfrog steps and minibatches of 2^32 − 1 made the host allocate the outer
/// iteration's program or the minibatches' indices and abort ("memory allocation of … failed");
/// they are refused before, naming the setting.
#[test]
fn steps_and_minibatches_too_large_to_hold_are_refused_not_aborted() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let huge = "4294967295";
    for (setting, extra) in [
        ("--steps", &["--steps", huge][..]),
        (
            "--leapfrog-steps",
            &["--method", "hmc", "--leapfrog-steps", huge][..],
        ),
        ("--batch", &["--batch", huge][..]),
    ] {
        let mut args = vec![
            "sample",
            "--chains",
            "4",
            "--samples",
            "2",
            "--backend",
            "cpu",
        ];
        args.extend_from_slice(extra);
        args.extend(["--out", path(&out)]);
        let refused = rmld_limited(4 << 20, &[], &args);
        assert_refused(&refused, setting);
        assert!(!out.exists(), "{setting}: an output folder was made");
    }
}

#[test]
fn a_dictionary_too_large_for_the_address_space_is_refused_before_it_is_allocated() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.npy");
    write_data(&data, 4, 4096, 1.0);
    let out = dir.path().join("out");
    // 4,096 × 16,384 floats: A is 256 MiB, the CPU backend's copies 768 MiB more.
    let args = [
        "sample",
        "--data",
        path(&data),
        "--atoms",
        "16384",
        "--chains",
        "2",
        "--samples",
        "1",
        "--steps",
        "1",
        "--backend",
        "cpu",
        "--out",
        path(&out),
    ];
    let refused = rmld_limited(900 * 1024, &[], &args);
    assert_refused(&refused, "atoms");
    assert!(
        stderr(&refused).contains("address-space limit"),
        "{}",
        stderr(&refused)
    );
    // The estimate skipped: A fits, its copies do not; the allocation's refusal is the error.
    let skipped = rmld_limited(900 * 1024, &[("RMLD_SKIP_MEMORY_CHECK", "1")], &args);
    assert_refused(&skipped, "atoms");
    assert!(
        stderr(&skipped).contains("cannot allocate"),
        "{}",
        stderr(&skipped)
    );
}

#[test]
fn too_many_chains_for_the_address_space_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.npy");
    write_data(&data, 4, 4096, 1.0);
    let out = dir.path().join("out");
    // 20,000 chains of 4,096 pixels: over 3 GiB of state.
    let args = [
        "sample",
        "--data",
        path(&data),
        "--atoms",
        "64",
        "--chains",
        "20000",
        "--samples",
        "1",
        "--steps",
        "1",
        "--backend",
        "cpu",
        "--out",
        path(&out),
    ];
    assert_refused(&rmld_limited(1024 * 1024, &[], &args), "chains");
    let skipped = rmld_limited(1024 * 1024, &[("RMLD_SKIP_MEMORY_CHECK", "1")], &args);
    assert_refused(&skipped, "chains");
}

#[test]
fn more_chains_than_a_run_holds_name_what_gives_fewer_images() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // 1,797 digits, 10^8 new images each: 1.8e11, past 2^32 - 1 chains. A ratio is originals per
    // new image, so fewer images are a larger ratio; Deform's chains make one image each.
    let ratio = [
        "--ratio",
        "1:100000000",
        "--no-quality",
        "--out",
        path(&out),
    ];
    for (preset, longer) in [("quality", false), ("paper", true)] {
        let run = rmld(&[&["augment", "--preset", preset][..], &ratio[..]].concat());
        let message = stderr(&run);
        assert_eq!(run.status.code(), Some(2), "{preset}: {message}");
        assert!(message.contains("raise --ratio"), "{preset}: {message}");
        assert_eq!(
            message.contains("raise --samples"),
            longer,
            "{preset}: {message}"
        );
        assert!(!out.exists(), "{preset}: the refused run made its folder");
    }
}

#[test]
fn the_estimate_is_within_a_factor_of_the_measured_peak() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.npy");
    write_data(&data, 8, 4096, 1.0);
    let out = dir.path().join("out");
    let run = rmld(&[
        "sample",
        "--data",
        path(&data),
        "--atoms",
        "2048",
        "--chains",
        "8",
        "--samples",
        "2",
        "--steps",
        "1",
        "--backend",
        "cpu",
        "--out",
        path(&out),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let report = json(&out, "report.json");
    let estimate = report["peak_rss_estimate_bytes"].as_f64().unwrap();
    let Some(peak) = report["peak_rss_bytes"].as_f64() else {
        return; // no /proc to measure by: nothing to compare
    };
    // A is 32 MiB; the backend keeps it 4 times: the estimate is 140 MiB.
    let ratio = estimate / peak;
    assert!(
        (0.75..=1.5).contains(&ratio),
        "estimate {estimate}, peak {peak}"
    );
}

/// Float data whose row sums overflow f32 (1e37-scale pixels: the minibatch means are summed
/// before scaling) is refused by name before the run, not sampled into infinities.
#[test]
fn data_scaled_by_1e37_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("huge.npy");
    write_data(&data, 40, 64, 1e37);
    let out = dir.path().join("out");
    let run = rmld(&[
        "sample",
        "--data",
        path(&data),
        "--atoms",
        "20",
        "--chains",
        "2",
        "--samples",
        "4",
        "--backend",
        "cpu",
        "--out",
        path(&out),
    ]);
    let err = stderr(&run);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(
        err.contains("huge.npy") && err.contains("divide the data"),
        "{err}"
    );
    assert!(!out.exists());
}

/// A step so large that every proposal diverges: the run says so and flags it.
#[test]
fn a_step_that_makes_every_proposal_diverge_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = rmld(&[
        "sample",
        "--atoms",
        "20",
        "--chains",
        "2",
        "--samples",
        "4",
        "--steps",
        "2",
        "--eta",
        "1e30",
        "--backend",
        "cpu",
        "--out",
        path(&out),
    ]);
    let err = stderr(&run);
    assert!(run.status.success(), "{err}");
    assert!(err.contains("every proposal was divergent"), "{err}");
    let flags = &json(&out, "report.json")["degenerate"];
    assert_eq!(flags["all_proposals_divergent"], true, "{flags}");
    assert_eq!(flags["draws_identical"], true, "{flags}");
}

#[test]
fn a_dictionary_scaled_by_1e30_is_warned_about_in_sample_and_encode() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.npy");
    write_data(&data, 40, 64, 1.0);
    let dictionary = dir.path().join("dict.npy");
    write_dictionary(&dictionary, 64, 20, 1e30);
    let (sampled, encoded) = (dir.path().join("s"), dir.path().join("e"));
    let run = rmld(&[
        "sample",
        "--data",
        path(&data),
        "--dictionary",
        path(&dictionary),
        "--chains",
        "2",
        "--samples",
        "3",
        "--steps",
        "2",
        "--backend",
        "cpu",
        "--out",
        path(&sampled),
    ]);
    let err = stderr(&run);
    assert!(run.status.success(), "{err}");
    assert!(err.contains("every code is zero"), "{err}");
    assert_eq!(
        json(&sampled, "report.json")["degenerate"]["codes_all_zero"],
        true
    );
    let run = rmld(&[
        "encode",
        "--data",
        path(&data),
        "--dictionary",
        path(&dictionary),
        "--limit",
        "10",
        "--backend",
        "cpu",
        "--out",
        path(&encoded),
    ]);
    let err = stderr(&run);
    assert!(run.status.success(), "{err}");
    assert!(
        err.contains("every LASSO row stopped at the iteration cap"),
        "{err}"
    );
    let flags = &json(&encoded, "report.json")["degenerate"];
    assert_eq!(flags["lasso_all_capped"], true, "{flags}");
}

#[test]
fn a_healthy_run_has_no_degenerate_flag_and_no_warning() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.npy");
    write_data(&data, 40, 64, 1.0);
    let out = dir.path().join("out");
    let run = rmld(&[
        "sample",
        "--data",
        path(&data),
        "--atoms",
        "20",
        "--chains",
        "2",
        "--samples",
        "4",
        "--steps",
        "2",
        "--backend",
        "cpu",
        "--out",
        path(&out),
    ]);
    let err = stderr(&run);
    assert!(run.status.success(), "{err}");
    assert!(!err.contains("warning:"), "{err}");
    let flags = &json(&out, "report.json")["degenerate"];
    for name in [
        "all_proposals_divergent",
        "draws_identical",
        "codes_all_zero",
    ] {
        assert_eq!(flags[name], false, "{name}: {flags}");
    }
}

#[test]
fn a_sampling_folder_not_named_in_utf8_is_refused_by_name() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    // "café" in Latin-1: the é is the single byte 0xE9.
    let out = dir.path().join(std::ffi::OsStr::from_bytes(b"caf\xe9"));
    let run = Command::new(env!("CARGO_BIN_EXE_rmld"))
        .args([
            "sample",
            "--chains",
            "1",
            "--samples",
            "1",
            "--steps",
            "1",
            "--backend",
            "cpu",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let err = stderr(&run);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--out") && err.contains("caf") && err.contains("UTF-8"),
        "{err}"
    );
    assert!(!out.exists(), "nothing is made for a refused run");
}

/// A class of one image is named by its label and its row in the user's data (not by the rows
/// sorted by class), for the targets that need more than one image of a class; nothing is
/// written.
#[test]
fn a_class_too_small_for_its_target_is_named_by_label_and_row() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.npy");
    write_data(&data, 31, 64, 1.0);
    let labels = dir.path().join("labels.txt");
    let mut rows: Vec<&str> = vec!["0"; 31];
    rows[10] = "2";
    rows[20..].iter_mut().for_each(|r| *r = "1");
    std::fs::write(&labels, rows.join("\n")).unwrap();
    let cases: [(&[&str], &str); 2] = [
        (&["--preset", "quality", "--method", "hmc"], "--tangent-k"),
        (&["--preset", "paper", "--method", "kernel-hmc"], "--method"),
    ];
    for (k, (extra, setting)) in cases.iter().enumerate() {
        let out = dir.path().join(format!("out-{k}"));
        let mut args = vec!["augment", "--data", path(&data), "--labels", path(&labels)];
        args.extend_from_slice(extra);
        args.extend(["--backend", "cpu", "--out", path(&out)]);
        let done = rmld(&args);
        let message = stderr(&done);
        assert_eq!(done.status.code(), Some(2), "{extra:?}: {message}");
        for text in [*setting, "class 2 has 1 image", "row(s) 10 of the data"] {
            assert!(
                message.contains(text),
                "{extra:?}: no {text:?} in {message}"
            );
        }
        assert!(!out.exists(), "{extra:?} wrote {}", out.display());
    }
}
