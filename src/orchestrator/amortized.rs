//! The amortised code sampler run: where its network runs, its samples for every class of an augmentation's plan (`augment --sampler amortized`), and its fitting a round at a time with checkpoints (`rmld amortize train`).

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use crate::amortize::load_model;
use crate::amortize::{save_model, CodeModel, ModelShape};
use crate::backend::cpu::packed::PackedOperand;
use crate::model::Target;
use crate::orchestrator::augment::{AugmentPlan, AugmentSink};
use crate::orchestrator::SampleRun;
use crate::{Error, Result};

use super::backend_choice::BackendChoice;
use super::observer::{Observer, Phase};

/// Seconds between two checkpoints of a training (one is also written at a stop).
const CHECKPOINT_SECONDS: f64 = 60.0;
/// Steps per class between two polls of the stop request.
const ROUND_STEPS: u32 = 5;
/// Steps per class between polls when the network trains on the GPU, where a round uploads and
/// reads back each class's network and optimiser state.
#[cfg(feature = "gpu")]
const GPU_ROUND_STEPS: u32 = 50;

/// Where the learned sampler's network runs (generation and training): the GPU for `gpu`, and
/// for `auto` when a hardware adapter exists (a software one is slower than the CPU's gemm);
/// else the CPU (None).
#[cfg(feature = "gpu")]
pub(crate) type GenerationDevice = Option<std::sync::Arc<crate::backend::gpu::GpuContext>>;
#[cfg(not(feature = "gpu"))]
pub(crate) type GenerationDevice = Option<()>;

/// The device's name for the report: the adapter's, or "CPU".
pub(crate) fn device_name(device: &GenerationDevice) -> String {
    match device {
        #[cfg(feature = "gpu")]
        Some(context) => context.describe(),
        _ => "CPU".to_string(),
    }
}

#[cfg(feature = "gpu")]
pub(crate) fn generation_device(choice: BackendChoice) -> Result<GenerationDevice> {
    use crate::backend::gpu::{adapter_available, software_adapter, GpuContext};
    match choice {
        BackendChoice::Cpu => Ok(None),
        BackendChoice::Gpu => Ok(Some(GpuContext::shared()?)),
        BackendChoice::Auto => Ok((adapter_available() && software_adapter().is_none())
            .then(GpuContext::shared)
            .transpose()
            .ok()
            .flatten()),
    }
}

#[cfg(not(feature = "gpu"))]
pub(crate) fn generation_device(choice: BackendChoice) -> Result<GenerationDevice> {
    match choice {
        BackendChoice::Gpu => Err(Error::Gpu(
            "this rmld was built without the `gpu` feature".into(),
        )),
        _ => Ok(None),
    }
}

/// `augment --sampler amortized`: the model's samples for every class of `plan`, as the MCMC
/// path's sink and an empty run (no chains) hold them; images are A·z, as the chains' are.
pub(crate) fn amortized_generation(
    (model_path, backend, seed, pixel_max): (Option<&Path>, BackendChoice, u64, f32),
    plan: &AugmentPlan,
    target: &Target,
    height: usize,
    width: usize,
) -> Result<(AugmentSink, SampleRun, serde_json::Value)> {
    let path = model_path.ok_or_else(|| {
        Error::usage(
            "model",
            "--sampler amortized needs the model file (--model, from `rmld amortize train`)",
        )
    })?;
    let model = CodeModel::load(path)?;
    if !model.complete() {
        return Err(Error::input(
            path,
            "holds an unfinished training; finish it with `rmld amortize train`",
        ));
    }
    let (_, dictionary_hash) = super::identity::input_hashes(target);
    let want = ModelShape {
        height,
        width,
        p: target.p(),
        dictionary_hash,
        classes: plan.classes.iter().map(|c| c.label).collect(),
    };
    model.check_matches(path, &want)?;
    model.check_pixel_max(path, pixel_max)?;
    let gpu = generation_device(backend)?;
    let started = Instant::now();
    let mut sink = AugmentSink::new(plan, 0, true);
    let dict = &target.dictionary;
    let (d, p) = (dict.d, dict.p);
    let transposed_dictionary = PackedOperand::try_from_transpose(&dict.a, d, p)?;
    for (i, class) in plan.classes.iter().enumerate() {
        let k = model
            .class_index(class.label)
            .ok_or_else(|| Error::Internal("class checked above".into()))?;
        let codes = match &gpu {
            #[cfg(feature = "gpu")]
            Some(context) => model.sample_on_gpu(context.clone(), k, class.generated, seed)?,
            _ => model.sample(k, class.generated, seed),
        };
        // A z for every code, as the chains' images are made (Z Aᵀ on the packed kernels).
        let mut images = vec![0.0f32; class.generated * d];
        transposed_dictionary.product(&codes, None, &mut images);
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

/// What made a training's checkpoint, beside it (`MODEL.partial.json`): the build and the
/// device that fitted it. Another build or device would not take the steps an uninterrupted run
/// takes, so a checkpoint is continued only by its own.
pub(crate) fn partial_stamp(partial: &Path) -> std::path::PathBuf {
    crate::amortize::teacher::with_suffix(partial, ".json")
}

/// The stamp's contents for a fitting on `device`.
fn stamp_of(device: &GenerationDevice) -> serde_json::Value {
    json!({ "rmld_build": crate::BUILD, "fit_device": device_name(device) })
}

/// Writes the training's checkpoint: its stamp first, then the model with its optimiser state
/// (the stamp says the same for every checkpoint of one training).
fn save_partial(partial: &Path, model: &CodeModel, device: &GenerationDevice) -> Result<()> {
    crate::io::write_json_atomic(&partial_stamp(partial), &stamp_of(device))?;
    save_model(partial, model)
}

/// Removes a finished training's checkpoint and its stamp (either missing is fine).
pub(crate) fn remove_partial(partial: &Path) -> Result<()> {
    crate::io::remove_file_if_present(partial)?;
    crate::io::remove_file_if_present(&partial_stamp(partial))
}

/// The model to fit: a fresh one, or the checkpoint in `partial` of the same training, made by
/// this build on this `device`.
pub(crate) fn fresh_or_resumed(
    fresh: CodeModel,
    partial: &Path,
    device: &GenerationDevice,
    observer: &dyn Observer,
) -> Result<CodeModel> {
    if !partial.exists() {
        return Ok(fresh);
    }
    let stamp_path = partial_stamp(partial);
    // A stamp that is not JSON reads as null: a foreign stamp, refused below.
    let stamp: Option<serde_json::Value> = match stamp_path.symlink_metadata() {
        Ok(_) => {
            let bytes = crate::io::read_regular_file(&stamp_path, "checkpoint stamp", 1 << 16)?;
            Some(serde_json::from_slice(&bytes).unwrap_or_default())
        }
        Err(_) => None,
    };
    let here = stamp_of(device);
    if stamp.as_ref() != Some(&here) {
        let made = match &stamp {
            Some(s) => format!(
                "{} on {}",
                crate::build_name(s["rmld_build"].as_str().unwrap_or_default()),
                s["fit_device"]
            ),
            None => format!(
                "{} (its stamp {} is missing)",
                crate::build_name(""),
                stamp_path.display()
            ),
        };
        return Err(Error::input(
            partial,
            format!(
                "is the checkpoint of a training by {made}; this is rmld build {} on {}: \
                 another build or device would not take the steps the training's own \
                 takes. Finish it with the build and device that began it, or remove it to \
                 start this training afresh",
                crate::BUILD,
                here["fit_device"]
            ),
        ));
    }
    let saved = load_model(partial)?;
    if saved.shape != fresh.shape
        || saved.settings != fresh.settings
        || saved.teacher != fresh.teacher
    {
        return Err(Error::input(
            partial,
            "is the checkpoint of another training (other teacher, data or settings); \
             remove it to start this one",
        ));
    }
    observer.stage_start("resuming the fitting from its checkpoint");
    Ok(saved)
}

/// Fits every class in parallel, a round of steps at a time: the stop request is polled and the
/// progress moved between rounds, and a checkpoint written to `partial` every
/// `CHECKPOINT_SECONDS` and at a stop. False when stopped.
pub(crate) fn fit(
    model: &mut CodeModel,
    device: &GenerationDevice,
    total: u64,
    partial: &Path,
    observer: &dyn Observer,
) -> Result<bool> {
    observer.phase_start(&Phase {
        name: "fitting",
        len: Some(total),
        unit: "steps",
    });
    observer.phase_advance(model.steps_done());
    let mut last_checkpoint = Instant::now();
    while !model.complete() {
        if observer.stop_requested() {
            save_partial(partial, model, device)?;
            return Ok(false);
        }
        match device {
            #[cfg(feature = "gpu")]
            Some(context) => model.train_round_on_gpu(GPU_ROUND_STEPS, context)?,
            _ => model.train_round(ROUND_STEPS),
        }
        observer.phase_advance(model.steps_done());
        if last_checkpoint.elapsed().as_secs_f64() >= CHECKPOINT_SECONDS && !model.complete() {
            save_partial(partial, model, device)?;
            last_checkpoint = Instant::now();
        }
    }
    observer.phase_finish();
    Ok(true)
}
