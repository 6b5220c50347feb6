//! The likelihoods: which energy of A X the chains sample (the paper's Gaussian around the class
//! mean or one image, a mixture over the class's images, a Gaussian along the span of one image's
//! nearest neighbours), each in its own file with its CPU terms, its typed params and its WGSL
//! twin in `shaders/likelihood/` under the same name, and the kernel density behind Kernel HMC.
//!
//! A likelihood is data the backends run, never a kind they match on: what each chain's residual
//! subtracts (`offsets`), whether a step's residual subtracts a gathered minibatch mean instead
//! (`gathers`), what turns a step's residual into the one the gradient product reads
//! (`step_residual`), what turns a state's residual into a cached energy and that scaled residual
//! (`energy`), and its part of the MH terms (`energy_terms`), on the CPU here and in WGSL
//! (`wgsl_model`).

pub(crate) mod gaussian;
pub(crate) mod kernel_density;
pub(crate) mod mixture;
pub(crate) mod noise;
pub(crate) mod tangent;

use serde::{Deserialize, Serialize};

use std::sync::Arc;

use super::wgsl::{WgslBytes, WgslModel};
use super::{ChainClasses, Target};
use crate::rng::{philox::index_from_word, Purpose, Stream};
use crate::{Error, Result};
pub use gaussian::Gaussian;
pub use mixture::Mixture;
pub use tangent::{Tangent, TangentBasis, TangentSettings};

/// The energy U(X) the chains sample (`--target`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    /// The paper's posterior: 1/(2σ²)·||A X − xbar||² + lam·||X||₁ (xbar: the class's mean).
    #[default]
    Paper,
    /// A sparse-prior mixture over the class's images:
    /// −log Σ_i exp(−||A X − x_i||²/(2σ²)) + lam·||X||₁.
    Mixture,
    /// The posterior of one image's code: 1/(2σ²)·||A X − x_anchor||² + lam·||X||₁, the anchor
    /// being the image the chain starts from (Bayesian compressive sensing of that image).
    Local,
    /// A Gaussian in image space around the chain's anchor a (its start image), wide along the
    /// span of its k nearest same-class images n_j: ½(A X − a)ᵀ C⁻¹ (A X − a) + lam·||X||₁ with
    /// C = (s²/k)·B Bᵀ + σ²·I, B = [n_j − a] (`--tangent-k`, `--tangent-scale`).
    Tangent,
}

impl TargetKind {
    /// Whether its likelihood reads a Gaussian residual (paper, local): the noise precision can
    /// be learned beside it (`--noise gibbs`), and the SSGL prior's σ update reads it.
    pub fn is_gaussian_residual(&self) -> bool {
        match self {
            TargetKind::Paper | TargetKind::Local => true,
            TargetKind::Mixture | TargetKind::Tangent => false,
        }
    }

    /// Whether it spans each chain's k nearest same-class images (tangent): `tangent_k` and
    /// `tangent_scale` apply to it alone.
    pub fn has_tangent_span(&self) -> bool {
        match self {
            TargetKind::Tangent => true,
            TargetKind::Paper | TargetKind::Mixture | TargetKind::Local => false,
        }
    }

    /// Every target, for the tests that run each on every backend.
    pub const ALL: [TargetKind; 4] = [
        TargetKind::Paper,
        TargetKind::Mixture,
        TargetKind::Local,
        TargetKind::Tangent,
    ];
}

/// The row each chain starts from: a uniform pick within its rows from the stream
/// (seed, chain, 0, 0, InitPick), as LASSO and data starts draw it.
pub fn start_rows(rows: &[[u32; 2]], seed: u64) -> Vec<usize> {
    start_rows_from(rows, seed, 0)
}

/// As [`start_rows`] for the chains from `first_chain` on (`rows[c]` is chain
/// `first_chain + c`'s): a shard's chains pick the single run's rows.
pub fn start_rows_from(rows: &[[u32; 2]], seed: u64, first_chain: u32) -> Vec<usize> {
    rows.iter()
        .enumerate()
        .map(|(c, &[first, count])| {
            let word =
                Stream::new(seed, first_chain + c as u32, 0, 0, Purpose::InitPick).block(0)[0];
            (first + index_from_word(word, count)) as usize
        })
        .collect()
}

impl Target {
    /// The target of `kind` for `chains` chains whose starts are drawn with `seed`: `paper`
    /// unchanged; `local` gives each chain a class of one row, the image it starts from (so its
    /// minibatches and mean are that image); `mixture` marks the target for the backends;
    /// `tangent` anchors as `local` and computes each chain's neighbour basis from its class.
    ///
    /// Fails (`Error::Usage`) for `tangent` with bad settings or a class of fewer than k + 1 images.
    pub fn with_kind(mut self, kind: TargetKind, chains: usize, seed: u64) -> Result<Self> {
        match kind {
            TargetKind::Paper => {}
            TargetKind::Mixture => {
                self.chain_rows(chains)?;
            }
            TargetKind::Local => {
                let anchors = start_rows(&self.chain_rows(chains)?, seed);
                self.anchor_chains(&anchors);
            }
            TargetKind::Tangent => {
                // The neighbours come from the class, so the bases precede the anchoring.
                let class_rows = self.chain_rows(chains)?;
                let anchors = start_rows(&class_rows, seed);
                let basis = TangentBasis::new(
                    &self.observations,
                    &anchors,
                    &class_rows,
                    self.tangent,
                    self.sigma2,
                )?;
                self.tangent_basis = Some(Arc::new(basis));
                self.anchor_chains(&anchors);
            }
        }
        self.kind = kind;
        Ok(self)
    }

    /// Each chain's class becomes the one image it starts from (`anchors`, one row per chain):
    /// its rows and mean are that image.
    fn anchor_chains(&mut self, anchors: &[usize]) {
        let rows = anchors.iter().map(|&i| [i as u32, 1]).collect();
        let means = anchors
            .iter()
            .flat_map(|&i| self.observations.row(i))
            .collect::<Vec<_>>();
        // Each chain stays in its class (one class without classes).
        let class = match &self.classes {
            Some(c) => c.class.clone(),
            None => vec![0; anchors.len()],
        };
        self.classes = Some(ChainClasses { rows, means, class });
    }

    /// The same target with the tangent target's k and scale (used by a later
    /// `with_kind(TargetKind::Tangent, ..)`).
    pub fn with_tangent(mut self, settings: TangentSettings) -> Self {
        self.tangent = settings;
        self
    }

    /// The tangent target's bases for `chains` chains.
    ///
    /// Fails (`Error::Internal`) when the target was not built by `with_kind(Tangent, ..)` for
    /// that many chains.
    pub fn tangent_bases(&self, chains: usize) -> Result<Arc<TangentBasis>> {
        match &self.tangent_basis {
            Some(b) if b.neighbours.len() == chains && b.d == self.d() => Ok(b.clone()),
            Some(b) => Err(Error::Internal(format!(
                "the tangent bases describe {} chains, the backend runs {chains}",
                b.neighbours.len()
            ))),
            None => Err(Error::Internal(
                "a tangent target without bases (build it with with_kind)".into(),
            )),
        }
    }

    /// The target of chains `range` of a run of `chains` chains (a shard's): their classes,
    /// means and tangent bases, in order; unchanged when every chain sees every row.
    ///
    /// Fails (`Error::Internal`) when the range passes `chains` or the target describes another
    /// number of chains.
    pub fn chain_slice(&self, chains: usize, range: std::ops::Range<usize>) -> Result<Target> {
        self.chain_rows(chains)?;
        if range.start > range.end || range.end > chains {
            return Err(Error::Internal(format!(
                "chains {}..{} of {chains}",
                range.start, range.end
            )));
        }
        let mut target = self.clone();
        let d = self.d();
        if let Some(c) = &self.classes {
            target.classes = Some(ChainClasses {
                rows: c.rows[range.clone()].to_vec(),
                means: c.means[range.start * d..range.end * d].to_vec(),
                class: c.class[range.clone()].to_vec(),
            });
        }
        if let Some(b) = &self.tangent_basis {
            let b = self.tangent_bases(chains).map(|_| b)?;
            let (k, bd) = (b.k, b.d);
            target.tangent_basis = Some(Arc::new(TangentBasis {
                k,
                d: bd,
                basis: b.basis[range.start * k * bd..range.end * k * bd].to_vec(),
                gamma: b.gamma[range.start * k..range.end * k].to_vec(),
                neighbours: b.neighbours[range.clone()].to_vec(),
            }));
        }
        Ok(target)
    }

    /// The likelihood of `chains` chains as the backends run it.
    ///
    /// Fails (`Error::Internal`) when the target's classes or bases describe another number of
    /// chains.
    pub fn likelihood(&self, chains: usize) -> Result<Likelihood> {
        Ok(match self.kind {
            TargetKind::Paper | TargetKind::Local => Likelihood::Gaussian(Gaussian {
                means: self.xbar_rows(chains)?,
            }),
            TargetKind::Mixture => Likelihood::Mixture(Mixture::new(
                self.mixture_chain_info(chains)?,
                self.observations.clone(),
            )),
            TargetKind::Tangent => Likelihood::Tangent(Tangent {
                anchors: self.xbar_rows(chains)?,
                basis: self.tangent_bases(chains)?,
                inv_sigma2: self.inv_sigma2(),
            }),
        })
    }
}

/// The likelihood of A X for C chains, as data the backends run.
#[derive(Clone, Debug)]
pub enum Likelihood {
    /// ½||A X − m_c||²/σ² around a per-chain mean m_c (`paper`, `local`).
    Gaussian(Gaussian),
    /// −log Σ_i exp(−||A X − x_i||²/(2σ²)) over the chain's class (`mixture`).
    Mixture(Mixture),
    /// ½ rᵀ C⁻¹ r with r = A X − a_c, C = (s²/k)·B Bᵀ + σ²·I (`tangent`).
    Tangent(Tangent),
}

/// Which minibatch step a likelihood's step residual belongs to: chain c of the rows draws from
/// the stream (seed, first_chain + c, outer, step, Minibatch), `batch` rows.
#[derive(Clone, Copy, Debug)]
pub struct StepDraw {
    /// Seed of every stream.
    pub seed: u64,
    /// Global index of row 0's chain.
    pub first_chain: u32,
    /// Outer iteration (1-based).
    pub outer: u32,
    /// Step t (1-based).
    pub step: u32,
    /// Minibatch size m.
    pub batch: u32,
}

/// What the MH terms' energy parts are made of, for C chains.
#[derive(Clone, Copy, Debug)]
pub struct TermsInputs<'a> {
    /// Residuals at X and at Z, C × d each.
    pub residuals: (&'a [f32], &'a [f32]),
    /// The cached energies at X and at Z (C each), for a likelihood that caches them.
    pub energies: Option<(&'a [f32], &'a [f32])>,
    /// Per chain the prior's −log p(X) and −log p(Z) + log p(X).
    pub prior: &'a [(f32, f32)],
    /// The likelihood's precision: one value for every chain (1/σ²) or one per chain (√τ with
    /// `preconditioned`).
    pub precision: &'a [f32],
    /// `--noise gibbs`: the terms are the chain's in noise units (docs/noise.md).
    pub preconditioned: bool,
}

/// Chain c's value of a setting given once for every chain or once per chain.
#[inline]
pub fn chain_value(values: &[f32], chain: usize) -> f32 {
    if values.len() == 1 {
        values[0]
    } else {
        values[chain]
    }
}

/// Per-chain data a likelihood's WGSL reads (`likelihood_chains`): C rows of `bytes_per_chain`.
#[derive(Clone, Debug)]
pub struct ChainData {
    /// The rows, chain after chain.
    pub bytes: Vec<u8>,
    /// Bytes per chain.
    pub bytes_per_chain: usize,
}

impl Likelihood {
    /// The paper's likelihood's WGSL and what it reads (the Gaussian's): what the kernels outside
    /// a run's chains are compiled with.
    pub const PAPER_WGSL: WgslModel = gaussian::WGSL_MODEL;

    /// Every likelihood's WGSL and what it reads, for the backends' layout tests.
    pub const WGSL_MODELS: [WgslModel; 3] = [
        gaussian::WGSL_MODEL,
        mixture::WGSL_MODEL,
        tangent::WGSL_MODEL,
    ];

    /// What the GPU splices and binds: its WGSL, which defines `likelihood_step_residual(c, t)`,
    /// `likelihood_energy(c, t)`, `likelihood_fit(c, t)` and `likelihood_terms(c, fit, prior)`
    /// (`shaders/likelihood.wgsl` calls them), and what that WGSL reads.
    pub fn wgsl_model(&self) -> WgslModel {
        match self {
            Likelihood::Gaussian(_) => gaussian::WGSL_MODEL,
            Likelihood::Mixture(_) => mixture::WGSL_MODEL,
            Likelihood::Tangent(_) => tangent::WGSL_MODEL,
        }
    }

    /// Per chain the row its residual subtracts (C × d): the chain's mean, zero (the mixture's
    /// residual is A X itself), or its anchor.
    pub fn offsets(&self) -> &[f32] {
        match self {
            Likelihood::Gaussian(g) => &g.means,
            Likelihood::Mixture(m) => &m.zeros,
            Likelihood::Tangent(t) => &t.anchors,
        }
    }

    /// Whether a minibatch step's residual subtracts the chain's gathered minibatch mean
    /// (the Gaussian's Algorithm 2), rather than its offset.
    pub fn gathers(&self) -> bool {
        match self {
            Likelihood::Gaussian(_) => true,
            Likelihood::Mixture(_) | Likelihood::Tangent(_) => false,
        }
    }

    /// Whether a step's residual goes through `step_residual` before the gradient product.
    pub fn has_step(&self) -> bool {
        match self {
            Likelihood::Gaussian(_) => false,
            Likelihood::Mixture(_) | Likelihood::Tangent(_) => true,
        }
    }

    /// Whether the energy is kept per chain (`energy`) and the gradient products read a residual
    /// already scaled (by the mixture's weights or the inverse covariance), not divided by σ²
    /// again; else the gradient is Aᵀ r times the precision and the MH terms reduce the residuals.
    pub fn caches_energy(&self) -> bool {
        match self {
            Likelihood::Gaussian(_) => false,
            Likelihood::Mixture(_) | Likelihood::Tangent(_) => true,
        }
    }

    /// Whether the noise precision can be learned (`--noise gibbs`, whose update reads the
    /// Gaussian residual), and the prior's adaptive state (SSGL's σ update reads it too).
    pub fn is_gaussian_residual(&self) -> bool {
        match self {
            Likelihood::Gaussian(_) => true,
            Likelihood::Mixture(_) | Likelihood::Tangent(_) => false,
        }
    }

    /// Whether the residual the gradient product reads is a linear map of A z − a (the
    /// Gaussian's identity, the tangent target's C⁻¹; not the mixture's softmax weights), so
    /// HMC may carry it through a trajectory (`backend::cpu::leapfrog_carry`).
    pub fn is_linear_in_residual(&self) -> bool {
        match self {
            Likelihood::Gaussian(_) | Likelihood::Tangent(_) => true,
            Likelihood::Mixture(_) => false,
        }
    }

    /// A step's residual A Z − offset (C × d), in place, into the residual the gradient product
    /// reads; nothing for a likelihood without a step pass.
    pub fn step_residual(&self, draw: &StepDraw, residual: &mut [f32]) {
        match self {
            Likelihood::Gaussian(_) => {}
            Likelihood::Mixture(m) => m.step_residual(draw, residual),
            Likelihood::Tangent(t) => t.step_residual(residual),
        }
    }

    /// Per chain the cached energy's data term (`energy`, C) and the scaled residual the gradient
    /// product reads (`scaled`, C × d) from the residuals A X − offset (C × d); nothing for a
    /// likelihood that caches no energy.
    pub fn energy(&self, residual: &[f32], energy: &mut [f32], scaled: &mut [f32]) {
        match self {
            Likelihood::Gaussian(_) => {}
            Likelihood::Mixture(m) => m.energy(residual, energy, scaled),
            Likelihood::Tangent(t) => t.energy(residual, energy, scaled),
        }
    }

    /// Per chain U(X) and U(Z) − U(X), the likelihood's part with the prior's, as the MH rule
    /// reads them (`methods::MhTerms`); the Gaussian's difference is one reduction of
    /// per-element differences.
    pub fn energy_terms(&self, inputs: &TermsInputs) -> Vec<(f32, f32)> {
        match self {
            Likelihood::Gaussian(g) => g.energy_terms(inputs),
            Likelihood::Mixture(_) | Likelihood::Tangent(_) => cached_energy_terms(inputs),
        }
    }

    /// Its hyper-parameters as its WGSL reads them (`likelihood_params`), or None.
    pub fn gpu_params(&self) -> Option<WgslBytes> {
        match self {
            Likelihood::Gaussian(_) | Likelihood::Mixture(_) => None,
            Likelihood::Tangent(t) => Some(WgslBytes::of(&t.params())),
        }
    }

    /// Per-chain data its WGSL reads (`likelihood_chains`), or None.
    pub fn gpu_chains(&self) -> Option<ChainData> {
        match self {
            Likelihood::Gaussian(_) => None,
            Likelihood::Mixture(m) => Some(m.chain_data()),
            Likelihood::Tangent(t) => Some(t.chain_data()),
        }
    }

    /// 32-bit words of per-chain scratch its WGSL writes (`likelihood_scratch`) for minibatches
    /// of `batch` rows (0: none).
    pub fn scratch_words(&self, batch: u32) -> usize {
        match self {
            Likelihood::Gaussian(_) | Likelihood::Tangent(_) => 0,
            Likelihood::Mixture(_) => 2 * batch as usize,
        }
    }

    /// Bytes per chain of its per-chain data that a backend's memory report counts (the
    /// tangent target's directions and shrinkages; the mixture's 16-byte chain info aside).
    pub fn reported_chain_bytes(&self) -> usize {
        match self {
            Likelihood::Gaussian(_) | Likelihood::Mixture(_) => 0,
            Likelihood::Tangent(t) => 4 * t.basis.k * (t.basis.d + 1),
        }
    }
}

/// U(X) and U(Z) − U(X) of a likelihood that caches its energies: the cached data terms at X
/// and Z (a log-sum-exp has no per-element form) plus the prior's.
fn cached_energy_terms(inputs: &TermsInputs) -> Vec<(f32, f32)> {
    let Some((ex, ez)) = inputs.energies else {
        return vec![(f32::NAN, f32::NAN); inputs.prior.len()];
    };
    inputs
        .prior
        .iter()
        .enumerate()
        .map(|(c, &(prior_x, prior_difference))| {
            (ex[c] + prior_x, (ez[c] - ex[c]) + prior_difference)
        })
        .collect()
}
