//! Launcher for `tangent.wgsl`: the tangent likelihood's energy, scaled residual and step residual.
//!
//! Its params: `TangentParams`, mirrored in `shaders/tangent.wgsl` (its own `TangentInfo` binding
//! carries k and 1/sigma²).

use super::{read, write, Entry, Family, Kernel, Source, WgslStruct, WORKGROUP_SUM};

const TANGENT: &str = include_str!("../../../../shaders/tangent.wgsl");

wgsl_struct! {
    /// `struct TangentParams` in `shaders/tangent.wgsl` (a uniform, one slot per outer iteration).
    pub struct TangentParams {
        /// Observation dimension d.
        d: u32,
        /// Padding to 16 bytes.
        _pad0: u32,
        /// Padding to 16 bytes.
        _pad1: u32,
        /// Padding to 16 bytes.
        _pad2: u32,
    }
}

/// The tangent module and its two entry points.
pub(super) const FAMILY: Family = Family {
    module: "tangent",
    sources: &[Source::File(WORKGROUP_SUM), Source::File(TANGENT)],
    params: &TangentParams::LAYOUT,
    entries: &[
        Entry {
            kernel: Kernel::TangentEnergy,
            entry_point: "tangent_energy",
            bindings: &[
                read(1, "basis"),
                read(2, "gamma"),
                read(3, "tangent"),
                read(4, "residual"),
                write(5, "energy"),
                write(6, "scaled"),
            ],
        },
        Entry {
            kernel: Kernel::TangentStep,
            entry_point: "tangent_step",
            bindings: &[
                read(1, "basis"),
                read(2, "gamma"),
                read(3, "tangent"),
                write(7, "step_residual"),
            ],
        },
    ],
};

buffers! {
    /// Buffers of `tangent_energy`.
    TangentEnergyBuffers(TangentParams) => Kernel::TangentEnergy, { basis, gamma, tangent, residual, energy, scaled }
}

buffers! {
    /// Buffers of `tangent_step`.
    TangentStepBuffers(TangentParams) => Kernel::TangentStep, { basis, gamma, tangent, step_residual }
}
