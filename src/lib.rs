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

//! # The public API
//!
//! The layers are namespaces whose files are private, each re-exporting what it offers
//! (`pub use`), as nuts-rs and candle do: [`model`] (observations, dictionary, prior,
//! likelihood, target), [`methods`] (RMLD, MALA, HMC as programs of chain operations),
//! [`backend`] (the CPU and GPU backends; [`backend::cpu`] also publishes the CPU kernels, the
//! reference twins of the WGSL kernels), [`orchestrator`] (the sampling loop, checkpoints),
//! [`learn`] (dictionary learning) and [`amortize`] (learned samplers),
//! [`session`] (whole runs: sample, augment, encode, bench), and the leaves [`io`],
//! [`diagnostics`] and [`rng`]. The items most runs need are re-exported here at the root.

#![warn(missing_docs)]

mod error;

pub(crate) mod alloc;

pub mod amortize;
pub mod backend;
pub mod diagnostics;
#[doc(hidden)]
pub mod fuzzing;
pub mod io;
pub mod learn;
pub mod math;
pub mod measure;
pub mod methods;
pub mod model;
pub mod orchestrator;
pub mod rng;
pub mod session;

/// This build's identity: an xxh3-64 (16 hex digits) of the sources that decide what rmld
/// computes (`build.rs`). Reports, checkpoints, shards and warm-ups carry it; `rmld resume`,
/// `rmld merge` and a shard's warm-up refuse another build's files, whose draws may differ.
pub const BUILD: &str = env!("RMLD_BUILD");

/// A build as a refusal names it: `rmld build <hash>`, or an older rmld's when none was
/// recorded (empty).
pub(crate) fn build_name(build: &str) -> String {
    if build.is_empty() {
        "an older rmld, which did not record its build".into()
    } else {
        format!("rmld build {build}")
    }
}

pub use backend::{Backend, CpuBackend};
#[cfg(feature = "gpu")]
pub use backend::{GpuBackend, GpuContext, GpuOptions};
pub use error::{Error, Result};
pub use methods::{DynamicsSettings, Method, MhRule};
pub use model::{Dictionary, Observations, Prior, Target, TargetKind};
pub use orchestrator::{Init, SamplerSettings};
pub use session::{
    AugmentMethod, AugmentSettings, Augmenter, BackendChoice, Bench, BenchSettings,
    DynamicsOptions, EncodeSettings, Encoder, Notice, Observer, Outcome, Phase, Preset,
    ProblemSettings, SampleSettings, Sampler, Silent,
};
