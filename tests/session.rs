//! The session API from Rust: runs without the command line, observers see phases and notices
//! and can stop a run, a stopped run resumes to the uninterrupted result, settings errors name
//! the setting, and the presets hold the documented values.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use rmld::io;
use rmld::model::TargetKind;
use rmld::orchestrator::KeepPolicy;
use rmld::session::{
    AugmentMethod, AugmentSettings, Augmenter, BackendChoice, EncodeSettings, Encoder, Notice,
    Observer, Phase, Preset, SampleSettings, Sampler, Silent, CHECKPOINT,
};
use rmld::{Error, Method};

fn small_sample(out: &std::path::Path) -> SampleSettings {
    let mut s = SampleSettings::default();
    s.problem.backend = BackendChoice::Cpu;
    s.problem.out = out.to_path_buf();
    s.chains = 4;
    s.samples = 6;
    s.dynamics.steps = 3;
    s.dynamics.lasso_iterations = 20;
    s
}

/// Records phases and notices; asks to stop once `stop_after` outer iterations are done.
#[derive(Default)]
struct Recorder {
    phases: Mutex<Vec<&'static str>>,
    notices: Mutex<Vec<String>>,
    position: AtomicU32,
    stop_after: Option<u32>,
}

impl Observer for Recorder {
    fn phase_start(&self, phase: &Phase) {
        self.phases.lock().unwrap().push(phase.name);
    }
    fn phase_advance(&self, position: u64) {
        self.position.store(position as u32, Ordering::SeqCst);
    }
    fn notice(&self, notice: &Notice) {
        self.notices.lock().unwrap().push(notice.to_string());
    }
    fn stop_requested(&self) -> bool {
        self.stop_after
            .is_some_and(|k| self.position.load(Ordering::SeqCst) >= k)
    }
}

#[test]
fn a_sample_run_writes_its_outputs_and_reports_its_phases() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let recorder = Recorder::default();
    let outcome = Sampler::new(small_sample(&out)).run(&recorder).unwrap();
    assert!(!outcome.interrupted);
    assert_eq!(outcome.report["completed_iterations"], 6);
    assert_eq!(outcome.summary.len(), 2);
    assert!(outcome.summary[0].starts_with("rmld sample: 4 chains × 6 outer iterations"));
    assert_eq!(*recorder.phases.lock().unwrap(), vec!["sampling"]);
    assert_eq!(recorder.position.load(Ordering::SeqCst), 6);
    assert_eq!(
        outcome.report["outputs"]["codes.npy"],
        serde_json::json!([6, 4, 256])
    );
    assert!(out.join("codes.npy").exists() && out.join("images.npy").exists());
    assert!(out.join("report.json").exists() && out.join("samples.png").exists());
}

#[test]
fn a_stopped_run_resumes_to_the_uninterrupted_samples() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole");
    let split = dir.path().join("split");
    let uninterrupted = Sampler::new(small_sample(&whole)).run(&Silent).unwrap();

    let stopper = Recorder {
        stop_after: Some(2),
        ..Default::default()
    };
    let stopped = Sampler::new(small_sample(&split)).run(&stopper).unwrap();
    assert!(stopped.interrupted);
    assert!(split.join(CHECKPOINT).exists());
    let notices = stopper.notices.lock().unwrap().clone();
    assert!(
        notices
            .iter()
            .any(|n| n.contains("interrupted after outer iteration 2 of 6")),
        "{notices:?}"
    );

    let recorder = Recorder::default();
    let resumed = Sampler::resume(&split, &recorder).unwrap();
    assert!(!resumed.interrupted);
    assert!(recorder.notices.lock().unwrap()[0].contains("from outer iteration 2 of 6"));
    // The report judges the whole run, not only the draws after the checkpoint.
    assert_eq!(
        resumed.report["degenerate"],
        uninterrupted.report["degenerate"]
    );
    let stats = rmld::session::SAMPLE_STATS_FILES
        .iter()
        .map(|f| format!("{}/{f}", rmld::session::SAMPLE_STATS_DIR));
    for name in ["codes.npy".to_string(), "images.npy".to_string()]
        .into_iter()
        .chain(stats)
    {
        let name = name.as_str();
        let a = std::fs::read(whole.join(name)).unwrap();
        let b = std::fs::read(split.join(name)).unwrap();
        assert!(a == b, "{name} differs after resume");
    }
    // Finished, the run keeps no earlier state of itself to resume (as the uninterrupted run),
    // and a second resume touches nothing.
    assert!(!split.join(CHECKPOINT).exists());
    let codes = std::fs::read(split.join("codes.npy")).unwrap();
    assert!(Sampler::resume(&split, &Silent).is_err());
    assert!(std::fs::read(split.join("codes.npy")).unwrap() == codes);
}

/// MALA adapting its step size over a burn-in of 4 of 6 iterations, stopped at 2 (mid-warm-up) and
/// resumed: the samples and the reported adaptation equal the uninterrupted run's.
#[test]
fn an_adapting_run_stopped_mid_warmup_resumes_to_the_uninterrupted_samples() {
    let dir = tempfile::tempdir().unwrap();
    let adapting = |out: &std::path::Path| {
        let mut s = small_sample(out);
        s.method = rmld::Method::Mala;
        s.burn_in = 4;
        s
    };
    let (whole, split) = (dir.path().join("whole"), dir.path().join("split"));
    let full = Sampler::new(adapting(&whole)).run(&Silent).unwrap();
    let stopper = Recorder {
        stop_after: Some(2),
        ..Default::default()
    };
    assert!(
        Sampler::new(adapting(&split))
            .run(&stopper)
            .unwrap()
            .interrupted
    );
    let resumed = Sampler::resume(&split, &Silent).unwrap();
    let a = &full.report["adaptation"];
    assert_eq!(a["adapted_iterations"], 4, "{a}");
    assert_ne!(a["step_size"], a["initial_step_size"], "{a}");
    assert_eq!(resumed.report["adaptation"], *a);
    for name in ["codes.npy", "images.npy"] {
        let a = std::fs::read(whole.join(name)).unwrap();
        let b = std::fs::read(split.join(name)).unwrap();
        assert!(a == b, "{name} differs after resume");
    }
    // --no-adapt keeps eta: no adaptation in the report.
    let mut plain = adapting(&dir.path().join("plain"));
    plain.no_adapt = true;
    let outcome = Sampler::new(plain).run(&Silent).unwrap();
    assert!(outcome.report.get("adaptation").is_none());
}

#[test]
fn settings_errors_name_the_setting_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bad");
    type Spoil = Box<dyn Fn(&mut SampleSettings)>;
    let cases: Vec<(&str, Spoil)> = vec![
        ("eta", Box::new(|s| s.dynamics.eta = 0.0)),
        ("batch", Box::new(|s| s.dynamics.batch = 0)),
        ("chains", Box::new(|s| s.chains = 0)),
        (
            "lasso_iterations",
            Box::new(|s| s.dynamics.lasso_iterations = 0),
        ),
        ("burn_in", Box::new(|s| s.burn_in = 6)),
        ("pixel_max", Box::new(|s| s.problem.pixel_max = -1.0)),
        ("lambda", Box::new(|s| s.problem.lambda = f32::NAN)),
        ("sigma2", Box::new(|s| s.problem.sigma2 = 0.0)),
    ];
    for (name, spoil) in cases {
        let mut settings = small_sample(&out);
        spoil(&mut settings);
        assert!(matches!(settings.validate(), Err(Error::Usage { field, .. }) if field == name));
        match Sampler::new(settings).run(&Silent) {
            Err(Error::Usage { field, .. }) => assert_eq!(field, name),
            other => panic!("{name}: expected a usage error, got {other:?}"),
        }
        assert!(!out.exists(), "{name}: wrote into the output folder");
    }
    let mut keep_last = small_sample(&out);
    keep_last.keep = KeepPolicy::Last;
    keep_last.burn_in = 6;
    keep_last.validate().unwrap();

    let mut augment = AugmentSettings::paper();
    augment.limit = Some(0);
    assert!(matches!(
        augment.validate(),
        Err(Error::Usage { field: "limit", .. })
    ));
    let encode = EncodeSettings {
        lasso_iterations: 0,
        ..Default::default()
    };
    assert!(matches!(
        encode.validate(),
        Err(Error::Usage {
            field: "lasso_iterations",
            ..
        })
    ));
}

#[test]
fn presets_hold_the_documented_values() {
    let quality = AugmentSettings::quality();
    assert_eq!(quality.preset, Some(Preset::Quality));
    assert_eq!(quality.method, AugmentMethod::Deform);
    assert_eq!(quality.problem.target, TargetKind::Tangent);
    assert_eq!(
        (
            quality.problem.pixel_max,
            quality.problem.lambda,
            quality.problem.sigma2
        ),
        (1.0, 0.05, 0.01)
    );
    assert_eq!(
        (quality.problem.tangent_k, quality.problem.tangent_scale),
        (16, 3.0)
    );
    assert_eq!(
        (quality.dynamics.eta, quality.dynamics.leapfrog_steps),
        (0.007, 60)
    );
    assert_eq!((quality.burn_in, quality.reencode), (20, true));
    assert_eq!(AugmentSettings::default(), quality);
    let paper = AugmentSettings::paper();
    assert_eq!(paper.method, AugmentMethod::Chains(Method::Rmld));
    assert_eq!(paper.problem, rmld::session::ProblemSettings::default());
    assert_eq!((paper.ratio, paper.samples, paper.burn_in), (6.0, 4, 0));
    // Serialised sample settings are a checkpoint's configuration: they read back unchanged.
    let sample = SampleSettings::default();
    let json = serde_json::to_value(&sample).unwrap();
    assert_eq!(json["eta"], serde_json::json!(0.01f32));
    let back: SampleSettings = serde_json::from_value(json).unwrap();
    assert_eq!(back, sample);
    let mut stretch = AugmentSettings::quality();
    stretch.rescale = rmld::io::Rescale::Stretch;
    let json = serde_json::to_value(&stretch).unwrap();
    assert_eq!(json["rescale"], "stretch");
    let back: AugmentSettings = serde_json::from_value(json).unwrap();
    assert_eq!(back, stretch);
}

#[test]
fn compression_augments_and_encode_encodes_without_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = AugmentSettings::paper();
    settings.method = AugmentMethod::Compression;
    settings.limit = Some(200);
    settings.classes = Some(vec![1, 2]);
    settings.dynamics.batch = 4;
    settings.dynamics.lasso_iterations = 20;
    settings.no_quality = true;
    settings.problem.backend = BackendChoice::Cpu;
    settings.problem.out = dir.path().join("aug");
    let recorder = Recorder::default();
    let outcome = Augmenter::new(settings).run(&recorder).unwrap();
    assert!(!outcome.interrupted);
    assert!(outcome.summary[0].starts_with("rmld augment (compression)"));
    assert_eq!(*recorder.phases.lock().unwrap(), vec!["encoding"]);
    let labels = io::read_npy_labels(&dir.path().join("aug/labels.npy")).unwrap();
    assert!(labels.iter().all(|&l| l == 1 || l == 2));

    let mut encode = EncodeSettings {
        limit: Some(10),
        lasso_iterations: 20,
        ..Default::default()
    };
    encode.problem.backend = BackendChoice::Cpu;
    encode.problem.out = dir.path().join("enc");
    let outcome = Encoder::new(encode).run(&Silent).unwrap();
    assert_eq!(outcome.report["encoded"], 10);
    assert!(dir.path().join("enc/codes.npy").exists());
}

/// Data given in memory (as the Python package gives its arrays) samples exactly as the same data
/// read from disk: same draws, byte for byte; an array whose shape does not fit its values, or
/// whose labels do not match, is refused naming the problem.
#[test]
fn data_in_memory_samples_as_data_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let embedded = io::Dataset::embedded();
    let from_disk = small_sample(&dir.path().join("disk"));
    let mut in_memory = small_sample(&dir.path().join("memory"));
    let rows = 300;
    let d = embedded.d;
    let io::Pixels::U8(pixels) = &embedded.pixels else {
        panic!("the embedded digits are 8-bit")
    };
    let head = pixels[..rows * d].to_vec();
    let labels = embedded.labels.clone().map(|l| l[..rows].to_vec());
    // The same 300 rows on disk, as an NPY file, and in memory.
    let npy = dir.path().join("digits.npy");
    io::write_npy_u8(&npy, &[rows, 8, 8], &head).unwrap();
    let mut from_disk = from_disk;
    from_disk.problem.data = Some(npy.clone());
    let shape = [rows, 8, 8];
    let dataset =
        io::Dataset::from_array(&npy, &shape, io::Pixels::U8(head.clone()), labels.clone())
            .unwrap();
    in_memory.problem.dataset = Some(std::sync::Arc::new(dataset));
    Sampler::new(from_disk).run(&Silent).unwrap();
    Sampler::new(in_memory).run(&Silent).unwrap();
    for file in ["codes.npy", "images.npy", "dictionary.npy"] {
        let a = std::fs::read(dir.path().join("disk").join(file)).unwrap();
        let b = std::fs::read(dir.path().join("memory").join(file)).unwrap();
        assert!(a == b, "{file} differs between data on disk and in memory");
    }

    let bad_shape =
        io::Dataset::from_array(&npy, &[rows, 8, 7], io::Pixels::U8(head.clone()), None);
    let message = bad_shape.unwrap_err().to_string();
    assert!(message.contains("does not fit"), "{message}");
    let bad_labels =
        io::Dataset::from_array(&npy, &shape, io::Pixels::U8(head), Some(vec![0; rows - 1]));
    let message = bad_labels.unwrap_err().to_string();
    assert!(message.contains("299 labels for 300"), "{message}");
}
