//! Sample-quality metrics on cases with known answers: copies (novelty 0), a collapsed set
//! (diversity 0), fresh draws of the real distribution (novelty and diversity about 1, label
//! preservation about the classifier's test accuracy), mislabelled sets, the classifier itself,
//! MNIST when present, and the `rmld quality` / `rmld augment` commands end to end.
//!
//! Seeds are fixed. Tolerances on statistical quantities (not exact by construction) come from
//! their sampling error: a median or mean of a few hundred nearest-neighbour distances whose
//! relative spread is about 10% is known to about 1%, so 0.05 is several standard errors wide.

use std::path::Path;
use std::process::{Command, Output};

use rmld::diagnostics::quality::{
    choose_reference, evaluate, hold_out, moved_one_pixel, train, LabelledImages, QualityInputs,
    QualityReport, ReferenceKind, TrainSettings,
};
use rmld::io::{self, Dataset, Pixels};
use rmld::rng::{Purpose, Stream};

/// Gaussian clusters: `classes` centres uniform in [0, 1]^d (drawn from `seed`), `per_class`
/// images each with independent N(0, sigma²) noise (drawn from `draw`), classes interleaved.
fn clusters(
    classes: u32,
    per_class: usize,
    d: usize,
    sigma: f32,
    seed: u64,
    draw: u32,
) -> LabelledImages {
    let mut centres = vec![0u32; classes as usize * d];
    Stream::new(seed, 7, 0, 0, Purpose::InitPick).fill_u32(&mut centres);
    let n = classes as usize * per_class;
    let mut noise = vec![0f32; n * d];
    Stream::new(seed, 8, draw, 0, Purpose::InitNoise).fill_normal(&mut noise);
    let labels: Vec<u32> = (0..n).map(|i| i as u32 % classes).collect();
    let values = (0..n)
        .flat_map(|i| {
            let c = labels[i] as usize;
            let centres = &centres;
            let noise = &noise;
            (0..d).map(move |j| {
                (centres[c * d + j] >> 8) as f32 / (1u32 << 24) as f32 + sigma * noise[i * d + j]
            })
        })
        .collect();
    LabelledImages::new(d, values, labels).unwrap()
}

fn never() -> bool {
    false
}

fn judge(
    train: &LabelledImages,
    reference: &LabelledImages,
    generated: &LabelledImages,
) -> QualityReport {
    evaluate(
        &QualityInputs {
            train,
            reference,
            reference_kind: ReferenceKind::TestSplit,
            generated,
            seed: 1,
            classifier: TrainSettings::default(),
            shape: None,
        },
        &never,
    )
    .unwrap()
    .expect("not stopped")
}

/// Well separated: 4 classes in 32 dimensions, cluster noise 0.05 (centres ~1.3 apart, clusters
/// ~0.3 across).
fn separated(per_class: usize, draw: u32) -> LabelledImages {
    clusters(4, per_class, 32, 0.05, 11, draw)
}

fn close(got: f64, want: f64, tolerance: f64, what: &str) {
    assert!(
        (got - want).abs() <= tolerance,
        "{what}: {got} is not within {tolerance} of {want}"
    );
}

#[test]
fn copies_of_training_images_have_novelty_zero() {
    let train = separated(150, 0);
    let reference = separated(50, 1);
    let copies = train.subset(&(0..120).collect::<Vec<_>>());
    let report = judge(&train, &reference, &copies);
    // Exact: the nearest neighbour's distance is recomputed directly, and a copy's is 0.
    assert_eq!(report.novelty.overall.mean, 0.0);
    assert_eq!(report.novelty.overall.quantiles.q90, 0.0);
    assert_eq!(report.novelty.overall.near_copy_fraction, 1.0);
    assert!(report
        .novelty
        .per_class
        .iter()
        .all(|c| c.stats.near_copy_fraction == 1.0));
    // Copies of training images are diverse like them (a subset of them, no subsampling here).
    close(
        report.diversity.mean.unwrap(),
        1.0,
        0.05,
        "copies' diversity",
    );
}

#[test]
fn identical_images_have_diversity_zero() {
    let train = separated(150, 0);
    let reference = separated(50, 1);
    // Per class, 30 copies of one fresh image: a collapse.
    let fresh = separated(1, 2);
    let rows: Vec<usize> = (0..120).map(|i| i % 4).collect();
    let collapsed = fresh.subset(&rows);
    let report = judge(&train, &reference, &collapsed);
    assert_eq!(report.diversity.mean, Some(0.0));
    for class in &report.diversity.per_class {
        assert_eq!(class.ratio, Some(0.0), "class {}", class.label);
        assert_eq!(class.generated, 30);
    }
    // A fresh image is novel (not a copy) even though the set has collapsed.
    assert!(report.novelty.overall.median > 0.5);
    assert_eq!(report.novelty.overall.near_copy_fraction, 0.0);
}

#[test]
fn fresh_draws_score_like_real_data() {
    // Overlapping clusters, so that the classifier errs sometimes and the comparison of label
    // preservation with the test accuracy means something.
    let (train, reference, fresh) = (
        clusters(5, 300, 24, 0.6, 5, 0),
        clusters(5, 100, 24, 0.6, 5, 1),
        clusters(5, 100, 24, 0.6, 5, 2),
    );
    let report = judge(&train, &reference, &fresh);
    let novelty = &report.novelty.overall;
    close(novelty.median, 1.0, 0.05, "fresh draws' median novelty");
    close(novelty.mean, 1.0, 0.05, "fresh draws' mean novelty");
    close(
        report.reference_scores.novelty_mean,
        1.0,
        0.05,
        "reference mean novelty",
    );
    assert_eq!(novelty.near_copy_fraction, 0.0);
    close(
        report.diversity.mean.unwrap(),
        1.0,
        0.05,
        "fresh draws' diversity",
    );
    close(
        report.reference_scores.diversity.unwrap(),
        1.0,
        0.05,
        "reference diversity",
    );
    // 500 images each: the two accuracies differ by their binomial error, about 2 points.
    let accuracy = report.classifier_test_accuracy.unwrap();
    assert!(
        accuracy > 0.6 && accuracy < 0.99,
        "accuracy {accuracy}: not a useful test case"
    );
    let preserved = report.label_preservation.as_ref().unwrap().overall;
    close(preserved, accuracy, 0.06, "fresh draws' label preservation");
    for class in &report.novelty.per_class {
        close(class.stats.median, 1.0, 0.15, "per-class median novelty");
    }
}

#[test]
fn the_reference_set_itself_reproduces_the_calibration_exactly() {
    let (train, reference) = (
        clusters(3, 200, 16, 0.3, 6, 0),
        clusters(3, 80, 16, 0.3, 6, 1),
    );
    let report = judge(&train, &reference, &reference);
    // By construction: novelty is each distance over the median of the same distances.
    close(report.novelty.overall.median, 1.0, 1e-12, "median novelty");
    assert_eq!(
        report.reference_scores.novelty_median,
        report.novelty.overall.median
    );
    // Label preservation of real test images is the test accuracy, overall and per class.
    let preservation = report.label_preservation.as_ref().unwrap();
    assert_eq!(Some(preservation.overall), report.classifier_test_accuracy);
    for class in &preservation.per_class {
        assert_eq!(Some(class.preserved), class.classifier_test_accuracy);
    }
    // No subsampling below 1000 images: the same sets give the same ratio.
    assert_eq!(report.diversity.mean, report.reference_scores.diversity);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["reference"], "test split");
    assert_eq!(json["counts"]["generated"], 240);
}

#[test]
fn classifier_separates_clusters_and_beats_chance_on_a_hard_case() {
    let (fit, test) = (separated(100, 0), separated(100, 1));
    let model = train(&fit.values, &fit.labels, fit.d, &TrainSettings::default()).unwrap();
    let accuracy = model.accuracy(&test.values, &test.labels);
    assert!(
        accuracy > 0.99,
        "well-separated clusters: accuracy {accuracy}"
    );
    // Heavily overlapping: 10 classes whose noise (0.6) is larger than the typical distance of
    // two centres per coordinate (~0.4); chance is 10%.
    let (fit, test) = (
        clusters(10, 100, 20, 0.6, 9, 0),
        clusters(10, 100, 20, 0.6, 9, 1),
    );
    let model = train(&fit.values, &fit.labels, fit.d, &TrainSettings::default()).unwrap();
    let accuracy = model.accuracy(&test.values, &test.labels);
    assert!(
        accuracy > 0.3 && accuracy < 0.99,
        "hard case: accuracy {accuracy}"
    );
    // Deterministic: training twice gives the same weights.
    let again = train(&fit.values, &fit.labels, fit.d, &TrainSettings::default()).unwrap();
    assert_eq!(model.weights, again.weights);
    assert_eq!(model.predict(&test.values), again.predict(&test.values));
}

#[test]
fn mislabelled_images_have_label_preservation_near_zero() {
    let (train, reference) = (separated(100, 0), separated(50, 1));
    let mut shifted = separated(50, 2);
    shifted.labels.iter_mut().for_each(|l| *l = (*l + 1) % 4);
    let report = judge(&train, &reference, &shifted);
    let preserved = report.label_preservation.unwrap().overall;
    // At most the classifier's error rate (under 1% here) lands on the shifted label.
    assert!(preserved < 0.02, "shifted labels preserved at {preserved}");
    assert!(report.classifier_test_accuracy.unwrap() > 0.99);
}

#[test]
fn held_out_reference_is_stratified_seeded_and_disjoint() {
    let all = clusters(3, 101, 4, 0.1, 3, 0);
    let (rest, held) = hold_out(&all, 5);
    // round(10% of 101) = 10 per class.
    for c in 0..3 {
        assert_eq!(held.labels.iter().filter(|&&l| l == c).count(), 10);
    }
    assert_eq!(rest.n() + held.n(), all.n());
    // Disjoint, and every image in one part or the other.
    let row = |set: &LabelledImages, i: usize| set.values[i * 4..(i + 1) * 4].to_vec();
    let mut seen: Vec<Vec<f32>> = (0..rest.n())
        .map(|i| row(&rest, i))
        .chain((0..held.n()).map(|i| row(&held, i)))
        .collect();
    seen.sort_by(|a, b| a.partial_cmp(b).unwrap());
    seen.dedup();
    assert_eq!(seen.len(), all.n());
    assert_eq!(hold_out(&all, 5), (rest.clone(), held.clone()));
    assert_ne!(hold_out(&all, 6).1, held);
    // With no test split, the reference is the held-out part.
    let (train, reference, kind) = choose_reference(all.clone(), None, 5);
    assert_eq!(
        (train, reference, kind),
        (rest, held, ReferenceKind::HeldOut)
    );
    let test = clusters(3, 5, 4, 0.1, 3, 1);
    let (_, reference, kind) = choose_reference(all, Some(test.clone()), 5);
    assert_eq!((reference, kind), (test, ReferenceKind::TestSplit));
}

#[test]
fn one_class_has_no_label_preservation_but_novelty_and_diversity() {
    let one = |draw| clusters(1, 120, 16, 0.2, 4, draw);
    let report = judge(&one(0), &one(1), &one(2));
    assert!(report.label_preservation.is_none() && report.classifier.is_none());
    close(report.novelty.overall.median, 1.0, 0.1, "median novelty");
    close(report.diversity.mean.unwrap(), 1.0, 0.05, "diversity");
    assert!(report.summary_line().contains("n/a"));
}

#[test]
fn a_stop_request_ends_the_evaluation_without_a_report() {
    let (train, reference) = (separated(50, 0), separated(20, 1));
    let stopped = evaluate(
        &QualityInputs {
            train: &train,
            reference: &reference,
            reference_kind: ReferenceKind::TestSplit,
            generated: &reference,
            seed: 0,
            classifier: TrainSettings::default(),
            shape: None,
        },
        &|| true,
    )
    .unwrap();
    assert!(stopped.is_none());
}

/// MNIST (the first 10,000 training images; test images 0..4000, even ones as the reference and
/// odd ones as "generated", since the two halves of MNIST's test set come from different
/// writers): real images must score as real.
#[test]
fn real_mnist_test_images_score_as_real() {
    let Some(datasets) = io::shared_datasets_dir().filter(|d| d.join("mnist").is_dir()) else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but the shared datasets are missing"
        );
        eprintln!("no ../shared/datasets/mnist (set RMLD_DATASETS): skipping real_mnist_test_images_score_as_real");
        return;
    };
    let mnist = datasets.join("mnist");
    let train_set = Dataset::load(&mnist).unwrap();
    let train_set = train_set.subset(&(0..10_000).collect::<Vec<_>>());
    let test_set = Dataset::load_test_split(&mnist).unwrap().unwrap();
    let fit = LabelledImages::from_dataset(&train_set, 255.0).unwrap();
    let test = LabelledImages::from_dataset(&test_set, 255.0).unwrap();
    let reference = test.subset(&(0..4000).step_by(2).collect::<Vec<_>>());
    let fresh = test.subset(&(1..4000).step_by(2).collect::<Vec<_>>());
    let report = judge(&fit, &reference, &fresh);
    let accuracy = report.classifier_test_accuracy.unwrap();
    assert!(
        accuracy > 0.85,
        "softmax regression on 10,000 MNIST images: {accuracy}"
    );
    // 2,000 images each: binomial error of each accuracy about 0.7 points.
    close(
        report.label_preservation.as_ref().unwrap().overall,
        accuracy,
        0.03,
        "MNIST test images' label preservation",
    );
    close(
        report.novelty.overall.median,
        1.0,
        0.05,
        "MNIST median novelty",
    );
    close(
        report.novelty.overall.mean,
        report.reference_scores.novelty_mean,
        0.05,
        "MNIST mean novelty",
    );
    assert!(report.novelty.overall.near_copy_fraction < 0.01);
    close(report.diversity.mean.unwrap(), 1.0, 0.05, "MNIST diversity");
}

// ---- the commands ----

fn rmld(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rmld"))
        .args(args)
        .output()
        .expect("the rmld binary runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The embedded digits' rows `rows` as 8-bit IDX images and labels in `dir`.
fn write_digits(dir: &Path, stem: &str, rows: &[usize], labels: Option<Vec<u8>>) {
    let digits = Dataset::embedded();
    let Pixels::U8(raw) = &digits.pixels else {
        panic!("the digits are 8-bit")
    };
    let pixels: Vec<u8> = rows
        .iter()
        .flat_map(|&i| &raw[i * 64..(i + 1) * 64])
        .map(|&v| (v as f32 * 255.0 / 16.0).round() as u8)
        .collect();
    io::write_idx_images(
        &dir.join(format!("{stem}-images-idx3-ubyte.gz")),
        rows.len(),
        8,
        8,
        &pixels,
    )
    .unwrap();
    let all = digits.labels.unwrap();
    let labels = labels.unwrap_or_else(|| rows.iter().map(|&i| all[i] as u8).collect());
    io::write_idx_labels(&dir.join(format!("{stem}-labels-idx1-ubyte.gz")), &labels).unwrap();
}

fn finite(value: &serde_json::Value, what: &str) -> f64 {
    let v = value
        .as_f64()
        .unwrap_or_else(|| panic!("{what} is not a number: {value}"));
    assert!(v.is_finite(), "{what} = {v}");
    v
}

#[test]
fn quality_command_on_the_embedded_digits() {
    let dir = tempfile::tempdir().unwrap();
    // 300 real digits as "generated" images; labels found beside the images.
    write_digits(dir.path(), "gen", &(0..300).collect::<Vec<_>>(), None);
    let images = dir.path().join("gen-images-idx3-ubyte.gz");
    let out = dir.path().join("report.json");
    let run = rmld(&[
        "quality",
        "--generated",
        images.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("quality: label preservation"), "{stdout}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let q = &report["quality"];
    assert_eq!(q["reference"], "held-out 10% of training");
    assert_eq!(q["counts"]["generated"], 300);
    assert_eq!(
        q["counts"]["reference"].as_u64().unwrap() + q["counts"]["train"].as_u64().unwrap(),
        1797
    );
    let accuracy = finite(&q["classifier_test_accuracy"], "test accuracy");
    assert!(accuracy > 0.85, "optdigits accuracy {accuracy}");
    let preserved = finite(&q["label_preservation"]["overall"], "label preservation");
    assert!(preserved > 0.85);
    // These are training images, except the ~10% held out as the reference: ~90% near copies
    // (not exact copies: 8-bit pixels v·255/16 rounded, against v/16 for the training images).
    let copies = finite(&q["novelty"]["near_copy_fraction"], "near copies");
    assert!((0.8..=0.97).contains(&copies), "near copies {copies}");
    assert!(finite(&q["novelty"]["quantiles"]["q10"], "q10") < 0.01);
    finite(&q["diversity"]["mean"], "diversity");
    finite(&q["reference_scores"]["diversity"], "reference diversity");
    assert_eq!(
        finite(&q["reference_scores"]["novelty_median"], "median"),
        1.0
    );

    // A second run onto the same report is refused, exit 2, the file untouched; with --force it
    // replaces it.
    let written = std::fs::read(&out).unwrap();
    let again = [
        "quality",
        "--generated",
        images.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    assert_refused(&again, &["--force", out.to_str().unwrap()]);
    assert_eq!(
        std::fs::read(&out).unwrap(),
        written,
        "the refused run wrote"
    );
    let forced = rmld(&[&again[..], &["--force"]].concat());
    assert!(forced.status.success(), "stderr: {}", stderr(&forced));
    let replaced: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(replaced["quality"]["counts"], q["counts"]);

    // --json prints the same document; --classes keeps two classes.
    let labels = dir.path().join("gen-labels-idx1-ubyte.gz");
    let run = rmld(&[
        "quality",
        "--generated",
        images.to_str().unwrap(),
        "--generated-labels",
        labels.to_str().unwrap(),
        "--classes",
        "3,7",
        "--json",
    ]);
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    let printed: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(printed["quality"]["counts"]["classes"], 2);
    let per_class = printed["quality"]["novelty"]["per_class"]
        .as_array()
        .unwrap();
    let shown: Vec<u64> = per_class
        .iter()
        .map(|c| c["label"].as_u64().unwrap())
        .collect();
    assert_eq!(shown, vec![3, 7]);
}

#[test]
fn quality_command_uses_the_test_split_of_a_folder() {
    // An MNIST-style folder made of the embedded digits: 1,500 training and 297 test images.
    let dir = tempfile::tempdir().unwrap();
    write_digits(dir.path(), "train", &(0..1500).collect::<Vec<_>>(), None);
    write_digits(dir.path(), "t10k", &(1500..1797).collect::<Vec<_>>(), None);
    let data = dir.path().to_str().unwrap();
    let test_images = dir.path().join("t10k-images-idx3-ubyte.gz");
    // The test images themselves judged as generated: the calibration, exactly.
    let run = rmld(&[
        "quality",
        "--data",
        data,
        "--generated",
        test_images.to_str().unwrap(),
        "--json",
    ]);
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let q = &report["quality"];
    assert_eq!(q["reference"], "test split");
    assert_eq!(q["counts"]["train"], 1500);
    assert_eq!(q["counts"]["reference"], 297);
    assert_eq!(
        q["label_preservation"]["overall"],
        q["classifier_test_accuracy"]
    );
    let median = finite(&q["novelty"]["median"], "median novelty");
    assert!((median - 1.0).abs() < 1e-12, "{median}");
    // --test-limit keeps the first 100 test images as the reference.
    let run = rmld(&[
        "quality",
        "--data",
        data,
        "--generated",
        test_images.to_str().unwrap(),
        "--test-limit",
        "100",
        "--json",
    ]);
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(report["quality"]["counts"]["reference"], 100);
    assert_refused(
        &[
            "quality",
            "--data",
            data,
            "--generated",
            test_images.to_str().unwrap(),
            "--test-limit",
            "0",
        ],
        &["--test-limit"],
    );
}

fn assert_refused(args: &[&str], needles: &[&str]) {
    let run = rmld(args);
    let message = stderr(&run);
    assert_eq!(
        run.status.code(),
        Some(2),
        "{args:?}: expected exit 2; stderr: {message}"
    );
    assert!(!message.contains("panicked"), "{args:?}: {message}");
    for needle in needles {
        assert!(
            message.contains(needle),
            "{args:?}: {needle:?} not in {message}"
        );
    }
}

#[test]
fn quality_command_refuses_bad_input_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    write_digits(dir.path(), "gen", &(0..20).collect::<Vec<_>>(), None);
    let images = path("gen-images-idx3-ubyte.gz");
    // Counts of images and labels differ.
    let short = path("short-labels.npy");
    io::write_npy_i64(Path::new(&short), &[10], &[1; 10]).unwrap();
    assert_refused(
        &[
            "quality",
            "--generated",
            &images,
            "--generated-labels",
            &short,
        ],
        &["short-labels.npy", "10 labels", "20"],
    );
    // A generated label that is not a training class.
    let odd = path("odd-labels.npy");
    let mut labels = vec![1i64; 20];
    labels[7] = 42;
    io::write_npy_i64(Path::new(&odd), &[20], &labels).unwrap();
    assert_refused(
        &[
            "quality",
            "--generated",
            &images,
            "--generated-labels",
            &odd,
        ],
        &["odd-labels.npy", "label 42", "image 7"],
    );
    // Images of another size than the training images (10×10 against 8×8).
    let ones = path("ones.npy");
    io::write_npy_i64(Path::new(&ones), &[20], &[1; 20]).unwrap();
    let big = path("big.npy");
    io::write_npy_u8(Path::new(&big), &[20, 10, 10], &[0; 2000]).unwrap();
    assert_refused(
        &["quality", "--generated", &big, "--generated-labels", &ones],
        &["big.npy", "100 values", "64"],
    );
    // No labels anywhere.
    let bare = path("bare.npy");
    io::write_npy_u8(Path::new(&bare), &[20, 8, 8], &[0; 1280]).unwrap();
    assert_refused(
        &["quality", "--generated", &bare],
        &["--generated-labels", "bare.npy"],
    );
    // Float images on the 0..255 scale without --generated-scale.
    let floats = path("floats.npy");
    io::write_npy_f32(Path::new(&floats), &[20, 64], &vec![200.0; 1280]).unwrap();
    assert_refused(
        &[
            "quality",
            "--generated",
            &floats,
            "--generated-labels",
            &ones,
        ],
        &["floats.npy", "--generated-scale"],
    );
    // ... which are accepted with it.
    let run = rmld(&[
        "quality",
        "--generated",
        &floats,
        "--generated-labels",
        &ones,
        "--generated-scale",
        "255",
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    // Images normalised to [-0.5, 0.5], and 8-bit pixels judged at the digits' scale 16: off
    // their scale, and judged as they were their metrics meant nothing.
    let centred = path("centred.npy");
    let values: Vec<f32> = (0..1280).map(|i| (i % 11) as f32 / 10.0 - 0.5).collect();
    io::write_npy_f32(Path::new(&centred), &[20, 64], &values).unwrap();
    let labelled = ["--generated-labels", ones.as_str()];
    assert_refused(
        &[&["quality", "--generated", &centred][..], &labelled].concat(),
        &["centred.npy", "-0.5", "below 0", "[-1, 1]"],
    );
    let bright = path("bright.npy");
    io::write_npy_u8(Path::new(&bright), &[20, 64], &[255; 1280]).unwrap();
    let scale = ["--generated-scale", "16"];
    assert_refused(
        &[&["quality", "--generated", &bright][..], &labelled, &scale].concat(),
        &["bright.npy", "reach 255", "--generated-scale of 16"],
    );
    // A class without training images; a missing file.
    assert_refused(
        &["quality", "--generated", &images, "--classes", "3,42"],
        &["--classes", "42"],
    );
    assert_refused(
        &["quality", "--generated", &path("missing.idx")],
        &["missing.idx"],
    );
}

#[test]
fn augment_reports_quality_in_report_json() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = rmld(&[
        "augment",
        "--preset",
        "paper",
        "--backend",
        "cpu",
        "--out",
        out.to_str().unwrap(),
        "--samples",
        "2",
        "--lasso-iterations",
        "30",
        "--classes",
        "0,1,2",
        "--no-original-codes",
    ]);
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("quality: label preservation"), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    let q = &report["quality"];
    assert_eq!(q["reference"], "held-out 10% of training");
    assert_eq!(q["counts"]["generated"], report["generated_count"]);
    assert_eq!(q["counts"]["classes"], 3);
    let preserved = finite(&q["label_preservation"]["overall"], "label preservation");
    assert!((0.0..=1.0).contains(&preserved));
    finite(&q["classifier_test_accuracy"], "classifier accuracy");
    assert!(finite(&q["novelty"]["median"], "novelty") >= 0.0);
    finite(&q["novelty"]["mean"], "novelty mean");
    finite(&q["novelty"]["near_copy_fraction"], "near copies");
    for class in q["diversity"]["per_class"].as_array().unwrap() {
        finite(&class["ratio"], "class diversity");
    }
    finite(&q["diversity"]["mean"], "diversity");
    // The sampler's own numbers stay where they were.
    finite(&report["acceptance_rate"], "acceptance");
    finite(&report["mean_distance_moved"], "distance moved");

    let again = dir.path().join("again");
    let run = rmld(&[
        "augment",
        "--preset",
        "paper",
        "--backend",
        "cpu",
        "--out",
        again.to_str().unwrap(),
        "--samples",
        "2",
        "--lasso-iterations",
        "30",
        "--classes",
        "0,1",
        "--no-original-codes",
        "--no-quality",
    ]);
    assert!(run.status.success(), "stderr: {}", stderr(&run));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(again.join("report.json")).unwrap()).unwrap();
    assert!(report.get("quality").is_none());
}

/// `--test-limit` cuts a test split; where there is none (the embedded digits: the reference
/// is a held-out part of the training images) or nothing reads it, it would cut nothing, and
/// was ignored without a word: refused by name, before anything is read or written.
#[test]
fn a_test_limit_with_no_test_split_to_cut_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let generated = dir.path().join("generated.npy");
    let quality = ["quality", "--generated", generated.to_str().unwrap()];
    let needles = [
        "--test-limit",
        "no test split beside the embedded digits",
        "leave it out",
    ];
    assert_refused(&[&quality[..], &["--test-limit", "5"]].concat(), &needles);
    let out = dir.path().join("augmented");
    let augment = [
        "augment",
        "--backend",
        "cpu",
        "--out",
        out.to_str().unwrap(),
    ];
    assert_refused(&[&augment[..], &["--test-limit", "5"]].concat(), &needles);
    let unread = [&augment[..], &["--test-limit", "5", "--no-quality"]].concat();
    assert_refused(&unread, &["--test-limit", "which this run does not read"]);
    assert!(!out.exists(), "a refused augment made {}", out.display());
}

/// Image i moves right, left, down, up as i % 4, the edge repeated into the emptied pixels
/// (scripts/quality/metrics.py's twin is checked against the same values).
#[test]
fn moved_one_pixel_moves_each_image_in_turn_and_repeats_the_edge() {
    let images: Vec<f32> = (0..5)
        .flat_map(|i| (0..6).map(move |j| (10 * i + j) as f32))
        .collect();
    let moved = moved_one_pixel(&images, (2, 3));
    let want: [[f32; 6]; 5] = [
        [0., 0., 1., 3., 3., 4.],
        [11., 12., 12., 14., 15., 15.],
        [20., 21., 22., 20., 21., 22.],
        [33., 34., 35., 33., 34., 35.],
        [40., 40., 41., 43., 43., 44.],
    ];
    let mismatches: Vec<String> = moved
        .iter()
        .zip(want.iter().flatten())
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(k, (a, b))| format!("image {} pixel {}: {a}, want {b}", k / 6, k % 6))
        .collect();
    assert!(mismatches.is_empty(), "{}", mismatches.join("; "));
}

/// With the images' shape the report gives the judge's accuracy on its training images moved
/// one pixel: all of them for images a move leaves in their class (each class one flat grey),
/// about chance for random patterns a move scrambles; none without a shape or with one that
/// does not fit.
#[test]
fn the_judge_is_calibrated_by_its_training_images_moved_one_pixel() {
    let evaluate_with = |train: &LabelledImages, reference: &LabelledImages, shape| {
        evaluate(
            &QualityInputs {
                train,
                reference,
                reference_kind: ReferenceKind::TestSplit,
                generated: reference,
                seed: 1,
                classifier: TrainSettings::default(),
                shape,
            },
            &never,
        )
        .unwrap()
        .expect("not stopped")
    };
    let greys = |draw: u32| {
        let (d, per_class) = (32, 40);
        let mut noise = vec![0f32; 4 * per_class * d];
        Stream::new(3, 8, draw, 0, Purpose::InitNoise).fill_normal(&mut noise);
        let labels: Vec<u32> = (0..4 * per_class).map(|i| i as u32 % 4).collect();
        let values = (0..4 * per_class * d)
            .map(|k| 0.2 * (labels[k / d] + 1) as f32 + 0.01 * noise[k])
            .collect();
        LabelledImages::new(d, values, labels).unwrap()
    };
    let (greys, other_greys) = (greys(0), greys(1));
    let report = evaluate_with(&greys, &other_greys, Some((4, 8)));
    assert_eq!(
        report.reference_scores.moved_one_pixel_label_preservation,
        Some(1.0)
    );
    assert!(report.summary_line().contains("moved one pixel 100.0%"));
    let moved = evaluate_with(&separated(60, 0), &separated(20, 1), Some((4, 8)))
        .reference_scores
        .moved_one_pixel_label_preservation
        .unwrap();
    assert!(
        moved < 0.6,
        "moved random patterns kept {moved} of their labels"
    );
    for shape in [None, Some((3, 3))] {
        let report = evaluate_with(&greys, &other_greys, shape);
        assert_eq!(
            report.reference_scores.moved_one_pixel_label_preservation,
            None
        );
        assert!(!report.summary_line().contains("moved"));
    }
}
