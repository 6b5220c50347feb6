//! Stage "re-encoding": the generated images, post-processed as written, LASSO-encoded again, their codes in place of the chains' positions.

use super::encoding::{Encoder, Rows};
use super::stage::{Halt, Step};
use crate::io::Split;
use crate::orchestrator::{AugmentPlan, AugmentSink};

/// The phase's name.
pub(super) const PHASE: &str = "re-encoding";

/// The codes of `pixels` (the generated images as written, 0..255, rows of d in `sink`'s order:
/// class by class), encoded at the model's scale (`full`: pixel-max). A shard's are its own
/// samples, each encoded as in the whole run.
pub(super) fn reencode(
    encoder: &mut Encoder,
    (plan, sink): (&AugmentPlan, &AugmentSink),
    pixels: &[u8],
    (d, full): (usize, f32),
    cache: &mut &'static str,
) -> Step<Vec<f32>> {
    let scale = full / 255.0;
    // The samples' indices among the whole run's (class by class), in the sink's order.
    let mut first = 0;
    let mut rows = Vec::with_capacity(sink.total());
    for (k, class) in plan.classes.iter().enumerate() {
        rows.extend(sink.positions[k].iter().map(|&i| first + i));
        first += class.generated;
    }
    let row = |at: usize| -> Vec<f32> {
        pixels[at * d..(at + 1) * d]
            .iter()
            .map(|&v| v as f32 * scale)
            .collect()
    };
    if !rows.is_sorted() {
        return Err(crate::Error::Internal("the samples' order".into()).into());
    }
    // Each row where its sample falls among the whole run's (in a whole run, every one).
    let image = |i: usize| row(rows.binary_search(&i).unwrap_or_default());
    let which = match encoder.split {
        Split::Shard(_) => Rows::Part {
            rows: &rows,
            total: plan.generated(),
        },
        _ => Rows::All(rows.len()),
    };
    let mut codes = Vec::with_capacity(rows.len() * encoder.target.p());
    let mut keep = |c: &[f32]| {
        codes.extend_from_slice(c);
        Ok(())
    };
    let done = encoder.encode(PHASE, which, &image, &mut keep, cache)?;
    match done {
        true => Ok(codes),
        false => Err(Halt::Stopped),
    }
}
