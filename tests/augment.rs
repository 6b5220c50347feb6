//! `rmld augment` end to end on the embedded digits: the files a user loads, their agreement with
//! each other and with the originals, class conditioning, and bad input refused with exit 2.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::stroke_images;
use rmld::io::{self, Dataset, Pixels};

fn rmld(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rmld"))
        .args(args)
        .output()
        .expect("the rmld binary runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `rmld augment` on the embedded digits, small, with the paper's preset unless `extra` names one.
fn augment(out: &Path, extra: &[&str]) -> Output {
    // These tests check the paper's settings unless they say otherwise; the default preset
    // (`quality`) has its own test.
    if extra.contains(&"--preset") {
        augment_with_defaults(out, extra)
    } else {
        augment_with_defaults(out, &[&["--preset", "paper"], extra].concat())
    }
}

/// The same with no preset added: what a user who names none gets.
fn augment_with_defaults(out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "augment",
        "--backend",
        "cpu",
        "--out",
        out.to_str().unwrap(),
        "--samples",
        "2",
        "--lasso-iterations",
        "30",
    ];
    args.extend_from_slice(extra);
    rmld(&args)
}

/// The report.json a run wrote into `out`.
fn report_of(out: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap()
}

fn labels_of(path: &Path) -> Vec<u32> {
    io::read_npy_labels(path).unwrap()
}

#[test]
fn augmented_set_holds_originals_then_class_conditional_samples() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = augment(&out, &[]);
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    let digits = Dataset::embedded();
    let n = digits.n;
    let labels = digits.labels.clone().unwrap();

    // Per class round(n_k / 6) generated samples, labelled with their class, in class order.
    let generated_labels = labels_of(&out.join("generated-labels.npy"));
    let mut expected = Vec::new();
    for class in 0..10u32 {
        let n_k = labels.iter().filter(|&&l| l == class).count();
        expected.extend(std::iter::repeat_n(
            class,
            (n_k as f64 / 6.0).round() as usize,
        ));
    }
    assert_eq!(generated_labels, expected);
    let g = expected.len();

    // IDX: originals first (rescaled 0..16 → 0..255), then the generated images; labels alike.
    let train = io::read_idx_images(&out.join("train-images-idx3-ubyte.gz")).unwrap();
    assert_eq!((train.n, train.height, train.width), (n + g, 8, 8));
    let Pixels::U8(raw) = &digits.pixels else {
        panic!("the digits are 8-bit")
    };
    for (i, (&got, &v)) in train.pixels.iter().zip(raw).enumerate() {
        let want = (v as f32 * 255.0 / 16.0).round() as u8;
        assert_eq!(got, want, "original pixel {i}: {got} vs {want}");
    }
    let train_labels = io::read_idx_labels(&out.join("train-labels-idx1-ubyte.gz")).unwrap();
    let all_labels = labels_of(&out.join("labels.npy"));
    assert_eq!(all_labels.len(), n + g);
    assert!(all_labels
        .iter()
        .zip(&train_labels)
        .all(|(&a, &b)| a == b as u32));
    assert_eq!(&all_labels[..n], &labels[..]);
    assert_eq!(&all_labels[n..], &generated_labels[..]);
    let generated = io::read_idx_images(&out.join("generated-images-idx3-ubyte.gz")).unwrap();
    assert_eq!(generated.n, g);
    assert_eq!(&train.pixels[n * 64..], &generated.pixels[..]);

    // Codes: originals' LASSO codes then the generated codes, p = 4·64.
    let codes = io::read_npy(&out.join("codes.npy")).unwrap();
    assert_eq!(codes.shape, vec![n + g, 256]);
    let generated_codes = io::read_npy(&out.join("generated-codes.npy")).unwrap();
    assert_eq!(generated_codes.shape, vec![g, 256]);
    let (Pixels::F32(all_codes), Pixels::F32(new_codes)) = (&codes.data, &generated_codes.data)
    else {
        panic!("codes are float32")
    };
    assert_eq!(
        &all_codes[n * 256..],
        &new_codes[..],
        "codes.npy ends with generated-codes.npy"
    );

    // Class conditioning: a generated image is nearest to its own class's mean far more often
    // than chance (10%); the real digits themselves reach about 90% with this rule.
    let mut means = vec![[0f64; 64]; 10];
    for (i, &l) in labels.iter().enumerate() {
        for j in 0..64 {
            means[l as usize][j] += raw[i * 64 + j] as f64 * 255.0 / 16.0;
        }
    }
    for (class, mean) in means.iter_mut().enumerate() {
        let n_k = labels.iter().filter(|&&l| l as usize == class).count() as f64;
        mean.iter_mut().for_each(|v| *v /= n_k);
    }
    let nearest = |image: &[u8]| {
        (0..10)
            .min_by(|&a, &b| {
                let dist = |k: usize| -> f64 {
                    image
                        .iter()
                        .zip(&means[k])
                        .map(|(&x, m)| (x as f64 - m).powi(2))
                        .sum()
                };
                dist(a).total_cmp(&dist(b))
            })
            .unwrap_or(0) as u32
    };
    let hits = generated
        .pixels
        .chunks(64)
        .zip(&generated_labels)
        .filter(|(img, &l)| nearest(img) == l)
        .count();
    assert!(
        hits as f64 >= 0.75 * g as f64,
        "only {hits} of {g} generated digits are nearest to their own class mean"
    );

    let report = report_of(&out);
    assert_eq!(report["original_count"], n);
    assert_eq!(report["generated_count"], g);
    assert_eq!(report["classes"].as_array().unwrap().len(), 10);
    assert!(report["samples_per_second"].as_f64().unwrap() > 0.0);
    assert!(out.join("generated.png").exists());
}

#[test]
fn compression_and_class_subsets() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = augment(
        &out,
        &[
            "--method",
            "compression",
            "--classes",
            "3,7",
            "--ratio",
            "3:1",
        ],
    );
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    let labels = Dataset::embedded().labels.unwrap();
    let count = |c: u32| labels.iter().filter(|&&l| l == c).count();
    let all = labels_of(&out.join("labels.npy"));
    let (n3, n7) = (count(3), count(7));
    let g3 = (n3 as f64 / 3.0).round() as usize;
    let g7 = (n7 as f64 / 3.0).round() as usize;
    assert_eq!(all.len(), n3 + n7 + g3 + g7);
    assert!(all.iter().all(|&l| l == 3 || l == 7));
    let report = report_of(&out);
    // Compression has one chain per sample and no dynamics.
    assert_eq!(report["classes"][0]["chains"], g3);
}

fn assert_refused(extra: &[&str], needles: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = augment(&out, extra);
    let message = stderr(&run);
    assert_eq!(
        run.status.code(),
        Some(2),
        "{extra:?}: expected exit 2; stderr: {message}"
    );
    assert!(!message.contains("panicked"), "{extra:?}: {message}");
    for needle in needles {
        assert!(
            message.contains(needle),
            "{extra:?}: {needle:?} not in {message}"
        );
    }
    assert!(
        !out.join("report.json").exists(),
        "{extra:?} wrote a report"
    );
}

/// A zero count is refused before anything is written, as `rmld quality` refuses it; the test
/// split's limit was met only by the quality metrics, after the outputs, which went without them.
#[test]
fn zero_counts_are_refused_before_anything_is_written() {
    for flag in ["--test-limit", "--limit", "--samples"] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let out_arg = out.to_str().unwrap();
        let run = rmld(&["augment", "--backend", "cpu", "--out", out_arg, flag, "0"]);
        let message = stderr(&run);
        assert_eq!(run.status.code(), Some(2), "{flag} 0: {message}");
        assert!(
            message.contains(&format!("{flag}: must be at least 1")),
            "{flag} 0: {message}"
        );
        assert!(!out.exists(), "{flag} 0 created --out");
    }
}

#[test]
fn bad_input_is_refused_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    // Labels that do not match the images in count.
    let labels = dir.path().join("short-labels.npy");
    io::write_npy_i64(&labels, &[10], &[1; 10]).unwrap();
    assert_refused(
        &["--labels", labels.to_str().unwrap()],
        &["short-labels.npy", "10 labels", "1797"],
    );
    // An unknown class.
    assert_refused(&["--classes", "3,42"], &["--classes", "42"]);
    // A class with fewer images than the minibatch.
    assert_refused(
        &["--batch", "500"],
        &["--batch", "fewer than the minibatch"],
    );
    // Raw values: augment writes 8-bit images.
    assert_refused(&["--data-scale", "raw"], &["--data-scale", "8-bit images"]);
    // Float images below zero: the 8-bit outputs would cut them to 0.
    let signed = dir.path().join("signed.npy");
    let mut values = vec![0.5f32; 20 * 64];
    values[70] = -0.25;
    io::write_npy_f32(&signed, &[20, 8, 8], &values).unwrap();
    let labels = dir.path().join("labels.npy");
    io::write_npy_i64(&labels, &[20], &[[0; 10], [1; 10]].concat()).unwrap();
    assert_refused(
        &[
            "--data",
            signed.to_str().unwrap(),
            "--labels",
            labels.to_str().unwrap(),
        ],
        &[
            "signed.npy",
            "flat index 70 (image 1, pixel 6)",
            "-0.25",
            "below 0",
        ],
    );
    // Data without labels.
    let data = dir.path().join("unlabelled.npy");
    io::write_npy_u8(&data, &[20, 8, 8], &[7; 20 * 64]).unwrap();
    assert_refused(
        &["--data", data.to_str().unwrap()],
        &["unlabelled.npy", "labels"],
    );
    // Rows whose count is not a square are one row of pixels: deform (the default's method)
    // would blank them with a move down or up, so it refuses them; the paper's sampler runs.
    let rows = dir.path().join("rows.npy");
    let values: Vec<u8> = (0..20 * 60).map(|i| (i * 37 % 256) as u8).collect();
    io::write_npy_u8(&rows, &[20, 60], &values).unwrap();
    let rows_run = [
        "--data",
        rows.to_str().unwrap(),
        "--labels",
        labels.to_str().unwrap(),
    ];
    assert_refused(
        &[&["--preset", "quality"], &rows_run[..]].concat(),
        &[
            "--method",
            "rows.npy",
            "60 values",
            "1 × 60",
            "--method hmc",
        ],
    );
    let paper = tempfile::tempdir().unwrap();
    let run = augment(&paper.path().join("out"), &rows_run);
    assert!(run.status.success(), "{}", stderr(&run));
    // A ratio that is not one.
    assert_refused(&["--ratio", "6:0"], &["--ratio"]);
    // --encode-test without a folder holding a test split, refused before any work.
    assert_refused(&["--encode-test"], &["--encode-test"]);
    assert_refused(&["--smooth=-1"], &["--smooth"]);
}

#[test]
fn kernel_hmc_writes_images_and_no_codes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = augment(&out, &["--method", "kernel-hmc", "--classes", "0,1"]);
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    let labels = Dataset::embedded().labels.unwrap();
    let n = labels.iter().filter(|&&l| l < 2).count();
    let generated = labels_of(&out.join("generated-labels.npy"));
    let train = io::read_idx_images(&out.join("train-images-idx3-ubyte.gz")).unwrap();
    assert_eq!(train.n, n + generated.len());
    assert!(!out.join("codes.npy").exists() && !out.join("generated-codes.npy").exists());
    // Chains start at real images and move: the generated images are not all copies.
    let report = report_of(&out);
    assert!(report["mean_distance_moved"].as_f64().unwrap() > 0.0);
    assert!(report["acceptance_rate"].as_f64().unwrap() > 0.0);
    let refused = augment(&out, &["--method", "kernel-hmc", "--encode-test"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
}

/// `--reencode`: the generated codes are `rmld encode` of the generated images (same dictionary,
/// scale, lam and iterations), not the chains' positions; kernel-hmc refuses it.
#[test]
fn reencode_writes_the_lasso_codes_of_the_generated_images() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, reencoded) = (dir.path().join("plain"), dir.path().join("reencoded"));
    let extra = ["--method", "hmc", "--classes", "1,2", "--ratio", "20:1"];
    let run = augment(&plain, &extra);
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    let run = augment(&reencoded, &[&extra[..], &["--reencode"]].concat());
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    let floats = |path: &Path| match io::read_npy(path).unwrap().data {
        Pixels::F32(v) => v,
        other => panic!("{}: not f32 ({other:?})", path.display()),
    };
    // The same seed gives the same chains: the images agree, the codes do not.
    let images = |out: &Path| std::fs::read(out.join("generated-images-idx3-ubyte.gz")).unwrap();
    assert_eq!(images(&plain), images(&reencoded));
    let (sampled, lasso) = (
        floats(&plain.join("generated-codes.npy")),
        floats(&reencoded.join("generated-codes.npy")),
    );
    assert_eq!(sampled.len(), lasso.len());
    assert_ne!(sampled, lasso);
    let encoded = dir.path().join("encoded");
    let run = rmld(&[
        "encode",
        "--data",
        reencoded
            .join("generated-images-idx3-ubyte.gz")
            .to_str()
            .unwrap(),
        "--dictionary",
        reencoded.join("dictionary.npy").to_str().unwrap(),
        "--backend",
        "cpu",
        "--iterations",
        "30",
        "--out",
        encoded.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    let want = floats(&encoded.join("codes.npy"));
    let bad: Vec<String> = lasso
        .iter()
        .zip(&want)
        .enumerate()
        .filter(|(_, (a, b))| (*a - *b).abs() > 1e-4 * (1.0 + b.abs()))
        .map(|(i, (a, b))| format!("code[{i}]: augment {a}, encode {b}"))
        .collect();
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
    // The augmented codes.npy ends with the re-encoded rows.
    let all = floats(&reencoded.join("codes.npy"));
    assert_eq!(&all[all.len() - lasso.len()..], &lasso[..]);
    let report = report_of(&reencoded);
    assert!(report["generated_codes"]
        .as_str()
        .unwrap()
        .starts_with("LASSO"));
    // The CPU's encodings stop at the default gap by ADMM, as `encode`'s do.
    assert_eq!(report["lasso"]["encoder"], "admm", "{}", report["lasso"]);
    assert_refused(&["--method", "kernel-hmc", "--reencode"], &["--reencode"]);
}

/// `n` 28 × 28 images of a bright bar on black, in two classes (even and odd i) by brightness,
/// moved down by i mod 3 rows.
fn bars(n: usize) -> Vec<u8> {
    let mut pixels = vec![0u8; n * 28 * 28];
    for (i, image) in pixels.chunks_mut(28 * 28).enumerate() {
        for r in 4 + i % 3..20 + i % 3 {
            for c in 6..22 {
                image[r * 28 + c] = (40 + 8 * c + 20 * (i % 2)) as u8;
            }
        }
    }
    pixels
}

/// The bars of [`bars`] with their classes, as NPY files in a folder.
struct BarsData {
    data: String,
    labels: String,
}

impl BarsData {
    fn write(dir: &Path, classes: &[i64]) -> BarsData {
        let (data, labels) = (dir.join("bars.npy"), dir.join("bars-labels.npy"));
        let n = classes.len();
        io::write_npy_u8(&data, &[n, 28, 28], &bars(n)).unwrap();
        io::write_npy_i64(&labels, &[n], classes).unwrap();
        let text = |p: std::path::PathBuf| p.to_str().unwrap().to_string();
        BarsData {
            data: text(data),
            labels: text(labels),
        }
    }

    /// `rmld augment`'s default (deform) at 1:1 into `out`, with `extra`: the report, the
    /// generated images' pixels and their labels.
    fn deform(&self, out: &Path, extra: &[&str]) -> (serde_json::Value, Vec<u8>, Vec<u32>) {
        let mut args = vec![
            "--data",
            &self.data,
            "--labels",
            &self.labels,
            "--ratio",
            "1:1",
        ];
        args.extend(["--no-quality", "--reencode", "false"]);
        args.extend(extra);
        let run = augment_with_defaults(out, &args);
        assert!(run.status.success(), "{extra:?}: {}", stderr(&run));
        let images = io::read_idx_images(&out.join("generated-images-idx3-ubyte.gz")).unwrap();
        let labels = labels_of(&out.join("generated-labels.npy"));
        (report_of(out), images.pixels, labels)
    }
}

/// Deform takes 0 for the background (its moved anchors shift zeros in, its shading scales the
/// ink): a set of dark ink on white is drawn inverted, so that its draws are the inverted
/// draws of the inverted set (to one level of rounding), not white images with black edges
/// shifted in; the report says which background it found.
#[test]
fn deform_draws_dark_ink_on_white_as_the_inverted_set() {
    let dir = tempfile::tempdir().unwrap();
    let n = 20;
    let labels = dir.path().join("labels.npy");
    let classes: Vec<i64> = (0..n as i64).map(|i| i % 2).collect();
    io::write_npy_i64(&labels, &[n], &classes).unwrap();
    let generated = |name: &str, pixels: &[u8]| {
        let data = dir.path().join(format!("{name}.npy"));
        io::write_npy_u8(&data, &[n, 28, 28], pixels).unwrap();
        let out = dir.path().join(name);
        let args = [
            "--data",
            data.to_str().unwrap(),
            "--labels",
            labels.to_str().unwrap(),
            "--ratio",
            "1:2",
            "--no-quality",
        ];
        let run = augment_with_defaults(&out, &args);
        assert!(run.status.success(), "{name}: {}", stderr(&run));
        let images = io::read_idx_images(&out.join("generated-images-idx3-ubyte.gz")).unwrap();
        (report_of(&out), images.pixels)
    };
    let dark = bars(n);
    let white: Vec<u8> = dark.iter().map(|&v| 255 - v).collect();
    let (dark_report, dark_draws) = generated("dark", &dark);
    let (white_report, white_draws) = generated("white", &white);
    assert_eq!(dark_report["background"], "dark");
    assert_eq!(white_report["background"], "bright");
    assert_eq!(dark_draws.len(), 40 * 28 * 28);
    let mismatches: Vec<String> = dark_draws
        .iter()
        .zip(&white_draws)
        .enumerate()
        .filter(|(_, (&d, &w))| (255 - d as i32 - w as i32).abs() > 1)
        .map(|(i, (d, w))| {
            format!("pixel {i}: dark run {d}, white run {w} (255 - {w} expected near {d})")
        })
        .collect();
    assert!(
        mismatches.is_empty(),
        "{} mismatches: {:?}",
        mismatches.len(),
        &mismatches[..mismatches.len().min(20)]
    );
}

/// On graded surfaces the preset's shading halves as a class grows from 100 to 200 images: a
/// class of 200 is drawn as `--shade 0.1` draws it, one of 10 as `--shade 0.2`, and the report
/// gives each class's amplitude.
#[test]
fn surface_shading_halves_for_large_classes() {
    let dir = tempfile::tempdir().unwrap();
    let (large, small) = (200, 10);
    let classes: Vec<i64> = (0..large + small).map(|i| i64::from(i >= large)).collect();
    let bars = BarsData::write(dir.path(), &classes);
    let generated = |name: &str, extra: &[&str]| bars.deform(&dir.path().join(name), extra);
    let (report, fitted, fitted_labels) = generated("fitted", &[]);
    assert_eq!(report["ink"], "surfaces", "{report}");
    let by_class = report["shade_by_class"].as_array().expect("shade_by_class");
    let shade_of = |label: u64| {
        let class = by_class.iter().find(|c| c["label"] == label).unwrap();
        class["shade"].as_f64().unwrap()
    };
    assert_eq!(shade_of(0), 0.1f32 as f64, "{report}");
    assert_eq!(shade_of(1), 0.2f32 as f64, "{report}");
    let (_, once, once_labels) = generated("once", &["--shade", "0.1"]);
    let (twice_report, twice, _) = generated("twice", &["--shade", "0.2"]);
    assert!(
        twice_report["shade_by_class"].is_null(),
        "a given shading holds for every class"
    );
    assert_eq!(fitted_labels, once_labels);
    let d = 28 * 28;
    let mut large_rows = 0;
    for (row, &label) in fitted_labels.iter().enumerate() {
        let (ours, pixels) = (&fitted[row * d..(row + 1) * d], (row * d)..((row + 1) * d));
        match label {
            0 => {
                large_rows += 1;
                assert_eq!(
                    ours, &once[pixels],
                    "row {row}: the large class as --shade 0.1"
                );
            }
            _ => assert_eq!(
                ours, &twice[pixels],
                "row {row}: the small class as --shade 0.2"
            ),
        }
    }
    assert_eq!(large_rows, large);
}

/// The quality preset shades deform's draws on images of 28 px or more (`--shade`, 0.1): the
/// report says how much, `--shade 0` draws the unshaded images, the 8 × 8 digits are not
/// shaded, and a shading other methods cannot apply, or off its range, is refused by name.
#[test]
fn deform_shades_large_images_and_bad_shading_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let classes: Vec<i64> = (0..20).map(|i| i % 2).collect();
    let bars = BarsData::write(dir.path(), &classes);
    let generated = |name: &str, extra: &[&str]| {
        let (report, pixels, _) = bars.deform(&dir.path().join(name), extra);
        (report, pixels)
    };
    // The bars are graded surfaces: the preset shades them by 0.2 unless a shading is given.
    let (report, shaded) = generated("shaded", &[]);
    assert_eq!(report["ink"], "surfaces", "{report}");
    assert_eq!(report["shade"], 0.2f32 as f64, "{report}");
    let (report, plain) = generated("plain", &["--shade", "0"]);
    assert_eq!(report["shade"], 0.0);
    let (report, once) = generated("once", &["--shade", "0.1"]);
    assert_eq!(report["shade"], 0.1f32 as f64, "{report}");
    let (_, twice) = generated("twice", &["--shade", "0.2"]);
    assert_eq!(shaded, twice);
    // Shading moves pixels, the more the larger the amplitude.
    let moved = |a: &[u8]| -> u64 {
        a.iter()
            .zip(&plain)
            .map(|(&x, &y)| (x as i64 - y as i64).unsigned_abs())
            .sum()
    };
    assert!(moved(&once) > 0 && moved(&twice) > moved(&once));
    // The 8 × 8 digits are not shaded: the default equals --shade 0 there.
    let digits = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let mut args = vec!["--classes", "0,1", "--no-quality"];
        args.extend(extra);
        let run = augment_with_defaults(&out, &args);
        assert!(run.status.success(), "{extra:?}: {}", stderr(&run));
        std::fs::read(out.join("generated-images-idx3-ubyte.gz")).unwrap()
    };
    assert_eq!(
        digits("digits", &[]),
        digits("digits-plain", &["--shade", "0"])
    );
    // Another method under the quality preset keeps no shading; one given is refused.
    let hmc = dir.path().join("hmc");
    let run = augment_with_defaults(
        &hmc,
        &[
            "--preset",
            "quality",
            "--method",
            "hmc",
            "--classes",
            "0",
            "--limit",
            "60",
        ],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(report_of(&hmc)["shade"].is_null());
    assert_refused(
        &["--preset", "quality", "--method", "hmc", "--shade", "0.2"],
        &["--shade", "method deform", "hmc"],
    );
    for bad in ["-0.1", "1.5", "NaN", "inf"] {
        assert_refused(&["--shade", bad], &["--shade", "from 0 (off) to 1"]);
    }
}

/// On a set of strokes the quality preset's deform draws, past four new images per original,
/// elastic distortions (`--elastic`, 17): each class's first four draws per original are as
/// with `--elastic 0`, its later ones not; at four per original, and on graded surfaces, the
/// draws are those of `--elastic 0`; the report says the ink and the scale; a scale other
/// methods cannot apply, or off its range, is refused by name.
#[test]
fn deform_distorts_strokes_past_four_per_original_and_bad_elastic_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let n = 20;
    let labels = dir.path().join("labels.npy");
    let classes: Vec<i64> = (0..n as i64).map(|i| i % 2).collect();
    io::write_npy_i64(&labels, &[n], &classes).unwrap();
    let generated = |name: &str, pixels: &[u8], extra: &[&str]| {
        let data = dir.path().join(format!("{name}.npy"));
        io::write_npy_u8(&data, &[n, 28, 28], pixels).unwrap();
        let out = dir.path().join(name);
        let mut args = vec!["--data", data.to_str().unwrap(), "--labels"];
        args.extend([
            labels.to_str().unwrap(),
            "--no-quality",
            "--reencode",
            "false",
        ]);
        args.extend(extra);
        let run = augment_with_defaults(&out, &args);
        assert!(run.status.success(), "{name}: {}", stderr(&run));
        let images = io::read_idx_images(&out.join("generated-images-idx3-ubyte.gz")).unwrap();
        (report_of(&out), images.pixels)
    };
    let d = 28 * 28;
    let (report, distorted) = generated("strokes", &stroke_images(n), &["--ratio", "1:8"]);
    assert_eq!(report["ink"], "strokes", "{report}");
    assert_eq!(report["tangent_spreads"], "fixed", "{report}");
    assert_eq!(report["shade"], 0.1f32 as f64, "{report}");
    assert_eq!(report["elastic"], 17.0, "{report}");
    let (_, plain) = generated(
        "plain",
        &stroke_images(n),
        &["--ratio", "1:8", "--elastic", "0"],
    );
    // 80 new images per class of 10: 40 deformations, then 40 distortions (or interpolants).
    assert_eq!(distorted.len(), 2 * 80 * d);
    for class in 0..2 {
        let rows = |images: &[u8], from: usize, to: usize| {
            images[(class * 80 + from) * d..(class * 80 + to) * d].to_vec()
        };
        assert_eq!(
            rows(&distorted, 0, 40),
            rows(&plain, 0, 40),
            "class {class}: the deformations changed"
        );
        let (a, b) = (rows(&distorted, 40, 80), rows(&plain, 40, 80));
        let changed = a.iter().zip(&b).filter(|(x, y)| x != y).count();
        assert!(
            changed > 40 * d / 20,
            "class {class}: {changed} pixels changed"
        );
    }
    let (_, four) = generated("four", &stroke_images(n), &["--ratio", "1:4"]);
    let (_, four_plain) = generated(
        "four-plain",
        &stroke_images(n),
        &["--ratio", "1:4", "--elastic", "0"],
    );
    assert_eq!(four, four_plain, "four new per original changed");
    let (report, surfaces) = generated("surfaces", &bars(n), &["--ratio", "1:8"]);
    assert_eq!(report["ink"], "surfaces", "{report}");
    assert_eq!(
        report["tangent_spreads"], "learned from each class",
        "{report}"
    );
    let (_, surfaces_plain) = generated(
        "surfaces-plain",
        &bars(n),
        &["--ratio", "1:8", "--elastic", "0"],
    );
    assert_eq!(surfaces, surfaces_plain, "graded surfaces were distorted");
    assert_refused(
        &["--preset", "quality", "--method", "hmc", "--elastic", "5"],
        &["--elastic", "method deform", "hmc"],
    );
    for bad in ["-1", "101", "NaN", "inf"] {
        assert_refused(
            &["--elastic", bad],
            &["--elastic", "from 0 (off) to 100 px"],
        );
    }
}

/// With no --preset and no --method, `rmld augment` runs the quality preset: method deform
/// (exact draws along the transformation tangents, docs/usefulness.md), pixel-max 1, re-encoded
/// codes, the same run as an explicit `--preset quality`; `--preset quality --method hmc` runs
/// the preset's chains (tangent target, HMC); an option given on the command line overrides
/// its value; an explicit --method falls back to the paper's settings.
#[test]
fn the_default_preset_is_quality_and_options_override_it() {
    let dir = tempfile::tempdir().unwrap();
    let report = report_of;
    let quality = dir.path().join("quality");
    let run = augment(&quality, &["--preset", "quality", "--classes", "0,1"]);
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    let defaults = dir.path().join("defaults");
    let run = augment_with_defaults(&defaults, &["--classes", "0,1"]);
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    let r = report(&defaults);
    assert_eq!(r["preset"], "quality");
    assert_eq!(r["method"], "deform");
    assert_eq!(r["pixel_max"], 1.0);
    // Deform makes no proposals and samples no chain target: the report says neither.
    assert!(
        r["acceptance_rate"].is_null() && r["mh"].is_null(),
        "{}",
        r["acceptance_rate"]
    );
    assert!(
        r["target"].is_null() && r["tangent"].is_null(),
        "{}",
        r["target"]
    );
    let said = String::from_utf8_lossy(&run.stdout);
    assert!(said.contains("no accept step"), "{said}");
    // The default ratio (the paper's 6:1) is too few new images to help a classifier, and the
    // preset for classifiers says what does; with four per original or the paper's preset it
    // says nothing.
    let note = "too few to change a classifier";
    let told = stderr(&run);
    assert!(
        told.contains(note) && told.contains("--ratio 1:4") && told.contains("--balance auto"),
        "{told}"
    );
    let four = dir.path().join("four");
    let run = augment_with_defaults(&four, &["--classes", "0,1", "--ratio", "1:4"]);
    assert!(
        run.status.success() && !stderr(&run).contains(note),
        "{}",
        stderr(&run)
    );
    assert!(!stderr(&augment(&dir.path().join("paper"), &["--classes", "0,1"])).contains(note));
    assert!(
        said.contains("drawn at once") && !said.contains("chains"),
        "{said}"
    );
    assert!(r["generated_codes"].as_str().unwrap().starts_with("LASSO"));
    // The explicit preset and the implicit one are the same run.
    let images = |out: &Path| std::fs::read(out.join("generated-images-idx3-ubyte.gz")).unwrap();
    assert_eq!(images(&quality), images(&defaults));
    let generated =
        rmld::io::read_idx_images(&defaults.join("generated-images-idx3-ubyte.gz")).unwrap();
    assert_eq!(generated.n, r["generated_count"].as_u64().unwrap() as usize);
    let codes = std::fs::read(defaults.join("generated-codes.npy")).unwrap();
    assert!(codes.len() > 128, "re-encoded codes are written");
    // Without re-encoding, deform writes no codes (its draws are images).
    let bare = dir.path().join("bare");
    let run = augment_with_defaults(
        &bare,
        &["--classes", "0,1", "--reencode", "false", "--no-quality"],
    );
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    assert!(!bare.join("generated-codes.npy").exists());
    assert!(!bare.join("codes.npy").exists());
    assert_eq!(images(&bare), images(&defaults), "the same draws");
    // A shard of deform draws every image as the whole run does and keeps its part (its merge
    // is the single run: tests/shard_warm_up.rs).
    let shard = dir.path().join("shard");
    let run = augment_with_defaults(&shard, &["--classes", "0,1", "--shard", "0/2"]);
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    assert!(
        shard.join("manifest.json").exists(),
        "a shard writes its manifest"
    );

    let chains = dir.path().join("chains");
    let run = augment(
        &chains,
        &["--preset", "quality", "--method", "hmc", "--classes", "0,1"],
    );
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    let r = report(&chains);
    assert_eq!(r["preset"], "quality");
    assert_eq!(r["method"], "hmc");
    assert_eq!(r["target"], "tangent");
    assert_eq!(r["pixel_max"], 1.0);
    assert_eq!(r["burn_in"], 20);
    // The preset's 16, lowered to one neighbour direction per 8 pixels of the 8 × 8 digits.
    assert_eq!(r["tangent"]["k"], 8);
    assert_eq!(r["scale_fitted_to_data"]["tangent_k"]["asked"], 16);
    assert_eq!(r["tangent"]["scale"], 3.0);
    assert_eq!(r["settings"]["dynamics"]["leapfrog_steps"], 60);
    assert!(r["generated_codes"].as_str().unwrap().starts_with("LASSO"));

    let overridden = dir.path().join("overridden");
    let run = augment(
        &overridden,
        &[
            "--preset",
            "quality",
            "--method",
            "hmc",
            "--classes",
            "0,1",
            "--eta",
            "0.003",
            "--reencode",
            "false",
        ],
    );
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    let r = report(&overridden);
    assert_eq!(r["target"], "tangent");
    assert!((r["settings"]["dynamics"]["eta"].as_f64().unwrap() - 0.003).abs() < 1e-9);
    assert_eq!(r["generated_codes"], "the chains' positions X");

    let explicit = dir.path().join("explicit");
    let run = augment_with_defaults(&explicit, &["--classes", "0,1", "--method", "compression"]);
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    let r = report(&explicit);
    assert_eq!(r["preset"], "paper");
    assert_eq!(r["target"], "paper");
    assert_eq!(r["pixel_max"], 255.0);
    // The paper's target has no tangent span: its settings are not reported as if used.
    assert!(r["tangent"].is_null(), "{}", r["tangent"]);
}

/// The code cache: a second run reads the originals' and the re-encoded samples' codes (same
/// bytes as encoding them); a damaged entry is ignored with a note, the codes encoded again and
/// the entry rewritten.
#[test]
fn code_cache_is_read_back_and_a_damaged_entry_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let cache_arg = cache.to_str().unwrap().to_string();
    let run_into = |name: &str| {
        let out = dir.path().join(name);
        let run = augment(&out, &["--code-cache", &cache_arg, "--reencode"]);
        assert!(run.status.success(), "{name}: {}", stderr(&run));
        let report = report_of(&out);
        let codes = std::fs::read(out.join("codes.npy")).unwrap();
        let status = &report["code_cache"];
        let both = [
            status["original_codes"].clone(),
            status["reencoded_codes"].clone(),
        ];
        // The estimate counts the originals' codes only where the cache does not hold them.
        let estimate = &report["estimate"];
        let original_codes = estimate["phases"]
            .as_array()
            .and_then(|phases| phases.iter().find(|p| p[0] == "original codes"))
            .and_then(|p| p[1].as_f64())
            .unwrap_or_else(|| panic!("{name}: no original codes phase in {estimate}"));
        let how = estimate["how"].as_str().unwrap_or_default().to_string();
        (both, codes, stderr(&run), (original_codes, how))
    };
    let (first, codes, _, (counted, how)) = run_into("first");
    assert_eq!(first, ["written", "written"]);
    assert!(
        counted > 0.0 && !how.contains("code cache"),
        "{counted} s: {how}"
    );
    let (second, again, _, (counted, how)) = run_into("second");
    assert_eq!(second, ["read", "read"]);
    assert!(
        counted == 0.0 && how.contains("codes read from the code cache"),
        "{counted} s: {how}"
    );
    assert!(
        codes == again,
        "codes read from the cache differ from those encoded"
    );
    for entry in std::fs::read_dir(&cache).unwrap() {
        let path = entry.unwrap().path();
        let mut bytes = std::fs::read(&path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
    }
    let (third, encoded, said, _) = run_into("third");
    assert_eq!(third, ["written", "written"], "{said}");
    assert!(
        said.contains("not used") && said.contains("checksum"),
        "{said}"
    );
    assert!(
        codes == encoded,
        "codes encoded after a damaged entry differ"
    );
}

/// `--adapt`: each class adapts its own step size over the burn-in and freezes it
/// (report.json's `adaptation.classes`, labelled by class); refused by name for a method with no
/// step to adapt or without a burn-in; no adaptation without the flag.
#[test]
fn adapt_gives_each_class_its_own_step() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = augment(
        &out,
        &[
            "--method",
            "mala",
            "--burn-in",
            "20",
            "--adapt",
            "--classes",
            "3,5",
        ],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    let report = report_of(&out);
    let a = &report["adaptation"];
    assert_eq!(a["frozen"], true, "{a}");
    assert_eq!(a["adapted_iterations"], 20, "{a}");
    let classes = a["classes"].as_array().expect("per-class steps");
    let labels: Vec<u64> = classes
        .iter()
        .map(|c| c["class"].as_u64().unwrap())
        .collect();
    assert_eq!(labels, [3, 5], "{a}");
    for c in classes {
        let (step, acceptance) = (
            c["step_size"].as_f64().unwrap(),
            c["warmup_mean_acceptance"].as_f64().unwrap(),
        );
        assert!(step.is_finite() && step > 0.0, "{c}");
        assert!(acceptance > 0.0 && acceptance <= 1.0, "{c}");
    }
    assert_refused(&["--adapt", "--burn-in", "5"], &["--adapt", "mala or hmc"]);
    assert_refused(&["--adapt", "--method", "hmc"], &["--adapt", "burn"]);
    let model = dir.path().join("unread.amz");
    std::fs::write(&model, b"not read").unwrap();
    let amortized = [
        "--adapt",
        "--method",
        "mala",
        "--burn-in",
        "5",
        "--sampler",
        "amortized",
        "--model",
    ];
    assert_refused(
        &[&amortized[..], &[model.to_str().unwrap()]].concat(),
        &["--adapt", "amortized"],
    );
    let plain = dir.path().join("plain");
    let run = augment(
        &plain,
        &["--method", "mala", "--burn-in", "5", "--classes", "3"],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    let report = report_of(&plain);
    assert!(report["adaptation"].is_null(), "{}", report["adaptation"]);
}

/// `--burn-in auto` with `--adapt`: the warm-up ends where the class steps and the chains settle
/// (here MALA at pixel-max 1 settles well before the cap of 200), the samples are the draws after
/// it, and the run stops once every chain has them; refused by name for Compression.
#[test]
fn automatic_burn_in_ends_the_warm_up_where_it_settles() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = augment(
        &out,
        &[
            "--method",
            "mala",
            "--burn-in",
            "auto",
            "--adapt",
            "--classes",
            "3,5",
            "--pixel-max",
            "1",
            "--lambda",
            "0.05",
            "--sigma2",
            "0.01",
            "--eta",
            "0.001",
        ],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    let report = report_of(&out);
    let auto = &report["burn_in_auto"];
    let end = auto["ended_at"].as_u64().unwrap();
    assert_eq!(auto["cap"], 200, "{auto}");
    assert!(auto["settled"] == true && end < 200, "{auto}");
    assert_eq!(report["burn_in"], end, "{auto}");
    assert_eq!(report["adaptation"]["adapted_iterations"], end);
    let generated = report["generated_count"].as_u64().unwrap();
    let planned: u64 = report["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["generated"].as_u64().unwrap())
        .sum();
    assert_eq!(generated, planned);
    let summary = String::from_utf8_lossy(&run.stdout);
    assert!(
        summary.contains("burn-in: automatic, settled after"),
        "{summary}"
    );
    assert_refused(
        &["--method", "compression", "--burn-in", "auto"],
        &["--burn-in", "compression"],
    );
    assert_refused(&["--burn-in", "auto:0"], &["--burn-in", "auto:CAP"]);
}

/// `--balance` sets the samples per class as imbalanced-learn's `sampling_strategy`: counts per
/// class after augmenting, or `auto` (every class up to the majority's); a class not in the
/// data, or a count below a class's own, is a usage error naming the class, nothing written.
#[test]
fn balance_sets_each_class_count_and_refuses_what_it_cannot_do() {
    let dir = tempfile::tempdir().unwrap();
    let quiet = ["--limit", "200", "--no-quality", "--no-original-codes"];
    let counts_of = |out: &Path| {
        let all = io::read_idx_labels(&out.join("train-labels-idx1-ubyte.gz")).unwrap();
        let generated = labels_of(&out.join("generated-labels.npy"));
        let mut counts = std::collections::BTreeMap::new();
        for label in all {
            *counts.entry(label as u32).or_insert(0usize) += 1;
        }
        let mut new = std::collections::BTreeMap::new();
        for label in generated {
            *new.entry(label).or_insert(0usize) += 1;
        }
        (counts, new)
    };
    // The originals' counts: the first 200 embedded digits, as a plain run writes them.
    let plain = dir.path().join("plain");
    let run = augment_with_defaults(&plain, &[&quiet[..], &["--ratio", "1000"]].concat());
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    let originals = io::read_idx_labels(&plain.join("train-labels-idx1-ubyte.gz")).unwrap();
    let mut had = std::collections::BTreeMap::new();
    for &label in &originals[..200] {
        *had.entry(label as u32).or_insert(0usize) += 1;
    }
    assert_eq!(had.len(), 10, "{had:?}");

    let given = dir.path().join("given");
    let run = augment_with_defaults(&given, &[&quiet[..], &["--balance", "3:30,5:25"]].concat());
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    let (counts, new) = counts_of(&given);
    assert_eq!((counts[&3], counts[&5]), (30, 25), "{counts:?}");
    assert_eq!(new.keys().copied().collect::<Vec<_>>(), vec![3, 5]);
    // Every other class keeps its originals in the augmented set (imbalanced-learn's
    // resampled set), in dataset order before the new images.
    for (label, n) in &had {
        if ![3, 5].contains(label) {
            assert_eq!(counts[label], *n, "class {label}: {counts:?}");
        }
    }
    let written = io::read_idx_labels(&given.join("train-labels-idx1-ubyte.gz")).unwrap();
    assert_eq!(
        written[..200],
        originals[..200],
        "the originals first, in dataset order"
    );

    let auto = dir.path().join("auto");
    let run = augment_with_defaults(&auto, &[&quiet[..], &["--balance", "auto"]].concat());
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    let (counts, _) = counts_of(&auto);
    let top = *had.values().max().unwrap();
    assert_eq!(
        counts.len(),
        10,
        "every class, the majority's too: {counts:?}"
    );
    assert!(counts.values().all(|&n| n == top), "{counts:?}");

    for (balance, class) in [("42:100", "class 42"), ("3:1", "class 3")] {
        let out = dir.path().join("refused");
        let run = augment_with_defaults(&out, &[&quiet[..], &["--balance", balance]].concat());
        assert_eq!(run.status.code(), Some(2), "{balance}: {}", stderr(&run));
        assert!(stderr(&run).contains(class), "{balance}: {}", stderr(&run));
        assert!(!out.join("generated-labels.npy").exists());
    }
    let out = dir.path().join("both");
    let run = augment_with_defaults(&out, &["--balance", "auto", "--ratio", "2"]);
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    // Counts no machine can hold are refused before allocating, naming --balance (not --ratio,
    // which the run was not given), with nothing written.
    let out = dir.path().join("too-many");
    let run = augment_with_defaults(&out, &[&quiet[..], &["--balance", "0:2000000000"]].concat());
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert!(stderr(&run).contains("--balance"), "{}", stderr(&run));
    assert!(!out.join("generated-labels.npy").exists());
}

/// A folder of one NPY file per class (Quick Draw's layout) is in class order, so a `--limit`
/// under the first file's images keeps one class: the run says so, and says "1 class".
#[test]
fn a_limit_that_keeps_fewer_classes_than_the_data_has_is_noted() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("drawings");
    std::fs::create_dir(&folder).unwrap();
    for (name, level) in [("apple", 120u8), ("bee", 200u8)] {
        let values: Vec<u8> = (0..30 * 64)
            .map(|k| {
                if (k % 64) % 3 == 0 {
                    level
                } else {
                    (k % 7) as u8
                }
            })
            .collect();
        io::write_npy_u8(&folder.join(format!("{name}.npy")), &[30, 8, 8], &values).unwrap();
    }
    let data = folder.to_str().unwrap();
    let out = dir.path().join("one");
    let run = augment_with_defaults(
        &out,
        &["--data", data, "--limit", "20", "--reencode", "false"],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    let said = stderr(&run);
    assert!(
        said.contains("--limit 20 keeps the data's first 20 images, which hold 1 of its 2 classes"),
        "{said}"
    );
    let summary = String::from_utf8_lossy(&run.stdout);
    assert!(summary.contains(" of 1 class drawn at once"), "{summary}");
    let out = dir.path().join("both");
    let run = augment_with_defaults(
        &out,
        &["--data", data, "--limit", "40", "--reencode", "false"],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(
        !stderr(&run).contains("keeps the data's first"),
        "{}",
        stderr(&run)
    );
}
