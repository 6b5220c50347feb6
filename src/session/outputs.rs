//! The files each command writes into its output folder (checked before any work by `io::output_folder`).

/// What `rmld augment` writes into its output folder.
pub const AUGMENT_OUTPUTS: &[&str] = &[
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "generated-images-idx3-ubyte.gz",
    "generated-labels-idx1-ubyte.gz",
    "generated-codes.npy",
    "generated-labels.npy",
    "generated.png",
    "codes.npy",
    "labels.npy",
    "test-codes.npy",
    "test-labels.npy",
    "dictionary.npy",
    "report.json",
];

/// The stamp a training's teacher (`MODEL.teacher/`) publishes with augment's files: the
/// settings that made them, so that a later training of the same settings reuses them.
pub const TEACHER_STAMP: &str = "teacher.json";

/// What `rmld sample` writes into its output folder.
pub const SAMPLE_OUTPUTS: &[&str] = &[
    "codes.npy",
    "images.npy",
    "dictionary.npy",
    "samples.png",
    "report.json",
    "checkpoint.rmld",
    "sample_stats/acceptance_rate.npy",
    "sample_stats/energy.npy",
    "sample_stats/step_size.npy",
    "sample_stats/diverging.npy",
    "sample_stats/n_steps.npy",
];

/// What `rmld encode` writes into its output folder.
pub const ENCODE_OUTPUTS: &[&str] = &[
    "codes.npy",
    "reconstructions.npy",
    "images.npy",
    "dictionary.npy",
    "reconstructions.png",
    "report.json",
];

/// What `rmld bench` writes into its output folder.
pub const BENCH_OUTPUTS: &[&str] = &["bench.json", "bench.csv", "bench.png"];

/// What `rmld dictionary learn` writes into its output folder (its checkpoint, while it runs,
/// is not an output: a run resumes from it).
pub const DICTIONARY_OUTPUTS: &[&str] = &["dictionary.npy", "atoms.png", "report.json"];

/// What `rmld dictionary eda-experiment` writes into its output folder (the CLI draws fig3.png
/// from the report afterwards).
pub const EDA_EXPERIMENT_OUTPUTS: &[&str] = &["atoms.png", "fig3.csv", "fig3.png", "report.json"];
