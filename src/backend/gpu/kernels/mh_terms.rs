//! Launcher for `mh_terms.wgsl`: the MH terms per chain, from the residuals or from the mixture's
//! cached energies.
//!
//! `Params` fields its WGSL reads: d, p, chain_offset, outer, delta, inv_sigma2, kinetic,
//! seed_lo, seed_hi, and the prior's lam.

use super::{read, write, Entry, Family, Kernel, Source, PARAMS, PHILOX};

const MH_TERMS: &str = include_str!("../../../../shaders/mh_terms.wgsl");

/// The MH-terms module (takes the prior's WGSL) and its two entry points.
pub(super) const FAMILY: Family = Family {
    module: "mh_terms",
    sources: &[
        Source::File(PARAMS),
        Source::File(PHILOX),
        Source::Prior,
        Source::File(MH_TERMS),
    ],
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
            ],
        },
    ],
};

buffers! {
    /// Buffers of `mh_terms`.
    MhTermsBuffers => Kernel::MhTerms, { x, z, residual_x, residual_z, gradient_x, gradient_z, terms, momentum }
}

buffers! {
    /// Buffers of `mh_terms_mixture`.
    MhTermsMixtureBuffers => Kernel::MhTermsMixture, { x, z, gradient_x, gradient_z, terms, momentum, energy_x, energy_z }
}
