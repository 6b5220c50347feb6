//! What a sampling run writes beside its draws once its chains stop: the dictionary, the picture of its chains, its per-draw statistics, report.json and the summary lines.

use std::path::Path;

use serde_json::{json, Value};

use super::report::{self, chain_quantiles, dataset_json, peak_rss_bytes, picture_columns};
use super::{draw_stats, KeepPolicy, SampleRun, SamplerSettings};
use crate::diagnostics::degenerate::Degenerate;
use crate::io::{self, Dataset};
use crate::model::{Target, TargetKind};
use crate::Result;

/// A sampling run as its outputs describe it.
pub struct SampleOutputs<'a> {
    /// The folder the files are written into (the run's staging folder).
    pub out: &'a Path,
    /// The output folder they are published into (named in the summary).
    pub published: &'a Path,
    /// The run's id (report.json's `run_id`).
    pub run_id: &'a str,
    /// The data (its labels group the chains' starts for nested R-hat).
    pub dataset: &'a Dataset,
    /// The posterior the chains sampled, and its kind.
    pub target: (&'a Target, TargetKind),
    /// The dictionary's description (`Problem::dictionary_json`).
    pub dictionary: Value,
    /// The sampler's settings, which draws were kept, the fixed burn-in (or the automatic one's
    /// cap) and the pixel range of the pictures.
    pub settings: &'a SamplerSettings,
    pub keep: KeepPolicy,
    pub burn_in: u32,
    pub pixel_max: f32,
    /// Whether the per-draw statistics are written (a shard's are written by `merge`).
    pub per_draw_stats: bool,
    /// The device (report.json's `backend`) and the run's seconds so far.
    pub info: &'a Value,
    /// The run's estimated peak host memory (`measure::memory`), written
    /// beside the measured peak.
    pub peak_rss_estimate: Option<f64>,
    /// The signs of a degenerate run seen (`diagnostics::degenerate`), written as
    /// report.json's `degenerate`.
    pub degenerate: Option<&'a Degenerate>,
    pub seconds: f64,
}

/// Writes the dictionary, samples.png, the per-draw statistics and report.json of `run`, whose
/// draws files hold `kept` draws; returns the report and the summary lines.
pub fn write_sample_outputs(
    o: &SampleOutputs,
    run: &SampleRun,
    kept: usize,
) -> Result<(Value, Vec<String>)> {
    let (target, settings) = (o.target.0, o.settings);
    // The burn-in the run made: an automatic one's end (its cap if interrupted before it).
    let burn_in = run.burn_in.as_ref().map_or(o.burn_in, |m| m.burn_in());
    let (d, p, c, k) = (target.d(), target.p(), settings.chains, run.completed);
    io::write_npy_f32(&o.out.join("dictionary.npy"), &[d, p], &target.dictionary.a)?;
    let caption = write_picture(o, run)?;
    let acceptance = run.acceptance_rate();
    let per_chain: Vec<f64> = run
        .accepted
        .iter()
        .map(|&a| a as f64 / k.max(1) as f64)
        .collect();
    let moved = run.mean_distance_moved();
    let diagnostics = diagnostics(o.dataset, run, burn_in);
    let sample_stats = match o.per_draw_stats {
        true => draw_stats::write_sample_stats(o.out, run, settings, o.keep, burn_in)?,
        false => Value::Null,
    };
    let mut report = json!({
        "command": "sample",
        "rmld_version": env!("CARGO_PKG_VERSION"),
        "rmld_build": crate::BUILD,
        "run_id": o.run_id,
        "settings": settings,
        "lambda": target.lam,
        "pixel_max": o.pixel_max,
        "keep": o.keep,
        "burn_in": burn_in,
        "dataset": dataset_json(o.dataset),
        "dictionary": o.dictionary,
        "backend": o.info,
        "completed_iterations": run.completed,
        "interrupted": run.interrupted,
        "kept_samples": kept,
        "timings": { "total_seconds": o.seconds, "phases": run.timings },
        "peak_rss_bytes": peak_rss_bytes(),
        "peak_rss_estimate_bytes": o.peak_rss_estimate,
        "acceptance": {
            "overall": acceptance,
            "per_chain": per_chain,
            "per_chain_quantiles": chain_quantiles(&per_chain),
            "divergent_proposals": run.divergent.iter().sum::<u32>(),
        },
        "mean_distance_moved_from_start": moved,
        "mh_note": report::mh_note(settings.mh, settings.dynamics.method, acceptance),
        "diagnostics": diagnostics,
        "sample_stats": sample_stats,
        "start_indices": run.start_indices,
        "outputs": {
            "codes.npy": [kept, c, p],
            "images.npy": [kept, c, d],
            "dictionary.npy": [d, p],
            "samples.png": caption,
        },
    });
    let method = settings.dynamics.method;
    let adapted = run.adaptation.is_some();
    let step_note = report::step_note(method, settings.mh, acceptance, adapted);
    if let Some(adaptation) = report::adaptation_json(run, None) {
        report["adaptation"] = adaptation;
    }
    if let Some(note) = &step_note {
        report["step_note"] = note.clone().into();
    }
    if let Some(monitor) = &run.burn_in {
        report["burn_in_auto"] = report::burn_in_json(monitor);
    }
    if let Some(ssgl) = target.prior.ssgl() {
        report["prior"] = report::ssgl_json(ssgl, run, p);
    }
    if let Some(noise) = report::noise_json(&target.noise, run, burn_in) {
        report["noise"] = noise;
    }
    if let Some(degenerate) = o.degenerate {
        report["degenerate"] = json!(degenerate);
    }
    io::write_json_atomic(&o.out.join("report.json"), &report)?;
    let mut summary = vec![
        format!(
            "rmld sample: {c} chains × {k} outer iterations ({kept} kept, {d} → {p} atoms) on {} \
             in {:.1} s; acceptance {:.1}%, mean distance moved from start {moved:.3}; wrote {}",
            o.info["device"].as_str().unwrap_or("?"),
            o.seconds,
            100.0 * acceptance,
            o.published.display()
        ),
        format!("{}\n  {}", diagnostics.verdict, diagnostics.summary_line()),
    ];
    summary.extend(warm_up_lines(run));
    summary.extend(step_note);
    if let Some(prior) = report.get("prior") {
        let state = &prior["final_state"];
        summary.push(format!(
            "ssgl prior: sigma {:.4}, delta {:.4}, mean rho {:.4} (chain means); {} non-finite \
             update(s) discarded",
            state["sigma_mean"].as_f64().unwrap_or(f64::NAN),
            state["delta_mean"].as_f64().unwrap_or(f64::NAN),
            state["rho_mean"].as_f64().unwrap_or(f64::NAN),
            prior["nonfinite_updates_discarded"]
        ));
    }
    Ok((report, summary))
}

/// The convergence diagnostics of the draws after `burn_in`, with nested R-hat's superchains:
/// chains started from images of one class (or, without labels, from one image).
fn diagnostics(
    dataset: &Dataset,
    run: &SampleRun,
    burn_in: u32,
) -> crate::diagnostics::DiagnosticsReport {
    let start_groups: Option<(Vec<usize>, &str)> =
        run.start_indices
            .as_ref()
            .map(|starts| match &dataset.labels {
                Some(labels) => (
                    starts.iter().map(|&i| labels[i] as usize).collect(),
                    "chains started from images of one class",
                ),
                None => (starts.clone(), "chains started from one image"),
            });
    let scope = crate::diagnostics::Scope {
        burn_in,
        superchains: start_groups
            .as_ref()
            .map(|(ids, what)| (ids.as_slice(), *what)),
    };
    crate::diagnostics::summarize_scoped(run, run.timings.sampling_seconds, scope)
}

/// The warm-up's summary lines: the automatic burn-in, the adapted step size and trajectory.
fn warm_up_lines(run: &SampleRun) -> Vec<String> {
    let mut lines: Vec<String> = run
        .burn_in
        .as_ref()
        .map(report::burn_in_line)
        .into_iter()
        .collect();
    if let Some(a) = &run.adaptation {
        lines.push(format!(
            "step size adapted over {} burn-in iterations: {:.4e} → {:.4e} (dual averaging across \
             chains toward mean acceptance {}), frozen for the kept draws",
            a.count,
            a.initial_step,
            a.step(),
            a.target
        ));
    }
    if let Some(t) = run.adaptation.and_then(|a| a.trajectory) {
        lines.push(format!(
            "trajectory length adapted by ChEES: {:.4} → {:.4} (leapfrog steps ⌈u·T/ε⌉, jittered \
             per iteration; {:.1} on average during the warm-up)",
            t.initial_length,
            t.length(),
            t.mean_steps
        ));
    }
    lines
}

/// samples.png: the real images the chains started from above, the latest samples below,
/// with a caption saying so; returns the caption.
fn write_picture(o: &SampleOutputs, run: &SampleRun) -> Result<String> {
    let (target, settings) = (o.target.0, o.settings);
    let (h, w) = (o.dataset.height, o.dataset.width);
    let (d, c) = (target.d(), settings.chains);
    let observations = &target.observations;
    let columns = picture_columns(c);
    let shown = columns.min(c);
    let real: Vec<f32> = match &run.start_indices {
        Some(idx) => idx
            .iter()
            .take(shown)
            .flat_map(|&i| observations.row(i))
            .collect(),
        None => (0..shown)
            .flat_map(|i| observations.row(i * observations.n / shown))
            .collect(),
    };
    let rows = 4.min(c.div_ceil(columns));
    let generated = &run.final_images[..(rows * columns).min(c) * d];
    let below = generated.len() / d;
    let method = format!("{:?}", settings.dynamics.method).to_lowercase();
    let kind = format!("{:?}", o.target.1).to_lowercase();
    let top = match run.start_indices.is_some() {
        true => format!("the real images chains 1-{shown} started from"),
        false => format!("{shown} real images of the data (the chains started from noise)"),
    };
    let caption = format!(
        "rmld sample, {method} on the {kind} target. Above the grey band: {top}. Below it: \
         chains 1-{below}, row by row, after {} iterations{}.",
        run.completed,
        if settings.mh { "" } else { " (no MH)" }
    );
    io::write_png_grid_captioned(
        &o.out.join("samples.png"),
        &[(real.as_slice(), shown), (generated, below)],
        h,
        w,
        columns,
        (0.0, o.pixel_max),
        (112 / h.max(w)).clamp(1, 8),
        &caption,
    )?;
    Ok(caption)
}
