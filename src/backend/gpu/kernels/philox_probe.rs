//! Launcher for `philox_probe.wgsl`: raw Philox blocks, for the generator's parity tests.
//!
//! Its params: `PhiloxProbeParams`, mirrored in `shaders/philox_probe.wgsl` (the key comes with
//! each case).

use super::{read, wgsl_struct, write, Entry, Family, Kernel, Source, WgslStruct, PHILOX};

const PHILOX_PROBE: &str = include_str!("../../../../shaders/philox_probe.wgsl");

wgsl_struct! {
    /// `struct PhiloxProbeParams` in `shaders/philox_probe.wgsl` (a uniform).
    pub struct PhiloxProbeParams {
        /// Number of cases.
        cases: u32,
        /// Padding to 16 bytes.
        _pad0: u32,
        /// Padding to 16 bytes.
        _pad1: u32,
        /// Padding to 16 bytes.
        _pad2: u32,
    }
}

/// The probe module and its one entry point.
pub(super) const FAMILY: Family = Family {
    module: "philox_probe",
    sources: &[Source::File(PHILOX), Source::File(PHILOX_PROBE)],
    params: &PhiloxProbeParams::LAYOUT,
    entries: &[Entry {
        kernel: Kernel::PhiloxProbe,
        entry_point: "philox_probe",
        bindings: &[read(1, "cases"), write(2, "draws")],
    }],
};

buffers! {
    /// Buffers of `philox_probe`.
    PhiloxProbeBuffers(PhiloxProbeParams) => Kernel::PhiloxProbe, { cases, draws }
}
