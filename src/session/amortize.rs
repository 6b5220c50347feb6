//! Amortised augmentation: `AmortizeTrainer` fits a class-conditional code sampler to augment's MCMC samples (the teacher), and `augment --sampler amortized` draws from it.
//!
//! Training runs in two stages. (1) The teacher: an ordinary augmentation ([`Augmenter`]) with
//! the given settings, written to `MODEL.teacher/` (without the quality metrics or the
//! originals' codes); its generated codes, per class, are the samples of the target that the
//! MCMC path samples. It is reused when a finished one with the same settings is there: its
//! stamp (`teacher.json`, the settings) is published with its files, all or none, so a teacher
//! folder holds a stamped teacher or an earlier one, never one a rerun cannot tell. (2) One
//! [`CodeModel`] operator per class fitted to those codes, with progress through the
//! [`Observer`]; a stop writes the state to `MODEL.partial` (with the build and device that
//! fitted it in `MODEL.partial.json`) and running the same training again, with that build on
//! that device, continues from it, taking exactly the steps an uninterrupted run takes (the
//! same bytes). The model and its report are written as one output at the end. A training holds
//! the lock `MODEL.lock` from its first file to its last, so a second training into the same
//! model (which would share its teacher and checkpoint) is refused while one runs.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::amortize::teacher::with_suffix;
pub use crate::amortize::{load_model, partial_path, save_model, teacher_dir};
use crate::amortize::{read_teacher, CodeModel, CodeTrainSettings, MAX_JSON_BYTES};
use crate::io::{self, output_folder};
use crate::{Error, Result};

use super::observer::Observer;
use super::outputs::{AUGMENT_OUTPUTS, TEACHER_STAMP};
use super::settings::{AugmentSettings, SamplerChoice};
use super::{Augmenter, Outcome};
use crate::orchestrator::amortized::{
    device_name, fit, fresh_or_resumed, generation_device, partial_stamp, remove_partial,
};

/// Settings of `rmld amortize train`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AmortizeSettings {
    /// The teacher augmentation: its data, dictionary, classes, target and sampler settings
    /// (its `problem.out` is replaced by `MODEL.teacher`).
    pub teacher: AugmentSettings,
    /// The model file to write.
    pub model: PathBuf,
    /// The operator's size and training.
    pub train: CodeTrainSettings,
    /// Replace an existing model and its report, and the files of a teacher of other settings
    /// in `MODEL.teacher` (never an input of the training).
    pub force: bool,
}

/// Trains an amortised sampler (see the module's documentation).
#[derive(Clone, Debug)]
pub struct AmortizeTrainer {
    settings: AmortizeSettings,
}

impl AmortizeTrainer {
    /// A training with these settings (checked when it runs).
    pub fn new(settings: AmortizeSettings) -> Self {
        AmortizeTrainer { settings }
    }

    /// Runs (or continues) the training. Stopped by the observer during the teacher, the
    /// teacher keeps nothing and runs again next time; during the fitting, the state so far is
    /// in `MODEL.partial` and `interrupted` is set.
    pub fn run(&self, observer: &dyn Observer) -> Result<Outcome> {
        train(&self.settings, observer).map_err(named_model)
    }
}

/// The training's errors as its settings name them: what augment's checks and the output
/// folder's helpers call `out` (the file or folder a run writes) is here the model file
/// `model`, or `MODEL.teacher` beside it, the teacher's folder (`AmortizeSettings` has no
/// `out`; the command line writes `model` as its `--out` again).
fn named_model(error: Error) -> Error {
    match error {
        Error::Usage { field, message } => Error::Usage {
            field: if field == "out" { "model" } else { field },
            message: message.replace("`out`", "`model`"),
        },
        other => other,
    }
}

/// The teacher's settings as they run: into the teacher folder, no quality metrics, no codes of
/// the originals or the test split.
fn teacher_settings(args: &AmortizeSettings) -> AugmentSettings {
    let mut t = args.teacher.clone();
    t.problem.out = teacher_dir(&args.model);
    t.problem.force = true;
    t.no_quality = true;
    t.no_original_codes = true;
    t.encode_test = false;
    t.sampler = SamplerChoice::Mcmc;
    t.model = None;
    t
}

/// Refuses what a training cannot run: a teacher without codes, one that is not the MCMC
/// sampler, a teacher split into shards or warm-ups, files that would replace an input
/// ([`refuse_over_inputs`]). Reads no output (see [`refuse_replacing`]).
fn check(args: &AmortizeSettings) -> Result<()> {
    args.train.validate()?;
    let problem = &args.teacher.problem;
    let split = [
        (problem.shard.is_some(), "shard"),
        (problem.warm_up_only, "warm_up_only"),
        (problem.warm_up.is_some(), "warm_up"),
    ];
    if let Some((_, field)) = split.into_iter().find(|(given, _)| *given) {
        return Err(Error::usage(
            field,
            "a training fits every class to the whole teacher run, which it runs itself in \
             one process: it has no shards or warm-ups to merge; leave it out",
        ));
    }
    if args.teacher.method.samples_images() {
        return Err(Error::usage(
            "method",
            "kernel-hmc samples images and has no codes to learn from; use rmld, hmc or another \
             code sampler as the teacher",
        ));
    }
    if args.teacher.sampler.is_amortized() || args.teacher.model.is_some() {
        return Err(Error::usage(
            "sampler",
            "the teacher of a training is the MCMC sampler; leave out sampler and model",
        ));
    }
    refuse_over_inputs(args)
}

/// The lock a training holds while it runs: `MODEL.lock`.
fn model_lock(model: &Path) -> PathBuf {
    with_suffix(model, ".lock")
}

/// The teacher's files: augment's outputs and the stamp.
fn teacher_files() -> Vec<&'static str> {
    let mut names = AUGMENT_OUTPUTS.to_vec();
    names.push(TEACHER_STAMP);
    names
}

/// Refuses a training whose files (the model, its report, its checkpoint and the checkpoint's
/// stamp, its lock, the teacher's folder and files) would replace an input, even with `force`.
fn refuse_over_inputs(args: &AmortizeSettings) -> Result<()> {
    let model = &args.model;
    let report = with_suffix(model, ".json");
    let partial = partial_path(model);
    let tdir = &teacher_dir(model);
    let t = &args.teacher;
    // The code cache is read (and written) by the teacher: an input like the others, and no
    // file of the training goes in it, not even once the teacher has made it.
    let inputs = [
        t.problem.data.as_deref(),
        t.labels.as_deref(),
        t.problem.dictionary.as_deref(),
        t.code_cache.as_deref(),
    ];
    let lock = model_lock(model);
    let beside = [
        model,
        &report,
        &partial,
        &partial_stamp(&partial),
        &lock,
        tdir,
    ];
    let beside = beside.map(PathBuf::as_path);
    output_folder::refuse_outputs_in_code_cache(&beside, t.code_cache.as_deref())?;
    output_folder::refuse_files_over_inputs(&beside, &inputs)?;
    let in_teacher: Vec<PathBuf> = teacher_files().iter().map(|n| tdir.join(n)).collect();
    let in_teacher: Vec<&Path> = in_teacher.iter().map(PathBuf::as_path).collect();
    output_folder::refuse_files_over_inputs(&in_teacher, &inputs)
}

/// Refuses, without `force`, a training whose files would replace an existing file: but for
/// what a resumed training continues from, its checkpoint and a finished teacher of the same
/// settings (reused, so not written). Checked once a publication of the teacher that a killed
/// training left half done is finished ([`finish_teacher_publication`]).
fn refuse_replacing(args: &AmortizeSettings, teacher: &AugmentSettings) -> Result<()> {
    let model = &args.model;
    let report = with_suffix(model, ".json");
    let partial = partial_path(model);
    let tdir = &teacher.problem.out;
    let mut in_teacher = teacher_files();
    output_folder::refuse_existing_file(model, "model", args.force)?;
    output_folder::refuse_existing_file(&report, "model's report", args.force)?;
    output_folder::refuse_existing_file(&partial, "training checkpoint", true)?;
    if !args.force && !teacher_reusable(teacher, &teacher_stamp(teacher)?) {
        // A teacher stopped earlier left only its report saying so: running again replaces it.
        if stopped_teacher(tdir) {
            in_teacher.retain(|name| *name != "report.json");
        }
        if let Some(existing) = output_folder::first_existing(tdir, &in_teacher) {
            // The output is the model file; its teacher's folder comes with it.
            return Err(Error::usage(
                "model",
                format!(
                    "{} already exists (a teacher of other settings, or a file of yours) and \
                     this training would replace it: give `force` to replace the teacher's \
                     files in {}, or choose another `model`",
                    existing.display(),
                    tdir.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Finishes the publication of a teacher's files (its stamp among them) that a training killed
/// while publishing them left half done, as the teacher's own run does before it looks at its
/// folder: the folder then holds the whole teacher, stamp and all, before a rerun asks whether
/// it can reuse it.
fn finish_teacher_publication(tdir: &Path) -> Result<()> {
    if tdir.join(io::JOURNAL).symlink_metadata().is_err() {
        return Ok(());
    }
    let _lock = output_folder::lock_output(tdir)?;
    io::recover(tdir)?;
    Ok(())
}

/// True when `tdir/report.json` is the report of an augmentation that was stopped.
fn stopped_teacher(tdir: &Path) -> bool {
    output_folder::read_report(tdir)
        .ok()
        .flatten()
        .is_some_and(|v| v["command"] == "augment" && v["interrupted"] == true)
}

/// The stamp a finished teacher leaves: its settings.
fn teacher_stamp(teacher: &AugmentSettings) -> Result<serde_json::Value> {
    // The stamp lies in the teacher's folder: a teacher moved with its model is still its own.
    serde_json::to_value(without_folders(teacher))
        .map_err(|e| Error::Internal(format!("teacher settings: {e}")))
}

/// The teacher's settings without its folder and code cache, which change where files lie, not
/// what they hold: what a model records and a stamp vouches for.
fn without_folders(teacher: &AugmentSettings) -> AugmentSettings {
    let mut recorded = teacher.clone();
    recorded.problem.out = PathBuf::from("MODEL.teacher");
    recorded.code_cache = None;
    recorded
}

/// True when the teacher's folder holds a finished teacher with these settings (`stamp`): the
/// stamp, and beside it the report of a finished augmentation. An augmentation run into the
/// folder removes the stamp; the report catches another command's files written over it
/// (`rmld sample --force` replaces the report and the dictionary).
fn teacher_reusable(teacher: &AugmentSettings, stamp: &serde_json::Value) -> bool {
    let tdir = &teacher.problem.out;
    let stamped = io::read_regular_file(&tdir.join(TEACHER_STAMP), "teacher stamp", MAX_JSON_BYTES)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|v| v == *stamp);
    stamped
        && output_folder::read_report(tdir)
            .ok()
            .flatten()
            .is_some_and(|v| v["command"] == "augment" && v["interrupted"] == false)
}

/// How the teacher ran: reused from an earlier training, or run now (for how long).
struct TeacherRun {
    reused: bool,
    seconds: f64,
}

/// Runs the teacher into its folder unless a finished one with the same settings is there;
/// `None` when the observer stopped it. The stamp is published with the teacher's files.
fn run_teacher(teacher: &AugmentSettings, observer: &dyn Observer) -> Result<Option<TeacherRun>> {
    let stamp = teacher_stamp(teacher)?;
    let reused = teacher_reusable(teacher, &stamp);
    if reused {
        return Ok(Some(TeacherRun {
            reused,
            seconds: 0.0,
        }));
    }
    let t0 = Instant::now();
    observer.stage_start("teacher (MCMC augmentation)");
    let outcome = Augmenter::new(teacher.clone()).run_with(observer, &[(TEACHER_STAMP, &stamp)])?;
    if outcome.interrupted {
        return Ok(None);
    }
    Ok(Some(TeacherRun {
        reused,
        seconds: t0.elapsed().as_secs_f64(),
    }))
}

fn train(args: &AmortizeSettings, observer: &dyn Observer) -> Result<Outcome> {
    let started = Instant::now();
    check(args)?;
    // Held until the training ends: its teacher, checkpoint and model are this run's alone.
    let _lock = output_folder::lock_beside(&args.model, &model_lock(&args.model), "training")?;
    let teacher = teacher_settings(args);
    let tdir = teacher.problem.out.clone();
    finish_teacher_publication(&tdir)?;
    refuse_replacing(args, &teacher)?;
    let Some(teacher_run) = run_teacher(&teacher, observer)? else {
        return Ok(Outcome {
            interrupted: true,
            report: serde_json::Value::Null,
            summary: vec![format!(
                "rmld amortize train: stopped in the teacher run ({}); nothing kept, run the \
                 same command to start again",
                tdir.display()
            )],
            draw_stats: None,
        });
    };
    let samples = read_teacher(&tdir)?;
    let (classes, p) = (samples.shape.classes.clone(), samples.shape.p);
    // Recorded without the folders, so that a model does not depend on where it was trained.
    let teacher_text = serde_json::to_string(&without_folders(&teacher))
        .map_err(|e| Error::Internal(format!("teacher settings: {e}")))?;
    let fresh = CodeModel::new(
        samples.shape,
        args.train.clone(),
        teacher_text,
        &samples.per_class,
    )?;
    // Continue from a checkpoint of the same training, if there is one.
    let partial = partial_path(&args.model);
    // The network trains where it would generate (`generation_device`).
    let device = generation_device(args.teacher.problem.backend)?;
    let mut model = fresh_or_resumed(fresh, &partial, &device, observer)?;
    let total = args.train.fit_steps as u64 * model.classes.len() as u64;
    let fit_started = Instant::now();
    let steps_before = model.steps_done();
    if !fit(&mut model, &device, total, &partial, observer)? {
        let done = model.steps_done();
        return Ok(Outcome {
            interrupted: true,
            report: serde_json::Value::Null,
            summary: vec![format!(
                "rmld amortize train: stopped at step {done} of {total}; the state is in \
                 {}; run the same command to continue",
                partial.display()
            )],
            draw_stats: None,
        });
    }
    // The finished model keeps no optimiser state (MODEL.partial had it, for resuming).
    model.drop_optimiser_state();
    let fit_seconds = fit_started.elapsed().as_secs_f64();
    let report = json!({
        "command": "amortize train",
        "model": args.model.display().to_string(),
        "teacher_folder": tdir.display().to_string(),
        "teacher_reused": teacher_run.reused,
        "teacher_seconds": teacher_run.seconds,
        "teacher_samples": samples.samples,
        "classes": classes,
        "p": p,
        "settings": args.train,
        "fit_seconds": fit_seconds,
        "fit_threads": rayon::current_num_threads(),
        "fit_device": device_name(&device),
        "steps_resumed_from": steps_before,
        "final_loss": model.classes.iter().map(|c| c.last_loss).collect::<Vec<_>>(),
        "macs_per_sample": model.macs_per_sample(),
        "seconds": started.elapsed().as_secs_f64(),
    });
    // The model and its report are one output: both are written out before either replaces
    // anything, the model last, so a full disk leaves an earlier model and its report as they
    // were (and no model without its report), and the partial state stays for a rerun.
    let mut report_bytes = serde_json::to_vec_pretty(&report)
        .map_err(|e| Error::Internal(format!("cannot serialise the report: {e}")))?;
    report_bytes.push(b'\n');
    let report_path = with_suffix(&args.model, ".json");
    io::write_files_atomic(&[
        (&report_path, &report_bytes),
        (&args.model, &model.to_bytes()?),
    ])?;
    remove_partial(&partial)?;
    Ok(Outcome {
        interrupted: false,
        summary: vec![format!(
            "rmld amortize train: {} classes from {} teacher samples (teacher {}, {:.1} s); \
             fitted in {fit_seconds:.1} s; wrote {}",
            classes.len(),
            samples.samples,
            if teacher_run.reused { "reused" } else { "run" },
            teacher_run.seconds,
            args.model.display()
        )],
        report,
        draw_stats: None,
    })
}
