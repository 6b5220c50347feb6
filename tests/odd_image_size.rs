//! Nothing assumes 28 × 28 (or 8 × 8): a CSV of 20 × 20 images, a size none of the bundled
//! datasets has, runs through `rmld sample` and `rmld augment` end to end.

mod cli_common;

use std::path::Path;

use cli_common::{json, rmld, stderr};
use rmld::io;

const SIDE: usize = 20;

/// 90 images of 20 × 20 in three classes (a horizontal bar, a vertical bar, a diagonal), at
/// seeded positions and widths with a little seeded speckle, as optdigits-style CSV rows
/// (400 pixels 0..=255, then the label).
fn write_csv(path: &Path) {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let mut text = String::new();
    for i in 0..90 {
        let label = i % 3;
        let at = 4 + next(12) as usize;
        let thick = 2 + next(3) as usize;
        let mut image = [0u8; SIDE * SIDE];
        for y in 0..SIDE {
            for x in 0..SIDE {
                let on = match label {
                    0 => (at..at + thick).contains(&y) && (3..17).contains(&x),
                    1 => (at..at + thick).contains(&x) && (3..17).contains(&y),
                    _ => x.abs_diff(y) < thick && (2..18).contains(&x),
                };
                let speckle = next(100) < 3;
                image[y * SIDE + x] = if on {
                    200 + next(56) as u8
                } else if speckle {
                    60
                } else {
                    0
                };
            }
        }
        for v in image {
            text.push_str(&format!("{v},"));
        }
        text.push_str(&format!("{label}\n"));
    }
    std::fs::write(path, text).unwrap();
}

#[test]
fn twenty_by_twenty_csv_images_sample_and_augment() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("bars.csv");
    write_csv(&data);
    let data = data.to_str().unwrap();

    let out = dir.path().join("sample");
    let run = rmld(&[
        "sample",
        "--data",
        data,
        "--backend",
        "cpu",
        "--chains",
        "6",
        "--samples",
        "3",
        "--seed",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let report = json(&out, "report.json");
    assert_eq!(report["dataset"]["height"], SIDE);
    assert_eq!(report["dataset"]["width"], SIDE);
    let images = io::read_npy(&out.join("images.npy")).unwrap();
    assert_eq!(images.shape, vec![3, 6, SIDE * SIDE]);
    let dictionary = io::read_npy(&out.join("dictionary.npy")).unwrap();
    assert_eq!(dictionary.shape[0], SIDE * SIDE);
    assert!(out.join("samples.png").exists());
    assert!(out.join("sample_stats/energy.npy").exists());

    // augment at its default preset (quality metrics included), on the CPU.
    let out = dir.path().join("augment");
    let run = rmld(&[
        "augment",
        "--preset",
        "quality",
        "--method",
        "hmc",
        "--data",
        data,
        "--backend",
        "cpu",
        "--no-original-codes",
        "--seed",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let report = json(&out, "report.json");
    assert_eq!(report["dataset"]["height"], SIDE);
    // The quality preset's η, σ² and smoothing follow the data's scales (issue 21): η by r/r_ref,
    // σ² by (r/r_ref)², the smoothing by the side over 28.
    let fit = &report["scale_fitted_to_data"];
    let r = fit["median_class_nn_distance"].as_f64().unwrap();
    let ratio = r / fit["reference_nn_distance"].as_f64().unwrap();
    assert!(r > 0.0 && r.is_finite(), "{fit}");
    assert_eq!(fit["image_side"], SIDE as f64);
    let used = |name: &str| fit[name]["used"].as_f64().unwrap();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs();
    assert!(close(used("eta"), 0.007 * ratio), "{fit}");
    assert!(close(used("sigma2"), 0.01 * ratio * ratio), "{fit}");
    assert!(close(used("smooth"), 0.5 * SIDE as f64 / 28.0), "{fit}");
    // The tangent span s = 3 narrows by the class margin m / m_ref when below 1, never below 1.
    let m = fit["class_margin"].as_f64().unwrap();
    let expected = (3.0 * (m / fit["reference_class_margin"].as_f64().unwrap()).min(1.0)).max(1.0);
    let scale = report["tangent"]["scale"].as_f64().unwrap();
    assert!((scale - expected).abs() <= 1e-6 * expected, "{fit}");
    if expected == 3.0 {
        assert!(fit["tangent_scale"].is_null(), "{fit}");
    } else {
        assert!(close(used("tangent_scale"), scale), "{fit}");
    }
    assert!(
        close(report["sigma2"].as_f64().unwrap(), used("sigma2")),
        "{report}"
    );
    let generated = io::read_idx_images(&out.join("generated-images-idx3-ubyte.gz")).unwrap();
    assert_eq!((generated.height, generated.width), (SIDE, SIDE));
    assert!(generated.n > 0);
    let quality = &report["quality"];
    assert!(
        quality["novelty"]["mean"]
            .as_f64()
            .is_some_and(f64::is_finite),
        "no quality metrics: {quality}"
    );
    assert_eq!(
        report["diagnostics_per_class"]["classes"]
            .as_array()
            .unwrap()
            .len(),
        3
    );

    // An option given on the command line keeps its value; the others are still scaled.
    let out = dir.path().join("augment-eta");
    let run = rmld(&[
        "augment",
        "--preset",
        "quality",
        "--method",
        "hmc",
        "--data",
        data,
        "--backend",
        "cpu",
        "--no-original-codes",
        "--no-quality",
        "--seed",
        "2",
        "--eta",
        "0.003",
        "--tangent-scale",
        "2.5",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let report = json(&out, "report.json");
    let fit = &report["scale_fitted_to_data"];
    assert!(fit["eta"].is_null(), "{fit}");
    assert!(fit["tangent_scale"].is_null(), "{fit}");
    assert_eq!(report["tangent"]["scale"], 2.5);
    assert!(fit["sigma2"]["used"].is_number(), "{fit}");
    assert_eq!(report["settings"]["dynamics"]["eta"], 0.003f32 as f64);
}
