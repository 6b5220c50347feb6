//! Launcher for `select.wgsl`: X ← Z (with its gradient and residual) where accepted.
//!
//! Its params: `SelectParams`, mirrored in `shaders/select.wgsl`.

use super::{read, write, Entry, Family, Kernel, Source, WgslStruct};

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

/// The select module and its one entry point.
pub(super) const FAMILY: Family = Family {
    module: "select",
    sources: &[Source::File(SELECT)],
    params: &SelectParams::LAYOUT,
    entries: &[Entry {
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
    }],
};

buffers! {
    /// Buffers of `select_accepted`.
    SelectBuffers(SelectParams) => Kernel::Select, { accepted, z, x, gradient_z, gradient_x, residual_z, residual_x }
}
