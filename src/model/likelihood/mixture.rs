//! The mixture likelihood: −log Σ_i exp(−||A X − x_i||²/(2σ²)) over the chain's class, a
//! Gaussian kernel density of A X: its step residual (a minibatch's softmax weights) and its
//! cached energy (the full class by an online log-sum-exp) on the CPU, their WGSL twin
//! `shaders/likelihood/mixture.wgsl`, its per-chain kernel info and the f64 references. Kernel
//! HMC (`backend::kernel_hmc`) runs the same density in image space with these functions.

use std::sync::Arc;

use rayon::prelude::*;

use super::kernel_density::{ChainInfo, KernelTarget};
use super::{ChainData, StepDraw};
use crate::io::Pixels;
use crate::math::Portable;
use crate::model::wgsl::WgslModel;
use crate::model::{Observations, Target};
use crate::rng::{Purpose, Stream};
use crate::Result;

/// The WGSL twin of the step residual and the energy (`likelihood_chains`: one `ChainInfo` per
/// chain; `likelihood_scratch`: the minibatch's rows and weights, 2m words per chain).
pub const WGSL: &str = include_str!("../../../shaders/likelihood/mixture.wgsl");

/// What the backends compile and bind for this likelihood.
pub const WGSL_MODEL: WgslModel = WgslModel {
    name: "mixture",
    wgsl: WGSL,
    params: None,
    chains: true,
    scratch: true,
};

/// Class rows per chunk of the full-class energy, as `CHUNK` in the WGSL (its workgroup memory).
pub const CHUNK: usize = 256;

/// The running maximum's start: exp(NEG_HUGE − anything finite) is 0, without an infinity.
const NEG_HUGE: f32 = -3.0e38;

/// The mixture of C chains: each chain's class rows, 1/σ² (as the kernel's 1/h²) and the
/// observations' scale; the residual is A X itself (offset zero).
#[derive(Clone, Debug)]
pub struct Mixture {
    /// Per chain: its class's rows, 1/h² and the scale.
    pub info: Vec<ChainInfo>,
    /// The observations the classes index.
    pub observations: Arc<Observations>,
    /// The offsets: zero, C × d.
    pub(super) zeros: Vec<f32>,
}

impl Mixture {
    /// The mixture of `info.len()` chains over `observations`.
    pub fn new(info: Vec<ChainInfo>, observations: Arc<Observations>) -> Self {
        let zeros = vec![0.0; info.len() * observations.d];
        Mixture {
            info,
            observations,
            zeros,
        }
    }

    /// Every chain's minibatch residual of step `draw`, in place over A Z (rows of d):
    /// (A z − Σ_b w_b x_b)/h² (`mixture_residual`).
    pub fn step_residual(&self, draw: &StepDraw, residual: &mut [f32]) {
        let d = self.observations.d;
        let observations = &*self.observations;
        residual
            .par_chunks_mut(d)
            .zip(self.info.par_iter())
            .enumerate()
            .for_each_init(
                || StepScratch::new(draw.batch as usize, d, false),
                |scratch, (c, (image, info))| {
                    let chain = draw.first_chain + c as u32;
                    mixture_residual(observations, info, chain, draw, image, scratch);
                },
            );
    }

    /// Every chain's full-class energy and scaled residual at the images A X (rows of d).
    pub fn energy(&self, residual: &[f32], energy: &mut [f32], scaled: &mut [f32]) {
        let d = self.observations.d;
        let observations = &*self.observations;
        energy
            .par_iter_mut()
            .zip(scaled.par_chunks_mut(d))
            .zip(residual.par_chunks(d))
            .zip(self.info.par_iter())
            .for_each_init(Vec::new, |weights, (((e, s), image), info)| {
                *e = kernel_energy(observations, info, image, s, weights);
            });
    }

    /// The chain info as its WGSL reads it.
    pub(super) fn chain_data(&self) -> ChainData {
        ChainData {
            bytes: bytemuck::cast_slice(&self.info).to_vec(),
            bytes_per_chain: std::mem::size_of::<ChainInfo>(),
        }
    }
}

/// Calls `f(j, x_ij)` for every coordinate of row `i` in model units (raw × scale), as the
/// WGSL's `model_value`.
#[inline]
fn visit_row(observations: &Observations, i: usize, scale: f32, mut f: impl FnMut(usize, f32)) {
    let range = i * observations.d..(i + 1) * observations.d;
    match &observations.pixels {
        Pixels::U8(v) => v[range]
            .iter()
            .enumerate()
            .for_each(|(j, &x)| f(j, x as f32 * scale)),
        Pixels::F32(v) => v[range]
            .iter()
            .enumerate()
            .for_each(|(j, &x)| f(j, x * scale)),
    }
}

/// −||z − x_i||²/(2h²) for row `i`, the squared distance summed in coordinate order.
#[inline]
fn exponent(observations: &Observations, info: &ChainInfo, i: usize, z: &[f32]) -> f32 {
    let mut dist2 = 0f32;
    visit_row(observations, i, info.scale, |j, v| {
        let diff = z[j] - v;
        dist2 += diff * diff;
    });
    -0.5 * info.inv_h2 * dist2
}

/// One chain's scratch for a minibatch's weights (and Kernel HMC's step noise).
pub struct StepScratch {
    /// Minibatch rows, m.
    pub picks: Vec<u32>,
    /// Exponents, then unnormalised softmax weights, m.
    pub weights: Vec<f32>,
    /// Σ_b w_b x_b before normalisation, d.
    pub mean: Vec<f32>,
    /// SGHMC noise ξ, d (empty without noise).
    pub noise: Vec<f32>,
}

impl StepScratch {
    /// Scratch for minibatches of `batch` rows in dimension `d`.
    pub fn new(batch: usize, d: usize, noise: bool) -> Self {
        StepScratch {
            picks: vec![0; batch],
            weights: vec![0.0; batch],
            mean: vec![0.0; d],
            noise: vec![0.0; if noise { d } else { 0 }],
        }
    }
}

/// The minibatch of step `draw` of chain `chain` (global index): m rows drawn i.i.d. from the
/// class by the stream (seed, chain, outer, step, Minibatch), softmax weights
/// w_b ∝ exp(−||z − x_b||²/(2h²)) (max exponent subtracted) and the unnormalised Σ_b w_b x_b into
/// `scratch.mean`; returns Σ_b w_b.
pub fn minibatch_mean(
    observations: &Observations,
    info: &ChainInfo,
    chain: u32,
    draw: &StepDraw,
    z: &[f32],
    scratch: &mut StepScratch,
) -> f32 {
    let StepScratch {
        picks,
        weights,
        mean,
        ..
    } = scratch;
    Stream::new(draw.seed, chain, draw.outer, draw.step, Purpose::Minibatch)
        .fill_index(info.count, picks);
    let mut max = NEG_HUGE;
    for (pick, w) in picks.iter_mut().zip(weights.iter_mut()) {
        *pick += info.start;
        *w = exponent(observations, info, *pick as usize, z);
        max = max.max(*w);
    }
    let mut total = 0f32;
    for w in weights.iter_mut() {
        *w = (*w - max).exp_portable();
        total += *w;
    }
    mean.fill(0.0);
    for (&pick, &w) in picks.iter().zip(weights.iter()) {
        visit_row(observations, pick as usize, info.scale, |j, v| {
            mean[j] += w * v
        });
    }
    total
}

/// The mixture's minibatch residual (twin of `likelihood_step_residual` in the WGSL), in place:
/// `image` holds A z on entry and (A z − Σ_b w_b x_b)/h² on return, with the minibatch and
/// weights of `minibatch_mean` (h² = σ², so the caller's product Aᵀ· is the gradient's data term).
pub fn mixture_residual(
    observations: &Observations,
    info: &ChainInfo,
    chain: u32,
    draw: &StepDraw,
    image: &mut [f32],
    scratch: &mut StepScratch,
) {
    let total = minibatch_mean(observations, info, chain, draw, image, scratch);
    for (v, m) in image.iter_mut().zip(&scratch.mean) {
        *v = (*v - m / total) * info.inv_h2;
    }
}

/// U(at) over the chain's full class and ∇U(at) into `gradient`, by an online log-sum-exp over
/// chunks of `CHUNK` rows: per chunk the exponents, the new running max M, the running sum and
/// the weighted row sum rescaled by exp(M_old − M) and the chunk's exp(e_i − M) added. Returns
/// U = −(M + ln S); ∇U = (at − Σ_i w_i x_i / S)/h². `weights` is scratch.
pub fn kernel_energy(
    observations: &Observations,
    info: &ChainInfo,
    at: &[f32],
    gradient: &mut [f32],
    weights: &mut Vec<f32>,
) -> f32 {
    let (start, count) = (info.start as usize, info.count as usize);
    gradient.fill(0.0);
    let (mut running_max, mut running_sum) = (NEG_HUGE, 0f32);
    for first in (0..count).step_by(CHUNK) {
        let rows = start + first..start + count.min(first + CHUNK);
        weights.clear();
        weights.extend(rows.clone().map(|i| exponent(observations, info, i, at)));
        let new_max = weights.iter().fold(running_max, |m, &e| m.max(e));
        let rescale = (running_max - new_max).exp_portable();
        let mut chunk_sum = 0f32;
        for w in weights.iter_mut() {
            *w = (*w - new_max).exp_portable();
            chunk_sum += *w;
        }
        running_sum = running_sum * rescale + chunk_sum;
        gradient.iter_mut().for_each(|g| *g *= rescale);
        for (i, &w) in rows.zip(weights.iter()) {
            visit_row(observations, i, info.scale, |j, v| gradient[j] += w * v);
        }
        running_max = new_max;
    }
    for (g, &x) in gradient.iter_mut().zip(at) {
        *g = (x - *g / running_sum) * info.inv_h2;
    }
    -(running_max + running_sum.ln_portable())
}

impl Target {
    /// What the mixture kernels read per chain: its rows, 1/σ² as the kernel's 1/h², the scale.
    pub fn mixture_chain_info(&self, chains: usize) -> Result<Vec<ChainInfo>> {
        Ok(self
            .chain_rows(chains)?
            .into_iter()
            .map(|[start, count]| ChainInfo {
                start,
                count,
                inv_h2: self.inv_sigma2(),
                scale: self.observations.scale,
            })
            .collect())
    }

    /// The mixture of chain `chain` as a kernel density in image space (bandwidth² σ²), for the
    /// f64 references.
    fn mixture_density(&self, chains: usize) -> Result<KernelTarget> {
        let rows = self.chain_rows(chains)?;
        let n = rows.len();
        KernelTarget::new(self.observations.clone(), rows, vec![self.sigma2; n])
    }

    /// The mixture's U(X) − const of chain `chain` (of `chains`), in f64 (the reference):
    /// −log Σ_i exp(−||A X − x_i||²/(2σ²)) + lam·||X||₁ over the chain's rows.
    pub fn mixture_energy_f64(&self, chains: usize, chain: usize, x: &[f32]) -> Result<f64> {
        let at = self.image_f32(x);
        Ok(self.mixture_density(chains)?.energy_f64(chain, &at) + self.prior.energy_f64(x))
    }

    /// The mixture's ∇U(X) = Aᵀ(A X − Σ_i w_i x_i)/σ² + lam·sign(X), w the softmax weights over
    /// the chain's rows, in f64 (the reference).
    pub fn mixture_gradient_f64(&self, chains: usize, chain: usize, x: &[f32]) -> Result<Vec<f64>> {
        let at = self.image_f32(x);
        let pixel = self.mixture_density(chains)?.gradient_f64(chain, &at);
        let mut g = self.dictionary.apply_transpose_f64(&pixel);
        for (gj, &xj) in g.iter_mut().zip(x) {
            *gj += self.prior.gradient_f64(xj);
        }
        Ok(g)
    }

    fn image_f32(&self, x: &[f32]) -> Vec<f32> {
        let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        self.dictionary
            .apply_f64(&x64)
            .into_iter()
            .map(|v| v as f32)
            .collect()
    }
}
