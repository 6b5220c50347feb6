//! `rmld sample` as a process: SIGINT leaves valid files and a checkpoint, a second run into the
//! same folder is refused, memory does not grow with K, a full disk corrupts nothing, and a
//! checkpoint is refused for other data.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rmld::io;

fn rmld() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rmld"))
}

fn report(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("report.json")).expect("report.json"))
        .expect("report.json parses")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Bytes of the codes stream a run is writing into its staging folder inside `out` (0 before).
fn staged_codes_bytes(out: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(out) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".rmld-staging-")
        })
        .filter_map(|e| std::fs::metadata(io::partial_path(&e.path().join("codes.npy"))).ok())
        .map(|m| m.len())
        .max()
        .unwrap_or(0)
}

/// `rmld sample` of 8 short chains on the CPU for `samples` outer iterations.
fn small_sample(samples: &str) -> Command {
    let mut command = rmld();
    command.args([
        "sample",
        "--backend",
        "cpu",
        "--chains",
        "8",
        "--steps",
        "2",
    ]);
    command.args(["--samples", samples]);
    // These runs are stopped long before their end: a million iterations' draws (10 GiB)
    // need not fit on the test machine's disk.
    command.env("RMLD_SKIP_DISK_CHECK", "1");
    command
}

/// Starts a long CPU run into `out` and waits until it has streamed at least one sample.
fn start_long_run(out: &Path) -> Child {
    let child = small_sample("1000000")
        .arg("--out")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while staged_codes_bytes(out) <= 128 {
        assert!(Instant::now() < deadline, "the run never wrote a sample");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn sigint_stops_cleanly_with_valid_outputs_and_a_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let child = start_long_run(&out);
    signal(&child, "INT");
    let result = child.wait_with_output().unwrap();
    assert_eq!(result.status.code(), Some(130), "{}", stderr(&result));
    let r = report(&out);
    assert_eq!(r["interrupted"], true);
    let completed = r["completed_iterations"].as_u64().unwrap() as usize;
    assert!(completed >= 1);
    let codes = io::read_npy(&out.join("codes.npy")).expect("codes.npy loads");
    assert_eq!(codes.shape, vec![completed, 8, 256]);
    assert_eq!(
        io::read_npy(&out.join("images.npy")).unwrap().shape,
        vec![completed, 8, 64]
    );
    let checkpoint = rmld::orchestrator::Checkpoint::read(&out.join("checkpoint.rmld"))
        .expect("checkpoint reads");
    assert_eq!(checkpoint.run.completed as usize, completed);
}

#[test]
fn a_second_run_into_a_folder_in_use_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("busy");
    let first = start_long_run(&out);
    let second = rmld()
        .args(["sample", "--backend", "cpu", "--samples", "2", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    signal(&first, "TERM");
    let first = first.wait_with_output().unwrap();
    assert_eq!(second.status.code(), Some(2), "{}", stderr(&second));
    assert!(
        stderr(&second).contains("another rmld run"),
        "{}",
        stderr(&second)
    );
    assert_eq!(
        first.status.code(),
        Some(143),
        "SIGTERM: {}",
        stderr(&first)
    );
    assert_eq!(
        report(&out)["interrupted"],
        true,
        "the first run's outputs survive the refused second"
    );
}

#[test]
fn memory_does_not_grow_with_the_number_of_samples() {
    let dir = tempfile::tempdir().unwrap();
    let peak = |k: u32| {
        let out = dir.path().join(format!("k{k}"));
        let run = rmld()
            .args([
                "sample",
                "--backend",
                "cpu",
                "--chains",
                "64",
                "--steps",
                "1",
                "--samples",
                &k.to_string(),
                "--out",
            ])
            .arg(&out)
            .output()
            .unwrap();
        assert!(run.status.success(), "{}", stderr(&run));
        assert_eq!(
            io::read_npy(&out.join("codes.npy")).unwrap().shape,
            vec![k as usize, 64, 256]
        );
        report(&out)["peak_rss_bytes"]
            .as_u64()
            .expect("peak RSS is reported on Linux") as f64
    };
    let (small, large) = (peak(100), peak(4000));
    // Held in memory, 3900 more samples of 64 chains × (256 + 64) floats would be 319 MB.
    let in_memory = 3900.0 * 64.0 * 320.0 * 4.0;
    eprintln!(
        "peak RSS: K = 100: {:.1} MB, K = 4000: {:.1} MB",
        small / 1e6,
        large / 1e6
    );
    assert!(
        large - small < 0.1 * in_memory,
        "peak RSS grew by {:.1} MB",
        (large - small) / 1e6
    );
}

#[test]
fn a_full_disk_leaves_nothing_corrupt() {
    // RLIMIT_FSIZE makes writes past 64 KiB fail (EFBIG) as a full disk would (ENOSPC).
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("full");
    let script = format!(
        "ulimit -f 64; trap '' XFSZ; exec '{}' sample --backend cpu --chains 16 --samples 200 --steps 1 --out '{}'",
        env!("CARGO_BIN_EXE_rmld"),
        out.display()
    );
    let run = Command::new("bash").args(["-c", &script]).output().unwrap();
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert!(
        stderr(&run).contains("codes.npy") || stderr(&run).contains("images.npy"),
        "{}",
        stderr(&run)
    );
    for name in ["codes.npy", "images.npy", "report.json"] {
        assert!(
            !out.join(name).exists(),
            "{name} exists after a failed write"
        );
    }
}

#[test]
fn a_checkpoint_of_other_data_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.npy");
    let write_data = |step: usize| {
        let pixels: Vec<u8> = (0..480).map(|i| (i * step % 256) as u8).collect();
        io::write_npy_u8(&data, &[30, 16], &pixels).unwrap();
    };
    write_data(7);
    // A long run killed once it has staged a timed checkpoint: resumable ...
    let out = dir.path().join("run");
    let mut child = small_sample("1000000")
        .args(["--checkpoint-minutes", "0.002", "--data"])
        .arg(&data)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while staged_checkpoint(&out).is_none() {
        assert!(Instant::now() < deadline, "no timed checkpoint was written");
        std::thread::sleep(Duration::from_millis(5));
    }
    signal(&child, "KILL");
    let _ = child.wait();
    // ... but not once the data it was made from have changed.
    write_data(11);
    let refused = rmld().arg("resume").arg(&out).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("other data"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn a_new_run_removes_an_earlier_runs_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("reused");
    let args = |extra: &[&str]| {
        let mut a = vec![
            "sample",
            "--backend",
            "cpu",
            "--chains",
            "2",
            "--samples",
            "3",
            "--steps",
            "1",
            "--out",
        ];
        a.push(out.to_str().unwrap());
        a.extend_from_slice(extra);
        rmld().args(a).output().unwrap()
    };
    assert!(args(&["--checkpoint-every", "2"]).status.success());
    assert!(out.join("checkpoint.rmld").exists());
    assert!(args(&["--force"]).status.success());
    let resumed = rmld().arg("resume").arg(&out).output().unwrap();
    assert_eq!(
        resumed.status.code(),
        Some(2),
        "a stale checkpoint was resumed: {}",
        stderr(&resumed)
    );
}

/// The staged checkpoint of a run writing into `out`, once there is one.
fn staged_checkpoint(out: &Path) -> Option<std::path::PathBuf> {
    std::fs::read_dir(out)
        .ok()?
        .flatten()
        .map(|e| e.path().join("checkpoint.rmld"))
        .find(|p| p.exists())
}

#[test]
fn a_run_killed_without_warning_resumes_from_its_timed_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, minutes: &str| {
        let mut command = small_sample("20000");
        command
            .args(["--keep", "every:20", "--seed", "3"])
            .args(["--checkpoint-minutes", minutes, "--out"])
            .arg(dir.path().join(name))
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        command
    };
    let data = ["codes.npy", "images.npy", "dictionary.npy", "samples.png"];
    let same = |a: &str, b: &str| {
        for name in data {
            let read = |run: &str| std::fs::read(dir.path().join(run).join(name)).unwrap();
            assert!(read(a) == read(b), "{name} of {b} differs from {a}'s");
        }
    };
    assert!(run("plain", "0").output().unwrap().status.success());
    // Checkpoints every 0.12 s on the way; a completed run removes the last.
    let timed = run("timed", "0.002").output().unwrap();
    assert!(timed.status.success(), "{}", stderr(&timed));
    same("plain", "timed");
    assert!(!dir.path().join("timed/checkpoint.rmld").exists());
    // SIGKILL once a timed checkpoint is staged: `resume` makes the same bytes.
    let killed_out = dir.path().join("killed");
    let mut child = run("killed", "0.002").spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while staged_checkpoint(&killed_out).is_none() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before its first timed checkpoint"
        );
        assert!(Instant::now() < deadline, "no timed checkpoint was written");
        std::thread::sleep(Duration::from_millis(5));
    }
    signal(&child, "KILL");
    let _ = child.wait();
    assert!(
        !killed_out.join("codes.npy").exists(),
        "a killed run published"
    );
    let resumed = rmld().arg("resume").arg(&killed_out).output().unwrap();
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    same("plain", "killed");
    // The resumed run, finished, keeps no checkpoint: nothing is left to resume.
    assert!(!killed_out.join("checkpoint.rmld").exists());
    let again = rmld().arg("resume").arg(&killed_out).output().unwrap();
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    same("plain", "killed");
}

/// A finished run whose last `--checkpoint-every` checkpoint precedes its end (40 iterations,
/// checkpoints at 15 and 30) is complete: `resume` says so and redoes nothing.
#[test]
fn a_finished_run_is_not_resumed_from_its_last_periodic_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let run = small_sample("40")
        .args(["--checkpoint-every", "15", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    let checkpoint = rmld::orchestrator::Checkpoint::read(&out.join("checkpoint.rmld")).unwrap();
    assert_eq!(checkpoint.run.completed, 30);
    let codes = std::fs::read(out.join("codes.npy")).unwrap();
    let resumed = rmld().arg("resume").arg(&out).output().unwrap();
    assert_eq!(resumed.status.code(), Some(2), "{}", stderr(&resumed));
    assert!(
        stderr(&resumed).contains("already complete (40 outer iterations"),
        "{}",
        stderr(&resumed)
    );
    assert!(std::fs::read(out.join("codes.npy")).unwrap() == codes);
    assert_eq!(report(&out)["completed_iterations"], 40);
}
