//! Launcher for `kernel_hmc.wgsl`: Kernel HMC's steps, energies, MH terms and accept, on the
//! mixture likelihood's kernel density (its WGSL, `shaders/likelihood/mixture.wgsl`, is spliced in).
//!
//! Its params: `KernelHmcParams`, mirrored in `shaders/kernel_hmc.wgsl`.

use super::{
    read, wgsl_struct, write, Entry, Family, Kernel, Source, Stream, WgslStruct, PHILOX,
    WORKGROUP_SUM,
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

/// The kernel-HMC module and its four entry points.
pub(super) const FAMILY: Family = Family {
    module: "kernel_hmc",
    sources: &[
        Source::File(PHILOX),
        Source::File(WORKGROUP_SUM),
        Source::File(crate::model::likelihood::mixture::WGSL),
        Source::File(KERNEL_HMC),
    ],
    params: &KernelHmcParams::LAYOUT,
    entries: &[
        Entry {
            kernel: Kernel::KernelStep,
            entry_point: "kernel_step",
            bindings: &[
                read(1, "data"),
                read(17, "likelihood_chains"),
                write(3, "position"),
                write(4, "momentum"),
                write(18, "likelihood_scratch"),
            ],
        },
        Entry {
            kernel: Kernel::KernelEnergy,
            entry_point: "kernel_energy",
            bindings: &[
                read(1, "data"),
                read(17, "likelihood_chains"),
                read(7, "at"),
                write(8, "energy"),
                write(9, "scaled"),
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
                read(23, "accepted"),
                read(11, "z"),
                write(24, "x_out"),
                read(13, "gradient_z"),
                write(19, "gradient_x_out"),
                read(15, "energy_z"),
                write(20, "energy_x_out"),
            ],
        },
    ],
};

buffers! {
    /// Buffers of `kernel_step`.
    KernelStepBuffers(KernelHmcParams) => Kernel::KernelStep, { data, likelihood_chains, position, momentum, likelihood_scratch }
}

buffers! {
    /// Buffers of `kernel_energy`.
    KernelEnergyBuffers(KernelHmcParams) => Kernel::KernelEnergy, { data, likelihood_chains, at, energy, scaled }
}

buffers! {
    /// Buffers of `kernel_mh_terms`.
    KernelMhTermsBuffers(KernelHmcParams) => Kernel::KernelMhTerms, { x, z, gradient_x, gradient_z, energy_x, energy_z, terms }
}

buffers! {
    /// Buffers of `kernel_select`.
    KernelSelectBuffers(KernelHmcParams) => Kernel::KernelSelect, { accepted, z, x_out, gradient_z, gradient_x_out, energy_z, energy_x_out }
}
