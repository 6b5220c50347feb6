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

/// `rmld sample` with a few small chains into `out`, with `extra` options.
fn small_sample(out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "sample",
        "--backend",
        "cpu",
        "--chains",
        "3",
        "--samples",
        "5",
        "--steps",
        "2",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    rmld(&args)
}

#[test]
fn a_second_run_into_a_used_folder_is_refused_unless_forced() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let first = small_sample(&out, &["--checkpoint-every", "2"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let before = snapshot(&out);
    // Another run with other settings would replace the first one's samples.
    let second = small_sample(&out, &["--seed", "5"]);
    assert_refused(
        &second,
        &["--out", "codes.npy", "already exists", "--force"],
    );
    // Its checkpoint (after iteration 4 of 5) is an earlier state of a finished run: nothing to
    // resume, and the refusal does not offer it.
    assert!(
        !stderr(&second).contains("rmld resume"),
        "a finished run offered for resuming: {}",
        stderr(&second)
    );
    assert!(snapshot(&out) == before, "a refused run changed the folder");
    let resumed = rmld(&["resume", out.to_str().unwrap()]);
    assert_eq!(resumed.status.code(), Some(2), "{}", stderr(&resumed));
    assert!(
        stderr(&resumed).contains("already complete"),
        "{}",
        stderr(&resumed)
    );
    assert!(
        snapshot(&out) == before,
        "resuming a finished run changed the folder"
    );
    // Asked for, the files are replaced.
    let forced = small_sample(&out, &["--seed", "5", "--force"]);
    assert!(forced.status.success(), "{}", stderr(&forced));
    assert!(snapshot(&out) != before, "--force replaced nothing");
}

#[test]
fn a_users_own_file_is_never_replaced_without_force() {
    let tmp = tempfile::tempdir().unwrap();
    let o = |name: &str| tmp.path().join(name);
    // One folder per command, each holding a file of the user's under a name the command writes.
    let cases: [(&str, &str, Vec<&str>); 4] = [
        (
            "sample",
            "samples.png",
            vec!["sample", "--chains", "2", "--samples", "1"],
        ),
        ("encode", "report.json", vec!["encode", "--limit", "5"]),
        (
            "augment",
            "generated.png",
            vec![
                "augment",
                "--preset",
                "paper",
                "--limit",
                "150",
                "--batch",
                "8",
                "--no-quality",
                "--no-original-codes",
            ],
        ),
        (
            "bench",
            "bench.csv",
            vec![
                "bench",
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
            ],
        ),
    ];
    for (command, file, args) in &cases {
        let out = o(command);
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join(file), b"my own notes").unwrap();
        let out_arg = out.to_str().unwrap();
        let mut all = args.clone();
        all.extend_from_slice(&["--backend", "cpu", "--out", out_arg]);
        let refused = rmld(&all);
        assert_refused(&refused, &["--out", file, "--force"]);
        assert_eq!(
            std::fs::read(out.join(file)).unwrap(),
            b"my own notes",
            "{command} replaced the user's {file}"
        );
        let entries = std::fs::read_dir(&out).unwrap().count();
        assert_eq!(entries, 1, "{command}: a refused run wrote into the folder");
        all.push("--force");
        let forced = rmld(&all);
        assert!(forced.status.success(), "{command}: {}", stderr(&forced));
        assert_ne!(std::fs::read(out.join(file)).unwrap(), b"my own notes");
    }
}

/// `rmld amortize train` with a tiny fitting and the teacher's inputs in `dir`, into `out`;
/// every refusal below comes before any input is read.
fn amortize_train(dir: &Path, data: &str, out: &str, extra: &[&str]) -> Output {
    let d = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let (data, labels, dictionary, out) = (d(data), d("labels.npy"), d("dict.npy"), d(out));
    let mut args = vec![
        "amortize",
        "train",
        "--backend",
        "cpu",
        "--fit-steps",
        "20",
        "--data",
        &data,
        "--labels",
        &labels,
        "--dictionary",
        &dictionary,
        "--out",
        &out,
    ];
    if !extra.contains(&"--code-cache") {
        args.push("--no-code-cache");
    }
    args.extend_from_slice(extra);
    rmld(&args)
}

#[test]
fn amortize_train_never_writes_over_its_inputs_even_forced() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for name in ["imgs.npy", "labels.npy", "dict.npy", "m.json"] {
        std::fs::write(dir.join(name), name.as_bytes()).unwrap();
    }
    std::fs::create_dir(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/train-images-idx3-ubyte"), b"idx").unwrap();
    let before = (snapshot(dir), snapshot(&dir.join("data")));
    // The model over each input, and a file beside it (its report m.json) over one.
    let cases = [
        ("imgs.npy", "labels.npy", "labels.npy"),
        ("imgs.npy", "imgs.npy", "imgs.npy"),
        ("imgs.npy", "dict.npy", "dict.npy"),
        (
            "data",
            "data/train-images-idx3-ubyte",
            "train-images-idx3-ubyte",
        ),
        ("m.json", "m", "m.json"),
    ];
    for (data, out, named) in cases {
        let refused = amortize_train(dir, data, out, &["--force"]);
        assert_refused(&refused, &["--out", named, "is an input"]);
    }
    assert!(
        (snapshot(dir), snapshot(&dir.join("data"))) == before,
        "a refused training changed its inputs"
    );
    assert!(!dir.join("m.teacher").exists() && !dir.join("labels.npy.teacher").exists());
}

#[test]
fn amortize_train_keeps_an_existing_report_and_teacher_without_force() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("x.json"), br#"{"mine":true}"#).unwrap();
    std::fs::create_dir(dir.join("x.teacher")).unwrap();
    std::fs::write(dir.join("x.teacher/report.json"), b"keep").unwrap();
    let refused = amortize_train(dir, "imgs.npy", "x", &[]);
    assert_refused(&refused, &["--out", "x.json", "--force"]);
    std::fs::remove_file(dir.join("x.json")).unwrap();
    // The output is the model file (`--out`), its teacher's folder beside it: the refusal says
    // to choose another --out, not another output folder.
    let refused = amortize_train(dir, "imgs.npy", "x", &[]);
    assert_refused(
        &refused,
        &[
            "invalid setting --out",
            "x.teacher/report.json",
            "give --force to replace the teacher's files",
            "or choose another --out",
        ],
    );
    assert!(
        !stderr(&refused).contains("output folder"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(
        std::fs::read(dir.join("x.teacher/report.json")).unwrap(),
        b"keep"
    );
    assert_eq!(std::fs::read_dir(dir.join("x.teacher")).unwrap().count(), 1);
    assert!(!dir.join("x").exists());
}

#[test]
fn amortize_train_writes_nothing_in_or_onto_its_code_cache() {
    // The teacher reads and writes the code cache (making it when missing): the model, its
    // report, checkpoint and teacher's folder go neither in it nor onto it, nor hold it, even
    // forced and before the cache exists. Such a training ran its teacher and fitting, then
    // failed writing a model onto the folder the teacher had made ("Is a directory").
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for name in ["imgs.npy", "labels.npy", "dict.npy"] {
        std::fs::write(dir.join(name), name.as_bytes()).unwrap();
    }
    std::fs::create_dir(dir.join("cache")).unwrap();
    std::fs::write(dir.join("cache/codes-0.bin"), b"codes").unwrap();
    let before = (snapshot(dir), snapshot(&dir.join("cache")));
    let cases = [
        ("cache", "cache/m"),
        ("cache", "cache/codes-0.bin"),
        ("cache", "cache"),
        ("cache/../cache", "cache/m"),
        ("new", "new"),
        ("new", "new/m"),
        ("new/sub", "new"),
        ("m.teacher", "m"),
        ("cache/m.json", "cache/m"),
    ];
    for (cache, out) in cases {
        let cache = dir.join(cache);
        let extra = ["--force", "--code-cache", cache.to_str().unwrap()];
        let refused = amortize_train(dir, "imgs.npy", out, &extra);
        assert_refused(
            &refused,
            &[
                "invalid setting --out",
                "the code cache folder",
                "--code-cache",
            ],
        );
    }
    assert!(
        (snapshot(dir), snapshot(&dir.join("cache"))) == before,
        "a refused training wrote a file"
    );
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 4, "a refused training made a folder: {left:?}");
    assert_eq!(std::fs::read_dir(dir.join("cache")).unwrap().count(), 1);
}

#[cfg(unix)]
#[test]
fn one_file_outputs_refuse_what_is_not_a_regular_file_even_forced() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::os::unix::fs::symlink("/dev/null", dir.join("null")).unwrap();
    let fifo = dir.join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    let mut targets = vec!["null"];
    if made.is_ok_and(|s| s.success()) {
        targets.push("fifo");
    }
    let quality = |out: &str, extra: &[&str]| {
        let out = dir.join(out);
        let mut args = vec![
            "quality",
            "--generated",
            "gen.npy",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        rmld(&args)
    };
    for target in &targets {
        let refused = quality(target, &["--force"]);
        assert_refused(&refused, &[target, "not a regular file", "quality report"]);
        let refused = amortize_train(dir, "imgs.npy", target, &["--force"]);
        assert_refused(&refused, &[target, "not a regular file", "model"]);
    }
    assert!(dir.join("null").symlink_metadata().unwrap().is_symlink());
    assert!(!std::fs::metadata("/dev/null").unwrap().is_file());
    // An existing regular file: the refusal names --out and the path, and --force replaces it.
    std::fs::write(dir.join("q.json"), b"mine").unwrap();
    let refused = quality("q.json", &[]);
    assert_refused(&refused, &["invalid setting --out", "q.json", "--force"]);
    assert_eq!(std::fs::read(dir.join("q.json")).unwrap(), b"mine");
}

#[test]
fn a_shard_never_writes_over_its_warm_up_even_forced() {
    let tmp = tempfile::tempdir().unwrap();
    let wu = tmp.path().join("wu");
    let base = |extra: &[&str]| {
        let mut args = vec![
            "sample",
            "--backend",
            "cpu",
            "--chains",
            "8",
            "--samples",
            "6",
            "--method",
            "mala",
        ];
        args.extend_from_slice(extra);
        rmld(&args)
    };
    let w = wu.to_str().unwrap();
    let made = base(&["--warm-up-only", "--out", w]);
    assert!(made.status.success(), "{}", stderr(&made));
    let before = snapshot(&wu);
    let refused = base(&["--shard", "0/2", "--warm-up", w, "--out", w, "--force"]);
    assert_refused(&refused, &["--out", "wu", "is an input"]);
    assert!(snapshot(&wu) == before, "the warm-up changed");
}
