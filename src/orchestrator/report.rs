//! Pieces of a run's report.json: the MH and step notes, the automatic burn-in, the adaptation, the prior's and the noise's state, the LASSO encodings, the dataset; and the picture layout shared by the runs.

use serde_json::{json, Value};

use crate::io::Dataset;

/// Why every proposal was accepted with MH on (then MH changed nothing, and the run equals one
/// without it), or None: at the paper's pixel scale the linearised ratio of Algorithm 3 is
/// positive for every RMLD move, which goes downhill toward the (class) mean image.
pub fn mh_note(mh: bool, method: crate::methods::Method, acceptance: f64) -> Option<String> {
    (mh && acceptance >= 1.0 && method == crate::methods::Method::Rmld).then(|| {
        "every proposal was accepted, so the Metropolis-Hastings correction changed nothing here \
         (the run equals one without it, `no_mh`): at this pixel scale each RMLD move goes \
         downhill toward the class mean image and Algorithm 3's linearised ratio is positive; \
         see README, \"Pixel scale and the defaults\""
            .to_string()
    })
}

/// The automatic burn-in for the report: where it ended, whether it settled, the last check's
/// measurements and the thresholds they were held to.
pub fn burn_in_json(monitor: &super::BurnInMonitor) -> Value {
    use super::burn_in::{ACCEPTANCE_TOLERANCE, DRIFT_T_LIMIT, LOG_CHANGE};
    json!({
        "cap": monitor.cap,
        "window": monitor.window,
        "ended_at": monitor.ended_at,
        "settled": monitor.settled,
        "checks": monitor.checks,
        "last_check": monitor.last_check,
        "criteria": {
            "acceptance_within": ACCEPTANCE_TOLERANCE,
            "log_step_and_length_change_at_most": LOG_CHANGE,
            "drift_t_at_most": DRIFT_T_LIMIT,
            "method": "docs/adaptation.md, \"Automatic burn-in\"",
        },
    })
}

/// The automatic burn-in's summary line: where the warm-up ended and why.
pub fn burn_in_line(monitor: &super::BurnInMonitor) -> String {
    burn_in_line_with(
        monitor,
        "give a longer run (--samples) or a larger cap (--burn-in auto:CAP)",
    )
}

/// `burn_in_line` with `remedy` as the advice when the warm-up did not settle (augment's cap is
/// its own, not a share of the samples).
pub fn burn_in_line_with(monitor: &super::BurnInMonitor, remedy: &str) -> String {
    let check = monitor.last_check.map_or(String::new(), |c| {
        let mut parts = vec![format!("drift |t| {:.2}", c.drift_t)];
        if c.step_change.is_some() {
            parts.push(format!("acceptance {:.3}", c.acceptance));
        }
        if let Some(s) = c.step_change {
            parts.push(format!("log-step change {s:.3}"));
        }
        if let Some(l) = c.length_change {
            parts.push(format!("log-length change {l:.3}"));
        }
        format!(
            " (last check after iteration {}: {})",
            c.iteration,
            parts.join(", ")
        )
    });
    match monitor.ended_at {
        Some(end) if monitor.settled => format!(
            "burn-in: automatic, settled after {end} of at most {} iterations{check}",
            monitor.cap
        ),
        Some(end) => format!(
            "burn-in: automatic, did not settle within its cap of {end} iterations{check}; the \
             kept draws may still carry the chains' starts: {remedy}"
        ),
        None => format!(
            "burn-in: automatic, still running (at most {} iterations)",
            monitor.cap
        ),
    }
}

/// The step size's warm-up adaptation for the report: the targets, the step it froze at and the
/// warm-up's mean acceptance; None for a run that did not adapt.
/// With per-class steps, `classes` (per class: its step, its chains' warm-up acceptance) is added,
/// labelled by `labels` (the classes' label values, in the chains' class order) when given, and
/// `step_size` is their geometric mean.
pub fn adaptation_json(run: &super::SampleRun, labels: Option<&[u32]>) -> Option<Value> {
    let a = run.adaptation.as_ref()?;
    let classes = run.class_steps.as_ref().map(|c| {
        c.classes
            .iter()
            .enumerate()
            .map(|(k, s)| {
                json!({
                    "class": labels.and_then(|l| l.get(k)).copied().unwrap_or(k as u32),
                    "step_size": s.step(),
                    "warmup_mean_acceptance": s.mean_acceptance,
                })
            })
            .collect::<Vec<_>>()
    });
    let method = if classes.is_some() {
        "dual averaging per class, on each class's chains (Hoffman & Gelman 2014; Stan's gamma 0.05, t0 10, kappa 0.75)"
    } else {
        "dual averaging across all chains (Hoffman & Gelman 2014; Stan's gamma 0.05, t0 10, kappa 0.75)"
    };
    Some(json!({
        "method": method,
        "classes": classes,
        "target_acceptance": a.target,
        "warmup_iterations": a.iterations,
        "adapted_iterations": a.count,
        "frozen": a.frozen(),
        "initial_step_size": a.initial_step,
        "step_size": a.step(),
        "warmup_mean_acceptance": a.mean_acceptance,
        "trajectory": a.trajectory.map(|t| json!({
            "method": "ChEES (Hoffman, Radul & Sountsov 2021) by Adam on log T across chains, leapfrog counts jittered by the outer iteration's Halton number",
            "initial_length": t.initial_length,
            "length": t.length(),
            "mean_leapfrog_steps_in_warmup": t.mean_steps,
            "max_leapfrog_steps": super::MAX_LEAPFROG_STEPS,
        })),
    }))
}

/// A warning for an exact method (MALA, HMC) whose chains barely moved: acceptance under 5%,
/// with a step size that did not adapt, or whose warm-up was too short for it to get there.
pub fn step_note(
    method: crate::methods::Method,
    mh: bool,
    acceptance: f64,
    adapted: bool,
) -> Option<String> {
    let exact = method != crate::methods::Method::Rmld;
    (exact && mh && acceptance < 0.05).then(|| {
        if adapted {
            format!(
                "warning: acceptance {:.1}%: the step size adapted during the burn-in but not far \
                 enough for this posterior, and the chains hardly moved; give a longer burn-in \
                 (more `samples`: an automatic burn-in takes at most half of them) or a smaller \
                 `eta` to start from",
                100.0 * acceptance
            )
        } else {
            format!(
                "warning: acceptance {:.1}%: the step size `eta` is too large for this posterior \
                 and the chains hardly moved; give a burn-in (`burn_in`, e.g. auto) so the step \
                 size adapts, or a smaller `eta`",
                100.0 * acceptance
            )
        }
    })
}

/// The dataset's description for the report.
pub fn dataset_json(dataset: &Dataset) -> Value {
    json!({
        "source": dataset.source.display().to_string(),
        "n": dataset.n,
        "d": dataset.d,
        "height": dataset.height,
        "width": dataset.width,
        "full_scale": dataset.full_scale,
        "labelled": dataset.labels.is_some(),
    })
}

/// Minimum, quartiles and maximum of per-chain values.
pub fn chain_quantiles(values: &[f64]) -> Value {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return Value::Null;
    }
    v.sort_by(f64::total_cmp);
    let q = |f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
    json!({ "min": q(0.0), "q25": q(0.25), "median": q(0.5), "q75": q(0.75), "max": q(1.0) })
}

/// Columns of the PNG grids: up to 16.
pub fn picture_columns(count: usize) -> usize {
    count.clamp(1, 16)
}

/// The process's peak resident memory (Linux: VmHWM), if the platform tells.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The SSGL prior's block of a report: its settings, the adaptive updates discarded as not
/// finite, and the chains' final latent state summarised (means over chains and coefficients).
pub fn ssgl_json(ssgl: &crate::model::Ssgl, run: &super::SampleRun, p: usize) -> serde_json::Value {
    let width = crate::model::prior::ssgl::stride(p);
    let rows: Vec<&[f32]> = run.prior_state.chunks(width.max(1)).collect();
    let chains = rows.len().max(1) as f64;
    let mean = |f: &dyn Fn(&[f32]) -> f64| rows.iter().map(|r| f(r)).sum::<f64>() / chains;
    serde_json::json!({
        "kind": "ssgl",
        "settings": ssgl,
        "nonfinite_updates_discarded": run.prior_nonfinite.iter().map(|&v| v as u64).sum::<u64>(),
        "final_state": {
            "sigma_mean": mean(&|r| r[3 * p] as f64),
            "delta_mean": mean(&|r| r[3 * p + 1] as f64),
            "rho_mean": mean(&|r| r[..p].iter().map(|&v| v as f64).sum::<f64>() / p.max(1) as f64),
            "rho_above_half_fraction": mean(&|r| {
                r[..p].iter().filter(|&&v| v > 0.5).count() as f64 / p.max(1) as f64
            }),
        },
    })
}

/// The learned noise precision's block of a report (`--noise gibbs`), or None for a fixed σ²:
/// the prior, the posterior mean of τ (and of σ = 1/√τ) over the chains' traced draws after
/// `burn_in`, each chain's mean and last value, R̂ and ESS like any traced quantity, and the
/// trace itself (per traced iteration, one value per chain).
pub fn noise_json(
    noise: &crate::model::NoiseModel,
    run: &super::SampleRun,
    burn_in: u32,
) -> Option<Value> {
    let crate::model::NoiseModel::Gibbs { e, f } = *noise else {
        return None;
    };
    let chains = run.accepted.len().max(1);
    let stride = run.trace_stride.max(1);
    let traced = run.noise_trace.len() / chains;
    let skip = ((burn_in / stride) as usize).min(traced);
    let kept = &run.noise_trace[skip * chains..];
    let per_chain: Vec<Vec<f64>> = (0..chains)
        .map(|c| {
            kept.iter()
                .skip(c)
                .step_by(chains)
                .map(|&v| v as f64)
                .collect()
        })
        .collect();
    let n = kept.len().max(1) as f64;
    let mean = kept.iter().map(|&v| v as f64).sum::<f64>() / n;
    let sigma_mean = kept.iter().map(|&v| 1.0 / (v as f64).sqrt()).sum::<f64>() / n;
    let diagnostics =
        crate::diagnostics::quantity("noise precision", &per_chain, run.timings.sampling_seconds);
    let chain_means: Vec<f64> = per_chain
        .iter()
        .map(|c| c.iter().sum::<f64>() / c.len().max(1) as f64)
        .collect();
    Some(json!({
        "model": "gibbs",
        "prior": { "shape_e": e, "rate_f": f },
        "posterior_mean": if kept.is_empty() { None } else { Some(mean) },
        "posterior_mean_sigma": if kept.is_empty() { None } else { Some(sigma_mean) },
        "draws_per_chain": traced - skip,
        "burn_in_excluded": burn_in,
        "per_chain_mean": chain_means,
        "final": run.noise_precision,
        "rhat": diagnostics.rhat,
        "ess_bulk": diagnostics.ess_bulk,
        "ess_tail": diagnostics.ess_tail,
        "mcse_mean": diagnostics.mcse_mean,
        "trace_stride": stride,
        "trace": run.noise_trace.chunks(chains).collect::<Vec<_>>(),
    }))
}

/// How a run's LASSO encodings stopped: the tolerance, the iteration cap, the encoder, and
/// (CPU) the rows encoded, their mean iterations and those the cap stopped above the tolerance.
pub fn lasso_json(
    tolerance: f32,
    max_iterations: u32,
    stats: Option<crate::backend::EncodeStats>,
) -> Value {
    let mut lasso = json!({
        "tolerance": tolerance,
        "max_iterations": max_iterations,
        "encoder": "fista, every iteration (the backend has no gap stop)",
    });
    if let Some(s) = stats {
        lasso["encoder"] = json!(match s.admm_rows {
            0 => "fista",
            n if n == s.rows => "admm",
            _ => "admm and fista",
        });
        lasso["rows"] = json!(s.rows);
        lasso["mean_iterations"] = json!(s.iterations as f64 / s.rows.max(1) as f64);
        lasso["rows_at_cap"] = json!(s.capped);
    }
    lasso
}

/// The `lasso` objects of a run's shards as the single run's: rows, iterations and rows at the
/// cap summed, the encoder kept where every shard names the same one; None when a shard has none.
pub fn merged_lasso_json(parts: &[Value]) -> Option<Value> {
    let mut merged = parts.first().filter(|l| l.is_object())?.clone();
    if parts.iter().any(|l| !l.is_object()) {
        return None;
    }
    if parts.iter().any(|l| l["encoder"] != merged["encoder"]) {
        merged["encoder"] = json!("admm and fista");
    }
    let counts = |l: &Value| -> Option<(u64, u64, u64)> {
        let rows = l["rows"].as_u64()?;
        // mean × rows is the shard's whole number of iterations, up to rounding.
        let iterations = (l["mean_iterations"].as_f64()? * rows as f64).round() as u64;
        Some((rows, iterations, l["rows_at_cap"].as_u64()?))
    };
    if let Some(all) = parts.iter().map(counts).collect::<Option<Vec<_>>>() {
        let (rows, iterations, capped) = all.iter().fold((0, 0, 0), |(r, i, c), &(r2, i2, c2)| {
            (r + r2, i + i2, c + c2)
        });
        merged["rows"] = json!(rows);
        merged["mean_iterations"] = json!(iterations as f64 / rows.max(1) as f64);
        merged["rows_at_cap"] = json!(capped);
    }
    Some(merged)
}

/// Per class of an augmentation: label, counts, chains, acceptance and the distance its chains
/// moved.
pub fn class_report(
    plan: &super::AugmentPlan,
    sink: &super::AugmentSink,
    run: &super::SampleRun,
) -> Value {
    let distances = run.distances_moved();
    let mut first_chain = 0;
    let mut classes = Vec::new();
    for (k, class) in plan.classes.iter().enumerate() {
        let chains = first_chain..first_chain + class.chains;
        let accepted: u64 = run.accepted[chains.clone()].iter().map(|&a| a as u64).sum();
        let proposals = (run.completed as u64 * class.chains as u64).max(1);
        let moved = distances.get(chains.clone()).unwrap_or_default();
        let acceptance: Vec<f64> = chains
            .clone()
            .map(|c| run.accepted[c] as f64 / run.completed.max(1) as f64)
            .collect();
        classes.push(json!({
            "label": class.label,
            "originals": class.rows[1],
            "generated": sink.kept[k],
            "chains": class.chains,
            "acceptance_rate": accepted as f64 / proposals as f64,
            "acceptance_per_chain": chain_quantiles(&acceptance),
            "mean_distance_moved": moved.iter().sum::<f64>() / moved.len().max(1) as f64,
        }));
        first_chain = chains.end;
    }
    Value::Array(classes)
}

/// An augmentation's warm-up as summary lines: the automatic burn-in's end, the steps adapted
/// per class and ChEES's trajectory length.
pub fn class_warm_up_lines(chains: &super::SampleRun) -> Vec<String> {
    let mut lines: Vec<String> = chains
        .burn_in
        .as_ref()
        .map(|m| burn_in_line_with(m, "give a larger cap (--burn-in auto:CAP)"))
        .into_iter()
        .collect();
    if let (Some(a), Some(c)) = (&chains.adaptation, &chains.class_steps) {
        let steps: Vec<f32> = c.classes.iter().map(|s| s.step()).collect();
        let (low, high) = steps
            .iter()
            .fold((f32::INFINITY, 0f32), |(l, h), &s| (l.min(s), h.max(s)));
        lines.push(format!(
            "step size adapted per class over {} burn-in iterations: {:.4e} → {low:.4e} to \
             {high:.4e} (dual averaging on each class's chains toward mean acceptance {}), \
             frozen for the kept draws; report.json's adaptation.classes lists them",
            a.count, a.initial_step, a.target
        ));
        if let Some(t) = a.trajectory {
            lines.push(format!(
                "trajectory length adapted by ChEES across classes: {:.4} → {:.4}",
                t.initial_length,
                t.length()
            ));
        }
    }
    lines
}
