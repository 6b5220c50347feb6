//! The target: the RMLD posterior over sparse codes X given a dataset and a dictionary A.
//!
//! U(X) = 1/(2n) Σ_i ||A X − x_i||² + lam·||X||₁ = ½||A X − xbar||² + lam·||X||₁ + const, so the
//! full-data energy and gradient need only xbar; minibatch gradients use per-chain minibatch means.
//! Class-conditional chains (`ChainClasses`) use their class's rows and mean instead; `TargetKind`
//! offers a mixture over the class's images, the posterior of one image's code, and a Gaussian
//! along the span of an image's nearest neighbours (`tangent`) beside it.

pub mod classes;
pub mod dictionary;
pub mod kind;
pub mod posterior;
pub mod tangent;

pub use classes::ChainClasses;
pub use dictionary::Dictionary;
pub use kind::{start_rows, TargetKind};
pub use posterior::{Observations, Target};
pub use tangent::{TangentBasis, TangentSettings};
