//! Stage "test codes": the test split's LASSO codes, for a classifier trained on the codes.

use super::encoding::{Codes, Encoder};
use super::stage::Step;
use crate::io::{Dataset, Output};

/// The phase's name.
pub(super) const PHASE: &str = "test codes";

/// A shard's part of the test split's codes.
pub(super) const PART: &str = "test-codes.npy";

/// The codes of `test`, streamed into test-codes.npy (a shard: its part of them).
pub(super) fn test_codes(
    encoder: &mut Encoder,
    output: &mut Output,
    test: &Dataset,
    cache: &mut &'static str,
) -> Step<Codes> {
    encoder.dataset(output, test, ("test-codes.npy", PART), cache)
}
