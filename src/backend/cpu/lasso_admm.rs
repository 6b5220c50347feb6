//! LASSO codes by over-relaxed ADMM with an exact quadratic step, batched as products, to a relative duality gap: the CPU encoder under a tolerance (augment's and encode's default).
//!
//! argmin ½||A z − x||² + lam·||v||₁ subject to z = v (Boyd et al. 2011, §6.4), relaxed by α:
//!
//! ```text
//! z ← (AᵀA + ρI)⁻¹ (Aᵀx + ρ(v − u))     ẑ ← α z + (1 − α) v
//! v ← soft(ẑ + u, lam/ρ)                  u ← u + ẑ − v
//! ```
//!
//! By Woodbury, (AᵀA + ρI)⁻¹ q = (q − Aᵀ M A q)/ρ with M = (ρI + AAᵀ)⁻¹ = L⁻ᵀ L⁻¹ (Cholesky,
//! once per dictionary in f64), so with the whitened dictionary B = L⁻¹ A (d × p) the step is
//! (q − Bᵀ (B q))/ρ: an iteration costs the two products of FISTA's (B q, Bᵀ w), where M's own
//! d × d product cost an eighth more. FISTA's 1/L gradient step crawls on the nearly square
//! systems of MNIST's supports; the exact quadratic step does not (docs/benchmarks.md, "LASSO
//! by ADMM"). Every [`CHECK_EVERY`] iterations each row's relative duality gap is measured: the
//! primal at its sparse iterate v (one more product), the dual at the residual of the quadratic
//! step's z, whose AᵀA z = Bᵀ w the step computed anyway and whose A z = L⁻ᵀ w costs a d × d
//! product. Rows within the tolerance leave the batch. A row's code depends only on its image:
//! every product (`packed`, AAᵀ and B included) sums each output in one order, whatever the
//! rows around it and the CPU.

use rayon::prelude::*;

use super::fista::{compact, lasso_objective, relative_gaps, soft_threshold, EncodeStats};
use super::packed::{gram, PackedMatrix};

/// Largest d whose d × d Cholesky factor the CPU backend builds for this encoder (the f64
/// factorization takes seconds at this size, 0.2 s at 784). Beyond it the gap-stop FISTA
/// encodes.
pub const MAX_ROWS: usize = 2048;

/// ρ as a fraction of L = σ_max(A)², which makes the iterates scale-free in A and x. On MNIST
/// (300 rows, λ 0.05, the 5e-3 gap checked every 10 iterations) L/20, L/25, L/30 and L/40 took
/// 60.8, 52.5, 50.2 and 50.8 iterations a row (scripts/lasso/admm_explore.py).
pub const RHO_PER_LIPSCHITZ: f64 = 1.0 / 30.0;

/// The over-relaxation α (1 is plain ADMM; 1.5 to 1.8 is the usual range, and 1.8 was faster
/// than 1.5 in every case measured).
pub const RELAXATION: f32 = 1.8;

/// Iterations between two duality-gap checks (each costs about one product more, so 10 adds a
/// twentieth).
pub const CHECK_EVERY: u32 = 10;

/// ρ, and with ρI + AAᵀ = L Lᵀ, L⁻¹ and the whitened dictionary B = L⁻¹ A, for one dictionary.
#[derive(Clone, Debug)]
pub struct Factor {
    rho: f32,
    /// L⁻¹ (d × d, lower triangular), packed for R · L⁻¹ (per row L⁻ᵀ r).
    lower_inverse: PackedMatrix,
    /// B = L⁻¹ A (d × p), packed both ways.
    whitened: PackedMatrix,
}

impl Factor {
    /// The factor of A (d × p); None when ρI + AAᵀ is not numerically positive definite (a NaN
    /// in A), so the caller keeps FISTA.
    pub fn new(a: &[f32], d: usize, p: usize) -> Option<Self> {
        // AAᵀ in the products' order, symmetrised in f64.
        let aat = gram(a, d, p);
        let mut k: Vec<f64> = (0..d * d)
            .map(|ij| (aat[ij] as f64 + aat[(ij % d) * d + ij / d] as f64) / 2.0)
            .collect();
        // L = λ_max(AAᵀ) by power iteration on the d × d matrix (a few percent is enough for
        // ρ, and it costs milliseconds where the d × p power iteration of FISTA's step costs
        // a second at 784 × 3136).
        let lipschitz = largest_eigenvalue(&k, d);
        let rho = if lipschitz > 0.0 && lipschitz.is_finite() {
            lipschitz * RHO_PER_LIPSCHITZ
        } else {
            1.0
        };
        for i in 0..d {
            k[i * d + i] += rho;
        }
        let lower_inverse: Vec<f32> = cholesky_lower_inverse(k, d)?
            .into_iter()
            .map(|v| v as f32)
            .collect();
        // B = L⁻¹ A: row c of the product R · A with R = L⁻¹ (d rows).
        let mut whitened = vec![0f32; d * p];
        PackedMatrix::times_only(a, d, p).transpose_product(&lower_inverse, &mut whitened);
        Some(Self {
            rho: rho as f32,
            lower_inverse: PackedMatrix::times_only(&lower_inverse, d, d),
            whitened: PackedMatrix::both(&whitened, d, p),
        })
    }

    /// ρ, the penalty of the constraint z = v.
    pub fn rho(&self) -> f32 {
        self.rho
    }
}

/// Iterations of [`largest_eigenvalue`].
const POWER_ITERATIONS: usize = 100;

/// The Rayleigh quotient after [`POWER_ITERATIONS`] power iterations on the symmetric positive
/// semi-definite `k` (n × n) from the all-ones vector.
fn largest_eigenvalue(k: &[f64], n: usize) -> f64 {
    let mut v = vec![1.0 / (n as f64).sqrt(); n];
    let mut eigenvalue = 0.0;
    for _ in 0..POWER_ITERATIONS {
        let w: Vec<f64> = k
            .par_chunks(n)
            .map(|row| row.iter().zip(&v).map(|(a, b)| a * b).sum())
            .collect();
        eigenvalue = w.iter().zip(&v).map(|(a, b)| a * b).sum();
        let norm = w.iter().map(|x| x * x).sum::<f64>().sqrt();
        if !(norm > 0.0 && norm.is_finite()) {
            return eigenvalue;
        }
        v = w.into_iter().map(|x| x / norm).collect();
    }
    eigenvalue
}

/// L⁻¹ (n × n, row-major) for the Cholesky factor k = L Lᵀ of the symmetric positive definite
/// `k` (n × n, row-major); None when a pivot is not positive.
fn cholesky_lower_inverse(mut k: Vec<f64>, n: usize) -> Option<Vec<f64>> {
    // In place: the lower triangle of k becomes L, row by row.
    for j in 0..n {
        let (done, rest) = k.split_at_mut(j * n);
        let row_j = &mut rest[..n];
        for c in 0..j {
            let row_c = &done[c * n..c * n + c];
            let dot: f64 = row_j[..c].iter().zip(row_c).map(|(a, b)| a * b).sum();
            row_j[c] = (row_j[c] - dot) / done[c * n + c];
        }
        let pivot = row_j[j] - row_j[..j].iter().map(|v| v * v).sum::<f64>();
        if !(pivot > 0.0 && pivot.is_finite()) {
            return None;
        }
        row_j[j] = pivot.sqrt();
    }
    // Column c of L⁻¹ by forward substitution.
    let l = &k;
    let columns: Vec<Vec<f64>> = (0..n)
        .into_par_iter()
        .map(|c| {
            let mut col = vec![0f64; n];
            col[c] = 1.0 / l[c * n + c];
            for i in c + 1..n {
                let dot: f64 = (c..i).map(|m| l[i * n + m] * col[m]).sum();
                col[i] = -dot / l[i * n + i];
            }
            col
        })
        .collect();
    Some((0..n * n).map(|ic| columns[ic % n][ic / n]).collect())
}

/// The LASSO codes (rows of p) of `images` (rows of d): each row stops at the first check where
/// its relative duality gap is at most `tolerance` (> 0), or after `iterations`, whichever
/// comes first; A packed both ways.
#[allow(clippy::too_many_arguments)]
pub fn encode(
    a: &PackedMatrix,
    factor: &Factor,
    d: usize,
    p: usize,
    images: &[f32],
    lam: f32,
    iterations: u32,
    tolerance: f32,
) -> (Vec<f32>, EncodeStats) {
    let never = || false;
    let problem = (a, factor, d, p);
    encode_or_stop(problem, images, lam, iterations, tolerance, &never).unwrap_or_default()
}

/// [`encode`] that gives up (None) once `stop` says so, asked before every iteration.
pub fn encode_or_stop(
    (a, factor, d, p): (&PackedMatrix, &Factor, usize, usize),
    images: &[f32],
    lam: f32,
    iterations: u32,
    tolerance: f32,
    stop: &dyn Fn() -> bool,
) -> Option<(Vec<f32>, EncodeStats)> {
    let total = images.len() / d;
    let (rho, alpha) = (factor.rho, RELAXATION);
    let mut out = vec![0f32; total * p];
    let mut stats = EncodeStats {
        rows: total,
        admm_rows: total,
        ..EncodeStats::default()
    };
    let mut batch = Batch::new(a, d, p, images);
    for iteration in 1..=iterations {
        if stop() {
            return None;
        }
        batch.step(factor, d, p, lam, alpha, rho);
        if iteration % CHECK_EVERY == 0 || iteration == iterations {
            let last = iteration == iterations;
            let check = Check {
                tolerance,
                last,
                iteration,
            };
            batch.finish_converged((a, factor), d, p, lam, check, &mut out, &mut stats);
            if batch.index.is_empty() {
                break;
            }
        }
    }
    // Rows left (only when `iterations` is 0): their code is v = 0.
    stats.capped += batch.index.len();
    Some((out, stats))
}

/// The quadratic step's B q (A z = L⁻ᵀ B q) and AᵀA z, row by row.
#[derive(Default)]
struct Quadratic {
    bq: Vec<f32>,
    at_az: Vec<f32>,
}

/// One gap check: the tolerance, whether it is the last iteration (every row stops), and the
/// iterations run.
struct Check {
    tolerance: f32,
    last: bool,
    iteration: u32,
}

/// The active rows' state; `index[k]` is active row k's row in `images`. `q`, `zeros` and
/// `quadratic` are the iterations' scratch, kept between them: allocated afresh, they page-faulted
/// in 32 MB an iteration at 1,024 rows.
struct Batch {
    index: Vec<usize>,
    x: Vec<f32>,
    atx: Vec<f32>,
    v: Vec<f32>,
    u: Vec<f32>,
    q: Vec<f32>,
    zeros: Vec<f32>,
    quadratic: Quadratic,
}

impl Batch {
    fn new(a: &PackedMatrix, d: usize, p: usize, images: &[f32]) -> Self {
        let rows = images.len() / d;
        let mut atx = vec![0f32; rows * p];
        a.transpose_product(images, &mut atx);
        Self {
            index: (0..rows).collect(),
            x: images.to_vec(),
            atx,
            v: vec![0f32; rows * p],
            u: vec![0f32; rows * p],
            q: Vec::new(),
            zeros: Vec::new(),
            quadratic: Quadratic::default(),
        }
    }

    /// One relaxed ADMM iteration on every active row, leaving the quadratic step's B q and
    /// AᵀA z in `quadratic`.
    #[allow(clippy::too_many_arguments)]
    fn step(&mut self, factor: &Factor, d: usize, p: usize, lam: f32, alpha: f32, rho: f32) {
        let rows = self.index.len();
        let Quadratic { bq, at_az } = &mut self.quadratic;
        for (values, width) in [(&mut self.q, p), (&mut self.zeros, d), (bq, d), (at_az, p)] {
            values.resize(rows * width, 0.0);
        }
        self.q
            .par_iter_mut()
            .zip(self.atx.par_iter().zip(self.v.par_iter().zip(&self.u)))
            .for_each(|(q, (&b, (&v, &u)))| *q = b + rho * (v - u));
        let (q, zeros) = (&self.q, &self.zeros);
        factor.whitened.residual_product(q, zeros, bq);
        factor.whitened.transpose_product(bq, at_az);
        let threshold = lam / rho;
        self.v
            .par_iter_mut()
            .zip(self.u.par_iter_mut())
            .zip(q.par_iter().zip(&*at_az))
            .for_each(|((v, u), (&q, &t))| {
                let z = (q - t) / rho;
                let relaxed = alpha * z + (1.0 - alpha) * *v;
                *v = soft_threshold(relaxed + *u, threshold);
                *u += relaxed - *v;
            });
        // AᵀA z = Aᵀ M A q = Bᵀ B q, as (ρI + AAᵀ) M = I; A z = M A q = L⁻ᵀ B q at checks.
    }

    /// Writes the rows whose gap is within the tolerance (every row at the last iteration) to
    /// `out` and drops them from the batch. P at v; D at θ = −s·(A z − x), scaled into
    /// ||Aᵀθ||∞ ≤ lam: any such θ bounds the optimum from below, and this one, from the
    /// quadratic step, is closer than v's own residual (50 against 66 iterations on MNIST).
    #[allow(clippy::too_many_arguments)]
    fn finish_converged(
        &mut self,
        (a, factor): (&PackedMatrix, &Factor),
        d: usize,
        p: usize,
        lam: f32,
        check: Check,
        out: &mut [f32],
        stats: &mut EncodeStats,
    ) {
        let Check {
            tolerance,
            last,
            iteration,
        } = check;
        let rows = self.index.len();
        let mut residual = vec![0f32; rows * d];
        a.residual_product(&self.v, &self.x, &mut residual);
        let objective = lasso_objective(&residual, &self.v, d, p, lam);
        let minus = |a: &[f32], b: &[f32]| -> Vec<f32> {
            a.par_iter().zip(b).map(|(a, b)| a - b).collect()
        };
        let mut az = vec![0f32; rows * d];
        let quadratic = &self.quadratic;
        factor
            .lower_inverse
            .transpose_product(&quadratic.bq, &mut az);
        let residual_z = minus(&az, &self.x);
        let grad_z = minus(&quadratic.at_az, &self.atx);
        let gaps = relative_gaps(&residual_z, &grad_z, &self.x, &objective, d, p, lam);
        let met: Vec<bool> = gaps.iter().map(|&g| g <= tolerance as f64).collect();
        let keep: Vec<bool> = met.iter().map(|&m| !m && !last).collect();
        for (k, _) in keep.iter().enumerate().filter(|(_, &keep)| !keep) {
            let row = self.index[k];
            out[row * p..(row + 1) * p].copy_from_slice(&self.v[k * p..(k + 1) * p]);
            stats.iterations += iteration as u64;
            stats.capped += usize::from(!met[k]);
        }
        if keep.iter().all(|&k| k) {
            return;
        }
        for (values, width) in [
            (&mut self.x, d),
            (&mut self.atx, p),
            (&mut self.v, p),
            (&mut self.u, p),
        ] {
            compact(values, &keep, width);
        }
        let mut k = 0;
        self.index.retain(|_| (keep[k], k += 1).0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cholesky_lower_inverse_whitens() {
        let n = 5;
        let mut k = vec![0f64; n * n];
        for i in 0..n {
            for j in 0..n {
                k[i * n + j] = 1.0 / (1.0 + i as f64 + j as f64) + if i == j { 0.5 } else { 0.0 };
            }
        }
        let li = cholesky_lower_inverse(k.clone(), n).expect("positive definite");
        for i in 0..n {
            for j in i + 1..n {
                assert_eq!(li[i * n + j], 0.0, "L⁻¹[{i}][{j}] above the diagonal");
            }
        }
        // L⁻¹ K L⁻ᵀ = I.
        for i in 0..n {
            for j in 0..n {
                let v: f64 = (0..n)
                    .flat_map(|a| (0..n).map(move |b| (a, b)))
                    .map(|(a, b)| li[i * n + a] * k[a * n + b] * li[j * n + b])
                    .sum();
                let want = if i == j { 1.0 } else { 0.0 };
                assert!(
                    (v - want).abs() < 1e-12,
                    "(L⁻¹ K L⁻ᵀ)[{i}][{j}] = {v}, want {want}"
                );
            }
        }
    }

    /// The whitened quadratic step solves (AᵀA + ρI) z = q, and L⁻ᵀ (B q) is A z, over- and
    /// undercomplete: every component off by more than 1e-4 of the scale is listed.
    #[test]
    fn whitened_step_solves_the_quadratic_system() {
        let mut bad = Vec::new();
        for (d, p, seed) in [(7usize, 19usize, 3u32), (12, 5, 4)] {
            let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
            let mut next = || {
                s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (s >> 8) as f32 / (1u32 << 23) as f32 - 1.0
            };
            let a: Vec<f32> = (0..d * p).map(|_| next()).collect();
            let q: Vec<f32> = (0..2 * p).map(|_| next()).collect();
            let f = Factor::new(&a, d, p).expect("positive definite");
            let rho = f.rho() as f64;
            let mut bq = vec![0f32; 2 * d];
            f.whitened.residual_product(&q, &vec![0f32; 2 * d], &mut bq);
            let mut btbq = vec![0f32; 2 * p];
            f.whitened.transpose_product(&bq, &mut btbq);
            let mut az = vec![0f32; 2 * d];
            f.lower_inverse.transpose_product(&bq, &mut az);
            for r in 0..2 {
                let z: Vec<f64> = (0..p)
                    .map(|k| (q[r * p + k] as f64 - btbq[r * p + k] as f64) / rho)
                    .collect();
                let a_z: Vec<f64> = (0..d)
                    .map(|i| (0..p).map(|k| a[i * p + k] as f64 * z[k]).sum())
                    .collect();
                let scale = q[r * p..(r + 1) * p]
                    .iter()
                    .map(|v| v.abs() as f64)
                    .sum::<f64>();
                for k in 0..p {
                    let lhs =
                        (0..d).map(|i| a[i * p + k] as f64 * a_z[i]).sum::<f64>() + rho * z[k];
                    let want = q[r * p + k] as f64;
                    if (lhs - want).abs() > 1e-4 * scale {
                        bad.push(format!(
                            "d {d} p {p} row {r} [{k}]: (AᵀA + ρI) z = {lhs}, q = {want}"
                        ));
                    }
                }
                for i in 0..d {
                    let got = az[r * d + i] as f64;
                    if (got - a_z[i]).abs() > 1e-4 * scale {
                        bad.push(format!(
                            "d {d} p {p} row {r} [{i}]: L⁻ᵀ B q = {got}, A z = {}",
                            a_z[i]
                        ));
                    }
                }
            }
        }
        assert!(bad.is_empty(), "{} off:\n{}", bad.len(), bad.join("\n"));
    }

    #[test]
    fn largest_eigenvalue_of_a_known_spectrum() {
        // Eigenvalues 1 and 5 (eigenvectors (1, ±1)/√2); the all-ones start is the top one.
        let k = [3.0, 2.0, 2.0, 3.0];
        assert!((largest_eigenvalue(&k, 2) - 5.0).abs() < 1e-12);
        // diag(9, 4, 1): converges like (4/9)^100.
        let k = [9.0, 0.0, 0.0, 0.0, 4.0, 0.0, 0.0, 0.0, 1.0];
        assert!((largest_eigenvalue(&k, 3) - 9.0).abs() < 1e-9);
    }

    #[test]
    fn cholesky_refuses_an_indefinite_matrix() {
        assert!(cholesky_lower_inverse(vec![1.0, 2.0, 2.0, 1.0], 2).is_none());
        assert!(cholesky_lower_inverse(vec![f64::NAN], 1).is_none());
    }
}
