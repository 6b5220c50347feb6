//! HMC's trajectory carried in pixel space: A r and A ∇prior(z) per chain, so a leapfrog step
//! moves the residual by ε·A r and needs a d × d product by AAᵀ instead of a d × p one by A.
//!
//! The residual A z − a is linear in z and a leapfrog drift moves z by ε·r, so the residual
//! moves by ε·A r; a kick moves r by −(ε/2)·∇U(z), so A r moves by −(ε/2)·A ∇U(z), with
//! A ∇U(z) = κ·(AAᵀ) w + A ∇prior(z), where w is the residual the gradient product reads (the
//! tangent target's C⁻¹ r) and κ its scale. Laplace's ∇prior = λ·sign(z) is piecewise constant,
//! so its image changes only by the columns of the coordinates whose sign flipped. A step then
//! costs one d × p product (Aᵀ w, for the gradient) and one d × d product instead of two d × p
//! ones; the last step of every trajectory recomputes its residual with A, so the energy the MH
//! rule judges, and the state a chain keeps, are exact: the carried residual only steers the
//! trajectory, off by rounding (relative 1e-6 over 60 steps).

use rayon::prelude::*;

use super::gradient_step::chain_value as chain_step;
use super::{packed, CpuBackend};
use crate::methods::Method;
use crate::model::Prior;

/// Coordinates whose sign changes the drift looks for at once.
const FLIP_BLOCK: usize = 64;

/// The carried images of one run's chains (rows of d) and the Gram matrix they move by.
pub struct LeapfrogCarry {
    /// AAᵀ (d × d, symmetric), computed once and packed for W · AAᵀ.
    gram: packed::PackedMatrix,
    /// A r per chain: the momentum's image.
    momentum_image: Vec<f32>,
    /// A ∇prior(z) per chain.
    prior_image: Vec<f32>,
    /// A ∇U(z) per chain, at the last proposal state.
    gradient_image: Vec<f32>,
    /// Zeros (C × d): what the image products subtract.
    zeros: Vec<f32>,
    /// Proposal states computed in the current trajectory.
    steps_done: u32,
    /// The prior whose gradient the drift follows, while this trajectory is carried (set at its
    /// momentum draw; None: it recomputes).
    prior: Option<Prior>,
}

/// Whether carrying saves products: a trajectory of L steps costs 2L d × p products
/// recomputed and L·(1 + d/p) + 3 carried (A r₀, A ∇prior(x) and the exact last residual).
pub fn saves_products(d: usize, p: usize, leapfrog_steps: u32) -> bool {
    let steps = leapfrog_steps as f64;
    d < p && steps * (1.0 - d as f64 / p as f64) > 3.0
}

impl CpuBackend {
    /// The shared prior when the carry applies to this run's HMC: one whose gradient follows the
    /// sign (Laplace's), a fixed σ² (no learned precision, whose scale changes the drift), a
    /// likelihood linear in the residual (not the mixture), the products rmld's own
    /// (not OpenBLAS's).
    fn carried_prior(&self) -> Option<Prior> {
        let prior = self.target.prior;
        if !prior.gradient_follows_sign() {
            return None;
        }
        let mixture_ok = self.likelihood.is_linear_in_residual();
        #[cfg(feature = "blas")]
        let own_products = !self.blas_products;
        #[cfg(not(feature = "blas"))]
        let own_products = true;
        let (d, p) = (self.target.d(), self.target.p());
        (self.leapfrog_carry
            && own_products
            && mixture_ok
            && self.settings.method == Method::Hmc
            && self.prior_state.is_none()
            && self.precision.is_none()
            && saves_products(d, p, self.settings.leapfrog_steps))
        .then_some(prior)
    }

    /// Whether the current (or last) HMC trajectory carried its residual (`leapfrog_carry`).
    pub fn carries_trajectory(&self) -> bool {
        self.settings.method == Method::Hmc
            && self.carry.as_ref().is_some_and(|c| c.prior.is_some())
    }

    /// At the momentum draw: A r₀, A ∇prior(X) and A ∇U(X); Z's residual starts at X's.
    pub(super) fn start_carry(&mut self) {
        let Some(prior) = self.carried_prior() else {
            if let Some(c) = &mut self.carry {
                c.prior = None;
            }
            return;
        };
        let (d, p, chains) = (self.target.d(), self.target.p(), self.chains);
        let mut carry = self.carry.take().unwrap_or_else(|| {
            let gram = packed::gram(&self.target.dictionary.a, d, p);
            LeapfrogCarry {
                gram: packed::PackedMatrix::times_only(&gram, d, d),
                momentum_image: vec![0.0; chains * d],
                prior_image: vec![0.0; chains * d],
                gradient_image: vec![0.0; chains * d],
                zeros: vec![0.0; chains * d],
                steps_done: 0,
                prior: None,
            }
        });
        carry.steps_done = 0;
        carry.prior = Some(prior);
        self.residual_product(&self.momentum, &carry.zeros, &mut carry.momentum_image);
        let prior_gradient: Vec<f32> = self.x.par_iter().map(|&x| prior.gradient(x)).collect();
        self.residual_product(&prior_gradient, &carry.zeros, &mut carry.prior_image);
        self.z_residual.copy_from_slice(&self.x_residual);
        let scaled = match &self.cached {
            Some(m) => &m.x_scaled,
            None => &self.x_residual,
        };
        self.set_gradient_image(scaled, &mut carry);
        self.carry = Some(carry);
    }

    /// A ∇U = κ·(AAᵀ) w + A ∇prior from the residual w the gradient product read.
    fn set_gradient_image(&self, scaled: &[f32], carry: &mut LeapfrogCarry) {
        let d = self.target.d();
        let kappa = self.gradient_inv_sigma2()[0];
        let out = &mut carry.gradient_image;
        for (w, out) in scaled
            .chunks(self.chunk * d)
            .zip(out.chunks_mut(self.chunk * d))
        {
            carry.gram.transpose_product(w, out);
        }
        out.par_iter_mut()
            .zip(carry.prior_image.par_iter())
            .for_each(|(g, prior)| *g = kappa * *g + prior);
    }

    /// The first half of a leapfrog step on Z, its momentum and their images: r ← r − (ε/2)∇U;
    /// z ← z + ε r (as `exact::leapfrog_drift`); A r likewise; the residual ← residual + ε A r;
    /// A ∇prior(z) plus the columns of the coordinates whose prior gradient changed.
    pub(super) fn carried_drift(&mut self, steps: &[f32]) {
        let (d, p) = (self.target.d(), self.target.p());
        let Some((carry, carried)) = self.carry.as_mut().and_then(|c| c.prior.map(|l| (c, l)))
        else {
            return;
        };
        let columns = &self.a_columns;
        let images = carry
            .momentum_image
            .par_chunks_mut(d)
            .zip(carry.prior_image.par_chunks_mut(d))
            .zip(carry.gradient_image.par_chunks(d))
            .zip(self.z_residual.par_chunks_mut(d));
        self.z
            .par_chunks_mut(p)
            .zip(self.momentum.par_chunks_mut(p))
            .zip(self.z_gradient.par_chunks(p))
            .zip(images)
            .enumerate()
            .for_each(|(c, (((z, r), g), (((s, prior), image), residual)))| {
                let epsilon = chain_step(steps, c);
                let half = 0.5 * epsilon;
                // Blocks of FLIP_BLOCK coordinates: the update and a sign comparison that
                // vectorise, then the (rare: about 1% a step on MNIST) flips one by one.
                let mut before = [0f32; FLIP_BLOCK];
                for (block, ((z, r), g)) in z
                    .chunks_mut(FLIP_BLOCK)
                    .zip(r.chunks_mut(FLIP_BLOCK))
                    .zip(g.chunks(FLIP_BLOCK))
                    .enumerate()
                {
                    let before = &mut before[..z.len()];
                    before.copy_from_slice(z);
                    let mut flipped = false;
                    for (((z, r), &g), &b) in z.iter_mut().zip(r.iter_mut()).zip(g).zip(&*before) {
                        let rj = *r - half * g;
                        *r = rj;
                        *z += epsilon * rj;
                        flipped |= ((b > 0.0) != (*z > 0.0)) | ((b < 0.0) != (*z < 0.0));
                    }
                    if !flipped {
                        continue;
                    }
                    for (i, (&after, &b)) in z.iter().zip(&*before).enumerate() {
                        let change = carried.gradient(after) - carried.gradient(b);
                        if change != 0.0 {
                            let j = block * FLIP_BLOCK + i;
                            let column = &columns[j * d..(j + 1) * d];
                            prior
                                .iter_mut()
                                .zip(column)
                                .for_each(|(v, a)| *v += change * a);
                        }
                    }
                }
                for ((s, &image), residual) in s.iter_mut().zip(image).zip(residual.iter_mut()) {
                    let moved = *s - half * image;
                    *s = moved;
                    *residual += epsilon * moved;
                }
            });
    }

    /// Z's state in a carried trajectory: from the carried residual, and A ∇U(z) for the next
    /// kicks; the trajectory's last state recomputes its residual with A (exact).
    pub(super) fn carried_proposal_state(&mut self) {
        let Some(mut carry) = self.carry.take() else {
            return self.proposal_state();
        };
        carry.steps_done += 1;
        if carry.steps_done >= self.settings.leapfrog_steps {
            self.carry = Some(carry);
            return self.proposal_state();
        }
        let mut gradient = std::mem::take(&mut self.z_gradient);
        let mut cached = self.cached.take();
        let out = cached
            .as_mut()
            .map(|m| (&mut m.z_energy[..], &mut m.z_scaled[..]));
        self.gradient_from_residual(&self.z, &self.z_residual, &mut gradient, out);
        self.z_gradient = gradient;
        let scaled = match &cached {
            Some(m) => &m.z_scaled,
            None => &self.z_residual,
        };
        self.set_gradient_image(scaled, &mut carry);
        self.cached = cached;
        self.carry = Some(carry);
    }

    /// The second half of a leapfrog step on the momentum's image: A r ← A r − (ε/2)·A ∇U(z)
    /// (after the last state of a trajectory nothing reads it).
    pub(super) fn carried_kick(&mut self, steps: &[f32]) {
        let d = self.target.d();
        let last = self.settings.leapfrog_steps;
        let Some(carry) = self.carry.as_mut().filter(|c| c.steps_done < last) else {
            return;
        };
        carry
            .momentum_image
            .par_chunks_mut(d)
            .zip(carry.gradient_image.par_chunks(d))
            .enumerate()
            .for_each(|(c, (s, image))| {
                let half = 0.5 * chain_step(steps, c);
                s.iter_mut().zip(image).for_each(|(s, g)| *s -= half * g);
            });
    }
}
