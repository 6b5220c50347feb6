//! CPU twin of `shaders/gather.wgsl`: per-chain minibatch means Ybar (C × d).

use rayon::prelude::*;

use crate::model::Observations;
use crate::rng::{Purpose, Stream};

/// For each chain c, ybar_c = mean of m observations drawn i.i.d. (with replacement) from its
/// rows `rows[c]` = (first, count) by the stream (seed, c, outer, step, Minibatch).
pub fn gather(
    observations: &Observations,
    rows: &[[u32; 2]],
    seed: u64,
    outer: u32,
    step: u32,
    batch: u32,
    ybar: &mut [f32],
) {
    gather_from(observations, rows, seed, 0, outer, step, batch, ybar)
}

/// As [`gather`] for chains from `first_chain` on: `rows[c]` and `ybar`'s row c are chain
/// `first_chain + c`'s, drawn from its stream (a shard's chains draw the single run's numbers).
#[allow(clippy::too_many_arguments)]
pub fn gather_from(
    observations: &Observations,
    rows: &[[u32; 2]],
    seed: u64,
    first_chain: u32,
    outer: u32,
    step: u32,
    batch: u32,
    ybar: &mut [f32],
) {
    let d = observations.d;
    ybar.par_chunks_mut(d).zip(rows).enumerate().for_each_init(
        || vec![0u32; batch as usize],
        |indices, (chain, (out, &[first, count]))| {
            Stream::new(
                seed,
                first_chain + chain as u32,
                outer,
                step,
                Purpose::Minibatch,
            )
            .fill_index(count, indices);
            indices.iter_mut().for_each(|i| *i += first);
            observations.batch_mean(indices, out);
        },
    );
}
