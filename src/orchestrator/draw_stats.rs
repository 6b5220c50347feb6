//! Per-draw statistics of a sampling run written beside its draws, as ArviZ's `sample_stats`.
//!
//! `rmld sample` writes `sample_stats/NAME.npy`, one (chain, draw) array per statistic, for the
//! draws `codes.npy` holds (the same draws in the same order, but chain-major as ArviZ wants,
//! where `codes.npy` is (draw, chain, p)), with ArviZ's names:
//!
//! | file | dtype | value |
//! |---|---|---|
//! | `acceptance_rate.npy` | `<f8` | min(1, α) of the MH decision whose proposal made the draw (0 for a divergent one; with `--no-mh` the α MH would have used) |
//! | `energy.npy` | `<f4` | U(X) − const of the state the iteration making the draw started from (the potential, as `report.json`'s `energy` quantity) |
//! | `step_size.npy` | `<f4` | the step size of that iteration (`eta`: RMLD's eta, MALA's h, HMC's ε; adapted runs: the frozen step, NaN for a kept warm-up draw) |
//! | `diverging.npy` | `|u1` | 1 where the proposal was divergent (a non-finite energy or MH term; always rejected) |
//! | `n_steps.npy` | `<i8` | gradient steps of the proposal: HMC's leapfrog steps L, RMLD's momentum steps T, 1 for MALA |
//!
//! They come from the run's trace, which keeps every iteration until the run passes twice
//! `orchestrator::TRACE_CAP` iterations; past that the trace keeps every `stride`-th iteration
//! only, and where a kept draw's iteration is not traced the files are not written (the report's
//! `sample_stats` entry says so).

use std::path::Path;

use serde_json::json;

use crate::io;
use crate::math::Portable;
use crate::orchestrator::{KeepPolicy, SampleRun, SamplerSettings};
use crate::Result;

/// The folder, inside a sampling run's output folder, that holds the per-draw statistics.
pub const SAMPLE_STATS_DIR: &str = "sample_stats";

/// The statistics' file names inside [`SAMPLE_STATS_DIR`].
pub const SAMPLE_STATS_FILES: &[&str] = &[
    "acceptance_rate.npy",
    "energy.npy",
    "step_size.npy",
    "diverging.npy",
    "n_steps.npy",
];

/// Per chain and kept draw (chain-major), the per-draw statistics of a run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PerDraw {
    /// Chains.
    pub chains: usize,
    /// Kept draws per chain.
    pub draws: usize,
    /// min(1, α), (chain, draw).
    pub acceptance_rate: Vec<f64>,
    /// U(X) entering the iteration, (chain, draw).
    pub energy: Vec<f32>,
    /// Step size, (chain, draw).
    pub step_size: Vec<f32>,
    /// 1 where divergent, (chain, draw).
    pub diverging: Vec<u8>,
    /// Gradient steps of the proposal, (chain, draw).
    pub n_steps: Vec<i64>,
}

/// The gradient steps one proposal of `settings`' method takes.
pub(crate) fn steps_per_proposal(settings: &SamplerSettings) -> i64 {
    let dynamics = &settings.dynamics;
    dynamics.method.gradient_steps(dynamics) as i64
}

/// The statistics of the draws `keep` kept among the run's completed iterations, or `None`
/// when one of them was not traced (a run past twice `TRACE_CAP` iterations).
pub(crate) fn per_draw(
    run: &SampleRun,
    settings: &SamplerSettings,
    keep: KeepPolicy,
    burn_in: u32,
) -> Option<PerDraw> {
    let chains = settings.chains;
    let stride = run.trace_stride.max(1);
    let traced = run.log_alpha.len() / chains.max(1);
    let kept: Vec<u32> = (1..=run.completed)
        .filter(|&k| keep.keeps(k, burn_in, settings.samples))
        .collect();
    // Row i of the trace is outer iteration (i + 1) · stride.
    let rows: Option<Vec<usize>> = kept
        .iter()
        .map(|&k| {
            let row = (k / stride) as usize;
            (k.is_multiple_of(stride) && row >= 1 && row <= traced).then(|| row - 1)
        })
        .collect();
    let rows = rows?;
    if run.energies.len() != run.log_alpha.len() {
        return None;
    }
    let draws = rows.len();
    let mut stats = PerDraw {
        chains,
        draws,
        acceptance_rate: Vec::with_capacity(chains * draws),
        energy: Vec::with_capacity(chains * draws),
        step_size: Vec::with_capacity(chains * draws),
        diverging: Vec::with_capacity(chains * draws),
        n_steps: Vec::with_capacity(chains * draws),
    };
    // An adapted run's draws after the warm-up use the frozen step size (and, with ChEES, that
    // iteration's jittered leapfrog count); a warm-up draw's step size was not traced: NaN.
    let (step, steps): (Vec<f32>, Vec<i64>) = kept
        .iter()
        .map(|&k| match &run.adaptation {
            None => (settings.dynamics.eta, steps_per_proposal(settings)),
            Some(a) if !a.frozen() || k <= a.iterations => (f32::NAN, steps_per_proposal(settings)),
            Some(a) => (
                a.step(),
                a.trajectory.map_or(steps_per_proposal(settings), |t| {
                    t.steps_at(k, a.step()) as i64
                }),
            ),
        })
        .unzip();
    for c in 0..chains {
        stats.step_size.extend_from_slice(&step);
        stats.n_steps.extend_from_slice(&steps);
        for &row in &rows {
            let log_alpha = run.log_alpha[row * chains + c];
            let divergent = !log_alpha.is_finite();
            stats.acceptance_rate.push(if divergent {
                0.0
            } else {
                log_alpha.exp_portable().min(1.0)
            });
            stats.diverging.push(divergent as u8);
            stats.energy.push(run.energies[row * chains + c]);
        }
    }
    Some(stats)
}

/// Writes the run's per-draw statistics into `out/sample_stats/` (or, where the trace does not
/// cover every kept draw, writes nothing) and returns the report's `sample_stats` entry.
pub(crate) fn write_sample_stats(
    out: &Path,
    run: &SampleRun,
    settings: &SamplerSettings,
    keep: KeepPolicy,
    burn_in: u32,
) -> Result<serde_json::Value> {
    let Some(stats) = per_draw(run, settings, keep, burn_in) else {
        return Ok(json!({
            "written": false,
            "why": format!(
                "the trace keeps every {}-th iteration of this {}-iteration run (past {} \
                 iterations it thins itself), so not every kept draw has its statistics",
                run.trace_stride,
                run.completed,
                2 * crate::orchestrator::TRACE_CAP
            ),
        }));
    };
    let dir = out.join(SAMPLE_STATS_DIR);
    std::fs::create_dir_all(&dir).map_err(|source| crate::Error::Output {
        path: dir.clone(),
        source,
    })?;
    let shape = [stats.chains, stats.draws];
    io::write_npy_f64(
        &dir.join("acceptance_rate.npy"),
        &shape,
        &stats.acceptance_rate,
    )?;
    io::write_npy_f32(&dir.join("energy.npy"), &shape, &stats.energy)?;
    io::write_npy_f32(&dir.join("step_size.npy"), &shape, &stats.step_size)?;
    io::write_npy_u8(&dir.join("diverging.npy"), &shape, &stats.diverging)?;
    io::write_npy_i64(&dir.join("n_steps.npy"), &shape, &stats.n_steps)?;
    let mean =
        stats.acceptance_rate.iter().sum::<f64>() / stats.acceptance_rate.len().max(1) as f64;
    Ok(json!({
        "written": true,
        "folder": SAMPLE_STATS_DIR,
        "files": SAMPLE_STATS_FILES,
        "shape": shape,
        "layout": "(chain, draw) over the draws codes.npy holds; ArviZ's sample_stats names",
        "mean_acceptance_rate": mean,
        "divergent": stats.diverging.iter().map(|&d| d as u64).sum::<u64>(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of 3 chains × `k` iterations whose traced log α encodes (iteration, chain).
    fn run(k: u32, stride: u32) -> (SampleRun, SamplerSettings) {
        let chains = 3;
        let rows = (k / stride) as usize;
        let mut log_alpha = Vec::new();
        let mut energies = Vec::new();
        for row in 0..rows {
            for c in 0..chains {
                let outer = (row as u32 + 1) * stride;
                log_alpha.push(-(outer as f64) - c as f64 / 10.0);
                energies.push(outer as f32 * 100.0 + c as f32);
            }
        }
        log_alpha[chains] = f64::NAN; // iteration `stride`·2, chain 0 diverged
        let run = SampleRun {
            completed: k,
            trace_stride: stride,
            log_alpha,
            energies,
            ..SampleRun::default()
        };
        let settings = SamplerSettings {
            chains,
            samples: k,
            adapt: None,
            auto_burn_in: None,
            dynamics: crate::methods::DynamicsSettings::default(),
            mh: true,
            discount: 1.0,
            init: crate::orchestrator::Init::Lasso,
            lasso_iterations: 1,
        };
        (run, settings)
    }

    #[test]
    fn the_statistics_follow_the_kept_draws_chain_major() {
        let (run, settings) = run(6, 1);
        let stats = per_draw(&run, &settings, KeepPolicy::All, 2).unwrap();
        assert_eq!((stats.chains, stats.draws), (3, 4));
        // Chain 1's draws are iterations 3..=6.
        let energy: Vec<f32> = stats.energy[4..8].to_vec();
        assert_eq!(energy, vec![301.0, 401.0, 501.0, 601.0]);
        for (i, &a) in stats.acceptance_rate[4..8].iter().enumerate() {
            let want = (-(3.0 + i as f64) - 0.1).exp_portable();
            assert!((a - want).abs() < 1e-15, "draw {i}: {a} vs {want}");
        }
        let every = per_draw(&run, &settings, KeepPolicy::Every(2), 1).unwrap();
        assert_eq!(every.draws, 2); // iterations 3 and 5
        assert_eq!(every.energy[..2], [300.0, 500.0]);
        let last = per_draw(&run, &settings, KeepPolicy::Last, 0).unwrap();
        assert_eq!(last.energy, vec![600.0, 601.0, 602.0]);
    }

    #[test]
    fn a_divergent_proposal_has_acceptance_zero() {
        let (run, settings) = run(4, 1);
        let stats = per_draw(&run, &settings, KeepPolicy::All, 0).unwrap();
        // Chain 0, iteration 2.
        assert_eq!(stats.diverging[1], 1);
        assert_eq!(stats.acceptance_rate[1], 0.0);
        assert_eq!(stats.diverging.iter().map(|&d| d as u32).sum::<u32>(), 1);
    }

    #[test]
    fn a_thinned_trace_that_misses_kept_draws_gives_none() {
        let (run, settings) = run(8, 2);
        assert!(per_draw(&run, &settings, KeepPolicy::All, 0).is_none());
        // Every other draw after an even burn-in is traced.
        let stats = per_draw(&run, &settings, KeepPolicy::Every(2), 2).unwrap();
        assert_eq!(stats.energy[..3], [400.0, 600.0, 800.0]);
    }
}
