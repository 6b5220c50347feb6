//! Files rmld reads whole, at paths the user controls, are read only when they are regular files
//! within a bound: a checkpoint that links to /dev/zero, a FIFO checkpoint, a model that is
//! /dev/zero and a shard file longer than its manifest says are refused at once (exit 2,
//! named), never read without end or waited on.

#![cfg(unix)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs rmld with `args`, killed (and the test failed) if it takes more than 60 s.
fn rmld_within(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rmld"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("`rmld {}` still ran after 60 s", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn assert_refused(args: &[&str], needles: &[&str]) {
    let run = rmld_within(args);
    let message = stderr(&run);
    assert_eq!(run.status.code(), Some(2), "{args:?}: {message}");
    for needle in needles {
        assert!(
            message.contains(needle),
            "{args:?}: no {needle:?} in: {message}"
        );
    }
}

fn sample_with_checkpoint(out: &Path) {
    let run = rmld_within(&[
        "sample",
        "--backend",
        "cpu",
        "--chains",
        "2",
        "--samples",
        "3",
        "--checkpoint-every",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
}

#[test]
fn a_checkpoint_that_is_a_device_or_a_fifo_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    sample_with_checkpoint(&out);
    let checkpoint = out.join("checkpoint.rmld");
    std::fs::remove_file(&checkpoint).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &checkpoint).unwrap();
    assert_refused(
        &["resume", out.to_str().unwrap()],
        &["checkpoint.rmld", "regular file", "device"],
    );
    std::fs::remove_file(&checkpoint).unwrap();
    let made = Command::new("mkfifo").arg(&checkpoint).status().unwrap();
    assert!(made.success());
    assert_refused(
        &["resume", out.to_str().unwrap()],
        &["checkpoint.rmld", "regular file", "FIFO"],
    );
}

#[test]
fn a_model_that_is_a_device_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("aug");
    assert_refused(
        &[
            "augment",
            "--backend",
            "cpu",
            "--sampler",
            "amortized",
            "--model",
            "/dev/zero",
            "--out",
            out.to_str().unwrap(),
        ],
        &["/dev/zero", "regular file"],
    );
}

#[test]
fn a_shard_file_longer_than_its_manifest_says_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let shard = |i: u32| {
        let out = dir.path().join(format!("s{i}"));
        let run = rmld_within(&[
            "encode",
            "--backend",
            "cpu",
            "--count",
            "10",
            "--iterations",
            "20",
            "--shard",
            &format!("{i}/2"),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(run.status.success(), "{}", stderr(&run));
        out
    };
    let (a, b) = (shard(0), shard(1));
    let codes = a.join("codes.npy");
    let original = std::fs::read(&codes).unwrap();
    let mut bytes = original.clone();
    bytes.extend_from_slice(&[0; 4096]);
    std::fs::write(&codes, bytes).unwrap();
    let merged = dir.path().join("merged");
    assert_refused(
        &[
            "merge",
            merged.to_str().unwrap(),
            a.to_str().unwrap(),
            b.to_str().unwrap(),
        ],
        &["codes.npy", "shard 0/2"],
    );
    // A manifest that is a FIFO is refused, not waited on.
    std::fs::write(&codes, original).unwrap();
    let manifest = b.join("manifest.json");
    std::fs::remove_file(&manifest).unwrap();
    assert!(Command::new("mkfifo")
        .arg(&manifest)
        .status()
        .unwrap()
        .success());
    assert_refused(
        &[
            "merge",
            merged.to_str().unwrap(),
            a.to_str().unwrap(),
            b.to_str().unwrap(),
        ],
        &["manifest", "FIFO"],
    );
}
