//! Sampling runs and their resumption (`Sampler`), with checkpoints, a run lock and clean stops.
//!
//! The chains stream codes and images to disk, with checkpoints, a lock on the output folder,
//! and a clean stop when the observer asks.

use std::path::Path;
use std::time::Instant;

use crate::backend::Backend;
use crate::io::shards::{configuration, ShardFiles};
use crate::io::{self, NpyStream};
use crate::orchestrator::resume::{check_resumable, restore};
use crate::orchestrator::sample_report::{write_sample_outputs, SampleOutputs};
use crate::orchestrator::shard::{check_inputs, finish_shard, join_sample_draws, joined_run};
use crate::orchestrator::shard::{shard_settings, shard_trace, ShardEnd, TRACE};
use crate::orchestrator::streams::{resume_stream, SampleStreams};
use crate::orchestrator::{self, Checkpoint, Hooks, SampleRun, SamplerSettings};
use crate::{Error, Result};

use super::observer::{Notice, Observer, Phase};
use super::problem::{dictionary_json, load_problem, make_backend, Problem};
use super::settings::SampleSettings;
use super::{outputs, DrawStats, Outcome};
pub(crate) use crate::io::output_folder::remove_if_present;
pub use crate::io::output_folder::{lock_output, CHECKPOINT, LOCK};
use crate::measure::memory;
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
    let sources = (
        problem.dataset.source.as_path(),
        problem.dictionary_source.as_str(),
    );
    let run = (settings.chains, settings.samples);
    check_resumable(&checkpoint, &path, (target, hashes(target)), run, sources)?;
    let out = dir;
    let _lock = lock_output(out)?;
    let mut backend = make_backend(
        sample_args.problem.backend,
        observer,
        target,
        &settings.dynamics,
        settings.chains,
    )?;
    restore(&checkpoint, backend.as_mut())?;
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
    let (report, mut summary) =
        write_outputs(args, problem, settings, (&run, kept), &info, started)?;
    if let (Some(shard), false) = (args.problem.shard, run.interrupted) {
        let mut hashed = args.clone();
        hashed.problem.out = Default::default();
        hashed.problem.shard = None;
        hashed.problem.force = false;
        let hashes = (data_hash, dictionary_hash);
        let end = ShardEnd {
            command: "sample",
            config: config.clone(),
            configuration: configuration(&hashed, &info, hashes),
            hashes,
            shape: (target.d(), target.p()),
            seed: args.problem.seed,
        };
        let range = shard.range(args.chains);
        let (chains, positions) = ((shard, range.clone(), args.chains), backend.positions()?);
        let names = ["codes.npy", "images.npy", "report.json"];
        finish_shard(out, end, chains, &run, positions, &names)?;
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

/// Writes the dictionary, the picture, the per-draw statistics and report.json; returns the
/// report and the summary lines.
fn write_outputs(
    args: &SampleSettings,
    problem: &Problem,
    settings: &SamplerSettings,
    (run, kept): (&SampleRun, usize),
    info: &serde_json::Value,
    started: Instant,
) -> Result<(serde_json::Value, Vec<String>)> {
    let (d, p) = (problem.target.d(), problem.target.p());
    let outputs = SampleOutputs {
        out: &args.problem.out,
        dataset: &problem.dataset,
        target: (&problem.target, args.problem.target),
        dictionary: dictionary_json(problem, d, p),
        settings,
        keep: args.keep,
        burn_in: args.burn_in,
        pixel_max: args.problem.pixel_max,
        per_draw_stats: args.problem.shard.is_none(),
        info,
        seconds: started.elapsed().as_secs_f64(),
    };
    write_sample_outputs(&outputs, run, kept)
}

/// Joins the shards of a sampling run (checked and in order) into the single run's files:
/// codes and images interleaved by chain in every draw, the traces joined chain by chain, and
/// the picture and report made from them as the single run makes them. The data and the
/// dictionary are read again (from the shards' configuration) and checked against the shards'
/// hashes.
pub(crate) fn merge_shards(out: &Path, parts: &[ShardFiles]) -> Result<Outcome> {
    let started = Instant::now();
    let first = &parts[0];
    let traces = parts.iter().map(shard_trace).collect::<Result<Vec<_>>>()?;
    let mut args: SampleSettings = shard_settings(first, &traces[0])?;
    args.problem.shard = None;
    args.problem.out = out.to_path_buf();
    let settings = args.sampler_settings()?;
    let problem = shard_problem(&args, load_problem(&args.problem)?)?;
    let sources = (
        problem.dataset.source.as_path(),
        problem.dictionary_source.as_str(),
    );
    check_inputs(first, &traces[0], hashes(&problem.target), sources)?;
    // Every shard's trace: the same iterations, its own chains.
    let runs: Vec<SampleRun> = traces.into_iter().map(|t| t.run).collect();
    let run = joined_run(parts, &runs)?;
    if run.accepted.len() != settings.chains {
        return Err(Error::Internal("shards' chains".into()));
    }
    let info = first.json("report.json")?["backend"].clone();
    io::prepare_output_dir(out)?;
    let _lock = lock_output(out)?;
    // The draws, interleaved by chain.
    let shape = (problem.target.d(), problem.target.p());
    let kept = join_sample_draws(parts, shape, out)?;
    let c = settings.chains;
    let (report, mut summary) =
        write_outputs(&args, &problem, &settings, (&run, kept), &info, started)?;
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
