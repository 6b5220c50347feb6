//! Launcher for `select.wgsl`: X ← Z (with its gradient and residual, and a likelihood's cached
//! energy and scaled residual) where accepted.
//!
//! Its params: `SelectParams`, mirrored in `shaders/select.wgsl`.

use super::{read, wgsl_struct, write, Entry, Family, Kernel, Source, WgslStruct};

const SELECT: &str = include_str!("../../../../shaders/select.wgsl");

wgsl_struct! {
    /// `struct SelectParams` in `shaders/select.wgsl` (a uniform, one slot per outer iteration).
    pub struct SelectParams {
        /// Observation dimension d.
        d: u32,
        /// Code dimension p.
        p: u32,
        /// Padding to 16 bytes.
        _pad0: u32,
        /// Padding to 16 bytes.
        _pad1: u32,
    }
}

/// The select module and its two entry points.
pub(super) const FAMILY: Family = Family {
    module: "select",
    sources: &[Source::File(SELECT)],
    params: &SelectParams::LAYOUT,
    entries: &[
        Entry {
            kernel: Kernel::Select,
            entry_point: "select_accepted",
            bindings: &[
                read(1, "accepted"),
                read(2, "z"),
                write(3, "x"),
                read(4, "gradient_z"),
                write(5, "gradient_x"),
                read(6, "residual_z"),
                write(7, "residual_x"),
            ],
        },
        Entry {
            kernel: Kernel::SelectCached,
            entry_point: "select_cached",
            bindings: &[
                read(1, "accepted"),
                read(8, "energy_z"),
                write(9, "energy_x"),
                read(10, "scaled_z"),
                write(11, "scaled_x"),
            ],
        },
    ],
};

buffers! {
    /// Buffers of `select_accepted`.
    SelectBuffers(SelectParams) => Kernel::Select, { accepted, z, x, gradient_z, gradient_x, residual_z, residual_x }
}

buffers! {
    /// Buffers of `select_cached`.
    SelectCachedBuffers(SelectParams) => Kernel::SelectCached, { accepted, energy_z, energy_x, scaled_z, scaled_x }
}
