//! Stage "quality check": the sample-quality metrics of the generated images against the originals (label preservation, novelty, diversity).

use serde_json::{json, Value};

use super::stage::{Halt, Step};
use crate::diagnostics::quality::LabelledImages;
use crate::io::Dataset;
use crate::session::observer::{Notice, Observer};
use crate::session::quality::judge;
use crate::session::settings::AugmentSettings;

/// The phase's name.
pub(super) const PHASE: &str = "quality check";

/// The metrics of the generated images (`pixels`, 0..255 as written, with their `labels`)
/// against `originals`, into `report["quality"]`; their summary line, or None when skipped. A
/// problem with the metrics' inputs (say, no real image left to calibrate them) is a note in
/// the report, not a failed run.
pub(super) fn quality(
    args: &AugmentSettings,
    originals: &Dataset,
    (pixels, labels): (&[u8], &[u32]),
    observer: &dyn Observer,
    report: &mut Value,
) -> Step<Option<String>> {
    if labels.is_empty() {
        return Ok(None);
    }
    let generated = LabelledImages::new(
        originals.d,
        pixels.iter().map(|&v| v as f32 / 255.0).collect(),
        labels.to_vec(),
    )?;
    let judged = judge(
        args.problem.data.as_deref(),
        originals,
        args.test_limit,
        &generated,
        args.problem.seed,
        observer,
    );
    match judged {
        Ok(Some(q)) => {
            report["quality"] = json!(q);
            Ok(Some(q.summary_line()))
        }
        Ok(None) => Err(Halt::Stopped),
        Err(e) if e.is_user_error() => {
            report["quality"] = json!({ "skipped": e.to_string() });
            observer.notice(&Notice::QualitySkipped { error: e });
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}
