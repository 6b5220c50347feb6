//! Outputs are published all at once or not at all: `sample`, `encode`, `merge` and `augment`
//! stopped by a (simulated) full disk at many points leave the earlier output byte for byte, or
//! nothing in a fresh folder, and no stray files; a killed run's leftovers are recognised and
//! cleared by the next run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The test hook of `io::fault`: writes fail once this many bytes have been written.
const FULL_DISK: &str = "RMLD_TEST_FULL_DISK_AFTER";

fn rmld(args: &[String], budget: Option<u64>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rmld"));
    command.args(args);
    if let Some(bytes) = budget {
        command.env(FULL_DISK, bytes.to_string());
    }
    command.output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn words(text: &str, dir: &Path, out: &Path) -> Vec<String> {
    text.split_whitespace()
        .map(|w| w.replace("{d}", &dir.display().to_string()))
        .map(|w| w.replace("{out}", &out.display().to_string()))
        .collect()
}

/// Every file under `dir` (relative path → bytes), the run lock left out.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, into: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, into);
            } else if path.file_name().unwrap() != ".rmld.lock" {
                let bytes = std::fs::read(&path).unwrap();
                into.insert(path.strip_prefix(root).unwrap().to_path_buf(), bytes);
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(dir, dir, &mut files);
    files
}

/// Names in `dir` a finished or failed run must not leave: staging folders, the publication
/// journal, hidden partial streams, temporary files.
fn strays(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.') && n != ".rmld.lock")
        .collect()
}

/// Runs `command` (words; `{out}` is the output folder) into a folder holding an earlier
/// complete output, with `--force`, stopped by a full disk at budgets spread over the bytes the
/// run writes: each run either fails with exit 2 naming the file it could not write, leaving
/// the earlier output byte for byte, or succeeds; and the same into a fresh folder leaves no
/// file under a final name.
fn check_all_or_nothing(command: &str, earlier: &str, dir: &Path) {
    let out = dir.join(format!("out-{}", command.split(' ').next().unwrap()));
    let first = rmld(&words(earlier, dir, &out), None);
    assert!(first.status.success(), "{earlier}: {}", stderr(&first));
    let before = snapshot(&out);
    let size: u64 = before.values().map(|b| b.len() as u64).sum();
    let forced = words(&format!("{command} --force"), dir, &out);
    let budgets = [0, 1, size / 9, size / 4, size / 2, size * 3 / 4, size - 1];
    let mut failed = 0;
    for budget in budgets {
        let run = rmld(&forced, Some(budget));
        let message = stderr(&run);
        assert!(
            !message.contains("panicked"),
            "{command} {budget}: {message}"
        );
        if run.status.success() {
            assert!(
                budget > size / 2,
                "{command}: {budget} of {size} bytes sufficed"
            );
            assert!(strays(&out).is_empty(), "{command}: {:?}", strays(&out));
            return;
        }
        failed += 1;
        assert_eq!(run.status.code(), Some(2), "{command} {budget}: {message}");
        assert!(
            message.contains("no space left"),
            "{command} {budget}: {message}"
        );
        assert!(message.contains(&out.display().to_string()), "{message}");
        assert!(
            snapshot(&out) == before,
            "{command}: a full disk at byte {budget} of {size} changed the earlier output"
        );
        assert!(
            strays(&out).is_empty(),
            "{command} {budget}: {:?}",
            strays(&out)
        );
    }
    assert!(failed >= 5, "{command}: only {failed} budgets failed");
    // A fresh folder: nothing is published.
    for budget in [size / 3, size - 1] {
        let fresh = dir.join(format!("fresh-{budget}"));
        let run = rmld(&words(command, dir, &fresh), Some(budget));
        assert_eq!(
            run.status.code(),
            Some(2),
            "{command} {budget}: {}",
            stderr(&run)
        );
        assert!(
            snapshot(&fresh).is_empty(),
            "{command}: {:?}",
            snapshot(&fresh).keys()
        );
        assert!(strays(&fresh).is_empty(), "{command}: {:?}", strays(&fresh));
        let _ = std::fs::remove_dir_all(&fresh);
    }
}

#[test]
fn sample_publishes_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let sample = "sample --backend cpu --chains 4 --steps 1 --out {out} --samples";
    check_all_or_nothing(&format!("{sample} 7"), &format!("{sample} 5"), dir.path());
}

#[test]
fn encode_publishes_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let encode = "encode --backend cpu --iterations 30 --out {out} --count";
    check_all_or_nothing(&format!("{encode} 30"), &format!("{encode} 20"), dir.path());
}

#[test]
fn merge_publishes_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for (i, count) in [(0, 20), (1, 20), (2, 28), (3, 28)] {
        let args = format!(
            "encode --backend cpu --iterations 30 --seed 5 --count {count} --shard {}/2 --out {{d}}/s{count}-{}",
            i % 2,
            i % 2
        );
        let run = rmld(&words(&args, dir.path(), dir.path()), None);
        assert!(run.status.success(), "{args}: {}", stderr(&run));
    }
    check_all_or_nothing(
        "merge {out} {d}/s28-0 {d}/s28-1",
        "merge {out} {d}/s20-0 {d}/s20-1",
        dir.path(),
    );
}

#[test]
fn augment_publishes_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let augment = "augment --backend cpu --preset paper --lasso-iterations 30 --no-quality \
                   --out {out} --samples";
    check_all_or_nothing(&format!("{augment} 3"), &format!("{augment} 2"), dir.path());
}

#[test]
fn a_killed_augment_leaves_nothing_published_and_the_next_run_clears_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("killed");
    let args = words(
        "augment --backend cpu --preset paper --limit 600 --batch 8 --no-quality --samples 1 \
         --burn-in 100000 --steps 4 --out {out}",
        dir.path(),
        &out,
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_rmld"))
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed (SIGKILL) once it has begun its staging folder, and has run a little further.
    let deadline = Instant::now() + Duration::from_secs(120);
    let staged = || {
        std::fs::read_dir(&out).ok().is_some_and(|entries| {
            entries.flatten().any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(".rmld-staging-")
            })
        })
    };
    while !staged() {
        assert!(
            Instant::now() < deadline,
            "the run never began its staging folder"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    let left = snapshot(&out);
    assert!(
        left.keys()
            .all(|p| p.to_string_lossy().starts_with(".rmld-staging-")),
        "a killed run published: {:?}",
        left.keys()
    );
    assert!(!out.join("report.json").exists());
    let quick = words(
        "augment --backend cpu --preset paper --lasso-iterations 30 --no-quality --samples 2 \
         --out {out}",
        dir.path(),
        &out,
    );
    let again = rmld(&quick, None);
    let message = stderr(&again);
    assert!(again.status.success(), "{message}");
    assert!(
        message.contains("removed what runs that stopped"),
        "{message}"
    );
    assert!(!message.contains("another run"), "{message}");
    assert!(strays(&out).is_empty(), "{:?}", strays(&out));
    assert!(out.join("report.json").is_file());
}
