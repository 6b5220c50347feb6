//! Sampling runs and their resumption (`Sampler`), with checkpoints, a run lock and clean stops.
//!
//! The chains stream codes and images to disk, with checkpoints, a lock on the output folder,
//! and a clean stop when the observer asks.

use std::cell::Cell;
use std::path::Path;
use std::time::Instant;

use crate::backend::Backend;
use crate::diagnostics::degenerate::Degenerate;
use crate::io::shards::{configuration, ShardFiles};
use crate::io::{self, NpyStream, Output};
use crate::orchestrator::identity::{configuration_hash, RunIdentity};
use crate::orchestrator::sample_report::{write_sample_outputs, SampleOutputs};
use crate::orchestrator::shard::{check_inputs, finish_shard, join_sample_draws, joined_run};
use crate::orchestrator::shard::{shard_settings, shard_trace, ShardEnd, TRACE};
use crate::orchestrator::streams::{SampleStreams, CODES, IMAGES};
use crate::orchestrator::{self, Checkpoint, Hooks, SampleRun, SamplerSettings};
use crate::{Error, Result};

use super::observer::{Notice, Observer, Phase};
use super::problem::{dictionary_json, load_problem, make_backend, Problem};
use super::settings::SampleSettings;
use super::{outputs, warm_up, DrawStats, Outcome};
pub use crate::io::output_folder::{lock_output, RunLock, CHECKPOINT, LOCK};
pub(crate) use crate::orchestrator::identity::input_hashes as hashes;
pub(crate) use crate::orchestrator::problem::refuse_auto_burn_in_with_adapting_prior;
pub(super) use crate::orchestrator::resume::tell_recovery;
use crate::orchestrator::resume::with_resume_hint;

/// What a shard of `rmld sample` writes (its part of every output, its trace and manifest).
pub(super) const SHARD_OUTPUTS: &[&str] = &[
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

    /// Runs from the start. The outputs are published together when the run ends (or stops);
    /// an earlier run's files in the folder, its checkpoint among them, are replaced then.
    pub fn run(&self, observer: &dyn Observer) -> Result<Outcome> {
        sample(&self.settings, observer)
    }
}

/// The names a sampling run writes (`shard`: a shard's).
pub(super) fn output_names(args: &SampleSettings) -> &'static [&'static str] {
    match args.problem.shard {
        Some(_) => SHARD_OUTPUTS,
        None => outputs::SAMPLE_OUTPUTS,
    }
}

fn sample(args: &SampleSettings, observer: &dyn Observer) -> Result<Outcome> {
    let started = Instant::now();
    let settings = args.sampler_settings()?;
    refuse_paths_not_utf8(args)?;
    // A shard's warm-up folder is an input too: its report.json is a shard's.
    let inputs = [
        args.problem.data.as_deref(),
        args.problem.dictionary.as_deref(),
        args.problem.warm_up.as_deref(),
    ];
    let names = match (args.problem.shard, args.problem.warm_up_only) {
        (_, true) => warm_up::WARM_UP_OUTPUTS,
        (Some(_), false) => SHARD_OUTPUTS,
        (None, false) => outputs::SAMPLE_OUTPUTS,
    };
    let out = &args.problem.out;
    let mut output = Output::check(out, names, &inputs, args.problem.force)?;
    // A manifest left by an earlier shard or warm-up here must not vouch for this run's files.
    output.also_replace(&[io::MANIFEST, io::WARM_UP_MANIFEST]);
    tell_recovery(observer, &output, None);
    let warm = warm_up::read_for_shard(&args.problem, "sample", || warm_up::sample_hash(args))?;
    let problem = load_problem(&args.problem)?;
    if let Some(notice) = args.problem.scaling_notice(&problem.dataset) {
        observer.notice(&notice);
    }
    problem.check_sampler_fits(&args.problem, &settings)?;
    let problem = shard_problem(args, problem)?;
    refuse_auto_burn_in_with_adapting_prior(args.auto_burn_in, &problem)?;
    if !args.problem.warm_up_only {
        let shape = (settings.chains, problem.target.d(), problem.target.p());
        outputs_on_disk(args, shape, 0).check(out, "samples", LOWER_DRAWS)?;
    }
    output.open()?;
    let mut backend = make_backend(
        args.problem.backend,
        observer,
        &problem.target,
        &settings.dynamics,
        settings.chains,
    )?;
    let hashes = hashes(&problem.target);
    let state = match (&warm, args.problem.shard) {
        (Some(warm), Some(shard)) => {
            let range = shard.range(args.chains);
            warm_up::start_shard(warm, backend.as_mut(), hashes, range, None)?
                .state
                .run
        }
        _ => orchestrator::start(backend.as_mut(), &problem.target, &settings)?,
    };
    if args.problem.warm_up_only {
        let ran = (backend, state);
        return warm_up_only(args, &problem, &settings, ran, output, (started, observer));
    }
    // A shard's warm-up may have ended its automatic burn-in already.
    let burn_in = state
        .burn_in
        .as_ref()
        .map_or(args.burn_in_cap(), |m| m.burn_in());
    let (c, d, p) = (settings.chains, problem.target.d(), problem.target.p());
    let staged = output.staged()?;
    let streams = SampleStreams::new(
        NpyStream::create(&staged.join(CODES), &[c, p])?,
        NpyStream::create(&staged.join(IMAGES), &[c, d])?,
        args.keep,
        burn_in,
        args.samples,
    )?;
    let run = Continued {
        backend,
        state,
        streams: Some(streams),
        identity: RunIdentity {
            run_id: io::staging::new_run_id(),
            configuration: configuration_hash(&identity_config(args)?),
            seed: args.problem.seed,
            chains: settings.chains,
            samples: settings.samples,
            streams: Vec::new(),
        },
        output,
    };
    let clock = RunClock::since(started, 0.0);
    drive(args, &problem, &settings, run, hashes, clock, observer)
}

/// What to change when a run's draws cannot fit on its disk.
const LOWER_DRAWS: &str =
    "lower `samples` or `chains`, or keep fewer draws (`keep` every:N or last)";

/// Bytes of one chain's per-draw statistics (sample_stats/: acceptance rate and steps in f64,
/// energy and step size in f32, a divergence flag).
const STATS_BYTES: f64 = 8.0 + 8.0 + 4.0 + 4.0 + 1.0;

/// What a run of `args` writes into its output folder, `c` chains of `d` pixels and `p` atoms:
/// the codes and images of every draw `keep` may keep (an automatic burn-in counted as ending
/// at once: the most the run can keep) but the `in_place` ones a resumed run finds in its
/// staging folder, the draws' statistics, the dictionary and a checkpoint (the chains' state).
pub(super) fn outputs_on_disk(
    args: &SampleSettings,
    (c, d, p): (usize, usize, usize),
    in_place: usize,
) -> io::disk::Writes {
    let burn_in = if args.auto_burn_in { 0 } else { args.burn_in };
    let draws = args.keep.kept_up_to(args.samples, burn_in, args.samples);
    let values = |draws: usize, width: usize| draws as f64 * c as f64 * width as f64;
    let new = draws.saturating_sub(in_place);
    io::disk::Writes::new()
        .add(CODES, io::disk::npy_f32_bytes(new * c, p))
        .add(IMAGES, io::disk::npy_f32_bytes(new * c, d))
        .add("sample_stats/", STATS_BYTES * values(draws, 1))
        .add("dictionary.npy", io::disk::npy_f32_bytes(d, p))
        .add(CHECKPOINT, 4.0 * values(1, 4 * p + 2 * d))
}

/// A sampling run's wall clock: this process's seconds since `started` and those of the run's
/// earlier processes (a resumed run's, from its checkpoint), so a report counts the whole run.
#[derive(Clone, Copy)]
pub(super) struct RunClock {
    started: Instant,
    earlier: f64,
}

impl RunClock {
    pub(super) fn since(started: Instant, earlier_seconds: f64) -> Self {
        RunClock {
            started,
            earlier: earlier_seconds,
        }
    }

    /// The run's seconds so far.
    pub(super) fn seconds(&self) -> f64 {
        self.earlier + self.started.elapsed().as_secs_f64()
    }
}

/// The settings a checkpoint stores: the data's and the dictionary's paths made absolute, so
/// that `rmld resume` finds them from any working folder.
pub(super) fn stored_config(args: &SampleSettings) -> SampleSettings {
    let mut stored = args.clone();
    let absolute = |path: &mut Option<std::path::PathBuf>| {
        if let Some(p) = path.as_mut() {
            if let Ok(a) = std::path::absolute(&*p) {
                *p = a;
            }
        }
    };
    absolute(&mut stored.problem.data);
    absolute(&mut stored.problem.dictionary);
    stored
}

/// The stored settings less what may differ when the run is resumed (the output folder,
/// `force`), as JSON: what a run's configuration hash is taken of.
pub(super) fn identity_config(args: &SampleSettings) -> Result<serde_json::Value> {
    let mut stored = stored_config(args);
    stored.problem.out = Default::default();
    stored.problem.force = false;
    serde_json::to_value(&stored).map_err(|e| Error::Internal(format!("configuration: {e}")))
}

/// Runs the whole run's warm-up from `state` (every chain started) and saves it for the shards
/// (`warm_up_only`) through `output`: nothing is kept; a stopped warm-up publishes nothing.
fn warm_up_only(
    args: &SampleSettings,
    problem: &Problem,
    settings: &SamplerSettings,
    (mut backend, state): (Box<dyn Backend>, SampleRun),
    mut output: Output,
    (started, observer): (Instant, &dyn Observer),
) -> Result<Outcome> {
    let cap = args.burn_in_cap();
    observer.phase_start(&Phase {
        name: "warm-up",
        len: Some(cap as u64),
        unit: "outer iterations",
    });
    let target = &problem.target;
    let run = match cap {
        0 => state,
        _ => orchestrator::warm_up(
            backend.as_mut(),
            target,
            settings,
            state,
            cap,
            &mut |k| observer.phase_advance(k as u64),
            &|| observer.stop_requested(),
        )?,
    };
    observer.phase_finish();
    if run.interrupted {
        output.discard();
        return Ok(Outcome {
            interrupted: true,
            report: serde_json::json!({ "command": "sample", "warm_up_only": true, "interrupted": true }),
            summary: vec![
                "rmld sample warm-up: stopped before its end, nothing written; run it again".into(),
            ],
            draw_stats: None,
        });
    }
    let finished = warm_up::Finished {
        command: "sample",
        config: serde_json::to_value(args)
            .map_err(|e| Error::Internal(format!("configuration: {e}")))?,
        settings: warm_up::sample_hash(args),
        hashes: hashes(target),
        shape: (target.d(), target.p()),
        seed: args.problem.seed,
        out: &args.problem.out,
        dir: output.staged()?,
        seconds: started.elapsed().as_secs_f64(),
    };
    let outcome = warm_up::finish(finished, backend.as_mut(), &run)?;
    output.publish()?;
    Ok(outcome)
}

/// The run's problem: its target kind for every chain of the run, cut to the shard's chains
/// (all of them without a shard), and an adapting prior adapting over the burn-in. A run, its
/// resumption and the merge of its shards all build it so.
pub(super) fn shard_problem(args: &SampleSettings, problem: Problem) -> Result<Problem> {
    let problem = problem.with_target_kind(args.problem.target, args.chains, args.problem.seed)?;
    let problem = match args.problem.shard {
        Some(shard) => problem.with_chain_slice(args.chains, shard.range(args.chains))?,
        None => problem,
    };
    Ok(problem.with_adapt_iterations(args.burn_in_cap()))
}

/// A sampling run records its settings, paths included, in its checkpoint (JSON, to resume
/// from), which cannot hold a path that is not UTF-8 (a Latin-1 name): refused up front, naming
/// the path, rather than failing at the first checkpoint.
fn refuse_paths_not_utf8(args: &SampleSettings) -> Result<()> {
    let paths = [
        ("out", Some(&args.problem.out)),
        ("data", args.problem.data.as_ref()),
        ("dictionary", args.problem.dictionary.as_ref()),
    ];
    for (setting, path) in paths {
        if let Some(path) = path.filter(|p| p.to_str().is_none()) {
            return Err(Error::usage(
                setting,
                format!(
                    "{} is not valid UTF-8: a sampling run records its paths in its checkpoint \
                     (JSON) to resume from; give a UTF-8 name",
                    path.display()
                ),
            ));
        }
    }
    Ok(())
}

/// A run ready to go on: its backend with the chains where `state` left them, its draws
/// streams, its identity and its output folder (staging folder open).
pub(super) struct Continued {
    pub backend: Box<dyn Backend>,
    pub state: SampleRun,
    pub streams: Option<SampleStreams>,
    pub identity: RunIdentity,
    pub output: Output,
}

/// Runs the remaining iterations, writes every output into the staging folder and publishes
/// them; shared by `sample` and `resume`. On a failure OUT is left as it was; the staging
/// folder is kept when it holds a checkpoint, and the error says so.
pub(super) fn drive(
    args: &SampleSettings,
    problem: &Problem,
    settings: &SamplerSettings,
    mut run: Continued,
    (data_hash, dictionary_hash): (u64, u64),
    clock: RunClock,
    observer: &dyn Observer,
) -> Result<Outcome> {
    let target = &problem.target;
    let out = &args.problem.out;
    let staged = run.output.staged()?.to_path_buf();
    let checkpoint_path = staged.join(CHECKPOINT);
    let config = serde_json::to_value(stored_config(args))
        .map_err(|e| Error::Internal(format!("configuration: {e}")))?;
    let Some(mut streams) = run.streams.take() else {
        return Err(Error::Internal("a sampling run without its streams".into()));
    };
    let marks = streams.marks.clone();
    let identity = &run.identity;
    // `resume` continues the chains only on a device that rounds as this one does.
    let device = io::shards::device_key(&serde_json::json!(run.backend.info()));
    // The timed checkpoints (`checkpoint_minutes`): due that long after the last checkpoint.
    let saved_at = Cell::new(Instant::now());
    let minutes = args.checkpoint_minutes;
    let checkpoint_due =
        || minutes > 0.0 && saved_at.get().elapsed().as_secs_f64() >= minutes * 60.0;
    let mut save = |state: &SampleRun, positions: &[f32]| {
        let checkpoint = Checkpoint {
            config: config.clone(),
            data_hash,
            dictionary_hash,
            d: target.d(),
            p: target.p(),
            positions: positions.to_vec(),
            run: state.clone(),
            identity: Some(RunIdentity {
                streams: marks.borrow().clone(),
                ..identity.clone()
            }),
            written_by: None,
            device: Some(device.clone()),
            wall_seconds: Some(clock.seconds()),
        };
        checkpoint.write(&checkpoint_path)?;
        saved_at.set(Instant::now());
        Ok(())
    };
    observer.phase_start(&Phase {
        name: "sampling",
        len: Some(settings.samples as u64),
        unit: "outer iterations",
    });
    observer.phase_advance(run.state.completed as u64);
    let hooks = Hooks {
        sink: &mut streams,
        progress: &mut |k| observer.phase_advance(k as u64),
        stop: &|| observer.stop_requested(),
        checkpoint_every: args.checkpoint_every,
        checkpoint_due: &checkpoint_due,
        checkpoint: &mut save,
    };
    let state = std::mem::take(&mut run.state);
    let result = orchestrator::continue_run(run.backend.as_mut(), target, settings, state, hooks);
    observer.phase_finish();
    let ended = result.and_then(|state| {
        let completed = state.completed;
        // Without `checkpoint_every`, a completed run's checkpoint can only be a timed one or
        // the one it was resumed from, which were insurance: its outputs stay those of a run
        // without one (and no earlier state of a finished run is left to resume). It goes just
        // before publishing, so a failure until then keeps it.
        let insurance = args.checkpoint_every == 0 && !state.interrupted;
        let drop_checkpoint = insurance.then_some(checkpoint_path.as_path());
        let ran = (&mut run, state, streams, drop_checkpoint);
        finish(args, problem, settings, ran, (&config, clock), observer).map(|o| (o, completed))
    });
    match ended {
        Ok((outcome, completed)) => {
            if outcome.interrupted {
                observer.notice(&Notice::SampleInterrupted {
                    completed,
                    samples: settings.samples,
                    checkpoint: out.join(CHECKPOINT),
                    out: out.to_path_buf(),
                });
            }
            Ok(outcome)
        }
        Err(e) => Err(with_resume_hint(e, &checkpoint_path, out)),
    }
}

/// Finishes the streams, writes the other outputs (and a shard's trace and manifest) into the
/// staging folder, and publishes them.
fn finish(
    args: &SampleSettings,
    problem: &Problem,
    settings: &SamplerSettings,
    (run, state, streams, drop_checkpoint): (
        &mut Continued,
        SampleRun,
        SampleStreams,
        Option<&Path>,
    ),
    (config, clock): (&serde_json::Value, RunClock),
    observer: &dyn Observer,
) -> Result<Outcome> {
    let target = &problem.target;
    let staged = run.output.staged()?.to_path_buf();
    let kept = streams.codes.rows();
    streams.codes.finish()?;
    streams.images.finish()?;
    let info = serde_json::to_value(run.backend.info())
        .map_err(|e| Error::Internal(format!("backend info: {e}")))?;
    let written = (&state, kept, run.identity.run_id.as_str());
    let estimate = problem.sampler_footprint(&args.problem, settings).total();
    let degenerate = state.degenerate(Some(&streams.watch));
    for warning in degenerate.warnings() {
        observer.notice(&Notice::Degenerate { warning });
    }
    let judged = (&info, Some(estimate), Some(&degenerate));
    let (report, mut summary) = write_outputs(
        args,
        problem,
        settings,
        written,
        judged,
        clock.seconds(),
        &staged,
    )?;
    if let (Some(shard), false) = (args.problem.shard, state.interrupted) {
        let hashed = args.deciding_the_draws();
        let hashes = hashes(target);
        let end = ShardEnd {
            command: "sample",
            config: config.clone(),
            configuration: configuration(&hashed, &info, hashes),
            hashes,
            shape: (target.d(), target.p()),
            seed: args.problem.seed,
        };
        let range = shard.range(args.chains);
        let chains = (shard, range.clone(), args.chains);
        let positions = run.backend.positions()?;
        let names = ["codes.npy", "images.npy", "report.json"];
        finish_shard(&staged, end, chains, &state, positions, &names)?;
        summary.push(format!(
            "shard {shard}: chains {}..{} of {}; join the shards with `rmld merge`",
            range.start, range.end, args.chains
        ));
    }
    if let Some(path) = drop_checkpoint {
        io::remove_file_if_present(path)?;
    }
    run.output.publish()?;
    let draw_stats = DrawStats {
        chains: settings.chains,
        stride: state.trace_stride,
        log_alpha: state.log_alpha,
        energy: state.energies,
    };
    Ok(Outcome {
        interrupted: state.interrupted,
        report,
        summary,
        draw_stats: Some(draw_stats),
    })
}

/// Writes the dictionary, the picture, the per-draw statistics and report.json (with the run's
/// `seconds`) into `dir` (the staging folder); returns the report and the summary lines.
fn write_outputs(
    args: &SampleSettings,
    problem: &Problem,
    settings: &SamplerSettings,
    (run, kept, run_id): (&SampleRun, usize, &str),
    (info, estimate, degenerate): (&serde_json::Value, Option<f64>, Option<&Degenerate>),
    seconds: f64,
    dir: &Path,
) -> Result<(serde_json::Value, Vec<String>)> {
    let (d, p) = (problem.target.d(), problem.target.p());
    let outputs = SampleOutputs {
        out: dir,
        published: &args.problem.out,
        run_id,
        dataset: &problem.dataset,
        target: (&problem.target, args.problem.target),
        dictionary: dictionary_json(problem, d, p),
        settings,
        keep: args.keep,
        burn_in: args.burn_in,
        pixel_max: args.problem.pixel_max,
        per_draw_stats: args.problem.shard.is_none(),
        info,
        peak_rss_estimate: estimate,
        degenerate,
        seconds,
    };
    write_sample_outputs(&outputs, run, kept)
}

/// The size of the file at `path` (0 where it cannot be read: the join reads it and says why).
fn file_bytes(path: &Path) -> f64 {
    std::fs::metadata(path).map_or(0.0, |m| m.len() as f64)
}

/// Joins the shards of a sampling run (checked and in order) into the single run's files:
/// codes and images interleaved by chain in every draw, the traces joined chain by chain, and
/// the picture and report made from them as the single run makes them. The data and the
/// dictionary are read again (from the shards' configuration) and checked against the shards'
/// hashes. Everything is written into `output`'s staging folder and published at once.
pub(crate) fn merge_shards(output: &mut Output, parts: &[ShardFiles]) -> Result<Outcome> {
    let started = Instant::now();
    let out = output.dir.clone();
    let first = &parts[0];
    let traces = parts.iter().map(shard_trace).collect::<Result<Vec<_>>>()?;
    let mut args: SampleSettings = shard_settings(first, &traces[0])?;
    args.problem.shard = None;
    args.problem.warm_up = None;
    args.problem.out = out.clone();
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
    let (d, p) = (problem.target.d(), problem.target.p());
    let mut joined = io::disk::Writes::new().add("dictionary.npy", io::disk::npy_f32_bytes(d, p));
    for name in [CODES, IMAGES] {
        let bytes = parts
            .iter()
            .map(|s| file_bytes(&s.dir.join(name)))
            .sum::<f64>();
        joined = joined.add(name, bytes);
    }
    joined.check_room(
        &out,
        "free that much space there, or merge into a folder on a larger disk",
    )?;
    output.open()?;
    let staged = output.staged()?.to_path_buf();
    // The draws, interleaved by chain.
    let shape = (problem.target.d(), problem.target.p());
    let (kept, watch) = join_sample_draws(parts, shape, &staged)?;
    let estimate = problem.sampler_footprint(&args.problem, &settings).total();
    let degenerate = run.degenerate(Some(&watch));
    let c = settings.chains;
    let run_id = io::staging::new_run_id();
    let written = (&run, kept, run_id.as_str());
    let judged = (&info, Some(estimate), Some(&degenerate));
    let (report, mut summary) = write_outputs(
        &args,
        &problem,
        &settings,
        written,
        judged,
        started.elapsed().as_secs_f64(),
        &staged,
    )?;
    output.publish()?;
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
