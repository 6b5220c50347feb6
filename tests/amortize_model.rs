//! The amortised sampler's model file (round trip, each bad file refused by name), its training's interruption and resumption (the same bytes as an uninterrupted run), and `augment --sampler amortized`.

mod amortize_common;
mod gpu_common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rmld::amortize::{CodeModel, CodeTrainSettings, ModelShape, MODEL_VERSION};
use rmld::session::{
    load_model, partial_path, AmortizeSettings, AmortizeTrainer, AugmentSettings, Augmenter,
    BackendChoice, Observer, Phase, SamplerChoice, Silent,
};
use rmld::Error;

/// A model of 2 classes over p = 6 atoms, trained a few steps.
fn small_model() -> CodeModel {
    amortize_common::trained_tiny_model(5)
}

fn untrained_model() -> CodeModel {
    amortize_common::tiny_model(5)
}

#[test]
fn pairs_are_nearest_neighbours_or_any_other_sample() {
    let model = untrained_model();
    let k = model.settings.neighbours;
    for class in &model.classes {
        let n = class.samples.len() / 6;
        assert_eq!(class.neighbours.len(), n * k);
        for (i, row) in class.neighbours.chunks(k).enumerate() {
            assert!(row.iter().all(|&j| j as usize != i && (j as usize) < n));
        }
    }
    let settings = CodeTrainSettings {
        neighbours: 0,
        ..model.settings.clone()
    };
    let shape = model.shape.clone();
    let codes: Vec<Vec<f32>> = vec![
        vec![0.5; 12],
        vec![1.0, 2.0, 0.0, 0.0, 1.0, 3.0, 0.0, 1.0, 2.0, 2.0, 0.0, 1.0],
    ];
    let model = CodeModel::new(shape, settings, String::new(), &codes).unwrap();
    assert!(model.classes.iter().all(|c| c.neighbours.is_empty()));
}

#[test]
fn parallel_rounds_take_the_sequential_steps() {
    let mut model = untrained_model();
    while !model.complete() {
        model.train_round(3);
    }
    assert_eq!(model.steps_done(), 14);
    assert_eq!(model.to_bytes().unwrap(), small_model().to_bytes().unwrap());
}

fn message(e: Error) -> String {
    e.to_string()
}

#[test]
fn model_round_trips_bytes_and_samples() {
    let model = small_model();
    assert!(model.complete());
    let bytes = model.to_bytes().unwrap();
    let back = CodeModel::from_bytes(Path::new("m.amz"), &bytes).unwrap();
    assert_eq!(back.to_bytes().unwrap(), bytes);
    assert_eq!(back.sample(1, 9, 5), model.sample(1, 9, 5));
    let draws = model.sample(0, 9, 5);
    assert_eq!(draws.len(), 9 * 6);
    assert!(draws.iter().all(|v| v.is_finite()));
    // A file written and read back through the session layer.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.amz");
    rmld::session::save_model(&path, &model).unwrap();
    assert_eq!(load_model(&path).unwrap().to_bytes().unwrap(), bytes);
}

#[test]
fn each_bad_file_is_refused_naming_the_file_and_what_was_expected() {
    let bytes = small_model().to_bytes().unwrap();
    let path = Path::new("/some/where/m.amz");
    let refused = |b: &[u8], needles: &[&str]| {
        let text = message(CodeModel::from_bytes(path, b).unwrap_err());
        assert!(
            text.contains("/some/where/m.amz"),
            "no file name in {text:?}"
        );
        for n in needles {
            assert!(text.contains(n), "{n:?} not in {text:?}");
        }
    };
    refused(b"", &["not an rmld amortised-sampler model"]);
    refused(
        b"P5\n3 3 255\n...",
        &["not an rmld amortised-sampler model"],
    );
    refused(&bytes[..14], &["truncated", "header"]);
    let mut other = bytes.clone();
    other[8..12].copy_from_slice(&(MODEL_VERSION + 1).to_le_bytes());
    refused(
        &other,
        &[
            &format!("version {}", MODEL_VERSION + 1),
            &format!("reads version {MODEL_VERSION}"),
        ],
    );
    refused(&bytes[..bytes.len() - 1], &["truncated", "announces"]);
    refused(&bytes[..bytes.len() / 2], &["truncated"]);
    let mut longer = bytes.clone();
    longer.push(0);
    refused(&longer, &["1 bytes after"]);
    let mut flipped = bytes.clone();
    let last = flipped.len() - 3;
    flipped[last] ^= 0x40;
    refused(&flipped, &["checksum mismatch"]);
    // A missing file names it too.
    let text = message(load_model(Path::new("/no/such/m.amz")).unwrap_err());
    assert!(text.contains("/no/such/m.amz"), "{text}");
}

#[test]
fn a_model_of_another_shape_is_refused() {
    let model = small_model();
    let path = Path::new("m.amz");
    let same = model.shape.clone();
    model.check_matches(path, &same).unwrap();
    let mut subset = same.clone();
    subset.classes = vec![7];
    model.check_matches(path, &subset).unwrap();
    let cases: Vec<(ModelShape, &str)> = vec![
        (
            ModelShape {
                height: 28,
                width: 28,
                ..same.clone()
            },
            "trained on 2×3 images, but this run's are 28×28",
        ),
        (
            ModelShape {
                p: 7,
                ..same.clone()
            },
            "another dictionary (6 atoms",
        ),
        (
            ModelShape {
                dictionary_hash: 43,
                ..same.clone()
            },
            "another dictionary",
        ),
        (
            ModelShape {
                classes: vec![3, 5],
                ..same.clone()
            },
            "no model of classes [5]: it was trained on classes [3, 7]",
        ),
    ];
    for (want, needle) in cases {
        let text = message(model.check_matches(path, &want).unwrap_err());
        assert!(
            text.contains("m.amz") && text.contains(needle),
            "{needle:?} not in {text:?}"
        );
    }
}

#[test]
fn bad_training_settings_are_refused_by_name() {
    let ok = CodeTrainSettings::default();
    ok.validate().unwrap();
    for (s, name) in [
        (
            CodeTrainSettings {
                hidden: 0,
                ..ok.clone()
            },
            "hidden",
        ),
        (
            CodeTrainSettings {
                fit_steps: 0,
                ..ok.clone()
            },
            "fit_steps",
        ),
        (
            CodeTrainSettings {
                pairs: 0,
                ..ok.clone()
            },
            "pairs",
        ),
        (
            CodeTrainSettings {
                lr: f32::NAN,
                ..ok.clone()
            },
            "lr",
        ),
        (
            CodeTrainSettings {
                sigma_min: 0.0,
                ..ok.clone()
            },
            "sigma_min",
        ),
        (
            CodeTrainSettings {
                apply_steps: 0,
                ..ok.clone()
            },
            "apply_steps",
        ),
    ] {
        let text = message(s.validate().unwrap_err());
        assert!(text.contains(name), "{name} not in {text}");
    }
}

/// Stops the run once the fitting has reached `after` steps.
struct StopFitting {
    after: u64,
    fitting: AtomicBool,
    position: AtomicU64,
}

impl Observer for StopFitting {
    fn phase_start(&self, phase: &Phase) {
        self.fitting
            .store(phase.name == "fitting", Ordering::Relaxed);
    }
    fn phase_advance(&self, position: u64) {
        self.position.store(position, Ordering::Relaxed);
    }
    fn stop_requested(&self) -> bool {
        self.fitting.load(Ordering::Relaxed) && self.position.load(Ordering::Relaxed) >= self.after
    }
}

/// A small training on the embedded digits (classes 0 and 1) into `dir/m.amz`.
fn training(dir: &Path) -> AmortizeSettings {
    let mut teacher = AugmentSettings::paper();
    teacher.problem.backend = BackendChoice::Cpu;
    teacher.dynamics.lasso_iterations = 30;
    teacher.classes = Some(vec![0, 1]);
    teacher.limit = Some(120);
    teacher.ratio = 1.0;
    teacher.samples = 2;
    AmortizeSettings {
        teacher,
        model: dir.join("m.amz"),
        train: CodeTrainSettings {
            hidden: 8,
            fit_steps: 25,
            pairs: 8,
            ..CodeTrainSettings::default()
        },
        force: false,
    }
}

/// Stops a run at its first poll (in the teacher).
struct StopAtOnce;

impl Observer for StopAtOnce {
    fn stop_requested(&self) -> bool {
        true
    }
}

#[test]
fn a_training_stopped_in_its_teacher_runs_again_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let settings = training(dir.path());
    let stopped = AmortizeTrainer::new(settings.clone())
        .run(&StopAtOnce)
        .unwrap();
    assert!(stopped.interrupted);
    // The stopped teacher's report says so; it is this training's, not a file of the user's.
    let report = dir.path().join("m.amz.teacher/report.json");
    assert!(report.is_file(), "the stopped teacher left no report");
    let done = AmortizeTrainer::new(settings.clone()).run(&Silent).unwrap();
    assert!(!done.interrupted && settings.model.is_file());
}

#[test]
fn refusals_name_the_model_setting_the_library_caller_fills() {
    // `AmortizeSettings` (and Python's `amortize_train`) take the model file as `model`: the
    // refusals of its files name `model`, not the `out` of augment's folder (the command line
    // writes it as --out again, tests/inputs_kept.rs).
    let dir = tempfile::tempdir().unwrap();
    let settings = training(dir.path());
    let refused =
        |settings: &AmortizeSettings| match AmortizeTrainer::new(settings.clone()).run(&Silent) {
            Err(Error::Usage { field, message }) => (field, message),
            other => panic!("expected a refusal of a setting, got {other:?}"),
        };
    std::fs::write(&settings.model, b"mine").unwrap();
    let (field, message) = refused(&settings);
    assert_eq!(field, "model", "{message}");
    assert!(
        message.contains("m.amz exists") && message.contains("`force`"),
        "{message}"
    );
    std::fs::remove_file(&settings.model).unwrap();
    let teacher = dir.path().join("m.amz.teacher");
    std::fs::create_dir(&teacher).unwrap();
    std::fs::write(teacher.join("report.json"), b"mine").unwrap();
    let (field, message) = refused(&settings);
    assert_eq!(field, "model", "{message}");
    assert!(
        message.contains("give `force` to replace the teacher's files")
            && message.contains("or choose another `model`")
            && !message.contains("`out`"),
        "{message}"
    );
    let mut over_input = settings.clone();
    over_input.teacher.problem.dictionary = Some(teacher.join("report.json"));
    let (field, message) = refused(&over_input);
    assert_eq!(field, "model", "{message}");
    assert!(message.contains("is an input"), "{message}");
    let mut in_cache = settings.clone();
    in_cache.teacher.code_cache = Some(dir.path().to_path_buf());
    let (field, message) = refused(&in_cache);
    assert_eq!(field, "model", "{message}");
    assert!(message.contains("`code_cache`"), "{message}");
    assert_eq!(std::fs::read(teacher.join("report.json")).unwrap(), b"mine");
    assert!(!settings.model.exists());
}

fn augment_settings(out: PathBuf, model: Option<PathBuf>) -> AugmentSettings {
    let mut s = AugmentSettings::paper();
    s.problem.backend = BackendChoice::Cpu;
    s.dynamics.lasso_iterations = 30;
    s.problem.out = out;
    s.classes = Some(vec![0, 1]);
    s.limit = Some(120);
    s.sampler = SamplerChoice::Amortized;
    s.model = model;
    s
}

#[test]
fn interrupted_training_resumes_to_the_same_bytes_and_augment_uses_the_model() {
    let whole = tempfile::tempdir().unwrap();
    let split = tempfile::tempdir().unwrap();
    let done = AmortizeTrainer::new(training(whole.path()))
        .run(&Silent)
        .unwrap();
    assert!(!done.interrupted);
    let reference = std::fs::read(whole.path().join("m.amz")).unwrap();

    let settings = training(split.path());
    let stopper = StopFitting {
        after: 30,
        fitting: AtomicBool::new(false),
        position: AtomicU64::new(0),
    };
    let first = AmortizeTrainer::new(settings.clone())
        .run(&stopper)
        .unwrap();
    assert!(first.interrupted);
    assert!(
        !settings.model.exists(),
        "no model before the training ends"
    );
    let partial = load_model(&partial_path(&settings.model)).unwrap();
    assert_eq!(
        partial.steps_done(),
        30,
        "two classes, 3 rounds of 5 steps each"
    );
    assert!(!partial.complete());
    // The checkpoint keeps Adam's state (so the resumed steps are the uninterrupted ones); the
    // finished model does not: it is what generation needs, a quarter of the bytes.
    assert!(partial.classes.iter().all(|c| c.adam.is_some()));
    let finished = load_model(&whole.path().join("m.amz")).unwrap();
    assert!(finished.complete());
    assert!(finished.classes.iter().all(|c| c.adam.is_none()));
    assert!(
        (reference.len() as f64) < 0.5 * partial.to_bytes().unwrap().len() as f64,
        "finished model {} bytes, checkpoint {} bytes",
        reference.len(),
        partial.to_bytes().unwrap().len()
    );
    // The checkpoint's stamp names the build and device that fitted it; another build's (or
    // an older rmld's, with none) is not continued, and nothing is written.
    let stamp = partial_path(&settings.model).with_extension("partial.json");
    let written = std::fs::read(&stamp).expect("the checkpoint's stamp");
    let mut other: serde_json::Value = serde_json::from_slice(&written).unwrap();
    assert_eq!(other["rmld_build"], rmld::BUILD);
    other["rmld_build"] = "0123456789abcdef".into();
    std::fs::write(&stamp, serde_json::to_vec(&other).unwrap()).unwrap();
    let refused = message(
        AmortizeTrainer::new(settings.clone())
            .run(&Silent)
            .unwrap_err(),
    );
    assert!(
        refused.contains("m.amz.partial") && refused.contains("rmld build 0123456789abcdef"),
        "{refused}"
    );
    std::fs::remove_file(&stamp).unwrap();
    let refused = message(
        AmortizeTrainer::new(settings.clone())
            .run(&Silent)
            .unwrap_err(),
    );
    assert!(refused.contains("is missing"), "{refused}");
    assert!(!settings.model.exists());
    std::fs::write(&stamp, &written).unwrap();
    let second = AmortizeTrainer::new(settings.clone()).run(&Silent).unwrap();
    assert!(!second.interrupted);
    assert_eq!(second.report["teacher_reused"], true);
    assert_eq!(second.report["steps_resumed_from"], 30);
    assert_eq!(
        std::fs::read(&settings.model).unwrap(),
        reference,
        "a resumed training writes the uninterrupted one's bytes"
    );
    assert!(!partial_path(&settings.model).exists());
    assert!(!stamp.exists(), "the stamp is removed with the checkpoint");

    // An existing model is kept unless forced.
    let text = message(
        AmortizeTrainer::new(settings.clone())
            .run(&Silent)
            .unwrap_err(),
    );
    assert!(text.contains("force"), "{text}");

    // augment --sampler amortized with it: the generated set and the report say so.
    let out = split.path().join("aug");
    let outcome = Augmenter::new(augment_settings(out.clone(), Some(settings.model.clone())))
        .run(&Silent)
        .unwrap();
    assert_eq!(outcome.report["sampler"], "amortized");
    let g = outcome.report["generated_count"].as_u64().unwrap() as usize;
    assert!(g >= 2, "{g} generated");
    let codes = rmld::io::read_npy_matrix_f32(&out.join("generated-codes.npy")).unwrap();
    assert_eq!(codes.0, vec![g, 256]);
    assert!(codes.1.iter().all(|v| v.is_finite()));
    assert_eq!(outcome.report["amortized"]["generation_device"], "CPU");

    // The same generation with the network on the GPU (lavapipe in CI): the same anchors and
    // noise, the codes equal to the network's rounding.
    if gpu_common::context("augment --sampler amortized --backend gpu").is_some() {
        let out_gpu = split.path().join("aug-gpu");
        let mut on_gpu = augment_settings(out_gpu.clone(), Some(settings.model.clone()));
        on_gpu.problem.backend = BackendChoice::Gpu;
        let outcome = Augmenter::new(on_gpu).run(&Silent).unwrap();
        let device = outcome.report["amortized"]["generation_device"].to_string();
        assert!(device != "\"CPU\"", "{device}");
        let gpu_codes =
            rmld::io::read_npy_matrix_f32(&out_gpu.join("generated-codes.npy")).unwrap();
        assert_eq!(gpu_codes.0, codes.0);
        let bad: Vec<String> = gpu_codes
            .1
            .iter()
            .zip(&codes.1)
            .enumerate()
            .filter(|(_, (g, c))| (*g - *c).abs() > 1e-3 * g.abs().max(c.abs()).max(1.0))
            .map(|(i, (g, c))| format!("code {i}: gpu {g}, cpu {c}"))
            .collect();
        assert!(bad.is_empty(), "{}", bad.join("; "));
    }

    // Without a model, with an unfinished one, with another dictionary or classes: refused.
    let text = message(
        Augmenter::new(augment_settings(split.path().join("a2"), None))
            .run(&Silent)
            .unwrap_err(),
    );
    assert!(text.contains("model"), "{text}");
    let mut other = augment_settings(split.path().join("a3"), Some(settings.model.clone()));
    other.problem.seed = 9;
    let text = message(Augmenter::new(other).run(&Silent).unwrap_err());
    assert!(
        text.contains("m.amz") && text.contains("another dictionary"),
        "{text}"
    );
    let mut other = augment_settings(split.path().join("a4"), Some(settings.model.clone()));
    other.classes = Some(vec![0, 2]);
    let text = message(Augmenter::new(other).run(&Silent).unwrap_err());
    assert!(text.contains("no model of classes [2]"), "{text}");
    let unfinished = split.path().join("unfinished.amz");
    rmld::session::save_model(&unfinished, &partial).unwrap();
    let text = message(
        Augmenter::new(augment_settings(split.path().join("a5"), Some(unfinished)))
            .run(&Silent)
            .unwrap_err(),
    );
    assert!(text.contains("unfinished training"), "{text}");
}

/// A small teacher on the CPU: the paper preset on 100 embedded digits of classes 3 and 5.
const SMALL_TEACHER: [&str; 12] = [
    "--backend",
    "cpu",
    "--preset",
    "paper",
    "--classes",
    "3,5",
    "--limit",
    "100",
    "--lasso-iterations",
    "20",
    "--samples",
    "2",
];

#[test]
fn cli_trains_and_augments_with_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.amz");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_rmld"))
            .args(args)
            .env("RMLD_CACHE_DIR", dir.path().join("cache"))
            .output()
            .unwrap()
    };
    let common = SMALL_TEACHER;
    // Bad training settings name their options, before any work.
    for (flag, needle) in [
        ("--fit-steps", "--fit-steps"),
        ("--pairs", "--pairs"),
        ("--hidden", "--hidden"),
    ] {
        let out = run(&[
            "amortize",
            "train",
            "--out",
            model.to_str().unwrap(),
            flag,
            "0",
        ]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{needle} not in {err}");
    }
    // A training runs its teacher whole: shards and warm-ups are refused by name, before the
    // teacher runs (it wrote a shard's part, then failed on a missing file).
    for (flags, needle) in [
        (&["--shard", "1/3"][..], "--shard"),
        (&["--warm-up-only"][..], "--warm-up-only"),
        (&["--warm-up", "w"][..], "--warm-up"),
    ] {
        let mut args = vec!["amortize", "train", "--out", model.to_str().unwrap()];
        args.extend_from_slice(&common);
        args.extend_from_slice(flags);
        let out = run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {err}");
        assert!(
            err.contains(needle) && err.contains("leave it out"),
            "{err}"
        );
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "{flags:?} left {left:?}");
    }
    let mut train = vec!["amortize", "train", "--out", model.to_str().unwrap()];
    train.extend_from_slice(&common);
    train.extend_from_slice(&["--ratio", "1:1", "--fit-steps", "10", "--hidden", "4"]);
    let out = run(&train);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let aug = dir.path().join("aug");
    let mut augment = vec!["augment", "--out", aug.to_str().unwrap()];
    augment.extend_from_slice(&common);
    augment.extend_from_slice(&["--sampler", "amortized", "--model", model.to_str().unwrap()]);
    let out = run(&augment);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("amortized sampler"));
    // The amortized sampler runs no chains and no shards: a warm-up is refused as such.
    let never = dir.path().join("never");
    for flags in [&["--warm-up-only"][..], &["--shard", "1/2"][..]] {
        let mut refused = vec!["augment", "--out", never.to_str().unwrap()];
        refused.extend_from_slice(&common);
        refused.extend_from_slice(&["--sampler", "amortized", "--model"]);
        refused.push(model.to_str().unwrap());
        refused.extend_from_slice(flags);
        let out = run(&refused);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {err}");
        assert!(
            err.contains(flags[0]) && !err.contains("its shards run"),
            "{err}"
        );
        assert!(!never.exists(), "{flags:?} wrote {}", never.display());
    }
    // At another pixel scale than its teacher's (the paper's 255), the model's codes would make
    // images 255 times too bright: refused, naming the scale to give.
    let scaled = dir.path().join("scaled");
    let mut other_scale = vec!["augment", "--out", scaled.to_str().unwrap()];
    other_scale.extend_from_slice(&common);
    other_scale.extend_from_slice(&["--sampler", "amortized", "--model"]);
    other_scale.extend_from_slice(&[model.to_str().unwrap(), "--pixel-max", "1"]);
    let out = run(&other_scale);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for needle in [
        "--pixel-max",
        "scaled to 255",
        "give --pixel-max 255",
        "m.amz",
    ] {
        assert!(err.contains(needle), "{needle:?} not in {err}");
    }
    assert!(
        !scaled.exists(),
        "the refused run wrote {}",
        scaled.display()
    );
    // A damaged model: exit status 2 and the file named.
    let bytes = std::fs::read(&model).unwrap();
    std::fs::write(&model, &bytes[..bytes.len() / 3]).unwrap();
    augment[2] = "unused";
    let aug2 = dir.path().join("aug2");
    augment[2] = aug2.to_str().unwrap();
    let out = run(&augment);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("m.amz") && err.contains("truncated"), "{err}");
    // --sampler amortized without --model names the option.
    let aug3 = dir.path().join("aug3");
    augment.truncate(augment.len() - 2);
    augment[2] = aug3.to_str().unwrap();
    let out = run(&augment);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--model"));
}

#[test]
fn a_full_disk_leaves_the_earlier_model_and_its_report_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.amz");
    let report = dir.path().join("m.amz.json");
    // `fit_steps` 10, then 11 for the runs that fail: another model, which must not replace
    // the earlier one.
    let train = |budget: Option<u64>, fit_steps: &str| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_rmld"));
        command.args(["amortize", "train", "--force", "--out"]);
        command.arg(&model).args(SMALL_TEACHER).args([
            "--ratio",
            "1:1",
            "--fit-steps",
            fit_steps,
            "--hidden",
            "4",
            "--no-code-cache",
        ]);
        if let Some(budget) = budget {
            command.env("RMLD_TEST_FULL_DISK_AFTER", budget.to_string());
        }
        command.output().unwrap()
    };
    // The first run makes the teacher; the second reuses it and writes only the report and
    // the model, so a disk that fills at any budget under their size stops a third run while
    // it writes one of the two (the report's seconds may take a few digits more or less).
    for _ in 0..2 {
        let run = train(None, "10");
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
    }
    let earlier = (
        std::fs::read(&model).unwrap(),
        std::fs::read(&report).unwrap(),
    );
    let written = (earlier.0.len() + earlier.1.len()) as u64;
    for budget in (0..8).map(|k| k * written / 8).chain([written - 64]) {
        let run = train(Some(budget), "11");
        let message = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "budget {budget}: {message}");
        assert!(
            message.contains("no space left"),
            "budget {budget}: {message}"
        );
        assert!(
            std::fs::read(&model).unwrap() == earlier.0
                && std::fs::read(&report).unwrap() == earlier.1,
            "budget {budget}: the earlier model or its report changed"
        );
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["m.amz", "m.amz.json", "m.amz.teacher"],
            "budget {budget}: files left beside the model"
        );
    }
    let last = train(None, "11");
    assert!(
        last.status.success(),
        "{}",
        String::from_utf8_lossy(&last.stderr)
    );
    assert!(
        std::fs::read(&model).unwrap() != earlier.0,
        "11 steps fit another model"
    );
}

/// `rmld amortize train` of [`SMALL_TEACHER`] (10 steps) into `model`, with the disk full
/// after `budget` bytes when given, and `extra` arguments.
fn small_training(model: &Path, budget: Option<u64>, extra: &[&str]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rmld"));
    command.args(["amortize", "train", "--out"]);
    command.arg(model).args(SMALL_TEACHER).args([
        "--ratio",
        "1:1",
        "--fit-steps",
        "10",
        "--hidden",
        "4",
        "--no-code-cache",
    ]);
    command.args(extra);
    if let Some(budget) = budget {
        command.env("RMLD_TEST_FULL_DISK_AFTER", budget.to_string());
    }
    command.output().unwrap()
}

/// Asserts that `run` exited 0.
fn succeeded(run: &std::process::Output, what: &str) {
    assert!(
        run.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// The names of the files in `dir` (not the run lock), sorted.
fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != ".rmld.lock")
        .collect();
    names.sort();
    names
}

#[test]
fn a_full_disk_while_the_teacher_is_written_and_stamped_reruns_to_the_same_model() {
    // The teacher's stamp (teacher.json) was written after its files were published: a full
    // disk there left a stampless teacher, which every rerun refused as another's.
    let dir = tempfile::tempdir().unwrap();
    let reference = dir.path().join("whole/m.amz");
    succeeded(&small_training(&reference, None, &[]), "the whole run");
    let model = std::fs::read(&reference).unwrap();
    let tdir = dir.path().join("whole/m.amz.teacher");
    let teacher_bytes: u64 = file_names(&tdir)
        .iter()
        .map(|name| tdir.join(name).metadata().unwrap().len())
        .sum();
    let stamp = tdir.join("teacher.json").metadata().unwrap().len();
    // Budgets around the end of the teacher's writes, in fifths of the stamp's size.
    let mut at_stamp = 0;
    for k in 0..25 {
        let budget = teacher_bytes - 3 * stamp + k * stamp / 5;
        let out = dir.path().join(format!("b{k}/m.amz"));
        let failed = small_training(&out, Some(budget), &[]);
        if !failed.status.success() {
            let message = String::from_utf8_lossy(&failed.stderr);
            assert_eq!(failed.status.code(), Some(2), "budget {budget}: {message}");
            assert!(
                message.contains("no space left"),
                "budget {budget}: {message}"
            );
            at_stamp += usize::from(message.contains("teacher.json"));
        }
        succeeded(
            &small_training(&out, None, &[]),
            &format!("the rerun after budget {budget}"),
        );
        assert!(
            std::fs::read(&out).unwrap() == model,
            "budget {budget}: the rerun wrote another model"
        );
    }
    assert!(at_stamp > 0, "no budget filled the disk at the stamp");
}

#[test]
fn a_training_killed_while_it_publishes_its_teacher_reruns_to_the_same_model() {
    // A kill -9 during the teacher's publication leaves its journal, the files it moved and
    // the staging folder with the rest: a rerun finishes the publication and reuses the teacher.
    let dir = tempfile::tempdir().unwrap();
    let reference = dir.path().join("whole/m.amz");
    succeeded(&small_training(&reference, None, &[]), "the whole run");
    let model = std::fs::read(&reference).unwrap();
    let whole = dir.path().join("whole/m.amz.teacher");
    // Published in name order, report.json last.
    let mut files = file_names(&whole);
    files.sort_by_key(|name| (name == "report.json", name.clone()));
    for moved in 0..files.len() {
        // A teacher of this model (its stamp names its folder), taken back into its staging
        // folder as far as the kill left it.
        let out = dir.path().join(format!("k{moved}/m.amz"));
        succeeded(&small_training(&out, None, &[]), "the teacher's run");
        std::fs::remove_file(&out).unwrap();
        std::fs::remove_file(dir.path().join(format!("k{moved}/m.amz.json"))).unwrap();
        let tdir = dir.path().join(format!("k{moved}/m.amz.teacher"));
        let staging = tdir.join(".rmld-staging-0123456789abcdef");
        std::fs::create_dir(&staging).unwrap();
        for name in &files[moved..] {
            std::fs::rename(tdir.join(name), staging.join(name)).unwrap();
        }
        let journal = serde_json::json!({
            "staging": ".rmld-staging-0123456789abcdef",
            "files": files,
            "remove": [],
        });
        std::fs::write(tdir.join(".rmld-publish.json"), journal.to_string()).unwrap();
        let rerun = small_training(&out, None, &[]);
        succeeded(&rerun, &format!("the rerun after {moved} files moved"));
        assert!(
            String::from_utf8_lossy(&rerun.stdout).contains("teacher reused"),
            "{moved} files moved: the teacher ran again"
        );
        assert!(
            std::fs::read(&out).unwrap() == model,
            "{moved} files moved: the rerun wrote another model"
        );
        assert_eq!(file_names(&tdir), file_names(&whole), "{moved} files moved");
    }
}

#[test]
fn an_augmentation_written_over_a_teacher_is_not_taken_for_it() {
    // The teacher's stamp vouches for the teacher's files. `rmld augment --force` into the
    // teacher's folder replaced those files and left the stamp, so the next training of the
    // same settings reused the other augmentation's codes as its teacher, and fitted them.
    let dir = tempfile::tempdir().unwrap();
    let reference = dir.path().join("whole/m.amz");
    succeeded(&small_training(&reference, None, &[]), "the whole run");
    let model = std::fs::read(&reference).unwrap();
    let out = dir.path().join("other/m.amz");
    succeeded(&small_training(&out, None, &[]), "the first training");
    let tdir = dir.path().join("other/m.amz.teacher");
    let mut other = Command::new(env!("CARGO_BIN_EXE_rmld"));
    other.args([
        "augment",
        "--force",
        "--no-code-cache",
        "--seed",
        "9",
        "--out",
    ]);
    other
        .arg(&tdir)
        .args(SMALL_TEACHER)
        .args(["--ratio", "1:1"]);
    succeeded(
        &other.output().unwrap(),
        "the augmentation over the teacher",
    );
    assert!(
        !tdir.join("teacher.json").exists(),
        "the augmentation left the teacher's stamp beside its own files"
    );
    // The training runs its teacher again and fits the model an untouched training fits.
    let retrained = |after: &str| {
        let rerun = small_training(&out, None, &["--force"]);
        succeeded(&rerun, &format!("the training after {after}"));
        assert!(
            !String::from_utf8_lossy(&rerun.stdout).contains("teacher reused"),
            "the training after {after} reused its files as its teacher"
        );
        assert!(
            std::fs::read(&out).unwrap() == model,
            "the training after {after} fitted another model than its teacher's"
        );
    };
    retrained("the augmentation");
    // A sample run over the teacher replaces its report and dictionary, not its codes or stamp.
    let mut sample = Command::new(env!("CARGO_BIN_EXE_rmld"));
    sample.args([
        "sample",
        "--force",
        "--backend",
        "cpu",
        "--chains",
        "2",
        "--samples",
        "2",
    ]);
    succeeded(
        &sample.arg("--out").arg(&tdir).output().unwrap(),
        "the sample run over the teacher",
    );
    assert!(tdir.join("teacher.json").exists());
    retrained("the sample run");
}

#[test]
fn a_model_moved_with_its_teacher_reuses_the_teacher() {
    // The stamp recorded the teacher's folder, so a model and its MODEL.teacher moved together
    // (or trained from another working directory) ran the teacher again.
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first/m.amz");
    succeeded(&small_training(&first, None, &[]), "the first training");
    let model = std::fs::read(&first).unwrap();
    std::fs::rename(dir.path().join("first"), dir.path().join("moved")).unwrap();
    let moved = dir.path().join("moved/m.amz");
    let again = small_training(&moved, None, &["--force"]);
    succeeded(&again, "the training after the move");
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("teacher reused"),
        "the moved teacher ran again: {}",
        String::from_utf8_lossy(&again.stdout)
    );
    assert!(
        std::fs::read(&moved).unwrap() == model,
        "another model after the move"
    );
}

/// Every file under `dir` (the run lock too) with its bytes, sorted by path.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                found.push((path, bytes));
            }
        }
    }
    found.sort();
    found
}

#[test]
fn a_second_training_into_a_model_being_trained_is_refused_and_changes_nothing() {
    // Two trainings into one model, its teacher reused, both wrote the model (the later one
    // replacing the other's without `force`) and shared its checkpoint.
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("m.amz");
    succeeded(&small_training(&model, None, &[]), "the teacher's run");
    std::fs::remove_file(&model).unwrap();
    std::fs::remove_file(dir.path().join("m.amz.json")).unwrap();
    // A training holds the model's lock, as a running one does.
    let lock_path = dir.path().join("m.amz.lock");
    let lock = std::fs::File::create(&lock_path).unwrap();
    lock.lock().unwrap();
    let before = tree(dir.path());
    let refused = small_training(&model, None, &[]);
    let message = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{message}");
    assert!(
        message.contains("another rmld training is writing")
            && message.contains(&*model.to_string_lossy())
            && message.contains("m.amz.lock")
            && message.contains("--out"),
        "{message}"
    );
    assert!(
        tree(dir.path()) == before,
        "the refused training changed files"
    );
    // A lock file whose holder is gone (killed) holds no one off; a finished training removes it.
    drop(lock);
    succeeded(
        &small_training(&model, None, &[]),
        "the training after the lock",
    );
    assert!(model.is_file());
    assert!(
        !lock_path.exists(),
        "the finished training left its lock file"
    );
    // A training into new folders that fails once it holds its lock (a missing data file)
    // leaves neither the lock nor the folders behind.
    let new = dir.path().join("new/sub/m.amz");
    let missing = dir.path().join("missing.npy");
    let failed = small_training(&new, None, &["--data", missing.to_str().unwrap()]);
    let message = String::from_utf8_lossy(&failed.stderr);
    assert_eq!(failed.status.code(), Some(2), "{message}");
    assert!(message.contains("missing.npy"), "{message}");
    assert!(!dir.path().join("new").exists(), "{message}");
}

#[test]
fn gemm_inference_matches_the_taped_forward_pass() {
    use rand::SeedableRng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let net = rmld::amortize::Mlp::new(&[37, 19, 74], &mut rng);
    let batch = 13;
    let x: Vec<f32> = (0..batch * 37)
        .map(|i| ((i * 31 % 17) as f32 - 8.0) / 4.0)
        .collect();
    let fast = net.infer(&x, batch);
    let tape = net.forward(&x, batch);
    let slow = tape.output();
    assert_eq!(fast.len(), slow.len());
    let bad: Vec<String> = fast
        .iter()
        .zip(slow)
        .enumerate()
        .filter(|(_, (a, b))| (*a - *b).abs() > 1e-4 * (1.0 + b.abs()))
        .map(|(i, (a, b))| format!("[{i}] gemm {a} vs forward {b}"))
        .collect();
    assert!(
        bad.is_empty(),
        "{} mismatches: {:?}",
        bad.len(),
        &bad[..bad.len().min(10)]
    );
}

/// `rmld amortize train --backend gpu` trains the network on the GPU (lavapipe in CI): the
/// report names the device, the model file is whole, and augment generates with it.
#[test]
fn training_on_the_gpu_writes_a_usable_model() {
    let Some(_) = gpu_common::context("amortize train --backend gpu") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut settings = training(dir.path());
    settings.teacher.problem.backend = BackendChoice::Gpu;
    let outcome = AmortizeTrainer::new(settings.clone()).run(&Silent).unwrap();
    assert!(!outcome.interrupted);
    let device = outcome.report["fit_device"].to_string();
    assert!(device != "\"CPU\"" && device != "null", "{device}");
    let model = rmld::session::load_model(&settings.model).unwrap();
    assert!(model.complete());
    assert!(model.classes.iter().all(|c| c.last_loss.is_finite()));
    let out = dir.path().join("aug");
    let outcome = Augmenter::new(augment_settings(out.clone(), Some(settings.model)))
        .run(&Silent)
        .unwrap();
    assert!(outcome.report["generated_count"].as_u64().unwrap() >= 2);
}
