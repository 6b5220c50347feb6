//! CPU twin of `shaders/gather.wgsl`: per-chain minibatch means Ybar (C × d).

use rayon::prelude::*;

use crate::rng::{Purpose, Stream};
use crate::target::Observations;

/// For each chain c, ybar_c = mean of m observations drawn i.i.d. (with replacement) from the
/// stream (seed, c, outer, step, Minibatch).
pub fn gather(
    observations: &Observations,
    seed: u64,
    outer: u32,
    step: u32,
    batch: u32,
    ybar: &mut [f32],
) {
    let d = observations.d;
    let n = observations.n as u32;
    ybar.par_chunks_mut(d).enumerate().for_each_init(
        || vec![0u32; batch as usize],
        |indices, (chain, out)| {
            Stream::new(seed, chain as u32, outer, step, Purpose::Minibatch).fill_index(n, indices);
            observations.batch_mean(indices, out);
        },
    );
}
