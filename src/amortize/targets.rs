//! The 2-D synthetic targets of Table 1 (Ring, Mog2, Mog6, Ring5), their energies, gradients and exact draws.
//!
//! The definitions are A-NICE-MC's (Song, Zhao & Ermon 2017), which paper 004 says it adopts:
//! Ring U = ((r − 2)/0.4)²; Ring5 U = minᵢ ((r − i)/0.2)², i = 1..5; Mog2 and Mog6 equal mixtures
//! of isotropic Gaussians with σ = 0.5 at (±5, 0), and at radius 5 every 60° from (5, 0).

use rand::Rng;

use super::normal;
use crate::math::Portable;

/// One of the four synthetic targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Toy {
    /// ((r − 2)/0.4)².
    Ring,
    /// Two Gaussians, σ = 0.5, at (±5, 0).
    Mog2,
    /// Six Gaussians, σ = 0.5, at radius 5, every 60°.
    Mog6,
    /// minᵢ ((r − i)/0.2)², i = 1..5.
    Ring5,
}

const MOG_SIGMA: f64 = 0.5;

impl Toy {
    /// All four, in Table 1's order.
    pub const ALL: [Toy; 4] = [Toy::Ring, Toy::Mog2, Toy::Mog6, Toy::Ring5];

    /// The name in Table 1.
    pub fn name(self) -> &'static str {
        match self {
            Toy::Ring => "Ring",
            Toy::Mog2 => "Mog2",
            Toy::Mog6 => "Mog6",
            Toy::Ring5 => "Ring5",
        }
    }

    fn centres(self) -> Vec<[f64; 2]> {
        match self {
            Toy::Mog2 => vec![[5.0, 0.0], [-5.0, 0.0]],
            Toy::Mog6 => (0..6)
                .map(|k| {
                    let a = k as f64 * std::f64::consts::PI / 3.0;
                    [5.0 * a.cos_portable(), 5.0 * a.sin_portable()]
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The energy U(x) = −log p(x) up to a constant.
    pub fn energy(self, x: [f64; 2]) -> f64 {
        self.energy_grad(x).0
    }

    /// U(x) and ∇U(x).
    pub fn energy_grad(self, x: [f64; 2]) -> (f64, [f64; 2]) {
        let r = (x[0] * x[0] + x[1] * x[1]).sqrt().max(1e-12);
        let radial = |centre: f64, width: f64| {
            let v = (r - centre) / width;
            let dudr = 2.0 * v / width;
            (v * v, [dudr * x[0] / r, dudr * x[1] / r])
        };
        match self {
            Toy::Ring => radial(2.0, 0.4),
            Toy::Ring5 => {
                let i = r.round().clamp(1.0, 5.0);
                radial(i, 0.2)
            }
            Toy::Mog2 | Toy::Mog6 => {
                let s2 = MOG_SIGMA * MOG_SIGMA;
                let terms: Vec<(f64, [f64; 2])> = self
                    .centres()
                    .iter()
                    .map(|c| {
                        let d = [x[0] - c[0], x[1] - c[1]];
                        (-(d[0] * d[0] + d[1] * d[1]) / (2.0 * s2), d)
                    })
                    .collect();
                let max = terms.iter().map(|t| t.0).fold(f64::NEG_INFINITY, f64::max);
                let mut z = 0.0;
                let mut g = [0.0; 2];
                for (l, d) in &terms {
                    let w = (l - max).exp_portable();
                    z += w;
                    g[0] += w * d[0] / s2;
                    g[1] += w * d[1] / s2;
                }
                (-(max + z.ln_portable()), [g[0] / z, g[1] / z])
            }
        }
    }

    /// An exact draw: mixtures by component then Gaussian; rings by the inverse CDF of the radius
    /// (density ∝ r·exp(−U(r)) on a grid of 20 000 cells over [0, 7]) and a uniform angle.
    /// Builds the radius grid on each call: use [`Toy::draws`] for many.
    pub fn draw(self, rng: &mut impl Rng) -> [f64; 2] {
        let cdf = radial_cdf(self);
        self.draw_with(&cdf, rng)
    }

    fn draw_with(self, cdf: &[f64], rng: &mut impl Rng) -> [f64; 2] {
        match self {
            Toy::Mog2 | Toy::Mog6 => {
                let c = self.centres();
                let k = rng.random_range(0..c.len());
                [
                    c[k][0] + MOG_SIGMA * normal(rng),
                    c[k][1] + MOG_SIGMA * normal(rng),
                ]
            }
            Toy::Ring | Toy::Ring5 => {
                let u: f64 = rng.random();
                let cell = cdf.partition_point(|&c| c < u).min(cdf.len() - 1);
                let r = (cell as f64 + rng.random::<f64>()) * RADIUS_MAX / cdf.len() as f64;
                let a = rng.random::<f64>() * std::f64::consts::TAU;
                [r * a.cos_portable(), r * a.sin_portable()]
            }
        }
    }

    /// `n` exact draws, flattened (x₁, y₁, x₂, y₂, …).
    pub fn draws(self, n: usize, rng: &mut impl Rng) -> Vec<f64> {
        let cdf = radial_cdf(self);
        (0..n).flat_map(|_| self.draw_with(&cdf, rng)).collect()
    }
}

const RADIUS_MAX: f64 = 7.0;

fn radial_cdf(toy: Toy) -> Vec<f64> {
    if matches!(toy, Toy::Mog2 | Toy::Mog6) {
        return Vec::new();
    }
    const CELLS: usize = 20_000;
    let mut acc = 0.0;
    let mut cdf: Vec<f64> = (0..CELLS)
        .map(|k| {
            let r = (k as f64 + 0.5) * RADIUS_MAX / CELLS as f64;
            acc += r * (-toy.energy([r, 0.0])).exp_portable();
            acc
        })
        .collect();
    for c in &mut cdf {
        *c /= acc;
    }
    cdf
}
