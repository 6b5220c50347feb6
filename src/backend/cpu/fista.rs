//! CPU twin of `shaders/fista.wgsl`: batched monotone FISTA for the LASSO encoder.
//!
//! argmin_z ½||x − A z||² + lam·||z||₁ for many x at once, by MFISTA (Beck & Teboulle 2009): the
//! candidate u = soft(y − ∇/L, lam/L) replaces z only when it does not raise the objective, so the
//! objective never increases. A y is carried as the same linear combination as y, so each
//! iteration costs two products: Aᵀ(A y − x) and A u.

use rayon::prelude::*;

use super::packed::PackedMatrix;

/// soft(v, tau) = sign(v)·max(|v| − tau, 0), the proximal map of tau·|·|.
#[inline]
pub fn soft_threshold(v: f32, tau: f32) -> f32 {
    if v > tau {
        v - tau
    } else if v < -tau {
        v + tau
    } else {
        0.0
    }
}

/// Per row: ½||A z − x||² + lam·||z||₁ given the residual A z − x.
pub fn lasso_objective(residual: &[f32], z: &[f32], d: usize, p: usize, lam: f32) -> Vec<f64> {
    residual
        .par_chunks(d)
        .zip(z.par_chunks(p))
        .map(|(r, z)| {
            0.5 * r.iter().map(|&v| (v as f64).powi(2)).sum::<f64>()
                + lam as f64 * z.iter().map(|&v| (v as f64).abs()).sum::<f64>()
        })
        .collect()
}

/// The LASSO codes (rows of p) of `images` (rows of d), with Lipschitz constant `lipschitz`
/// (σ_max(A)²). `trace`, when given, receives every row's objective after every iteration. A
/// row's code depends only on its image: the products (`packed`) sum every output in one
/// order, whatever the rows around it.
#[allow(clippy::too_many_arguments)]
pub fn encode(
    a: &[f32],
    d: usize,
    p: usize,
    lipschitz: f32,
    images: &[f32],
    lam: f32,
    iterations: u32,
    trace: Option<&mut Vec<Vec<f64>>>,
) -> Vec<f32> {
    let a = PackedMatrix::both(a, d, p);
    let never = || false;
    encode_packed(&a, d, p, lipschitz, images, lam, iterations, trace, &never).unwrap_or_default()
}

/// [`encode`] against A already packed both ways; None once `stop` says so (asked before every
/// iteration: one iteration of a large batch takes a fraction of a second, the batch minutes).
#[allow(clippy::too_many_arguments)]
fn encode_packed(
    a: &PackedMatrix,
    d: usize,
    p: usize,
    lipschitz: f32,
    images: &[f32],
    lam: f32,
    iterations: u32,
    mut trace: Option<&mut Vec<Vec<f64>>>,
    stop: &dyn Fn() -> bool,
) -> Option<Vec<f32>> {
    let problem = Problem {
        a,
        d,
        p,
        lam,
        step: 1.0 / lipschitz,
    };
    let mut state = Batch::new(images, d, p);
    for _ in 0..iterations {
        if stop() {
            return None;
        }
        state.gradient(&problem, images);
        state.advance(&problem, images);
        if let Some(trace) = trace.as_deref_mut() {
            trace.push(state.objective.clone());
        }
    }
    Some(state.z)
}

/// What every FISTA iteration of one encoding shares: A (packed both ways), its shape, λ and the
/// step 1/L.
struct Problem<'a> {
    a: &'a PackedMatrix,
    d: usize,
    p: usize,
    lam: f32,
    step: f32,
}

/// The iterates of a batch of rows: z (the best code so far), the extrapolated y, their images
/// under A, the candidate u, and each row's objective at z.
struct Batch {
    z: Vec<f32>,
    z_prev: Vec<f32>,
    az: Vec<f32>,
    az_prev: Vec<f32>,
    y: Vec<f32>,
    ay: Vec<f32>,
    u: Vec<f32>,
    au: Vec<f32>,
    residual: Vec<f32>,
    grad: Vec<f32>,
    zeros: Vec<f32>,
    objective: Vec<f64>,
    t: f32,
}

impl Batch {
    /// Every code 0 (so y = 0 and A y = 0), the objective ½||x||² per row.
    fn new(images: &[f32], d: usize, p: usize) -> Self {
        let rows = images.len() / d;
        Batch {
            z: vec![0f32; rows * p],
            z_prev: vec![0f32; rows * p],
            az: vec![0f32; rows * d],
            az_prev: vec![0f32; rows * d],
            y: vec![0f32; rows * p],
            ay: vec![0f32; rows * d],
            u: vec![0f32; rows * p],
            au: vec![0f32; rows * d],
            residual: vec![0f32; rows * d],
            grad: vec![0f32; rows * p],
            zeros: vec![0f32; rows * d],
            objective: images
                .par_chunks(d)
                .map(|x| 0.5 * x.iter().map(|&v| (v as f64).powi(2)).sum::<f64>())
                .collect(),
            t: 1.0,
        }
    }

    /// The iteration's first half: residual = A y − x and grad = Aᵀ(A y − x).
    fn gradient(&mut self, problem: &Problem, images: &[f32]) {
        self.residual
            .par_iter_mut()
            .zip(self.ay.par_iter())
            .zip(images.par_iter())
            .for_each(|((r, &ay), &x)| *r = ay - x);
        problem.a.transpose_product(&self.residual, &mut self.grad);
    }

    /// The iteration's second half, after [`Batch::gradient`]: the candidate u = soft(y − ∇/L,
    /// λ/L) replaces z where it does not raise the objective, then y and A y are extrapolated:
    /// y = z + (t/t')(u − z) + ((t − 1)/t')(z − z_prev).
    fn advance(&mut self, problem: &Problem, images: &[f32]) {
        let Problem { a, d, p, lam, step } = *problem;
        let tau = lam * step;
        self.u
            .par_iter_mut()
            .zip(self.y.par_iter())
            .zip(self.grad.par_iter())
            .for_each(|((u, &y), &g)| *u = soft_threshold(y - step * g, tau));
        a.residual_product(&self.u, &self.zeros, &mut self.au);
        self.residual
            .par_iter_mut()
            .zip(self.au.par_iter())
            .zip(images.par_iter())
            .for_each(|((r, &au), &x)| *r = au - x);
        let candidate = lasso_objective(&self.residual, &self.u, d, p, lam);
        self.z_prev.copy_from_slice(&self.z);
        self.az_prev.copy_from_slice(&self.az);
        let t = self.t;
        let t_next = (1.0 + (1.0 + 4.0 * t * t).sqrt()) / 2.0;
        let (c_u, c_prev) = (t / t_next, (t - 1.0) / t_next);
        for (row, &candidate) in candidate.iter().enumerate() {
            if candidate <= self.objective[row] {
                self.objective[row] = candidate;
                self.z[row * p..(row + 1) * p].copy_from_slice(&self.u[row * p..(row + 1) * p]);
                self.az[row * d..(row + 1) * d].copy_from_slice(&self.au[row * d..(row + 1) * d]);
            }
        }
        extrapolate(&mut self.y, &self.z, &self.u, &self.z_prev, c_u, c_prev);
        extrapolate(&mut self.ay, &self.az, &self.au, &self.az_prev, c_u, c_prev);
        self.t = t_next;
    }

    /// Keeps the rows whose `keep` is true, in order (the rest left the batch).
    fn retain(&mut self, keep: &[bool], d: usize, p: usize) {
        for (v, width) in [
            (&mut self.z, p),
            (&mut self.z_prev, p),
            (&mut self.az, d),
            (&mut self.az_prev, d),
            (&mut self.y, p),
            (&mut self.ay, d),
            (&mut self.residual, d),
            (&mut self.grad, p),
        ] {
            compact(v, keep, width);
        }
        let rows = keep.iter().filter(|&&k| k).count();
        self.u.truncate(rows * p);
        self.au.truncate(rows * d);
        self.zeros.truncate(rows * d);
        let mut k = 0;
        self.objective.retain(|_| (keep[k], k += 1).0);
    }
}

fn extrapolate(y: &mut [f32], z: &[f32], u: &[f32], z_prev: &[f32], c_u: f32, c_prev: f32) {
    y.par_iter_mut()
        .zip(z.par_iter())
        .zip(u.par_iter().zip(z_prev.par_iter()))
        .for_each(|((y, &z), (&u, &zp))| *y = z + c_u * (u - z) + c_prev * (z - zp));
}

/// How a LASSO encoder's rows stopped: the iterations all rows ran together, the rows that ran
/// every iteration without meeting the tolerance, and which encoder ran them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EncodeStats {
    /// Rows encoded.
    pub rows: usize,
    /// Sum over rows of the iterations each ran.
    pub iterations: u64,
    /// Rows stopped by the iteration cap with their duality gap above the tolerance.
    pub capped: usize,
    /// Rows encoded by ADMM (`lasso_admm`); the others by FISTA.
    pub admm_rows: usize,
}

impl EncodeStats {
    /// Adds `other`'s counts (encodings of more rows) to these.
    pub fn add(&mut self, other: &EncodeStats) {
        self.rows += other.rows;
        self.iterations += other.iterations;
        self.capped += other.capped;
        self.admm_rows += other.admm_rows;
    }
}

/// Relative duality gap of each row: (P(z) − D(θ)) / P(z) with P the LASSO objective at the
/// row's code z (`objective`) and θ = s·(x − A y) the dual point scaled into ||Aᵀθ||∞ ≤ lam,
/// from a residual `residual_y` = A y − x and its gradient `grad` = Aᵀ(A y − x). A bound on how
/// far z's objective is above the optimum, relative to it (D(θ) ≤ P* ≤ P(z)).
pub fn relative_gaps(
    residual_y: &[f32],
    grad: &[f32],
    images: &[f32],
    objective: &[f64],
    d: usize,
    p: usize,
    lam: f32,
) -> Vec<f64> {
    residual_y
        .par_chunks(d)
        .zip(grad.par_chunks(p))
        .zip(images.par_chunks(d).zip(objective.par_iter()))
        .map(|((r, g), (x, &primal))| {
            let g_max = g.iter().fold(0f32, |m, &v| m.max(v.abs())) as f64;
            let s = if g_max > lam as f64 {
                lam as f64 / g_max
            } else {
                1.0
            };
            let (mut rx, mut rr) = (0f64, 0f64);
            for (&r, &x) in r.iter().zip(x) {
                rx += r as f64 * x as f64;
                rr += r as f64 * r as f64;
            }
            let dual = -s * rx - 0.5 * s * s * rr;
            if primal > 0.0 {
                ((primal - dual) / primal).max(0.0)
            } else {
                0.0
            }
        })
        .collect()
}

/// [`encode`] against A packed both ways that stops each row once its relative duality gap
/// ([`relative_gaps`], from the gradient every iteration computes anyway, so the check costs no
/// product) is at most `tolerance`, or after `iterations`. Finished rows leave the batch, so
/// the products shrink as rows converge. `tolerance` 0 runs [`encode`]'s iterations (every row
/// every iteration, the same bytes). A row's code depends only on its image, whatever rows
/// remain.
#[allow(clippy::too_many_arguments)]
pub fn encode_until(
    a: &PackedMatrix,
    d: usize,
    p: usize,
    lipschitz: f32,
    images: &[f32],
    lam: f32,
    iterations: u32,
    tolerance: f32,
) -> (Vec<f32>, EncodeStats) {
    let never = || false;
    let problem = (a, d, p, lipschitz);
    encode_until_or_stop(problem, images, lam, iterations, tolerance, &never).unwrap_or_default()
}

/// [`encode_until`] that gives up (None) once `stop` says so, asked before every iteration.
pub fn encode_until_or_stop(
    (a, d, p, lipschitz): (&PackedMatrix, usize, usize, f32),
    images: &[f32],
    lam: f32,
    iterations: u32,
    tolerance: f32,
    stop: &dyn Fn() -> bool,
) -> Option<(Vec<f32>, EncodeStats)> {
    let total = images.len() / d;
    if tolerance <= 0.0 {
        let codes = encode_packed(a, d, p, lipschitz, images, lam, iterations, None, stop)?;
        let stats = EncodeStats {
            rows: total,
            iterations: total as u64 * iterations as u64,
            capped: total,
            admm_rows: 0,
        };
        return Some((codes, stats));
    }
    let problem = Problem {
        a,
        d,
        p,
        lam,
        step: 1.0 / lipschitz,
    };
    let mut out = vec![0f32; total * p];
    let mut stats = EncodeStats {
        rows: total,
        ..EncodeStats::default()
    };
    // The active rows' state; `index[k]` is active row k's row in `images`.
    let mut index: Vec<usize> = (0..total).collect();
    let mut x = images.to_vec();
    let mut state = Batch::new(&x, d, p);
    for iteration in 0..iterations {
        if stop() {
            return None;
        }
        state.gradient(&problem, &x);
        let gaps = relative_gaps(
            &state.residual,
            &state.grad,
            &x,
            &state.objective,
            d,
            p,
            lam,
        );
        if gaps.iter().any(|&g| g <= tolerance as f64) {
            let keep: Vec<bool> = gaps.iter().map(|&g| g > tolerance as f64).collect();
            for (k, _) in keep.iter().enumerate().filter(|(_, &keep)| !keep) {
                out[index[k] * p..(index[k] + 1) * p].copy_from_slice(&state.z[k * p..(k + 1) * p]);
                stats.iterations += iteration as u64;
            }
            state.retain(&keep, d, p);
            compact(&mut x, &keep, d);
            let mut k = 0;
            index.retain(|_| (keep[k], k += 1).0);
            if index.is_empty() {
                return Some((out, stats));
            }
        }
        state.advance(&problem, &x);
    }
    for (k, &row) in index.iter().enumerate() {
        out[row * p..(row + 1) * p].copy_from_slice(&state.z[k * p..(k + 1) * p]);
    }
    stats.iterations += index.len() as u64 * iterations as u64;
    stats.capped = index.len();
    Some((out, stats))
}

/// Keeps the rows (of `width`) of `v` whose `keep` is true, in order.
pub(super) fn compact(v: &mut Vec<f32>, keep: &[bool], width: usize) {
    let mut to = 0;
    for (from, &k) in keep.iter().enumerate() {
        if k {
            if to != from {
                v.copy_within(from * width..(from + 1) * width, to * width);
            }
            to += 1;
        }
    }
    v.truncate(to * width);
}
