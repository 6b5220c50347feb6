//! `rmld resume` as a process: a checkpoint carries its run's identity, and a checkpoint copied
//! from another run, cut short, with a flipped bit or reordered bytes, or draws files changed
//! beside it, are refused (exit 2, naming the file and what differs) with the folder left as it
//! was; a run stopped by a full disk resumes to the uninterrupted run's bytes; a resumed run's
//! report counts the seconds before the resume.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rmld::orchestrator::Checkpoint;

fn rmld() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rmld"))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A small CPU run of `chains` chains and seed `seed` into `out`, with a checkpoint every two
/// outer iterations (the last after iteration 4 of 5); `env` sets a variable for it.
fn sample(out: &Path, seed: u64, chains: usize, env: Option<(&str, String)>) -> Output {
    sample_for(5, out, seed, chains, env)
}

/// [`sample`] for `samples` outer iterations.
fn sample_for(
    samples: u32,
    out: &Path,
    seed: u64,
    chains: usize,
    env: Option<(&str, String)>,
) -> Output {
    let mut command = rmld();
    command.args(["sample", "--backend", "cpu", "--steps", "1"]);
    command.args(["--samples", &samples.to_string()]);
    command.args(["--checkpoint-every", "2", "--seed", &seed.to_string()]);
    command
        .args(["--chains", &chains.to_string(), "--out"])
        .arg(out);
    if let Some((name, value)) = env {
        command.env(name, value);
    }
    command.output().unwrap()
}

fn sampled(out: &Path, seed: u64, chains: usize) {
    let run = sample(out, seed, chains, None);
    assert!(run.status.success(), "{}", stderr(&run));
    as_stopped(out);
}

/// Marks the finished run in `out` as stopped, so that its checkpoint (after iteration 4 of 5)
/// is one `resume` continues: a finished run is not resumed, and these tests are about what
/// `resume` checks beside a checkpoint.
fn as_stopped(out: &Path) {
    let path = out.join("report.json");
    let mut report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    report["interrupted"] = true.into();
    std::fs::write(&path, serde_json::to_vec_pretty(&report).unwrap()).unwrap();
}

fn resume(out: &Path) -> Output {
    rmld().arg("resume").arg(out).output().unwrap()
}

/// Every file under `dir` (relative path → bytes), the run lock left out.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, into: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
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

/// `rmld resume out` exits 2 with every word of `needles` in its message, and leaves `out` as
/// it was.
fn assert_refused(out: &Path, needles: &[&str], what: &str) {
    let before = snapshot(out);
    let run = resume(out);
    let message = stderr(&run);
    assert_eq!(run.status.code(), Some(2), "{what}: {message}");
    for needle in needles {
        assert!(
            message.contains(needle),
            "{what}: no {needle:?} in: {message}"
        );
    }
    assert!(!message.contains("panicked"), "{what}: {message}");
    assert!(
        snapshot(out) == before,
        "{what}: the refused resume changed the folder"
    );
}

#[test]
fn a_checkpoint_copied_from_another_run_is_refused_naming_what_differs() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, seed, chains| {
        let out = dir.path().join(name);
        sampled(&out, seed, chains);
        out
    };
    let (a, seed_1, chains_2) = (run("a", 0, 4), run("b", 1, 4), run("c", 0, 2));
    let target = a.join("checkpoint.rmld");
    let own = std::fs::read(&target).unwrap();
    let cases = [(&seed_1, "seed 1 vs 0"), (&chains_2, "2 vs 4 chains")];
    for (other, differs) in cases {
        std::fs::copy(other.join("checkpoint.rmld"), &target).unwrap();
        assert_refused(&a, &["checkpoint.rmld", differs], differs);
    }
    // Without report.json to name the other run, the draws files beside the checkpoint are not
    // those its run wrote: refused by the file.
    std::fs::remove_file(a.join("report.json")).unwrap();
    std::fs::copy(seed_1.join("checkpoint.rmld"), &target).unwrap();
    assert_refused(&a, &["codes.npy", "another run"], "seed 1, no report");
    std::fs::copy(chains_2.join("checkpoint.rmld"), &target).unwrap();
    assert_refused(&a, &["codes.npy", "[4, 256]"], "2 chains, no report");
    // Its own checkpoint is resumed, and gives the uninterrupted run's draws.
    std::fs::write(&target, own).unwrap();
    let resumed = resume(&a);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let fresh = run("fresh", 0, 4);
    for name in ["codes.npy", "images.npy"] {
        assert!(
            std::fs::read(a.join(name)).unwrap() == std::fs::read(fresh.join(name)).unwrap(),
            "{name} of the resumed run differs from the uninterrupted run's"
        );
    }
}

/// A fresh run's checkpoint (seed `seed`) with `was` replaced by `now` at `offset` bytes after
/// where the file records this build, resealed (xxh3-64 of everything before the checksum) so
/// that it is a whole checkpoint: `resume` refuses it with every one of `needles` and leaves
/// the folder as it was; restored, the checkpoint resumes.
fn refused_once_rewritten(seed: u64, (offset, was, now): (usize, &[u8], &[u8]), needles: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    sampled(&out, seed, 4);
    let path = out.join("checkpoint.rmld");
    let good = std::fs::read(&path).unwrap();
    let at = offset
        + good
            .windows(16)
            .position(|w| w == rmld::BUILD.as_bytes())
            .expect("the checkpoint records this build");
    assert_eq!(
        &good[at..at + was.len()],
        was,
        "what the checkpoint holds there"
    );
    let mut bytes = good[..good.len() - 8].to_vec();
    bytes[at..at + now.len()].copy_from_slice(now);
    let checksum = xxhash_rust::xxh3::xxh3_64(&bytes);
    bytes.extend_from_slice(&checksum.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    assert_refused(&out, needles, &String::from_utf8_lossy(now));
    std::fs::write(&path, &good).unwrap();
    let resumed = resume(&out);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
}

#[test]
fn a_checkpoint_written_by_another_build_is_refused_naming_both_builds() {
    let other = if rmld::BUILD == "0123456789abcdef" {
        "fedcba9876543210"
    } else {
        "0123456789abcdef"
    };
    let needles = [
        "checkpoint.rmld".to_string(),
        format!("rmld build {other}"),
        format!("this is build {}", rmld::BUILD),
        "start afresh".to_string(),
    ];
    let build = rmld::BUILD.as_bytes();
    refused_once_rewritten(
        2,
        (0, build, other.as_bytes()),
        &needles.each_ref().map(String::as_str),
    );
}

#[test]
fn chains_that_ran_on_another_device_are_not_continued_here() {
    // The device follows the build at the header's end: postcard's length 3, then "cpu".
    refused_once_rewritten(
        4,
        (16, b"\x03cpu", b"\x03gpu"),
        &[
            "checkpoint.rmld",
            "ran on gpu",
            "go on on cpu",
            "start afresh",
        ],
    );
}

#[test]
fn a_cut_flipped_or_reordered_checkpoint_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    sampled(&out, 3, 4);
    let path = out.join("checkpoint.rmld");
    let good = std::fs::read(&path).unwrap();
    let n = good.len();
    let mut damaged: Vec<(String, Vec<u8>)> = Vec::new();
    for keep in [0, 7, 16, 40, n / 2, n - 8, n - 1] {
        damaged.push((format!("cut to {keep} bytes"), good[..keep].to_vec()));
    }
    for at in [9, 20, 60, n / 3, n / 2, n - 20, n - 3] {
        let mut bytes = good.clone();
        bytes[at] ^= 0x10;
        damaged.push((format!("bit flipped at byte {at}"), bytes));
    }
    for (a, b) in [(16, 48), (n / 4, n / 2), (n - 80, n - 40)] {
        let mut bytes = good.clone();
        let (head, tail) = bytes.split_at_mut(b);
        head[a..a + 32].swap_with_slice(&mut tail[..32]);
        damaged.push((format!("32 bytes at {a} and {b} swapped"), bytes));
    }
    let mut longer = good.clone();
    longer.extend_from_slice(&good[n - 64..]);
    damaged.push(("64 bytes appended".into(), longer));
    for (what, bytes) in damaged {
        assert_ne!(bytes, good, "{what}");
        std::fs::write(&path, &bytes).unwrap();
        assert_refused(&out, &["checkpoint.rmld"], &what);
    }
}

/// A change to a draws file's bytes, given the bytes of one draw.
type Change = fn(&mut Vec<u8>, usize);

#[test]
fn draws_changed_beside_the_checkpoint_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    sampled(&out, 0, 4);
    let original: BTreeMap<&str, Vec<u8>> = ["codes.npy", "images.npy"]
        .map(|name| (name, std::fs::read(out.join(name)).unwrap()))
        .into();
    // One draw of 4 chains: 4 × 256 float32 codes, 4 × 64 float32 pixels; 128 header bytes.
    let row = |name: &str| if name == "codes.npy" { 4096 } else { 1024 };
    let changes: [(&str, &str, Change); 3] = [
        ("codes.npy", "rows 0 and 1 swapped", |b, r| {
            let (head, tail) = b.split_at_mut(128 + r);
            head[128..].swap_with_slice(&mut tail[..r]);
        }),
        ("images.npy", "a bit flipped in row 2", |b, r| {
            b[128 + 2 * r + 5] ^= 1
        }),
        ("codes.npy", "cut to 3 rows", |b, r| b.truncate(128 + 3 * r)),
    ];
    for (name, what, change) in changes {
        let mut bytes = original[name].clone();
        change(&mut bytes, row(name));
        std::fs::write(out.join(name), &bytes).unwrap();
        assert_refused(&out, &[name], what);
        std::fs::write(out.join(name), &original[name]).unwrap();
    }
    let resumed = resume(&out);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
}

#[test]
fn a_run_stopped_by_a_full_disk_exits_2_and_resumes_to_the_uninterrupted_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole");
    sampled(&whole, 0, 4);
    // Budgets that stop the run at different writes: after the first checkpoint (iteration 2)
    // and after the second (iteration 4), inside the streams and inside a checkpoint.
    for budget in [21_000u32, 29_000, 41_000] {
        let out = dir.path().join(format!("full-{budget}"));
        let env = ("RMLD_TEST_FULL_DISK_AFTER", budget.to_string());
        let stopped = sample(&out, 0, 4, Some(env));
        let message = stderr(&stopped);
        assert_eq!(stopped.status.code(), Some(2), "{budget}: {message}");
        assert!(message.contains("no space left"), "{budget}: {message}");
        assert!(message.contains("rmld resume"), "{budget}: {message}");
        for name in ["codes.npy", "images.npy", "report.json", "checkpoint.rmld"] {
            assert!(!out.join(name).exists(), "{budget}: {name} published");
        }
        // A new run into the folder is told of the stopped one rather than replacing it.
        let again = sample(&out, 0, 4, None);
        assert_eq!(again.status.code(), Some(2), "{budget}: {}", stderr(&again));
        assert!(stderr(&again).contains("rmld resume"), "{}", stderr(&again));
        let resumed = resume(&out);
        assert!(resumed.status.success(), "{budget}: {}", stderr(&resumed));
        for name in ["codes.npy", "images.npy"] {
            assert!(
                std::fs::read(out.join(name)).unwrap() == std::fs::read(whole.join(name)).unwrap(),
                "{budget}: {name} differs from the uninterrupted run's"
            );
        }
        let left: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".rmld-staging") || n.ends_with(".partial"))
            .collect();
        assert!(left.is_empty(), "{budget}: left behind: {left:?}");
    }
}

/// A stopped run whose remaining draws cannot fit on the disk is not resumed: exit 2, the sizes
/// and what to do named, the folder as it was (its staging folder and checkpoint kept); with
/// room, the same folder resumes to the uninterrupted run's bytes. Both kinds of resumption:
/// from a staging folder (the draws continued in place) and from a published set (copied).
#[test]
fn a_resume_whose_draws_cannot_fit_on_the_disk_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole");
    sampled(&whole, 0, 4);
    let staged = dir.path().join("staged");
    let stopped = sample(
        &staged,
        0,
        4,
        Some(("RMLD_TEST_FULL_DISK_AFTER", "21000".into())),
    );
    assert_eq!(stopped.status.code(), Some(2), "{}", stderr(&stopped));
    let published = dir.path().join("published");
    sampled(&published, 0, 4);
    for out in [&staged, &published] {
        let what = out.display().to_string();
        let before = snapshot(out);
        let mut command = rmld();
        let run = command.arg("resume").arg(out);
        let run = run.env("RMLD_TEST_DISK_FREE", "1000").output().unwrap();
        let message = stderr(&run);
        assert_eq!(run.status.code(), Some(2), "{what}: {message}");
        for needle in [
            "on disk",
            "codes.npy",
            "free that much space",
            "then resume again",
        ] {
            assert!(
                message.contains(needle),
                "{what}: no {needle:?} in: {message}"
            );
        }
        assert!(
            snapshot(out) == before,
            "{what}: the refused resume changed the folder"
        );
        let resumed = resume(out);
        assert!(resumed.status.success(), "{what}: {}", stderr(&resumed));
        for name in ["codes.npy", "images.npy"] {
            let (a, b) = (out.join(name), whole.join(name));
            assert!(
                std::fs::read(a).unwrap() == std::fs::read(b).unwrap(),
                "{what}: {name}"
            );
        }
    }
}

/// Four iterations, a checkpoint every two: the last checkpoint is of the complete run, and the
/// disk fills while the outputs are written after it. `rmld resume` has only to publish them.
#[test]
fn a_run_stopped_after_its_last_checkpoint_publishes_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole");
    let (out, env) = (dir.path().join("full"), "RMLD_TEST_FULL_DISK_AFTER");
    assert!(sample_for(4, &whole, 0, 4, None).status.success());
    let stopped = sample_for(4, &out, 0, 4, Some((env, "70000".into())));
    let message = stderr(&stopped);
    assert_eq!(stopped.status.code(), Some(2), "{message}");
    assert!(message.contains("after outer iteration 4)"), "{message}");
    assert!(!out.join("codes.npy").exists(), "{message}");
    let resumed = resume(&out);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let said = stderr(&resumed);
    assert!(said.contains("all 4 outer iterations were done"), "{said}");
    for name in ["codes.npy", "images.npy", "samples.png"] {
        assert!(
            std::fs::read(out.join(name)).unwrap() == std::fs::read(whole.join(name)).unwrap(),
            "{name} differs from the uninterrupted run's"
        );
    }
    // Published and complete, it is not resumed again.
    let again = resume(&out);
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("already complete"),
        "{}",
        stderr(&again)
    );
}

#[test]
fn resume_from_another_working_folder_finds_relative_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.npy");
    let pixels: Vec<u8> = (0..480).map(|i| (i * 7 % 256) as u8).collect();
    rmld::io::write_npy_u8(&data, &[30, 16], &pixels).unwrap();
    let run = rmld()
        .current_dir(dir.path())
        .args([
            "sample",
            "--backend",
            "cpu",
            "--chains",
            "2",
            "--samples",
            "3",
        ])
        .args([
            "--checkpoint-every",
            "2",
            "--data",
            "data.npy",
            "--out",
            "run",
        ])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    as_stopped(&dir.path().join("run"));
    let elsewhere = tempfile::tempdir().unwrap();
    let resumed = rmld()
        .current_dir(elsewhere.path())
        .arg("resume")
        .arg(dir.path().join("run"))
        .output()
        .unwrap();
    assert!(resumed.status.success(), "{}", stderr(&resumed));
}

#[test]
fn an_out_that_is_a_file_is_refused_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("taken");
    std::fs::write(&file, "mine").unwrap();
    let run = sample(&file, 0, 2, None);
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert!(stderr(&run).contains("taken"), "{}", stderr(&run));
    assert!(stderr(&run).contains("not a folder"), "{}", stderr(&run));
    assert_eq!(std::fs::read(&file).unwrap(), b"mine");
}

#[test]
fn a_resumed_runs_report_counts_the_seconds_before_the_resume() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    sampled(&out, 6, 4);
    let seconds = |out: &Path| {
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
        report["timings"]["total_seconds"].as_f64().unwrap()
    };
    // The checkpoint (after iteration 4 of 5) holds the seconds run until it was written.
    let path = out.join("checkpoint.rmld");
    let mut checkpoint = Checkpoint::read(&path).unwrap();
    let before = checkpoint.wall_seconds.expect("the run's seconds so far");
    assert!(before > 0.0 && before <= seconds(&out), "{before}");
    // Said to have run 1000 s before, the resumed run's report counts them.
    checkpoint.wall_seconds = Some(1000.0);
    checkpoint.write(&path).unwrap();
    let resumed = resume(&out);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let total = seconds(&out);
    assert!((1000.0..1300.0).contains(&total), "total_seconds {total}");
    let summary = String::from_utf8_lossy(&resumed.stdout);
    assert!(summary.contains(&format!("in {total:.1} s")), "{summary}");
}
