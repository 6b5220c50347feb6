//! Nothing a user gave is lost: a run whose outputs would replace one of its inputs is refused
//! (exit 2, nothing written), and `augment`, `encode` and `bench --out` take the run lock that
//! `sample` takes.

mod cli_common;

use std::fs::File;
use std::path::Path;
use std::process::Output;

use cli_common::{rmld, small_augment, stderr};

/// Every file of `dir` with its bytes, to show that nothing changed.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect();
    files.sort();
    files
}

fn assert_refused(out: &Output, words: &[&str]) {
    let text = stderr(out);
    assert_eq!(out.status.code(), Some(2), "expected exit 2: {text}");
    for word in words {
        assert!(
            text.contains(word),
            "the message should name {word:?}: {text}"
        );
    }
}

/// A small labelled MNIST-style folder, made by `rmld augment` itself from the embedded digits.
fn dataset_folder(dir: &Path) {
    let made = small_augment(dir, &["--batch", "8"]);
    assert!(made.status.success(), "{}", stderr(&made));
    assert!(dir.join("train-images-idx3-ubyte.gz").is_file());
}

#[test]
fn augment_into_its_own_data_folder_is_refused_and_the_data_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    dataset_folder(&data);
    let before = snapshot(&data);
    let d = data.to_str().unwrap();
    let base = [
        "augment",
        "--preset",
        "paper",
        "--batch",
        "8",
        "--no-quality",
        "--backend",
        "cpu",
    ];
    let out = rmld(&[&base[..], &["--data", d, "--out", d]].concat());
    assert_refused(
        &out,
        &["--out", "train-images-idx3-ubyte.gz", "is an input"],
    );
    // The same folder under another name (a symbolic link) is the same folder.
    #[cfg(unix)]
    {
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&data, &link).unwrap();
        let out = rmld(&[&base[..], &["--data", d, "--out", link.to_str().unwrap()]].concat());
        assert_refused(&out, &["--out", "is an input"]);
    }
    assert!(snapshot(&data) == before, "the dataset folder changed");
}

#[test]
fn sample_and_encode_refuse_to_replace_their_data_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let made = rmld(&[
        "sample",
        "--chains",
        "3",
        "--samples",
        "1",
        "--backend",
        "cpu",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(made.status.success(), "{}", stderr(&made));
    // images.npy, the sampled images, is now the data of a second run into the same folder.
    let images = dir.join("images.npy");
    let before = snapshot(dir);
    for command in ["sample", "encode"] {
        let out = rmld(&[
            command,
            "--data",
            images.to_str().unwrap(),
            "--backend",
            "cpu",
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert_refused(&out, &["--out", "images.npy", "is an input"]);
    }
    assert!(snapshot(dir) == before, "the folder changed");
}

#[test]
fn augment_encode_and_bench_take_the_run_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("busy");
    std::fs::create_dir(&out).unwrap();
    // Another run holds the folder.
    let lock = File::create(out.join(".rmld.lock")).unwrap();
    lock.try_lock().expect("the test takes the lock");
    let o = out.to_str().unwrap();
    let runs: [&[&str]; 3] = [
        &[
            "augment",
            "--preset",
            "paper",
            "--limit",
            "150",
            "--batch",
            "8",
            "--no-quality",
            "--backend",
            "cpu",
            "--out",
            o,
        ],
        &["encode", "--count", "5", "--backend", "cpu", "--out", o],
        &[
            "bench",
            "--backend",
            "cpu",
            "--chains",
            "1",
            "--dim",
            "16",
            "--images",
            "20",
            "--ceiling-size",
            "32",
            "--outer",
            "1",
            "--out",
            o,
        ],
    ];
    for args in runs {
        let run = rmld(args);
        assert_refused(&run, &["--out", "another rmld run is writing into"]);
    }
    drop(lock);
}
