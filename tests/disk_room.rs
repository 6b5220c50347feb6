//! Outputs that cannot fit on the disk are refused before a run writes anything: `rmld sample`
//! whose draws exceed the free space of its output folder's file system (the real one, and one
//! the test hook `RMLD_TEST_DISK_FREE` sets), and `rmld merge` of shards whose joined draws
//! would not fit; exit 2, the sizes and the setting named, no folder made.

mod cli_common;

use std::path::Path;
use std::process::{Command, Output};

use cli_common::stderr;

/// The test hook of `io::fault`: the free bytes the check sees.
const DISK_FREE: &str = "RMLD_TEST_DISK_FREE";

/// `rmld sample` on the embedded digits (CPU, 8 chains, 40 outer iterations unless `extra`
/// says) into `out`, with `extra` arguments and `free` bytes free if given.
fn sample(out: &Path, extra: &[&str], free: Option<u64>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rmld"));
    command.args(["sample", "--backend", "cpu", "--chains", "8"]);
    if !extra.contains(&"--samples") {
        command.args(["--samples", "40"]);
    }
    command.args(["--steps", "2", "--out"]).arg(out).args(extra);
    if let Some(free) = free {
        command.env(DISK_FREE, free.to_string());
    }
    command.output().unwrap()
}

/// Bytes of the files directly in `dir` and its `sample_stats/`.
fn bytes_in(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        total += if meta.is_dir() {
            bytes_in(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

fn assert_refused(run: &Output, out: &Path, needles: &[&str]) {
    let message = stderr(run);
    assert_eq!(run.status.code(), Some(2), "{message}");
    for needle in needles {
        assert!(message.contains(needle), "{needle:?} not in: {message}");
    }
    assert!(!out.exists(), "the refused run made {}", out.display());
}

#[test]
fn draws_past_any_disk_are_refused_before_the_folder_is_made() {
    // 2^32 − 1 outer iterations of 8 chains: about 40 TiB of codes, past any disk CI has.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("huge");
    let run = sample(&out, &["--samples", "4294967295"], None);
    let needles = [
        "--samples",
        "on disk",
        "codes.npy",
        "images.npy",
        "free on the file system",
    ];
    assert_refused(&run, &out, &needles);
}

#[test]
fn the_estimate_brackets_what_a_run_writes() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole");
    let run = sample(&whole, &[], None);
    assert!(run.status.success(), "{}", stderr(&run));
    let written = bytes_in(&whole);
    let codes = std::fs::metadata(whole.join("codes.npy")).unwrap().len();
    // Less room than the codes alone take: refused, with the flag the run is sized by.
    let short = dir.path().join("short");
    let refused = sample(&short, &[], Some(codes - 1));
    assert_refused(
        &refused,
        &short,
        &["--samples", "--keep", "RMLD_SKIP_DISK_CHECK"],
    );
    // Twice what the run wrote (its estimate counts a checkpoint and rounds up): it runs.
    let roomy = dir.path().join("roomy");
    let fits = sample(&roomy, &[], Some(2 * written));
    assert!(fits.status.success(), "{}", stderr(&fits));
    // Keeping the last draw only needs a fortieth of the draws' room.
    let last = dir.path().join("last");
    let kept = sample(&last, &["--keep", "last"], Some(written / 2));
    assert!(kept.status.success(), "{}", stderr(&kept));
    // The escape hatch for file systems that hold more than they say.
    let skipped = dir.path().join("skipped");
    let mut command = Command::new(env!("CARGO_BIN_EXE_rmld"));
    command.args([
        "sample",
        "--backend",
        "cpu",
        "--chains",
        "8",
        "--samples",
        "40",
    ]);
    command.args(["--steps", "2", "--out"]).arg(&skipped);
    command.env(DISK_FREE, "1").env("RMLD_SKIP_DISK_CHECK", "1");
    let run = command.output().unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
}

#[test]
fn an_encoding_whose_codes_cannot_fit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("codes");
    let mut command = Command::new(env!("CARGO_BIN_EXE_rmld"));
    command
        .args(["encode", "--count", "100", "--out"])
        .arg(&out);
    // 100 codes of 256 atoms take 100 KiB.
    let run = command.env(DISK_FREE, "50000").output().unwrap();
    assert_refused(&run, &out, &["--limit", "codes.npy", "reconstructions.npy"]);
}

#[test]
fn an_augmentation_whose_codes_cannot_fit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("augmented");
    let augment = |free: &str| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_rmld"));
        command
            .args(["augment", "--backend", "cpu", "--no-quality", "--out"])
            .arg(&out);
        command.env(DISK_FREE, free).output().unwrap()
    };
    // The digits' codes alone (1,797 originals and their new images, 256 atoms) take 2 MiB.
    let refused = augment("200000");
    assert_refused(
        &refused,
        &out,
        &["--ratio", "codes.npy", "--no-original-codes"],
    );
    let run = augment("100000000");
    assert!(run.status.success(), "{}", stderr(&run));
}

#[test]
fn a_merge_whose_joined_draws_cannot_fit_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut shards = Vec::new();
    for i in 0..2 {
        let out = dir.path().join(format!("shard-{i}"));
        let run = sample(&out, &["--shard", &format!("{i}/2")], None);
        assert!(run.status.success(), "{}", stderr(&run));
        shards.push(out);
    }
    let codes: u64 = shards
        .iter()
        .map(|s| std::fs::metadata(s.join("codes.npy")).unwrap().len())
        .sum();
    let merged = dir.path().join("merged");
    let merge = |free: u64| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_rmld"));
        command.arg("merge").arg(&merged).args(&shards);
        command.env(DISK_FREE, free.to_string()).output().unwrap()
    };
    let refused = merge(codes);
    assert_refused(
        &refused,
        &merged,
        &["codes.npy", "merge into a folder on a larger disk"],
    );
    let joined = merge(100 * codes);
    assert!(joined.status.success(), "{}", stderr(&joined));
}
