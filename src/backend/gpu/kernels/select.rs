//! Launcher for `select.wgsl`: X ← Z (with its gradient and residual) where accepted.
//!
//! `Params` fields its WGSL reads: d, p.

use super::{read, write, Entry, Family, Kernel, Source, PARAMS};

const SELECT: &str = include_str!("../../../../shaders/select.wgsl");

/// The select module and its one entry point.
pub(super) const FAMILY: Family = Family {
    module: "select",
    sources: &[Source::File(PARAMS), Source::File(SELECT)],
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
    SelectBuffers => Kernel::Select, { accepted, z, x, gradient_z, gradient_x, residual_z, residual_x }
}
