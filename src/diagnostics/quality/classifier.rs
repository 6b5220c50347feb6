//! Multinomial logistic regression (softmax regression with a bias and an L2 penalty), trained full-batch by L-BFGS.
//!
//! The loss, for n images x_i of d values with labels y_i among K classes, weights W (d × K) and
//! bias b (K), is the sample mean of the cross-entropy plus an L2 penalty on W (not on b):
//!
//! ```text
//! L(W, b) = 1/n Σ_i −log softmax(Wᵀ x_i + b)_{y_i} + l2 · ‖W‖²
//! ```
//!
//! Training is deterministic: a fixed number of L-BFGS iterations (or fewer, when the gradient
//! vanishes) from W = 0, b = 0, with a backtracking Armijo line search. The products run on the
//! chains' packed kernels (`backend::cpu::packed`, each value one FMA chain in order) on fixed
//! row blocks whose partial gradients are summed in block order, so the result depends neither on
//! the number of threads nor on the CPU (on `gemm` the order followed the CPU's kernels).

use rayon::prelude::*;
use serde::Serialize;

use super::distances::Stop;
use crate::backend::cpu::packed::{transposed, PackedOperand};
use crate::math::Portable;
use crate::{Error, Result};

/// Rows per block of the loss and gradient (one rayon task each).
const ROW_BLOCK: usize = 2048;

/// How the classifier is trained.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TrainSettings {
    /// The L2 penalty `l2 · ‖W‖²` added to the sample-mean cross-entropy (default 1e-4).
    pub l2: f64,
    /// L-BFGS iterations at most (default 100).
    pub iterations: usize,
    /// Correction pairs L-BFGS remembers (default 10).
    pub memory: usize,
}

impl Default for TrainSettings {
    fn default() -> Self {
        TrainSettings {
            l2: 1e-4,
            iterations: 100,
            memory: 10,
        }
    }
}

/// A trained softmax-regression classifier.
#[derive(Clone, Debug)]
pub struct Softmax {
    /// The class labels, ascending; column k of the weights scores `classes[k]`.
    pub classes: Vec<u32>,
    /// Values per image.
    pub d: usize,
    /// d × K weights, row-major.
    pub weights: Vec<f32>,
    /// K biases.
    pub bias: Vec<f32>,
    /// L-BFGS iterations run.
    pub iterations: usize,
    /// The training loss L(W, b) at the end.
    pub loss: f64,
}

/// The scores x W (m × k, row-major) of the m images of `x` (rows of d) under weights `w_t`,
/// Wᵀ (k × d, row-major): computed as Wᵀ xᵀ with xᵀ the packed operand, so each score is one FMA
/// chain over d in order on every CPU (`backend::cpu::packed`), and the packed columns are the
/// many images rather than the few classes.
fn scores(x: &[f32], d: usize, w_t: &[f32], k: usize) -> Vec<f32> {
    let m = x.len() / d;
    assert!(x.len() == m * d && w_t.len() == k * d);
    let mut by_class = vec![0f32; k * m];
    if m > 0 && k > 0 {
        PackedOperand::from_transpose(x, m, d).product(w_t, None, &mut by_class);
    }
    transposed(&by_class, k, m)
}

/// [`ROW_BLOCK`] training images packed once for the two products every evaluation takes.
struct PackedBlock {
    /// xᵀ (d × m): the scores Wᵀ xᵀ.
    transposed: PackedOperand,
    /// x (m × d): the gradient's Rᵀ x.
    rows: PackedOperand,
    /// The block's images.
    m: usize,
}

impl PackedBlock {
    /// The blocks of `x` (rows of d): about twice x's memory, once for training; a refused
    /// allocation is an error naming `limit` (the images to train on).
    fn all(x: &[f32], d: usize) -> Result<Vec<Self>> {
        let refused = |_| {
            let bytes = 2.0 * std::mem::size_of_val(x) as f64;
            crate::alloc::refused("limit", "the quality classifier's packed images", bytes)
        };
        x.chunks(ROW_BLOCK * d)
            .map(|block| {
                let m = block.len() / d;
                Ok(PackedBlock {
                    transposed: PackedOperand::try_from_transpose(block, m, d).map_err(refused)?,
                    rows: PackedOperand::try_from_rows(block, m, d).map_err(refused)?,
                    m,
                })
            })
            .collect()
    }
}

/// Loss and gradient (over W then b, as f64) at `theta` = [W (d × K) row-major, b (K)].
struct Objective {
    blocks: Vec<PackedBlock>,
    targets: Vec<usize>,
    d: usize,
    k: usize,
    l2: f64,
}

impl Objective {
    fn evaluate(&self, theta: &[f64]) -> (f64, Vec<f64>) {
        let (d, k) = (self.d, self.k);
        let n = self.targets.len();
        let w: Vec<f32> = theta[..d * k].iter().map(|&v| v as f32).collect();
        let w_t = transposed(&w, d, k);
        let b = &theta[d * k..];
        let parts: Vec<(f64, Vec<f32>, Vec<f64>)> = self
            .blocks
            .par_iter()
            .zip(self.targets.par_chunks(ROW_BLOCK))
            .map(|(block, targets)| {
                let mut by_class = vec![0f32; k * block.m];
                block.transposed.product(&w_t, None, &mut by_class);
                let mut logits = transposed(&by_class, k, block.m);
                let mut loss = 0f64;
                let mut bias_grad = vec![0f64; k];
                for (row, &y) in logits.chunks_mut(k).zip(targets) {
                    let z: Vec<f64> = row.iter().zip(b).map(|(&l, &b)| l as f64 + b).collect();
                    let max = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let sum: f64 = z.iter().map(|&v| (v - max).exp_portable()).sum();
                    loss += sum.ln_portable() + max - z[y];
                    // The residual p − onehot(y), scaled by 1/n, replaces the logits.
                    for (c, r) in row.iter_mut().enumerate() {
                        let p = (z[c] - max).exp_portable() / sum - f64::from(u8::from(c == y));
                        bias_grad[c] += p / n as f64;
                        *r = (p / n as f64) as f32;
                    }
                }
                let mut gw = vec![0f32; k * d];
                let residuals = transposed(&logits, block.m, k);
                block.rows.product(&residuals, None, &mut gw);
                (loss, gw, bias_grad)
            })
            .collect();
        let mut loss = 0f64;
        let mut grad = vec![0f64; d * k + k];
        for (l, gw, gb) in &parts {
            loss += l;
            // gw is Rᵀ X (k × d); the gradient's W part is d × k.
            for (c, row) in gw.chunks_exact(d).enumerate() {
                for (j, &v) in row.iter().enumerate() {
                    grad[j * k + c] += v as f64;
                }
            }
            grad[d * k..].iter_mut().zip(gb).for_each(|(g, &v)| *g += v);
        }
        loss /= n.max(1) as f64;
        for (g, &t) in grad[..d * k].iter_mut().zip(&theta[..d * k]) {
            *g += 2.0 * self.l2 * t;
        }
        loss += self.l2 * theta[..d * k].iter().map(|t| t * t).sum::<f64>();
        (loss, grad)
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// A function returning its value and gradient.
type LossAndGradient<'a> = &'a dyn Fn(&[f64]) -> (f64, Vec<f64>);

/// Minimises `f` from `theta` by L-BFGS: at most `iterations` steps, each a backtracking Armijo
/// line search along the two-loop direction. Returns the iterations run and the final loss.
fn lbfgs(
    f: LossAndGradient,
    theta: &mut Vec<f64>,
    iterations: usize,
    memory: usize,
    stop: Stop,
) -> Option<(usize, f64)> {
    let (mut loss, mut grad) = f(theta);
    let mut pairs: std::collections::VecDeque<(Vec<f64>, Vec<f64>, f64)> = Default::default();
    for iteration in 0..iterations {
        if stop() {
            return None;
        }
        let gnorm = dot(&grad, &grad).sqrt();
        if gnorm.is_nan() || gnorm <= 1e-10 {
            return Some((iteration, loss));
        }
        // Two-loop recursion: direction = −H·grad.
        let mut q = grad.clone();
        let mut alphas = Vec::with_capacity(pairs.len());
        for (s, y, rho) in pairs.iter().rev() {
            let a = rho * dot(s, &q);
            q.iter_mut().zip(y).for_each(|(q, &y)| *q -= a * y);
            alphas.push(a);
        }
        let gamma = match pairs.back() {
            Some((s, y, _)) => dot(s, y) / dot(y, y),
            None => 1.0 / gnorm,
        };
        q.iter_mut().for_each(|v| *v *= gamma);
        for ((s, y, rho), a) in pairs.iter().zip(alphas.iter().rev()) {
            let b = rho * dot(y, &q);
            q.iter_mut().zip(s).for_each(|(q, &s)| *q += (a - b) * s);
        }
        let mut direction: Vec<f64> = q.iter().map(|v| -v).collect();
        let mut slope = dot(&grad, &direction);
        if slope.is_nan() || slope >= 0.0 {
            // Not a descent direction (rounding): restart from steepest descent.
            pairs.clear();
            direction = grad.iter().map(|g| -g / gnorm).collect();
            slope = -gnorm;
        }
        let mut step = 1.0;
        let mut accepted = None;
        for _ in 0..40 {
            let trial: Vec<f64> = theta
                .iter()
                .zip(&direction)
                .map(|(t, p)| t + step * p)
                .collect();
            let (trial_loss, trial_grad) = f(&trial);
            if trial_loss.is_finite() && trial_loss <= loss + 1e-4 * step * slope {
                accepted = Some((trial, trial_loss, trial_grad));
                break;
            }
            step *= 0.5;
        }
        let Some((trial, trial_loss, trial_grad)) = accepted else {
            return Some((iteration, loss));
        };
        let s: Vec<f64> = trial.iter().zip(theta.iter()).map(|(a, b)| a - b).collect();
        let y: Vec<f64> = trial_grad.iter().zip(&grad).map(|(a, b)| a - b).collect();
        let sy = dot(&s, &y);
        if sy > 1e-12 * dot(&y, &y).max(f64::MIN_POSITIVE) {
            if pairs.len() == memory.max(1) {
                pairs.pop_front();
            }
            pairs.push_back((s, y, 1.0 / sy));
        }
        *theta = trial;
        loss = trial_loss;
        grad = trial_grad;
    }
    Some((iterations, loss))
}

/// Trains softmax regression on `x` (n × d, row-major) with `labels` (n values).
///
/// # Errors
/// A usage error when the sizes disagree, there are no images, or fewer than two classes.
pub fn train(x: &[f32], labels: &[u32], d: usize, settings: &TrainSettings) -> Result<Softmax> {
    train_until(x, labels, d, settings, &|| false)?
        .ok_or_else(|| Error::Internal("classifier training stopped unasked".into()))
}

/// [`train`] that polls `stop` before every iteration and gives `None` when it asks to stop.
pub fn train_until(
    x: &[f32],
    labels: &[u32],
    d: usize,
    settings: &TrainSettings,
    stop: Stop,
) -> Result<Option<Softmax>> {
    let n = labels.len();
    if d == 0 || x.len() != n * d {
        return Err(Error::usage(
            "classifier",
            format!("{} values do not make {n} images of {d} values", x.len()),
        ));
    }
    let mut classes = labels.to_vec();
    classes.sort_unstable();
    classes.dedup();
    if classes.len() < 2 {
        return Err(Error::usage(
            "classifier",
            format!(
                "needs at least two classes to train on, found {}",
                classes.len()
            ),
        ));
    }
    let k = classes.len();
    let targets: Vec<usize> = labels
        .iter()
        .map(|l| classes.binary_search(l).unwrap_or(0))
        .collect();
    let objective = Objective {
        blocks: PackedBlock::all(x, d)?,
        targets,
        d,
        k,
        l2: settings.l2,
    };
    let mut theta = vec![0f64; d * k + k];
    let Some((iterations, loss)) = lbfgs(
        &|t| objective.evaluate(t),
        &mut theta,
        settings.iterations,
        settings.memory,
        stop,
    ) else {
        return Ok(None);
    };
    Ok(Some(Softmax {
        classes,
        d,
        weights: theta[..d * k].iter().map(|&v| v as f32).collect(),
        bias: theta[d * k..].iter().map(|&v| v as f32).collect(),
        iterations,
        loss,
    }))
}

impl Softmax {
    /// The class (label value) of highest score for each image of `x` (rows of `d`); ties go to
    /// the smaller label.
    pub fn predict(&self, x: &[f32]) -> Vec<u32> {
        let (d, k) = (self.d, self.classes.len());
        let w_t = transposed(&self.weights, d, k);
        x.par_chunks(ROW_BLOCK * d)
            .flat_map_iter(|block| {
                scores(block, d, &w_t, k)
                    .chunks(k)
                    .map(|row| {
                        let mut best = 0;
                        for c in 1..k {
                            if row[c] + self.bias[c] > row[best] + self.bias[best] {
                                best = c;
                            }
                        }
                        self.classes[best]
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// The fraction of images of `x` predicted as their label (NaN for no images).
    pub fn accuracy(&self, x: &[f32], labels: &[u32]) -> f64 {
        let predicted = self.predict(x);
        let hits = predicted.iter().zip(labels).filter(|(p, l)| p == l).count();
        hits as f64 / labels.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gradient_matches_finite_differences() {
        let (n, d, k) = (9, 4, 3);
        let x: Vec<f32> = (0..n * d).map(|i| ((i * 37 % 11) as f32) / 11.0).collect();
        let objective = Objective {
            blocks: PackedBlock::all(&x, d).unwrap(),
            targets: (0..n).map(|i| i % k).collect(),
            d,
            k,
            l2: 0.01,
        };
        let theta: Vec<f64> = (0..d * k + k)
            .map(|i| ((i * 7 % 5) as f64 - 2.0) / 3.0)
            .collect();
        let (_, grad) = objective.evaluate(&theta);
        for i in 0..theta.len() {
            let h = 1e-3;
            let mut plus = theta.clone();
            plus[i] += h;
            let mut minus = theta.clone();
            minus[i] -= h;
            let numeric = (objective.evaluate(&plus).0 - objective.evaluate(&minus).0) / (2.0 * h);
            // The logits are computed in f32: agreement to about 1e-5 absolute.
            assert!(
                (numeric - grad[i]).abs() < 2e-4,
                "component {i}: {numeric} vs {}",
                grad[i]
            );
        }
    }

    #[test]
    fn lbfgs_minimises_a_quadratic() {
        // f(t) = Σ c_i (t_i − i)², minimum at t_i = i.
        let f = |t: &[f64]| {
            let loss = t
                .iter()
                .enumerate()
                .map(|(i, &v)| (i as f64 + 1.0) * (v - i as f64).powi(2))
                .sum();
            let grad = t
                .iter()
                .enumerate()
                .map(|(i, &v)| 2.0 * (i as f64 + 1.0) * (v - i as f64))
                .collect();
            (loss, grad)
        };
        let mut theta = vec![0.0; 6];
        let (_, loss) = lbfgs(&f, &mut theta, 100, 5, &|| false).unwrap();
        assert!(lbfgs(&f, &mut vec![0.0; 6], 100, 5, &|| true).is_none());
        assert!(loss < 1e-12, "{loss}");
        for (i, t) in theta.iter().enumerate() {
            assert!((t - i as f64).abs() < 1e-6);
        }
    }

    #[test]
    fn refuses_one_class_and_bad_sizes() {
        let x = vec![0f32; 6];
        assert!(train(&x, &[1, 1, 1], 2, &TrainSettings::default()).is_err());
        assert!(train(&x, &[0, 1], 2, &TrainSettings::default()).is_err());
    }
}
