//! Run diagnostics: acceptance, divergences, split-R̂, bulk and tail ESS, ESS per second, Geweke.
//!
//! Computed from the run's trace (per iteration and chain: the energy U and the fixed random
//! projections of X), never from the stored samples. [`quality`] judges the generated images
//! themselves (label preservation, novelty, diversity) against real ones.

pub(crate) mod convergence;
pub mod quality;
pub mod reference;

use serde::Serialize;

pub use convergence::{
    ess_basic, ess_bulk, ess_tail, geweke_z, mcse_mean, nested_rhat, normal_quantile, split_rhat,
};

/// The convergence diagnostics of one traced quantity across chains.
#[derive(Clone, Debug, Serialize)]
pub struct QuantityDiagnostics {
    /// "energy" or "projection i".
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
    QuantityDiagnostics {
        name: name.into(),
        rhat,
        ess_bulk: bulk,
        ess_tail: tail,
        ess_bulk_per_second: bulk.filter(|_| seconds > 0.0).map(|e| e / seconds),
        geweke_pass_fraction: geweke,
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
}

/// The diagnostics of a run that took `sampling_seconds` for its K outer iterations.
pub fn summarize(run: &impl ChainTrace, sampling_seconds: f64) -> DiagnosticsReport {
    let chains = run.accepted().len();
    let width = run.projections_per_draw();
    // Traced draws per chain (thinned for long runs); acceptance counts every iteration.
    let k = run.log_alpha().len() / chains.max(1);
    let mut rates: Vec<f64> = run
        .accepted()
        .iter()
        .map(|&a| a as f64 / run.completed().max(1) as f64)
        .collect();
    rates.sort_by(f64::total_cmp);
    let per_chain_quantiles = [0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0].map(|q| quantile(&rates, q));
    let energies: Vec<f64> = run.energies().iter().map(|&v| v as f64).collect();
    let projections: Vec<f64> = run.projections().iter().map(|&v| v as f64).collect();
    let mut quantities = vec![quantity(
        "energy",
        &per_chain(&energies, chains, 1, 0),
        sampling_seconds,
    )];
    if chains > 0 && projections.len() == k * chains * width {
        for i in 0..width {
            quantities.push(quantity(
                &format!("projection {i}"),
                &per_chain(&projections, chains, width, i),
                sampling_seconds,
            ));
        }
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
        quantities,
    }
}

impl DiagnosticsReport {
    /// One line for the CLI's closing summary.
    pub fn summary_line(&self) -> String {
        let show = |v: Option<f64>, digits: usize| {
            v.map_or("n/a".to_string(), |v| format!("{v:.digits$}"))
        };
        let geweke = self.quantities.first().and_then(|q| q.geweke_pass_fraction);
        format!(
            "diagnostics: max R-hat {}, min ESS bulk {} / tail {} ({} per s), Geweke pass (energy) {}, \
             per-chain acceptance median {:.1}% [5%: {:.1}%, 95%: {:.1}%], {} divergences",
            show(self.max_rhat, 3),
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
