//! Discounted Metropolis-Hastings (Algorithm 3): accept Z iff α > discount·u, u ~ U[0, 1).

use serde::Serialize;

use crate::math::Portable;
use crate::methods::Method;
use crate::rng::{Purpose, Stream};

/// What the Metropolis-Hastings rule needs of one chain's proposal Z from X (Algorithm 3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct MhTerms {
    /// U(X) − const at the current position (for diagnostics).
    pub energy_current: f32,
    /// U(Z) − U(X), computed as one reduction of per-element differences.
    pub energy_difference: f32,
    /// ||Z − X + Δ·∇U(X)||², Δ = eta·T (the forward proposal's norm).
    pub forward_norm: f32,
    /// ||X − Z + Δ·∇U(Z)||² (the reverse proposal's norm).
    pub reverse_norm: f32,
    /// HMC only (0 otherwise): ½||r_L||² − ½||r_0||², one reduction of per-element differences.
    pub kinetic_difference: f32,
}

impl MhTerms {
    /// Words per chain when a device writes the terms as f32: energy, difference, forward,
    /// reverse, kinetic.
    pub const WORDS: usize = 5;

    /// The terms of every chain from `WORDS` f32 per chain, as the GPU kernels write them.
    pub fn from_words(values: &[f32]) -> Vec<MhTerms> {
        values
            .chunks_exact(Self::WORDS)
            .map(|t| MhTerms {
                energy_current: t[0],
                energy_difference: t[1],
                forward_norm: t[2],
                reverse_norm: t[3],
                kinetic_difference: t[4],
            })
            .collect()
    }

    /// log α before the min with 0: −(U(Z) − U(X)) − reverse/(4Δ) + forward/(4Δ), in f64.
    /// NaN or infinite terms give NaN, which the rule rejects.
    pub fn log_ratio(&self, delta: f64) -> f64 {
        -(self.energy_difference as f64) - self.reverse_norm as f64 / (4.0 * delta)
            + self.forward_norm as f64 / (4.0 * delta)
    }

    /// HMC's log α before the min with 0: −(U(Z) − U(X)) − (½||r_L||² − ½||r_0||²), in f64.
    pub fn hamiltonian_log_ratio(&self) -> f64 {
        -(self.energy_difference as f64) - self.kinetic_difference as f64
    }

    /// The log ratio of `method` (`Method::log_ratio`: Algorithm 3's with Δ = `delta` for RMLD
    /// and MALA, the Hamiltonian's for HMC).
    pub fn method_log_ratio(&self, method: Method, delta: f64) -> f64 {
        method.log_ratio(self, delta)
    }
}

/// How proposals are judged.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct MhRule {
    /// false: accept every proposal (the paper's "RMLD w/o MH").
    pub enabled: bool,
    /// The discount (1 = SpHMC; > 1 makes acceptance harder).
    pub discount: f32,
    /// Δ = eta·T, the aggregated step size of the linearised correction (RMLD); h for MALA.
    pub delta: f32,
    /// Which log ratio applies (see `MhTerms::method_log_ratio`).
    pub method: Method,
}

/// The outcome for one chain.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MhDecision {
    /// min(0, log ratio); NaN when the terms were not finite.
    pub log_alpha: f64,
    /// Whether Z replaces X.
    pub accepted: bool,
    /// The proposal's terms were NaN or infinite (always rejected).
    pub divergent: bool,
}

impl MhRule {
    /// Decides chain `chain`'s proposal at outer iteration `outer`, with the uniform drawn from
    /// the stream (seed, chain, outer, 0, Accept) so both backends decide alike.
    pub fn decide(&self, terms: &MhTerms, seed: u64, chain: u32, outer: u32) -> MhDecision {
        let log_ratio = terms.method_log_ratio(self.method, self.delta as f64);
        let finite = [
            terms.energy_current,
            terms.energy_difference,
            terms.forward_norm,
            terms.reverse_norm,
            terms.kinetic_difference,
        ]
        .iter()
        .all(|v| v.is_finite());
        let divergent = !finite || !log_ratio.is_finite();
        let log_alpha = if divergent {
            f64::NAN
        } else {
            log_ratio.min(0.0)
        };
        if divergent {
            return MhDecision {
                log_alpha,
                accepted: false,
                divergent,
            };
        }
        if !self.enabled {
            return MhDecision {
                log_alpha,
                accepted: true,
                divergent,
            };
        }
        let u = Stream::new(seed, chain, outer, 0, Purpose::Accept).uniform() as f64;
        MhDecision {
            log_alpha,
            accepted: log_alpha.exp_portable() > self.discount as f64 * u,
            divergent,
        }
    }
}
