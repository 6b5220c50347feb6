//! Launcher for `kernel_hmc.wgsl`: Kernel HMC's steps, energies, MH terms and accept, and the
//! mixture target's minibatch step residual.
//!
//! Its params: `KernelHmcParams`, mirrored in `shaders/kernel_hmc.wgsl`.

use super::{
    read, write, Entry, Family, Kernel, Source, Stream, WgslStruct, PHILOX, WORKGROUP_SUM,
};

const KERNEL_HMC: &str = include_str!("../../../../shaders/kernel_hmc.wgsl");

wgsl_struct! {
    /// `struct KernelHmcParams` in `shaders/kernel_hmc.wgsl` (a uniform, one slot per step).
    pub struct KernelHmcParams {
        /// The minibatch picks' and the SGHMC noise's streams.
        stream: Stream,
        /// Image dimension d.
        d: u32,
        /// Minibatch size m.
        batch: u32,
        /// Step within the outer iteration (a counter word).
        step: u32,
        /// 1: data packed 4 bytes per word; 0: f32 bits.
        u8_data: u32,
        /// 1: inject SGHMC noise in `kernel_step`.
        noise: u32,
        /// Step size eta.
        eta: f32,
        /// sqrt(2 eta), rounded on the host like the CPU.
        noise_scale: f32,
        /// eta T, the MH proposal norms' scale.
        delta: f32,
    }
}

/// The kernel-HMC module and its five entry points.
pub(super) const FAMILY: Family = Family {
    module: "kernel_hmc",
    sources: &[
        Source::File(PHILOX),
        Source::File(WORKGROUP_SUM),
        Source::File(KERNEL_HMC),
    ],
    params: &KernelHmcParams::LAYOUT,
    entries: &[
        Entry {
            kernel: Kernel::KernelStep,
            entry_point: "kernel_step",
            bindings: &[
                read(1, "data"),
                read(2, "chain_info"),
                write(3, "position"),
                write(4, "momentum"),
                write(5, "picks"),
                write(6, "weights"),
            ],
        },
        Entry {
            kernel: Kernel::KernelEnergy,
            entry_point: "kernel_energy",
            bindings: &[
                read(1, "data"),
                read(2, "chain_info"),
                read(7, "at"),
                write(8, "energy"),
                write(9, "gradient"),
            ],
        },
        Entry {
            kernel: Kernel::KernelMhTerms,
            entry_point: "kernel_mh_terms",
            bindings: &[
                read(10, "x"),
                read(11, "z"),
                read(12, "gradient_x"),
                read(13, "gradient_z"),
                read(14, "energy_x"),
                read(15, "energy_z"),
                write(16, "terms"),
            ],
        },
        Entry {
            kernel: Kernel::KernelSelect,
            entry_point: "kernel_select",
            bindings: &[
                read(17, "accepted"),
                read(11, "z"),
                write(18, "x_out"),
                read(13, "gradient_z"),
                write(19, "gradient_x_out"),
                read(15, "energy_z"),
                write(20, "energy_x_out"),
            ],
        },
        Entry {
            kernel: Kernel::MixtureResidual,
            entry_point: "mixture_residual",
            bindings: &[
                read(1, "data"),
                read(2, "chain_info"),
                write(5, "picks"),
                write(6, "weights"),
                write(21, "step_image"),
            ],
        },
    ],
};

buffers! {
    /// Buffers of `kernel_step`.
    KernelStepBuffers(KernelHmcParams) => Kernel::KernelStep, { data, chain_info, position, momentum, picks, weights }
}

buffers! {
    /// Buffers of `kernel_energy`.
    KernelEnergyBuffers(KernelHmcParams) => Kernel::KernelEnergy, { data, chain_info, at, energy, gradient }
}

buffers! {
    /// Buffers of `kernel_mh_terms`.
    KernelMhTermsBuffers(KernelHmcParams) => Kernel::KernelMhTerms, { x, z, gradient_x, gradient_z, energy_x, energy_z, terms }
}

buffers! {
    /// Buffers of `kernel_select`.
    KernelSelectBuffers(KernelHmcParams) => Kernel::KernelSelect, { accepted, z, x_out, gradient_z, gradient_x_out, energy_z, energy_x_out }
}

buffers! {
    /// Buffers of `mixture_residual`.
    MixtureResidualBuffers(KernelHmcParams) => Kernel::MixtureResidual, { data, chain_info, picks, weights, step_image }
}
