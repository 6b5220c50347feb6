//! The chain operations every method is written against; the CPU and the GPU backend implement each.

/// One operation on every chain's state (position X, proposal Z, momentum r, cached residuals,
/// energies and gradients), in the order a method's proposal runs them. A method is a sequence of
/// these (`Method::program`); a backend runs the sequence without knowing which method it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainOp {
    /// Z ← X.
    CopyPosition,
    /// ∇U(Z) ← ∇U(X) (with Z ← X, the state a leapfrog trajectory starts from).
    CopyGradient,
    /// r ← N(0, I) from the stream (seed, chain, outer, 0, Momentum).
    DrawMomentum,
    /// Step `n` (1-based) of Algorithm 1 on Z with a per-chain minibatch gradient g:
    /// r ← r − eta·g − eta·r (+ sqrt(2·eta)·ξ with SGHMC noise); Z ← Z + eta·r.
    MinibatchStep(u32),
    /// MALA's proposal Z = X − h·∇U(X) + sqrt(2h)·ξ, ξ from the stream (seed, chain, outer, 0, MalaNoise).
    LangevinProposal,
    /// The first half of a leapfrog step: r ← r − (ε/2)·∇U(Z); Z ← Z + ε·r.
    LeapfrogDrift,
    /// The second half of a leapfrog step: r ← r − (ε/2)·∇U(Z), with the gradient at the new Z.
    LeapfrogKick,
    /// Z's residual, likelihood energy and full gradient ∇U(Z).
    ProposalState,
    /// The Metropolis-Hastings terms of every chain's proposal (`MhTerms`), with the kinetic
    /// difference ½||r||² − ½||r_0||² when `kinetic` (r_0 drawn again from its stream).
    MhTerms {
        /// Whether the terms include the kinetic difference (HMC).
        kinetic: bool,
    },
}
