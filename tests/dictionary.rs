//! Parametric dictionary learning: resume bit for bit, the output is a dictionary `sample` reads, bad settings are named.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rmld::io;
use rmld::model::AtomFamily;
use rmld::session::{
    learn_signals, load_problem, synthetic_eda, DictionaryLearner, DictionarySettings, FamilyKind,
    Observer, ProblemSettings, Silent, DICTIONARY_CHECKPOINT,
};

/// Asks to stop once `after` signals are done.
struct StopAfter {
    after: u64,
    done: AtomicU64,
}

impl Observer for StopAfter {
    fn phase_advance(&self, position: u64) {
        self.done.store(position, Ordering::SeqCst);
    }
    fn stop_requested(&self) -> bool {
        self.done.load(Ordering::SeqCst) >= self.after
    }
}

/// Records the notices' words.
#[derive(Default)]
struct Notices(std::sync::Mutex<Vec<String>>);

impl Observer for Notices {
    fn notice(&self, notice: &rmld::session::Notice) {
        self.0.lock().unwrap().push(notice.to_string());
    }
}

fn settings(out: &Path) -> DictionarySettings {
    DictionarySettings {
        out: out.to_path_buf(),
        iterations: 60,
        burn_in: 20,
        centers: 4,
        chunk: 2,
        seed: 9,
        ..Default::default()
    }
}

#[test]
fn an_interrupted_run_resumes_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let family = AtomFamily::Eda { len: 160 };
    let (signals, counts) = synthetic_eda(6, 160, 3);
    let atoms: Vec<usize> = counts.iter().map(|r| r + 1).collect();

    // Every run below learns the same signals into a folder of its own, with `observer`.
    let learn = |dir: &Path, observer: &dyn Observer| {
        learn_signals(&family, &signals, &atoms, &settings(dir), dir, observer)
    };
    let whole_dir = dir.path().join("whole");
    std::fs::create_dir(&whole_dir).unwrap();
    let whole = learn(&whole_dir, &Silent).unwrap();
    assert!(!whole.interrupted);
    assert_eq!(whole.results.len(), 6);
    // The finished run's checkpoint stays until its outputs are published (the runner removes
    // it): run again, it resumes with every signal done and gives the same results.
    assert!(whole_dir.join(DICTIONARY_CHECKPOINT).exists());
    assert_eq!(learn(&whole_dir, &Silent).unwrap().results, whole.results);

    let split_dir = dir.path().join("split");
    std::fs::create_dir(&split_dir).unwrap();
    let stop = StopAfter {
        after: 2,
        done: AtomicU64::new(0),
    };
    let first = learn(&split_dir, &stop).unwrap();
    assert!(first.interrupted);
    assert_eq!(first.results.len(), 2);
    assert!(split_dir.join(DICTIONARY_CHECKPOINT).exists());
    let notices = Notices::default();
    let rest = learn(&split_dir, &notices).unwrap();
    assert!(!rest.interrupted);
    // Said in the learning's words, not a sampling run's ("outer iteration").
    let said = notices.0.lock().unwrap().join("\n");
    assert!(said.contains("2 of 6 signals already learned"), "{said}");
    for (i, (a, b)) in whole.results.iter().zip(&rest.results).enumerate() {
        assert_eq!(
            a, b,
            "signal {i}: the resumed result differs from the uninterrupted one"
        );
    }

    // A checkpoint of other settings is refused, naming the file.
    let other_dir = dir.path().join("other");
    std::fs::create_dir(&other_dir).unwrap();
    let stop = StopAfter {
        after: 2,
        done: AtomicU64::new(0),
    };
    learn(&other_dir, &stop).unwrap();
    let mut changed = settings(&other_dir);
    changed.seed = 10;
    let e = learn_signals(&family, &signals, &atoms, &changed, &other_dir, &Silent)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(DICTIONARY_CHECKPOINT) && e.contains("different run"),
        "{e}"
    );
}

#[test]
fn a_damaged_or_old_checkpoint_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let family = AtomFamily::Eda { len: 160 };
    let (signals, counts) = synthetic_eda(4, 160, 3);
    let atoms: Vec<usize> = counts.iter().map(|r| r + 1).collect();
    let learn = |observer: &dyn Observer| {
        learn_signals(
            &family,
            &signals,
            &atoms,
            &settings(dir.path()),
            dir.path(),
            observer,
        )
    };
    let stop = StopAfter {
        after: 2,
        done: AtomicU64::new(0),
    };
    assert!(learn(&stop).unwrap().interrupted);
    let path = dir.path().join(DICTIONARY_CHECKPOINT);
    let intact = std::fs::read(&path).unwrap();
    let refused = |bytes: &[u8], expected: &str| {
        std::fs::write(&path, bytes).unwrap();
        let e = learn(&Silent).unwrap_err();
        let message = e.to_string();
        assert!(e.is_user_error(), "{message}");
        assert!(
            message.contains(DICTIONARY_CHECKPOINT) && message.contains(expected),
            "{message}"
        );
    };
    // One flipped bit in the results (past the magic, the version and the fingerprint) decoded
    // into other atoms before the checksum.
    for at in [intact.len() / 2, intact.len() - 20] {
        let mut damaged = intact.clone();
        damaged[at] ^= 0x40;
        refused(&damaged, "the checksum does not match");
    }
    refused(&intact[..intact.len() - 1], "the checksum does not match");
    // The previous format: the bare payload, no magic, no checksum.
    refused(
        &intact[12..intact.len() - 8],
        "before checkpoints were checksummed",
    );
    // The intact one still resumes.
    std::fs::write(&path, &intact).unwrap();
    assert_eq!(learn(&Silent).unwrap().results.len(), 4);
}

#[test]
fn the_learned_dictionary_is_one_sample_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (signals, _) = synthetic_eda(5, 160, 4);
    let flat: Vec<f32> = signals.iter().flatten().map(|&v| v as f32).collect();
    let data = dir.path().join("eda.npy");
    io::write_npy_f32(&data, &[5, 160], &flat).unwrap();
    let out = dir.path().join("learned");
    let mut s = settings(&out);
    s.data = Some(data.clone());
    s.atoms_per_signal = 3;
    let outcome = DictionaryLearner::new(s).run(&Silent).unwrap();
    assert!(!outcome.interrupted);
    for file in ["dictionary.npy", "atoms.png", "report.json"] {
        assert!(out.join(file).exists(), "{file} missing");
    }
    let (shape, a) = io::read_npy_matrix_f32(&out.join("dictionary.npy")).unwrap();
    assert_eq!(shape[0], 160);
    // Unit-norm columns.
    for j in 0..shape[1] {
        let norm: f32 = (0..160)
            .map(|i| a[i * shape[1] + j].powi(2))
            .sum::<f32>()
            .sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "column {j} has norm {norm}");
    }
    let problem = load_problem(&ProblemSettings {
        data: Some(data),
        dictionary: Some(out.join("dictionary.npy")),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(problem.target.dictionary.p, shape[1]);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert!(report["mh_acceptance"].as_f64().unwrap() > 0.0, "{report}");
    assert!(report["geweke_pass"]["theta.t0"].is_number(), "{report}");
}

/// A change to the settings.
type Change = Box<dyn Fn(&mut DictionarySettings)>;

#[test]
fn bad_settings_are_named_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("never");
    let cases: Vec<(Change, &str)> = vec![
        (Box::new(|s| s.atoms_per_signal = 0), "atoms_per_signal"),
        (Box::new(|s| s.burn_in = s.iterations), "burn_in"),
        // What is required, not the count of iterations twice.
        (Box::new(|s| s.burn_in = 45), "at most 40, got 45"),
        (Box::new(|s| s.centers = 0), "centers"),
        (Box::new(|s| s.hyper.alpha = -1.0), "alpha"),
        (
            Box::new(|s| s.hyper.proposal_scale = Some(f64::NAN)),
            "proposal_scale",
        ),
        (Box::new(|s| s.hyper.wishart_dof = Some(1.5)), "wishart_dof"),
        // The embedded optdigits are 8 × 8 images: fine for Gabor, and 64 samples for EDA;
        // a non-square dimension cannot be Gabor.
        (
            Box::new(|s| {
                s.family = FamilyKind::Gabor;
                s.data = Some(s.out.with_file_name("eda.npy"));
            }),
            "square",
        ),
    ];
    io::write_npy_f32(&dir.path().join("eda.npy"), &[2, 160], &[0.5; 320]).unwrap();
    for (change, word) in cases {
        let mut s = settings(&out);
        change(&mut s);
        let e = DictionaryLearner::new(s)
            .run(&Silent)
            .unwrap_err()
            .to_string();
        assert!(e.contains(word), "expected {word:?} in: {e}");
        assert!(!out.join("dictionary.npy").exists());
    }
}

#[test]
fn an_interrupted_learn_writes_no_dictionary() {
    let dir = tempfile::tempdir().unwrap();
    let (signals, _) = synthetic_eda(4, 160, 5);
    let flat: Vec<f32> = signals.iter().flatten().map(|&v| v as f32).collect();
    let data = dir.path().join("eda.npy");
    io::write_npy_f32(&data, &[4, 160], &flat).unwrap();
    let out = dir.path().join("cut");
    let mut s = settings(&out);
    s.data = Some(data);
    let stop = StopAfter {
        after: 2,
        done: AtomicU64::new(0),
    };
    let outcome = DictionaryLearner::new(s.clone()).run(&stop).unwrap();
    assert!(outcome.interrupted);
    assert!(!out.join("dictionary.npy").exists());
    assert!(out.join(DICTIONARY_CHECKPOINT).exists());
    let done = DictionaryLearner::new(s.clone()).run(&Silent).unwrap();
    assert!(!done.interrupted && out.join("dictionary.npy").exists());
    assert!(
        !out.join(DICTIONARY_CHECKPOINT).exists(),
        "removed once published"
    );

    // A second run into the folder would replace the first one's files: refused, naming one,
    // unless it is asked to (`force`), and then every file is the new run's.
    let before = std::fs::read(out.join("dictionary.npy")).unwrap();
    let mut other = s.clone();
    other.seed += 1;
    let e = DictionaryLearner::new(other.clone())
        .run(&Silent)
        .unwrap_err()
        .to_string();
    assert!(e.contains("already exists") && e.contains("force"), "{e}");
    assert_eq!(std::fs::read(out.join("dictionary.npy")).unwrap(), before);
    other.force = true;
    DictionaryLearner::new(other).run(&Silent).unwrap();
    assert_ne!(std::fs::read(out.join("dictionary.npy")).unwrap(), before);
}
