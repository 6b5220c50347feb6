//! MH-within-Gibbs for one signal's parametric dictionary (Chaspari et al. 2016, Algorithm 1).
//!
//! Atom sampling with replacement (the paper's Section II-A): indices z_l ~ Multinomial by Gibbs
//! (without replacement, Section II-B: MH moves under Wallenius' prior, `without_replacement`),
//! coefficients s_l Normal by Gibbs, each selected learnable atom's θ_k by an independent MH step
//! whose Student-t proposal is centred on the conditional mode found by Nelder–Mead (argmin),
//! unselected atoms' θ_k, their means g_k and the precision G by Gibbs (Normal, Normal, Wishart),
//! the selection probabilities π by Dirichlet and the noise precision γε by Gamma. Every draw of
//! iteration m of signal n comes from the Philox stream (seed, chain n, outer m) through
//! [`PhiloxRng`] and `rng::portable_draws` (the same bits on every CPU), so results do not
//! depend on threads and resume bit for bit.

use serde::{Deserialize, Serialize};

use super::atom_mh::{clamp_into, find_mode, student_t_mh, AtomEnergy};
use super::hyper::{DictionaryHyper, ParamPrior};
use super::linalg::{dot, gamma_rate, identity, inverse_spd, normal_with_precision, wishart};
use super::omp::{omp, Atoms};
use super::slot_indices::{draw_slot_index, index_mh_without_replacement};
use crate::diagnostics::geweke_z;
use crate::model::AtomFamily;
use crate::rng::{PhiloxRng, Purpose, Stream};

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

/// The names of every Geweke group for a family: c, z, gamma_eps, pi, `theta.<p>`…, `g.<p>`…, G.
pub fn group_names(family: &AtomFamily) -> Vec<String> {
    let mut names: Vec<String> = GROUPS.iter().map(|s| s.to_string()).collect();
    names.extend(family.names().iter().map(|p| format!("theta.{p}")));
    names.extend(family.names().iter().map(|p| format!("g.{p}")));
    names.push("G".into());
    names
}

/// The starting dictionary of every signal: the family's fixed atoms, then its initial grid.
pub(crate) struct Initial {
    /// The fixed atoms, then the grid's atoms.
    pub atoms: Atoms,
    /// The grid's parameters; atom k ≥ `fixed` is learnable with params[k − fixed].
    pub params: Vec<Vec<f64>>,
    /// Fixed atoms (they come first).
    pub fixed: usize,
}

impl Initial {
    /// The family's fixed atoms and the atoms of its initial grid that exist.
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
    let (mut chain, initial_error) = SignalChain::new(family, initial, prior, hyper, x, l);
    let mut traces = Traces::new(iterations.saturating_sub(burn_in) as usize);
    let mut best_error = f64::INFINITY;
    let mut best_params = Vec::new();
    for m in 0..iterations {
        let mut rng = PhiloxRng::new(Stream::new(seed, signal, m, 0, Purpose::DictionaryLearning));
        chain.sweep(&mut rng);
        // Algorithm 2: this iteration's dictionary, judged by OMP with L iterations.
        let (omp_sel, _, omp_errs) = omp(&chain.atoms, x, chain.slots);
        let err = omp_errs.last().copied().unwrap_or(1.0);
        if err < best_error {
            best_error = err;
            best_params = omp_sel
                .iter()
                .filter_map(|&k| chain.theta[k].clone())
                .collect();
        }
        traces.record(&chain, m >= burn_in);
    }
    SignalResult {
        initial_error,
        best_error: if best_error.is_finite() {
            best_error
        } else {
            initial_error
        },
        best_params,
        accepted: chain.accepted,
        proposed: chain.proposed,
        geweke: traces.geweke(group_names(family).len()),
    }
}

/// The state of one signal's chain: its K atoms (θ_k for the learnable ones), the slots' indices
/// z and coefficients s, π, γε, the means g_k and precision G, and the residual r = x − Σ s_l φ_{z_l}.
struct SignalChain<'a> {
    family: &'a AtomFamily,
    prior: &'a ParamPrior,
    hyper: &'a DictionaryHyper,
    x: &'a [f64],
    q: usize,
    k_atoms: usize,
    slots: usize,
    atoms: Atoms,
    theta: Vec<Option<Vec<f64>>>,
    learnable: Vec<usize>,
    z: Vec<usize>,
    /// The coefficients' prior means (OMP's values).
    mu_s: Vec<f64>,
    s: Vec<f64>,
    pi: Vec<f64>,
    gamma: f64,
    g: Vec<Vec<f64>>,
    big_g: Vec<f64>,
    /// R0⁻¹ = ν0 · G0⁻¹.
    r0_inv: Vec<f64>,
    /// The Student-t proposal's per-parameter scales τ·units.
    scales: Vec<f64>,
    r: Vec<f64>,
    scratch: Vec<f64>,
    e: Vec<f64>,
    accepted: u64,
    proposed: u64,
}

impl<'a> SignalChain<'a> {
    /// The chain initialised by OMP on the initial dictionary (the signal's K = L atoms and
    /// coefficients), and OMP's error there.
    fn new(
        family: &'a AtomFamily,
        initial: &Initial,
        prior: &'a ParamPrior,
        hyper: &'a DictionaryHyper,
        x: &'a [f64],
        l: usize,
    ) -> (Self, f64) {
        let d = x.len();
        let q = family.q();
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
        let z: Vec<usize> = (0..slots).collect();
        let mu_s: Vec<f64> = if coef.is_empty() {
            vec![0.0]
        } else {
            coef.clone()
        };
        let s = mu_s.clone();
        let pi: Vec<f64> =
            vec![(hyper.alpha + 1.0) / (k_atoms as f64 * (hyper.alpha + 1.0)); k_atoms];
        let g: Vec<Vec<f64>> = theta
            .iter()
            .map(|t| t.clone().unwrap_or_default())
            .collect();
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
        let mut chain = SignalChain {
            family,
            prior,
            hyper,
            x,
            q,
            k_atoms,
            slots,
            atoms,
            theta,
            learnable,
            z,
            mu_s,
            s,
            pi,
            gamma: hyper.noise_start,
            g,
            big_g: prior.big_g0.clone(),
            r0_inv,
            scales,
            r: x.to_vec(),
            scratch: vec![0.0; d],
            e: vec![0.0; d],
            accepted: 0,
            proposed: 0,
        };
        chain.recompute_residual();
        (chain, initial_error)
    }

    /// r = x − Σ_l s_l φ_{z_l}.
    fn recompute_residual(&mut self) {
        self.r.copy_from_slice(self.x);
        for (&k, &c) in self.z.iter().zip(&self.s) {
            for (ri, a) in self.r.iter_mut().zip(self.atoms.col(k)) {
                *ri -= c * a;
            }
        }
    }

    /// One iteration of Algorithm 1: every block drawn once, in the paper's order.
    fn sweep(&mut self, rng: &mut PhiloxRng) {
        self.draw_indices(rng);
        self.draw_coefficients(rng);
        self.draw_selected_params(rng);
        self.draw_unselected_params(rng);
        self.draw_means(rng);
        self.draw_precision(rng);
        self.draw_selection(rng);
        self.draw_noise(rng);
    }

    /// Step 1: indices z_l by Gibbs: p(z_l = k) ∝ π_k exp(−γε/2 · s_l(s_l − 2 e_lᵀφ_k));
    /// without replacement by MH (`index_mh_without_replacement`).
    fn draw_indices(&mut self, rng: &mut PhiloxRng) {
        if self.hyper.without_replacement {
            let (atoms, pi, s) = (&self.atoms, &self.pi, &self.s);
            index_mh_without_replacement(rng, atoms, pi, self.gamma, s, &mut self.z, &mut self.r);
            return;
        }
        for li in 0..self.slots {
            for (ri, a) in self.r.iter_mut().zip(self.atoms.col(self.z[li])) {
                *ri += self.s[li] * a;
            }
            let (pick, _) = draw_slot_index(
                rng,
                &self.atoms,
                &self.pi,
                self.gamma,
                self.s[li],
                &self.r,
                |_| false,
                self.k_atoms - 1,
            );
            self.z[li] = pick;
            for (ri, a) in self.r.iter_mut().zip(self.atoms.col(pick)) {
                *ri -= self.s[li] * a;
            }
        }
    }

    /// Step 2: coefficients s_l by Gibbs: N((γs μ_l + γε φᵀe_l)/(γs + γε), 1/(γs + γε)).
    fn draw_coefficients(&mut self, rng: &mut PhiloxRng) {
        for li in 0..self.slots {
            let a = self.atoms.col(self.z[li]);
            for (ri, av) in self.r.iter_mut().zip(a) {
                *ri += self.s[li] * av;
            }
            let precision = self.hyper.coefficient_precision + self.gamma;
            let mean = (self.hyper.coefficient_precision * self.mu_s[li]
                + self.gamma * dot(a, &self.r))
                / precision;
            self.s[li] = mean + crate::rng::standard_normal(rng) / precision.sqrt();
            for (ri, av) in self.r.iter_mut().zip(a) {
                *ri -= self.s[li] * av;
            }
        }
    }

    /// Step 3: selected learnable atoms' θ_k by independent MH, proposal Student-t at the mode.
    fn draw_selected_params(&mut self, rng: &mut PhiloxRng) {
        let d = self.x.len();
        for &k in &self.learnable {
            let weight: f64 = self
                .z
                .iter()
                .zip(&self.s)
                .filter(|(&zk, _)| zk == k)
                .map(|(_, c)| c)
                .sum();
            if !self.z.contains(&k) {
                continue;
            }
            self.e.copy_from_slice(&self.r);
            for (ei, a) in self.e.iter_mut().zip(self.atoms.col(k)) {
                *ei += weight * a;
            }
            let energy = AtomEnergy {
                family: self.family,
                e: &self.e,
                weight,
                gamma: self.gamma,
                g: &self.g[k],
                big_g: &self.big_g,
                scratch: std::cell::RefCell::new(vec![0.0; d]),
            };
            let start = clamp_into(self.family, &self.g[k]);
            let mode = find_mode(&energy, &start, self.hyper.mode_iterations);
            let current = self.theta[k].as_ref().expect("learnable").clone();
            let (candidate, passes) = student_t_mh(
                rng,
                &current,
                &mode,
                &self.scales,
                self.hyper.proposal_dof,
                |t| energy.energy(t),
            );
            self.proposed += 1;
            if passes
                && self.family.in_range(&candidate)
                && self.family.atom(&candidate, &mut self.scratch)
            {
                self.accepted += 1;
                self.atoms.cols[k * d..(k + 1) * d].copy_from_slice(&self.scratch);
                self.theta[k] = Some(candidate);
                self.r.copy_from_slice(&self.e);
                for (ri, a) in self.r.iter_mut().zip(&self.scratch) {
                    *ri -= weight * a;
                }
            }
        }
    }

    /// Step 4: unselected learnable atoms from their prior N(g_k, G⁻¹), truncated to the ranges.
    fn draw_unselected_params(&mut self, rng: &mut PhiloxRng) {
        let d = self.x.len();
        for &k in &self.learnable {
            if self.z.contains(&k) {
                continue;
            }
            for _ in 0..32 {
                if let Some(t) = normal_with_precision(rng, &self.g[k], &self.big_g, self.q) {
                    if self.family.atom(&t, &mut self.scratch) {
                        self.atoms.cols[k * d..(k + 1) * d].copy_from_slice(&self.scratch);
                        self.theta[k] = Some(t);
                        break;
                    }
                }
            }
        }
    }

    /// Step 5: means g_k ~ N((G + G0)⁻¹(G θ_k + G0 g0), (G + G0)⁻¹).
    fn draw_means(&mut self, rng: &mut PhiloxRng) {
        let (q, prior, big_g) = (self.q, self.prior, &self.big_g);
        let post: Vec<f64> = big_g
            .iter()
            .zip(&prior.big_g0)
            .map(|(a, b)| a + b)
            .collect();
        let Some(cov) = inverse_spd(&post, q) else {
            return;
        };
        for &k in &self.learnable {
            let t = self.theta[k].as_ref().expect("learnable");
            let rhs: Vec<f64> = (0..q)
                .map(|i| {
                    (0..q)
                        .map(|j| big_g[i * q + j] * t[j] + prior.big_g0[i * q + j] * prior.g0[j])
                        .sum()
                })
                .collect();
            let mean: Vec<f64> = (0..q)
                .map(|i| (0..q).map(|j| cov[i * q + j] * rhs[j]).sum())
                .collect();
            if let Some(draw) = normal_with_precision(rng, &mean, &post, q) {
                self.g[k] = draw;
            }
        }
    }

    /// Step 6: G ~ Wishart(ν0 + K, [R0⁻¹ + Σ (θ_k − g_k)(θ_k − g_k)ᵀ]⁻¹).
    fn draw_precision(&mut self, rng: &mut PhiloxRng) {
        if self.learnable.is_empty() {
            return;
        }
        let q = self.q;
        let mut scatter = self.r0_inv.clone();
        for &k in &self.learnable {
            let t = self.theta[k].as_ref().expect("learnable");
            let g = &self.g[k];
            for i in 0..q {
                for j in 0..q {
                    scatter[i * q + j] += (t[i] - g[i]) * (t[j] - g[j]);
                }
            }
        }
        if let Some(scale) = inverse_spd(&scatter, q) {
            let dof = self.hyper.wishart_dof_for(q) + self.learnable.len() as f64;
            if let Some(w) = wishart(rng, dof, &scale, q) {
                self.big_g = w;
            }
        }
    }

    /// Step 7: π ~ Dirichlet(α + counts), by normalised Gammas.
    fn draw_selection(&mut self, rng: &mut PhiloxRng) {
        let draws: Vec<f64> = (0..self.k_atoms)
            .map(|k| {
                let count = self.z.iter().filter(|&&zk| zk == k).count() as f64;
                gamma_rate(rng, self.hyper.alpha + count, 1.0)
            })
            .collect();
        let total: f64 = draws.iter().sum();
        if total > 0.0 && total.is_finite() {
            self.pi = draws.iter().map(|v| v / total).collect();
        }
    }

    /// Step 8: γε ~ Gamma(e + d/2, f + ‖r‖²/2).
    fn draw_noise(&mut self, rng: &mut PhiloxRng) {
        self.recompute_residual();
        let d = self.x.len();
        self.gamma = gamma_rate(
            rng,
            self.hyper.noise_shape + d as f64 / 2.0,
            self.hyper.noise_rate + dot(&self.r, &self.r) / 2.0,
        );
    }
}

/// The traces after burn-in of every variable, each tagged by its Geweke group.
struct Traces {
    kept: usize,
    traces: Vec<(usize, Vec<f64>)>,
}

impl Traces {
    fn new(kept: usize) -> Self {
        Traces {
            kept,
            traces: Vec::new(),
        }
    }

    /// Variable `idx` (then the next) of group `group`; kept only when `record`.
    fn push(&mut self, idx: &mut usize, group: usize, value: f64, record: bool) {
        if record {
            if *idx == self.traces.len() {
                self.traces.push((group, Vec::with_capacity(self.kept)));
            }
            self.traces[*idx].1.push(value);
        }
        *idx += 1;
    }

    /// The chain's variables after an iteration: s, z, γε, π, each learnable θ_k and g_k, G's
    /// diagonal.
    fn record(&mut self, chain: &SignalChain<'_>, record: bool) {
        let q = chain.q;
        let mut idx = 0;
        for &sl in &chain.s {
            self.push(&mut idx, 0, sl, record);
        }
        for &zl in &chain.z {
            self.push(&mut idx, 1, zl as f64, record);
        }
        self.push(&mut idx, 2, chain.gamma, record);
        for &p in &chain.pi {
            self.push(&mut idx, 3, p, record);
        }
        for &k in &chain.learnable {
            let t = chain.theta[k].as_ref().expect("learnable");
            for (j, &v) in t.iter().enumerate() {
                self.push(&mut idx, 4 + j, v, record);
            }
        }
        for &k in &chain.learnable {
            for (j, &v) in chain.g[k].iter().enumerate() {
                self.push(&mut idx, 4 + q + j, v, record);
            }
        }
        for i in 0..q {
            self.push(&mut idx, 4 + 2 * q, chain.big_g[i * q + i], record);
        }
    }

    /// Per group, the Geweke |z| < 2 count and the number of variables tested.
    fn geweke(&self, groups: usize) -> Vec<[u32; 2]> {
        let mut geweke = vec![[0u32; 2]; groups];
        for (group, trace) in &self.traces {
            let pass = match geweke_z(trace) {
                Some(z) => z.abs() < 2.0,
                // No variance in a part: converged when the whole trace is constant.
                None => trace.iter().all(|v| *v == trace[0]),
            };
            geweke[*group][0] += pass as u32;
            geweke[*group][1] += 1;
        }
        geweke
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
