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

mod amortize;
mod augment;
mod bench;
mod dictionary;
mod eda_experiment;
mod encode;
mod merge;
pub(crate) use crate::orchestrator::observer;
mod outputs;
mod pipeline;
pub(crate) use crate::orchestrator::problem;
pub(crate) mod quality;
mod resume;
mod sample;
mod settings;
mod warm_up;

pub use crate::io::default_code_cache;
pub use crate::io::shards::{
    FileEntry, Manifest, Part, Shard, WarmUpManifest, MANIFEST, WARM_UP_MANIFEST,
};
pub use crate::learn::{
    group_names, synthetic_eda, DictionaryHyper, Learned, SignalResult, DICTIONARY_CHECKPOINT,
    PAPER_SYNTHETIC,
};
pub use crate::measure::{Ceiling, PeerRow, Phases, Row};
pub use crate::orchestrator::draw_stats::{SAMPLE_STATS_DIR, SAMPLE_STATS_FILES};
pub use crate::orchestrator::estimate::{estimate_augment, AugmentWork, Estimate};
pub use amortize::{
    load_model, partial_path, save_model, teacher_dir, AmortizeSettings, AmortizeTrainer,
};
pub use augment::Augmenter;
pub use bench::{Bench, BenchBackends, BenchOutcome, BenchSettings, BenchTile};
pub use dictionary::{
    family_for, learn_signals, DictionaryLearner, DictionarySettings, FamilyKind,
};
pub use eda_experiment::{eda_experiment, EdaExperimentSettings};
pub use encode::Encoder;
pub use merge::{merge, merge_naming_data};
pub use observer::{Notice, Observer, Phase, Silent};
pub use pipeline::AUGMENT_PHASES;
pub use problem::{build_problem, load_problem, make_backend, make_kernel_backend, Problem};
pub use quality::{judge_images, QualitySettings};
pub use sample::{lock_output, RunLock, Sampler, CHECKPOINT, LOCK};
pub use settings::lasso_tolerance_default;
pub use settings::{
    AugmentMethod, AugmentSettings, BackendChoice, DynamicsOptions, EncodeSettings, Preset,
    ProblemSettings, SampleSettings, SamplerChoice, ScaleFit,
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
    /// A sampling run's per-iteration MH statistics (`None` for other runs).
    pub draw_stats: Option<DrawStats>,
}

/// Per outer iteration and chain, the statistics of a sampling run's Metropolis-Hastings
/// decisions (for per-draw diagnostics, e.g. ArviZ's `sample_stats`). Row `i` (of `chains`
/// values) is outer iteration `(i + 1) * stride`: every iteration while the run is short, every
/// `stride`-th once it passes twice `orchestrator::TRACE_CAP` iterations.
#[derive(Clone, Debug, Default)]
pub struct DrawStats {
    /// Chains per row.
    pub chains: usize,
    /// Outer iterations between rows (1: every iteration).
    pub stride: u32,
    /// log α of each MH decision (0 where MH is off).
    pub log_alpha: Vec<f64>,
    /// U(X) − const of each chain entering the iteration.
    pub energy: Vec<f32>,
}
