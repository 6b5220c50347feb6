//! Launcher for `fista.wgsl`: FISTA's residual, proximal step, objective and monotone update.
//!
//! Its params: `FistaParams`, mirrored in `shaders/fista.wgsl`.

use super::{read, wgsl_struct, write, Entry, Family, Kernel, Source, WgslStruct};

const FISTA: &str = include_str!("../../../../shaders/fista.wgsl");

wgsl_struct! {
    /// `struct FistaParams` in `shaders/fista.wgsl` (a uniform, one slot per iteration).
    pub struct FistaParams {
        /// Image dimension d.
        d: u32,
        /// Code dimension p.
        p: u32,
        /// The LASSO weight lam.
        lam: f32,
        /// 1/L.
        step_size: f32,
        /// lam/L.
        tau: f32,
        /// t/t'.
        c_u: f32,
        /// (t-1)/t'.
        c_prev: f32,
        /// Padding to 16 bytes.
        _pad0: u32,
    }
}

/// The FISTA module and its four entry points.
pub(super) const FAMILY: Family = Family {
    module: "fista",
    sources: &[Source::File(FISTA)],
    params: &FistaParams::LAYOUT,
    entries: &[
        Entry {
            kernel: Kernel::FistaResidual,
            entry_point: "fista_residual",
            bindings: &[read(1, "left"), read(2, "right"), write(3, "result")],
        },
        Entry {
            kernel: Kernel::FistaProx,
            entry_point: "fista_prox",
            bindings: &[read(1, "left"), read(2, "right"), write(3, "result")],
        },
        Entry {
            kernel: Kernel::FistaObjective,
            entry_point: "fista_objective",
            bindings: &[
                read(1, "left"),
                read(2, "right"),
                read(4, "candidate"),
                write(5, "objective"),
                write(6, "improved"),
            ],
        },
        Entry {
            kernel: Kernel::FistaUpdate,
            entry_point: "fista_update",
            bindings: &[
                read(1, "left"),
                read(4, "candidate"),
                write(6, "improved"),
                write(7, "code"),
                write(8, "extrapolated"),
                write(9, "code_image"),
                write(10, "extrapolated_image"),
            ],
        },
    ],
};

buffers! {
    /// Buffers of `fista_residual`.
    FistaResidualBuffers(FistaParams) => Kernel::FistaResidual, { left, right, result }
}

buffers! {
    /// Buffers of `fista_prox`.
    FistaProxBuffers(FistaParams) => Kernel::FistaProx, { left, right, result }
}

buffers! {
    /// Buffers of `fista_objective`.
    FistaObjectiveBuffers(FistaParams) => Kernel::FistaObjective, { left, right, candidate, objective, improved }
}

buffers! {
    /// Buffers of `fista_update`.
    FistaUpdateBuffers(FistaParams) => Kernel::FistaUpdate, { left, candidate, improved, code, extrapolated, code_image, extrapolated_image }
}
