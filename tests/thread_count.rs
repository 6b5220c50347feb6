//! The same bits whatever the number of CPU threads: `sample` (RMLD and HMC), `encode`,
//! `augment` (the default and the paper's preset) and `dictionary learn` on 1, 2 and 5 threads
//! (`RAYON_NUM_THREADS`, as a machine of another core count runs them) write identical data files.

use std::path::Path;
use std::process::Command;

/// Runs `args` into `dir/threads-N` on `threads` threads.
fn run(dir: &Path, threads: usize, args: &[&str]) -> std::path::PathBuf {
    let out = dir.join(format!("threads-{threads}"));
    let run = Command::new(env!("CARGO_BIN_EXE_rmld"))
        .args(args)
        .arg("--out")
        .arg(&out)
        .env("RAYON_NUM_THREADS", threads.to_string())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "{args:?} on {threads} threads: {stderr}"
    );
    out
}

/// Every data file under `dir` (NPY, gzipped IDX, CSV), relative paths, sorted.
fn data_files(dir: &Path, under: &Path, into: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            data_files(&path, under, into);
        } else if ["npy", "gz", "csv"]
            .iter()
            .any(|e| path.extension().is_some_and(|x| x == *e))
        {
            into.push(path.strip_prefix(under).unwrap().to_path_buf());
        }
    }
    into.sort();
}

fn assert_same_on_every_thread_count(args: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let one = run(dir.path(), 1, args);
    let mut files = Vec::new();
    data_files(&one, &one, &mut files);
    assert!(!files.is_empty(), "{args:?} wrote no data file");
    for threads in [2, 5] {
        let other = run(dir.path(), threads, args);
        for file in &files {
            let (a, b) = (one.join(file), other.join(file));
            let same = std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap();
            assert!(
                same,
                "{args:?}: {} differs on 1 and {threads} threads",
                file.display()
            );
        }
    }
}

#[test]
fn sampling_is_the_same_on_any_number_of_threads() {
    let rmld = "sample --backend cpu --chains 24 --samples 20";
    assert_same_on_every_thread_count(&words(rmld));
    let hmc = "sample --backend cpu --method hmc --chains 12 --samples 30";
    assert_same_on_every_thread_count(&words(hmc));
}

#[test]
fn encoding_and_augmenting_are_the_same_on_any_number_of_threads() {
    assert_same_on_every_thread_count(&words("encode --backend cpu --count 300"));
    let augment = "augment --backend cpu --no-code-cache --ratio 1:1 --limit 600";
    assert_same_on_every_thread_count(&words(augment));
    let paper = "augment --backend cpu --preset paper --no-code-cache --limit 600";
    assert_same_on_every_thread_count(&words(paper));
}

#[test]
fn dictionary_learning_is_the_same_on_any_number_of_threads() {
    let learn = "dictionary learn --family gabor --signals 30 --iterations 200";
    assert_same_on_every_thread_count(&words(learn));
}

fn words(command: &str) -> Vec<&str> {
    command.split(' ').collect()
}
