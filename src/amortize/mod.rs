//! Learned samplers (paper 004, SAL-MC): a transition operator G(x, ξ) trained self-adversarially, sampling in one forward pass per draw.
//!
//! [`train`] runs Algorithm 1 on an unnormalised 2-D target ([`Target2d`], e.g. the synthetic
//! [`Toy`] targets of Table 1); the trained [`Operator`] draws chains by repeated application,
//! with or without a Metropolis-Hastings correction ([`Operator::chain`]; its MH chains also
//! propose from a [`Mixture2d`] fitted to the teacher's samples). [`Hmc2d`] is the HMC baseline
//! on the same targets. The networks are the hand-written [`Mlp`], trained and run on either
//! backend ([`Mlp::trainer_on_gpu`] and [`Mlp::on_gpu`] with the `gpu` feature). [`CodeModel`] is the class-conditional code sampler behind
//! `rmld amortize train` and `rmld augment --sampler amortized`. See docs/amortized.md for the choices and the measurements.

pub(crate) mod agsvgd;
pub(crate) mod codes;
pub(crate) mod hmc2d;
pub(crate) mod mixture;
pub(crate) mod mlp;
pub(crate) mod sal;
pub(crate) mod targets;
pub(crate) mod teacher;

pub use agsvgd::{stein_gradient, step as agsvgd_step, AgSvgdSettings};
pub use codes::{ClassModel, CodeModel, CodeTrainSettings, ModelShape, MODEL_MAGIC, MODEL_VERSION};
pub use hmc2d::Hmc2d;
pub use mixture::Mixture2d;
pub use mlp::{Adam, Grads, Mlp, Tape};
pub use sal::{train, Adjust, ChainRun, MhRatio, Operator, Progress, SalSettings, TrainStats};
pub use targets::Toy;
pub use teacher::{load_model, partial_path, save_model, teacher_dir};
pub use teacher::{read_teacher, TeacherSamples, MAX_JSON_BYTES};

use crate::math::Portable;
use rand::Rng;

/// An unnormalised 2-D density exp(−U(x)) given by its energy and gradient.
pub trait Target2d {
    /// U(x) and ∇U(x).
    fn energy_grad(&self, x: [f64; 2]) -> (f64, [f64; 2]);
}

impl Target2d for Toy {
    fn energy_grad(&self, x: [f64; 2]) -> (f64, [f64; 2]) {
        Toy::energy_grad(*self, x)
    }
}

/// A standard normal draw (Box-Muller).
pub(crate) fn normal(rng: &mut impl Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random();
    (-2.0 * u1.ln_portable()).sqrt() * (std::f64::consts::TAU * u2).cos_portable()
}

/// Maximum mean discrepancy² between two 2-D samples (flattened x, y pairs) with the RBF kernel
/// exp(−‖x − y‖²/(2 bw²)), the unbiased estimate, and its permutation p-value over `permutations`
/// random splits of the pooled sample.
pub fn mmd_test(
    a: &[f64],
    b: &[f64],
    bw: f64,
    permutations: usize,
    rng: &mut impl Rng,
) -> (f64, f64) {
    let pooled: Vec<[f64; 2]> = a
        .chunks_exact(2)
        .chain(b.chunks_exact(2))
        .map(|p| [p[0], p[1]])
        .collect();
    let n = pooled.len();
    let na = a.len() / 2;
    let mut k = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            let d = (pooled[i][0] - pooled[j][0]).powi(2) + (pooled[i][1] - pooled[j][1]).powi(2);
            k[i * n + j] = (-d / (2.0 * bw * bw)).exp_portable();
        }
    }
    let stat = |idx: &[usize]| {
        let (xa, xb) = idx.split_at(na);
        let mean_within = |s: &[usize]| {
            let mut t = 0.0;
            for (p, &i) in s.iter().enumerate() {
                for (q, &j) in s.iter().enumerate() {
                    if p != q {
                        t += k[i * n + j];
                    }
                }
            }
            t / (s.len() * (s.len() - 1)) as f64
        };
        let mut cross = 0.0;
        for &i in xa {
            for &j in xb {
                cross += k[i * n + j];
            }
        }
        mean_within(xa) + mean_within(xb) - 2.0 * cross / (xa.len() * xb.len()) as f64
    };
    let mut idx: Vec<usize> = (0..n).collect();
    let observed = stat(&idx);
    let mut above = 0usize;
    for _ in 0..permutations {
        for i in (1..n).rev() {
            let j = rng.random_range(0..=i);
            idx.swap(i, j);
        }
        if stat(&idx) >= observed {
            above += 1;
        }
    }
    (observed, (above + 1) as f64 / (permutations + 1) as f64)
}
