//! Launcher for `gather.wgsl`: per-chain minibatch means of the observations.
//!
//! Its params: `GatherParams`, mirrored in `shaders/gather.wgsl`.

use super::{read, wgsl_struct, write, Entry, Family, Kernel, Source, Stream, WgslStruct, PHILOX};

const GATHER: &str = include_str!("../../../../shaders/gather.wgsl");

wgsl_struct! {
    /// `struct GatherParams` in `shaders/gather.wgsl` (a uniform, one slot per step).
    pub struct GatherParams {
        /// The minibatch picks' streams.
        stream: Stream,
        /// Observation dimension d.
        d: u32,
        /// Minibatch size m.
        batch: u32,
        /// Step within the outer iteration (a counter word).
        step: u32,
        /// 1: data packed 4 bytes per word; 0: f32 bits.
        u8_data: u32,
        /// scale / m, rounded on the host like the CPU.
        gather_factor: f32,
        /// Padding to 16 bytes.
        _pad0: u32,
        /// Padding to 16 bytes.
        _pad1: u32,
        /// Padding to 16 bytes.
        _pad2: u32,
    }
}

/// The gather module and its one entry point.
pub(super) const FAMILY: Family = Family {
    module: "gather",
    sources: &[Source::File(PHILOX), Source::File(GATHER)],
    params: &GatherParams::LAYOUT,
    entries: &[Entry {
        kernel: Kernel::Gather,
        entry_point: "gather",
        bindings: &[read(1, "data"), write(2, "ybar"), read(3, "chain_rows")],
    }],
};

buffers! {
    /// Buffers of `gather`.
    GatherBuffers(GatherParams) => Kernel::Gather, { data, ybar, chain_rows }
}
