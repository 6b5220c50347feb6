//! CPU twin of `shaders/kernel_hmc.wgsl`, and the kernel-HMC CPU backend (rayon over chains); the
//! kernel density's minibatch weights and energy are the mixture likelihood's
//! (`model::likelihood::mixture`).

use std::sync::Arc;

use rayon::prelude::*;

use super::{ChainInfo, KernelTarget};
use crate::backend::cpu::gradient_step::draw_momentum;
use crate::backend::{Backend, BackendInfo, DynamicsSettings, MhTerms};
use crate::methods::ChainOp;
use crate::model::likelihood::mixture::{kernel_energy, minibatch_mean, StepScratch};
use crate::model::likelihood::StepDraw;
use crate::model::Observations;
use crate::rng::{Purpose, Stream};
use crate::{Error, Result};

/// Which step of which outer iteration, and the step's constants (the WGSL's `KernelHmcParams`).
#[derive(Clone, Copy, Debug)]
pub struct StepParams {
    /// Seed of every stream.
    pub seed: u64,
    /// Outer iteration (1-based).
    pub outer: u32,
    /// Step t (1-based).
    pub step: u32,
    /// Minibatch size m.
    pub batch: u32,
    /// Step size (and friction) eta.
    pub eta: f32,
    /// Inject SGHMC noise `noise_scale`·ξ into the momentum.
    pub noise: bool,
    /// sqrt(2·eta), rounded on the host as the GPU receives it.
    pub noise_scale: f32,
}

/// One momentum step of Algorithm 1 for chain `chain` on its minibatch kernel gradient (the
/// minibatch and weights of `minibatch_mean`), g = (z − Σ_b w_b x_b)/h²; r ← r − eta·g − eta·r (+ sqrt(2·eta)·ξ); z ← z + eta·r.
pub fn kernel_step(
    observations: &Observations,
    info: &ChainInfo,
    chain: u32,
    params: &StepParams,
    z: &mut [f32],
    momentum: &mut [f32],
    scratch: &mut StepScratch,
) {
    let draw = StepDraw {
        seed: params.seed,
        first_chain: 0,
        outer: params.outer,
        step: params.step,
        batch: params.batch,
    };
    let total = minibatch_mean(observations, info, chain, &draw, z, scratch);
    let StepScratch { mean, noise, .. } = scratch;
    let p = params;
    if p.noise {
        Stream::new(p.seed, chain, p.outer, p.step, Purpose::SghmcNoise).fill_normal(noise);
    }
    for j in 0..z.len() {
        let g = (z[j] - mean[j] / total) * info.inv_h2;
        let mut next = momentum[j] - p.eta * g - p.eta * momentum[j];
        if p.noise {
            next += p.noise_scale * noise[j];
        }
        momentum[j] = next;
        z[j] += p.eta * next;
    }
}

/// The MH terms of one chain as Algorithm 3 defines them (kinetic difference 0).
///
/// U(Z) − U(X) is the difference of the two full-class log-sum-exp energies, not one reduction of
/// per-element differences as the sparse-code backends compute it: a log-sum-exp has no such
/// form. Both energies are O(1 + |ln count|) (h is the class's median distance), so the f32
/// difference loses little.
pub fn kernel_mh_terms(
    x: &[f32],
    z: &[f32],
    gradient_x: &[f32],
    gradient_z: &[f32],
    energy_x: f32,
    energy_z: f32,
    delta: f32,
) -> MhTerms {
    let (mut forward, mut reverse) = (0f32, 0f32);
    for j in 0..x.len() {
        let step = z[j] - x[j];
        let f = step + delta * gradient_x[j];
        let r = -step + delta * gradient_z[j];
        forward += f * f;
        reverse += r * r;
    }
    MhTerms {
        energy_current: energy_x,
        energy_difference: energy_z - energy_x,
        forward_norm: forward,
        reverse_norm: reverse,
        kinetic_difference: 0.0,
    }
}

/// Chain state a proposal is judged by, or replaced with: positions and gradients (C × d) and
/// energies (C).
pub struct KernelState<'a> {
    /// Positions, C × d.
    pub position: &'a mut [f32],
    /// Full-class gradients, C × d.
    pub gradient: &'a mut [f32],
    /// Full-class energies, C.
    pub energy: &'a mut [f32],
}

/// X ← Z with its gradient and energy for every chain whose entry is true (rows of d).
pub fn kernel_select(
    accepted: &[bool],
    proposal: (&[f32], &[f32], &[f32]),
    current: KernelState,
    d: usize,
) {
    let (z, gz, ez) = proposal;
    current
        .position
        .par_chunks_mut(d)
        .zip(current.gradient.par_chunks_mut(d))
        .zip(current.energy.par_iter_mut())
        .zip(z.par_chunks(d).zip(gz.par_chunks(d)).zip(ez.par_iter()))
        .zip(accepted.par_iter())
        .for_each(|((((x, gx), ex), ((z, gz), ez)), &a)| {
            if a {
                x.copy_from_slice(z);
                gx.copy_from_slice(gz);
                *ex = *ez;
            }
        });
}

/// Rejects what the kernel-HMC backends do not run: anything but RMLD dynamics, an empty batch,
/// a step size that is not finite.
pub(crate) fn check_settings(settings: &DynamicsSettings) -> Result<()> {
    if settings.method.is_exact() {
        return Err(Error::usage(
            "method",
            format!(
                "kernel-hmc runs only the rmld dynamics, not {}",
                settings.method.name()
            ),
        ));
    }
    if settings.batch == 0 || !settings.eta.is_finite() {
        return Err(Error::usage(
            "batch",
            format!(
                "kernel-hmc needs a batch of at least one row and a finite eta (batch {}, eta {})",
                settings.batch, settings.eta
            ),
        ));
    }
    Ok(())
}

/// C chains of kernel HMC on the host: current (x, ∇U(x), U(x)), the proposal alike, momenta.
pub struct KernelHmcCpu {
    target: Arc<KernelTarget>,
    settings: DynamicsSettings,
    info: Vec<ChainInfo>,
    x: Vec<f32>,
    x_gradient: Vec<f32>,
    x_energy: Vec<f32>,
    z: Vec<f32>,
    z_gradient: Vec<f32>,
    z_energy: Vec<f32>,
    momentum: Vec<f32>,
}

impl KernelHmcCpu {
    /// One chain per entry of `target.chain_rows`, positions zero until loaded.
    ///
    /// Fails (`Error::Usage`) for MALA or HMC settings, an empty batch or a non-finite eta.
    pub fn new(target: Arc<KernelTarget>, settings: DynamicsSettings) -> Result<Self> {
        check_settings(&settings)?;
        let (chains, d) = (target.chains(), target.d());
        Ok(KernelHmcCpu {
            info: target.chain_info(),
            settings,
            x: vec![0.0; chains * d],
            x_gradient: vec![0.0; chains * d],
            x_energy: vec![0.0; chains],
            z: vec![0.0; chains * d],
            z_gradient: vec![0.0; chains * d],
            z_energy: vec![0.0; chains],
            momentum: vec![0.0; chains * d],
            target,
        })
    }

    /// The cached full-class energies U(X), one per chain.
    pub fn energies(&self) -> Result<Vec<f32>> {
        Ok(self.x_energy.clone())
    }

    /// The cached full-class gradients ∇U(X), C × d.
    pub fn gradients(&self) -> Result<Vec<f32>> {
        Ok(self.x_gradient.clone())
    }
}

/// U and ∇U of every chain at `positions`.
fn energies_and_gradients(
    observations: &Observations,
    info: &[ChainInfo],
    positions: &[f32],
    gradient: &mut [f32],
    energy: &mut [f32],
) {
    let d = observations.d;
    positions
        .par_chunks(d)
        .zip(gradient.par_chunks_mut(d))
        .zip(energy.par_iter_mut())
        .zip(info.par_iter())
        .for_each_init(Vec::new, |weights, (((x, g), e), info)| {
            *e = kernel_energy(observations, info, x, g, weights);
        });
}

impl KernelHmcCpu {
    /// Step `step` of Algorithm 1 on every chain's Z, with its minibatch kernel gradient.
    fn kernel_steps(&mut self, outer: u32, step: u32) {
        let d = self.target.d();
        let s = &self.settings;
        let observations = &*self.target.observations;
        let params = StepParams {
            seed: s.seed,
            outer,
            step,
            batch: s.batch,
            eta: s.eta,
            noise: s.sghmc_noise,
            noise_scale: (2.0 * s.eta).sqrt(),
        };
        let offset = s.chain_offset;
        self.z
            .par_chunks_mut(d)
            .zip(self.momentum.par_chunks_mut(d))
            .zip(self.info.par_iter())
            .enumerate()
            .for_each_init(
                || StepScratch::new(s.batch as usize, d, s.sghmc_noise),
                |scratch, (chain, ((z, r), info))| {
                    kernel_step(
                        observations,
                        info,
                        offset + chain as u32,
                        &params,
                        z,
                        r,
                        scratch,
                    );
                },
            );
    }

    /// Every chain's MH terms from the cached energies and gradients at X and Z.
    fn terms(&self) -> Vec<MhTerms> {
        let d = self.target.d();
        let delta = self.settings.delta();
        (0..self.chains())
            .into_par_iter()
            .map(|c| {
                let row = c * d..(c + 1) * d;
                kernel_mh_terms(
                    &self.x[row.clone()],
                    &self.z[row.clone()],
                    &self.x_gradient[row.clone()],
                    &self.z_gradient[row],
                    self.x_energy[c],
                    self.z_energy[c],
                    delta,
                )
            })
            .collect()
    }
}

impl Backend for KernelHmcCpu {
    fn info(&self) -> BackendInfo {
        let (d, m) = (self.target.d(), self.settings.batch as usize);
        BackendInfo {
            kind: "cpu".into(),
            device: format!("{} (kernel-hmc)", crate::backend::cpu::cpu_threads()),
            // X, Z, both gradients, r (d each), both energies; per-thread scratch aside.
            bytes_per_chain: 4 * (5 * d + 2) + 8 * m,
        }
    }

    fn chains(&self) -> usize {
        self.target.chains()
    }

    fn load_positions(&mut self, positions: &[f32]) -> Result<()> {
        if positions.len() != self.x.len() {
            return Err(Error::Internal(format!(
                "load_positions: {} values for {} chains of {} pixels",
                positions.len(),
                self.chains(),
                self.target.d()
            )));
        }
        self.x.copy_from_slice(positions);
        energies_and_gradients(
            &self.target.observations,
            &self.info,
            &self.x,
            &mut self.x_gradient,
            &mut self.x_energy,
        );
        Ok(())
    }

    fn propose(&mut self, outer: u32) -> Result<Vec<MhTerms>> {
        let mut terms = None;
        for op in self.settings.method.program(&self.settings) {
            match op {
                ChainOp::CopyPosition => self.z.copy_from_slice(&self.x),
                ChainOp::DrawMomentum => {
                    let s = &self.settings;
                    let d = self.target.d();
                    draw_momentum(s.seed, s.chain_offset, outer, &mut self.momentum, d)
                }
                ChainOp::MinibatchStep(step) => self.kernel_steps(outer, step),
                ChainOp::ProposalState => energies_and_gradients(
                    &self.target.observations,
                    &self.info,
                    &self.z,
                    &mut self.z_gradient,
                    &mut self.z_energy,
                ),
                ChainOp::MhTerms { .. } => terms = Some(self.terms()),
                other => {
                    return Err(Error::Internal(format!(
                        "Kernel HMC runs RMLD's dynamics only, not {other:?}"
                    )))
                }
            }
        }
        terms.ok_or_else(|| Error::Internal("a method's program ended without MH terms".into()))
    }

    fn accept(&mut self, accepted: &[bool]) -> Result<()> {
        if accepted.len() != self.chains() {
            return Err(Error::Internal(format!(
                "accept: {} decisions for {} chains",
                accepted.len(),
                self.chains()
            )));
        }
        kernel_select(
            accepted,
            (&self.z, &self.z_gradient, &self.z_energy),
            KernelState {
                position: &mut self.x,
                gradient: &mut self.x_gradient,
                energy: &mut self.x_energy,
            },
            self.target.d(),
        );
        Ok(())
    }

    fn positions(&mut self) -> Result<Vec<f32>> {
        Ok(self.x.clone())
    }

    fn images(&mut self) -> Result<Vec<f32>> {
        Ok(self.x.clone())
    }
}
