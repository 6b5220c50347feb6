//! Discounted Metropolis-Hastings (Algorithm 3): accept Z iff α > discount·u, u ~ U[0, 1).

use serde::Serialize;

use crate::backend::MhTerms;
use crate::dynamics::Method;
use crate::rng::{Purpose, Stream};

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
            accepted: log_alpha.exp() > self.discount as f64 * u,
            divergent,
        }
    }
}
