//! `augment --sampler amortized`: a trained class-conditional code sampler's samples for every class of the plan, where its network runs.

use std::time::Instant;

use serde_json::json;

use crate::amortize::{CodeModel, ModelShape};
use crate::model::Target;
use crate::orchestrator::augment::{AugmentPlan, AugmentSink};
use crate::orchestrator::SampleRun;
use crate::{Error, Result};

use super::settings::{AugmentSettings, BackendChoice};

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
    let model = CodeModel::load(path)?;
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
