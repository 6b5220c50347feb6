//! CPU twin of `shaders/select.wgsl`: X ← Z for the accepted chains.

use rayon::prelude::*;

/// Copies row c of `from` over row c of `to` (rows of `width`) wherever `accepted[c]`.
pub fn select(accepted: &[bool], from: &[f32], to: &mut [f32], width: usize) {
    to.par_chunks_mut(width)
        .zip(from.par_chunks(width))
        .zip(accepted.par_iter())
        .for_each(|((t, f), &a)| {
            if a {
                t.copy_from_slice(f);
            }
        });
}
