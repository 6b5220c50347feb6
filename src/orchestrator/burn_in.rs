//! Automatic burn-in: the warm-up ends at the first window whose adapted quantities have settled and whose chains no longer drift, or at a cap.
//!
//! The warm-up is cut into windows of `window` outer iterations. At the end of every window
//! from the second on (and before the cap), a settle check compares the window just finished (B)
//! with the one before it (A):
//!
//! - **Adapted quantities** (MALA and HMC, when the step size adapts): B's mean acceptance is
//!   within `ACCEPTANCE_TOLERANCE` (0.05, the tolerance) of the target, and the window
//!   means of log ε, and for HMC of ChEES's log T, moved by at most `LOG_CHANGE` (0.05, a 5%
//!   change) from A to B.
//! - **No drift** (every method): for each traced quantity (the energy, the four fixed random
//!   projections of X, and the learned noise precision), each chain's mean over B minus its mean
//!   over A is one paired difference; the cross-chain t statistic of those C differences must be
//!   within ±`DRIFT_T_LIMIT` (3.0: a two-sided 0.27% test per quantity, so six quantities
//!   together wrongly refuse a stationary window about 1.6% of the time). This is the
//!   between-window comparison of nested R̂ (Margossian et al. 2024) with the windows as the
//!   superchains, made on paired per-chain differences: chains started from different images
//!   sit at different levels for good, which nested R̂'s pooled variance counts as spread and
//!   which would hide a common drift; the paired form cancels each chain's own level. Geweke's
//!   (1992) diagnostic is the one-chain form of the same comparison.
//!
//! When a check passes, the burn-in ends there: the step size freezes at the mean of log ε over
//! the last window (where dual averaging has settled; Stan also ends on a freshly restarted
//! average), ChEES's T at its averaged value, and every later draw is kept under the keep
//! policy. When no check passes, the warm-up ends at the cap exactly as a fixed `--burn-in CAP`
//! does, and the report says it did not settle. Every decision is a function of the traced draws
//! and the adaptation state, both in the checkpoint, so a resumed run decides as the
//! uninterrupted one.

use crate::math::Portable;
use serde::{Deserialize, Serialize};

/// The largest gap between a settled window's mean acceptance and the target.
pub const ACCEPTANCE_TOLERANCE: f64 = 0.05;
/// The largest change of a window mean of log ε (or log T) between two windows: 5%.
pub const LOG_CHANGE: f64 = 0.05;
/// The largest |t| of a traced quantity's paired between-window difference.
pub const DRIFT_T_LIMIT: f64 = 3.0;
/// The shortest window, in outer iterations.
pub const MIN_WINDOW: u32 = 10;
/// Windows per cap: a cap of K₀ iterations has windows of ⌈K₀ / 20⌉ (at least `MIN_WINDOW`).
pub const WINDOWS_PER_CAP: u32 = 20;

/// An automatic burn-in of at most `cap` outer iterations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutoBurnIn {
    /// The warm-up's longest length.
    pub cap: u32,
}

impl AutoBurnIn {
    /// The settle checks' window, in outer iterations.
    pub fn window(&self) -> u32 {
        MIN_WINDOW.max(self.cap.div_ceil(WINDOWS_PER_CAP))
    }
}

/// One settle check's measurements.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SettleCheck {
    /// The outer iteration it was made after.
    pub iteration: u32,
    /// The last window's mean acceptance probability over chains and iterations.
    pub acceptance: f64,
    /// |Δ| of the window mean of log ε (None when the step size does not adapt).
    pub step_change: Option<f64>,
    /// |Δ| of the window mean of ChEES's log T (None without ChEES).
    pub length_change: Option<f64>,
    /// The largest |t| of the traced quantities' paired between-window differences.
    pub drift_t: f64,
    /// Every criterion held.
    pub settled: bool,
}

/// The automatic burn-in's state; a checkpoint saves it whole.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BurnInMonitor {
    /// The cap.
    pub cap: u32,
    /// The window, in outer iterations.
    pub window: u32,
    /// The outer iteration the warm-up ended after (a passed check, or the cap); None while it
    /// runs.
    pub ended_at: Option<u32>,
    /// True when a check passed (false: it ended at the cap, or has not ended).
    pub settled: bool,
    /// Checks made.
    pub checks: u32,
    /// The latest check.
    pub last_check: Option<SettleCheck>,
    /// Sums of log ε and log T over the current window's iterations, and their count.
    window_log_step: f64,
    window_log_length: f64,
    window_iterations: u32,
    /// The previous window's means of log ε and log T.
    previous_log_step: Option<f64>,
    previous_log_length: Option<f64>,
    /// The last finished window's mean of log ε: the step size the warm-up freezes at.
    pub last_window_log_step: Option<f64>,
}

/// The traced draws a check reads: per traced iteration, C values of each quantity.
pub struct TraceView<'a> {
    /// Chains C.
    pub chains: usize,
    /// Traced iteration j is outer iteration (j + 1)·stride.
    pub stride: u32,
    /// MH log α, traced × C (NaN: divergent).
    pub log_alpha: &'a [f64],
    /// Energies, traced × C.
    pub energies: &'a [f32],
    /// Projections, traced × C × `per_chain`.
    pub projections: &'a [f32],
    /// Projections per chain and traced iteration.
    pub per_chain: usize,
    /// Learned noise precision, traced × C (empty for a fixed σ²).
    pub noise: &'a [f32],
}

impl BurnInMonitor {
    /// A warm-up of at most `auto.cap` iterations, none run yet.
    pub fn new(auto: AutoBurnIn) -> Self {
        BurnInMonitor {
            cap: auto.cap,
            window: auto.window(),
            ended_at: None,
            settled: false,
            checks: 0,
            last_check: None,
            window_log_step: 0.0,
            window_log_length: 0.0,
            window_iterations: 0,
            previous_log_step: None,
            previous_log_length: None,
            last_window_log_step: None,
        }
    }

    /// True while the warm-up runs.
    pub fn warming_up(&self) -> bool {
        self.ended_at.is_none()
    }

    /// The burn-in so far: where it ended, or the cap while it runs.
    pub fn burn_in(&self) -> u32 {
        self.ended_at.unwrap_or(self.cap)
    }

    /// Records one warm-up iteration's step size and trajectory length (None where they do not
    /// adapt).
    pub fn record(&mut self, step: Option<f32>, length: Option<f64>) {
        if !self.warming_up() {
            return;
        }
        self.window_log_step += step.map_or(0.0, |s| (s as f64).ln_portable());
        self.window_log_length += length.map_or(0.0, f64::ln_portable);
        self.window_iterations += 1;
    }

    /// After outer iteration `outer`'s draws are traced: ends the warm-up at the cap, or at a
    /// window's end whose check passes (`target`: the adapted acceptance, None when the step
    /// size does not adapt; `chees`: T adapts). True when the warm-up ends at `outer`.
    pub fn after_iteration(
        &mut self,
        outer: u32,
        trace: &TraceView,
        target: Option<f64>,
        chees: bool,
    ) -> bool {
        if !self.warming_up() {
            return false;
        }
        let window_end = outer.is_multiple_of(self.window);
        if window_end && outer < self.cap {
            let n = self.window_iterations.max(1) as f64;
            let log_step = target.map(|_| self.window_log_step / n);
            let log_length = chees.then(|| self.window_log_length / n);
            if outer >= 2 * self.window {
                let check = self.check(outer, trace, target, log_step, log_length);
                self.checks += 1;
                self.last_check = Some(check);
                if check.settled {
                    self.settled = true;
                    self.ended_at = Some(outer);
                }
            }
            self.previous_log_step = log_step;
            self.previous_log_length = log_length;
            self.last_window_log_step = log_step;
            self.window_log_step = 0.0;
            self.window_log_length = 0.0;
            self.window_iterations = 0;
        }
        if outer >= self.cap && self.ended_at.is_none() {
            self.ended_at = Some(self.cap);
        }
        self.ended_at == Some(outer)
    }

    fn check(
        &self,
        outer: u32,
        trace: &TraceView,
        target: Option<f64>,
        log_step: Option<f64>,
        log_length: Option<f64>,
    ) -> SettleCheck {
        let b = (outer - self.window, outer);
        let a = (outer - 2 * self.window, outer - self.window);
        let acceptance = window_acceptance(trace, b);
        let change = |now: Option<f64>, before: Option<f64>| match (now, before) {
            (Some(x), Some(y)) => Some((x - y).abs()),
            (Some(_), None) => Some(f64::INFINITY),
            _ => None,
        };
        let step_change = change(log_step, self.previous_log_step);
        let length_change = change(log_length, self.previous_log_length);
        let drift_t = max_drift_t(trace, a, b);
        let adapted = target.is_none_or(|t| (acceptance - t).abs() <= ACCEPTANCE_TOLERANCE)
            && step_change.is_none_or(|c| c <= LOG_CHANGE)
            && length_change.is_none_or(|c| c <= LOG_CHANGE);
        SettleCheck {
            iteration: outer,
            acceptance,
            step_change,
            length_change,
            drift_t,
            settled: adapted && drift_t <= DRIFT_T_LIMIT,
        }
    }
}

/// The traced iterations (indices into the trace) whose outer iteration lies in (from, to].
fn traced_in(trace: &TraceView, (from, to): (u32, u32)) -> std::ops::Range<usize> {
    let s = trace.stride.max(1);
    let traced = trace.energies.len() / trace.chains.max(1);
    let first = (from / s) as usize; // outer (j+1)·s > from ⇔ j ≥ from / s
    let last = ((to / s) as usize).min(traced); // (j+1)·s ≤ to ⇔ j < to / s
    first.min(last)..last
}

/// The mean of min(1, α) over the chains and traced iterations of a window (NaN counts 0).
fn window_acceptance(trace: &TraceView, window: (u32, u32)) -> f64 {
    let rows = traced_in(trace, window);
    let c = trace.chains;
    let values = &trace.log_alpha[rows.start * c..rows.end * c];
    super::mean_acceptance(values)
}

/// The largest |t| over the traced quantities of the chains' paired differences of window
/// means, B minus A; infinite when a window holds no traced iteration or there is one chain.
fn max_drift_t(trace: &TraceView, a: (u32, u32), b: (u32, u32)) -> f64 {
    let (ra, rb) = (traced_in(trace, a), traced_in(trace, b));
    let c = trace.chains;
    if ra.is_empty() || rb.is_empty() || c < 2 {
        return f64::INFINITY;
    }
    // Quantity q of chain `chain` at traced row j.
    let energy = |j: usize, chain: usize, _: usize| trace.energies[j * c + chain] as f64;
    let projection = |j: usize, chain: usize, q: usize| {
        trace.projections[(j * c + chain) * trace.per_chain + q] as f64
    };
    let noise = |j: usize, chain: usize, _: usize| trace.noise[j * c + chain] as f64;
    let mut worst: f64 = paired_t(c, &ra, &rb, |j, ch| energy(j, ch, 0));
    for q in 0..trace.per_chain {
        worst = worst.max(paired_t(c, &ra, &rb, |j, ch| projection(j, ch, q)));
    }
    if !trace.noise.is_empty() {
        worst = worst.max(paired_t(c, &ra, &rb, |j, ch| noise(j, ch, 0)));
    }
    worst
}

/// |mean(d)| / (sd(d) / √C) of the chains' differences d = mean over `rb` − mean over `ra`;
/// 0 when every difference is 0, infinite when they are equal and not 0 (or not finite).
fn paired_t(
    chains: usize,
    ra: &std::ops::Range<usize>,
    rb: &std::ops::Range<usize>,
    value: impl Fn(usize, usize) -> f64,
) -> f64 {
    let window_mean = |r: &std::ops::Range<usize>, ch: usize| {
        r.clone().map(|j| value(j, ch)).sum::<f64>() / r.len() as f64
    };
    let d: Vec<f64> = (0..chains)
        .map(|ch| window_mean(rb, ch) - window_mean(ra, ch))
        .collect();
    let n = d.len() as f64;
    let mean = d.iter().sum::<f64>() / n;
    let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    if !(mean.is_finite() && var.is_finite()) {
        return f64::INFINITY;
    }
    if mean == 0.0 {
        return 0.0;
    }
    if var <= 0.0 {
        return f64::INFINITY;
    }
    mean.abs() / (var / n).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace of `chains` chains over `iterations`, each quantity value(outer, chain).
    fn trace_of(
        chains: usize,
        iterations: u32,
        value: impl Fn(u32, usize) -> f32,
    ) -> (Vec<f64>, Vec<f32>, Vec<f32>) {
        let mut energies = Vec::new();
        let mut projections = Vec::new();
        for outer in 1..=iterations {
            for c in 0..chains {
                energies.push(value(outer, c));
                projections.extend([value(outer, c); 2]);
            }
        }
        let log_alpha = vec![-0.3f64; energies.len()];
        (log_alpha, energies, projections)
    }

    /// Noise that is the same law at every iteration: chain c's level plus a hashed jitter.
    fn stationary(outer: u32, chain: usize) -> f32 {
        let h = (outer as u64 * 2654435761 + chain as u64 * 40503) % 1000;
        chain as f32 * 10.0 + h as f32 / 1000.0
    }

    fn run_monitor(
        chains: usize,
        cap: u32,
        value: impl Fn(u32, usize) -> f32,
        target: Option<f64>,
    ) -> BurnInMonitor {
        let (log_alpha, energies, projections) = trace_of(chains, cap, &value);
        let mut m = BurnInMonitor::new(AutoBurnIn { cap });
        for outer in 1..=cap {
            let rows = outer as usize * chains;
            let view = TraceView {
                chains,
                stride: 1,
                log_alpha: &log_alpha[..rows],
                energies: &energies[..rows],
                projections: &projections[..rows * 2],
                per_chain: 2,
                noise: &[],
            };
            m.record(Some(0.1), None);
            if m.after_iteration(outer, &view, target, false) {
                break;
            }
        }
        m
    }

    #[test]
    fn a_stationary_trace_settles_at_the_second_window() {
        let m = run_monitor(32, 400, stationary, None);
        assert_eq!(m.window, 20);
        assert!(m.settled, "{:?}", m.last_check);
        assert_eq!(m.ended_at, Some(40));
    }

    #[test]
    fn a_drifting_trace_runs_to_the_cap_and_says_so() {
        // Every chain's level rises with the iteration, well above the jitter.
        let m = run_monitor(32, 200, |o, c| stationary(o, c) + 0.05 * o as f32, None);
        assert!(!m.settled);
        assert_eq!(m.ended_at, Some(200));
        assert!(m.last_check.unwrap().drift_t > DRIFT_T_LIMIT);
    }

    #[test]
    fn a_drift_that_stops_settles_after_it_stops() {
        // Rises until iteration 100, then stays: the check after 100 + 2 windows passes.
        let value = |o: u32, c| stationary(o, c) + 0.05 * o.min(100) as f32;
        let m = run_monitor(32, 400, value, None);
        assert!(m.settled);
        let end = m.ended_at.unwrap();
        assert!((120..=160).contains(&end), "ended at {end}");
    }

    #[test]
    fn acceptance_off_target_does_not_settle() {
        // exp(−0.3) = 0.74: within 0.05 of 0.75, not of 0.574.
        assert!(run_monitor(16, 400, stationary, Some(0.75)).settled);
        assert!(!run_monitor(16, 400, stationary, Some(0.574)).settled);
    }

    #[test]
    fn a_thinned_trace_maps_rows_to_iterations() {
        let view = TraceView {
            chains: 1,
            stride: 4,
            log_alpha: &[0.0; 10],
            energies: &[0.0; 10],
            projections: &[],
            per_chain: 0,
            noise: &[],
        };
        // Rows j are iterations 4, 8, …, 40: (8, 20] holds 12, 16, 20 = rows 2, 3, 4.
        assert_eq!(traced_in(&view, (8, 20)), 2..5);
        assert_eq!(traced_in(&view, (0, 3)), 0..0);
        assert_eq!(traced_in(&view, (36, 80)), 9..10);
    }
}
