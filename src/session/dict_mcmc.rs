//! MH-within-Gibbs for one signal's parametric dictionary (Chaspari et al. 2016, Algorithm 1), OMP and K-means.
//!
//! Atom sampling with replacement (the paper's Section II-A): indices z_l ~ Multinomial by Gibbs
//! (without replacement, Section II-B: MH moves under Wallenius' prior, `without_replacement`),
//! coefficients s_l Normal by Gibbs, each selected learnable atom's θ_k by an independent MH step
//! whose Student-t proposal is centred on the conditional mode found by Nelder–Mead (argmin),
//! unselected atoms' θ_k, their means g_k and the precision G by Gibbs (Normal, Normal, Wishart),
//! the selection probabilities π by Dirichlet and the noise precision γε by Gamma. Every draw of
//! iteration m of signal n comes from the Philox stream (seed, chain n, outer m) through
//! [`PhiloxRng`] and `rand_distr`, so results do not depend on threads and resume bit for bit.

use argmin::core::{CostFunction, Executor, State};
use argmin::solver::neldermead::NelderMead;
use rand::Rng;
use rand_distr::{ChiSquared, Distribution, Gamma, StandardNormal};
use serde::{Deserialize, Serialize};

use crate::diagnostics::geweke_z;
use crate::model::AtomFamily;
use crate::rng::{PhiloxRng, Purpose, Stream};

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

/// What one signal's chain leaves behind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SignalResult {
    /// OMP's relative RMS error on the initial dictionary (L iterations).
    pub initial_error: f64,
    /// The lowest OMP relative RMS error over the iterations' dictionaries (Algorithm 2).
    pub best_error: f64,
    /// The parameters of the learnable atoms OMP selected from the best iteration's dictionary.
    pub best_params: Vec<Vec<f64>>,
    /// MH proposals accepted and made.
    pub accepted: u64,
    /// MH proposals made.
    pub proposed: u64,
    /// Per variable group ([`GROUPS`] then the family's θ, g names, then G): Geweke |z| < 2
    /// count and the number of variables tested.
    pub geweke: Vec<[u32; 2]>,
}

/// The variable groups whose Geweke pass rate is reported, before the per-parameter θ and g
/// groups and the G group.
pub const GROUPS: [&str; 4] = ["c", "z", "gamma_eps", "pi"];

/// The names of every Geweke group for a family: c, z, gamma_eps, pi, theta.<p>…, g.<p>…, G.
pub fn group_names(family: &AtomFamily) -> Vec<String> {
    let mut names: Vec<String> = GROUPS.iter().map(|s| s.to_string()).collect();
    names.extend(family.names().iter().map(|p| format!("theta.{p}")));
    names.extend(family.names().iter().map(|p| format!("g.{p}")));
    names.push("G".into());
    names
}

/// A dictionary of unit-norm atoms stored atom by atom (column-major d × p).
#[derive(Clone, Debug)]
pub(crate) struct Atoms {
    pub d: usize,
    pub cols: Vec<f64>,
}

impl Atoms {
    pub fn len(&self) -> usize {
        self.cols.len() / self.d.max(1)
    }
    pub fn col(&self, k: usize) -> &[f64] {
        &self.cols[k * self.d..(k + 1) * self.d]
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Orthogonal matching pursuit of x on `atoms` for up to `iterations` steps. Returns the selected
/// atoms, their least-squares coefficients and the relative RMS error ‖x − x̂‖/‖x‖ after each step.
pub(crate) fn omp(atoms: &Atoms, x: &[f64], iterations: usize) -> (Vec<usize>, Vec<f64>, Vec<f64>) {
    let norm_x = dot(x, x).sqrt();
    let mut selected: Vec<usize> = Vec::new();
    let mut coef: Vec<f64> = Vec::new();
    let mut errors = Vec::new();
    let mut r = x.to_vec();
    for _ in 0..iterations.min(atoms.len()) {
        let best = (0..atoms.len())
            .filter(|k| !selected.contains(k))
            .map(|k| (k, dot(atoms.col(k), &r).abs()))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let Some((k, c)) = best else { break };
        if c.is_nan() || c <= 1e-14 * norm_x.max(1e-300) {
            break;
        }
        selected.push(k);
        let l = selected.len();
        let mut gram = vec![0.0; l * l];
        let mut rhs = vec![0.0; l];
        for i in 0..l {
            rhs[i] = dot(atoms.col(selected[i]), x);
            for j in 0..l {
                gram[i * l + j] = dot(atoms.col(selected[i]), atoms.col(selected[j]));
            }
            gram[i * l + i] += 1e-12;
        }
        match solve_spd(&gram, &rhs, l) {
            Some(c) => coef = c,
            None => {
                selected.pop();
                break;
            }
        }
        r.copy_from_slice(x);
        for (&k, &c) in selected.iter().zip(&coef) {
            for (ri, a) in r.iter_mut().zip(atoms.col(k)) {
                *ri -= c * a;
            }
        }
        errors.push(if norm_x > 0.0 {
            dot(&r, &r).sqrt() / norm_x
        } else {
            0.0
        });
    }
    (selected, coef, errors)
}

/// The lower Cholesky factor of a q × q symmetric positive definite matrix.
pub(crate) fn cholesky(a: &[f64], q: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; q * q];
    for i in 0..q {
        for j in 0..=i {
            let mut s = a[i * q + j];
            for k in 0..j {
                s -= l[i * q + k] * l[j * q + k];
            }
            if i == j {
                if !(s > 0.0 && s.is_finite()) {
                    return None;
                }
                l[i * q + i] = s.sqrt();
            } else {
                l[i * q + j] = s / l[j * q + j];
            }
        }
    }
    Some(l)
}

fn solve_spd(a: &[f64], b: &[f64], q: usize) -> Option<Vec<f64>> {
    let l = cholesky(a, q)?;
    let mut y = b.to_vec();
    for i in 0..q {
        for k in 0..i {
            y[i] -= l[i * q + k] * y[k];
        }
        y[i] /= l[i * q + i];
    }
    for i in (0..q).rev() {
        for k in i + 1..q {
            y[i] -= l[k * q + i] * y[k];
        }
        y[i] /= l[i * q + i];
    }
    Some(y)
}

pub(crate) fn inverse_spd(a: &[f64], q: usize) -> Option<Vec<f64>> {
    let mut inv = vec![0.0; q * q];
    for j in 0..q {
        let mut e = vec![0.0; q];
        e[j] = 1.0;
        let col = solve_spd(a, &e, q)?;
        for i in 0..q {
            inv[i * q + j] = col[i];
        }
    }
    Some(inv)
}

fn identity(q: usize) -> Vec<f64> {
    let mut m = vec![0.0; q * q];
    (0..q).for_each(|i| m[i * q + i] = 1.0);
    m
}

/// A draw from N(mean, P⁻¹) given the precision P (q × q): mean + L⁻ᵀ z with P = L Lᵀ.
pub(crate) fn normal_with_precision(
    rng: &mut PhiloxRng,
    mean: &[f64],
    precision: &[f64],
    q: usize,
) -> Option<Vec<f64>> {
    let l = cholesky(precision, q)?;
    let mut y: Vec<f64> = (0..q).map(|_| rng.sample(StandardNormal)).collect();
    for i in (0..q).rev() {
        for k in i + 1..q {
            y[i] -= l[k * q + i] * y[k];
        }
        y[i] /= l[i * q + i];
    }
    Some(mean.iter().zip(&y).map(|(m, v)| m + v).collect())
}

/// A Wishart(ν, S) draw by Bartlett's decomposition: L A Aᵀ Lᵀ with S = L Lᵀ, A lower triangular,
/// A_ii = sqrt(χ²(ν − i)), A_ij ~ N(0, 1) below the diagonal. Needs ν > q − 1.
pub(crate) fn wishart(rng: &mut PhiloxRng, dof: f64, scale: &[f64], q: usize) -> Option<Vec<f64>> {
    let l = cholesky(scale, q)?;
    let mut a = vec![0.0; q * q];
    for i in 0..q {
        let chi = ChiSquared::new(dof - i as f64).ok()?;
        a[i * q + i] = chi.sample(rng).sqrt();
        for j in 0..i {
            a[i * q + j] = rng.sample(StandardNormal);
        }
    }
    // B = L A (lower triangular), W = B Bᵀ.
    let mut b = vec![0.0; q * q];
    for i in 0..q {
        for j in 0..=i {
            b[i * q + j] = (j..=i).map(|k| l[i * q + k] * a[k * q + j]).sum();
        }
    }
    let mut w = vec![0.0; q * q];
    for i in 0..q {
        for j in 0..q {
            w[i * q + j] = (0..q).map(|k| b[i * q + k] * b[j * q + k]).sum();
        }
    }
    Some(w)
}

/// A Gamma(shape, rate) draw.
pub(crate) fn gamma_rate(rng: &mut PhiloxRng, shape: f64, rate: f64) -> f64 {
    Gamma::new(shape, 1.0 / rate)
        .map(|g| g.sample(rng))
        .unwrap_or(shape / rate)
}

/// The conditional energy of one learnable atom's θ: γε/2·‖e − S φ(θ)‖² + ½(θ − g)ᵀG(θ − g),
/// less the constant γε/2·‖e‖²; out of range or a zero atom gives a large penalty.
struct AtomEnergy<'a> {
    family: &'a AtomFamily,
    e: &'a [f64],
    weight: f64,
    gamma: f64,
    g: &'a [f64],
    big_g: &'a [f64],
    scratch: std::cell::RefCell<Vec<f64>>,
}

const OUTSIDE: f64 = 1e30;

impl AtomEnergy<'_> {
    fn energy(&self, theta: &[f64]) -> f64 {
        if !self.family.in_range(theta) {
            return OUTSIDE;
        }
        let mut a = self.scratch.borrow_mut();
        self.family.raw_atom(theta, &mut a);
        let n2 = dot(&a, &a);
        if !(n2 > 1e-24 && n2.is_finite()) {
            return OUTSIDE;
        }
        let ea = dot(self.e, &a) / n2.sqrt();
        let s = self.weight;
        let q = theta.len();
        let mut prior = 0.0;
        for i in 0..q {
            for j in 0..q {
                prior += (theta[i] - self.g[i]) * self.big_g[i * q + j] * (theta[j] - self.g[j]);
            }
        }
        0.5 * self.gamma * (s * s - 2.0 * s * ea) + 0.5 * prior
    }
}

/// The energy as argmin's cost function (borrowed, so the caller keeps it for the MH ratio).
struct Cost<'a, 'b>(&'a AtomEnergy<'b>);

impl CostFunction for Cost<'_, '_> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, theta: &Self::Param) -> Result<f64, argmin::core::Error> {
        Ok(self.0.energy(theta))
    }
}

/// The mode of an atom's conditional by Nelder–Mead from `start` (simplex steps of two units).
fn find_mode(energy: &AtomEnergy<'_>, start: &[f64], iterations: u64) -> Vec<f64> {
    let units = energy.family.units();
    let ranges = energy.family.ranges();
    let mut simplex = vec![start.to_vec()];
    for j in 0..start.len() {
        let mut v = start.to_vec();
        let step = 2.0 * units[j];
        v[j] = if v[j] + step <= ranges[j].1 {
            v[j] + step
        } else {
            v[j] - step
        };
        simplex.push(v);
    }
    let solver = match NelderMead::new(simplex).with_sd_tolerance(1e-10) {
        Ok(s) => s,
        Err(_) => return start.to_vec(),
    };
    let run = Executor::new(Cost(energy), solver)
        .configure(|state| state.max_iters(iterations))
        .timer(false)
        .run();
    match run {
        Ok(result) => result
            .state
            .get_best_param()
            .cloned()
            .unwrap_or_else(|| start.to_vec()),
        Err(_) => start.to_vec(),
    }
}

/// log q(θ) of the Student-t proposal (up to a constant), scales τ·units.
fn log_t(theta: &[f64], mode: &[f64], scales: &[f64], dof: f64) -> f64 {
    let m: f64 = theta
        .iter()
        .zip(mode)
        .zip(scales)
        .map(|((t, m), s)| ((t - m) / s).powi(2))
        .sum();
    -0.5 * (dof + theta.len() as f64) * (m / dof).ln_1p()
}

/// One independence Metropolis–Hastings step with a Student-t proposal (dof ν, per-coordinate
/// scales) centred on `mode`, for the target exp(−energy): returns the candidate and whether the
/// MH test accepts it (u < π(θ')q(θ)/(π(θ)q(θ'))). Draws χ²(ν), then one normal per coordinate,
/// then the uniform.
pub(crate) fn student_t_mh(
    rng: &mut PhiloxRng,
    current: &[f64],
    mode: &[f64],
    scales: &[f64],
    dof: f64,
    energy: impl Fn(&[f64]) -> f64,
) -> (Vec<f64>, bool) {
    let w = ChiSquared::new(dof).map(|c| c.sample(rng)).unwrap_or(dof);
    let stretch = (dof / w).sqrt();
    let candidate: Vec<f64> = mode
        .iter()
        .zip(scales)
        .map(|(m, s)| {
            let n: f64 = rng.sample(StandardNormal);
            m + s * n * stretch
        })
        .collect();
    let log_alpha = energy(current) - energy(&candidate) + log_t(current, mode, scales, dof)
        - log_t(&candidate, mode, scales, dof);
    let u: f64 = rng.random();
    let passes = u.ln() < log_alpha;
    (candidate, passes)
}

fn clamp_into(family: &AtomFamily, theta: &[f64]) -> Vec<f64> {
    theta
        .iter()
        .zip(family.ranges())
        .map(|(&v, (lo, hi))| v.clamp(lo, hi))
        .collect()
}

/// The starting dictionary of every signal: the family's fixed atoms, then its initial grid.
pub(crate) struct Initial {
    pub atoms: Atoms,
    /// The grid's parameters; atom k ≥ `fixed` is learnable with params[k − fixed].
    pub params: Vec<Vec<f64>>,
    pub fixed: usize,
}

impl Initial {
    pub fn new(family: &AtomFamily) -> Self {
        let fixed_atoms = family.fixed_atoms();
        let params = family.initial_grid();
        let d = family.dim();
        let mut cols = Vec::with_capacity((fixed_atoms.len() + params.len()) * d);
        fixed_atoms.iter().for_each(|a| cols.extend_from_slice(a));
        let mut kept = Vec::new();
        let mut a = vec![0.0; d];
        for t in params {
            if family.atom(&t, &mut a) {
                cols.extend_from_slice(&a);
                kept.push(t);
            }
        }
        Initial {
            atoms: Atoms { d, cols },
            params: kept,
            fixed: fixed_atoms.len(),
        }
    }
}

/// Runs the chain of one signal for `iterations` iterations (the first `burn_in` not used by
/// Geweke) with `l` atoms, and returns what Algorithm 2 and the diagnostics need.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_signal(
    family: &AtomFamily,
    initial: &Initial,
    prior: &ParamPrior,
    hyper: &DictionaryHyper,
    x: &[f64],
    l: usize,
    iterations: u32,
    burn_in: u32,
    seed: u64,
    signal: u32,
) -> SignalResult {
    let d = x.len();
    let q = family.q();
    // Initialisation by OMP on the initial dictionary: the signal's K = L atoms and coefficients.
    let (sel, coef, errs) = omp(&initial.atoms, x, l);
    let initial_error = errs.last().copied().unwrap_or(1.0);
    let k_atoms = sel.len().max(1);
    let mut atoms = Atoms {
        d,
        cols: Vec::with_capacity(k_atoms * d),
    };
    let mut theta: Vec<Option<Vec<f64>>> = Vec::new();
    for &k in &sel {
        atoms.cols.extend_from_slice(initial.atoms.col(k));
        theta.push((k >= initial.fixed).then(|| initial.params[k - initial.fixed].clone()));
    }
    if sel.is_empty() {
        atoms.cols.extend_from_slice(initial.atoms.col(0));
        theta.push((initial.fixed == 0).then(|| initial.params[0].clone()));
    }
    let learnable: Vec<usize> = (0..k_atoms).filter(|&k| theta[k].is_some()).collect();
    let slots = sel.len().max(1);
    let mut z: Vec<usize> = (0..slots).collect();
    let mu_s: Vec<f64> = if coef.is_empty() {
        vec![0.0]
    } else {
        coef.clone()
    };
    let mut s = mu_s.clone();
    let mut pi: Vec<f64> =
        vec![(hyper.alpha + 1.0) / (k_atoms as f64 * (hyper.alpha + 1.0)); k_atoms];
    let mut gamma = hyper.noise_start;
    let mut g: Vec<Vec<f64>> = theta
        .iter()
        .map(|t| t.clone().unwrap_or_default())
        .collect();
    let mut big_g = prior.big_g0.clone();
    let r0_inv: Vec<f64> = inverse_spd(&prior.big_g0, q)
        .unwrap_or_else(|| identity(q))
        .iter()
        .map(|v| v * hyper.wishart_dof_for(q))
        .collect();
    let scales: Vec<f64> = family
        .units()
        .iter()
        .map(|u| u * hyper.proposal_scale_for(family))
        .collect();

    let mut r = x.to_vec();
    let recompute = |r: &mut Vec<f64>, atoms: &Atoms, z: &[usize], s: &[f64]| {
        r.copy_from_slice(x);
        for (&k, &c) in z.iter().zip(s) {
            for (ri, a) in r.iter_mut().zip(atoms.col(k)) {
                *ri -= c * a;
            }
        }
    };
    recompute(&mut r, &atoms, &z, &s);

    let kept = iterations.saturating_sub(burn_in) as usize;
    let groups = group_names(family).len();
    // Traces after burn-in: one Vec per variable, tagged by its group.
    let mut traces: Vec<(usize, Vec<f64>)> = Vec::new();
    let mut push_trace = |idx: &mut usize, group: usize, value: f64, record: bool| {
        if record {
            if *idx == traces.len() {
                traces.push((group, Vec::with_capacity(kept)));
            }
            traces[*idx].1.push(value);
        }
        *idx += 1;
    };

    let mut best_error = f64::INFINITY;
    let mut best_params = Vec::new();
    let (mut accepted, mut proposed) = (0u64, 0u64);
    let mut scratch = vec![0.0; d];
    let mut e = vec![0.0; d];
    for m in 0..iterations {
        let mut rng = PhiloxRng::new(Stream::new(seed, signal, m, 0, Purpose::DictionaryLearning));
        // 1. Indices z_l by Gibbs: p(z_l = k) ∝ π_k exp(−γε/2 · s_l(s_l − 2 e_lᵀφ_k)); without
        // replacement by MH (`index_mh_without_replacement`).
        if hyper.without_replacement {
            index_mh_without_replacement(&mut rng, &atoms, &pi, gamma, &s, &mut z, &mut r);
        } else {
            for li in 0..slots {
                for (ri, a) in r.iter_mut().zip(atoms.col(z[li])) {
                    *ri += s[li] * a;
                }
                let (pick, _) = draw_slot_index(
                    &mut rng,
                    &atoms,
                    &pi,
                    gamma,
                    s[li],
                    &r,
                    |_| false,
                    k_atoms - 1,
                );
                z[li] = pick;
                for (ri, a) in r.iter_mut().zip(atoms.col(pick)) {
                    *ri -= s[li] * a;
                }
            }
        }
        // 2. Coefficients s_l by Gibbs: N((γs μ_l + γε φᵀe_l)/(γs + γε), 1/(γs + γε)).
        for li in 0..slots {
            let a = atoms.col(z[li]);
            for (ri, av) in r.iter_mut().zip(a) {
                *ri += s[li] * av;
            }
            let precision = hyper.coefficient_precision + gamma;
            let mean = (hyper.coefficient_precision * mu_s[li] + gamma * dot(a, &r)) / precision;
            let n: f64 = rng.sample(StandardNormal);
            s[li] = mean + n / precision.sqrt();
            for (ri, av) in r.iter_mut().zip(a) {
                *ri -= s[li] * av;
            }
        }
        // 3. Selected learnable atoms' θ_k by independent MH, proposal Student-t at the mode.
        for &k in &learnable {
            let weight: f64 = z
                .iter()
                .zip(&s)
                .filter(|(&zk, _)| zk == k)
                .map(|(_, c)| c)
                .sum();
            if !z.contains(&k) {
                continue;
            }
            e.copy_from_slice(&r);
            for (ei, a) in e.iter_mut().zip(atoms.col(k)) {
                *ei += weight * a;
            }
            let energy = AtomEnergy {
                family,
                e: &e,
                weight,
                gamma,
                g: &g[k],
                big_g: &big_g,
                scratch: std::cell::RefCell::new(vec![0.0; d]),
            };
            let mode = find_mode(&energy, &clamp_into(family, &g[k]), hyper.mode_iterations);
            let current = theta[k].as_ref().expect("learnable").clone();
            let (candidate, passes) = student_t_mh(
                &mut rng,
                &current,
                &mode,
                &scales,
                hyper.proposal_dof,
                |t| energy.energy(t),
            );
            proposed += 1;
            if passes && family.in_range(&candidate) && family.atom(&candidate, &mut scratch) {
                accepted += 1;
                atoms.cols[k * d..(k + 1) * d].copy_from_slice(&scratch);
                theta[k] = Some(candidate);
                r.copy_from_slice(&e);
                for (ri, a) in r.iter_mut().zip(&scratch) {
                    *ri -= weight * a;
                }
            }
        }
        // 4. Unselected learnable atoms from their prior N(g_k, G⁻¹), truncated to the ranges.
        for &k in &learnable {
            if z.contains(&k) {
                continue;
            }
            for _ in 0..32 {
                if let Some(t) = normal_with_precision(&mut rng, &g[k], &big_g, q) {
                    if family.atom(&t, &mut scratch) {
                        atoms.cols[k * d..(k + 1) * d].copy_from_slice(&scratch);
                        theta[k] = Some(t);
                        break;
                    }
                }
            }
        }
        // 5. Means g_k ~ N((G + G0)⁻¹(G θ_k + G0 g0), (G + G0)⁻¹).
        let post: Vec<f64> = big_g
            .iter()
            .zip(&prior.big_g0)
            .map(|(a, b)| a + b)
            .collect();
        if let Some(cov) = inverse_spd(&post, q) {
            for &k in &learnable {
                let t = theta[k].as_ref().expect("learnable");
                let rhs: Vec<f64> = (0..q)
                    .map(|i| {
                        (0..q)
                            .map(|j| {
                                big_g[i * q + j] * t[j] + prior.big_g0[i * q + j] * prior.g0[j]
                            })
                            .sum()
                    })
                    .collect();
                let mean: Vec<f64> = (0..q)
                    .map(|i| (0..q).map(|j| cov[i * q + j] * rhs[j]).sum())
                    .collect();
                if let Some(draw) = normal_with_precision(&mut rng, &mean, &post, q) {
                    g[k] = draw;
                }
            }
        }
        // 6. G ~ Wishart(ν0 + K, [R0⁻¹ + Σ (θ_k − g_k)(θ_k − g_k)ᵀ]⁻¹).
        if !learnable.is_empty() {
            let mut scatter = r0_inv.clone();
            for &k in &learnable {
                let t = theta[k].as_ref().expect("learnable");
                for i in 0..q {
                    for j in 0..q {
                        scatter[i * q + j] += (t[i] - g[k][i]) * (t[j] - g[k][j]);
                    }
                }
            }
            if let Some(scale) = inverse_spd(&scatter, q) {
                if let Some(w) = wishart(
                    &mut rng,
                    hyper.wishart_dof_for(q) + learnable.len() as f64,
                    &scale,
                    q,
                ) {
                    big_g = w;
                }
            }
        }
        // 7. π ~ Dirichlet(α + counts), by normalised Gammas.
        let draws: Vec<f64> = (0..k_atoms)
            .map(|k| {
                let count = z.iter().filter(|&&zk| zk == k).count() as f64;
                gamma_rate(&mut rng, hyper.alpha + count, 1.0)
            })
            .collect();
        let total: f64 = draws.iter().sum();
        if total > 0.0 && total.is_finite() {
            pi = draws.iter().map(|v| v / total).collect();
        }
        // 8. γε ~ Gamma(e + d/2, f + ‖r‖²/2).
        recompute(&mut r, &atoms, &z, &s);
        gamma = gamma_rate(
            &mut rng,
            hyper.noise_shape + d as f64 / 2.0,
            hyper.noise_rate + dot(&r, &r) / 2.0,
        );

        // Algorithm 2: this iteration's dictionary, judged by OMP with L iterations.
        let (omp_sel, _, omp_errs) = omp(&atoms, x, slots);
        let err = omp_errs.last().copied().unwrap_or(1.0);
        if err < best_error {
            best_error = err;
            best_params = omp_sel.iter().filter_map(|&k| theta[k].clone()).collect();
        }

        let record = m >= burn_in;
        let mut idx = 0;
        for &sl in &s {
            push_trace(&mut idx, 0, sl, record);
        }
        for &zl in &z {
            push_trace(&mut idx, 1, zl as f64, record);
        }
        push_trace(&mut idx, 2, gamma, record);
        for &p in &pi {
            push_trace(&mut idx, 3, p, record);
        }
        for &k in &learnable {
            let t = theta[k].as_ref().expect("learnable");
            for (j, &v) in t.iter().enumerate() {
                push_trace(&mut idx, 4 + j, v, record);
            }
        }
        for &k in &learnable {
            for (j, &v) in g[k].iter().enumerate() {
                push_trace(&mut idx, 4 + q + j, v, record);
            }
        }
        for i in 0..q {
            push_trace(&mut idx, 4 + 2 * q, big_g[i * q + i], record);
        }
    }

    let mut geweke = vec![[0u32; 2]; groups];
    for (group, trace) in &traces {
        let pass = match geweke_z(trace) {
            Some(z) => z.abs() < 2.0,
            // No variance in a part: converged when the whole trace is constant.
            None => trace.iter().all(|v| *v == trace[0]),
        };
        geweke[*group][0] += pass as u32;
        geweke[*group][1] += 1;
    }
    SignalResult {
        initial_error,
        best_error: if best_error.is_finite() {
            best_error
        } else {
            initial_error
        },
        best_params,
        accepted,
        proposed,
        geweke,
    }
}

/// One categorical draw of a slot's atom from its Gibbs weights π_k·exp(−γε/2 · s_l(s_l −
/// 2 e_lᵀφ_k)), e_l the residual with the slot's own atom added back, the atoms `excluded` says
/// no (weight 0); `fallback` when rounding leaves no pick. Returns the pick and the weights' sum
/// (relative to the largest, so at least 1 unless every atom is excluded).
#[allow(clippy::too_many_arguments)]
fn draw_slot_index(
    rng: &mut PhiloxRng,
    atoms: &Atoms,
    pi: &[f64],
    gamma: f64,
    s_l: f64,
    e: &[f64],
    excluded: impl Fn(usize) -> bool,
    fallback: usize,
) -> (usize, f64) {
    let logits: Vec<f64> = (0..pi.len())
        .map(|k| {
            if excluded(k) {
                f64::NEG_INFINITY
            } else {
                pi[k].max(1e-300).ln() - 0.5 * gamma * s_l * (s_l - 2.0 * dot(e, atoms.col(k)))
            }
        })
        .collect();
    let top = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = logits.iter().map(|v| (v - top).exp()).collect();
    let total: f64 = weights.iter().sum();
    let mut u = rng.random::<f64>() * total;
    for (k, w) in weights.iter().enumerate() {
        if *w > 0.0 && u < *w {
            return (k, total);
        }
        u -= w;
    }
    (fallback, total)
}

/// Step 1 without replacement: z is an ordered draw of L distinct atoms from Wallenius' urn
/// with weights π, W(z) = Π_r π_{z_r} / (1 − Σ_{s<r} π_{z_s}) (the sequential draw whose unordered
/// set is Wallenius-distributed). Per slot, an MH step whose proposal is the with-replacement
/// Gibbs weights π_k·L_k restricted to the atoms the other slots do not hold (the proposal
/// "tailored to the Wallenius prior" of the paper's Section III-C): π_k·L_k cancels against the
/// target, and the acceptance ratio is D(z')/D(z), D(z) = Π_r 1/(1 − Σ_{s<r} π_{z_s}). Then one
/// symmetric swap of two slots' atoms (with K = L atoms, the only move that changes z), accepted
/// by the full ratio. Every proposal draws the same number of uniforms, accepted or not.
fn index_mh_without_replacement(
    rng: &mut PhiloxRng,
    atoms: &Atoms,
    pi: &[f64],
    gamma: f64,
    s: &[f64],
    z: &mut [usize],
    r: &mut [f64],
) {
    let slots = z.len();
    let log_d = |z: &[usize]| -> f64 {
        let mut used = 0.0f64;
        let mut acc = 0.0;
        for &k in z {
            acc -= (1.0 - used).max(1e-300).ln();
            used += pi[k];
        }
        acc
    };
    let add = |r: &mut [f64], k: usize, c: f64| {
        for (ri, a) in r.iter_mut().zip(atoms.col(k)) {
            *ri += c * a;
        }
    };
    for li in 0..slots {
        add(r, z[li], s[li]);
        let held = |k: usize| z.iter().enumerate().any(|(j, &zk)| j != li && zk == k);
        let (pick, total) = draw_slot_index(rng, atoms, pi, gamma, s[li], r, held, z[li]);
        let mut proposed = z.to_vec();
        proposed[li] = pick;
        let log_ratio = log_d(&proposed) - log_d(z);
        let accept: f64 = rng.random();
        if total.is_finite() && total > 0.0 && accept.ln() < log_ratio {
            z[li] = pick;
        }
        add(r, z[li], -s[li]);
    }
    if slots >= 2 {
        let a = (rng.random::<f64>() * slots as f64) as usize % slots;
        let b = (a + 1 + (rng.random::<f64>() * (slots - 1) as f64) as usize % (slots - 1)) % slots;
        // Residual change of exchanging the two slots' atoms: e' = r + (s_a − s_b)(φ_{z_a} − φ_{z_b}).
        let (ka, kb) = (z[a], z[b]);
        let mut swapped = z.to_vec();
        swapped.swap(a, b);
        let delta = s[a] - s[b];
        let new_r: Vec<f64> = r
            .iter()
            .zip(atoms.col(ka).iter().zip(atoms.col(kb)))
            .map(|(ri, (pa, pb))| ri + delta * (pa - pb))
            .collect();
        let log_prior = |z: &[usize]| -> f64 {
            z.iter().map(|&k| pi[k].max(1e-300).ln()).sum::<f64>() + log_d(z)
        };
        let log_ratio =
            log_prior(&swapped) - log_prior(z) - 0.5 * gamma * (dot(&new_r, &new_r) - dot(r, r));
        let accept: f64 = rng.random();
        if accept.ln() < log_ratio {
            z.swap(a, b);
            r.copy_from_slice(&new_r);
        }
    }
}

/// K-means (k-means++ start from the Philox stream, then Lloyd) of `points` (each of the
/// dimensions `dims`, distances scaled by `units`), `k` centres; fewer points than k gives them all.
pub(crate) fn kmeans(
    points: &[Vec<f64>],
    dims: &[usize],
    units: &[f64],
    k: usize,
    seed: u64,
    stream: u32,
) -> Vec<Vec<f64>> {
    let pts: Vec<Vec<f64>> = points
        .iter()
        .map(|p| dims.iter().map(|&j| p[j] / units[j]).collect())
        .collect();
    if pts.len() <= k {
        return pts
            .iter()
            .map(|p| p.iter().zip(dims).map(|(v, &j)| v * units[j]).collect())
            .collect();
    }
    let dist =
        |a: &[f64], b: &[f64]| -> f64 { a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum() };
    let mut rng = PhiloxRng::new(Stream::new(
        seed,
        crate::rng::SHARED_CHAIN,
        stream,
        1,
        Purpose::DictionaryLearning,
    ));
    let mut centres = vec![pts[rng.random_range(0..pts.len())].clone()];
    let mut nearest: Vec<f64> = pts.iter().map(|p| dist(p, &centres[0])).collect();
    while centres.len() < k {
        let total: f64 = nearest.iter().sum();
        let mut u = rng.random::<f64>() * total;
        let mut pick = pts.len() - 1;
        for (i, w) in nearest.iter().enumerate() {
            if u < *w {
                pick = i;
                break;
            }
            u -= w;
        }
        centres.push(pts[pick].clone());
        for (n, p) in nearest.iter_mut().zip(&pts) {
            *n = n.min(dist(p, &pts[pick]));
        }
    }
    let dim = dims.len();
    let mut assign = vec![usize::MAX; pts.len()];
    for _ in 0..100 {
        let mut changed = false;
        for (a, p) in assign.iter_mut().zip(&pts) {
            let best = (0..k)
                .min_by(|&i, &j| dist(p, &centres[i]).total_cmp(&dist(p, &centres[j])))
                .unwrap_or(0);
            if *a != best {
                *a = best;
                changed = true;
            }
        }
        let mut sums = vec![vec![0.0; dim]; k];
        let mut counts = vec![0usize; k];
        for (&a, p) in assign.iter().zip(&pts) {
            counts[a] += 1;
            sums[a].iter_mut().zip(p).for_each(|(s, v)| *s += v);
        }
        for c in 0..k {
            if counts[c] > 0 {
                centres[c] = sums[c].iter().map(|s| s / counts[c] as f64).collect();
            }
        }
        if !changed {
            break;
        }
    }
    centres
        .iter()
        .map(|c| c.iter().zip(dims).map(|(v, &j)| v * units[j]).collect())
        .collect()
}

/// The largest |⟨d_i, d_j⟩| over distinct atoms (the dictionary's coherence).
pub(crate) fn coherence(atoms: &Atoms) -> f64 {
    let p = atoms.len();
    let mut worst: f64 = 0.0;
    for i in 0..p {
        for j in i + 1..p {
            worst = worst.max(dot(atoms.col(i), atoms.col(j)).abs());
        }
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng(i: u32) -> PhiloxRng {
        PhiloxRng::new(Stream::new(11, i, 0, 0, Purpose::DictionaryLearning))
    }

    /// Without replacement on three distinct atoms and three slots the chain's z visits the six
    /// orderings; their frequencies match p(z) ∝ W(z)·exp(−γ/2‖x − Σ s_l φ_{z_l}‖²) computed
    /// exactly (within 4 standard errors each), and the slots never share an atom.
    #[test]
    fn without_replacement_moves_sample_the_wallenius_posterior() {
        let d = 4;
        let atoms = Atoms {
            d,
            cols: vec![
                1.0, 0.0, 0.0, 0.0, //
                0.0, 1.0, 0.0, 0.0, //
                0.6, 0.0, 0.8, 0.0,
            ],
        };
        let pi = [0.5, 0.3, 0.2];
        let (gamma, s) = (2.0, [1.0, -0.5, 0.3]);
        let x = [0.7, -0.2, 0.4, 0.1];
        let residual = |z: &[usize]| -> Vec<f64> {
            let mut r = x.to_vec();
            for (&k, &c) in z.iter().zip(&s) {
                for (ri, a) in r.iter_mut().zip(atoms.col(k)) {
                    *ri -= c * a;
                }
            }
            r
        };
        let orders: Vec<[usize; 3]> = vec![
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ];
        let weight = |z: &[usize]| -> f64 {
            let mut used = 0.0;
            let mut w = 1.0;
            for &k in z {
                w *= pi[k] / (1.0 - used);
                used += pi[k];
            }
            let r = residual(z);
            w * (-0.5 * gamma * dot(&r, &r)).exp()
        };
        let total: f64 = orders.iter().map(|z| weight(z)).sum();
        let mut z = vec![0, 1, 2];
        let mut r = residual(&z);
        let n = 60_000;
        let mut counts = [0usize; 6];
        for m in 0..n {
            let mut rng = rng(m);
            index_mh_without_replacement(&mut rng, &atoms, &pi, gamma, &s, &mut z, &mut r);
            let mut sorted = z.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, vec![0, 1, 2], "slots share an atom: {z:?}");
            let expect = residual(&z);
            assert!(r.iter().zip(&expect).all(|(a, b)| (a - b).abs() < 1e-12));
            counts[orders.iter().position(|o| o[..] == z[..]).unwrap()] += 1;
        }
        for (o, &c) in orders.iter().zip(&counts) {
            let p = weight(o) / total;
            let freq = c as f64 / n as f64;
            // Correlated draws: a generous effective sample size of n / 10.
            let se = (p * (1.0 - p) / (n as f64 / 10.0)).sqrt();
            assert!(
                (freq - p).abs() < 4.0 * se,
                "order {o:?}: frequency {freq}, exact {p}, se {se}"
            );
        }
    }

    #[test]
    fn gamma_draws_match_their_moments() {
        // Gamma(shape 81, rate 3): mean 27, variance 9. 4000 draws: MC error of the mean 0.047.
        let draws: Vec<f64> = (0..4000)
            .map(|i| gamma_rate(&mut rng(i), 81.0, 3.0))
            .collect();
        let mean = draws.iter().sum::<f64>() / 4000.0;
        let var = draws.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 3999.0;
        assert!(
            (mean - 27.0).abs() < 4.0 * 0.0475,
            "mean {mean}, expected 27"
        );
        // Variance's MC sd ≈ 9·sqrt(2/4000 + 6/(81·4000)) ≈ 0.21.
        assert!((var - 9.0).abs() < 4.0 * 0.21, "variance {var}, expected 9");
    }

    #[test]
    fn wishart_draws_have_mean_dof_times_scale() {
        let scale = [2.0, 0.5, 0.5, 1.0];
        let n = 4000;
        let mut mean = [0.0; 4];
        let mut sq = [0.0; 4];
        for i in 0..n {
            let w = wishart(&mut rng(i), 5.0, &scale, 2).unwrap();
            for j in 0..4 {
                mean[j] += w[j] / n as f64;
                sq[j] += w[j] * w[j] / n as f64;
            }
        }
        // E[W] = ν S; Var[W_ij] = ν (S_ij² + S_ii S_jj).
        for j in 0..4 {
            let (a, b) = (j / 2, j % 2);
            let expected = 5.0 * scale[j];
            let var = 5.0 * (scale[j] * scale[j] + scale[a * 2 + a] * scale[b * 2 + b]);
            let tol = 4.0 * (var / n as f64).sqrt();
            assert!(
                (mean[j] - expected).abs() < tol,
                "entry {j}: mean {} vs {expected} (tolerance {tol})",
                mean[j]
            );
            let _ = sq[j];
        }
    }

    #[test]
    fn normal_with_precision_has_the_inverse_covariance() {
        let precision = [4.0, 1.0, 1.0, 2.0];
        let cov = inverse_spd(&precision, 2).unwrap();
        let n = 8000;
        let mut c = [0.0; 4];
        for i in 0..n {
            let x = normal_with_precision(&mut rng(i), &[1.0, -1.0], &precision, 2).unwrap();
            let d = [x[0] - 1.0, x[1] + 1.0];
            for j in 0..4 {
                c[j] += d[j / 2] * d[j % 2] / n as f64;
            }
        }
        for j in 0..4 {
            let (a, b) = (j / 2, j % 2);
            let sd = ((cov[a * 2 + a] * cov[b * 2 + b] + cov[j] * cov[j]) / n as f64).sqrt();
            assert!(
                (c[j] - cov[j]).abs() < 4.0 * sd,
                "covariance entry {j}: {} vs {} (tolerance {})",
                c[j],
                cov[j],
                4.0 * sd
            );
        }
    }

    #[test]
    fn omp_recovers_an_exact_two_atom_signal() {
        // Six orthonormal atoms and a seventh, (e0 + e1)/√2: x = 3·e1 + 2·e4 takes two steps.
        let mut cols = vec![0.0; 7 * 6];
        (0..6).for_each(|k| cols[k * 6 + k] = 1.0);
        cols[36] = std::f64::consts::FRAC_1_SQRT_2;
        cols[37] = std::f64::consts::FRAC_1_SQRT_2;
        let atoms = Atoms { d: 6, cols };
        let x = [0.0, 3.0, 0.0, 0.0, 2.0, 0.0];
        let (sel, coef, errs) = omp(&atoms, &x, 2);
        assert_eq!(sel, vec![1, 4], "selected {sel:?}");
        assert!(
            (coef[0] - 3.0).abs() < 1e-9 && (coef[1] - 2.0).abs() < 1e-9,
            "{coef:?}"
        );
        let first = (4.0f64 / 13.0).sqrt();
        assert!(
            (errs[0] - first).abs() < 1e-12,
            "errors {errs:?}, first should be {first}"
        );
        assert!(errs[1] < 1e-9, "errors {errs:?}");
    }

    #[test]
    fn student_t_independence_mh_samples_its_target() {
        // Target N(1, 0.5²) in 1-D; proposal t_4 centred off the mode (1.3) with scale 0.8.
        // 40000 steps; the MC error of the mean is estimated by batch means (100 batches).
        let energy = |t: &[f64]| 0.5 * ((t[0] - 1.0) / 0.5).powi(2);
        let mut x = vec![0.0];
        let mut draws = Vec::with_capacity(40_000);
        let mut accepted = 0;
        for i in 0..40_000 {
            let (candidate, passes) = student_t_mh(&mut rng(i), &x, &[1.3], &[0.8], 4.0, energy);
            if passes {
                x = candidate;
                accepted += 1;
            }
            draws.push(x[0]);
        }
        let n = draws.len() as f64;
        let mean = draws.iter().sum::<f64>() / n;
        let var = draws.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let batch_means: Vec<f64> = draws
            .chunks(400)
            .map(|c| c.iter().sum::<f64>() / c.len() as f64)
            .collect();
        let bm = batch_means.iter().map(|b| (b - mean).powi(2)).sum::<f64>() / 99.0;
        let mcse = (bm / 100.0).sqrt();
        assert!(
            (mean - 1.0).abs() < 4.0 * mcse,
            "mean {mean}, expected 1 (MC error {mcse})"
        );
        // The variance's MC error by batch means of the squared deviations, likewise.
        let batch_sq: Vec<f64> = draws
            .chunks(400)
            .map(|c| c.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / c.len() as f64)
            .collect();
        let bv = batch_sq.iter().map(|b| (b - var).powi(2)).sum::<f64>() / 99.0;
        let mcse_var = (bv / 100.0).sqrt();
        assert!(
            (var - 0.25).abs() < 4.0 * mcse_var,
            "variance {var}, expected 0.25 (MC error {mcse_var})"
        );
        assert!(accepted > 20_000, "acceptance {accepted} of 40000");
    }

    #[test]
    fn the_chain_learns_an_scr_outside_the_grid() {
        // A constant plus one SCR whose shape (Trise 4, Tdecay 30) is not in the initial grid:
        // the learned dictionary's best OMP error must beat the initial one.
        let family = AtomFamily::Eda { len: 160 };
        let initial = Initial::new(&family);
        let prior = ParamPrior::from_grid(&initial.params, 3);
        let mut scr = vec![0.0; 160];
        family.raw_atom(&[42.0, 4.0, 30.0], &mut scr);
        let x: Vec<f64> = scr.iter().map(|v| 2.0 + v).collect();
        let hyper = DictionaryHyper::default();
        let result = run_signal(&family, &initial, &prior, &hyper, &x, 2, 200, 20, 5, 0);
        assert!(
            result.best_error < 0.5 * result.initial_error,
            "best {} vs initial {}",
            result.best_error,
            result.initial_error
        );
        assert!(result.proposed > 0 && result.accepted > 0, "{result:?}");
        let again = run_signal(&family, &initial, &prior, &hyper, &x, 2, 200, 20, 5, 0);
        assert_eq!(result, again, "one seed, one result");
    }
}
