//! The augmentation as a pipeline of named stages, one file each with typed input and output; the pipeline, not the stages, times the phases, ends a stopped run, owns the output folder, and splits the work into shards and merges them.
//!
//! The stages, in run order ([`AUGMENT_PHASES`]): [`load`], [`starts`], [`burn_in`],
//! [`sampling`], [`reencode`], [`quality`], [`original_codes`], [`test_codes`], [`writing`].
//! [`Pipeline::stage`] runs one: its wall time goes to its phase, and a stop requested during
//! it ends the run after it (a stage polls for one where it can stop midway). Every file goes
//! through the pipeline's [`Output`](crate::io::Output), so a stopped run takes back all it
//! wrote and keeps only report.json, which says where it stopped. A shard
//! ([`Split`](crate::io::Split)) runs its part of the stages that have parts (the chains, the
//! encodings) and saves them ([`parts`]); a merge joins the parts in their place and runs the
//! rest as the whole run does.

mod burn_in;
mod deform;
mod encoding;
mod fit;
mod load;
mod original_codes;
mod parts;
mod quality;
mod reencode;
mod report;
mod sampler;
mod sampling;
mod stage;
mod starts;
mod test_codes;
mod writing;

use serde_json::Value;

use crate::io::{Output, Split};
use crate::methods::AugmentMethod;
use crate::orchestrator::shard::join_augment;
use crate::orchestrator::warm_up::WarmUp;
use crate::orchestrator::{AugmentSink, SampleRun};
use crate::session::observer::Observer;
use crate::session::settings::AugmentSettings;
use crate::session::warm_up;
use crate::session::Outcome;
use crate::{Error, Result};
use encoding::Encoder;
use load::{Device, Loaded};
use sampling::Generated;
use stage::{Halt, Pipeline, Step};

/// The phases of an augmentation, in run order: each one's wall time is in report.json's
/// `phase_seconds` (0 for a phase the settings leave out).
pub const AUGMENT_PHASES: [&str; 9] = [
    load::PHASE,
    starts::PHASE,
    burn_in::PHASE,
    sampling::PHASE,
    reencode::PHASE,
    quality::PHASE,
    original_codes::PHASE,
    test_codes::PHASE,
    writing::PHASE,
];

/// Runs the augmentation `args` split as `split` (a merge: `args` are the shards', and
/// `merged` is the output folder the merge checked). Every file is published when the run
/// ends, or none; `extra` (names and JSON values: a training's stamp on its teacher) is
/// written as JSON files beside the outputs of a finished run and published with them.
pub(crate) fn augment(
    args: &AugmentSettings,
    observer: &dyn Observer,
    split: Split,
    merged: Option<Output>,
    extra: &[(&str, &Value)],
) -> Result<Outcome> {
    args.validate()?;
    let mut output = match merged {
        Some(output) => output,
        None => {
            let names = match split {
                Split::Shard(_) => parts::SHARD_OUTPUTS,
                Split::WarmUp => warm_up::WARM_UP_OUTPUTS,
                _ => crate::session::outputs::AUGMENT_OUTPUTS,
            };
            let inputs = [
                args.problem.data.as_deref(),
                args.labels.as_deref(),
                args.problem.dictionary.as_deref(),
                args.problem.warm_up.as_deref(),
            ];
            Output::check(&args.problem.out, names, &inputs, args.problem.force)?
        }
    };
    // A manifest left by an earlier shard or warm-up here must not vouch for this run's files,
    // nor a training's teacher stamp (a teacher's run writes its own, in `extra`).
    output.also_replace(&[
        crate::io::MANIFEST,
        crate::io::WARM_UP_MANIFEST,
        crate::session::outputs::TEACHER_STAMP,
    ]);
    crate::session::sample::tell_recovery(observer, &output, None);
    // A shard's warm-up, checked against its settings before any work.
    let warm = match split {
        Split::Shard(_) => {
            warm_up::read_for_shard(&args.problem, "augment", || warm_up::augment_hash(args))?
        }
        _ => None,
    };
    let mut pipe = Pipeline::new(observer, split, output, &AUGMENT_PHASES);
    match run(&mut pipe, args, warm.as_ref()) {
        Ok(outcome) => {
            for (name, value) in extra {
                let path = pipe.output.path(name)?;
                crate::io::write_json_atomic(&path, value)?;
            }
            pipe.output.publish()?;
            Ok(outcome)
        }
        Err(Halt::Stopped) => pipe.stopped(),
        Err(Halt::Failed(e)) => Err(e),
    }
}

/// The stages, in order (a shard starting from the whole run's warm-up `warm`).
fn run(pipe: &mut Pipeline, args: &AugmentSettings, warm: Option<&WarmUp>) -> Step<Outcome> {
    let (run, mut device) = pipe.stage(load::PHASE, None, |pipe| Ok(load::load(pipe, args)?))?;
    if let Split::WarmUp = pipe.split {
        return burn_in::warm_up_only(pipe, &run, &mut device);
    }
    let generated = generate(pipe, &run, &mut device, warm)?;
    let args = &run.args;
    let (h, w) = (run.problem.dataset.height, run.problem.dataset.width);
    let full = args.problem_settings().pixel_max;
    let sink = &generated.sink;
    let sharp = match args.method {
        AugmentMethod::Deform => deform::unsmoothed_rows(&run, &run.plan, sink),
        _ => Vec::new(),
    };
    let pixels = args
        .postprocess()
        .to_pixels_sharp(&sink.images.concat(), (h, w), full, &sharp);
    let mut caches = ["off"; 3];
    let mut encoder = Encoder {
        args: encoding::encode_args(args),
        target: &run.problem.target,
        observer: pipe.observer,
        split: pipe.split,
        backend: device.backend.as_deref_mut(),
    };
    let mut codes = sink.codes.concat();
    // A merge's codes were re-encoded by the shards.
    if args.reencode && !matches!(pipe.split, Split::Merge(_)) {
        codes = pipe.stage(reencode::PHASE, None, |_| {
            let encoding = (&run.plan, sink);
            reencode::reencode(
                &mut encoder,
                encoding,
                &pixels,
                (run.d, full),
                &mut caches[2],
            )
        })?;
    }
    let labels: Vec<u32> = run
        .plan
        .classes
        .iter()
        .zip(&sink.kept)
        .flat_map(|(c, &k)| std::iter::repeat_n(c.label, k))
        .collect();
    let (mut report, verdict) = match pipe.split {
        Split::Shard(_) => (Value::Null, None),
        _ => {
            let device = (&device.info, &device.estimate);
            report::report(&run, device, &generated, labels.len())
        }
    };
    let quality = match (pipe.split, args.no_quality) {
        (Split::Shard(_), _) | (_, true) => None,
        _ => pipe.stage(quality::PHASE, None, |pipe| {
            let generated = (pixels.as_slice(), labels.as_slice());
            quality::quality(args, &run.originals, generated, pipe.observer, &mut report)
        })?,
    };
    let no_codes = !run.writes_codes();
    let mut original = None;
    if !args.no_original_codes && !no_codes {
        original = Some(pipe.stage(original_codes::PHASE, None, |pipe| {
            let output = &mut pipe.output;
            original_codes::original_codes(&mut encoder, output, &run.originals, &mut caches[0])
        })?);
    }
    let mut test = None;
    if let Some(split) = &run.test {
        test = Some(pipe.stage(test_codes::PHASE, None, |pipe| {
            test_codes::test_codes(&mut encoder, &mut pipe.output, split, &mut caches[1])
        })?);
    }
    pipe.clock.begin(writing::PHASE, None);
    if let Split::Shard(shard) = pipe.split {
        let encoded = (original, test);
        return Ok(parts::save(
            pipe,
            (&run, &mut device),
            &generated,
            &codes,
            encoded,
            shard,
        )?);
    }
    let samples = writing::Samples {
        pixels: &pixels,
        labels: &labels,
        codes: &codes,
    };
    let encoded = writing::Encoded {
        originals: original,
        test: test.map(|codes| {
            (
                codes,
                run.test.as_ref().expect("test codes of a test split"),
            )
        }),
    };
    let labelled_codes = !args.no_original_codes && !no_codes;
    let (problem, plan) = (&run.problem, &run.plan);
    writing::write(
        &mut pipe.output,
        pipe.observer,
        (problem, plan, sink),
        &run.originals,
        samples,
        encoded,
        (no_codes, labelled_codes),
    )?;
    let (phases, seconds) = pipe.finish();
    let finished = report::Finished {
        phases,
        phases_line: pipe.clock.summary(),
        seconds,
        caches,
        lasso: device.backend.as_ref().and_then(|b| b.encode_stats()),
        verdict,
        quality,
    };
    Ok(report::finish(
        &pipe.output,
        report,
        &run,
        &device,
        &generated,
        finished,
    )?)
}

/// The samples: the chains' (their starts, burn-in and sampling; a shard's from the whole
/// run's warm-up `warm`), the amortized sampler's, or a merge's joined from its shards'.
fn generate(
    pipe: &mut Pipeline,
    run: &Loaded,
    device: &mut Device,
    warm: Option<&WarmUp>,
) -> Step<Generated> {
    let args = &run.args;
    let cap = if args.method.moves() {
        args.burn_in_cap()
    } else {
        0
    };
    let (sink, state, amortized) = match (pipe.split, device.backend.as_deref_mut()) {
        (Split::Merge(shards), _) => {
            let shape = (!run.writes_codes(), run.d, run.p);
            let (sink, state) = join_augment(shards, &run.plan, cap, shape)?;
            (sink, state, None)
        }
        (_, Some(_)) if args.method == AugmentMethod::Deform => {
            let (sink, state) = pipe.stage(sampling::PHASE, None, |_| {
                Ok(deform::deform(run, &run.plan)?)
            })?;
            (sink, state, None)
        }
        (_, Some(_)) if args.sampler.is_amortized() => {
            let (h, w) = (run.problem.dataset.height, run.problem.dataset.width);
            let (sink, state, info) = pipe.stage(sampling::PHASE, None, |_| {
                Ok(sampling::amortized(args, &run.plan, &run.target, (h, w))?)
            })?;
            (sink, state, Some(info))
        }
        (_, Some(backend)) => {
            let (sink, state) = chains(pipe, run, backend, (cap, warm))?;
            (sink, state, None)
        }
        (_, None) => return Err(Error::Internal("augment without a backend".into()).into()),
    };
    let burn_in = state
        .burn_in
        .as_ref()
        .and_then(|m| m.ended_at)
        .unwrap_or(cap);
    Ok(Generated {
        sink,
        run: state,
        burn_in,
        amortized,
        seconds: pipe.started.elapsed().as_secs_f64(),
    })
}

/// The chains' stages: their starts, their burn-in (`cap`), their kept iterations; a shard
/// with the whole run's warm-up `warm` starts its chains from it instead.
fn chains(
    pipe: &mut Pipeline,
    run: &Loaded,
    backend: &mut dyn crate::backend::Backend,
    (cap, warm): (u32, Option<&WarmUp>),
) -> Step<(AugmentSink, SampleRun)> {
    let (target, settings) = (run.target.as_ref(), &run.settings);
    let range = run.chains.clone();
    if !run.args.method.moves() {
        let state = pipe.stage(starts::PHASE, None, |_| {
            Ok(starts::starts(backend, target, settings)?)
        })?;
        let mut sink = AugmentSink::for_chains(&run.plan, range, 0, !run.kernel);
        let state = starts::starts_as_samples(backend, state, &mut sink)?;
        return Ok((sink, state));
    }
    let (state, class_steps) = match warm {
        Some(warm) => {
            let start = pipe.stage(burn_in::PHASE, None, |_| {
                Ok(burn_in::shard_start(run, backend, warm)?)
            })?;
            (start.state.run, start.class_steps)
        }
        None => (warmed_up(pipe, run, backend, cap)?, None),
    };
    let burn_in = state.burn_in.as_ref().map_or(cap, |m| m.burn_in());
    let mut sink = AugmentSink::for_chains(&run.plan, range, burn_in, !run.kernel);
    let kept = (settings.samples - cap) as u64;
    let mut state = pipe.stage(sampling::PHASE, Some(kept), |pipe| {
        let problem = (target, settings);
        sampling::sampling(pipe, backend, problem, state, burn_in, &mut sink)
    })?;
    // The shard's trace holds the warm-up's per-class steps as the whole run numbers them.
    if class_steps.is_some() {
        state.class_steps = class_steps;
    }
    Ok((sink, state))
}

/// The chains started and warmed up: the stages "LASSO starts" and "burn-in" (`cap` outer
/// iterations at most; none when 0).
fn warmed_up(
    pipe: &mut Pipeline,
    run: &Loaded,
    backend: &mut dyn crate::backend::Backend,
    cap: u32,
) -> Step<SampleRun> {
    let (target, settings) = (run.target.as_ref(), &run.settings);
    let state = pipe.stage(starts::PHASE, None, |_| {
        Ok(starts::starts(backend, target, settings)?)
    })?;
    match cap {
        0 => Ok(state),
        _ => pipe.stage(burn_in::PHASE, Some(cap as u64), |pipe| {
            burn_in::burn_in(pipe, backend, target, settings, state, cap)
        }),
    }
}
