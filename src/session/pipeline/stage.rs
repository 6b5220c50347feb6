//! What every stage of the pipeline may use, and what the pipeline does around each: its phase's time, a stop after it, the end of a stopped run.

use std::time::Instant;

use serde_json::{json, Value};

use crate::io::{Output, Split};
use crate::orchestrator::phase_clock::PhaseClock;
use crate::session::observer::{Notice, Observer};
use crate::session::Outcome;
use crate::{Error, Result};

/// Why a pipeline ended before its last stage.
pub(crate) enum Halt {
    /// The observer asked it to stop.
    Stopped,
    /// A stage failed.
    Failed(Error),
}

impl From<Error> for Halt {
    fn from(e: Error) -> Self {
        Halt::Failed(e)
    }
}

/// A stage's output, or why the run ends there.
pub(crate) type Step<T> = std::result::Result<T, Halt>;

/// What every stage may use, and what the pipeline does around them.
pub(crate) struct Pipeline<'a> {
    /// Progress, notices and stop requests.
    pub observer: &'a dyn Observer,
    /// The whole run, a shard, or a merge.
    pub split: Split<'a>,
    /// The output folder.
    pub output: Output,
    /// Each phase's time.
    pub clock: PhaseClock<'a>,
    /// When the run began.
    pub started: Instant,
}

impl<'a> Pipeline<'a> {
    /// A pipeline of the stages `phases` writing into `output`.
    pub fn new(
        observer: &'a dyn Observer,
        split: Split<'a>,
        output: Output,
        phases: &[&'static str],
    ) -> Self {
        Pipeline {
            observer,
            split,
            output,
            clock: PhaseClock::new(observer, phases),
            started: Instant::now(),
        }
    }

    /// Runs the stage `phase` (`bar`: a progress bar of that many outer iterations): its wall
    /// time goes to the phase; a stop requested during it ends the run after it.
    pub fn stage<T>(
        &mut self,
        phase: &'static str,
        bar: Option<u64>,
        run: impl FnOnce(&mut Self) -> Step<T>,
    ) -> Step<T> {
        self.clock.begin(phase, bar);
        let output = run(self)?;
        self.clock.end();
        match self.observer.stop_requested() {
            true => Err(Halt::Stopped),
            false => Ok(output),
        }
    }

    /// Ends the last phase: every phase's seconds and the run's.
    pub fn finish(&mut self) -> (Value, f64) {
        self.clock.end();
        (self.clock.json(), self.started.elapsed().as_secs_f64())
    }

    /// Ends a stopped run: takes back what it wrote, publishes report.json saying where it
    /// stopped and that it cannot be resumed (unless the folder holds an earlier run's output,
    /// which is kept as it was), and tells the observer.
    pub fn stopped(mut self) -> Result<Outcome> {
        let phase = self.clock.last;
        let (phases, seconds) = self.finish();
        let report = json!({
            "command": "augment",
            "rmld_version": env!("CARGO_PKG_VERSION"),
            "rmld_build": crate::BUILD,
            "interrupted": true,
            "stopped_in": phase,
            "resumable": false,
            "outputs": "none: an augmentation cannot be resumed, so an interrupted one keeps no output; run it again",
            "phase_seconds": phases,
            "seconds": seconds,
        });
        let published = self.output.publish_report_alone(&report)?;
        self.observer.notice(&Notice::AugmentInterrupted {
            phase,
            out: self.output.dir.clone(),
            kept_earlier: !published,
        });
        Ok(Outcome {
            interrupted: true,
            report,
            summary: Vec::new(),
            draw_stats: None,
        })
    }
}
