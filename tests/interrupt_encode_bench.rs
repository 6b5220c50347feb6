//! `rmld encode` and `rmld bench` as processes: the first SIGINT / SIGTERM stops them promptly
//! even inside one long batch of rows or one long measurement, leaving no staging folder.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn rmld() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rmld"))
}

fn staging_folders(out: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(out) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".rmld-staging-"))
        .collect()
}

/// Spawns `command` and waits until its staging folder exists inside `out` (the work started),
/// then a little longer so that it is inside its first batch or measurement.
fn start(mut command: Command, out: &Path) -> Child {
    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while staging_folders(out).is_empty() {
        assert!(Instant::now() < deadline, "the run never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    child
}

/// Sends `name` to the child, then waits at most 20 s for it to end (killing it after that).
fn stop(mut child: Child, name: &str) -> Output {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            let _ = child.wait();
            panic!("still running 20 s after SIG{name}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn encode_stops_inside_a_long_batch_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("enc");
    // The embedded optdigits: its first batch of rows at 10⁹ iterations never ends by itself.
    let mut command = rmld();
    command.args(["encode", "--backend", "cpu", "--lasso-tolerance", "0"]);
    command.args(["--lasso-iterations", "1000000000", "--out"]);
    command.arg(&out);
    let result = stop(start(command, &out), "INT");
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    // The folder it made is gone with its staging folder and its lock.
    assert!(
        !out.exists(),
        "{:?}",
        std::fs::read_dir(&out).map(|d| d.count())
    );
}

#[test]
fn bench_stops_inside_a_measurement_of_billions_of_iterations() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bench");
    let mut command = rmld();
    command.args([
        "bench",
        "--backend",
        "cpu",
        "--chains",
        "8",
        "--images",
        "100",
    ]);
    command.args([
        "--ceiling-size",
        "64",
        "--outer",
        "4294967295",
        "--dim",
        "4",
    ]);
    command.args(["--steps", "1", "--out"]);
    command.arg(&out);
    let result = stop(start(command, &out), "TERM");
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert_eq!(result.status.code(), Some(143), "{stdout}");
    assert!(staging_folders(&out).is_empty());
    // What is published is whole: no row of the cut measurement, and the stop said.
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("bench.json")).unwrap()).unwrap();
    assert_eq!(report["interrupted"], true, "{report}");
    assert!(stdout.contains("interrupted"), "{stdout}");
}
