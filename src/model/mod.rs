//! The model layer: the observations and their classes, the dictionary A, the prior over the codes
//! and the likelihood of A X, and `Target`, the posterior the backends sample; the data's own length
//! scales (`data_scale`), which scale a preset's step size, noise and tangent span to the data.
//!
//! U(X) = 1/(2n) Σ_i ||A X − x_i||² + lam·||X||₁ = ½||A X − xbar||² + lam·||X||₁ + const, so the
//! full-data energy and gradient need only xbar; minibatch gradients use per-chain minibatch means.
//! Class-conditional chains (`ChainClasses`) use their class's rows and mean instead. The priors
//! (`prior/`: Laplace, SSGL) and the likelihoods (`likelihood/`: the paper's Gaussian, `mixture`,
//! `tangent`, and the `kernel_density` behind Kernel HMC) each sit in a file of their own with
//! their CPU terms and typed params (`wgsl`), their WGSL in `shaders/prior/` and
//! `shaders/likelihood/` under the same name: data the backends run, never kinds they match on.

pub(crate) mod atoms;
pub(crate) mod classes;
pub(crate) mod data_scale;
pub(crate) mod deformation;
pub(crate) mod dictionary;
pub(crate) mod elastic;
pub(crate) mod fit;
pub(crate) mod interpolation;
pub(crate) mod learned_spreads;
pub(crate) mod likelihood;
pub(crate) mod neighbours;
pub(crate) mod posterior;
pub(crate) mod prior;
pub(crate) mod shading;
pub mod wgsl;

pub use atoms::AtomFamily;
pub use classes::ChainClasses;
pub use dictionary::{Dictionary, Precision};
pub use likelihood::kernel_density::KernelTarget;
pub use likelihood::noise::{
    code_l1_norms, gibbs_precision, residual_norms, NoiseModel, DEFAULT_NOISE_E, DEFAULT_NOISE_F,
};
pub use likelihood::tangent::{
    tangent_energy, tangent_step, TangentBasis, TangentParams, TangentSettings,
};
pub use likelihood::{
    start_rows, ChainData, Gaussian, Likelihood, Mixture, StepDraw, Tangent, TargetKind,
    TermsInputs,
};
pub use posterior::{Observations, Target};
pub use prior::ssgl::{sa_update, stride as ssgl_state_stride};
pub use prior::{
    ChainState, Laplace, LaplaceParams, Prior, Ssgl, SsglMode, SsglUpdateParams, UpdateScalars,
};
