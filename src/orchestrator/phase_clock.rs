//! The phases' wall times, and the progress display of the phases that have none of their own.

use std::time::Instant;

use serde_json::{json, Value};

use super::observer::{Observer, Phase};

/// Wall time per phase, with a progress display through the observer for the phases that have
/// none of their own.
pub(crate) struct PhaseClock<'a> {
    observer: &'a dyn Observer,
    seconds: Vec<(&'static str, f64)>,
    current: Option<(&'static str, Instant)>,
    /// Whether the current phase opened a progress bar (`Observer::phase_start`).
    bar: bool,
    /// The last phase begun: where a stop happened.
    pub last: &'static str,
}

impl<'a> PhaseClock<'a> {
    /// A clock of `phases`, each at 0 s.
    pub fn new(observer: &'a dyn Observer, phases: &[&'static str]) -> Self {
        PhaseClock {
            observer,
            seconds: phases.iter().map(|&name| (name, 0.0)).collect(),
            current: None,
            bar: false,
            last: phases[0],
        }
    }

    /// Ends the current phase and begins `name` (`Observer::stage_start`); `bar` is a progress
    /// bar of that many outer iterations inside it (burn-in, sampling).
    pub fn begin(&mut self, name: &'static str, bar: Option<u64>) {
        self.end();
        self.observer.stage_start(name);
        if let Some(len) = bar {
            self.observer.phase_start(&Phase {
                name,
                len: Some(len),
                unit: "outer iterations",
            });
        }
        self.bar = bar.is_some();
        self.current = Some((name, Instant::now()));
        self.last = name;
    }

    /// Ends the current phase, adding its time.
    pub fn end(&mut self) {
        if let Some((name, started)) = self.current.take() {
            let elapsed = started.elapsed().as_secs_f64();
            if let Some(entry) = self.seconds.iter_mut().find(|(n, _)| *n == name) {
                entry.1 += elapsed;
            }
            if std::mem::take(&mut self.bar) {
                self.observer.phase_finish();
            }
            self.observer.stage_finish(name, elapsed);
        }
    }

    /// Seconds per phase, as report.json's `phase_seconds`.
    pub fn json(&self) -> Value {
        Value::Object(
            self.seconds
                .iter()
                .map(|(name, s)| (name.to_string(), json!(s)))
                .collect(),
        )
    }

    /// The phases that took time, as a summary line.
    pub fn summary(&self) -> String {
        let parts: Vec<String> = self
            .seconds
            .iter()
            .filter(|(_, s)| *s > 0.0)
            .map(|(name, s)| format!("{name} {s:.1} s"))
            .collect();
        format!("phases: {}", parts.join(", "))
    }
}
