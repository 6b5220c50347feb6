//! Launcher for `exact.wgsl`: the exact-gradient proposals (MALA's, and leapfrog's drift and kick).
//!
//! `Params` fields its WGSL reads: p, chain_offset, outer, eta, noise_scale, seed_lo, seed_hi.

use super::{read, write, Entry, Family, Kernel, Source, PARAMS, PHILOX};

const EXACT: &str = include_str!("../../../../shaders/exact.wgsl");

/// The exact module and its three entry points.
pub(super) const FAMILY: Family = Family {
    module: "exact",
    sources: &[
        Source::File(PARAMS),
        Source::File(PHILOX),
        Source::File(EXACT),
    ],
    entries: &[
        Entry {
            kernel: Kernel::MalaProposal,
            entry_point: "mala_proposal",
            bindings: &[read(1, "x"), read(2, "gradient"), write(3, "z")],
        },
        Entry {
            kernel: Kernel::LeapfrogDrift,
            entry_point: "leapfrog_drift",
            bindings: &[read(2, "gradient"), write(3, "z"), write(4, "momentum")],
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
    MalaProposalBuffers => Kernel::MalaProposal, { x, gradient, z }
}

buffers! {
    /// Buffers of `leapfrog_drift`.
    LeapfrogDriftBuffers => Kernel::LeapfrogDrift, { gradient, z, momentum }
}

buffers! {
    /// Buffers of `leapfrog_kick`.
    LeapfrogKickBuffers => Kernel::LeapfrogKick, { gradient, momentum }
}
