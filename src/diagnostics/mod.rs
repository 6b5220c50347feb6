//! Run diagnostics: acceptance, divergences, split-R̂, bulk and tail ESS, ESS per second, Geweke.
//!
//! Computed from the run's trace (per iteration and chain: the energy U and the fixed random
//! projections of X), never from the stored samples; [`per_class`] diagnoses each class's chains
//! of an augmentation on their own. [`quality`] judges the generated images themselves (label
//! preservation, novelty, diversity) against real ones.

pub(crate) mod convergence;
pub mod degenerate;
pub mod per_class;
pub mod quality;
pub mod reference;

use serde::Serialize;

pub use convergence::{
    ess_basic, ess_bulk, ess_tail, geweke_z, mcse_mean, nested_rhat, normal_quantile, split_rhat,
};

/// The convergence diagnostics of one traced quantity across chains.
#[derive(Clone, Debug, Serialize)]
pub struct QuantityDiagnostics {
    /// "energy", "projection i" or "noise precision".
    pub name: String,
    /// Rank-normalised split-R̂ (None with fewer than 2 draws per half-chain or no variance).
    pub rhat: Option<f64>,
    /// Bulk ESS over all chains.
    pub ess_bulk: Option<f64>,
    /// Tail ESS (5% and 95% quantile indicators) over all chains.
    pub ess_tail: Option<f64>,
    /// Bulk ESS per second of sampling.
    pub ess_bulk_per_second: Option<f64>,
    /// Fraction of chains whose Geweke |z| < 2 (first 10% against last 50%); None when the chains
    /// are too short for the test (under 40 draws).
    pub geweke_pass_fraction: Option<f64>,
    /// Nested R̂ over the superchains (None without superchains, or fewer than two).
    pub nested_rhat: Option<f64>,
    /// Monte Carlo standard error of the quantity's mean.
    pub mcse_mean: Option<f64>,
}

/// Acceptance overall and its spread over chains.
#[derive(Clone, Debug, Serialize)]
pub struct AcceptanceSummary {
    /// Accepted proposals over all proposals.
    pub overall: f64,
    /// Per-chain acceptance rate at the quantiles 0, 5, 25, 50, 75, 95, 100 %.
    pub per_chain_quantiles: [f64; 7],
}

/// Everything `report.json` says about sampling quality.
#[derive(Clone, Debug, Serialize)]
pub struct DiagnosticsReport {
    /// Number of chains C.
    pub chains: usize,
    /// Draws per chain K.
    pub draws_per_chain: usize,
    /// Acceptance.
    pub acceptance: AcceptanceSummary,
    /// Divergent proposals (NaN or infinite terms), all rejected; the chain stayed where it was.
    pub divergences: u64,
    /// Chains with at least one divergence.
    pub divergent_chains: usize,
    /// The energy U and the projections, one entry each.
    pub quantities: Vec<QuantityDiagnostics>,
    /// The largest R̂ over the quantities.
    pub max_rhat: Option<f64>,
    /// The smallest bulk ESS over the quantities.
    pub min_ess_bulk: Option<f64>,
    /// The smallest tail ESS over the quantities.
    pub min_ess_tail: Option<f64>,
    /// The smallest bulk ESS per second over the quantities.
    pub min_ess_bulk_per_second: Option<f64>,
    /// Outer iterations of warm-up left out of every figure above but acceptance.
    pub burn_in_excluded: u32,
    /// What the superchains of nested R̂ are (e.g. "start classes"), and how many.
    pub superchains: Option<String>,
    /// The largest nested R̂ over the quantities.
    pub max_nested_rhat: Option<f64>,
    /// One plain-language line: converged or not, by which figure and threshold.
    pub verdict: String,
}

/// R̂ at or below this counts as converged (Vehtari et al. 2021; Margossian et al. 2024 use the
/// same bound for nested R̂).
pub const RHAT_THRESHOLD: f64 = 1.01;
/// Bulk ESS at or above this is enough for stable estimates of means and quantiles (Vehtari et
/// al. 2021 recommend 100 per chain for 4 chains).
pub const ESS_THRESHOLD: f64 = 400.0;
/// A median per-chain acceptance below this means the chains barely move, so running longer
/// does not mix them and a smaller step does (gradient samplers aim at 57–80%; the default
/// `rmld sample` at 2,000 outer iterations accepts 7%, at η/2 31%, at η/5 86%).
pub const LOW_ACCEPTANCE: f64 = 0.10;

/// Which draws the diagnostics read, and how the chains group for nested R̂.
#[derive(Clone, Copy, Debug, Default)]
pub struct Scope<'a> {
    /// Outer iterations of warm-up: the draws of iterations 1..=burn_in are left out.
    pub burn_in: u32,
    /// Each chain's superchain (chains started alike), and what the groups are ("start
    /// classes"). Unequal groups are cut to the smallest group's size (first chains kept).
    pub superchains: Option<(&'a [usize], &'a str)>,
}

/// Draws per chain for `chains` chains from a K × C × `width` trace, component `component`.
fn per_chain(trace: &[f64], chains: usize, width: usize, component: usize) -> Vec<Vec<f64>> {
    let k = trace.len() / (chains * width).max(1);
    (0..chains)
        .map(|c| {
            (0..k)
                .map(|i| trace[(i * chains + c) * width + component])
                .collect()
        })
        .collect()
}

/// The q-quantile (linear interpolation) of sorted values.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let at = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
    sorted[lo] + (at - lo as f64) * (sorted[hi] - sorted[lo])
}

/// The diagnostics of one quantity (draws per chain) given the sampling time.
pub fn quantity(name: &str, chains: &[Vec<f64>], seconds: f64) -> QuantityDiagnostics {
    quantity_nested(name, chains, seconds, None)
}

/// `quantity`, with nested R̂ over `superchains` (chain indices kept and their groups).
fn quantity_nested(
    name: &str,
    chains: &[Vec<f64>],
    seconds: f64,
    superchains: Option<&(Vec<usize>, Vec<usize>)>,
) -> QuantityDiagnostics {
    let finite = chains.iter().all(|c| c.iter().all(|v| v.is_finite()));
    let (rhat, bulk, tail) = if finite {
        (split_rhat(chains), ess_bulk(chains), ess_tail(chains))
    } else {
        (None, None, None)
    };
    let k = chains.first().map_or(0, |c| c.len());
    let geweke = (finite && k >= 40).then(|| {
        let passed = chains
            .iter()
            .filter(|c| geweke_z(c).is_some_and(|z| z.abs() < 2.0))
            .count();
        passed as f64 / chains.len().max(1) as f64
    });
    let nested = superchains.filter(|_| finite).and_then(|(kept, ids)| {
        let picked: Vec<Vec<f64>> = kept.iter().map(|&c| chains[c].clone()).collect();
        nested_rhat(&picked, ids)
    });
    QuantityDiagnostics {
        name: name.into(),
        rhat,
        ess_bulk: bulk,
        ess_tail: tail,
        ess_bulk_per_second: bulk.filter(|_| seconds > 0.0).map(|e| e / seconds),
        geweke_pass_fraction: geweke,
        nested_rhat: nested,
        mcse_mean: if finite { mcse_mean(chains) } else { None },
    }
}

/// What the diagnostics read of a run: its per-chain counts and its per-iteration trace (the
/// orchestrator's `SampleRun` is one), so this leaf module needs nothing above it.
pub trait ChainTrace {
    /// Outer iterations completed.
    fn completed(&self) -> u32;
    /// Accepted proposals per chain.
    fn accepted(&self) -> &[u32];
    /// Divergent proposals per chain.
    fn divergent(&self) -> &[u32];
    /// Per traced iteration and chain: the MH decision's log α.
    fn log_alpha(&self) -> &[f64];
    /// Per traced iteration and chain: U(X) − const.
    fn energies(&self) -> &[f32];
    /// Per traced iteration and chain: `projections_per_draw()` projections ⟨v_i, X⟩.
    fn projections(&self) -> &[f32];
    /// Projections per chain and traced iteration.
    fn projections_per_draw(&self) -> usize;
    /// Outer iterations between traced rows (row i is iteration (i + 1) × stride).
    fn trace_stride(&self) -> u32 {
        1
    }
    /// Per traced iteration and chain: the learned noise precision τ (`--noise gibbs`), or
    /// empty when the noise is fixed.
    fn noise_trace(&self) -> &[f32] {
        &[]
    }
    /// Per chain, the data row its start was encoded from (LASSO starts), or `None`.
    fn start_indices(&self) -> Option<&[usize]> {
        None
    }
}

/// The chains kept for nested R̂ (every group cut to the smallest group's size) and their
/// groups renumbered from 0; None with fewer than two groups.
fn balanced_superchains(ids: &[usize]) -> Option<(Vec<usize>, Vec<usize>)> {
    let mut groups: Vec<usize> = ids.to_vec();
    groups.sort_unstable();
    groups.dedup();
    if groups.len() < 2 {
        return None;
    }
    let size = groups
        .iter()
        .map(|g| ids.iter().filter(|&k| k == g).count())
        .min()?;
    let mut kept = Vec::new();
    let mut renumbered = Vec::new();
    for (new, g) in groups.iter().enumerate() {
        let members = (0..ids.len()).filter(|&c| ids[c] == *g).take(size);
        for c in members {
            kept.push(c);
            renumbered.push(new);
        }
    }
    Some((kept, renumbered))
}

/// The diagnostics of a run that took `sampling_seconds` for its K outer iterations, from all
/// its traced draws.
pub fn summarize(run: &impl ChainTrace, sampling_seconds: f64) -> DiagnosticsReport {
    summarize_scoped(run, sampling_seconds, Scope::default())
}

/// The diagnostics of a run from its draws after `scope.burn_in`, with nested R̂ over
/// `scope.superchains`; acceptance and divergences count every iteration.
pub fn summarize_scoped(
    run: &impl ChainTrace,
    sampling_seconds: f64,
    scope: Scope<'_>,
) -> DiagnosticsReport {
    let chains = run.accepted().len();
    let width = run.projections_per_draw();
    // Traced rows (thinned for long runs) of warm-up iterations are left out.
    let traced = run.log_alpha().len() / chains.max(1);
    let skip = ((scope.burn_in / run.trace_stride().max(1)) as usize).min(traced);
    let k = traced - skip;
    let groups = scope.superchains.and_then(|(ids, _)| {
        (ids.len() == chains)
            .then(|| balanced_superchains(ids))
            .flatten()
    });
    let mut rates: Vec<f64> = run
        .accepted()
        .iter()
        .map(|&a| a as f64 / run.completed().max(1) as f64)
        .collect();
    rates.sort_by(f64::total_cmp);
    let per_chain_quantiles = [0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0].map(|q| quantile(&rates, q));
    let energies: Vec<f64> = run.energies()[skip * chains..]
        .iter()
        .map(|&v| v as f64)
        .collect();
    let projections: Vec<f64> = run
        .projections()
        .get(skip * chains * width..)
        .unwrap_or(&[])
        .iter()
        .map(|&v| v as f64)
        .collect();
    let mut quantities = vec![quantity_nested(
        "energy",
        &per_chain(&energies, chains, 1, 0),
        sampling_seconds,
        groups.as_ref(),
    )];
    if chains > 0 && projections.len() == k * chains * width {
        for i in 0..width {
            quantities.push(quantity_nested(
                &format!("projection {i}"),
                &per_chain(&projections, chains, width, i),
                sampling_seconds,
                groups.as_ref(),
            ));
        }
    }
    let tau = run.noise_trace();
    if chains > 0 && tau.len() == traced * chains && traced > 0 {
        let tau: Vec<f64> = tau[skip * chains..].iter().map(|&v| v as f64).collect();
        quantities.push(quantity_nested(
            "noise precision",
            &per_chain(&tau, chains, 1, 0),
            sampling_seconds,
            groups.as_ref(),
        ));
    }
    let fold = |pick: fn(&QuantityDiagnostics) -> Option<f64>, max: bool| {
        quantities
            .iter()
            .filter_map(pick)
            .reduce(|a, b| if (a > b) == max { a } else { b })
    };
    DiagnosticsReport {
        chains,
        draws_per_chain: k,
        acceptance: AcceptanceSummary {
            overall: run.accepted().iter().map(|&a| a as f64).sum::<f64>()
                / (run.completed() as usize * chains).max(1) as f64,
            per_chain_quantiles,
        },
        divergences: run.divergent().iter().map(|&d| d as u64).sum(),
        divergent_chains: run.divergent().iter().filter(|&&d| d > 0).count(),
        max_rhat: fold(|q| q.rhat, true),
        min_ess_bulk: fold(|q| q.ess_bulk, false),
        min_ess_tail: fold(|q| q.ess_tail, false),
        min_ess_bulk_per_second: fold(|q| q.ess_bulk_per_second, false),
        burn_in_excluded: scope.burn_in,
        superchains: scope
            .superchains
            .zip(groups.as_ref())
            .map(|((_, what), (kept, ids))| {
                let count = ids.iter().max().map_or(0, |m| m + 1);
                format!(
                    "{count} superchains ({what}) of {} chains each",
                    kept.len() / count.max(1)
                )
            }),
        max_nested_rhat: fold(|q| q.nested_rhat, true),
        verdict: String::new(),
        quantities,
    }
    .with_verdict()
}

impl DiagnosticsReport {
    /// Fills `verdict`: converged when the largest (nested, else split) R̂ is at most
    /// `RHAT_THRESHOLD`, with the bulk ESS measured against `ESS_THRESHOLD`.
    fn with_verdict(mut self) -> Self {
        let (rhat, which, source) = match (self.max_nested_rhat, self.max_rhat) {
            (Some(r), _) => (Some(r), "nested R-hat", "Margossian et al. 2024"),
            (None, r) => (r, "split R-hat", "Vehtari et al. 2021"),
        };
        let after = if self.burn_in_excluded > 0 {
            format!(" after {} burn-in iterations", self.burn_in_excluded)
        } else {
            String::new()
        };
        self.verdict = match rhat {
            None => format!(
                "convergence not assessed: {} draws per chain{after} (at least 4, and a quantity that varies, are needed)",
                self.draws_per_chain
            ),
            Some(r) if r <= RHAT_THRESHOLD => {
                let ess = self.min_ess_bulk.unwrap_or(0.0);
                let enough = if ess >= ESS_THRESHOLD {
                    format!("bulk ESS {ess:.0} ≥ {ESS_THRESHOLD:.0}")
                } else {
                    format!("but bulk ESS {ess:.0} < {ESS_THRESHOLD:.0}: draw more samples for stable estimates")
                };
                format!("converged: max {which} {r:.3} ≤ {RHAT_THRESHOLD} ({source}){after}; {enough}")
            }
            Some(r) => format!(
                "not converged: max {which} {r:.3} > {RHAT_THRESHOLD} ({source}){after}: the chains \
                 disagree; {} before trusting the draws",
                self.advice()
            ),
        };
        self
    }

    /// What to do about chains that disagree: a smaller step where they barely move, else a
    /// longer run.
    fn advice(&self) -> String {
        let median = self.acceptance.per_chain_quantiles[3];
        if median < LOW_ACCEPTANCE {
            format!(
                "they accept {:.1}% of their proposals (median per chain), too few to move, so a \
                 longer run will not mix them: lower the step size (eta), then run longer",
                100.0 * median
            )
        } else {
            "run longer (more samples and a longer burn-in)".into()
        }
    }

    /// One line for the CLI's closing summary.
    pub fn summary_line(&self) -> String {
        let show = |v: Option<f64>, digits: usize| {
            v.map_or("n/a".to_string(), |v| format!("{v:.digits$}"))
        };
        let geweke = self.quantities.first().and_then(|q| q.geweke_pass_fraction);
        format!(
            "diagnostics: max split R-hat {}{}, min ESS bulk {} / tail {} ({} per s), Geweke pass (energy) {}, \
             per-chain acceptance median {:.1}% [5%: {:.1}%, 95%: {:.1}%], {} divergences",
            show(self.max_rhat, 3),
            self.max_nested_rhat
                .map_or(String::new(), |r| format!(" (nested {r:.3})")),
            show(self.min_ess_bulk, 0),
            show(self.min_ess_tail, 0),
            show(self.min_ess_bulk_per_second, 1),
            geweke.map_or("n/a".into(), |g| format!("{:.0}%", 100.0 * g)),
            100.0 * self.acceptance.per_chain_quantiles[3],
            100.0 * self.acceptance.per_chain_quantiles[1],
            100.0 * self.acceptance.per_chain_quantiles[5],
            self.divergences
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unconverged(median_acceptance: f64) -> DiagnosticsReport {
        let mut quantiles = [median_acceptance; 7];
        quantiles[0] = 0.0;
        quantiles[6] = 1.0;
        DiagnosticsReport {
            chains: 4,
            draws_per_chain: 100,
            acceptance: AcceptanceSummary {
                overall: median_acceptance,
                per_chain_quantiles: quantiles,
            },
            divergences: 0,
            divergent_chains: 0,
            max_rhat: Some(1.5),
            min_ess_bulk: Some(10.0),
            min_ess_tail: Some(10.0),
            min_ess_bulk_per_second: None,
            burn_in_excluded: 0,
            superchains: None,
            max_nested_rhat: None,
            verdict: String::new(),
            quantities: Vec::new(),
        }
        .with_verdict()
    }

    #[test]
    fn chains_that_barely_move_are_told_to_lower_the_step_not_to_run_longer() {
        let stuck = unconverged(0.032).verdict;
        assert!(stuck.starts_with("not converged"), "{stuck}");
        assert!(stuck.contains("accept 3.2% of their proposals"), "{stuck}");
        assert!(stuck.contains("lower the step size (eta)"), "{stuck}");
        assert!(
            !stuck.contains("more samples and a longer burn-in"),
            "{stuck}"
        );
        let moving = unconverged(0.45).verdict;
        assert!(
            moving.contains("run longer (more samples and a longer burn-in)"),
            "{moving}"
        );
        assert!(!moving.contains("step size"), "{moving}");
        // At the bound the chains count as moving.
        assert!(!unconverged(LOW_ACCEPTANCE).verdict.contains("step size"));
    }
}
