//! The dictionary model's hyperparameters and the shared prior of the learnable atoms' parameters.

use serde::{Deserialize, Serialize};

use super::linalg::{identity, inverse_spd};
use crate::model::AtomFamily;

/// The hyperparameters of the model (the paper's Section VII-B1 values as defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DictionaryHyper {
    /// Dirichlet concentration α_k of the selection probabilities π (paper: 2).
    pub alpha: f64,
    /// Gamma shape e of the noise precision's prior (paper: 1).
    pub noise_shape: f64,
    /// Gamma rate f of the noise precision's prior (paper: 2).
    pub noise_rate: f64,
    /// Wishart degrees of freedom ν0 of the atoms' parameter precision G; must exceed Q − 1.
    /// Default (`None`): the paper's 3, or Q for families with more parameters (Gabor: 6).
    pub wishart_dof: Option<f64>,
    /// Prior precision γs of the coefficients around their OMP values (paper: 10).
    pub coefficient_precision: f64,
    /// The noise precision's starting value (paper: γe = 8).
    pub noise_start: f64,
    /// Degrees of freedom ν1 of the Student-t proposal (the paper does not say; 4).
    pub proposal_dof: f64,
    /// Scale τ of the Student-t proposal, in the family's units. Default (`None`): 4 for EDA
    /// (the best acceptance of τ ∈ {0.3, 0.6, 1, 2, 4, 8} on 40 synthetic signals), 0.3 for Gabor
    /// (the best of {0.1, 0.3, 1, 4} on 20 optdigits images).
    pub proposal_scale: Option<f64>,
    /// Nelder–Mead iterations per mode search (at most).
    pub mode_iterations: u64,
    /// Atom sampling without replacement (the paper's Section II-B, Wallenius' distribution):
    /// a signal's L slots hold L distinct atoms. Off: with replacement (Section II-A).
    #[serde(skip_serializing_if = "is_false")]
    pub without_replacement: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

impl DictionaryHyper {
    /// τ for a family.
    pub fn proposal_scale_for(&self, family: &AtomFamily) -> f64 {
        self.proposal_scale.unwrap_or(match family {
            AtomFamily::Eda { .. } => 4.0,
            AtomFamily::Gabor { .. } => 0.3,
        })
    }

    /// ν0 for atoms of q parameters.
    pub fn wishart_dof_for(&self, q: usize) -> f64 {
        self.wishart_dof.unwrap_or((q as f64).max(3.0))
    }
}

impl Default for DictionaryHyper {
    fn default() -> Self {
        DictionaryHyper {
            alpha: 2.0,
            noise_shape: 1.0,
            noise_rate: 2.0,
            wishart_dof: None,
            coefficient_precision: 10.0,
            noise_start: 8.0,
            proposal_dof: 4.0,
            proposal_scale: None,
            mode_iterations: 40,
            without_replacement: false,
        }
    }
}

/// The shared prior of the learnable atoms' parameters: g_k ~ N(g0, G0⁻¹), G ~ Wishart(ν0, R0)
/// with R0 = G0/ν0, so that E[G] = G0 (the inverse covariance of the initial grid).
#[derive(Clone, Debug)]
pub(crate) struct ParamPrior {
    /// g0, the mean of the initial grid's parameters.
    pub g0: Vec<f64>,
    /// Q × Q, row-major.
    pub big_g0: Vec<f64>,
}

impl ParamPrior {
    /// g0 and G0 from the mean and inverse covariance of the initial parameters (a 1e-6 relative
    /// ridge keeps G0 invertible for grids with a constant parameter).
    pub fn from_grid(grid: &[Vec<f64>], q: usize) -> Self {
        let n = grid.len().max(1) as f64;
        let mut g0 = vec![0.0; q];
        for t in grid {
            for (m, v) in g0.iter_mut().zip(t) {
                *m += v / n;
            }
        }
        let mut cov = vec![0.0; q * q];
        for t in grid {
            for i in 0..q {
                for j in 0..q {
                    cov[i * q + j] += (t[i] - g0[i]) * (t[j] - g0[j]) / n;
                }
            }
        }
        for i in 0..q {
            cov[i * q + i] += 1e-6 * cov[i * q + i].abs() + 1e-9;
        }
        ParamPrior {
            g0,
            big_g0: inverse_spd(&cov, q).unwrap_or_else(|| identity(q)),
        }
    }
}
