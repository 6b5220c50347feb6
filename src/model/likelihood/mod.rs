//! The likelihoods: which energy of A X the chains sample (the paper's Gaussian around the class
//! mean or one image, a mixture over the class's images, a Gaussian along the span of one image's
//! nearest neighbours), each in its own file, and the kernel density behind Kernel HMC.

pub(crate) mod gaussian;
pub(crate) mod kernel_density;
pub(crate) mod mixture;
pub(crate) mod noise;
pub(crate) mod tangent;

use serde::{Deserialize, Serialize};

use std::sync::Arc;

use super::{ChainClasses, Target};
use crate::rng::{philox::index_from_word, Purpose, Stream};
use crate::{Error, Result};
use kernel_density::ChainInfo;
use tangent::{TangentBasis, TangentSettings};

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
        self.classes = Some(ChainClasses { rows, means });
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
            TargetKind::Paper | TargetKind::Local => Likelihood::Gaussian {
                means: self.xbar_rows(chains)?,
            },
            TargetKind::Mixture => Likelihood::Mixture {
                info: self.mixture_chain_info(chains)?,
            },
            TargetKind::Tangent => Likelihood::Tangent {
                anchors: self.xbar_rows(chains)?,
                basis: self.tangent_bases(chains)?,
                inv_sigma2: self.inv_sigma2(),
            },
        })
    }
}

/// The likelihood of A X for C chains, as data the backends run (no flags to match): what each
/// chain's residual subtracts, and what turns a residual into an energy and a gradient.
#[derive(Clone, Debug)]
pub enum Likelihood {
    /// ½||A X − m_c||²/σ² around a per-chain mean m_c (C × d): the data's or the class's mean
    /// (`paper`), or the chain's start image (`local`). Step gradients use per-chain minibatch
    /// means of the chain's rows instead.
    Gaussian {
        /// m_c, C × d.
        means: Vec<f32>,
    },
    /// −log Σ_i exp(−||A X − x_i||²/(2σ²)) over the chain's class (`mixture`): the residual is
    /// A X itself, and the energy and the scaled residual come from the kernel pass.
    Mixture {
        /// Per chain: its class's rows, 1/σ² and the observations' scale.
        info: Vec<ChainInfo>,
    },
    /// ½ rᵀ C⁻¹ r with r = A X − a_c, C = (s²/k)·B Bᵀ + σ²·I (`tangent`).
    Tangent {
        /// The anchors a_c, C × d.
        anchors: Vec<f32>,
        /// The per-chain neighbour bases and shrinkages.
        basis: Arc<TangentBasis>,
        /// 1/σ².
        inv_sigma2: f32,
    },
}

impl Likelihood {
    /// Whether the energy is kept per chain and the gradient products read residuals already
    /// scaled (by the mixture's weights or the inverse covariance): then they are not divided
    /// by σ² again.
    pub fn caches_energy(&self) -> bool {
        !matches!(self, Likelihood::Gaussian { .. })
    }
}
