//! `rmld augment` phase by phase (issue 18): every phase's wall time in report.json, an estimate
//! before a long run, and a stop in any phase leaving no output that looks complete (an
//! augmentation cannot be resumed) while a fresh run into the folder gives the same bytes as
//! an uninterrupted one.

mod cli_common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use rmld::io::{self, Dataset, Pixels};
use rmld::session::{
    AugmentSettings, Augmenter, BackendChoice, Notice, Observer, Phase, AUGMENT_PHASES,
};

/// A labelled MNIST-style folder with a test split, from the embedded digits: 300 training
/// and 100 test images of 8 × 8.
fn data_folder(dir: &Path) -> PathBuf {
    let digits = Dataset::load_or_embedded(None).unwrap();
    let Pixels::U8(pixels) = &digits.pixels else {
        panic!("the embedded digits are 8-bit")
    };
    let labels = digits.labels.clone().unwrap();
    let (d, h, w) = (digits.d, digits.height, digits.width);
    // Stretched to 0..255 (the digits are 0..16), as IDX files hold them.
    let bytes: Vec<u8> = pixels
        .iter()
        .map(|&v| (v as u32 * 255 / 16) as u8)
        .collect();
    let folder = dir.join("digits");
    std::fs::create_dir_all(&folder).unwrap();
    for (prefix, rows) in [("train", 0..300), ("t10k", 300..400)] {
        let n = rows.len();
        io::write_idx_images(
            &folder.join(format!("{prefix}-images-idx3-ubyte.gz")),
            n,
            h,
            w,
            &bytes[rows.start * d..rows.end * d],
        )
        .unwrap();
        let l: Vec<u8> = labels[rows].iter().map(|&l| l as u8).collect();
        io::write_idx_labels(&folder.join(format!("{prefix}-labels-idx1-ubyte.gz")), &l).unwrap();
    }
    folder
}

/// Every phase runs: LASSO starts, a burn-in, sampling, re-encoding, the quality check, the
/// originals' and the test split's codes, writing.
fn settings(data: &Path, out: &Path) -> AugmentSettings {
    let mut s = AugmentSettings::paper();
    s.problem.data = Some(data.to_path_buf());
    s.problem.backend = BackendChoice::Cpu;
    s.problem.out = out.to_path_buf();
    s.dynamics.batch = 8;
    s.dynamics.lasso_iterations = 40;
    s.burn_in = 3;
    s.samples = 3;
    s.reencode = true;
    s.encode_test = true;
    s
}

/// Asks to stop once `phase` has begun and advanced `after` times (a phase without progress
/// steps stops as soon as it is polled). Records the phases and notices it saw.
struct StopIn {
    phase: &'static str,
    after: u64,
    state: Mutex<(bool, u64, Vec<String>)>,
}

impl StopIn {
    fn new(phase: &'static str, after: u64) -> Self {
        StopIn {
            phase,
            after,
            state: Mutex::new((false, 0, Vec::new())),
        }
    }
}

impl StopIn {
    fn begun(&self, name: &str) {
        let mut s = self.state.lock().unwrap();
        s.2.push(name.to_string());
        if name == self.phase {
            s.0 = true;
        }
    }
}

impl Observer for StopIn {
    fn stage_start(&self, name: &'static str) {
        self.begun(name);
    }
    fn phase_start(&self, phase: &Phase) {
        self.begun(phase.name);
    }
    fn phase_advance(&self, _position: u64) {
        let mut s = self.state.lock().unwrap();
        if s.0 {
            s.1 += 1;
        }
    }
    fn notice(&self, notice: &Notice) {
        self.state.lock().unwrap().2.push(notice.to_string());
    }
    fn stop_requested(&self) -> bool {
        let s = self.state.lock().unwrap();
        s.0 && s.1 >= self.after
    }
}

/// Every file of `dir` (hidden ones too) with its bytes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut all: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    all.sort();
    all
}

/// The outputs that must be byte-identical between two runs (not the report: it holds times).
fn data_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    files(dir)
        .into_iter()
        .filter(|(name, _)| name != "report.json" && !name.starts_with('.'))
        .collect()
}

#[test]
fn report_json_has_every_phase_with_a_non_negative_time() {
    let tmp = tempfile::tempdir().unwrap();
    let data = data_folder(tmp.path());
    let out = tmp.path().join("run");
    let outcome = Augmenter::new(settings(&data, &out))
        .run(&StopIn::new("none", 0))
        .unwrap();
    assert!(!outcome.interrupted);
    let report = cli_common::json(&out, "report.json");
    let phases = report["phase_seconds"].as_object().expect("phase_seconds");
    for phase in AUGMENT_PHASES {
        let s = phases[phase].as_f64().unwrap_or(-1.0);
        assert!(s >= 0.0 && s.is_finite(), "{phase}: {s} in {report}");
    }
    assert_eq!(phases.len(), AUGMENT_PHASES.len(), "{report}");
    assert!(phases["sampling"].as_f64().unwrap() > 0.0, "{report}");
    assert!(
        outcome.summary.iter().any(|l| l.starts_with("phases: ")),
        "{:?}",
        outcome.summary
    );
    assert!(report["estimate"]["seconds"].as_f64().unwrap() >= 0.0);
}

#[test]
fn a_stop_in_any_phase_keeps_no_output_and_a_fresh_run_gives_the_same_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let data = data_folder(tmp.path());
    let whole = tmp.path().join("whole");
    assert!(
        !Augmenter::new(settings(&data, &whole))
            .run(&StopIn::new("none", 0))
            .unwrap()
            .interrupted
    );
    let expected = data_files(&whole);
    assert!(
        expected.len() >= 12,
        "{:?}",
        expected.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    // A moment in each phase, drawn once from a fixed seed: (the phase as report.json names it,
    // the stage or progress display that starts it, how many progress steps before the stop).
    let mut seed = std::env::var("RMLD_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261123u64);
    let mut draw = |below: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % below
    };
    let moments = [
        ("dataset load", "dataset load", 0),
        ("LASSO starts", "LASSO starts", 0),
        ("burn-in", "burn-in", draw(3)),
        ("sampling", "sampling", draw(2)),
        ("re-encoding", "re-encoding", 0),
        ("quality check", "quality check", 0),
        ("original codes", "original codes", 0),
        ("test codes", "test codes", 0),
        ("writing", "writing", 1 + draw(10)),
    ];
    eprintln!("stop moments (RMLD_TEST_SEED to replay): {moments:?}");
    for (k, (phase, display, after)) in moments.into_iter().enumerate() {
        let out = tmp.path().join(format!("stopped{k}"));
        let observer = StopIn::new(display, after);
        let outcome = Augmenter::new(settings(&data, &out))
            .run(&observer)
            .unwrap();
        assert!(outcome.interrupted, "{phase}: not stopped");
        let left: Vec<String> = files(&out).into_iter().map(|f| f.0).collect();
        assert_eq!(
            left,
            [".rmld.lock", "report.json"],
            "{phase}: an interrupted run left outputs"
        );
        let report = cli_common::json(&out, "report.json");
        assert_eq!(report["interrupted"], true, "{phase}: {report}");
        assert_eq!(report["resumable"], false, "{phase}: {report}");
        assert_eq!(report["stopped_in"], phase, "{report}");
        let said = observer.state.lock().unwrap().2.join("\n");
        assert!(
            said.contains(&format!("interrupted during {phase}")) && said.contains("resumed"),
            "{phase}: {said}"
        );
        // Without `force` the folder is refused (its report.json is another run's) ...
        let again = Augmenter::new(settings(&data, &out)).run(&StopIn::new("none", 0));
        let e = again.unwrap_err().to_string();
        assert!(e.contains("report.json") && e.contains("force"), "{e}");
        // ... and with it the run gives the uninterrupted run's bytes.
        let mut forced = settings(&data, &out);
        forced.problem.force = true;
        assert!(
            !Augmenter::new(forced)
                .run(&StopIn::new("none", 0))
                .unwrap()
                .interrupted
        );
        assert!(
            data_files(&out) == expected,
            "{phase}: the run after the stop differs from the uninterrupted one"
        );
    }
}

#[test]
fn sigint_during_a_long_run_is_announced_then_keeps_no_output() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("long");
    // 1797 chains with a burn-in of 5000 outer iterations: over a minute on any CPU (78 s on a
    // 2-core AVX-512 VM, estimated 4 min from the LASSO pilot's rate; it is stopped at once).
    let mut child = Command::new(env!("CARGO_BIN_EXE_rmld"))
        .args([
            "augment",
            "--preset",
            "paper",
            "--ratio",
            "1:1",
            "--samples",
            "1",
            "--burn-in",
            "5000",
            "--batch",
            "8",
            "--no-quality",
            "--no-original-codes",
            "--backend",
            "cpu",
            "--out",
        ])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let mut said = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 {
        said.push_str(&line);
        if line.contains("will take about") {
            break;
        }
        line.clear();
    }
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    said.push_str(&rest);
    let status = child.wait().unwrap();
    assert!(
        said.contains("will take about") && said.contains("on CPU") && said.contains("GFLOP/s"),
        "no estimate line: {said}"
    );
    assert_eq!(status.code(), Some(130), "{said}");
    assert!(said.contains("cannot be resumed"), "{said}");
    let left: Vec<String> = files(&out).into_iter().map(|f| f.0).collect();
    assert_eq!(left, [".rmld.lock", "report.json"], "{said}");
    assert_eq!(cli_common::json(&out, "report.json")["interrupted"], true);
}
