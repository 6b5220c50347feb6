//! What a user runs (sample and resume, augment, encode, judge, bench), from validated settings.
//!
//! Sampling with checkpoints and resume, class-conditional augmentation, encoding, judging
//! generated images and benchmarking, from settings structs with documented defaults and
//! presets, validated once, on the backend chosen by [`BackendChoice`].
//!
//! Progress, notices and stop requests go through an [`Observer`]; the library prints nothing.
//! Every run writes its outputs into its settings' `problem.out` folder and returns an
//! [`Outcome`]: the report it wrote as report.json and a short summary.
//!
//! ```no_run
//! use rmld::session::{Sampler, SampleSettings, Silent};
//!
//! let mut settings = SampleSettings::default();
//! settings.chains = 8;
//! settings.problem.out = "my-run".into();
//! let outcome = Sampler::new(settings).run(&Silent)?;
//! println!("{}", outcome.summary.join("\n"));
//! # Ok::<(), rmld::Error>(())
//! ```

mod augment;
pub mod bench;
mod encode;
mod memory;
mod observer;
mod outputs;
mod problem;
pub mod quality;
pub mod report;
mod sample;
mod settings;

pub use augment::Augmenter;
pub use bench::{Bench, BenchBackends, BenchOutcome, BenchSettings};
pub use encode::Encoder;
pub use observer::{Notice, Observer, Phase, Silent};
pub use problem::{build_problem, load_problem, make_backend, make_kernel_backend, Problem};
pub use quality::{judge_images, QualitySettings};
pub use sample::{lock_output, Sampler, CHECKPOINT, LOCK};
pub use settings::{
    AugmentMethod, AugmentSettings, BackendChoice, DynamicsOptions, EncodeSettings, Preset,
    PriorKind, ProblemSettings, SampleSettings,
};

/// How a run ended, when it did not fail.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// True when the observer asked to stop before the run was complete (outputs so far, and for
    /// sampling a checkpoint, are written).
    pub interrupted: bool,
    /// The run's report, as written to report.json (`Null` when nothing was written).
    pub report: serde_json::Value,
    /// A line or two summing the run up (what `rmld` prints on stdout).
    pub summary: Vec<String>,
}
