//! CPU twin of `shaders/fista.wgsl`: batched monotone FISTA for the LASSO encoder.
//!
//! argmin_z ½||x − A z||² + lam·||z||₁ for many x at once, by MFISTA (Beck & Teboulle 2009): the
//! candidate u = soft(y − ∇/L, lam/L) replaces z only when it does not raise the objective, so the
//! objective never increases. A y is carried as the same linear combination as y, so each
//! iteration costs two products: Aᵀ(A y − x) and A u.

use rayon::prelude::*;

use super::matmul::{residual_product_like, transpose_product_like};

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
/// (σ_max(A)²). `trace`, when given, receives every row's objective after every iteration.
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
    encode_like(a, d, p, lipschitz, images, lam, iterations, trace, 0)
}

/// [`encode`] whose rows equal those of an encoding of `like` rows at once (a shard's chains'
/// starts as the single run's; see `matmul::rows_like`).
#[allow(clippy::too_many_arguments)]
pub fn encode_like(
    a: &[f32],
    d: usize,
    p: usize,
    lipschitz: f32,
    images: &[f32],
    lam: f32,
    iterations: u32,
    mut trace: Option<&mut Vec<Vec<f64>>>,
    like: usize,
) -> Vec<f32> {
    let rows = images.len() / d;
    let step = 1.0 / lipschitz;
    let tau = lam * step;
    let mut z = vec![0f32; rows * p];
    let mut z_prev = vec![0f32; rows * p];
    let mut az = vec![0f32; rows * d];
    let mut az_prev = vec![0f32; rows * d];
    let mut y = vec![0f32; rows * p];
    let mut ay = vec![0f32; rows * d];
    let mut u = vec![0f32; rows * p];
    let mut au = vec![0f32; rows * d];
    let mut residual = vec![0f32; rows * d];
    let mut grad = vec![0f32; rows * p];
    let zeros = vec![0f32; rows * d];
    let mut objective: Vec<f64> = images
        .par_chunks(d)
        .map(|x| 0.5 * x.iter().map(|&v| (v as f64).powi(2)).sum::<f64>())
        .collect();
    let mut t = 1f32;
    for _ in 0..iterations {
        residual
            .par_iter_mut()
            .zip(ay.par_iter())
            .zip(images.par_iter())
            .for_each(|((r, &ay), &x)| *r = ay - x);
        transpose_product_like(a, d, p, &residual, &mut grad, like);
        u.par_iter_mut()
            .zip(y.par_iter())
            .zip(grad.par_iter())
            .for_each(|((u, &y), &g)| *u = soft_threshold(y - step * g, tau));
        residual_product_like(a, d, p, &u, &zeros, &mut au, like);
        residual
            .par_iter_mut()
            .zip(au.par_iter())
            .zip(images.par_iter())
            .for_each(|((r, &au), &x)| *r = au - x);
        let candidate = lasso_objective(&residual, &u, d, p, lam);
        z_prev.copy_from_slice(&z);
        az_prev.copy_from_slice(&az);
        let t_next = (1.0 + (1.0 + 4.0 * t * t).sqrt()) / 2.0;
        let (c_u, c_prev) = (t / t_next, (t - 1.0) / t_next);
        for row in 0..rows {
            if candidate[row] <= objective[row] {
                objective[row] = candidate[row];
                z[row * p..(row + 1) * p].copy_from_slice(&u[row * p..(row + 1) * p]);
                az[row * d..(row + 1) * d].copy_from_slice(&au[row * d..(row + 1) * d]);
            }
        }
        // y = z + (t/t')(u − z) + ((t − 1)/t')(z − z_prev), and A y alike.
        extrapolate(&mut y, &z, &u, &z_prev, c_u, c_prev);
        extrapolate(&mut ay, &az, &au, &az_prev, c_u, c_prev);
        t = t_next;
        if let Some(trace) = trace.as_deref_mut() {
            trace.push(objective.clone());
        }
    }
    z
}

fn extrapolate(y: &mut [f32], z: &[f32], u: &[f32], z_prev: &[f32], c_u: f32, c_prev: f32) {
    y.par_iter_mut()
        .zip(z.par_iter())
        .zip(u.par_iter().zip(z_prev.par_iter()))
        .for_each(|((y, &z), (&u, &zp))| *y = z + c_u * (u - z) + c_prev * (z - zp));
}

/// Rows of [`encode_until`]'s batch that ran every iteration without meeting the tolerance,
/// and the iterations all rows ran together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EncodeStats {
    /// Rows encoded.
    pub rows: usize,
    /// Sum over rows of the iterations each ran.
    pub iterations: u64,
    /// Rows stopped by the iteration cap with their duality gap above the tolerance.
    pub capped: usize,
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

/// [`encode_like`] that stops each row once its relative duality gap ([`relative_gaps`], from
/// the gradient every iteration computes anyway, so the check costs no product) is at most
/// `tolerance`, or after `iterations`. Finished rows leave the batch, so the products shrink
/// as rows converge. `tolerance` 0 runs [`encode_like`] itself (every row every iteration,
/// the same bytes). A row's code depends only on its image: the products are taken as over
/// the batch's first row count (`matmul::rows_like`), whatever rows remain.
#[allow(clippy::too_many_arguments)]
pub fn encode_until(
    a: &[f32],
    d: usize,
    p: usize,
    lipschitz: f32,
    images: &[f32],
    lam: f32,
    iterations: u32,
    tolerance: f32,
    like: usize,
) -> (Vec<f32>, EncodeStats) {
    let total = images.len() / d;
    if tolerance <= 0.0 {
        let codes = encode_like(a, d, p, lipschitz, images, lam, iterations, None, like);
        let stats = EncodeStats {
            rows: total,
            iterations: total as u64 * iterations as u64,
            capped: total,
        };
        return (codes, stats);
    }
    let like = like.max(total);
    let step = 1.0 / lipschitz;
    let tau = lam * step;
    let mut out = vec![0f32; total * p];
    let mut stats = EncodeStats {
        rows: total,
        ..EncodeStats::default()
    };
    // The active rows' state; `index[k]` is active row k's row in `images`.
    let mut index: Vec<usize> = (0..total).collect();
    let mut x = images.to_vec();
    let mut z = vec![0f32; total * p];
    let mut z_prev = vec![0f32; total * p];
    let mut az = vec![0f32; total * d];
    let mut az_prev = vec![0f32; total * d];
    let mut y = vec![0f32; total * p];
    let mut ay = vec![0f32; total * d];
    let mut u = vec![0f32; total * p];
    let mut au = vec![0f32; total * d];
    let mut residual = vec![0f32; total * d];
    let mut grad = vec![0f32; total * p];
    let mut zeros = vec![0f32; total * d];
    let mut objective: Vec<f64> = x
        .par_chunks(d)
        .map(|x| 0.5 * x.iter().map(|&v| (v as f64).powi(2)).sum::<f64>())
        .collect();
    let mut t = 1f32;
    for iteration in 0..iterations {
        residual
            .par_iter_mut()
            .zip(ay.par_iter())
            .zip(x.par_iter())
            .for_each(|((r, &ay), &x)| *r = ay - x);
        transpose_product_like(a, d, p, &residual, &mut grad, like);
        let gaps = relative_gaps(&residual, &grad, &x, &objective, d, p, lam);
        if gaps.iter().any(|&g| g <= tolerance as f64) {
            let keep: Vec<bool> = gaps.iter().map(|&g| g > tolerance as f64).collect();
            for (k, _) in keep.iter().enumerate().filter(|(_, &keep)| !keep) {
                out[index[k] * p..(index[k] + 1) * p].copy_from_slice(&z[k * p..(k + 1) * p]);
                stats.iterations += iteration as u64;
            }
            let retain = |v: &mut Vec<f32>, width: usize| compact(v, &keep, width);
            retain(&mut x, d);
            retain(&mut z, p);
            retain(&mut z_prev, p);
            retain(&mut az, d);
            retain(&mut az_prev, d);
            retain(&mut y, p);
            retain(&mut ay, d);
            retain(&mut residual, d);
            retain(&mut grad, p);
            let rows = keep.iter().filter(|&&k| k).count();
            u.truncate(rows * p);
            au.truncate(rows * d);
            zeros.truncate(rows * d);
            let mut k = 0;
            index.retain(|_| (keep[k], k += 1).0);
            let mut k = 0;
            objective.retain(|_| (keep[k], k += 1).0);
            if index.is_empty() {
                return (out, stats);
            }
        }
        u.par_iter_mut()
            .zip(y.par_iter())
            .zip(grad.par_iter())
            .for_each(|((u, &y), &g)| *u = soft_threshold(y - step * g, tau));
        residual_product_like(a, d, p, &u, &zeros, &mut au, like);
        residual
            .par_iter_mut()
            .zip(au.par_iter())
            .zip(x.par_iter())
            .for_each(|((r, &au), &x)| *r = au - x);
        let candidate = lasso_objective(&residual, &u, d, p, lam);
        z_prev.copy_from_slice(&z);
        az_prev.copy_from_slice(&az);
        let t_next = (1.0 + (1.0 + 4.0 * t * t).sqrt()) / 2.0;
        let (c_u, c_prev) = (t / t_next, (t - 1.0) / t_next);
        for row in 0..index.len() {
            if candidate[row] <= objective[row] {
                objective[row] = candidate[row];
                z[row * p..(row + 1) * p].copy_from_slice(&u[row * p..(row + 1) * p]);
                az[row * d..(row + 1) * d].copy_from_slice(&au[row * d..(row + 1) * d]);
            }
        }
        extrapolate(&mut y, &z, &u, &z_prev, c_u, c_prev);
        extrapolate(&mut ay, &az, &au, &az_prev, c_u, c_prev);
        t = t_next;
    }
    for (k, &row) in index.iter().enumerate() {
        out[row * p..(row + 1) * p].copy_from_slice(&z[k * p..(k + 1) * p]);
    }
    stats.iterations += index.len() as u64 * iterations as u64;
    stats.capped = index.len();
    (out, stats)
}

/// Keeps the rows (of `width`) of `v` whose `keep` is true, in order.
fn compact(v: &mut Vec<f32>, keep: &[bool], width: usize) {
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
