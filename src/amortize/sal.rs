//! SAL-MC (paper 004, Algorithm 1): the operator G(x, ξ), its self-adversarial training, and chains by repeated application with an optional MH step.
//!
//! **The operator.** G(x, ξ) = x + μ(x) + σ(x) ⊙ ξ, ξ ~ N(0, I), where an MLP of x gives μ and
//! s, σ = σ_min + softplus(s). This is narrower than the paper's G, whose network takes ξ as an
//! input: with ξ entering linearly the transition density q(x'|x) = N(x'; x + μ(x), σ(x)²) is
//! known, so the MH step is exact, min(1, p(x')q(x|x') / (p(x)q(x'|x))). The paper's MH uses
//! p(x')/p(x) only (its Figure 5), which for a non-symmetric G leaves p²-like targets, not p.
//! Being local and unimodal, G cannot carry an MH-corrected chain between separated modes, so
//! MH-corrected chains also propose, four steps in five, from a Gaussian mixture fitted to the
//! teacher's samples (`mixture.rs`; ours, after Gabrié et al. 2022), with its own exact ratio.
//!
//! **Training** (Algorithm 1, per iteration t; M particles x̃):
//! 1. real samples x_t = AG-SVGD(x̃_{t−1}) (`svgd_steps` steps; [`Adjust::AgSvgd`]) or, as the
//!    "approximate Bayesian sampling" variant of §3.3, HMC steps ([`Adjust::Hmc`]);
//! 2. `disc_steps` (the paper's m) discriminator steps on L_D = −mean log D(x_t) − mean
//!    log(1 − D(G(x̃_{t−1}, ξ))) (eq. 8);
//! 3. one generator step on L_G = −mean log D(G(x̃, ξ)) (the non-saturating form of eq. 8)
//!    plus `w2_weight` · (1/M) Σᵢⱼ pᵢⱼ cᵢⱼ, the entropic approximation of W₂²(p_G(x̃), p(x̃)) (eq. 9-11),
//!    cᵢⱼ = ‖G(x̃⁽ⁱ⁾, ξ) − x̃⁽ʲ⁾‖², pᵢⱼ ∝ exp(−cᵢⱼ/λ) normalised over j, λ = the median cᵢⱼ;
//!    `w2_weight` is the paper's α/(2ε). Eq. 11 as printed, γ Σᵢⱼ cᵢⱼ exp(−cᵢⱼ/λ) with one constant
//!    γ, decreases once cᵢⱼ > λ, so minimising it pushes samples away (it diverged in our runs);
//!    normalising each row (half a Sinkhorn step) restores a cost that grows with distance.
//!    minus `jump_weight` · mean ‖G(x̃, ξ) − x̃‖² (ours, 0 by default: an expected-jump bonus;
//!    it diverged in our runs) minus `accept_weight` · mean α ‖G(x̃, ξ) − x̃‖², with α the exact
//!    MH acceptance of that move (ours, 0.3 by default: L2HMC's expected squared jump; without
//!    it the GAN only matches marginals and G settles near the identity, which an exact MH step
//!    mostly rejects);
//! 4. x̃_t = G(x̃_{t−1}, ξ), then m more applications of G.
//!
//! Hyper-parameters from the paper: m discriminator steps per generator step (it gives no value;
//! we use 2), α = 0.1 (its MNIST value). Ours, by a few trial runs: 256 particles, two hidden
//! layers of 64, Adam (lr 1e-3, β₁ = 0.5), σ_min = 0.05.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::agsvgd::{self, AgSvgdSettings};
use super::hmc2d::Hmc2d;
use super::mixture::Mixture2d;
use super::mlp::{Adam, Grads, Mlp, Tape};
use super::{normal, Target2d};
use crate::math::Portable;
use crate::{Error, Result};

/// How the "real" samples of each iteration are made from the generator's particles.
#[derive(Clone, Copy, Debug)]
pub enum Adjust {
    /// AG-SVGD steps (SAL-MC proper; needs only the energy).
    AgSvgd,
    /// HMC transitions of every particle (the teacher variant; needs the gradient).
    Hmc(Hmc2d),
}

/// SAL-MC's training settings.
#[derive(Clone, Debug)]
pub struct SalSettings {
    /// Width of the two hidden layers of G and of D.
    pub hidden: usize,
    /// Particles M per iteration.
    pub particles: usize,
    /// Training iterations (outer loop of Algorithm 1).
    pub iterations: usize,
    /// Discriminator steps per generator step, and extra applications of G per iteration (m).
    pub disc_steps: usize,
    /// Adam's learning rate for G and D.
    pub lr: f32,
    /// Weight of the W₂ regulariser (α/(2ε) in eq. 8).
    pub w2_weight: f32,
    /// Weight of the expected-jump bonus (ours; 0 = the paper's objective).
    pub jump_weight: f32,
    /// Weight of the expected-squared-jump objective of the exact MH step (ours; 0 = the paper):
    /// minus `accept_weight` · mean α(x̃, G(x̃, ξ)) ‖G(x̃, ξ) − x̃‖².
    pub accept_weight: f32,
    /// Floor of σ(x), so that every chain can reach every region.
    pub sigma_min: f32,
    /// How the real samples are made.
    pub adjust: Adjust,
    /// AG-SVGD steps per iteration (or HMC transitions with [`Adjust::Hmc`]).
    pub svgd_steps: usize,
    /// AG-SVGD's kernels and step.
    pub svgd: AgSvgdSettings,
    /// Seed of every draw in training.
    pub seed: u64,
    /// Components of the global proposal, a Gaussian mixture fitted by EM to the teacher's
    /// samples of the last 10% of iterations (ours, see `mixture.rs`; 0: none, G alone).
    pub global_components: usize,
    /// Probability that an MH-corrected step proposes from the global mixture instead of G.
    pub global_share: f64,
}

impl Default for SalSettings {
    fn default() -> Self {
        SalSettings {
            hidden: 64,
            particles: 256,
            iterations: 1500,
            disc_steps: 2,
            lr: 1e-3,
            w2_weight: 0.1,
            jump_weight: 0.0,
            accept_weight: 0.3,
            sigma_min: 0.05,
            adjust: Adjust::Hmc(Hmc2d {
                step: 0.1,
                leapfrog: 10,
            }),
            svgd_steps: 1,
            svgd: AgSvgdSettings::default(),
            seed: 0,
            global_components: 16,
            global_share: 0.8,
        }
    }
}

impl SalSettings {
    /// Checks the ranges; errors name the setting.
    pub fn validate(&self) -> Result<()> {
        if !(1..=4096).contains(&self.hidden) {
            return Err(Error::usage("hidden", "must be 1 to 4096"));
        }
        if !(2..=4096).contains(&self.particles) {
            return Err(Error::usage("particles", "must be 2 to 4096"));
        }
        if self.disc_steps == 0 || self.disc_steps > 100 {
            return Err(Error::usage("disc_steps", "must be 1 to 100"));
        }
        if !(self.lr > 0.0 && self.lr < 1.0) {
            return Err(Error::usage("lr", "must be in (0, 1)"));
        }
        if !(self.w2_weight >= 0.0 && self.w2_weight.is_finite()) {
            return Err(Error::usage("w2_weight", "must be finite and ≥ 0"));
        }
        if !(self.jump_weight >= 0.0 && self.jump_weight.is_finite()) {
            return Err(Error::usage("jump_weight", "must be finite and ≥ 0"));
        }
        if !(self.accept_weight >= 0.0 && self.accept_weight.is_finite()) {
            return Err(Error::usage("accept_weight", "must be finite and ≥ 0"));
        }
        if !(self.sigma_min > 0.0 && self.sigma_min.is_finite()) {
            return Err(Error::usage("sigma_min", "must be finite and > 0"));
        }
        if self.global_components > 256 {
            return Err(Error::usage("global_components", "must be 0 to 256"));
        }
        if !(0.0..=1.0).contains(&self.global_share) {
            return Err(Error::usage("global_share", "must be in [0, 1]"));
        }
        Ok(())
    }
}

/// The trained transition operator G(x, ξ) = x + μ(x) + σ(x) ⊙ ξ, and the global proposal
/// that MH-corrected chains mix with it.
#[derive(Clone, Debug)]
pub struct Operator {
    /// The network x ↦ (μ₁, μ₂, s₁, s₂).
    pub net: Mlp,
    /// σ = sigma_min + softplus(s).
    pub sigma_min: f32,
    /// The independence proposal fitted to the teacher's samples (None: G alone).
    pub global: Option<Mixture2d>,
    /// Probability that an MH-corrected step proposes from `global` instead of G.
    pub global_share: f64,
}

fn softplus(s: f32) -> f32 {
    if s > 20.0 {
        s
    } else {
        s.exp_portable().ln_1p_portable()
    }
}

fn sigmoid(s: f32) -> f32 {
    1.0 / (1.0 + (-s).exp_portable())
}

/// A chain run: the draws (chain-major, each `[x, y]`) and the MH acceptance rate.
#[derive(Clone, Debug)]
pub struct ChainRun {
    /// The draws.
    pub draws: Vec<[f64; 2]>,
    /// Accepted / proposed (1 without MH).
    pub acceptance: f64,
}

impl Operator {
    /// μ(x) and σ(x) for a batch of states.
    pub fn location_scale(&self, x: &[[f64; 2]]) -> Vec<([f64; 2], [f64; 2])> {
        let flat: Vec<f32> = x.iter().flat_map(|p| [p[0] as f32, p[1] as f32]).collect();
        let tape = self.net.forward(&flat, x.len());
        tape.output()
            .chunks_exact(4)
            .map(|o| {
                (
                    [o[0] as f64, o[1] as f64],
                    [
                        (self.sigma_min + softplus(o[2])) as f64,
                        (self.sigma_min + softplus(o[3])) as f64,
                    ],
                )
            })
            .collect()
    }

    /// One application of G to every state with fresh ξ ~ N(0, I).
    pub fn apply(&self, x: &[[f64; 2]], rng: &mut impl Rng) -> Vec<[f64; 2]> {
        self.location_scale(x)
            .iter()
            .zip(x)
            .map(|((mu, sigma), p)| {
                [
                    p[0] + mu[0] + sigma[0] * normal(rng),
                    p[1] + mu[1] + sigma[1] * normal(rng),
                ]
            })
            .collect()
    }

    /// log q(to | from) of the Gaussian transition, given (μ, σ) at `from`.
    fn log_q(from: [f64; 2], ls: &([f64; 2], [f64; 2]), to: [f64; 2]) -> f64 {
        let (mu, sigma) = ls;
        (0..2)
            .map(|d| {
                let z = (to[d] - from[d] - mu[d]) / sigma[d];
                -0.5 * z * z - sigma[d].ln_portable()
            })
            .sum()
    }

    /// `chains` chains of `draws` states each, from `starts`, by repeated application of G,
    /// with the exact MH step against `target` when `mh`. All chains advance together (one
    /// batched forward pass per step). Output is chain-major.
    pub fn chains(
        &self,
        target: &impl Target2d,
        starts: &[[f64; 2]],
        draws: usize,
        mh: bool,
        rng: &mut impl Rng,
    ) -> ChainRun {
        let ratio = mh.then_some(MhRatio::Exact);
        self.chains_with(target, starts, draws, ratio, rng)
    }

    /// [`Operator::chains`] with the MH step's ratio chosen (None: no MH step).
    pub fn chains_with(
        &self,
        target: &impl Target2d,
        starts: &[[f64; 2]],
        draws: usize,
        ratio: Option<MhRatio>,
        rng: &mut impl Rng,
    ) -> ChainRun {
        let c = starts.len();
        let mut x = starts.to_vec();
        let mut u: Vec<f64> = x.iter().map(|&p| target.energy_grad(p).0).collect();
        let mut out = vec![[0.0; 2]; c * draws];
        let mut accepted = 0usize;
        for t in 0..draws {
            let ls = self.location_scale(&x);
            let proposal: Vec<[f64; 2]> = ls
                .iter()
                .zip(&x)
                .map(|((mu, sigma), p)| {
                    [
                        p[0] + mu[0] + sigma[0] * normal(rng),
                        p[1] + mu[1] + sigma[1] * normal(rng),
                    ]
                })
                .collect();
            if let Some(ratio) = ratio {
                // With the exact ratio, each chain proposes from the global mixture with
                // probability `global_share` (an independence move), else from G.
                let global = match (&self.global, ratio) {
                    (Some(q), MhRatio::Exact) => Some(q),
                    _ => None,
                };
                let mut proposal = proposal;
                let chosen: Vec<bool> = (0..c)
                    .map(|k| match global {
                        Some(q) if rng.random::<f64>() < self.global_share => {
                            proposal[k] = q.sample(rng);
                            true
                        }
                        _ => false,
                    })
                    .collect();
                let back = self.location_scale(&proposal);
                for k in 0..c {
                    let u1 = target.energy_grad(proposal[k]).0;
                    let mut log_alpha = u[k] - u1;
                    if let Some(q) = global.filter(|_| chosen[k]) {
                        log_alpha += q.log_density(x[k]) - q.log_density(proposal[k]);
                    } else if ratio == MhRatio::Exact {
                        log_alpha += Self::log_q(proposal[k], &back[k], x[k])
                            - Self::log_q(x[k], &ls[k], proposal[k]);
                    }
                    if log_alpha.is_finite()
                        && (log_alpha >= 0.0 || rng.random::<f64>().ln_portable() < log_alpha)
                    {
                        x[k] = proposal[k];
                        u[k] = u1;
                        accepted += 1;
                    }
                }
            } else {
                x = proposal;
                accepted += c;
            }
            for k in 0..c {
                out[k * draws + t] = x[k];
            }
        }
        ChainRun {
            draws: out,
            acceptance: accepted as f64 / (c * draws).max(1) as f64,
        }
    }

    /// Single-chain convenience form of [`Operator::chains`].
    pub fn chain(
        &self,
        target: &impl Target2d,
        start: [f64; 2],
        draws: usize,
        mh: bool,
        rng: &mut impl Rng,
    ) -> ChainRun {
        self.chains(target, &[start], draws, mh, rng)
    }
}

/// The acceptance ratio of the MH step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MhRatio {
    /// p(x')q(x|x') / (p(x)q(x'|x)): exact, the target is invariant.
    Exact,
    /// p(x')/p(x), as paper 004's Figure 5 defines its acceptance: biased for a non-symmetric G
    /// (kept to show the bias; see tests/amortize.rs).
    TargetOnly,
}

/// What training measured.
#[derive(Clone, Debug, Default)]
pub struct TrainStats {
    /// Mean discriminator loss over the last 10% of iterations.
    pub disc_loss: f64,
    /// Mean generator adversarial loss over the last 10% of iterations.
    pub gen_loss: f64,
    /// Wall seconds.
    pub seconds: f64,
}

/// Where training stands after one iteration (what [`train`]'s callback sees).
#[derive(Clone, Debug)]
pub struct Progress {
    /// The iteration just done (from 0).
    pub iteration: usize,
    /// The discriminator's loss (mean over both batches' samples).
    pub disc_loss: f64,
    /// The generator's adversarial loss, −mean log D(G(x̃, ξ)).
    pub gen_loss: f64,
    /// Root mean square of the particles' coordinates.
    pub particle_rms: f64,
    /// Mean σ(x̃) over the particles and both coordinates.
    pub mean_sigma: f64,
    /// Mean ‖μ(x̃)‖ over the particles.
    pub mean_mu: f64,
}

/// One step of the teacher (`settings.adjust`) on every point: an AG-SVGD step, or one HMC
/// transition each.
fn adjust_step(
    target: &impl Target2d,
    settings: &SalSettings,
    points: &mut [[f64; 2]],
    rng: &mut StdRng,
) -> Result<()> {
    match settings.adjust {
        Adjust::AgSvgd => agsvgd::step(
            points,
            |p: [f64; 2]| target.energy_grad(p).0,
            &settings.svgd,
        )?,
        Adjust::Hmc(hmc) => {
            for p in points.iter_mut() {
                *p = hmc.transition(target, *p, rng).0;
            }
        }
    }
    Ok(())
}

/// G at the start of training: near the identity with σ ≈ 0.3 (the last layer shrunk, the s
/// bias at softplus⁻¹(0.25)).
fn initial_operator(settings: &SalSettings, rng: &mut StdRng) -> Operator {
    let h = settings.hidden;
    let mut g = Operator {
        net: Mlp::new(&[2, h, h, 4], rng),
        sigma_min: settings.sigma_min,
        global: None,
        global_share: settings.global_share,
    };
    {
        let mut p = g.net.params_mut();
        let n = p.len();
        for w in p[n - 2].iter_mut() {
            *w *= 0.1;
        }
        p[n - 1][2] = -1.2543;
        p[n - 1][3] = -1.2543;
    }
    g
}

/// The particles x̃ as f32 pairs.
fn flatten(points: &[[f64; 2]]) -> Vec<f32> {
    points
        .iter()
        .flat_map(|p| [p[0] as f32, p[1] as f32])
        .collect()
}

/// G's move of the particles x̃: x' = x̃ + μ(x̃) + σ(x̃)·ξ, with what its gradients need.
struct Proposals {
    /// x̃, flat.
    flat: Vec<f32>,
    /// ξ.
    xi: Vec<f32>,
    /// G's forward pass on x̃.
    tape: Tape,
    /// Its output (μ₁, μ₂, s₁, s₂ per particle).
    out: Vec<f32>,
    /// x', flat.
    fake: Vec<f32>,
}

impl Proposals {
    /// G(x̃, ξ) with its tape, ξ drawn from `rng`.
    fn new(g: &Operator, particles: &[[f64; 2]], rng: &mut StdRng) -> Self {
        let m = particles.len();
        let flat = flatten(particles);
        let xi: Vec<f32> = (0..2 * m).map(|_| normal(rng) as f32).collect();
        let tape = g.net.forward(&flat, m);
        let out = tape.output().to_vec();
        let mut fake = vec![0.0f32; 2 * m];
        for i in 0..m {
            for c in 0..2 {
                let sigma = g.sigma_min + softplus(out[4 * i + 2 + c]);
                fake[2 * i + c] = flat[2 * i + c] + out[4 * i + c] + sigma * xi[2 * i + c];
            }
        }
        Proposals {
            flat,
            xi,
            tape,
            out,
            fake,
        }
    }
}

/// Step 2: `steps` discriminator steps on L_D, real against fake; the last step's loss (mean
/// over both batches' samples).
fn train_discriminator(
    d: &mut Mlp,
    opt: &mut Adam,
    real: &[f32],
    fake: &[f32],
    steps: usize,
) -> f64 {
    let m = real.len() / 2;
    let mut disc_loss = 0.0;
    for _ in 0..steps {
        let mut grads = d.zero_grads();
        disc_loss = 0.0;
        for (batch, label) in [(real, 1.0f32), (fake, 0.0f32)] {
            let tape = d.forward(batch, m);
            let logits = tape.output();
            let grad: Vec<f32> = logits
                .iter()
                .map(|&l| {
                    let p = sigmoid(l);
                    disc_loss -= if label > 0.5 {
                        (p.max(1e-7)).ln_portable() as f64
                    } else {
                        ((1.0 - p).max(1e-7)).ln_portable() as f64
                    };
                    (p - label) / m as f32
                })
                .collect();
            d.backward(&tape, &grad, &mut grads);
        }
        opt.step(d, &grads);
    }
    disc_loss / m as f64
}

/// The generator's adversarial loss −mean log D(x') and its gradient in x'.
fn adversarial_gradient(d: &Mlp, fake: &[f32]) -> (f64, Vec<f32>) {
    let m = fake.len() / 2;
    let tape = d.forward(fake, m);
    let mut gen_loss = 0.0;
    let dlogit: Vec<f32> = tape
        .output()
        .iter()
        .map(|&l| {
            let p = sigmoid(l);
            gen_loss -= (p.max(1e-7)).ln_portable() as f64;
            (p - 1.0) / m as f32
        })
        .collect();
    gen_loss /= m as f64;
    let mut scratch = d.zero_grads();
    let dfake = d.backward(&tape, &dlogit, &mut scratch);
    (gen_loss, dfake)
}

/// Adds the gradient in x' of `weight` · (1/M) Σᵢⱼ pᵢⱼ cᵢⱼ, the entropic W₂² of the proposals
/// to the particles (see the module docs).
fn add_w2_gradient(weight: f32, fake: &[f32], flat: &[f32], dfake: &mut [f32]) {
    let m = fake.len() / 2;
    let mut c = vec![0.0f32; m * m];
    for i in 0..m {
        for j in 0..m {
            let dx = fake[2 * i] - flat[2 * j];
            let dy = fake[2 * i + 1] - flat[2 * j + 1];
            c[i * m + j] = dx * dx + dy * dy;
        }
    }
    let mut sorted = c.clone();
    let mid = sorted.len() / 2;
    let lambda = sorted
        .select_nth_unstable_by(mid, f32::total_cmp)
        .1
        .max(1e-6);
    // Row-normalised entropic plan pᵢⱼ = exp(−cᵢⱼ/λ) / Σₖ exp(−cᵢₖ/λ), held fixed in the
    // gradient: d/dxᵢ (1/M) Σⱼ pᵢⱼ cᵢⱼ = (2/M) Σⱼ pᵢⱼ (xᵢ − x̃ⱼ).
    let scale = weight / m as f32;
    for i in 0..m {
        let row = &c[i * m..(i + 1) * m];
        let min = row.iter().copied().fold(f32::INFINITY, f32::min);
        let weights: Vec<f32> = row
            .iter()
            .map(|&cij| (-(cij - min) / lambda).exp_portable())
            .collect();
        let z: f32 = weights.iter().sum();
        for (j, wij) in weights.iter().enumerate() {
            let f = scale * 2.0 * wij / z;
            dfake[2 * i] += f * (fake[2 * i] - flat[2 * j]);
            dfake[2 * i + 1] += f * (fake[2 * i + 1] - flat[2 * j + 1]);
        }
    }
}

/// Adds the gradients of −`weight` · mean αᵢ Jᵢ, α = min(1, exp(log α)) of the exact MH step,
/// J = ‖x' − x̃‖² (the expected squared jump of an MH-corrected step, as in L2HMC): in x' to
/// `dfake`, through G's pass on x' to `grads`; returns its gradient in σ(x̃) (per coordinate).
fn add_acceptance_gradient(
    target: &impl Target2d,
    g: &Operator,
    weight: f32,
    proposals: &Proposals,
    dfake: &mut [f32],
    grads: &mut Grads,
) -> Vec<f32> {
    let Proposals {
        flat,
        xi,
        out,
        fake,
        ..
    } = proposals;
    let m = flat.len() / 2;
    let mut dsigma1 = vec![0.0f32; 2 * m];
    let tape2 = g.net.forward(fake, m);
    let out2 = tape2.output().to_vec();
    let mut dout2 = vec![0.0f32; 4 * m];
    let w = weight / m as f32;
    for i in 0..m {
        let x = [flat[2 * i] as f64, flat[2 * i + 1] as f64];
        let xp = [fake[2 * i] as f64, fake[2 * i + 1] as f64];
        let (u0, _) = target.energy_grad(x);
        let (u1, grad1) = target.energy_grad(xp);
        let mut log_alpha = u0 - u1;
        let mut z = [0.0f64; 2];
        let mut sigma2 = [0.0f64; 2];
        let mut sigma1 = [0.0f64; 2];
        for c in 0..2 {
            sigma2[c] = (g.sigma_min + softplus(out2[4 * i + 2 + c])) as f64;
            sigma1[c] = (g.sigma_min + softplus(out[4 * i + 2 + c])) as f64;
            z[c] = (x[c] - xp[c] - out2[4 * i + c] as f64) / sigma2[c];
            let e = xi[2 * i + c] as f64;
            log_alpha += -0.5 * z[c] * z[c] - sigma2[c].ln_portable()
                + 0.5 * e * e
                + sigma1[c].ln_portable();
        }
        if !log_alpha.is_finite() {
            continue;
        }
        let alpha = log_alpha.min(0.0).exp_portable();
        let jump = (xp[0] - x[0]).powi(2) + (xp[1] - x[1]).powi(2);
        let dlog = if log_alpha < 0.0 {
            -(w as f64) * alpha * jump
        } else {
            0.0
        };
        for c in 0..2 {
            let direct =
                -(w as f64) * alpha * 2.0 * (xp[c] - x[c]) + dlog * (-grad1[c] + z[c] / sigma2[c]);
            dfake[2 * i + c] += direct as f32;
            dout2[4 * i + c] = (dlog * z[c] / sigma2[c]) as f32;
            let dsig2 = dlog * (z[c] * z[c] - 1.0) / sigma2[c];
            dout2[4 * i + 2 + c] = (dsig2 as f32) * sigmoid(out2[4 * i + 2 + c]);
            dsigma1[2 * i + c] = (dlog / sigma1[c]) as f32;
        }
    }
    let dinput = g.net.backward(&tape2, &dout2, grads);
    for (d, v) in dfake.iter_mut().zip(&dinput) {
        *d += v;
    }
    dsigma1
}

/// Step 3: one generator step on L_G and the regularisers the settings weigh; returns the
/// adversarial loss.
fn train_generator(
    target: &impl Target2d,
    g: &mut Operator,
    opt: &mut Adam,
    d: &Mlp,
    proposals: &Proposals,
    settings: &SalSettings,
) -> f64 {
    let Proposals {
        flat,
        xi,
        out,
        fake,
        ..
    } = proposals;
    let m = flat.len() / 2;
    let (gen_loss, mut dfake) = adversarial_gradient(d, fake);
    if settings.w2_weight > 0.0 {
        add_w2_gradient(settings.w2_weight, fake, flat, &mut dfake);
    }
    if settings.jump_weight > 0.0 {
        for k in 0..2 * m {
            dfake[k] -= 2.0 * settings.jump_weight * (fake[k] - flat[k]) / m as f32;
        }
    }
    let mut ggrads = g.net.zero_grads();
    // d loss / d log q(x'|x)'s σ(x̃) terms, from the acceptance objective.
    let dsigma1 = if settings.accept_weight > 0.0 {
        let weight = settings.accept_weight;
        add_acceptance_gradient(target, g, weight, proposals, &mut dfake, &mut ggrads)
    } else {
        vec![0.0f32; 2 * m]
    };
    let mut dout = vec![0.0f32; 4 * m];
    for i in 0..m {
        for c in 0..2 {
            let df = dfake[2 * i + c];
            dout[4 * i + c] = df;
            dout[4 * i + 2 + c] =
                (df * xi[2 * i + c] + dsigma1[2 * i + c]) * sigmoid(out[4 * i + 2 + c]);
        }
    }
    g.net.backward(&proposals.tape, &dout, &mut ggrads);
    opt.step(&mut g.net, &ggrads);
    gen_loss
}

/// Trains G on `target` by Algorithm 1 (see the module docs). `progress` is called after each
/// iteration; returning false stops early (the operator so far is returned).
pub fn train(
    target: &impl Target2d,
    settings: &SalSettings,
    mut progress: impl FnMut(&Progress) -> bool,
) -> Result<(Operator, TrainStats)> {
    settings.validate()?;
    let start = std::time::Instant::now();
    let mut rng = StdRng::seed_from_u64(settings.seed);
    let h = settings.hidden;
    let mut g = initial_operator(settings, &mut rng);
    let mut d = Mlp::new(&[2, h, h, 1], &mut rng);
    let mut opt_g = Adam::new(&g.net, settings.lr);
    let mut opt_d = Adam::new(&d, settings.lr);
    let m = settings.particles;
    let mut particles: Vec<[f64; 2]> = (0..m)
        .map(|_| [normal(&mut rng), normal(&mut rng)])
        .collect();
    let (mut disc_sum, mut gen_sum, mut tail) = (0.0, 0.0, 0usize);
    let tail_from = settings.iterations - settings.iterations / 10;
    // The global proposal's samples: a population of its own (G's particles need not sit on
    // the target), started like the particles and moved by the teacher once per iteration,
    // from its own random stream so that G's training is the same with it or without it; its
    // states over the last 10% of iterations are kept.
    let mut teacher_rng = StdRng::seed_from_u64(settings.seed ^ 0x9e37_79b9_7f4a_7c15);
    let mut teacher: Vec<[f64; 2]> = if settings.global_components > 0 {
        (0..m)
            .map(|_| [normal(&mut teacher_rng), normal(&mut teacher_rng)])
            .collect()
    } else {
        Vec::new()
    };
    let mut teacher_tail: Vec<[f64; 2]> = Vec::new();
    for t in 0..settings.iterations {
        if !teacher.is_empty() {
            adjust_step(target, settings, &mut teacher, &mut teacher_rng)?;
            if t >= tail_from {
                teacher_tail.extend_from_slice(&teacher);
            }
        }
        // 1. Real samples from the particles.
        let mut real = particles.clone();
        for _ in 0..settings.svgd_steps {
            adjust_step(target, settings, &mut real, &mut rng)?;
        }
        let proposals = Proposals::new(&g, &particles, &mut rng);
        let real_flat = flatten(&real);
        // 2. Discriminator steps.
        let disc_loss = train_discriminator(
            &mut d,
            &mut opt_d,
            &real_flat,
            &proposals.fake,
            settings.disc_steps,
        );
        // 3. Generator step.
        let gen_loss = train_generator(target, &mut g, &mut opt_g, &d, &proposals, settings);
        let (mut sigma_sum, mut mu_sum) = (0.0, 0.0);
        for o in proposals.out.chunks_exact(4) {
            mu_sum += (o[0] as f64).hypot_portable(o[1] as f64);
            sigma_sum +=
                2.0 * settings.sigma_min as f64 + softplus(o[2]) as f64 + softplus(o[3]) as f64;
        }
        // 4. Move the particles by G, m + 1 times.
        for _ in 0..=settings.disc_steps {
            particles = g.apply(&particles, &mut rng);
        }
        if particles
            .iter()
            .any(|p| !p[0].is_finite() || !p[1].is_finite())
        {
            return Err(Error::Internal(format!(
                "SAL-MC training diverged at iteration {t} (non-finite particles; lower lr)"
            )));
        }
        if t >= tail_from {
            disc_sum += disc_loss;
            gen_sum += gen_loss;
            tail += 1;
        }
        let rms = (particles
            .iter()
            .map(|p| p[0] * p[0] + p[1] * p[1])
            .sum::<f64>()
            / (2 * m) as f64)
            .sqrt();
        let report = Progress {
            iteration: t,
            disc_loss,
            gen_loss,
            particle_rms: rms,
            mean_sigma: sigma_sum / (2 * m) as f64,
            mean_mu: mu_sum / m as f64,
        };
        if !progress(&report) {
            break;
        }
    }
    let tail = tail.max(1) as f64;
    // At most 4096 of them (every k-th), so EM stays cheap.
    let stride = teacher_tail.len().div_ceil(4096).max(1);
    let fit_points: Vec<[f64; 2]> = teacher_tail.into_iter().step_by(stride).collect();
    g.global = Mixture2d::fit(&fit_points, settings.global_components, &mut teacher_rng);
    Ok((
        g,
        TrainStats {
            disc_loss: disc_sum / tail,
            gen_loss: gen_sum / tail,
            seconds: start.elapsed().as_secs_f64(),
        },
    ))
}
