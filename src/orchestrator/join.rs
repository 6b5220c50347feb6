//! The whole run from its shards' parts: their runs joined chain by chain, their augmentation samples put back in the single run's order.

use std::ops::Range;

use super::augment::{AugmentPlan, AugmentSink};
use super::{SampleRun, SampleSink, PROJECTIONS};
use crate::{Error, Result};

/// The whole run joined from its shards' runs (`runs[k]` of `chains[k]` chains, in chain order):
/// per-chain figures end to end, per-iteration traces chain by chain within each traced
/// iteration, the longest shard's timings. Each run must hold its chains and the same
/// iterations; `misfit(k)` is the error for a run `k` that does not.
pub fn join_runs(
    runs: &[SampleRun],
    chains: &[usize],
    misfit: &dyn Fn(usize) -> Error,
) -> Result<SampleRun> {
    let (Some(r0), Some(&c0)) = (runs.first(), chains.first()) else {
        return Err(Error::usage("shards", "no shard folder to merge"));
    };
    let mut run = SampleRun {
        completed: r0.completed,
        interrupted: false,
        trace_stride: r0.trace_stride,
        start_indices: r0.start_indices.as_ref().map(|_| Vec::new()),
        ..SampleRun::default()
    };
    let traced = r0.energies.len() / c0.max(1);
    for (k, (r, &c)) in runs.iter().zip(chains).enumerate() {
        let consistent = r.completed == run.completed
            && !r.interrupted
            && r.trace_stride == run.trace_stride
            && r.accepted.len() == c
            && r.energies.len() == traced * c
            && r.log_alpha.len() == traced * c
            && r.projections.len() == traced * c * PROJECTIONS
            && r.start_indices.is_some() == run.start_indices.is_some();
        if !consistent {
            return Err(misfit(k));
        }
        run.accepted.extend(&r.accepted);
        run.divergent.extend(&r.divergent);
        run.prior_nonfinite.extend(&r.prior_nonfinite);
        run.prior_state.extend(&r.prior_state);
        run.start_images.extend(&r.start_images);
        run.final_images.extend(&r.final_images);
        if let (Some(all), Some(mine)) = (run.start_indices.as_mut(), &r.start_indices) {
            all.extend(mine);
        }
        let timings = &mut run.timings;
        timings.init_seconds = timings.init_seconds.max(r.timings.init_seconds);
        timings.sampling_seconds = timings.sampling_seconds.max(r.timings.sampling_seconds);
        timings.host_mh_seconds = timings.host_mh_seconds.max(r.timings.host_mh_seconds);
    }
    for i in 0..traced {
        for (r, &c) in runs.iter().zip(chains) {
            run.energies.extend(&r.energies[i * c..(i + 1) * c]);
            run.log_alpha.extend(&r.log_alpha[i * c..(i + 1) * c]);
            let w = c * PROJECTIONS;
            run.projections.extend(&r.projections[i * w..(i + 1) * w]);
        }
    }
    Ok(run)
}

/// The draws of the shards' chains joined: each part holds (draw, its chains, `width`) values
/// and its chain count; `sink` gets one draw of every chain (in part order) at a time.
pub fn join_draws(
    parts: &[(Vec<f32>, usize)],
    (draws, width): (usize, usize),
    sink: &mut dyn FnMut(&[f32]) -> Result<()>,
) -> Result<()> {
    let chains: usize = parts.iter().map(|(_, c)| c).sum();
    let mut draw = Vec::with_capacity(chains * width);
    for k in 0..draws {
        draw.clear();
        for (values, c) in parts {
            draw.extend_from_slice(&values[k * c * width..(k + 1) * c * width]);
        }
        sink(&draw)?;
    }
    Ok(())
}

/// One shard's augmentation samples: the rows its chains kept (class by class, images of d and
/// codes of p values; no codes for pixel-space samplers) and which of their class's samples
/// they are.
pub struct SinkPart {
    /// Per class: the rows kept.
    pub kept: Vec<usize>,
    /// Per class: each kept row's index among its class's samples of the whole run.
    pub positions: Vec<Vec<usize>>,
    /// The images, rows of d.
    pub images: Vec<f32>,
    /// The codes, rows of p (empty without codes).
    pub codes: Vec<f32>,
}

/// What the sink of the chains `range` keeps when they run `completed` outer iterations after
/// `burn_in` (counts and positions, no values): a shard's sink replayed from its trace.
pub fn replay_sink(
    plan: &AugmentPlan,
    range: Range<usize>,
    burn_in: u32,
    completed: u32,
) -> Result<AugmentSink> {
    let mut counts = AugmentSink::for_chains(plan, range.clone(), burn_in, false);
    let zeros = vec![0.0; range.len()];
    // (Compression records its starts as iteration 1 of a run of none.)
    for outer in 1..=completed.max(1) {
        counts.record(outer, &zeros, &zeros)?;
    }
    Ok(counts)
}

/// The whole run's sink from its shards' parts (in chain order): class k's samples in the
/// single run's (iteration, chain) order, that is at each kept iteration the shards' chains in
/// order; `keep_codes` false for pixel-space samplers, whose parts hold no codes.
/// `Err((held, k))` when the parts hold only `held` of class k's samples (a shard ran
/// fewer iterations than the others).
pub fn join_sinks(
    plan: &AugmentPlan,
    burn_in: u32,
    keep_codes: bool,
    (d, p): (usize, usize),
    parts: &[SinkPart],
) -> std::result::Result<AugmentSink, (usize, usize)> {
    let mut sink = AugmentSink::new(plan, burn_in, keep_codes);
    // Where each class's rows begin in a shard's files (class by class), and a cursor.
    let offsets: Vec<Vec<usize>> = parts
        .iter()
        .map(|s| {
            s.kept
                .iter()
                .scan(0, |at, &kept| {
                    let first = *at;
                    *at += kept;
                    Some(first)
                })
                .collect()
        })
        .collect();
    let mut cursors = vec![vec![0usize; plan.classes.len()]; parts.len()];
    for (k, class) in plan.classes.iter().enumerate() {
        let mut position = 0;
        while position < class.generated {
            let before = position;
            for (s, part) in parts.iter().enumerate() {
                let cursor = &mut cursors[s][k];
                while *cursor < part.kept[k] && part.positions[k][*cursor] == position {
                    let row = offsets[s][k] + *cursor;
                    sink.images[k].extend_from_slice(&part.images[row * d..(row + 1) * d]);
                    if keep_codes {
                        sink.codes[k].extend_from_slice(&part.codes[row * p..(row + 1) * p]);
                    }
                    sink.kept[k] += 1;
                    *cursor += 1;
                    position += 1;
                }
            }
            if position == before {
                return Err((position, k));
            }
        }
    }
    Ok(sink)
}
