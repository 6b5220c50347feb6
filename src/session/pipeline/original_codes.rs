//! Stage "original codes": the originals' LASSO codes, which codes.npy holds before the generated ones.

use super::encoding::{Codes, Encoder};
use super::stage::Step;
use crate::io::{Dataset, Output};

/// The phase's name.
pub(super) const PHASE: &str = "original codes";

/// A shard's part of the originals' codes.
pub(super) const PART: &str = "original-codes.npy";

/// The codes of `originals`, streamed into codes.npy (a shard: its part of them).
pub(super) fn original_codes(
    encoder: &mut Encoder,
    output: &mut Output,
    originals: &Dataset,
    cache: &mut &'static str,
) -> Step<Codes> {
    encoder.dataset(output, originals, ("codes.npy", PART), cache)
}
