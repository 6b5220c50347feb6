//! An augmentation's report.json and summary lines: the settings, the device, the chains' acceptance and convergence per class, the quality metrics, the phases' times.

use serde_json::{json, Value};

use super::load::{Device, Loaded};
use super::sampling::Generated;
use crate::backend::EncodeStats;
use crate::diagnostics::per_class as cd;
use crate::io::Output;
use crate::methods::AugmentMethod;
use crate::model::TargetKind;
use crate::orchestrator::report as parts;
use crate::session::problem::dictionary_json;
use crate::session::settings::Preset;
use crate::session::Outcome;
use crate::Result;

/// The report of a whole run (or a merge), as far as the samples tell it, and the verdict on
/// the chains' convergence per class (a summary line).
pub(super) fn report(
    run: &Loaded,
    (info, estimate): (&Value, &Value),
    generated: &Generated,
    g: usize,
) -> (Value, Option<String>) {
    let (args, settings, problem) = (&run.args, &run.whole, &run.problem);
    // Deform draws along each anchor's transformation tangents: no chain target.
    let target = (args.method != AugmentMethod::Deform).then_some(args.problem.target);
    let Generated {
        run: chains,
        burn_in,
        ..
    } = generated;
    let class_labels: Vec<u32> = run.plan.classes.iter().map(|c| c.label).collect();
    let seconds = generated.seconds;
    let mut report = json!({
        "command": "augment",
        "rmld_version": env!("CARGO_PKG_VERSION"),
        "rmld_build": crate::BUILD,
        "preset": args.preset,
        "method": args.method,
        "mh": args.method.moves().then_some(!args.dynamics.no_mh),
        "settings": settings,
        "ratio": args.ratio,
        "burn_in": burn_in,
        "burn_in_auto": chains.burn_in.as_ref().map(parts::burn_in_json),
        "adaptation": parts::adaptation_json(chains, Some(&class_labels)),
        "postprocess": args.postprocess(),
        "shade": (args.method == AugmentMethod::Deform).then_some(args.shade),
        // On graded surfaces the preset's shading halves as a class grows from 100 to 200.
        "shade_by_class": run.shades_by_class().then(|| shade_by_class(run)),
        "elastic": (args.method == AugmentMethod::Deform).then_some(args.elastic),
        // Deform draws a set of dark ink on a bright background inverted.
        "background": (args.method == AugmentMethod::Deform)
            .then_some(if run.ink.bright { "bright" } else { "dark" }),
        // Past four new images per original deform draws elastic distortions of strokes; on
        // surfaces each class's tangent spreads are learned from its images.
        "ink": (args.method == AugmentMethod::Deform)
            .then_some(if run.ink.strokes { "strokes" } else { "surfaces" }),
        // Whole pixels each draw's anchor moves by (0: drawn along the shift tangents).
        "anchor_move_px": (args.method == AugmentMethod::Deform)
            .then(|| run.ink.anchor_move_px(run.problem.dataset.width)),
        "tangent_spreads": (args.method == AugmentMethod::Deform).then_some(
            if run.ink.learns_spreads() { "learned from each class" } else { "fixed" },
        ),
        "generated_codes": if run.kernel || (args.method == AugmentMethod::Deform && !args.reencode) {
            "none"
        } else if args.reencode {
            "LASSO codes of the post-processed generated images (--reencode)"
        } else {
            "the chains' positions X"
        },
        "pixel_max": args.problem.pixel_max,
        "lambda": args.problem.lambda,
        "sigma2": args.problem.sigma2,
        // The tangent span's settings are shown only where the chains' target uses them.
        "target": target,
        "tangent": (target == Some(TargetKind::Tangent))
            .then(|| json!({ "k": args.problem.tangent_k, "scale": args.problem.tangent_scale })),
        "dataset": parts::dataset_json(&run.dataset),
        "dictionary": if run.kernel {
            json!("none: kernel-hmc samples images")
        } else {
            dictionary_json(problem, run.d, run.p)
        },
        "backend": info,
        "original_count": run.originals.n,
        "generated_count": g,
        "interrupted": false,
        "classes": parts::class_report(&run.plan, &generated.sink, chains),
        // Compression and Deform make no proposals: no rate rather than a made-up 0.
        "acceptance_rate": args.method.moves().then(|| chains.acceptance_rate()),
        "mh_note": parts::mh_note(
            settings.mh && args.method.method().is_some(),
            settings.dynamics.method,
            chains.acceptance_rate()
        ),
        "mean_distance_moved": chains.mean_distance_moved(),
        "divergent": chains.divergent.iter().map(|&v| v as u64).sum::<u64>(),
        "timings": chains.timings,
        "generation_seconds": seconds,
        "samples_per_second": g as f64 / seconds.max(1e-9),
        "estimate": estimate,
    });
    if let Some(info) = &generated.amortized {
        report["sampler"] = json!("amortized");
        report["amortized"] = info.clone();
    }
    if let Some(ssgl) = problem.target.prior.ssgl() {
        report["prior"] = parts::ssgl_json(ssgl, chains, problem.target.p());
    }
    // Convergence per class on the post-burn-in draws (compression runs no chains).
    let mut verdict = None;
    if args.method.moves() && !chains.log_alpha.is_empty() {
        let target_kind = args.problem.target;
        let seconds = chains.timings.sampling_seconds;
        let classes = cd::per_class(&run.plan, chains, target_kind, *burn_in, seconds);
        let line = cd::verdict(&classes, args.preset == Some(Preset::Quality));
        report["diagnostics_per_class"] = cd::report_json(&classes, target_kind, &line);
        verdict = Some(line);
    }
    if let Some(noise) = parts::noise_json(&problem.target.noise, chains, *burn_in) {
        report["noise"] = noise;
    }
    (report, verdict)
}

/// How the run ended: the phases' and the run's seconds, the code cache's use by the originals'
/// codes, the test split's and the re-encoding, how the LASSO encodings stopped (None: a
/// backend that does not count them), and the quality line.
pub(super) struct Finished {
    pub phases: Value,
    pub phases_line: String,
    pub seconds: f64,
    pub caches: [&'static str; 3],
    pub lasso: Option<EncodeStats>,
    pub verdict: Option<String>,
    pub quality: Option<String>,
}

/// Completes `report` and writes it; the outcome with the summary lines.
pub(super) fn finish(
    output: &Output,
    mut report: Value,
    run: &Loaded,
    device: &Device,
    generated: &Generated,
    end: Finished,
) -> Result<Outcome> {
    let args = &run.args;
    if let Some(test) = &run.test {
        report["test_count"] = json!(test.n);
    }
    run.fitted.report(&mut report);
    report["lasso"] = parts::lasso_json(
        args.lasso_tolerance,
        args.dynamics.lasso_iterations,
        end.lasso,
    );
    if run.kernel {
        // Its chains start at images and its codes are images: nothing is LASSO-encoded.
        report["lasso"]["encoder"] = json!("none (Kernel HMC encodes nothing)");
    } else if device.backend.is_none() {
        // A merge (the only run without a backend) joins codes its shards encoded.
        report["lasso"]["encoder"] = json!("none in the merge (its shards encoded the codes)");
    }
    report["code_cache"] = json!({
        "folder": args.code_cache,
        "original_codes": end.caches[0],
        "test_codes": end.caches[1],
        "reencoded_codes": end.caches[2],
    });
    report["phase_seconds"] = end.phases;
    report["seconds"] = json!(end.seconds);
    output.report(&report)?;
    let mut summary = vec![first_line(&report, run, device, generated)];
    summary.push(format!("{} (in all {:.1} s)", end.phases_line, end.seconds));
    summary.extend(run.fitted.scale.as_ref().map(|fit| fit.summary()));
    summary.extend(parts::class_warm_up_lines(&generated.run));
    summary.extend(run.fitted.class_notes());
    summary.extend(end.verdict);
    summary.extend(end.quality);
    Ok(Outcome {
        interrupted: false,
        report,
        summary,
        draw_stats: None,
    })
}

/// The summary's first line: what was generated, how fast, where it was written.
fn first_line(report: &Value, run: &Loaded, device: &Device, generated: &Generated) -> String {
    let (args, g, out) = (&run.args, generated.sink.total(), &args_out(run));
    let classes = match run.plan.classes.len() {
        1 => "1 class".to_string(),
        n => format!("{n} classes"),
    };
    if generated.amortized.is_some() {
        return format!(
            "rmld augment (amortized sampler {}): {g} samples of {classes} in {:.2} s \
             of generation ({:.0} samples/s); {} originals; wrote {out}",
            args.model
                .as_deref()
                .unwrap_or(std::path::Path::new("?"))
                .display(),
            report["amortized"]["generation_seconds"]
                .as_f64()
                .unwrap_or(0.0),
            report["amortized"]["samples_per_second"]
                .as_f64()
                .unwrap_or(0.0),
            run.originals.n,
        );
    }
    let seconds = generated.seconds;
    // Deform and compression run no chains: their one-draw "chains" are the samples themselves.
    let (source, acceptance) = if args.method.moves() {
        (
            format!("from {} chains", run.whole.chains),
            format!("acceptance {:.1}%", 100.0 * generated.run.acceptance_rate()),
        )
    } else {
        ("drawn at once".to_string(), "no accept step".to_string())
    };
    format!(
        "rmld augment ({}): {g} samples of {classes} {source} on {} in \
         {seconds:.1} s ({:.0} samples/s, {acceptance}); {} originals; wrote {out}",
        args.method.name(),
        device.info["device"].as_str().unwrap_or("?"),
        g as f64 / seconds.max(1e-9),
        run.originals.n,
    )
}

/// The output folder, as the summary names it.
fn args_out(run: &Loaded) -> String {
    run.args.problem.out.display().to_string()
}

/// Each class's shading on graded surfaces: `[{label, images, shade}]`.
fn shade_by_class(run: &Loaded) -> Value {
    let classes = run.plan.classes.iter().map(|class| {
        let images = class.rows[1] as usize;
        json!({ "label": class.label, "images": images, "shade": super::deform::class_shade(run, images) })
    });
    Value::Array(classes.collect())
}
