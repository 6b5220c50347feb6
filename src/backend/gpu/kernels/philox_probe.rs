//! Launcher for `philox_probe.wgsl`: raw Philox blocks, for the generator's parity tests.
//!
//! `Params` fields its WGSL reads: chains (the number of cases); the key comes with each case.

use super::{read, write, Entry, Family, Kernel, Source, PARAMS, PHILOX};

const PHILOX_PROBE: &str = include_str!("../../../../shaders/philox_probe.wgsl");

/// The probe module and its one entry point.
pub(super) const FAMILY: Family = Family {
    module: "philox_probe",
    sources: &[
        Source::File(PARAMS),
        Source::File(PHILOX),
        Source::File(PHILOX_PROBE),
    ],
    entries: &[Entry {
        kernel: Kernel::PhiloxProbe,
        entry_point: "philox_probe",
        bindings: &[read(1, "cases"), write(2, "draws")],
    }],
};

buffers! {
    /// Buffers of `philox_probe`.
    PhiloxProbeBuffers => Kernel::PhiloxProbe, { cases, draws }
}
