//! Which posterior the chains sample: the paper's, a mixture over the class's images, one image's,
//! or a Gaussian along the span of one image's nearest neighbours.

use serde::{Deserialize, Serialize};

use std::sync::Arc;

use super::{ChainClasses, TangentBasis, TangentSettings, Target};
use crate::backend::kernel_hmc::{ChainInfo, KernelTarget};
use crate::rng::{philox::index_from_word, Purpose, Stream};
use crate::{Error, Result};

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
    rows.iter()
        .enumerate()
        .map(|(c, &[first, count])| {
            let word = Stream::new(seed, c as u32, 0, 0, Purpose::InitPick).block(0)[0];
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

    /// Whether the backends run the mixture energy.
    pub fn is_mixture(&self) -> bool {
        self.kind == TargetKind::Mixture
    }

    /// Whether the backends run the tangent energy.
    pub fn is_tangent(&self) -> bool {
        self.kind == TargetKind::Tangent
    }

    /// Whether the backends keep per-chain energies and scaled residuals (mixture and tangent):
    /// the gradient kernels then read residuals already multiplied by the inverse covariance.
    pub fn has_cached_energy(&self) -> bool {
        self.is_mixture() || self.is_tangent()
    }

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
        let l1: f64 = x.iter().map(|v| v.abs() as f64).sum();
        Ok(self.mixture_density(chains)?.energy_f64(chain, &at) + self.lam as f64 * l1)
    }

    /// The mixture's ∇U(X) = Aᵀ(A X − Σ_i w_i x_i)/σ² + lam·sign(X), w the softmax weights over
    /// the chain's rows, in f64 (the reference).
    pub fn mixture_gradient_f64(&self, chains: usize, chain: usize, x: &[f32]) -> Result<Vec<f64>> {
        let at = self.image_f32(x);
        let pixel = self.mixture_density(chains)?.gradient_f64(chain, &at);
        let mut g = self.dictionary.apply_transpose_f64(&pixel);
        for (gj, &xj) in g.iter_mut().zip(x) {
            *gj += self.lam as f64 * super::posterior::sign(xj) as f64;
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
