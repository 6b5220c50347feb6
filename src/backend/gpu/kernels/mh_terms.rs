//! Launcher for `mh_terms.wgsl`: the MH terms per chain, from the residuals or from the mixture's
//! cached energies.
//!
//! Its params: `MhTermsParams`, mirrored in `shaders/mh_terms.wgsl`.

use super::{read, write, Entry, Family, Kernel, Source, Stream, WgslStruct, PHILOX, PRIOR_STATE};

const MH_TERMS: &str = include_str!("../../../../shaders/mh_terms.wgsl");

wgsl_struct! {
    /// `struct MhTermsParams` in `shaders/mh_terms.wgsl` (a uniform, one slot per outer
    /// iteration).
    pub struct MhTermsParams {
        /// The momentum's streams (HMC's kinetic difference draws r_0 again).
        stream: Stream,
        /// Observation dimension d.
        d: u32,
        /// Code dimension p.
        p: u32,
        /// 1: add HMC's kinetic difference (the program's `ChainOp::MhTerms`).
        kinetic: u32,
        /// Delta of the MH proposal norms: eta T (RMLD), h (MALA).
        delta: f32,
        /// 1/sigma², the likelihood's precision.
        inv_sigma2: f32,
        /// The prior's scalar (`Prior::gpu_scalar`; Laplace: lam), read by its WGSL.
        lam: f32,
        /// 1: `--noise gibbs`, chain_precision holds √τ and the terms are the chain's in noise
        /// units (see `cpu::mh_terms::mh_terms_with`).
        preconditioned: u32,
        /// Padding to 16 bytes.
        _pad1: u32,
    }
}

/// The MH-terms module (takes the prior's WGSL) and its two entry points.
pub(super) const FAMILY: Family = Family {
    module: "mh_terms",
    sources: &[Source::File(PHILOX), Source::Prior, Source::File(MH_TERMS)],
    params: &MhTermsParams::LAYOUT,
    entries: &[
        Entry {
            kernel: Kernel::MhTerms,
            entry_point: "mh_terms",
            bindings: &[
                read(1, "x"),
                read(2, "z"),
                read(3, "residual_x"),
                read(4, "residual_z"),
                read(5, "gradient_x"),
                read(6, "gradient_z"),
                write(7, "terms"),
                read(8, "momentum"),
                read(13, "chain_precision"),
                PRIOR_STATE,
            ],
        },
        Entry {
            kernel: Kernel::MhTermsMixture,
            entry_point: "mh_terms_mixture",
            bindings: &[
                read(1, "x"),
                read(2, "z"),
                read(5, "gradient_x"),
                read(6, "gradient_z"),
                write(7, "terms"),
                read(8, "momentum"),
                read(9, "energy_x"),
                read(10, "energy_z"),
                PRIOR_STATE,
            ],
        },
    ],
};

buffers! {
    /// Buffers of `mh_terms`.
    MhTermsBuffers(MhTermsParams) => Kernel::MhTerms, { x, z, residual_x, residual_z, gradient_x, gradient_z, terms, momentum, chain_precision, prior_state }
}

buffers! {
    /// Buffers of `mh_terms_mixture`.
    MhTermsMixtureBuffers(MhTermsParams) => Kernel::MhTermsMixture, { x, z, gradient_x, gradient_z, terms, momentum, energy_x, energy_z, prior_state }
}
