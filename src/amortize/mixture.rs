//! A 2-D Gaussian mixture fitted by EM to the teacher's samples: the learned sampler's global (independence) proposal.
//!
//! G's move x' = x + μ(x) + σ(x)ξ is local and unimodal, so with an exact MH step it cannot
//! cross between well separated modes (Mog6: acceptance 0.07, R-hat 3.7). Mixing it with an
//! independence proposal q from a density fitted to the teacher's samples is the remedy of
//! Gabrié, Rotskoff and Vanden-Eijnden (PNAS 2022, "Adaptive Monte Carlo augmented with
//! normalizing flows"): the MH ratio p(x')q(x) / (p(x)q(x')) keeps the target exact whatever q
//! is, and a q close to p accepts most global jumps. A defensive component (Hesterberg 1995),
//! a broad Gaussian over all the samples, keeps p/q bounded where the fit has no mass.

use rand::Rng;

use super::normal;
use crate::math::Portable;

/// One Gaussian: weight, mean and the lower Cholesky factor (l11, l21, l22) of its covariance.
#[derive(Clone, Debug, PartialEq)]
struct Component {
    log_weight: f64,
    mean: [f64; 2],
    chol: [f64; 3],
}

impl Component {
    /// log N(x; mean, L Lᵀ) + log weight.
    fn log_weighted_density(&self, x: [f64; 2]) -> f64 {
        let [a, b, c] = self.chol;
        let y1 = (x[0] - self.mean[0]) / a;
        let y2 = (x[1] - self.mean[1] - b * y1) / c;
        self.log_weight
            - std::f64::consts::TAU.ln_portable()
            - a.ln_portable()
            - c.ln_portable()
            - 0.5 * (y1 * y1 + y2 * y2)
    }

    /// From a mean and a covariance (sxx, sxy, syy), positive definite.
    fn new(weight: f64, mean: [f64; 2], cov: [f64; 3]) -> Component {
        let a = cov[0].sqrt();
        let b = cov[1] / a;
        let c = (cov[2] - b * b).max(1e-300).sqrt();
        Component {
            log_weight: weight.ln_portable(),
            mean,
            chol: [a, b, c],
        }
    }
}

/// A Gaussian mixture on the plane.
#[derive(Clone, Debug, PartialEq)]
pub struct Mixture2d {
    components: Vec<Component>,
}

/// Weight of the defensive component (a Gaussian with the samples' mean and twice their
/// standard deviation in every direction).
pub const DEFENSIVE_WEIGHT: f64 = 0.05;

/// EM iterations at most; EM stops earlier once the mean log-likelihood gains less than 1e-7.
const EM_ITERATIONS: usize = 200;

/// The mean and covariance (sxx, sxy, syy) of weighted points.
fn moments(points: &[[f64; 2]], weights: impl Fn(usize) -> f64) -> (f64, [f64; 2], [f64; 3]) {
    let (mut n, mut m) = (0.0, [0.0; 2]);
    for (i, p) in points.iter().enumerate() {
        let w = weights(i);
        n += w;
        m[0] += w * p[0];
        m[1] += w * p[1];
    }
    if n <= 0.0 {
        return (0.0, [0.0; 2], [1.0, 0.0, 1.0]);
    }
    m = [m[0] / n, m[1] / n];
    let mut s = [0.0; 3];
    for (i, p) in points.iter().enumerate() {
        let w = weights(i);
        let (dx, dy) = (p[0] - m[0], p[1] - m[1]);
        s[0] += w * dx * dx;
        s[1] += w * dx * dy;
        s[2] += w * dy * dy;
    }
    (n, m, [s[0] / n, s[1] / n, s[2] / n])
}

impl Mixture2d {
    /// Fits `k` components to `points` by EM (k-means++ starts from `rng`), then adds the
    /// defensive component. None when there are fewer than 4 points per component or the
    /// points do not spread (zero variance).
    pub fn fit(points: &[[f64; 2]], k: usize, rng: &mut impl Rng) -> Option<Mixture2d> {
        let n = points.len();
        if k == 0
            || n < 4 * k
            || points
                .iter()
                .any(|p| !p[0].is_finite() || !p[1].is_finite())
        {
            return None;
        }
        let (_, all_mean, all_cov) = moments(points, |_| 1.0);
        let scale = all_cov[0] + all_cov[2];
        if scale.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            return None;
        }
        // Covariances are floored at this multiple of I so that no component collapses.
        let floor = 1e-4 * scale;
        let dist2 = |a: [f64; 2], b: [f64; 2]| (a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2);
        // k-means++ starts.
        let mut means = vec![points[rng.random_range(0..n)]];
        let mut nearest: Vec<f64> = points.iter().map(|&p| dist2(p, means[0])).collect();
        while means.len() < k {
            let total: f64 = nearest.iter().sum();
            let mut u = rng.random::<f64>() * total;
            let pick = nearest
                .iter()
                .position(|&d| {
                    u -= d;
                    u <= 0.0
                })
                .unwrap_or(n - 1);
            means.push(points[pick]);
            for (d, &p) in nearest.iter_mut().zip(points) {
                *d = d.min(dist2(p, points[pick]));
            }
        }
        let start_var = scale / (2.0 * k as f64);
        let mut components: Vec<Component> = means
            .into_iter()
            .map(|m| Component::new(1.0 / k as f64, m, [start_var, 0.0, start_var]))
            .collect();
        let mut resp = vec![0.0f64; n * k];
        let mut last = f64::NEG_INFINITY;
        for _ in 0..EM_ITERATIONS {
            // E step: responsibilities by log-sum-exp.
            let mut loglik = 0.0;
            for (i, &p) in points.iter().enumerate() {
                let row = &mut resp[i * components.len()..(i + 1) * components.len()];
                for (r, c) in row.iter_mut().zip(&components) {
                    *r = c.log_weighted_density(p);
                }
                let top = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = row.iter().map(|&r| (r - top).exp_portable()).sum();
                let log_sum = top + sum.ln_portable();
                loglik += log_sum;
                row.iter_mut()
                    .for_each(|r| *r = (*r - log_sum).exp_portable());
            }
            // M step; components with under one point's worth of responsibility are dropped.
            let kk = components.len();
            let mut next = Vec::with_capacity(kk);
            for j in 0..kk {
                let (nj, m, s) = moments(points, |i| resp[i * kk + j]);
                if nj >= 1.0 {
                    next.push(Component::new(
                        nj / n as f64,
                        m,
                        [s[0] + floor, s[1], s[2] + floor],
                    ));
                }
            }
            if next.is_empty() {
                return None;
            }
            let total: f64 = next.iter().map(|c| c.log_weight.exp_portable()).sum();
            next.iter_mut()
                .for_each(|c| c.log_weight -= total.ln_portable());
            components = next;
            resp.truncate(n * components.len());
            let mean_loglik = loglik / n as f64;
            if mean_loglik - last < 1e-7 {
                break;
            }
            last = mean_loglik;
        }
        for c in components.iter_mut() {
            c.log_weight += (1.0 - DEFENSIVE_WEIGHT).ln_portable();
        }
        components.push(Component::new(
            DEFENSIVE_WEIGHT,
            all_mean,
            [
                4.0 * all_cov[0] + floor,
                4.0 * all_cov[1],
                4.0 * all_cov[2] + floor,
            ],
        ));
        Some(Mixture2d { components })
    }

    /// The number of components, the defensive one included.
    pub fn len(&self) -> usize {
        self.components.len()
    }

    /// Whether the mixture has no component (never, once fitted).
    pub fn is_empty(&self) -> bool {
        self.components.is_empty()
    }

    /// log q(x).
    pub fn log_density(&self, x: [f64; 2]) -> f64 {
        let logs: Vec<f64> = self
            .components
            .iter()
            .map(|c| c.log_weighted_density(x))
            .collect();
        let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if !top.is_finite() {
            return top;
        }
        top + logs
            .iter()
            .map(|&l| (l - top).exp_portable())
            .sum::<f64>()
            .ln_portable()
    }

    /// One draw from q.
    pub fn sample(&self, rng: &mut impl Rng) -> [f64; 2] {
        let mut u = rng.random::<f64>();
        let last = self.components.len() - 1;
        let c = self
            .components
            .iter()
            .position(|c| {
                u -= c.log_weight.exp_portable();
                u <= 0.0
            })
            .map_or(&self.components[last], |i| &self.components[i]);
        let (e1, e2) = (normal(rng), normal(rng));
        let [a, b, l22] = c.chol;
        [c.mean[0] + a * e1, c.mean[1] + b * e1 + l22 * e2]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    #[test]
    fn em_recovers_two_separated_gaussians_and_its_density_integrates_to_one() {
        let mut rng = StdRng::seed_from_u64(1);
        let points: Vec<[f64; 2]> = (0..4000)
            .map(|i| {
                let centre = if i % 4 == 0 { -4.0 } else { 4.0 };
                [centre + 0.5 * normal(&mut rng), 2.0 * normal(&mut rng)]
            })
            .collect();
        let q = Mixture2d::fit(&points, 2, &mut rng).expect("fit");
        assert_eq!(q.len(), 3);
        let mut fitted: Vec<&Component> = q.components[..2].iter().collect();
        fitted.sort_by(|a, b| a.mean[0].total_cmp(&b.mean[0]));
        let weights = [0.25 * 0.95, 0.75 * 0.95];
        for (c, (centre, w)) in fitted.iter().zip([(-4.0, weights[0]), (4.0, weights[1])]) {
            assert!((c.mean[0] - centre).abs() < 0.1, "mean {:?}", c.mean);
            assert!(
                (c.log_weight.exp_portable() - w).abs() < 0.03,
                "weight {}",
                c.log_weight.exp_portable()
            );
            assert!((c.chol[0] - 0.5).abs() < 0.05 && (c.chol[2] - 2.0).abs() < 0.15);
        }
        // ∫ q = 1 on a grid covering the mass (the defensive component's too).
        let h = 0.05;
        let mut integral = 0.0;
        for i in -400..400 {
            for j in -400..400 {
                integral += q.log_density([i as f64 * h, j as f64 * h]).exp_portable() * h * h;
            }
        }
        assert!((integral - 1.0).abs() < 1e-3, "∫ q = {integral}");
        // Draws follow q: their mean matches q's.
        let draws: Vec<[f64; 2]> = (0..20000).map(|_| q.sample(&mut rng)).collect();
        let mean_x = draws.iter().map(|p| p[0]).sum::<f64>() / draws.len() as f64;
        assert!((mean_x - 2.0).abs() < 0.1, "mean x {mean_x}");
    }

    #[test]
    fn too_few_or_degenerate_points_give_no_mixture() {
        let mut rng = StdRng::seed_from_u64(2);
        assert!(Mixture2d::fit(&[[0.0, 0.0]; 3], 1, &mut rng).is_none());
        assert!(Mixture2d::fit(&[[1.0, 1.0]; 100], 2, &mut rng).is_none());
        assert!(Mixture2d::fit(&[[f64::NAN, 0.0]; 100], 2, &mut rng).is_none());
    }
}
