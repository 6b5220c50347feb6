//! Launcher for `fista.wgsl`: FISTA's residual, proximal step, objective and monotone update.
//!
//! `Params` fields its WGSL reads: d, p, lam, step_size, tau, c_u, c_prev.

use super::{read, write, Entry, Family, Kernel, Source, PARAMS};

const FISTA: &str = include_str!("../../../../shaders/fista.wgsl");

/// The FISTA module and its four entry points.
pub(super) const FAMILY: Family = Family {
    module: "fista",
    sources: &[Source::File(PARAMS), Source::File(FISTA)],
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
    FistaResidualBuffers => Kernel::FistaResidual, { left, right, result }
}

buffers! {
    /// Buffers of `fista_prox`.
    FistaProxBuffers => Kernel::FistaProx, { left, right, result }
}

buffers! {
    /// Buffers of `fista_objective`.
    FistaObjectiveBuffers => Kernel::FistaObjective, { left, right, candidate, objective, improved }
}

buffers! {
    /// Buffers of `fista_update`.
    FistaUpdateBuffers => Kernel::FistaUpdate, { left, candidate, improved, code, extrapolated, code_image, extrapolated_image }
}
