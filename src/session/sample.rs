//! Sampling runs and their resumption (`Sampler`), with checkpoints, a run lock and clean stops.
//!
//! The chains stream codes and images to disk, with checkpoints, a lock on the output folder,
//! and a clean stop when the observer asks.

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use crate::backend::Backend;
use crate::io::shards::ShardFiles;
use crate::io::{self, NpyStream};
use crate::orchestrator::join::join_draws;
use crate::orchestrator::report::{chain_quantiles, dataset_json, peak_rss_bytes, picture_columns};
use crate::orchestrator::streams::{resume_stream, SampleStreams};
use crate::orchestrator::{self, memory, Checkpoint, Hooks, SampleRun, SamplerSettings};
use crate::{Error, Result};

use super::observer::{Notice, Observer, Phase};
use super::pipeline::shards::{self, ShardEnd, TRACE};
use super::problem::{load_problem, make_backend, Problem};
use super::settings::SampleSettings;
use super::{outputs, DrawStats, Outcome};
pub(crate) use crate::io::output_folder::remove_if_present;
pub use crate::io::output_folder::{lock_output, CHECKPOINT, LOCK};
pub(crate) use crate::orchestrator::identity::input_hashes as hashes;

/// What a shard of `rmld sample` writes (its part of every output, its trace and manifest).
const SHARD_OUTPUTS: &[&str] = &[
    "codes.npy",
    "images.npy",
    "dictionary.npy",
    "samples.png",
    "report.json",
    CHECKPOINT,
    TRACE,
    io::MANIFEST,
];

/// Runs C chains for K outer iterations and writes codes.npy, images.npy, dictionary.npy,
/// samples.png and report.json into `settings.problem.out` (and checkpoint.rmld every
/// `checkpoint_every` iterations or when stopped early).
#[derive(Clone, Debug)]
pub struct Sampler {
    settings: SampleSettings,
}

impl Sampler {
    /// A sampler with these settings (checked when it runs).
    pub fn new(settings: SampleSettings) -> Self {
        Sampler { settings }
    }

    /// The settings.
    pub fn settings(&self) -> &SampleSettings {
        &self.settings
    }

    /// Runs from the start. A checkpoint an earlier run left in the folder is removed first.
    pub fn run(&self, observer: &dyn Observer) -> Result<Outcome> {
        sample(&self.settings, observer)
    }

    /// Continues the run stopped in `dir` from its checkpoint; the samples equal those of an
    /// uninterrupted run on the same backend.
    pub fn resume(dir: &Path, observer: &dyn Observer) -> Result<Outcome> {
        resume(dir, observer)
    }
}

fn sample(args: &SampleSettings, observer: &dyn Observer) -> Result<Outcome> {
    let started = Instant::now();
    let settings = args.sampler_settings()?;
    let inputs = [
        args.problem.data.as_deref(),
        args.problem.dictionary.as_deref(),
    ];
    let names = match args.problem.shard {
        Some(_) => SHARD_OUTPUTS,
        None => outputs::SAMPLE_OUTPUTS,
    };
    outputs::check_output_folder(&args.problem.out, names, &inputs, args.problem.force)?;
    let problem = load_problem(&args.problem)?;
    let (d, p) = (problem.target.d(), problem.target.p());
    memory::check_fits(
        "chains",
        &format!("{} chains of {p} atoms over {d} pixels", settings.chains),
        memory::sampler_bytes(settings.chains, d, p),
    )?;
    let problem = shard_problem(args, problem)?.with_adapt_iterations(args.burn_in_cap());
    refuse_auto_burn_in_with_adapting_prior(args.auto_burn_in, &problem)?;
    let out = &args.problem.out;
    io::prepare_output_dir(out)?;
    let _lock = lock_output(out)?;
    // A manifest left by an earlier shard here must not vouch for this run's files.
    remove_if_present(&out.join(io::MANIFEST))?;
    // A checkpoint left by an earlier run in this folder must not be resumed over this one.
    remove_if_present(&out.join(CHECKPOINT))?;
    let mut backend = make_backend(
        args.problem.backend,
        observer,
        &problem.target,
        &settings.dynamics,
        settings.chains,
    )?;
    let state = orchestrator::start(backend.as_mut(), &problem.target, &settings)?;
    let (c, d, p) = (settings.chains, problem.target.d(), problem.target.p());
    let streams = SampleStreams {
        codes: NpyStream::create(&out.join("codes.npy"), &[c, p])?,
        images: NpyStream::create(&out.join("images.npy"), &[c, d])?,
        keep: args.keep,
        burn_in: args.burn_in_cap(),
        samples: args.samples,
    };
    let hashes = hashes(&problem.target);
    drive(
        args, &problem, &settings, backend, state, streams, hashes, started, observer,
    )
}

fn resume(dir: &Path, observer: &dyn Observer) -> Result<Outcome> {
    let started = Instant::now();
    let path = dir.join(CHECKPOINT);
    if !path.exists() {
        return Err(not_resumable(dir, &path));
    }
    let checkpoint = Checkpoint::read(&path)?;
    let mut sample_args: SampleSettings = serde_json::from_value(checkpoint.config.clone())
        .map_err(|e| {
            Error::input(
                &path,
                format!("the checkpoint's configuration is not one this rmld reads: {e}"),
            )
        })?;
    sample_args.problem.out = dir.to_path_buf();
    let settings = sample_args.sampler_settings()?;
    let problem = shard_problem(&sample_args, load_problem(&sample_args.problem)?)?
        .with_adapt_iterations(sample_args.burn_in_cap());
    let target = &problem.target;
    let (data_hash, dictionary_hash) = hashes(target);
    if data_hash != checkpoint.data_hash {
        return Err(Error::input(
            &path,
            format!(
                "was made from other data than {} (the data's hash differs)",
                problem.dataset.source.display()
            ),
        ));
    }
    if dictionary_hash != checkpoint.dictionary_hash {
        return Err(Error::input(
            &path,
            format!(
                "was made with another dictionary than {} (its hash differs)",
                problem.dictionary_source
            ),
        ));
    }
    if checkpoint.d != target.d()
        || checkpoint.p != target.p()
        || checkpoint.positions.len() != settings.chains * target.p()
    {
        return Err(Error::input(
            &path,
            "its shapes do not match its configuration",
        ));
    }
    if checkpoint.run.completed >= settings.samples {
        return Err(Error::input(
            &path,
            format!(
                "the run is already complete ({} of {} outer iterations)",
                checkpoint.run.completed, settings.samples
            ),
        ));
    }
    let out = dir;
    let _lock = lock_output(out)?;
    let mut backend = make_backend(
        sample_args.problem.backend,
        observer,
        target,
        &settings.dynamics,
        settings.chains,
    )?;
    backend.load_positions(&checkpoint.positions)?;
    if !checkpoint.run.prior_state.is_empty() {
        backend.load_prior_state(&checkpoint.run.prior_state)?;
    }
    if !checkpoint.run.noise_precision.is_empty() {
        backend.set_noise_precision(&checkpoint.run.noise_precision)?;
    }
    let (c, d, p) = (settings.chains, target.d(), target.p());
    // An automatic burn-in's end so far (its cap while it still runs).
    let burn_in = checkpoint
        .run
        .burn_in
        .as_ref()
        .map_or(sample_args.burn_in_cap(), |m| m.burn_in());
    let kept = sample_args
        .keep
        .kept_up_to(checkpoint.run.completed, burn_in, sample_args.samples);
    let streams = SampleStreams {
        codes: resume_stream(&out.join("codes.npy"), &[c, p], kept)?,
        images: resume_stream(&out.join("images.npy"), &[c, d], kept)?,
        keep: sample_args.keep,
        burn_in,
        samples: sample_args.samples,
    };
    observer.notice(&Notice::Resuming {
        out: out.to_path_buf(),
        completed: checkpoint.run.completed,
        samples: settings.samples,
    });
    drive(
        &sample_args,
        &problem,
        &settings,
        backend,
        checkpoint.run,
        streams,
        (data_hash, dictionary_hash),
        started,
        observer,
    )
}

/// The problem with its target kind for every chain of the run, then cut to the shard's chains
/// (all of them without a shard).
fn shard_problem(args: &SampleSettings, problem: Problem) -> Result<Problem> {
    let problem = problem.with_target_kind(args.problem.target, args.chains, args.problem.seed)?;
    match args.problem.shard {
        Some(shard) => problem.with_chain_slice(args.chains, shard.range(args.chains)),
        None => Ok(problem),
    }
}

/// Why a folder without a checkpoint cannot be resumed: what its report says it holds.
fn not_resumable(dir: &Path, path: &Path) -> Error {
    let report: Option<serde_json::Value> = std::fs::read(dir.join("report.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    let command = report
        .as_ref()
        .and_then(|r| r["command"].as_str().map(str::to_string));
    let interrupted = report.as_ref().is_some_and(|r| r["interrupted"] == true);
    let message = match command.as_deref() {
        Some("sample") if !interrupted => {
            "is missing: the run in this folder finished, there is nothing to continue".to_string()
        }
        Some(other @ ("augment" | "encode" | "bench")) => format!(
            "is missing: this folder holds an `rmld {other}` run, which cannot be resumed \
             (only `rmld sample` runs can); run `rmld {other}` again, with `force` to reuse the \
             folder"
        ),
        _ => format!(
            "is missing: {} holds no interrupted `rmld sample` run to continue (one writes its \
             checkpoint when interrupted, or every `checkpoint_every` iterations)",
            dir.display()
        ),
    };
    Error::input(path, message)
}

/// An SSGL prior in `adapt` mode adapts over a burn-in fixed in advance: an automatic one, which
/// may end earlier, would leave it adapting into the kept draws.
pub(super) fn refuse_auto_burn_in_with_adapting_prior(auto: bool, problem: &Problem) -> Result<()> {
    let adapting = problem.target.prior.ssgl().is_some_and(|s| s.adapts_at(1));
    if auto && adapting {
        return Err(Error::usage(
            "burn_in",
            "the ssgl prior in adapt mode adapts over a fixed burn-in: give a count, not auto",
        ));
    }
    Ok(())
}

/// Runs the remaining iterations and writes every output; shared by `sample` and `resume`.
#[allow(clippy::too_many_arguments)]
fn drive(
    args: &SampleSettings,
    problem: &Problem,
    settings: &SamplerSettings,
    mut backend: Box<dyn Backend>,
    state: SampleRun,
    mut streams: SampleStreams,
    (data_hash, dictionary_hash): (u64, u64),
    started: Instant,
    observer: &dyn Observer,
) -> Result<Outcome> {
    let target = &problem.target;
    let out = &args.problem.out;
    let info = backend.info();
    let checkpoint_path = out.join(CHECKPOINT);
    let config =
        serde_json::to_value(args).map_err(|e| Error::Internal(format!("configuration: {e}")))?;
    let mut save = |run: &SampleRun, positions: &[f32]| {
        let checkpoint = Checkpoint {
            config: config.clone(),
            data_hash,
            dictionary_hash,
            d: target.d(),
            p: target.p(),
            positions: positions.to_vec(),
            run: run.clone(),
        };
        checkpoint.write(&checkpoint_path)
    };
    observer.phase_start(&Phase {
        name: "sampling",
        len: Some(settings.samples as u64),
        unit: "outer iterations",
    });
    observer.phase_advance(state.completed as u64);
    let hooks = Hooks {
        sink: &mut streams,
        progress: &mut |k| observer.phase_advance(k as u64),
        stop: &|| observer.stop_requested(),
        checkpoint_every: args.checkpoint_every,
        checkpoint: &mut save,
    };
    let result = orchestrator::continue_run(backend.as_mut(), target, settings, state, hooks);
    observer.phase_finish();
    let run = match result {
        Ok(run) => run,
        Err(e) => return Err(with_resume_hint(e, &checkpoint_path, out)),
    };
    let kept = streams.codes.rows();
    streams.codes.finish()?;
    streams.images.finish()?;
    let info =
        serde_json::to_value(&info).map_err(|e| Error::Internal(format!("backend info: {e}")))?;
    let (report, mut summary) = write_outputs(args, problem, settings, &run, kept, &info, started)?;
    if let (Some(shard), false) = (args.problem.shard, run.interrupted) {
        let mut hashed = args.clone();
        hashed.problem.out = Default::default();
        hashed.problem.shard = None;
        hashed.problem.force = false;
        let hashes = (data_hash, dictionary_hash);
        let end = ShardEnd {
            command: "sample",
            config: config.clone(),
            configuration: shards::configuration(&hashed, &info, hashes),
            hashes,
            shape: (target.d(), target.p()),
            seed: args.problem.seed,
        };
        let range = shard.range(args.chains);
        let (chains, positions) = ((range.clone(), args.chains), backend.positions()?);
        let names = ["codes.npy", "images.npy", "report.json"];
        shards::finish_shard(out, end, shard, chains, &run, positions, &names)?;
        summary.push(format!(
            "shard {shard}: chains {}..{} of {}; join the shards with `rmld merge`",
            range.start, range.end, args.chains
        ));
    }
    if run.interrupted {
        observer.notice(&Notice::SampleInterrupted {
            completed: run.completed,
            samples: settings.samples,
            checkpoint: checkpoint_path.clone(),
            out: out.to_path_buf(),
        });
    }
    let draw_stats = DrawStats {
        chains: settings.chains,
        stride: run.trace_stride,
        log_alpha: run.log_alpha,
        energy: run.energies,
    };
    Ok(Outcome {
        interrupted: run.interrupted,
        report,
        summary,
        draw_stats: Some(draw_stats),
    })
}

/// A failure during the run (a lost GPU, a full disk) names the checkpoint to resume from.
fn with_resume_hint(e: Error, checkpoint: &Path, out: &Path) -> Error {
    match Checkpoint::read(checkpoint) {
        Ok(c) => Error::Internal(format!(
            "{e}; the last checkpoint ({}, after outer iteration {}) can be continued with `rmld resume {}`",
            checkpoint.display(),
            c.run.completed,
            out.display()
        )),
        Err(_) => e,
    }
}

/// Writes the dictionary, the picture and report.json; returns the report and the summary lines.
fn write_outputs(
    args: &SampleSettings,
    problem: &Problem,
    settings: &SamplerSettings,
    run: &SampleRun,
    kept: usize,
    info: &serde_json::Value,
    started: Instant,
) -> Result<(serde_json::Value, Vec<String>)> {
    let target = &problem.target;
    let out = &args.problem.out;
    // The burn-in the run made: an automatic one's end (its cap if interrupted before it).
    let burn_in = run.burn_in.as_ref().map_or(args.burn_in, |m| m.burn_in());
    let (d, p, c, k) = (
        target.d(),
        target.p(),
        settings.chains,
        run.completed as usize,
    );
    io::write_npy_f32(&out.join("dictionary.npy"), &[d, p], &target.dictionary.a)?;

    // The picture: the real images the chains started from above, the latest samples below.
    let (h, w) = (problem.dataset.height, problem.dataset.width);
    let columns = picture_columns(c);
    let shown = columns.min(c);
    let real: Vec<f32> = match &run.start_indices {
        Some(idx) => idx
            .iter()
            .take(shown)
            .flat_map(|&i| target.observations.row(i))
            .collect(),
        None => (0..shown)
            .flat_map(|i| target.observations.row(i * target.observations.n / shown))
            .collect(),
    };
    let rows = 4.min(c.div_ceil(columns));
    let generated = &run.final_images[..(rows * columns).min(c) * d];
    let caption = picture_caption(
        settings,
        args,
        run.start_indices.is_some(),
        shown,
        generated.len() / d,
        k,
    );
    io::write_png_grid_captioned(
        &out.join("samples.png"),
        &[(real.as_slice(), shown), (generated, generated.len() / d)],
        h,
        w,
        columns,
        (0.0, args.problem.pixel_max),
        (112 / h.max(w)).clamp(1, 8),
        &caption,
    )?;

    let acceptance = run.acceptance_rate();
    let per_chain: Vec<f64> = run
        .accepted
        .iter()
        .map(|&a| a as f64 / k.max(1) as f64)
        .collect();
    let moved = run.mean_distance_moved();
    // Nested R-hat's superchains: chains started from images of one class (or, without labels,
    // from one image); the figures leave out the burn-in.
    let start_groups: Option<(Vec<usize>, &str)> =
        run.start_indices
            .as_ref()
            .map(|starts| match &problem.dataset.labels {
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
    let diagnostics =
        crate::diagnostics::summarize_scoped(run, run.timings.sampling_seconds, scope);
    // Per-draw statistics beside the draws (a shard's are written by `merge`).
    let sample_stats = match args.problem.shard {
        None => super::draw_stats::write_sample_stats(out, run, settings, args.keep, burn_in)?,
        Some(_) => serde_json::Value::Null,
    };
    let report = json!({
        "command": "sample",
        "rmld_version": env!("CARGO_PKG_VERSION"),
        "settings": settings,
        "lambda": target.lam,
        "pixel_max": args.problem.pixel_max,
        "keep": args.keep,
        "burn_in": burn_in,
        "dataset": dataset_json(&problem.dataset),
        "dictionary": problem.dictionary_json(d, p),
        "backend": info,
        "completed_iterations": run.completed,
        "interrupted": run.interrupted,
        "kept_samples": kept,
        "timings": { "total_seconds": started.elapsed().as_secs_f64(), "phases": run.timings },
        "peak_rss_bytes": peak_rss_bytes(),
        "acceptance": {
            "overall": acceptance,
            "per_chain": per_chain,
            "per_chain_quantiles": chain_quantiles(&per_chain),
            "divergent_proposals": run.divergent.iter().sum::<u32>(),
        },
        "mean_distance_moved_from_start": moved,
        "mh_note": crate::orchestrator::report::mh_note(settings.mh, settings.dynamics.method, acceptance),
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
    let mut report = report;
    let step_note = crate::orchestrator::report::step_note(
        settings.dynamics.method,
        settings.mh,
        acceptance,
        run.adaptation.is_some(),
    );
    if let Some(object) = report.as_object_mut() {
        if let Some(adaptation) = crate::orchestrator::report::adaptation_json(run, None) {
            object.insert("adaptation".into(), adaptation);
        }
        if let Some(note) = &step_note {
            object.insert("step_note".into(), note.clone().into());
        }
        if let Some(monitor) = &run.burn_in {
            object.insert(
                "burn_in_auto".into(),
                crate::orchestrator::report::burn_in_json(monitor),
            );
        }
    }
    if let (Some(ssgl), Some(object)) = (target.prior.ssgl(), report.as_object_mut()) {
        object.insert(
            "prior".into(),
            crate::orchestrator::report::ssgl_json(ssgl, run, p),
        );
    }
    if let (Some(noise), Some(object)) = (
        crate::orchestrator::report::noise_json(&target.noise, run, burn_in),
        report.as_object_mut(),
    ) {
        object.insert("noise".into(), noise);
    }
    io::write_json_atomic(&out.join("report.json"), &report)?;
    let summary = vec![
        format!(
            "rmld sample: {c} chains × {k} outer iterations ({kept} kept, {d} → {p} atoms) on {} in {:.1} s; \
             acceptance {:.1}%, mean distance moved from start {moved:.3}; wrote {}",
            info["device"].as_str().unwrap_or("?"),
            started.elapsed().as_secs_f64(),
            100.0 * acceptance,
            out.display()
        ),
        format!("{}\n  {}", diagnostics.verdict, diagnostics.summary_line()),
    ];
    let mut summary = summary;
    summary.extend(
        run.burn_in
            .as_ref()
            .map(crate::orchestrator::report::burn_in_line),
    );
    if let Some(a) = &run.adaptation {
        summary.push(format!(
            "step size adapted over {} burn-in iterations: {:.4e} → {:.4e} (dual averaging across \
             chains toward mean acceptance {}), frozen for the kept draws",
            a.count,
            a.initial_step,
            a.step(),
            a.target
        ));
    }
    if let Some(t) = run.adaptation.and_then(|a| a.trajectory) {
        summary.push(format!(
            "trajectory length adapted by ChEES: {:.4} → {:.4} (leapfrog steps ⌈u·T/ε⌉, jittered \
             per iteration; {:.1} on average during the warm-up)",
            t.initial_length,
            t.length(),
            t.mean_steps
        ));
    }
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

/// What samples.png shows, written above it: the method and target, what the row above the grey
/// band is, and which chains after how many iterations are below it.
fn picture_caption(
    settings: &SamplerSettings,
    args: &SampleSettings,
    from_data: bool,
    shown: usize,
    below: usize,
    completed: usize,
) -> String {
    let method = format!("{:?}", settings.dynamics.method).to_lowercase();
    let target = format!("{:?}", args.problem.target).to_lowercase();
    let top = if from_data {
        format!("the real images chains 1-{shown} started from")
    } else {
        format!("{shown} real images of the data (the chains started from noise)")
    };
    format!(
        "rmld sample, {method} on the {target} target. Above the grey band: {top}. Below it: \
         chains 1-{below}, row by row, after {completed} iterations{}.",
        if settings.mh { "" } else { " (no MH)" }
    )
}

/// A shard's `codes.npy` or `images.npy`: (kept draws, its chains, width) and the values.
fn shard_draws(s: &ShardFiles, name: &str, chains: usize) -> Result<(usize, usize, Vec<f32>)> {
    s.file(name)?;
    let path = s.dir.join(name);
    let array = io::read_npy(&path)?;
    let bad = || {
        Error::input(
            &path,
            format!(
                "shard {}: shape {:?} does not hold its {chains} chains",
                s.manifest.shard, array.shape
            ),
        )
    };
    let (&[kept, c, width], io::Pixels::F32(values)) = (array.shape.as_slice(), &array.data) else {
        return Err(bad());
    };
    if c != chains {
        return Err(bad());
    }
    Ok((kept, width, values.clone()))
}

/// Joins the shards of a sampling run (checked and in order) into the single run's files:
/// codes and images interleaved by chain in every draw, the traces joined chain by chain, and
/// the picture and report made from them as the single run makes them. The data and the
/// dictionary are read again (from the shards' configuration) and checked against the shards'
/// hashes.
pub(crate) fn merge_shards(out: &Path, parts: &[ShardFiles]) -> Result<Outcome> {
    let started = Instant::now();
    let first = &parts[0];
    let traces = parts
        .iter()
        .map(shards::trace)
        .collect::<Result<Vec<_>>>()?;
    let mut args: SampleSettings = shards::merged_settings(first, &traces[0])?;
    args.problem.shard = None;
    args.problem.out = out.to_path_buf();
    let settings = args.sampler_settings()?;
    let problem = shard_problem(&args, load_problem(&args.problem)?)?;
    shards::check_inputs(first, &traces[0], hashes(&problem.target), &problem)?;
    // Every shard's trace: the same iterations, its own chains.
    let runs: Vec<SampleRun> = traces.into_iter().map(|t| t.run).collect();
    let run = shards::joined_run(parts, &runs)?;
    if run.accepted.len() != settings.chains {
        return Err(Error::Internal("shards' chains".into()));
    }
    // The draws, interleaved by chain.
    let (d, p) = (problem.target.d(), problem.target.p());
    let mut codes = Vec::with_capacity(parts.len());
    let mut images = Vec::with_capacity(parts.len());
    let mut kept = None;
    for s in parts {
        let c = s.manifest.part.end - s.manifest.part.start;
        let (k1, w1, v1) = shard_draws(s, "codes.npy", c)?;
        let (k2, w2, v2) = shard_draws(s, "images.npy", c)?;
        if (w1, w2) != (p, d) || k1 != k2 || kept.is_some_and(|k| k != k1) {
            return Err(Error::input(
                s.dir.join("codes.npy"),
                format!(
                    "shard {}: its draws' shapes differ from the other shards'",
                    s.manifest.shard
                ),
            ));
        }
        kept = Some(k1);
        codes.push((v1, c));
        images.push((v2, c));
    }
    let kept = kept.unwrap_or(0);
    let info = first.json("report.json")?["backend"].clone();
    io::prepare_output_dir(out)?;
    let _lock = lock_output(out)?;
    let c = settings.chains;
    for (name, parts, width) in [("codes.npy", &codes, p), ("images.npy", &images, d)] {
        let mut stream = NpyStream::create(&out.join(name), &[c, width])?;
        join_draws(parts, (kept, width), &mut |draw| stream.append(draw))?;
        stream.finish()?;
    }
    let (report, mut summary) =
        write_outputs(&args, &problem, &settings, &run, kept, &info, started)?;
    summary.insert(
        0,
        format!(
            "rmld merge: {} shards of sample, {c} chains, in {:.1} s",
            parts.len(),
            started.elapsed().as_secs_f64()
        ),
    );
    Ok(Outcome {
        interrupted: false,
        report,
        summary,
        draw_stats: None,
    })
}
