//! HMC on a 2-D energy: the baseline of Table 1 and the optional teacher of the learned sampler.
//!
//! The same transition as `methods::hmc` (r ~ N(0, I), L leapfrog steps of size ε, MH on the
//! Hamiltonian U + ½‖r‖²), written for a 2-D energy because the backends' HMC runs on the
//! sparse-code posterior only.

use rand::Rng;

use super::{normal, Target2d};
use crate::math::Portable;

/// HMC's step size and number of leapfrog steps.
#[derive(Clone, Copy, Debug)]
pub struct Hmc2d {
    /// Leapfrog step ε.
    pub step: f64,
    /// Leapfrog steps L per transition.
    pub leapfrog: usize,
}

impl Hmc2d {
    /// One transition from `x`; returns the new state and whether the proposal was accepted.
    pub fn transition(
        &self,
        target: &impl Target2d,
        x: [f64; 2],
        rng: &mut impl Rng,
    ) -> ([f64; 2], bool) {
        let (u0, g0) = target.energy_grad(x);
        let r0 = [normal(rng), normal(rng)];
        let mut q = x;
        let mut r = r0;
        let mut g = g0;
        let mut u = u0;
        for _ in 0..self.leapfrog {
            r[0] -= 0.5 * self.step * g[0];
            r[1] -= 0.5 * self.step * g[1];
            q[0] += self.step * r[0];
            q[1] += self.step * r[1];
            (u, g) = target.energy_grad(q);
            r[0] -= 0.5 * self.step * g[0];
            r[1] -= 0.5 * self.step * g[1];
        }
        let h0 = u0 + 0.5 * (r0[0] * r0[0] + r0[1] * r0[1]);
        let h1 = u + 0.5 * (r[0] * r[0] + r[1] * r[1]);
        let log_alpha = h0 - h1;
        if log_alpha.is_finite()
            && (log_alpha >= 0.0 || rng.random::<f64>().ln_portable() < log_alpha)
        {
            (q, true)
        } else {
            (x, false)
        }
    }
}
