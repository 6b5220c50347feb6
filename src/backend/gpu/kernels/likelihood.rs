//! Launcher for `likelihood.wgsl` and `mh_terms.wgsl`, compiled with the target's prior and
//! likelihood: the likelihood's step and energy passes and the MH terms.
//!
//! Its params: `LikelihoodParams`, mirrored in `shaders/likelihood.wgsl`. The likelihood's own
//! bindings (`likelihood_params`, `likelihood_chains`, `likelihood_scratch`) and the prior's
//! (`prior_state`, `prior_params`) are in a layout only where the model declares them.

use super::{
    read, wgsl_struct, write, Binding, Condition, Entry, Family, Kernel, Source, Stream,
    WgslStruct, PHILOX, PRIOR_PARAMS, PRIOR_STATE, WORKGROUP_SUM,
};

const LIKELIHOOD: &str = include_str!("../../../../shaders/likelihood.wgsl");
const MH_TERMS: &str = include_str!("../../../../shaders/mh_terms.wgsl");

wgsl_struct! {
    /// `struct LikelihoodParams` in `shaders/likelihood.wgsl` (a uniform, one slot per step; the
    /// MH terms read slot 0).
    pub struct LikelihoodParams {
        /// The minibatch picks' and the momentum's streams.
        stream: Stream,
        /// Observation dimension d.
        d: u32,
        /// Code dimension p.
        p: u32,
        /// Minibatch size m.
        batch: u32,
        /// Step within the outer iteration (a counter word).
        step: u32,
        /// 1: data packed 4 bytes per word; 0: f32 bits.
        u8_data: u32,
        /// 1: add HMC's kinetic difference (the program's `ChainOp::MhTerms`).
        kinetic: u32,
        /// Delta of the MH proposal norms: eta T (RMLD), h (MALA).
        delta: f32,
        /// 1: `--noise gibbs`, chain_precision holds √τ and the terms are the chain's in noise
        /// units (see `cpu::mh_terms::mh_terms_with`).
        preconditioned: u32,
    }
}

/// The likelihood's params (`likelihood_params`, its own struct), where it has any.
const LIKELIHOOD_PARAMS: Binding =
    Binding::when(16, "likelihood_params", true, Condition::LikelihoodParams);
/// The likelihood's per-chain data (`likelihood_chains`), where it has any.
const LIKELIHOOD_CHAINS: Binding =
    Binding::when(17, "likelihood_chains", true, Condition::LikelihoodChains);
/// The likelihood's per-chain scratch (`likelihood_scratch`), where it writes any.
const LIKELIHOOD_SCRATCH: Binding = Binding::when(
    18,
    "likelihood_scratch",
    false,
    Condition::LikelihoodScratch,
);

/// The likelihood module (takes the prior's and the likelihood's WGSL) and its three entry points.
pub(super) const FAMILY: Family = Family {
    module: "likelihood",
    sources: &[
        Source::File(PHILOX),
        Source::File(WORKGROUP_SUM),
        Source::Prior,
        Source::Likelihood,
        Source::File(MH_TERMS),
        Source::File(LIKELIHOOD),
    ],
    params: &LikelihoodParams::LAYOUT,
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
                read(9, "energy_x"),
                read(10, "energy_z"),
                read(13, "chain_precision"),
                PRIOR_STATE,
                PRIOR_PARAMS,
            ],
        },
        Entry {
            kernel: Kernel::LikelihoodStep,
            entry_point: "likelihood_step_pass",
            bindings: &[
                read(15, "data"),
                LIKELIHOOD_PARAMS,
                LIKELIHOOD_CHAINS,
                LIKELIHOOD_SCRATCH,
                write(19, "step_residual"),
            ],
        },
        Entry {
            kernel: Kernel::LikelihoodEnergy,
            entry_point: "likelihood_energy_pass",
            bindings: &[
                read(15, "data"),
                LIKELIHOOD_PARAMS,
                LIKELIHOOD_CHAINS,
                LIKELIHOOD_SCRATCH,
                read(20, "at"),
                write(21, "energy"),
                write(22, "scaled"),
            ],
        },
    ],
};

buffers! {
    /// Buffers of `mh_terms` (a likelihood without cached energies binds stand-ins for them).
    MhTermsBuffers(LikelihoodParams) => Kernel::MhTerms, { x, z, residual_x, residual_z, gradient_x, gradient_z, terms, momentum, energy_x, energy_z, chain_precision, prior_state, prior_params }
}

buffers! {
    /// Buffers of `likelihood_step_pass`.
    LikelihoodStepBuffers(LikelihoodParams) => Kernel::LikelihoodStep, { data, likelihood_params, likelihood_chains, likelihood_scratch, step_residual }
}

buffers! {
    /// Buffers of `likelihood_energy_pass`.
    LikelihoodEnergyBuffers(LikelihoodParams) => Kernel::LikelihoodEnergy, { data, likelihood_params, likelihood_chains, likelihood_scratch, at, energy, scaled }
}
