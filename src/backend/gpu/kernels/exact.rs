//! Launcher for `exact.wgsl`: the exact-gradient proposals (MALA's, and leapfrog's drift and kick).
//!
//! Its params: `ExactParams`, mirrored in `shaders/exact.wgsl`.

use super::{read, wgsl_struct, write, Entry, Family, Kernel, Source, Stream, WgslStruct, PHILOX};

const EXACT: &str = include_str!("../../../../shaders/exact.wgsl");

wgsl_struct! {
    /// `struct ExactParams` in `shaders/exact.wgsl` (a uniform, one slot per outer iteration).
    pub struct ExactParams {
        /// The MALA noise's streams.
        stream: Stream,
        /// Code dimension p.
        p: u32,
        /// Step size h (MALA) or epsilon (leapfrog).
        eta: f32,
        /// sqrt(2 h), rounded on the host like the CPU.
        noise_scale: f32,
        /// 1: `--noise gibbs`, the moves are divided by chain_precision (√τ per chain).
        preconditioned: u32,
    }
}

/// The exact module and its three entry points.
pub(super) const FAMILY: Family = Family {
    module: "exact",
    sources: &[Source::File(PHILOX), Source::File(EXACT)],
    params: &ExactParams::LAYOUT,
    entries: &[
        Entry {
            kernel: Kernel::MalaProposal,
            entry_point: "mala_proposal",
            bindings: &[
                read(1, "x"),
                read(2, "gradient"),
                write(3, "z"),
                read(13, "chain_precision"),
            ],
        },
        Entry {
            kernel: Kernel::LeapfrogDrift,
            entry_point: "leapfrog_drift",
            bindings: &[
                read(2, "gradient"),
                write(3, "z"),
                write(4, "momentum"),
                read(13, "chain_precision"),
            ],
        },
        Entry {
            kernel: Kernel::LeapfrogKick,
            entry_point: "leapfrog_kick",
            bindings: &[read(2, "gradient"), write(4, "momentum")],
        },
    ],
};

buffers! {
    /// Buffers of `mala_proposal`.
    MalaProposalBuffers(ExactParams) => Kernel::MalaProposal, { x, gradient, z, chain_precision }
}

buffers! {
    /// Buffers of `leapfrog_drift`.
    LeapfrogDriftBuffers(ExactParams) => Kernel::LeapfrogDrift, { gradient, z, momentum, chain_precision }
}

buffers! {
    /// Buffers of `leapfrog_kick`.
    LeapfrogKickBuffers(ExactParams) => Kernel::LeapfrogKick, { gradient, momentum }
}
