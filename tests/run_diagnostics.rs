//! The diagnostics a run leaves: `rmld sample`'s per-draw statistics beside its draws
//! (`sample_stats/*.npy`, (chain, draw), ArviZ's names) agree with its report, and `rmld
//! augment` diagnoses every class on its own with a verdict line.

mod cli_common;

use cli_common::{json, rmld, small_augment, small_augment_with, stderr, stdout};

/// A `.npy` v1.0 file's dtype, shape and data bytes.
fn read(out: &std::path::Path, name: &str) -> (String, Vec<usize>, Vec<u8>) {
    let bytes = std::fs::read(out.join("sample_stats").join(name)).unwrap();
    assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00", "{name}: not a v1.0 NPY");
    let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = String::from_utf8(bytes[10..10 + len].to_vec()).unwrap();
    let field = |key: &str| {
        let at = header.find(key).unwrap() + key.len();
        header[at..]
            .trim_start_matches([':', ' ', '\''])
            .to_string()
    };
    let descr = field("'descr'");
    let descr = descr[..descr.find('\'').unwrap()].to_string();
    let shape = field("'shape'");
    let shape = shape[1..shape.find(')').unwrap()]
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse().unwrap())
        .collect();
    (descr, shape, bytes[10 + len..].to_vec())
}

fn values<const N: usize, T>(bytes: &[u8], from: fn([u8; N]) -> T) -> Vec<T> {
    bytes
        .chunks_exact(N)
        .map(|b| from(b.try_into().unwrap()))
        .collect()
}

#[test]
fn sample_writes_per_draw_statistics_that_agree_with_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    // HMC on the embedded digits: 32 chains × 20 iterations, no burn-in, so the statistics
    // cover every MH decision the report counts (the burn-in's cut is unit-tested in the crate).
    let (chains, samples, burn_in) = (32usize, 20usize, 0usize);
    let run = rmld(&[
        "sample",
        "--backend",
        "cpu",
        "--method",
        "hmc",
        "--target",
        "tangent",
        "--chains",
        "32",
        "--samples",
        "20",
        "--burn-in",
        "0",
        "--eta",
        "0.004",
        "--seed",
        "3",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let report = json(&out, "report.json");
    let draws = samples - burn_in;
    assert_eq!(report["outputs"]["codes.npy"][0], draws);
    let shape = vec![chains, draws];

    let (descr, s, bytes) = read(&out, "acceptance_rate.npy");
    assert_eq!((descr.as_str(), &s), ("<f8", &shape));
    let acceptance = values(&bytes, f64::from_le_bytes);
    assert!(acceptance.iter().all(|a| (0.0..=1.0).contains(a)));
    let (descr, s, bytes) = read(&out, "energy.npy");
    assert_eq!((descr.as_str(), &s), ("<f4", &shape));
    let energy = values(&bytes, f32::from_le_bytes);
    assert!(energy.iter().all(|e| e.is_finite()));
    let (descr, s, bytes) = read(&out, "step_size.npy");
    assert_eq!((descr.as_str(), &s), ("<f4", &shape));
    let step = values(&bytes, f32::from_le_bytes);
    let eta = report["settings"]["dynamics"]["eta"].as_f64().unwrap() as f32;
    assert!(
        step.iter().all(|&h| h == eta),
        "step sizes {step:?} ≠ eta {eta}"
    );
    let (descr, s, diverging) = read(&out, "diverging.npy");
    assert_eq!((descr.as_str(), &s), ("|u1", &shape));
    let (descr, s, bytes) = read(&out, "n_steps.npy");
    assert_eq!((descr.as_str(), &s), ("<i8", &shape));
    let n_steps = values(&bytes, i64::from_le_bytes);
    let leapfrog = report["settings"]["dynamics"]["leapfrog_steps"]
        .as_i64()
        .unwrap();
    assert!(n_steps.iter().all(|&n| n == leapfrog));

    // The acceptance probabilities against the realised acceptance: decision i accepts with
    // probability a_i = min(1, α_i), independently given the α's, so the realised share has mean
    // Σa_i / n and standard error √(Σ a_i(1 − a_i)) / n; it must lie within 4 of them.
    let n = acceptance.len() as f64;
    let mean = acceptance.iter().sum::<f64>() / n;
    let se = acceptance.iter().map(|a| a * (1.0 - a)).sum::<f64>().sqrt() / n;
    let stats = &report["sample_stats"];
    assert!((stats["mean_acceptance_rate"].as_f64().unwrap() - mean).abs() < 1e-12);
    let overall = report["acceptance"]["overall"].as_f64().unwrap();
    assert!(
        (mean - overall).abs() <= 4.0 * se,
        "mean acceptance probability {mean} vs realised {overall} (standard error {se})"
    );
    let divergent: u64 = diverging.iter().map(|&d| d as u64).sum();
    assert_eq!(stats["divergent"].as_u64().unwrap(), divergent);
    assert_eq!(
        divergent,
        report["acceptance"]["divergent_proposals"]
            .as_u64()
            .unwrap()
    );
    // Where a proposal diverged its acceptance probability is 0.
    for (i, (&d, &a)) in diverging.iter().zip(&acceptance).enumerate() {
        assert!(
            d == 0 || a == 0.0,
            "draw {i}: divergent with acceptance {a}"
        );
    }
}

#[test]
fn augment_diagnoses_every_class_on_the_draws_after_its_burn_in() {
    let dir = tempfile::tempdir().unwrap();
    // The paper's target: a class's chains share one posterior, diagnosed together.
    let out = dir.path().join("paper");
    let run = small_augment(&out, &["--samples", "10", "--burn-in", "2", "--seed", "4"]);
    assert!(run.status.success(), "{}", stderr(&run));
    let report = json(&out, "report.json");
    let per_class = &report["diagnostics_per_class"];
    let classes = per_class["classes"].as_array().unwrap();
    let labels: Vec<u64> = report["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["label"].as_u64().unwrap())
        .collect();
    assert_eq!(classes.len(), labels.len());
    for (class, label) in classes.iter().zip(&labels) {
        assert_eq!(class["label"].as_u64().unwrap(), *label);
        assert_eq!(class["groups"], 1, "class {label}: {class}");
        let d = &class["diagnostics"];
        // augment's samples are the kept iterations after the burn-in.
        assert_eq!(d["draws_per_chain"], 10, "class {label}: burn-in left in");
        assert_eq!(d["burn_in_excluded"], 2);
        let chains = report["classes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["label"].as_u64() == Some(*label))
            .unwrap()["chains"]
            .clone();
        assert_eq!(d["chains"], chains, "class {label}: not its own chains");
        assert!(d["max_rhat"].as_f64().is_some(), "class {label}: no R-hat");
    }
    let verdict = per_class["verdict"].as_str().unwrap();
    assert!(verdict.starts_with("per class: "), "{verdict}");
    assert!(stdout(&run).contains(verdict), "{}", stdout(&run));

    // The tangent target anchors each chain at its start image: groups of one anchor.
    let out = dir.path().join("tangent");
    let run = small_augment(
        &out,
        &[
            "--target",
            "tangent",
            "--tangent-k",
            "4",
            "--samples",
            "6",
            "--seed",
            "4",
        ],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    let report = json(&out, "report.json");
    let per_class = &report["diagnostics_per_class"];
    assert!(per_class["scope"].as_str().unwrap().contains("anchored"));
    for class in per_class["classes"].as_array().unwrap() {
        let groups = class["groups"].as_u64().unwrap();
        let chains = report["classes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["label"] == class["label"])
            .unwrap()["chains"]
            .as_u64()
            .unwrap();
        assert!((1..=chains).contains(&groups), "{class}");
        // The worst group's chains all started from one image.
        assert!(class["diagnostics"]["chains"].as_u64().unwrap() <= chains);
    }
}

#[test]
fn quality_preset_verdict_does_not_ask_for_longer_chains() {
    // The quality preset stops its chains short of equilibrium on purpose: a failing R-hat is
    // reported with what the run is judged by, not with advice to run longer.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("quality");
    let run = small_augment_with(&out, "quality", &["--method", "hmc", "--seed", "4"]);
    assert!(run.status.success(), "{}", stderr(&run));
    let report = json(&out, "report.json");
    let per_class = &report["diagnostics_per_class"];
    let verdict = per_class["verdict"].as_str().unwrap();
    let failing = per_class["classes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| {
            let d = &c["diagnostics"];
            d["max_nested_rhat"].as_f64().or(d["max_rhat"].as_f64())
        })
        .any(|r| r > 1.01);
    // Four draws per chain of the short chains: not converged, by design.
    assert!(failing, "{per_class}");
    assert!(verdict.contains("as expected"), "{verdict}");
    assert!(verdict.contains("quality metrics"), "{verdict}");
    assert!(!verdict.contains("run longer"), "{verdict}");
    assert!(stdout(&run).contains(verdict), "{}", stdout(&run));
}
