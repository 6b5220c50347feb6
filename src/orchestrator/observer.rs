//! How a run reports progress and notices and learns that it should stop: the `Observer` trait.

use std::path::PathBuf;

use crate::measure::Ceiling;
use crate::Error;

/// A stretch of work with a progress display: sampling, encoding, re-encoding, quality metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phase {
    /// What is being done ("sampling", "encoding", "re-encoding", "sample quality").
    pub name: &'static str,
    /// How many units the phase has; `None` when unknown (a spinner).
    pub len: Option<u64>,
    /// What a unit is, when worth saying ("outer iterations"); empty otherwise.
    pub unit: &'static str,
}

/// Something a run tells its user without failing.
#[derive(Debug)]
#[non_exhaustive]
pub enum Notice {
    /// `BackendChoice::Auto` found no usable GPU and runs on the CPU.
    NoUsableGpu {
        /// Why the GPU could not be used.
        reason: String,
    },
    /// `BackendChoice::Auto` found only a software renderer and runs on the CPU, which is faster.
    SoftwareAdapter {
        /// The adapter's name.
        name: String,
    },
    /// A resumed run continues from its checkpoint.
    Resuming {
        /// The run's output folder.
        out: PathBuf,
        /// Outer iterations already done.
        completed: u32,
        /// Outer iterations in all.
        samples: u32,
    },
    /// A dictionary learning continues from the checkpoint an earlier run of it left.
    LearningResumed {
        /// The run's output folder (it holds the checkpoint).
        out: PathBuf,
        /// Signals already learned.
        done: usize,
        /// Signals in all.
        signals: usize,
    },
    /// A sampling run stopped early: its outputs and a checkpoint are written.
    SampleInterrupted {
        /// Outer iterations done.
        completed: u32,
        /// Outer iterations in all.
        samples: u32,
        /// The checkpoint written.
        checkpoint: PathBuf,
        /// The run's output folder (to resume).
        out: PathBuf,
    },
    /// An augmentation stopped early. It cannot be resumed, so no output is kept: only
    /// report.json, which says so (`"interrupted": true`, the phase, `"resumable": false`), or
    /// nothing when the folder holds an earlier run's output, which is kept as it was.
    AugmentInterrupted {
        /// The phase it stopped in ("sampling", ...).
        phase: &'static str,
        /// The run's output folder.
        out: PathBuf,
        /// True when the folder's earlier output was kept (and no report.json written).
        kept_earlier: bool,
    },
    /// A run expected to take longer than a minute starts: how long, where, and how that was
    /// estimated.
    Estimate {
        /// Estimated seconds.
        seconds: f64,
        /// The device it runs on.
        device: String,
        /// How the estimate was made.
        how: String,
    },
    /// An encoding stopped early: nothing is written (it has nothing to resume).
    EncodeInterrupted,
    /// An earlier run on the output folder stopped before it finished publishing its outputs
    /// (killed, a power loss, a full disk): what this run found of it and did.
    StoppedRunFound {
        /// The output folder.
        out: PathBuf,
        /// A publication stopped half-way, completed now (the staging folder it came from).
        completed: Option<PathBuf>,
        /// Staging folders of runs stopped before publishing, removed (nothing of them had
        /// been published).
        removed: Vec<PathBuf>,
        /// The staging folder whose checkpoint `rmld resume` continues.
        resumed: Option<PathBuf>,
    },
    /// A code cache entry could not be used (damaged, cut short, another shape) or written;
    /// the codes are encoded instead.
    CodeCacheIgnored {
        /// The entry.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// Float data was taken as pixels of its maximum's full scale and scaled to
    /// [0, pixel_max]: right for images stored as floats, wrong for real values (a
    /// regression's responses), which `--data-scale raw` takes as they are.
    FloatDataScaled {
        /// Where the data came from.
        source: PathBuf,
        /// Its largest value, taken as a full-intensity pixel.
        full_scale: f32,
        /// What that value becomes in model units.
        pixel_max: f32,
    },
    /// An augmentation for classifiers (the quality preset) generates fewer new images than
    /// the data has: too few to change a classifier trained on them (docs/usefulness.md).
    FewNewImages {
        /// New images the run generates.
        generated: usize,
        /// Originals they are drawn from.
        originals: usize,
    },
    /// `limit` cut the data to its first images, and they hold fewer classes than it has (a
    /// folder of one file per class, say, is in class order).
    LimitLeavesClasses {
        /// The images kept.
        limit: usize,
        /// Classes among them.
        kept: usize,
        /// Classes in the whole data.
        classes: usize,
    },
    /// The sample-quality metrics could not be computed (the report says why).
    QualitySkipped {
        /// What was wrong with their inputs.
        error: Error,
    },
    /// A test split exists but cannot serve as the quality reference; a held-out part of the
    /// training images is used instead.
    TestSplitUnusable {
        /// The test split's images.
        source: PathBuf,
        /// What is wrong with it ("has no labels", ...).
        problem: String,
    },
    /// The run finished with a sign of a degenerate result (`diagnostics::degenerate`): its
    /// outputs are written, and report.json's `degenerate` says which sign.
    Degenerate {
        /// The warning, what it means and what to look at.
        warning: String,
    },
    /// A benchmark starts: its problem and data.
    BenchStarted {
        /// Dimension d.
        d: usize,
        /// Atoms p.
        p: usize,
        /// Minibatch m.
        batch: u32,
        /// Steps T.
        steps: u32,
        /// Timed outer iterations.
        outer: u32,
        /// Where the data came from.
        source: String,
    },
    /// A benchmark measured a backend's ceiling (GPU: with the clock it times by).
    BenchCeiling {
        /// The ceiling.
        ceiling: Ceiling,
        /// GPU: which clock the measurements use.
        timing: Option<String>,
    },
    /// A benchmark measured a backend at a chain count.
    BenchMeasured {
        /// The backend's kind.
        backend: String,
        /// Chains C.
        chains: usize,
        /// Chain-steps per second.
        chain_steps_per_second: f64,
        /// CPU: GFLOP/s of the two products alone.
        products_gflops: Option<f64>,
    },
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Notice::NoUsableGpu { reason } => {
                write!(f, "no usable GPU ({reason}); running on the CPU")
            }
            Notice::SoftwareAdapter { name } => write!(
                f,
                "the only GPU adapter is a software renderer ({name}); running on the CPU, which is faster"
            ),
            Notice::LearningResumed { out, done, signals } => write!(
                f,
                "continuing from the checkpoint in {}: {done} of {signals} signals already learned",
                out.display()
            ),
            Notice::Resuming {
                out,
                completed,
                samples,
            } if completed >= samples => write!(
                f,
                "continuing {}: all {samples} outer iterations were done before it stopped; \
                 writing its outputs",
                out.display()
            ),
            Notice::Resuming {
                out,
                completed,
                samples,
            } => write!(
                f,
                "continuing {} from outer iteration {completed} of {samples}",
                out.display()
            ),
            Notice::SampleInterrupted {
                completed,
                samples,
                checkpoint,
                ..
            } => write!(
                f,
                "interrupted after outer iteration {completed} of {samples}: outputs and {} written",
                checkpoint.display()
            ),
            Notice::AugmentInterrupted {
                phase,
                out,
                kept_earlier: false,
            } => write!(
                f,
                "interrupted during {phase}; an augmentation cannot be resumed, so no output is \
                 kept in {} (report.json says where it stopped): run it again, with `force` to \
                 reuse the folder",
                out.display()
            ),
            Notice::AugmentInterrupted { phase, out, .. } => write!(
                f,
                "interrupted during {phase}; an augmentation cannot be resumed, so this run \
                 keeps no output, and the earlier output in {} is kept as it was: run it again, \
                 with `force` to replace it",
                out.display()
            ),
            Notice::Estimate {
                seconds,
                device,
                how,
            } => write!(
                f,
                "this run will take about {} on {device} (estimated from its settings: {how})",
                duration(*seconds)
            ),
            Notice::EncodeInterrupted => write!(
                f,
                "encoding interrupted; nothing written (run it again to encode)"
            ),
            Notice::StoppedRunFound { .. } => self.fmt_stopped_run(f),
            Notice::FewNewImages {
                generated,
                originals,
            } => write!(
                f,
                "{generated} new images for {originals} originals (one per {:.1}) are too few to \
                 change a classifier trained on them (docs/usefulness.md); four per original \
                 (`ratio` 1:4), or `balance` auto where the classes are imbalanced, are what help",
                *originals as f64 / (*generated).max(1) as f64
            ),
            Notice::LimitLeavesClasses {
                limit,
                kept,
                classes,
            } => write!(
                f,
                "`limit` {limit} keeps the data's first {limit} images, which hold {kept} of its \
                 {classes} classes (the images are stored in class order); a larger `limit` \
                 takes the others"
            ),
            Notice::QualitySkipped { error } => write!(f, "no quality metrics: {error}"),
            Notice::Degenerate { warning } => write!(f, "{warning}"),
            Notice::FloatDataScaled {
                source,
                full_scale,
                pixel_max,
            } => write!(
                f,
                "{}: float data up to {full_scale} taken as pixels of that full scale (×{} to \
                 [0, {pixel_max}]); real values (a regression's responses) are taken as they \
                 are with --data-scale raw",
                source.display(),
                pixel_max / full_scale
            ),
            Notice::CodeCacheIgnored { path, reason } => write!(
                f,
                "code cache entry {} not used ({reason}); encoding instead",
                path.display()
            ),
            Notice::BenchStarted { .. }
            | Notice::BenchCeiling { .. }
            | Notice::BenchMeasured { .. } => self.fmt_bench(f),
            Notice::TestSplitUnusable { source, problem } => write!(
                f,
                "the test split {} {problem}; holding out 10% of the training images as the quality reference instead",
                source.display()
            ),
        }
    }
}

impl Notice {
    /// The benchmark's notices, as `Display` writes them.
    /// [`Notice::StoppedRunFound`]: what was done with what stopped runs left.
    fn fmt_stopped_run(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Notice::StoppedRunFound {
            out,
            completed,
            removed,
            resumed,
        } = self
        else {
            return Ok(());
        };
        let mut said = Vec::new();
        if let Some(staging) = completed {
            said.push(format!(
                "completed the publication of the outputs that a stopped run began \
                 (from {})",
                staging.display()
            ));
        }
        if !removed.is_empty() {
            let names: Vec<String> = removed.iter().map(|p| p.display().to_string()).collect();
            said.push(format!(
                "removed what runs that stopped before publishing their outputs \
                 (killed, or failed) had written: {}",
                names.join(", ")
            ));
        }
        if let Some(staging) = resumed {
            said.push(format!(
                "continuing from the checkpoint a run that stopped before publishing \
                 left in {}",
                staging.display()
            ));
        }
        write!(f, "{}: {}", out.display(), said.join("; "))
    }

    fn fmt_bench(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Notice::BenchStarted {
                d,
                p,
                batch,
                steps,
                outer,
                source,
            } => write!(
                f,
                "bench: d = {d}, p = {p}, m = {batch}, T = {steps}, {outer} timed outer iteration(s) after 1 warm-up; data: {source}"
            ),
            Notice::BenchCeiling { ceiling, .. } => write!(
                f,
                "{} ceiling: {:.1} GFLOP/s ({})",
                ceiling.backend, ceiling.gflops, ceiling.what
            ),
            Notice::BenchMeasured {
                backend,
                chains,
                chain_steps_per_second,
                ..
            } => write!(
                f,
                "{backend} C = {chains}: {chain_steps_per_second:.0} chain-steps/s"
            ),
            _ => Ok(()), // `Display` sends only the benchmark's notices here
        }
    }
}

/// Seconds as people say them: "40 s", "12 min", "3.5 h".
pub fn duration(seconds: f64) -> String {
    if seconds < 90.0 {
        format!("{seconds:.0} s")
    } else if seconds < 5400.0 {
        format!("{:.0} min", seconds / 60.0)
    } else {
        format!("{:.1} h", seconds / 3600.0)
    }
}

/// Receives a run's progress and notices, and tells it when to stop. Every method has a default
/// that does nothing, so an observer implements only what it shows. Methods take `&self` (the
/// stop request is polled from worker threads): keep state behind interior mutability.
pub trait Observer: Sync {
    /// A stage of a run made of several begins (augment's, `AUGMENT_PHASES`: dataset load,
    /// LASSO starts, burn-in, sampling, ...); the phases with progress inside it follow. A stage
    /// without one (dataset load, LASSO starts, writing) is shown by its name alone.
    fn stage_start(&self, _name: &'static str) {}
    /// The current stage is over after `seconds` of wall time.
    fn stage_finish(&self, _name: &'static str, _seconds: f64) {}
    /// A phase begins (phases do not nest).
    fn phase_start(&self, _phase: &Phase) {}
    /// The current phase reached `position` of its `len` units.
    fn phase_advance(&self, _position: u64) {}
    /// The current phase is over.
    fn phase_finish(&self) {}
    /// Something worth telling the user.
    fn notice(&self, _notice: &Notice) {}
    /// Polled between iterations and batches: true asks the run to stop early and cleanly
    /// (outputs and, for sampling, a checkpoint written).
    fn stop_requested(&self) -> bool {
        false
    }
}

/// An observer that shows nothing and never stops a run.
#[derive(Clone, Copy, Debug, Default)]
pub struct Silent;

impl Observer for Silent {}
