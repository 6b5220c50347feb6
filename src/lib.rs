//! rmld: Randomized Measurement Langevin Dynamics (RMLD, also SpHMC) on the CPU and the GPU.
//!
//! Everything the `rmld` command line does is in [`session`]: a settings struct per run
//! (with the command line's defaults and presets), a runner, and an [`Observer`] for progress
//! and stop requests. An augmentation of the embedded digits, on the CPU:
//!
//! ```
//! use rmld::session::Silent;
//! use rmld::{AugmentSettings, Augmenter, BackendChoice};
//!
//! let dir = tempfile::tempdir()?;
//! let mut settings = AugmentSettings::paper(); // or ::quality(), the command line's default
//! settings.limit = Some(200); // the first 200 embedded digits
//! settings.dynamics.batch = 8;
//! settings.dynamics.lasso_iterations = 20;
//! settings.no_quality = true;
//! settings.problem.backend = BackendChoice::Cpu;
//! settings.problem.out = dir.path().join("augmented");
//! let outcome = Augmenter::new(settings).run(&Silent)?;
//! assert!(!outcome.interrupted);
//! assert!(outcome.report["generated_count"].as_u64().unwrap() > 0);
//! assert!(dir.path().join("augmented/train-images-idx3-ubyte.gz").exists());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod error;
pub mod io;
pub mod rng;

pub use error::{Error, Result};
pub mod backend;
pub mod diagnostics;
pub mod fuzzing;
pub mod methods;
pub mod model;
pub mod orchestrator;
pub mod session;

pub use session::{
    AugmentMethod, AugmentSettings, Augmenter, BackendChoice, Bench, BenchSettings,
    DynamicsOptions, EncodeSettings, Encoder, Notice, Observer, Outcome, Phase, Preset,
    ProblemSettings, SampleSettings, Sampler, Silent,
};
