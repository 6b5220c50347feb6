//! Warm-up step-size adaptation across chains: dual averaging (Hoffman & Gelman 2014) on the chains' mean acceptance probability.
//!
//! Every outer iteration of the warm-up, the mean over all chains of min(1, α) (a divergent
//! proposal counts 0) is one observation of the acceptance statistic; dual averaging (Nesterov
//! 2009, as Hoffman & Gelman 2014, Algorithm 5, and Stan's `stepsize_adaptation` run it, with
//! Stan's constants γ = 0.05, t₀ = 10, κ = 0.75 and μ = log(10 ε₀)) moves log ε toward the
//! target. At the end of the warm-up the step size freezes at the averaged iterate exp(log ε̄),
//! so every later draw is exact for the frozen kernel. Averaging over thousands of chains makes
//! each observation nearly noise-free, which is why one iteration of the warm-up is worth many of
//! a single chain's.
//!
//! One step size serves every chain of a run (the kernels read η as one scalar per run); a run
//! whose chains sample several classes adapts one step size for all of them.

use serde::{Deserialize, Serialize};

use crate::methods::Method;

/// Stan's default target acceptance for HMC/NUTS (`delta = 0.8`, Stan Reference Manual,
/// "HMC algorithm parameters"; BlackJAX's `window_adaptation` uses the same 0.8).
pub const HMC_TARGET_ACCEPTANCE: f64 = 0.8;

/// The asymptotically optimal acceptance rate of MALA, 0.574 (Roberts & Rosenthal 1998,
/// "Optimal scaling of discrete approximations to Langevin diffusions"; BlackJAX's MALA docs).
pub const MALA_TARGET_ACCEPTANCE: f64 = 0.574;

/// Dual averaging's γ (Stan's `gamma`).
const GAMMA: f64 = 0.05;
/// Dual averaging's t₀ (Stan's `t0`).
const T0: f64 = 10.0;
/// Dual averaging's κ (Stan's `kappa`).
const KAPPA: f64 = 0.75;

/// What a run adapts, and for how long.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Adaptation {
    /// Warm-up iterations 1..=iterations adapt the step size (the burn-in); it freezes after.
    pub iterations: u32,
    /// The mean acceptance probability aimed at.
    pub target: f64,
}

impl Adaptation {
    /// The documented target acceptance of `method`, or None for a method whose acceptance is
    /// not a tuning criterion (RMLD: its η is also the friction of the dynamics and its MH test
    /// is a discounted linearised correction, so the target is not an acceptance rate).
    pub fn target_for(method: Method) -> Option<f64> {
        match method {
            Method::Mala => Some(MALA_TARGET_ACCEPTANCE),
            Method::Hmc => Some(HMC_TARGET_ACCEPTANCE),
            Method::Rmld => None,
        }
    }
}

/// The dual-averaging state; with the run's settings it fixes every later step size, so a
/// checkpoint saves it whole.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepAdaptation {
    /// The step size the run started from, ε₀.
    pub initial_step: f64,
    /// The target acceptance.
    pub target: f64,
    /// Warm-up iterations that adapt.
    pub iterations: u32,
    /// Iterations adapted so far, t.
    pub count: u32,
    /// μ = log(10 ε₀).
    pub mu: f64,
    /// log ε_t, the step size the next warm-up iteration uses.
    pub log_step: f64,
    /// log ε̄_t, the averaged iterate the step size freezes at.
    pub log_step_bar: f64,
    /// H̄_t, the averaged gap target − acceptance.
    pub h_bar: f64,
    /// The mean acceptance probability over the warm-up (over iterations and chains).
    pub mean_acceptance: f64,
}

impl StepAdaptation {
    /// Starts adapting from step size `initial_step`.
    pub fn new(initial_step: f32, adaptation: Adaptation) -> Self {
        let log0 = (initial_step as f64).ln();
        StepAdaptation {
            initial_step: initial_step as f64,
            target: adaptation.target,
            iterations: adaptation.iterations,
            count: 0,
            mu: (10.0f64).ln() + log0,
            log_step: log0,
            log_step_bar: 0.0,
            h_bar: 0.0,
            mean_acceptance: 0.0,
        }
    }

    /// True once every warm-up iteration has adapted.
    pub fn frozen(&self) -> bool {
        self.count >= self.iterations
    }

    /// The step size the next iteration runs with: ε_t during the warm-up, exp(log ε̄) after.
    pub fn step(&self) -> f32 {
        if self.frozen() && self.count > 0 {
            self.log_step_bar.exp() as f32
        } else {
            self.log_step.exp() as f32
        }
    }

    /// One warm-up iteration's observation: the chains' MH log α (NaN: divergent, counted as 0).
    /// Does nothing once frozen.
    pub fn observe(&mut self, log_alpha: &[f64]) {
        if self.frozen() || log_alpha.is_empty() {
            return;
        }
        let accept = mean_acceptance(log_alpha);
        self.count += 1;
        let t = self.count as f64;
        self.mean_acceptance += (accept - self.mean_acceptance) / t;
        let w = 1.0 / (t + T0);
        self.h_bar = (1.0 - w) * self.h_bar + w * (self.target - accept);
        self.log_step = self.mu - t.sqrt() / GAMMA * self.h_bar;
        let eta = t.powf(-KAPPA);
        self.log_step_bar = eta * self.log_step + (1.0 - eta) * self.log_step_bar;
    }
}

/// The mean over chains of min(1, exp(log α)), NaN (divergent) counting 0.
pub fn mean_acceptance(log_alpha: &[f64]) -> f64 {
    let sum: f64 = log_alpha
        .iter()
        .map(|&a| if a.is_nan() { 0.0 } else { a.min(0.0).exp() })
        .sum();
    sum / log_alpha.len().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy kernel whose acceptance is exp(−ε): dual averaging must find ε = −ln(target).
    #[test]
    fn dual_averaging_finds_the_step_of_a_known_acceptance_curve() {
        let target = 0.574;
        let mut a = StepAdaptation::new(
            3.0,
            Adaptation {
                iterations: 500,
                target,
            },
        );
        while !a.frozen() {
            let log_alpha = -(a.step() as f64);
            a.observe(&[log_alpha, log_alpha]);
        }
        let want = -target.ln();
        assert!(
            (a.step() as f64 - want).abs() < 0.02 * want,
            "step {} want {want}",
            a.step()
        );
        let before = a;
        a.observe(&[0.0]);
        assert_eq!(a, before, "a frozen adaptation must not move");
    }

    #[test]
    fn divergent_proposals_count_as_rejections() {
        assert_eq!(mean_acceptance(&[f64::NAN, 0.0]), 0.5);
        assert!((mean_acceptance(&[(0.25f64).ln()]) - 0.25).abs() < 1e-12);
    }
}
