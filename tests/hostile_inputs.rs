//! Hostile inputs to every subcommand (issue 18): huge, zero, negative and NaN numbers,
//! unreadable, duplicated and overlapping paths, truncated and foreign files, concurrent runs and
//! signals. Every case must end with exit 0 or 2 (130 when a signal stopped it), never a panic or
//! an abort; a refusal (exit 2) names the option or the file; and no input file changes.
//!
//! The cases are the table `CASES` below: `{d}` is the folder of input files (made once by
//! `fixtures`), `{o}` a fresh output folder per case. `--backend cpu` and `--out {o}` are added to
//! the commands that take them when a case does not give its own.

mod cli_common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use rmld::io;

/// How a case is run.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// Once, to the end.
    Plain,
    /// SIGINT after this many milliseconds (exit 0 if it finished first, else 130).
    Signal(u64),
    /// Two copies at once into the same folder: each ends 0 or 2, at least one 0.
    Concurrent,
}

/// One hostile input.
struct Case {
    /// The command line, with `{d}` and `{o}` placeholders.
    args: &'static str,
    /// The exit status wanted: 0 or 2 (signal and concurrent cases check their own).
    code: i32,
    /// Words stderr must hold for exit 2: the option or the file it is about.
    words: &'static [&'static str],
    mode: Mode,
}

const fn ok(args: &'static str) -> Case {
    Case {
        args,
        code: 0,
        words: &[],
        mode: Mode::Plain,
    }
}

const fn no(args: &'static str, words: &'static [&'static str]) -> Case {
    Case {
        args,
        code: 2,
        words,
        mode: Mode::Plain,
    }
}

const fn signal(args: &'static str, after_ms: u64) -> Case {
    Case {
        args,
        code: 130,
        words: &[],
        mode: Mode::Signal(after_ms),
    }
}

const fn twice(args: &'static str) -> Case {
    Case {
        args,
        code: 0,
        words: &[],
        mode: Mode::Concurrent,
    }
}

/// A small sampling run.
const S: &str = "sample --chains 2 --samples 1 --steps 1";
/// A small augmentation of the labelled NPY fixture (4 classes of 10 images of 4 × 4).
const A: &str = "augment --preset paper --data {d}/u8.npy --labels {d}/labels.npy --batch 4 \
                 --no-quality --no-original-codes --samples 1";

const CASES: &[Case] = &[
    // ---- sample: sizes and numbers
    no("sample --chains 0", &["--chains"]),
    no("sample --chains 18446744073709551615", &["--chains"]),
    no("sample --samples 0", &["--samples"]),
    no("sample --steps 0", &["--steps"]),
    no("sample --batch 0", &["--batch"]),
    no("sample --atoms 0", &["--atoms"]),
    no("sample --atoms 1000000000000", &["--atoms"]),
    no("sample --eta -1", &["--eta"]),
    no("sample --eta NaN", &["--eta"]),
    no("sample --eta inf", &["--eta"]),
    no("sample --lambda -1", &["--lambda"]),
    no("sample --lambda NaN", &["--lambda"]),
    no("sample --pixel-max 0", &["--pixel-max"]),
    no("sample --pixel-max NaN", &["--pixel-max"]),
    no("sample --sigma2 -1", &["--sigma2"]),
    no("sample --sigma2 NaN", &["--sigma2"]),
    no("sample --discount NaN", &["--discount"]),
    no("sample --discount -1", &["--discount"]),
    no("sample --method hmc --leapfrog-steps 0", &["--leapfrog-steps"]),
    no("sample --target tangent --tangent-k 0", &["--tangent-k"]),
    no("sample --target tangent --tangent-k 100000", &["--tangent-k"]),
    no("sample --target tangent --tangent-scale NaN", &["--tangent-scale"]),
    no("sample --keep every:0", &["--keep"]),
    no("sample --samples 2 --burn-in 4294967295", &["--burn-in"]),
    no("sample --lasso-iterations 0", &["--lasso-iterations"]),
    ok("sample --chains 2 --samples 1 --steps 1 --seed 18446744073709551615"),
    ok("sample --chains 1 --samples 1 --steps 1 --batch 100000 --data {d}/u8.npy"),
    // ---- sample: foreign, truncated and odd files
    no("sample --data {d}/png.npy", &["png.npy"]),
    no("sample --data {d}/empty.npy", &["empty.npy"]),
    ok("sample --data {d}/f64.npy --chains 2 --samples 1 --steps 1"),
    no("sample --data {d}/c8.npy", &["c8.npy"]),
    no("sample --data {d}/shape4d.npy", &["shape4d.npy"]),
    no("sample --data {d}/shape1d.npy", &["shape1d.npy"]),
    no("sample --data {d}/rows0.npy", &["rows0.npy"]),
    no("sample --data {d}/cols0.npy", &["cols0.npy"]),
    no("sample --data {d}/hugeshape.npy", &["hugeshape.npy"]),
    no("sample --data {d}/nan.npy", &["nan.npy"]),
    // Finite, but summing its rows before scaling would overflow f32.
    no("sample --data {d}/huge_f32.npy", &["huge_f32.npy", "divide the data"]),
    no("encode --data {d}/huge_f32.npy", &["huge_f32.npy", "divide the data"]),
    no("sample --data {d}/trunc-images-idx3-ubyte.gz", &["trunc-images-idx3-ubyte.gz"]),
    no("sample --data {d}/plain-images-idx3-ubyte.gz", &["plain-images-idx3-ubyte.gz"]),
    no("sample --data {d}/trunc", &["trunc"]),
    no("sample --data {d}/garbage.csv", &["garbage.csv"]),
    no("sample --data {d}/ragged.csv", &["ragged.csv"]),
    no("sample --data {d}/nowhere.npy", &["nowhere.npy"]),
    no("sample --data {d}/dangling.npy", &["dangling.npy"]),
    no("sample --data {d}/adir.npy", &["adir.npy"]),
    no("sample --data {d}/emptydir", &["emptydir"]),
    no("sample --data {d}/u8.npy/inside", &["inside"]),
    no("sample --data {d}/u8.npy --dictionary {d}/png.npy", &["png.npy"]),
    no("sample --data {d}/u8.npy --dictionary {d}/dict_wrong_d.npy", &["dict_wrong_d.npy"]),
    no("sample --data {d}/u8.npy --dictionary {d}/dict_nan.npy", &["dict_nan.npy", "column 5"]),
    no("sample --data {d}/u8.npy --dictionary {d}/dict_inf.npy", &["dict_inf.npy", "column 7", "infinite"]),
    no("sample --data {d}/u8.npy --dictionary {d}/dict_zero_col.npy", &["dict_zero_col.npy", "column 3", "zeros"]),
    no("encode --data {d}/u8.npy --dictionary {d}/dict_zero_col.npy", &["dict_zero_col.npy", "column 3"]),
    // Dictionary learning: settings named by their flags, bad data named by its file.
    no("dictionary learn --atoms-per-signal 0 --out {d}/dl", &["--atoms-per-signal", "1..=64"]),
    no("dictionary learn --proposal-scale 0 --out {d}/dl", &["--proposal-scale"]),
    no("dictionary learn --data {d}/dict_nan.npy --out {d}/dl", &["dict_nan.npy", "NaN"]),
    no("dictionary eda-experiment --signals 5 --folds 9 --out {d}/dl", &["--folds"]),
    no("sample --data {d}/u8.npy --dictionary {d}/shape1d.npy", &["shape1d.npy"]),
    // Duplicated and overlapping paths: the data as its own dictionary, the output in a file.
    no("sample --data {d}/f32.npy --dictionary {d}/f32.npy", &["f32.npy"]),
    no("sample --out {d}/u8.npy", &["u8.npy"]),
    no("sample --out {d}/u8.npy --force", &["u8.npy"]),
    // --force replaces another run's files, never an input.
    no(
        "sample --data {d}/own/images.npy --out {d}/own --force",
        &["--out", "images.npy", "is an input"],
    ),
    no(
        "augment --data {d}/mnist --out {d}/mnist --force",
        &["--out", "is an input"],
    ),
    no("sample --out {d}/u8.npy/sub", &["u8.npy"]),
    no(
        "sample --data {d}/u8.npy --dictionary {d}/own/dictionary.npy --out {d}/own",
        &["--out", "dictionary.npy", "is an input"],
    ),
    // ---- encode
    no("encode --limit 0", &["--limit"]),
    no("encode --lasso-iterations 0", &["--lasso-iterations"]),
    no("encode --lambda NaN", &["--lambda"]),
    no("encode --atoms 0", &["--atoms"]),
    no("encode --data {d}/png.npy", &["png.npy"]),
    no("encode --data {d}/i16.npy", &["i16.npy"]),
    no("encode --data {d}/u8.npy --dictionary {d}/dict_wrong_d.npy", &["dict_wrong_d.npy"]),
    no("encode --data {d}/own/images.npy --out {d}/own", &["--out", "images.npy", "is an input"]),
    ok("encode --limit 100000 --data {d}/u8.npy"),
    ok("encode --data {d}/f32.npy --limit 3 --lasso-iterations 1"),
    // ---- augment
    no("augment --ratio 0:1", &["--ratio"]),
    no("augment --ratio 1:0", &["--ratio"]),
    no("augment --ratio -1:1", &["--ratio"]),
    no("augment --ratio NaN:1", &["--ratio"]),
    no("augment --ratio abc", &["--ratio"]),
    no("augment --ratio 1:100000000", &["--ratio"]),
    no("augment --limit 0", &["--limit"]),
    no("augment --samples 0", &["--samples"]),
    no("augment --classes 99", &["--classes"]),
    no("augment --smooth -1", &["--smooth"]),
    no("augment --smooth NaN", &["--smooth"]),
    no("augment --smooth 1e30", &["--smooth", "1000"]),
    no("augment --soft-threshold NaN", &["--soft-threshold"]),
    no("augment --burn-in 4294967295", &["--burn-in"]),
    no("augment --samples 4294967295", &["--burn-in/--samples", "4294967295"]),
    no("augment --encode-test", &["--encode-test"]),
    no("augment --method kernel-hmc --reencode", &["--reencode"]),
    no("augment --data {d}/u8.npy", &["u8.npy", "labels"]),
    no("augment --data {d}/u8.npy --labels {d}/png.npy", &["png.npy"]),
    no("augment --data {d}/u8.npy --labels {d}/labels_short.npy", &["labels_short.npy"]),
    no("augment --data {d}/u8.npy --labels {d}/labels_neg.npy", &["labels_neg.npy"]),
    no("augment --data {d}/u8.npy --labels {d}/notes.txt", &["notes.txt"]),
    no("augment --data {d}/badlabels", &["badlabels"]),
    no("augment --data {d}/trunc", &["trunc"]),
    no("augment --data {d}/mnist --out {d}/mnist", &["--out", "is an input"]),
    no("augment --data {d}/u8.npy --labels {d}/labels.npy --out {d}", &["--out", "labels.npy"]),
    no(
        "augment --preset paper --data {d}/u8.npy --labels {d}/labels.npy --batch 64",
        &["--batch"],
    ),
    ok("augment --preset paper --data {d}/u8.npy --labels {d}/labels.npy --batch 4 --no-quality --no-original-codes --samples 1 --classes 1,1"),
    ok("augment --preset paper --data {d}/u8.npy --labels {d}/labels.npy --no-quality --samples 1 --steps 1 --limit 100000"),
    ok("augment --preset paper --data {d}/mnist --batch 4 --no-quality --samples 1 --ratio 1:1"),
    // ---- bench
    no("bench --chains 0", &["--chains"]),
    no("bench --chains ,,", &["--chains"]),
    no("bench --chains -1", &["--chains"]),
    no("bench --dim 0", &["--dim"]),
    no("bench --images 0", &["--images"]),
    no("bench --ceiling-size 0", &["--ceiling-size"]),
    no("bench --outer 0", &["--outer"]),
    no("bench --atoms 0", &["--atoms"]),
    no("bench --dim 100000 --images 10 --chains 1", &["--dim", "available"]),
    no("bench --dim 4000000000 --images 1 --chains 1", &["--dim", "available"]),
    no("bench --dim 16 --atoms 100000000000 --chains 1", &["--atoms", "available"]),
    no("bench --data {d}/u8.npy --atoms 100000000000 --chains 1", &["--atoms", "available"]),
    no("sample --data /dev/zero", &["/dev/zero"]),
    no("sample --data /dev/null", &["/dev/null"]),
    no("sample --dictionary /dev/zero", &["/dev/zero"]),
    no("augment --labels /dev/zero", &["/dev/zero"]),
    no("quality --generated {d}/mnist", &["mnist"]),
    no("sample --keep every:-1", &["--keep"]),
    no("augment --data {d}/labels.npy --labels {d}/labels.npy", &["labels.npy"]),
    ok("encode --limit 18446744073709551615 --lasso-iterations 2"),
    no("bench --data {d}/png.npy", &["png.npy"]),
    no("bench --data {d}/u8.npy --out {d}/u8.npy", &["u8.npy"]),
    // ---- resume
    no("resume {d}/nowhere", &["nowhere"]),
    no("resume {d}/emptydir", &["emptydir"]),
    no("resume {d}/u8.npy", &["u8.npy"]),
    no("resume {d}/ckpt_garbage", &["checkpoint.rmld"]),
    no("resume {d}/ckpt_trunc", &["checkpoint.rmld"]),
    no("resume {d}/augment_stopped", &["checkpoint.rmld", "cannot be resumed", "rmld augment"]),
    no("resume {d}/mnist", &["checkpoint.rmld", "no interrupted"]),
    // ---- quality
    no("quality --generated {d}/png.npy", &["png.npy"]),
    no("quality --generated {d}/nowhere.npy", &["nowhere.npy"]),
    no("quality --data {d}/mnist --generated {d}/u8.npy --generated-labels {d}/labels.npy --generated-scale NaN", &["--generated-scale"]),
    no("quality --data {d}/mnist --generated {d}/u8.npy --generated-labels {d}/labels.npy --generated-scale -1", &["--generated-scale"]),
    no("quality --data {d}/mnist --generated {d}/u8.npy --generated-labels {d}/labels_short.npy", &["labels_short.npy"]),
    no("quality --data {d}/mnist --generated {d}/u8.npy --generated-labels {d}/labels.npy --limit 0", &["--limit"]),
    no("quality --data {d}/mnist --generated {d}/u8.npy --generated-labels {d}/labels.npy --out {d}/u8.npy", &["u8.npy"]),
    // ---- concurrent runs into one folder
    ok("quality --data {d}/mnist --generated {d}/u8.npy --generated-labels {d}/labels.npy --out {o}.json"),
    twice(S),
    twice(A),
    twice("encode --limit 20"),
    twice("bench --chains 1 --dim 16 --images 20 --ceiling-size 32 --outer 1"),
    // A second run into a finished run's folder, and with --force.
    no("sample --chains 2 --out {d}/ckpt_trunc", &["--out", "already exists", "--force"]),
    // ---- signals at the start and in the middle of each command's work
    signal("sample --chains 4 --samples 1000000 --steps 1", 50),
    signal("sample --chains 4 --samples 1000000 --steps 1", 600),
    signal(A, 30),
    signal(A, 300),
    signal(
        "augment --preset paper --limit 600 --batch 8 --no-quality --samples 1 --burn-in 100000 --steps 4",
        700,
    ),
    signal("encode --lasso-iterations 1000", 300),
    signal(
        "quality --data {d}/mnist --generated {d}/u8.npy --generated-labels {d}/labels.npy",
        20,
    ),
    signal(
        "bench --chains 1,2,4,8,16,32,64,128 --dim 16 --images 50 --ceiling-size 64 --outer 300",
        1000,
    ),
];

/// The command's options: which take `--backend` and `--out` folders.
fn completes(command: &str, args: &mut Vec<String>, out: &Path) {
    let takes_out = matches!(command, "sample" | "encode" | "augment" | "bench");
    if takes_out && !args.iter().any(|a| a == "--backend") {
        args.extend(["--backend".into(), "cpu".into()]);
    }
    if takes_out && !args.iter().any(|a| a == "--out") {
        args.extend(["--out".into(), out.display().to_string()]);
    }
}

fn expand(case: &Case, d: &Path, out: &Path) -> Vec<String> {
    let mut args: Vec<String> = case
        .args
        .split_whitespace()
        .map(|a| {
            a.replace("{d}", &d.display().to_string())
                .replace("{o}", &out.display().to_string())
        })
        .collect();
    let command = args[0].clone();
    completes(&command, &mut args, out);
    args
}

fn rmld(args: &[String]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rmld"));
    command.args(args).stdin(Stdio::null());
    command
}

fn describe(output: &Output) -> String {
    format!(
        "status {:?}, stderr: {}",
        output.status,
        cli_common::stderr(output).trim_end()
    )
}

/// Runs one case; `Err` says what went wrong.
fn run_case(case: &Case, d: &Path, out: &Path) -> Result<(), String> {
    let args = expand(case, d, out);
    let outputs: Vec<Output> = match case.mode {
        Mode::Plain => vec![rmld(&args).output().map_err(|e| e.to_string())?],
        Mode::Signal(after) => {
            // Stopped long before their end: their draws need not fit on the disk.
            let child = rmld(&args)
                .env("RMLD_SKIP_DISK_CHECK", "1")
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| e.to_string())?;
            std::thread::sleep(Duration::from_millis(after));
            let _ = Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status();
            vec![child.wait_with_output().map_err(|e| e.to_string())?]
        }
        Mode::Concurrent => {
            let spawn = || {
                rmld(&args)
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| e.to_string())
            };
            let (a, b) = (spawn()?, spawn()?);
            vec![
                a.wait_with_output().map_err(|e| e.to_string())?,
                b.wait_with_output().map_err(|e| e.to_string())?,
            ]
        }
    };
    for output in &outputs {
        let text = cli_common::stderr(output);
        if text.contains("panicked") || text.contains("memory allocation") {
            return Err(describe(output));
        }
    }
    let codes: Vec<Option<i32>> = outputs.iter().map(|o| o.status.code()).collect();
    match case.mode {
        Mode::Plain => {
            let output = &outputs[0];
            if output.status.code() != Some(case.code) {
                return Err(format!("wanted exit {}: {}", case.code, describe(output)));
            }
            let text = cli_common::stderr(output);
            if let Some(word) = case.words.iter().find(|w| !text.contains(*w)) {
                return Err(format!("the message lacks {word:?}: {}", describe(output)));
            }
        }
        Mode::Signal(_) => {
            let output = &outputs[0];
            if !matches!(output.status.code(), Some(0) | Some(130)) {
                return Err(format!("wanted exit 0 or 130: {}", describe(output)));
            }
            eprintln!(
                "signal case `{}`: exit {:?}",
                case.args,
                output.status.code()
            );
            // An interrupted augmentation (it cannot be resumed) keeps nothing but its report.
            if args[0] == "augment" && output.status.code() == Some(130) {
                let mut left: Vec<String> = std::fs::read_dir(out)
                    .map_err(|e| e.to_string())?
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect();
                left.sort();
                if left != [".rmld.lock", "report.json"] {
                    return Err(format!("an interrupted augment left {left:?}"));
                }
            }
        }
        Mode::Concurrent => {
            if !codes.iter().all(|c| matches!(c, Some(0) | Some(2))) || !codes.contains(&Some(0)) {
                return Err(format!(
                    "wanted 0 and 0 or 2: {}; {}",
                    describe(&outputs[0]),
                    describe(&outputs[1])
                ));
            }
            for output in outputs.iter().filter(|o| o.status.code() == Some(2)) {
                let text = cli_common::stderr(output);
                if !(text.contains("--out")
                    && (text.contains("another rmld run") || text.contains("already exists")))
                {
                    return Err(format!("the refusal is unclear: {}", describe(output)));
                }
            }
        }
    }
    Ok(())
}

/// Every file under `dir` (recursively, links not followed) with the xxh3 hash of its bytes.
fn hashes(dir: &Path) -> BTreeMap<PathBuf, u64> {
    let mut all = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() {
                let bytes = std::fs::read(&path).unwrap();
                all.insert(path, xxhash_rust::xxh3::xxh3_64(&bytes));
            } else {
                all.insert(path, 0);
            }
        }
    }
    all
}

/// An NPY file with any header, for dtypes and shapes rmld's writers do not make.
fn raw_npy(path: &Path, descr: &str, shape: &str, payload: &[u8]) {
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(payload);
    std::fs::write(path, bytes).unwrap();
}

/// The input files the cases read, in `d`.
fn fixtures(d: &Path) {
    let f = |name: &str| d.join(name);
    let (n, side) = (40usize, 4usize);
    let dim = side * side;
    let pixels: Vec<u8> = (0..n * dim)
        .map(|i| ((i * 37 + i / 7) % 256) as u8)
        .collect();
    io::write_npy_u8(&f("u8.npy"), &[n, dim], &pixels).unwrap();
    let floats: Vec<f32> = pixels.iter().map(|&v| v as f32 / 255.0).collect();
    io::write_npy_f32(&f("f32.npy"), &[n, dim], &floats).unwrap();
    let mut nan = floats.clone();
    nan[17] = f32::NAN;
    io::write_npy_f32(&f("nan.npy"), &[n, dim], &nan).unwrap();
    let huge: Vec<f32> = (0..n * dim).map(|i| (i % 7) as f32 * 1e37).collect();
    io::write_npy_f32(&f("huge_f32.npy"), &[n, dim], &huge).unwrap();
    let labels: Vec<i64> = (0..n as i64).map(|i| i % 4).collect();
    io::write_npy_i64(&f("labels.npy"), &[n], &labels).unwrap();
    io::write_npy_i64(&f("labels_short.npy"), &[5], &labels[..5]).unwrap();
    let mut negative = labels.clone();
    negative[3] = -1;
    io::write_npy_i64(&f("labels_neg.npy"), &[n], &negative).unwrap();
    std::fs::write(f("notes.txt"), "one\ntwo\n").unwrap();
    // Foreign and odd NPY files.
    io::write_png_grid(
        &f("picture.png"),
        &[(&floats[..dim], 1)],
        side,
        side,
        1,
        (0.0, 1.0),
        1,
    )
    .unwrap();
    std::fs::copy(f("picture.png"), f("png.npy")).unwrap();
    std::fs::write(f("empty.npy"), b"").unwrap();
    raw_npy(&f("f64.npy"), "<f8", "(40, 16)", &vec![0u8; 8 * n * dim]);
    raw_npy(&f("c8.npy"), "<c8", "(40, 16)", &vec![0u8; 8 * n * dim]);
    raw_npy(&f("i16.npy"), "<i2", "(40, 16)", &vec![1u8; 2 * n * dim]);
    raw_npy(&f("shape4d.npy"), "|u1", "(2, 2, 2, 2)", &[7u8; 16]);
    raw_npy(&f("shape1d.npy"), "|u1", "(16,)", &[7u8; 16]);
    raw_npy(&f("rows0.npy"), "|u1", "(0, 16)", &[]);
    raw_npy(&f("cols0.npy"), "|u1", "(5, 0)", &[]);
    raw_npy(
        &f("hugeshape.npy"),
        "|u1",
        "(1000000000000, 784)",
        &[1u8; 100],
    );
    // A folder holding a dictionary and images under the names sample and encode write.
    std::fs::create_dir(f("own")).unwrap();
    io::write_npy_f32(&f("own/dictionary.npy"), &[dim, 20], &vec![0.1; dim * 20]).unwrap();
    std::fs::copy(f("u8.npy"), f("own/images.npy")).unwrap();
    // Dictionaries that do not fit the data.
    io::write_npy_f32(&f("dict_wrong_d.npy"), &[10, 20], &vec![0.1; 200]).unwrap();
    let mut dict = vec![0.1f32; dim * 20];
    dict[5] = f32::NAN;
    io::write_npy_f32(&f("dict_nan.npy"), &[dim, 20], &dict).unwrap();
    let mut dict = vec![0.1f32; dim * 20];
    dict[2 * 20 + 7] = f32::INFINITY;
    io::write_npy_f32(&f("dict_inf.npy"), &[dim, 20], &dict).unwrap();
    let mut dict = vec![0.1f32; dim * 20];
    (0..dim).for_each(|i| dict[i * 20 + 3] = 0.0);
    io::write_npy_f32(&f("dict_zero_col.npy"), &[dim, 20], &dict).unwrap();
    // IDX: a labelled MNIST-style folder, a truncated gzip and one that is not gzip at all.
    let mnist = f("mnist");
    std::fs::create_dir(&mnist).unwrap();
    io::write_idx_images(
        &mnist.join("train-images-idx3-ubyte.gz"),
        n,
        side,
        side,
        &pixels,
    )
    .unwrap();
    let idx_labels: Vec<u8> = labels.iter().map(|&l| l as u8).collect();
    io::write_idx_labels(&mnist.join("train-labels-idx1-ubyte.gz"), &idx_labels).unwrap();
    let whole = std::fs::read(mnist.join("train-images-idx3-ubyte.gz")).unwrap();
    std::fs::write(f("trunc-images-idx3-ubyte.gz"), &whole[..whole.len() / 2]).unwrap();
    std::fs::write(
        f("plain-images-idx3-ubyte.gz"),
        b"\x00\x00\x08\x03 not gzip",
    )
    .unwrap();
    std::fs::create_dir(f("trunc")).unwrap();
    std::fs::write(
        f("trunc/train-images-idx3-ubyte.gz"),
        &whole[..whole.len() / 2],
    )
    .unwrap();
    std::fs::copy(
        mnist.join("train-labels-idx1-ubyte.gz"),
        f("trunc/train-labels-idx1-ubyte.gz"),
    )
    .unwrap();
    std::fs::create_dir(f("badlabels")).unwrap();
    std::fs::copy(
        mnist.join("train-images-idx3-ubyte.gz"),
        f("badlabels/train-images-idx3-ubyte.gz"),
    )
    .unwrap();
    io::write_idx_labels(&f("badlabels/train-labels-idx1-ubyte.gz"), &idx_labels[..7]).unwrap();
    // CSV.
    std::fs::write(f("garbage.csv"), "1,2,x\n3,4,5\n").unwrap();
    std::fs::write(f("ragged.csv"), "1,2,3\n4,5\n").unwrap();
    // Paths that are not files.
    #[cfg(unix)]
    std::os::unix::fs::symlink(f("gone.npy"), f("dangling.npy")).unwrap();
    std::fs::create_dir(f("adir.npy")).unwrap();
    std::fs::create_dir(f("emptydir")).unwrap();
    // The report an interrupted augmentation leaves.
    std::fs::create_dir(f("augment_stopped")).unwrap();
    std::fs::write(
        f("augment_stopped/report.json"),
        r#"{"command": "augment", "interrupted": true, "resumable": false}"#,
    )
    .unwrap();
    // Checkpoints: garbage, and a real one cut short.
    std::fs::create_dir(f("ckpt_garbage")).unwrap();
    std::fs::write(f("ckpt_garbage/checkpoint.rmld"), b"RMLD but not really").unwrap();
    let run = f("ckpt_trunc");
    let made = rmld(&[
        "sample".into(),
        "--backend".into(),
        "cpu".into(),
        "--chains".into(),
        "2".into(),
        "--samples".into(),
        "3".into(),
        "--steps".into(),
        "1".into(),
        "--checkpoint-every".into(),
        "1".into(),
        "--out".into(),
        run.display().to_string(),
    ])
    .output()
    .unwrap();
    assert!(made.status.success(), "{}", describe(&made));
    let checkpoint = std::fs::read(run.join("checkpoint.rmld")).unwrap();
    std::fs::write(
        run.join("checkpoint.rmld"),
        &checkpoint[..checkpoint.len() / 2],
    )
    .unwrap();
    let _ = std::fs::remove_file(run.join(".rmld.lock"));
}

#[test]
fn hostile_inputs_end_in_a_clear_refusal_or_a_run_and_never_change_an_input() {
    assert!(CASES.len() >= 60, "only {} cases", CASES.len());
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("inputs");
    std::fs::create_dir(&d).unwrap();
    fixtures(&d);
    let before = hashes(&d);
    let started = Instant::now();
    let mut failures = Vec::new();
    for (k, case) in CASES.iter().enumerate() {
        let out = tmp.path().join(format!("out{k}"));
        let one = Instant::now();
        if let Err(e) = run_case(case, &d, &out) {
            failures.push(format!("case {k} `{}`: {e}", case.args));
        }
        let after = hashes(&d);
        if after != before {
            let changed: Vec<_> = before
                .keys()
                .chain(after.keys())
                .filter(|p| before.get(*p) != after.get(*p))
                .collect();
            failures.push(format!(
                "case {k} `{}` changed inputs: {changed:?}",
                case.args
            ));
            break;
        }
        let seconds = one.elapsed().as_secs_f64();
        if seconds > 5.0 {
            eprintln!("slow case {k} `{}`: {seconds:.1} s", case.args);
        }
    }
    eprintln!(
        "{} hostile cases in {:.1} s",
        CASES.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}
