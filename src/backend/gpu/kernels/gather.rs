//! Launcher for `gather.wgsl`: per-chain minibatch means of the observations.
//!
//! `Params` fields its WGSL reads: d, batch, chain_offset, outer, step, u8_data, gather_factor,
//! seed_lo, seed_hi.

use super::{read, write, Entry, Family, Kernel, Source, PARAMS, PHILOX};

const GATHER: &str = include_str!("../../../../shaders/gather.wgsl");

/// The gather module and its one entry point.
pub(super) const FAMILY: Family = Family {
    module: "gather",
    sources: &[
        Source::File(PARAMS),
        Source::File(PHILOX),
        Source::File(GATHER),
    ],
    entries: &[Entry {
        kernel: Kernel::Gather,
        entry_point: "gather",
        bindings: &[read(1, "data"), write(2, "ybar"), read(3, "chain_rows")],
    }],
};

buffers! {
    /// Buffers of `gather`.
    GatherBuffers => Kernel::Gather, { data, ybar, chain_rows }
}
