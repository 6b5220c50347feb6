//! Runs that exit cleanly with nothing useful in them: every proposal divergent, draws that never move, codes all zero, every LASSO row at its cap.
//!
//! Each is a legal outcome of the arithmetic (data scaled by 1e37 makes every energy overflow; a
//! dictionary scaled by 1e30 makes every code zero), so none is an error; but a user who reads
//! only the exit status would take the outputs for samples. The report carries these flags and the
//! summary a warning for each one set.

use serde::Serialize;

/// Watches a run's kept draws, block by block, for the two signs that need the values: a code
/// that is not zero, and a chain whose draw differs from its first. O(1) memory per chain beyond
/// the first draw.
#[derive(Clone, Debug)]
pub struct DrawWatch {
    width: usize,
    first: Vec<f32>,
    draws: usize,
    any_nonzero: bool,
    any_moved: bool,
}

impl DrawWatch {
    /// A watch over draws of `chains` chains of `width` values each.
    pub fn new(chains: usize, width: usize) -> Self {
        DrawWatch {
            width,
            first: Vec::with_capacity(chains * width),
            draws: 0,
            any_nonzero: false,
            any_moved: false,
        }
    }

    /// One kept draw of every chain (chains × width values, chain-major).
    pub fn observe(&mut self, codes: &[f32]) {
        self.any_nonzero = self.any_nonzero || codes.iter().any(|&v| v != 0.0);
        if self.draws == 0 {
            self.first.extend_from_slice(codes);
        } else if !self.any_moved {
            // Bitwise, so NaN draws compare equal to themselves and -0 differs from 0.
            self.any_moved = codes
                .iter()
                .zip(&self.first)
                .any(|(a, b)| a.to_bits() != b.to_bits());
        }
        self.draws += 1;
    }

    /// True once further draws cannot change what the watch says: a code was not zero and a
    /// chain moved.
    pub fn settled(&self) -> bool {
        self.any_nonzero && self.any_moved
    }

    /// Counts `n` more kept draws without looking at them, which only a settled watch may do.
    pub fn count_unseen(&mut self, n: usize) {
        debug_assert!(self.settled(), "an unsettled watch must see every draw");
        self.draws += n;
    }

    /// Kept draws per chain observed.
    pub fn draws(&self) -> usize {
        self.draws
    }

    /// Values per chain and draw.
    pub fn width(&self) -> usize {
        self.width
    }
}

/// Which signs of a degenerate run were seen (each `false` when it could not be judged).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Degenerate {
    /// Every MH proposal had a non-finite energy or gradient (at least one proposal made).
    pub all_proposals_divergent: bool,
    /// No chain's kept draw ever differed from its first (at least two draws per chain).
    pub draws_identical: bool,
    /// Every kept code was exactly zero.
    pub codes_all_zero: bool,
    /// Every LASSO row stopped at the iteration cap short of its tolerance (at least one row).
    pub lasso_all_capped: bool,
}

/// What a run tells about itself: its proposals and divergences, its kept draws (if watched) and
/// its LASSO encodings (rows, rows capped).
pub fn assess(
    proposals: u64,
    divergences: u64,
    draws: Option<&DrawWatch>,
    lasso: Option<(usize, usize)>,
) -> Degenerate {
    Degenerate {
        all_proposals_divergent: proposals > 0 && divergences >= proposals,
        draws_identical: draws.is_some_and(|w| w.draws >= 2 && !w.any_moved),
        codes_all_zero: draws.is_some_and(|w| w.draws >= 1 && !w.any_nonzero),
        lasso_all_capped: lasso.is_some_and(|(rows, capped)| rows > 0 && capped >= rows),
    }
}

impl Degenerate {
    /// True when no sign was seen.
    pub fn is_clean(&self) -> bool {
        *self == Degenerate::default()
    }

    /// One warning per sign seen, saying what it means and what to look at.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.all_proposals_divergent {
            out.push(
                "warning: every proposal was divergent (non-finite energy or gradient) and \
                 rejected: the draws are the starting points. Check the data's scale (pixel \
                 values far beyond the model's) and the step size"
                    .to_string(),
            );
        }
        if self.draws_identical && !self.all_proposals_divergent {
            out.push(
                "warning: no chain moved: every kept draw equals the chain's first. The step size \
                 is too large for MH to accept anything, or MH rejects every proposal"
                    .to_string(),
            );
        }
        if self.codes_all_zero {
            out.push(
                "warning: every code is zero: the prior's rate is too large for the data, or the \
                 dictionary's scale is far from the data's (its columns should have norm about 1)"
                    .to_string(),
            );
        }
        if self.lasso_all_capped {
            out.push(
                "warning: every LASSO row stopped at the iteration cap short of its tolerance: \
                 the codes are not converged. Check the dictionary's scale, or raise the \
                 iterations"
                    .to_string(),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_healthy_run_is_clean() {
        let mut watch = DrawWatch::new(2, 3);
        watch.observe(&[0.0, 1.0, 0.0, 0.5, 0.0, 0.0]);
        watch.observe(&[0.0, 1.0, 0.0, 0.5, 0.25, 0.0]);
        let d = assess(10, 1, Some(&watch), Some((4, 1)));
        assert!(d.is_clean(), "{d:?}");
        assert!(d.warnings().is_empty());
    }

    #[test]
    fn each_sign_is_seen_and_warned() {
        let mut watch = DrawWatch::new(2, 2);
        watch.observe(&[0.0; 4]);
        watch.observe(&[0.0; 4]);
        let d = assess(8, 8, Some(&watch), Some((5, 5)));
        assert_eq!(
            d,
            Degenerate {
                all_proposals_divergent: true,
                draws_identical: true,
                codes_all_zero: true,
                lasso_all_capped: true,
            }
        );
        // Identical draws are explained by the divergences: one warning, not two.
        assert_eq!(d.warnings().len(), 3);
    }

    #[test]
    fn too_little_to_judge_is_not_a_sign() {
        let mut watch = DrawWatch::new(1, 2);
        watch.observe(&[1.0, 2.0]);
        let d = assess(0, 0, Some(&watch), Some((0, 0)));
        assert!(d.is_clean(), "{d:?}");
        assert!(assess(0, 0, None, None).is_clean());
    }

    #[test]
    fn a_change_in_any_chain_counts_as_moving() {
        let mut watch = DrawWatch::new(3, 1);
        watch.observe(&[1.0, 2.0, 3.0]);
        watch.observe(&[1.0, 2.0, 3.0]);
        watch.observe(&[1.0, 2.0, -3.0]);
        assert!(!assess(3, 0, Some(&watch), None).draws_identical);
    }
}
