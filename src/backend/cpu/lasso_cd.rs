//! LASSO codes by coordinate descent on the Gram matrix AᵀA, row by row, to a relative duality gap: the CPU encoder `augment` uses.
//!
//! Per row: b = Aᵀx (one batched product), then cyclic coordinate descent on
//! ½zᵀGz − bᵀz + lam·||z||₁ with G = AᵀA, keeping the gradient g = G z − b exact by adding
//! δ·G[j] at every change (f64 state, f32 G). A full pass over the atoms alternates with passes
//! over the nonzero ones; after each, the relative duality gap is computed from z, g, b and
//! ||x||² alone (||A z − x||² = zᵀg − bᵀz + ||x||², the dual point θ = −s·(A z − x) with
//! s = min(1, lam/||g||∞)), and the row stops once it is at most the tolerance. A row's code
//! depends only on its image (and on b's product path, taken as over `like` rows).

use rayon::prelude::*;

use super::fista::EncodeStats;
use super::matmul::{transpose_product, transpose_product_like};

/// Largest p whose Gram matrix (p² f32) the CPU backend builds for this encoder (256 MiB).
pub const MAX_GRAM_ATOMS: usize = 8192;

/// G = AᵀA (p × p, row-major) of A (d × p, row-major).
pub fn gram(a: &[f32], d: usize, p: usize) -> Vec<f32> {
    let mut at = vec![0f32; p * d];
    for i in 0..d {
        for j in 0..p {
            at[j * d + i] = a[i * p + j];
        }
    }
    let mut g = vec![0f32; p * p];
    transpose_product(a, d, p, &at, &mut g);
    g
}

/// Passes over the nonzero atoms between two full passes.
const ACTIVE_PASSES: u32 = 10;

/// The LASSO codes (rows of p) of `images` (rows of d) given A (d × p) and its Gram matrix
/// `gram`: each row stops once its relative duality gap is at most `tolerance` (> 0), or after
/// `passes` passes over its atoms (full or active), whichever comes first.
#[allow(clippy::too_many_arguments)]
pub fn encode(
    a: &[f32],
    gram: &[f32],
    d: usize,
    p: usize,
    images: &[f32],
    lam: f32,
    passes: u32,
    tolerance: f32,
    like: usize,
) -> (Vec<f32>, EncodeStats) {
    let rows = images.len() / d;
    let mut b = vec![0f32; rows * p];
    transpose_product_like(a, d, p, images, &mut b, like);
    let diag: Vec<f64> = (0..p).map(|j| gram[j * p + j] as f64).collect();
    let mut out = vec![0f32; rows * p];
    let per_row: Vec<(u32, bool)> = out
        .par_chunks_mut(p)
        .zip(b.par_chunks(p).zip(images.par_chunks(d)))
        .map(|(z_out, (b, x))| {
            let xx: f64 = x.iter().map(|&v| v as f64 * v as f64).sum();
            let problem = Row {
                gram,
                diag: &diag,
                b,
                xx,
                lam: lam as f64,
            };
            problem.solve(z_out, passes, tolerance as f64)
        })
        .collect();
    let stats = EncodeStats {
        rows,
        iterations: per_row.iter().map(|&(n, _)| n as u64).sum(),
        capped: per_row.iter().filter(|&&(_, met)| !met).count(),
    };
    (out, stats)
}

/// One row's problem.
struct Row<'a> {
    gram: &'a [f32],
    diag: &'a [f64],
    b: &'a [f32],
    xx: f64,
    lam: f64,
}

impl Row<'_> {
    /// Writes the code into `z_out`; (passes run, whether the gap met the tolerance).
    fn solve(&self, z_out: &mut [f32], passes: u32, tolerance: f64) -> (u32, bool) {
        let p = self.b.len();
        let mut z = vec![0f64; p];
        let mut g: Vec<f64> = self.b.iter().map(|&v| -(v as f64)).collect();
        let mut run = 0;
        let mut met = self.gap(&z, &g) <= tolerance;
        while !met && run < passes {
            self.pass(&mut z, &mut g, 0..p, None);
            run += 1;
            let mut active: Vec<usize> = (0..p).filter(|&j| z[j] != 0.0).collect();
            for _ in 0..ACTIVE_PASSES {
                if run >= passes {
                    break;
                }
                let change = self.pass(&mut z, &mut g, 0..0, Some(&mut active));
                run += 1;
                if change == 0.0 {
                    break;
                }
            }
            met = self.gap(&z, &g) <= tolerance;
        }
        for (o, &v) in z_out.iter_mut().zip(&z) {
            *o = v as f32;
        }
        (run, met)
    }

    /// One pass of coordinate updates over `range`, or over `active` when given (dropping the
    /// atoms that become zero); the largest |δ|·sqrt(G_jj).
    fn pass(
        &self,
        z: &mut [f64],
        g: &mut [f64],
        range: std::ops::Range<usize>,
        active: Option<&mut Vec<usize>>,
    ) -> f64 {
        let p = z.len();
        let mut change = 0f64;
        let mut update = |j: usize, z: &mut [f64], g: &mut [f64]| {
            let c = self.diag[j];
            if c <= 0.0 {
                return;
            }
            let old = z[j];
            let rho = c * old - g[j];
            let new = if rho > self.lam {
                (rho - self.lam) / c
            } else if rho < -self.lam {
                (rho + self.lam) / c
            } else {
                0.0
            };
            let delta = new - old;
            if delta != 0.0 {
                z[j] = new;
                let column = &self.gram[j * p..(j + 1) * p];
                for (g, &gj) in g.iter_mut().zip(column) {
                    *g += delta * gj as f64;
                }
                change = change.max(delta.abs() * c.sqrt());
            }
        };
        match active {
            Some(active) => {
                for &j in active.iter() {
                    update(j, z, g);
                }
                active.retain(|&j| z[j] != 0.0);
            }
            None => {
                for j in range {
                    update(j, z, g);
                }
            }
        }
        change
    }

    /// (P(z) − D(θ)) / P(z), from z, g = G z − b, b and ||x||² (0 when P(z) is 0).
    fn gap(&self, z: &[f64], g: &[f64]) -> f64 {
        let (mut bz, mut zg, mut l1, mut g_max) = (0f64, 0f64, 0f64, 0f64);
        for ((&z, &g), &b) in z.iter().zip(g).zip(self.b) {
            bz += b as f64 * z;
            zg += z * g;
            l1 += z.abs();
            g_max = g_max.max(g.abs());
        }
        let rr = (zg - bz + self.xx).max(0.0);
        let rx = bz - self.xx;
        let primal = 0.5 * rr + self.lam * l1;
        if primal <= 0.0 {
            return 0.0;
        }
        let s = if g_max > self.lam {
            self.lam / g_max
        } else {
            1.0
        };
        let dual = -s * rx - 0.5 * s * s * rr;
        ((primal - dual) / primal).max(0.0)
    }
}
