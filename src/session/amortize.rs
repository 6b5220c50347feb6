//! Amortised augmentation: `AmortizeTrainer` fits a class-conditional code sampler to augment's MCMC samples (the teacher), and `augment --sampler amortized` draws from it.
//!
//! Training runs in two stages. (1) The teacher: an ordinary augmentation ([`Augmenter`]) with
//! the given settings, written to `MODEL.teacher/` (without the quality metrics or the
//! originals' codes); its generated codes, per class, are the samples of the target that the
//! MCMC path samples. It is reused when a finished one with the same settings is there. (2) One
//! [`CodeModel`] operator per class fitted to those codes, with progress through the
//! [`Observer`]; a stop writes the state to `MODEL.partial` and running the same training again
//! continues from it, taking exactly the steps an uninterrupted run takes (the same bytes). The
//! model is written atomically to `MODEL` at the end.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::amortize::{CodeModel, CodeTrainSettings, ModelShape};
use crate::io;
use crate::model::Target;
use crate::orchestrator::augment::{AugmentPlan, AugmentSink};
use crate::orchestrator::checkpoint::hash_values;
use crate::orchestrator::SampleRun;
use crate::{Error, Result};

use super::observer::{Observer, Phase};
use super::settings::{AugmentMethod, AugmentSettings};
use super::{Augmenter, Outcome};

/// Seconds between two checkpoints of a training (one is also written at a stop).
const CHECKPOINT_SECONDS: f64 = 60.0;
/// Steps per class between two polls of the stop request.
const ROUND_STEPS: u32 = 5;
/// Steps per class between polls when the network trains on the GPU, where a round uploads and
/// reads back each class's network and optimiser state.
#[cfg(feature = "gpu")]
const GPU_ROUND_STEPS: u32 = 50;

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
    /// Replace an existing model file.
    pub force: bool,
}

/// The teacher's folder for model file `model`: `MODEL.teacher` beside it.
pub fn teacher_dir(model: &Path) -> PathBuf {
    with_suffix(model, ".teacher")
}

/// The checkpoint of a training into `model`: `MODEL.partial` beside it.
pub fn partial_path(model: &Path) -> PathBuf {
    with_suffix(model, ".partial")
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Reads and checks a model file (magic, version, length, checksum, sizes).
pub fn load_model(path: &Path) -> Result<CodeModel> {
    let bytes = std::fs::read(path).map_err(|e| {
        Error::input(
            path,
            format!("cannot read the amortised-sampler model: {e}"),
        )
    })?;
    CodeModel::from_bytes(path, &bytes)
}

/// Writes `model` to `path` atomically.
pub fn save_model(path: &Path, model: &CodeModel) -> Result<()> {
    let bytes = model.to_bytes()?;
    io::write_atomic(path, |w| w.write_all(&bytes))
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
        train(&self.settings, observer)
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
    t.sampler = super::settings::SamplerChoice::Mcmc;
    t.model = None;
    t
}

/// What a finished teacher leaves besides augment's files: its settings, to tell whether it can
/// be reused.
const TEACHER_STAMP: &str = "teacher.json";

fn train(args: &AmortizeSettings, observer: &dyn Observer) -> Result<Outcome> {
    let started = Instant::now();
    args.train.validate()?;
    if args.teacher.method == AugmentMethod::KernelHmc {
        return Err(Error::usage(
            "method",
            "kernel-hmc samples images and has no codes to learn from; use rmld, hmc or another \
             code sampler as the teacher",
        ));
    }
    if args.teacher.sampler != super::settings::SamplerChoice::Mcmc || args.teacher.model.is_some()
    {
        return Err(Error::usage(
            "sampler",
            "the teacher of a training is the MCMC sampler; leave out sampler and model",
        ));
    }
    if args.model.is_dir() {
        return Err(Error::input(
            &args.model,
            "is a folder; the model is a file",
        ));
    }
    if args.model.exists() && !args.force {
        return Err(Error::usage(
            "force",
            format!(
                "{} exists; pass --force to replace it",
                args.model.display()
            ),
        ));
    }
    let teacher = teacher_settings(args);
    let tdir = teacher.problem.out.clone();
    let stamp_path = tdir.join(TEACHER_STAMP);
    let stamp = serde_json::to_value(&teacher)
        .map_err(|e| Error::Internal(format!("teacher settings: {e}")))?;
    let reused = std::fs::read(&stamp_path)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|v| v == stamp);
    let mut teacher_seconds = 0.0;
    if !reused {
        let t0 = Instant::now();
        observer.stage_start("teacher (MCMC augmentation)");
        let outcome = Augmenter::new(teacher.clone()).run(observer)?;
        if outcome.interrupted {
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
        }
        io::write_json_atomic(&stamp_path, &stamp)?;
        teacher_seconds = t0.elapsed().as_secs_f64();
    }
    let codes_path = tdir.join("generated-codes.npy");
    let (shape, codes) = io::read_npy_matrix_f32(&codes_path)?;
    let labels = io::read_npy_labels(&tdir.join("generated-labels.npy"))?;
    let (dshape, dict) = io::read_npy_matrix_f32(&tdir.join("dictionary.npy"))?;
    let report: serde_json::Value = serde_json::from_slice(
        &std::fs::read(tdir.join("report.json"))
            .map_err(|e| Error::input(tdir.join("report.json"), e.to_string()))?,
    )
    .map_err(|e| Error::input(tdir.join("report.json"), e.to_string()))?;
    let p = shape[1];
    if labels.len() != shape[0] || dshape[1] != p {
        return Err(Error::input(
            &codes_path,
            "the teacher's codes, labels and dictionary disagree in size",
        ));
    }
    let dim = |k: &str| report["dataset"][k].as_u64().unwrap_or(0) as usize;
    let mut classes: Vec<u32> = labels.clone();
    classes.sort_unstable();
    classes.dedup();
    let model_shape = ModelShape {
        height: dim("height"),
        width: dim("width"),
        p,
        dictionary_hash: hash_values(
            &[dshape[0] as u64, dshape[1] as u64],
            bytemuck::cast_slice(&dict),
        ),
        classes: classes.clone(),
    };
    let per_class: Vec<Vec<f32>> = classes
        .iter()
        .map(|&c| {
            labels
                .iter()
                .zip(codes.chunks_exact(p))
                .filter(|(&l, _)| l == c)
                .flat_map(|(_, row)| row.iter().copied())
                .collect()
        })
        .collect();
    // Recorded without the folders, so that a model does not depend on where it was trained.
    let mut recorded = teacher.clone();
    recorded.problem.out = PathBuf::from("MODEL.teacher");
    recorded.code_cache = None;
    let teacher_text = serde_json::to_string(&recorded)
        .map_err(|e| Error::Internal(format!("teacher settings: {e}")))?;
    let fresh = CodeModel::new(model_shape, args.train.clone(), teacher_text, &per_class)?;
    // Continue from a checkpoint of the same training, if there is one.
    let partial = partial_path(&args.model);
    let mut model = match partial.exists() {
        true => {
            let saved = load_model(&partial)?;
            if saved.shape != fresh.shape
                || saved.settings != fresh.settings
                || saved.teacher != fresh.teacher
            {
                return Err(Error::input(
                    &partial,
                    "is the checkpoint of another training (other teacher, data or settings); \
                     remove it to start this one",
                ));
            }
            let done = saved.steps_done();
            let _ = done;
            observer.stage_start("resuming the fitting from its checkpoint");
            saved
        }
        false => fresh,
    };
    let total = args.train.fit_steps as u64 * model.classes.len() as u64;
    // The network trains where it would generate (`generation_device`).
    let device = generation_device(args.teacher.problem.backend)?;
    let fit_started = Instant::now();
    let steps_before = model.steps_done();
    observer.phase_start(&Phase {
        name: "fitting",
        len: Some(total),
        unit: "steps",
    });
    observer.phase_advance(steps_before);
    // Every class in parallel, a round of steps at a time: the stop request is polled and the
    // progress moved between rounds, and a checkpoint written every CHECKPOINT_SECONDS.
    let mut last_checkpoint = Instant::now();
    while !model.complete() {
        if observer.stop_requested() {
            save_model(&partial, &model)?;
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
        match &device {
            #[cfg(feature = "gpu")]
            Some(context) => model.train_round_on_gpu(GPU_ROUND_STEPS, context)?,
            _ => model.train_round(ROUND_STEPS),
        }
        observer.phase_advance(model.steps_done());
        if last_checkpoint.elapsed().as_secs_f64() >= CHECKPOINT_SECONDS && !model.complete() {
            save_model(&partial, &model)?;
            last_checkpoint = Instant::now();
        }
    }
    observer.phase_finish();
    // The finished model keeps no optimiser state (MODEL.partial had it, for resuming).
    model.drop_optimiser_state();
    save_model(&args.model, &model)?;
    if partial.exists() {
        std::fs::remove_file(&partial).map_err(|source| Error::Output {
            path: partial.clone(),
            source,
        })?;
    }
    let fit_seconds = fit_started.elapsed().as_secs_f64();
    let report = json!({
        "command": "amortize train",
        "model": args.model.display().to_string(),
        "teacher_folder": tdir.display().to_string(),
        "teacher_reused": reused,
        "teacher_seconds": teacher_seconds,
        "teacher_samples": labels.len(),
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
    io::write_json_atomic(&with_suffix(&args.model, ".json"), &report)?;
    Ok(Outcome {
        interrupted: false,
        summary: vec![format!(
            "rmld amortize train: {} classes from {} teacher samples (teacher {}, {:.1} s); \
             fitted in {fit_seconds:.1} s; wrote {}",
            classes.len(),
            labels.len(),
            if reused { "reused" } else { "run" },
            teacher_seconds,
            args.model.display()
        )],
        report,
        draw_stats: None,
    })
}

/// Where the learned sampler's network runs (generation and training): the GPU for `gpu`, and
/// for `auto` when a hardware adapter exists (a software one is slower than the CPU's gemm);
/// else the CPU (None).
#[cfg(feature = "gpu")]
type GenerationDevice = Option<std::sync::Arc<crate::backend::gpu::GpuContext>>;
#[cfg(not(feature = "gpu"))]
type GenerationDevice = Option<()>;

/// The device's name for the report: the adapter's, or "CPU".
fn device_name(device: &GenerationDevice) -> String {
    match device {
        #[cfg(feature = "gpu")]
        Some(context) => context.describe(),
        _ => "CPU".to_string(),
    }
}

#[cfg(feature = "gpu")]
fn generation_device(choice: super::BackendChoice) -> Result<GenerationDevice> {
    use crate::backend::gpu::{adapter_available, software_adapter, GpuContext};
    match choice {
        super::BackendChoice::Cpu => Ok(None),
        super::BackendChoice::Gpu => Ok(Some(GpuContext::shared()?)),
        super::BackendChoice::Auto => Ok((adapter_available() && software_adapter().is_none())
            .then(GpuContext::shared)
            .transpose()
            .ok()
            .flatten()),
    }
}

#[cfg(not(feature = "gpu"))]
fn generation_device(choice: super::BackendChoice) -> Result<GenerationDevice> {
    match choice {
        super::BackendChoice::Gpu => Err(Error::Gpu(
            "this rmld was built without the `gpu` feature".into(),
        )),
        _ => Ok(None),
    }
}

/// `augment --sampler amortized`: the model's samples for every class of `plan`, as the MCMC
/// path's sink and an empty run (no chains) hold them; images are A·z, as the chains' are.
pub(crate) fn amortized_generation(
    args: &AugmentSettings,
    plan: &AugmentPlan,
    target: &Target,
    height: usize,
    width: usize,
) -> Result<(AugmentSink, SampleRun, serde_json::Value)> {
    let path = args.model.as_deref().ok_or_else(|| {
        Error::usage(
            "model",
            "--sampler amortized needs the model file (--model, from `rmld amortize train`)",
        )
    })?;
    let model = load_model(path)?;
    if !model.complete() {
        return Err(Error::input(
            path,
            "holds an unfinished training; finish it with `rmld amortize train`",
        ));
    }
    let (_, dictionary_hash) = super::sample::hashes(target);
    let want = ModelShape {
        height,
        width,
        p: target.p(),
        dictionary_hash,
        classes: plan.classes.iter().map(|c| c.label).collect(),
    };
    model.check_matches(path, &want)?;
    let gpu = generation_device(args.problem.backend)?;
    let started = Instant::now();
    let mut sink = AugmentSink::new(plan, 0, true);
    let dict = &target.dictionary;
    let (d, p) = (dict.d, dict.p);
    for (i, class) in plan.classes.iter().enumerate() {
        let k = model
            .class_index(class.label)
            .ok_or_else(|| Error::Internal("class checked above".into()))?;
        let codes = match &gpu {
            #[cfg(feature = "gpu")]
            Some(context) => {
                model.sample_on_gpu(context.clone(), k, class.generated, args.problem.seed)?
            }
            _ => model.sample(k, class.generated, args.problem.seed),
        };
        // A z for every code, as the chains' images are made (Z Aᵀ − 0 through gemm).
        let mut images = vec![0.0f32; class.generated * d];
        let zeros = vec![0.0f32; class.generated * d];
        crate::backend::cpu::matmul::residual_product(&dict.a, d, p, &codes, &zeros, &mut images);
        sink.kept[i] = class.generated;
        sink.positions[i] = (0..class.generated).collect();
        sink.codes[i] = codes;
        sink.images[i] = images;
    }
    let seconds = started.elapsed().as_secs_f64();
    let generated: usize = sink.kept.iter().sum();
    let chains = plan.chains();
    let run = SampleRun {
        accepted: vec![0; chains],
        divergent: vec![0; chains],
        ..SampleRun::default()
    };
    let info = json!({
        "model": path.display().to_string(),
        "format_version": crate::amortize::MODEL_VERSION,
        "settings": model.settings,
        "macs_per_sample": model.macs_per_sample(),
        "generation_device": device_name(&gpu),
        "generation_seconds": seconds,
        "samples_per_second": generated as f64 / seconds.max(1e-9),
    });
    Ok((sink, run, info))
}
