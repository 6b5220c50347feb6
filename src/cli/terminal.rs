//! The command line's `Observer`: indicatif progress bars, printed notices, signal stop requests.
//!
//! Progress bars (indicatif) go to stderr, notices are stderr lines (the benchmark's header and
//! ceilings stdout), and stop requests come from SIGINT/SIGTERM.

use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use rmld::session::{Notice, Observer, Phase};

use super::signals::StopRequest;

/// Shows a run on the terminal.
pub struct Terminal {
    stop: Option<StopRequest>,
    /// The command's long options, to name settings in messages.
    options: Vec<String>,
    bar: Mutex<Option<ProgressBar>>,
}

impl Terminal {
    /// A terminal observer; `stop` (installed signal handlers) lets SIGINT/SIGTERM stop runs;
    /// `options` are the command's long options (`cli::options_of`).
    pub fn new(stop: Option<StopRequest>, options: Vec<String>) -> Self {
        Terminal {
            stop,
            options,
            bar: Mutex::new(None),
        }
    }

    /// `text` with the settings it names in backticks written as this command's options.
    pub fn with_flags(&self, text: &str) -> String {
        super::with_flags(text, &self.options)
    }

    /// The exit status for the signal that stopped the run: 128 + its number.
    pub fn exit_status(&self) -> u8 {
        self.stop.as_ref().map_or(130, StopRequest::exit_status)
    }

    fn with_bar(&self, f: impl FnOnce(&ProgressBar)) {
        if let Some(bar) = self.bar.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            f(bar);
        }
    }
}

impl Observer for Terminal {
    fn stage_start(&self, name: &'static str) {
        // A spinner named by the stage until a bar inside it replaces it.
        self.phase_start(&Phase {
            name,
            len: None,
            unit: "",
        });
    }

    fn stage_finish(&self, _name: &'static str, _seconds: f64) {
        self.phase_finish();
    }

    fn phase_start(&self, phase: &Phase) {
        let bar = match phase.len {
            Some(len) => {
                let unit = if phase.unit.is_empty() {
                    String::new()
                } else {
                    format!(" {}", phase.unit)
                };
                ProgressBar::new(len).with_style(
                    ProgressStyle::with_template(&format!(
                        "{{spinner}} {} [{{bar:30}}] {{pos}}/{{len}}{unit} ({{elapsed}}, eta {{eta}})",
                        phase.name
                    ))
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
                )
            }
            None => {
                let spinner = ProgressBar::new_spinner().with_style(
                    ProgressStyle::with_template(&format!(
                        "{{spinner}} {} ({{elapsed}})",
                        phase.name
                    ))
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                spinner.enable_steady_tick(Duration::from_millis(200));
                spinner
            }
        };
        let old = self
            .bar
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .replace(bar);
        if let Some(old) = old {
            old.finish_and_clear();
        }
    }

    fn phase_advance(&self, position: u64) {
        self.with_bar(|bar| bar.set_position(position));
    }

    fn phase_finish(&self) {
        let old = self.bar.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(bar) = old {
            bar.finish_and_clear();
        }
    }

    fn notice(&self, notice: &Notice) {
        // The benchmark's header and ceilings are part of its printed result.
        if matches!(
            notice,
            Notice::BenchStarted { .. } | Notice::BenchCeiling { .. }
        ) {
            println!("{}", notice_text(notice, &self.options));
        } else {
            eprintln!("{}", notice_text(notice, &self.options));
        }
    }

    fn stop_requested(&self) -> bool {
        self.stop.as_ref().is_some_and(StopRequest::requested)
    }
}

/// A notice as the command line words it.
fn notice_text(notice: &Notice, options: &[String]) -> String {
    match notice {
        Notice::NoUsableGpu { .. } => format!("note: {notice}"),
        Notice::SoftwareAdapter { .. } => {
            format!("note: {notice} (--backend gpu uses it anyway)")
        }
        Notice::Resuming { .. } => format!("rmld resume: {notice}"),
        Notice::LearningResumed { .. } => format!("rmld dictionary: {notice}"),
        Notice::SampleInterrupted { out, .. } => format!(
            "rmld: {notice}; continue with `rmld resume {}`",
            out.display()
        ),
        Notice::AugmentInterrupted { .. } => {
            format!(
                "rmld augment: {}",
                super::with_flags(&notice.to_string(), options)
            )
        }
        Notice::Estimate { .. } => format!("rmld: {notice}"),
        Notice::FewNewImages { .. } | Notice::LimitLeavesClasses { .. } => format!(
            "rmld augment: note: {}",
            super::with_flags(&notice.to_string(), options)
        ),
        Notice::QualitySkipped { error } => {
            format!(
                "rmld augment: no quality metrics: {}",
                super::error_text(error, options)
            )
        }
        Notice::TestSplitUnusable { .. } => format!("rmld: note: {notice}"),
        Notice::CodeCacheIgnored { .. } => format!("rmld: note: {notice}"),
        Notice::FloatDataScaled { .. } => format!("rmld: note: {notice}"),
        Notice::Degenerate { .. } => format!("rmld: {notice}"),
        Notice::BenchStarted { .. } => format!(
            "rmld {notice}\ncounted: 4·d·p flops per chain-step (the two products) + 4·d·p per \
             chain and outer iteration (full residual and gradient at Z); gather, update and MH \
             terms not counted"
        ),
        Notice::BenchCeiling {
            ceiling,
            timing: Some(timing),
        } => {
            let fma = ceiling
                .extra
                .iter()
                .find(|(name, _)| name.starts_with("fma_peak"))
                .map_or(0.0, |(_, v)| *v);
            format!("{notice}; raw FMA {fma:.1} GFLOP/s\ngpu timing: {timing}")
        }
        Notice::BenchCeiling { timing: None, .. } => notice.to_string(),
        Notice::BenchMeasured {
            products_gflops: Some(g),
            ..
        } => format!("  {notice}, products alone at {g:.1} GFLOP/s"),
        Notice::BenchMeasured { .. } => format!("  {notice}"),
        other => format!("rmld: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_read_as_before() {
        let text = notice_text(
            &Notice::SoftwareAdapter {
                name: "llvmpipe".into(),
            },
            &[],
        );
        assert_eq!(
            text,
            "note: the only GPU adapter is a software renderer (llvmpipe); running on the CPU, \
             which is faster (--backend gpu uses it anyway)"
        );
        let text = notice_text(
            &Notice::SampleInterrupted {
                completed: 3,
                samples: 9,
                checkpoint: "o/checkpoint.rmld".into(),
                out: "o".into(),
            },
            &[],
        );
        assert_eq!(
            text,
            "rmld: interrupted after outer iteration 3 of 9: outputs and o/checkpoint.rmld \
             written; continue with `rmld resume o`"
        );
        let few = Notice::FewNewImages {
            generated: 500,
            originals: 3000,
        };
        assert_eq!(
            notice_text(&few, &["ratio".to_string(), "balance".to_string()]),
            "rmld augment: note: 500 new images for 3000 originals (one per 6.0) are too few to \
             change a classifier trained on them (docs/usefulness.md); four per original \
             (--ratio 1:4), or --balance auto where the classes are imbalanced, are what help"
        );
        let cut = Notice::LimitLeavesClasses {
            limit: 3000,
            kept: 1,
            classes: 3,
        };
        assert_eq!(
            notice_text(&cut, &["limit".to_string()]),
            "rmld augment: note: --limit 3000 keeps the data's first 3000 images, which hold 1 of \
             its 3 classes (the images are stored in class order); a larger --limit takes the \
             others"
        );
        let skipped = Notice::QualitySkipped {
            error: rmld::Error::usage("test_limit", "must be at least 1"),
        };
        assert_eq!(
            notice_text(&skipped, &["test-limit".to_string()]),
            "rmld augment: no quality metrics: invalid setting --test-limit: must be at least 1"
        );
    }
}
