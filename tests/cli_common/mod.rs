//! Shared by the command-line tests: run the binary, read what it printed and wrote.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// `rmld ARGS`, run to completion.
pub fn rmld(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rmld"))
        .args(args)
        .output()
        .expect("the rmld binary runs")
}

/// What a run printed on stderr.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// What a run printed on stdout.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The JSON file `name` in `dir` (report.json, bench.json).
pub fn json(dir: &Path, name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join(name)).expect("the report is written");
    serde_json::from_str(&text).expect("the report is JSON")
}

/// `rmld augment` with the paper's preset on the first 150 embedded digits, on the CPU, without
/// the quality metrics or the originals' codes, into `out`, with `extra` options.
pub fn small_augment(out: &Path, extra: &[&str]) -> Output {
    small_augment_with(out, "paper", extra)
}

/// [`small_augment`] with the preset `preset` ("paper" or "quality").
pub fn small_augment_with(out: &Path, preset: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "augment",
        "--preset",
        preset,
        "--limit",
        "150",
        "--no-quality",
        "--no-original-codes",
        "--backend",
        "cpu",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    rmld(&args)
}
