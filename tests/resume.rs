//! A run stopped at a checkpoint and continued from it equals the uninterrupted run bit for bit,
//! on the CPU and on the GPU; chunk sizes do not change the samples; damaged checkpoints are refused.

mod common;
#[cfg(feature = "gpu")]
#[path = "gpu_common/mod.rs"]
mod gpu_common;

use rmld::backend::cpu::CpuBackend;
use rmld::backend::Backend;
use rmld::model::Target;
use rmld::orchestrator::{self, Checkpoint, Hooks, Init, MemorySink, SampleRun, SamplerSettings};

fn settings(chains: usize, samples: u32) -> SamplerSettings {
    SamplerSettings {
        chains,
        samples,
        dynamics: common::dynamics(0.01, 3, 5, 42),
        mh: true,
        discount: 1.0,
        init: Init::Lasso,
        lasso_iterations: 40,
        adapt: None,
        auto_burn_in: None,
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Runs to completion, or stops after `stop_after` iterations returning the checkpoint's bytes.
fn run(
    backend: &mut dyn Backend,
    target: &Target,
    s: &SamplerSettings,
    state: SampleRun,
    stop_after: Option<u32>,
) -> (SampleRun, MemorySink, Option<Vec<u8>>) {
    let mut sink = MemorySink::default();
    let mut saved = None;
    let completed = std::cell::Cell::new(state.completed);
    let hooks = Hooks {
        sink: &mut sink,
        progress: &mut |k| completed.set(k),
        stop: &|| stop_after.is_some_and(|k| completed.get() >= k),
        checkpoint_every: 0,
        checkpoint_due: &|| false,
        checkpoint: &mut |run: &SampleRun, positions: &[f32]| {
            let c = Checkpoint {
                config: serde_json::json!({}),
                data_hash: 1,
                dictionary_hash: 2,
                d: target.d(),
                p: target.p(),
                positions: positions.to_vec(),
                run: run.clone(),
                identity: None,
                written_by: None,
                device: None,
                wall_seconds: None,
            };
            saved = Some(c.to_bytes());
            Ok(())
        },
    };
    let run = orchestrator::continue_run(backend, target, s, state, hooks).unwrap();
    (run, sink, saved)
}

/// A GPU backend for `target` with the run's dynamics and chains.
#[cfg(feature = "gpu")]
fn gpu_backend(
    context: &std::sync::Arc<rmld::backend::GpuContext>,
    target: &std::sync::Arc<Target>,
    s: &SamplerSettings,
) -> Box<dyn Backend> {
    use rmld::backend::{GpuBackend, GpuOptions};
    let backend = GpuBackend::with_context(
        context.clone(),
        target.clone(),
        s.dynamics.clone(),
        s.chains,
        GpuOptions::default(),
    );
    Box::new(backend.unwrap())
}

/// `method` (MALA; HMC with ChEES's trajectory length) with its step size adapting across
/// chains over the first 4 of 6 iterations, so a stop at 2 falls mid-adaptation.
fn adapting_settings(method: rmld::methods::Method) -> SamplerSettings {
    let mut s = settings(5, 6);
    s.dynamics.method = method;
    s.dynamics.leapfrog_steps = 3;
    s.adapt = orchestrator::Adaptation::for_method(method, 4);
    s
}

/// `method` with an automatic burn-in of at most 30 of 45 iterations (windows of 10): a stop at
/// 2 falls mid-warm-up and the settle check after iteration 20 is made after the resume.
fn auto_burn_in_settings(method: rmld::methods::Method) -> SamplerSettings {
    let mut s = settings(5, 45);
    s.dynamics.method = method;
    s.dynamics.leapfrog_steps = 3;
    s.adapt = orchestrator::Adaptation::for_method(method, 30);
    s.auto_burn_in = Some(orchestrator::AutoBurnIn { cap: 30 });
    s
}

fn check_resume(make: &dyn Fn() -> Box<dyn Backend>, target: &Target) {
    check_resume_with(make, target, &settings(5, 6));
}

fn check_resume_with(make: &dyn Fn() -> Box<dyn Backend>, target: &Target, s: &SamplerSettings) {
    let s = s.clone();
    let mut whole = make();
    let state = orchestrator::start(whole.as_mut(), target, &s).unwrap();
    let (full, full_samples, _) = run(whole.as_mut(), target, &s, state, None);

    let mut first = make();
    let state = orchestrator::start(first.as_mut(), target, &s).unwrap();
    let (part, part_samples, saved) = run(first.as_mut(), target, &s, state, Some(2));
    assert!(part.interrupted && part.completed == 2);
    let checkpoint = Checkpoint::from_bytes(&saved.expect("a checkpoint at the stop")).unwrap();
    let mut second = make();
    second.load_positions(&checkpoint.positions).unwrap();
    // As `rmld sample` resumes: the prior's latent state (SSGL) after the positions.
    if !checkpoint.run.prior_state.is_empty() {
        second
            .load_prior_state(&checkpoint.run.prior_state)
            .unwrap();
    }
    let (rest, rest_samples, _) = run(second.as_mut(), target, &s, checkpoint.run, None);

    let joined: Vec<f32> = part_samples
        .codes
        .iter()
        .chain(&rest_samples.codes)
        .copied()
        .collect();
    assert_eq!(
        bits(&joined),
        bits(&full_samples.codes),
        "codes differ after resume"
    );
    let joined: Vec<f32> = part_samples
        .images
        .iter()
        .chain(&rest_samples.images)
        .copied()
        .collect();
    assert_eq!(
        bits(&joined),
        bits(&full_samples.images),
        "images differ after resume"
    );
    assert_eq!(rest.accepted, full.accepted);
    assert_eq!(
        rest.log_alpha
            .iter()
            .map(|v| v.to_bits())
            .collect::<Vec<_>>(),
        full.log_alpha
            .iter()
            .map(|v| v.to_bits())
            .collect::<Vec<_>>()
    );
    assert_eq!(bits(&rest.projections), bits(&full.projections));
    assert_eq!(bits(&rest.prior_state), bits(&full.prior_state));
    // The step size's adaptation state (dual averaging) travels in the checkpoint.
    assert_eq!(rest.adaptation, full.adaptation);
    // So does an automatic burn-in's monitor: the resumed run ends the warm-up where the
    // uninterrupted one does.
    assert_eq!(rest.burn_in, full.burn_in);
    if let Some(m) = &full.burn_in {
        assert!(m.checks >= 1 && m.ended_at.is_some(), "{m:?}");
        assert!(part.burn_in.as_ref().is_some_and(|p| p.warming_up()));
    }
    if s.adapt.is_some() && s.auto_burn_in.is_none() {
        let a = full
            .adaptation
            .expect("an adapting run keeps its adaptation");
        assert!(a.frozen() && a.step() != s.dynamics.eta, "{a:?}");
        assert!(part.adaptation.is_some_and(|p| p.count == 2 && !p.frozen()));
        if let Some(t) = a.trajectory {
            assert!(t.count == 4 && t.length() != t.initial_length, "{t:?}");
        }
    }
}

#[test]
fn cpu_resume_equals_uninterrupted_run() {
    let target = common::small_target(60, 12, 40, 0.1, 5);
    let s = settings(5, 6);
    check_resume(
        &|| {
            Box::new(CpuBackend::new(
                target.clone(),
                s.dynamics.clone(),
                s.chains,
            ))
        },
        &target,
    );
}

#[cfg(feature = "gpu")]
#[test]
fn gpu_resume_equals_uninterrupted_run() {
    let Some(context) = gpu_common::context("gpu_resume_equals_uninterrupted_run") else {
        return;
    };
    let target = common::small_target(60, 12, 40, 0.1, 5);
    let s = settings(5, 6);
    check_resume(&|| gpu_backend(&context, &target, &s), &target);
}

#[test]
fn cpu_adaptive_resume_equals_uninterrupted_run() {
    let target = common::small_target(60, 12, 40, 0.1, 5);
    for method in [rmld::methods::Method::Mala, rmld::methods::Method::Hmc] {
        let s = adapting_settings(method);
        check_resume_with(
            &|| {
                Box::new(CpuBackend::new(
                    target.clone(),
                    s.dynamics.clone(),
                    s.chains,
                ))
            },
            &target,
            &s,
        );
    }
}

#[cfg(feature = "gpu")]
#[test]
fn gpu_adaptive_resume_equals_uninterrupted_run() {
    let Some(context) = gpu_common::context("gpu_adaptive_resume_equals_uninterrupted_run") else {
        return;
    };
    let target = common::small_target(60, 12, 40, 0.1, 5);
    for method in [rmld::methods::Method::Mala, rmld::methods::Method::Hmc] {
        let s = adapting_settings(method);
        check_resume_with(&|| gpu_backend(&context, &target, &s), &target, &s);
    }
}

#[test]
fn cpu_auto_burn_in_resume_equals_uninterrupted_run() {
    let target = common::small_target(60, 12, 40, 0.1, 5);
    use rmld::methods::Method;
    for method in [Method::Rmld, Method::Mala, Method::Hmc] {
        let mut s = auto_burn_in_settings(method);
        if method == Method::Rmld {
            s.adapt = None;
        }
        check_resume_with(
            &|| {
                Box::new(CpuBackend::new(
                    target.clone(),
                    s.dynamics.clone(),
                    s.chains,
                ))
            },
            &target,
            &s,
        );
    }
}

#[cfg(feature = "gpu")]
#[test]
fn gpu_auto_burn_in_resume_equals_uninterrupted_run() {
    let Some(context) = gpu_common::context("gpu_auto_burn_in_resume_equals_uninterrupted_run")
    else {
        return;
    };
    let target = common::small_target(60, 12, 40, 0.1, 5);
    for method in [rmld::methods::Method::Mala, rmld::methods::Method::Hmc] {
        let s = auto_burn_in_settings(method);
        check_resume_with(&|| gpu_backend(&context, &target, &s), &target, &s);
    }
}

#[test]
fn cpu_chunk_sizes_give_identical_samples() {
    let target = common::small_target(60, 12, 40, 0.1, 9);
    let s = settings(13, 3);
    let samples = |chunk: usize| {
        let mut backend =
            CpuBackend::new(target.clone(), s.dynamics.clone(), s.chains).with_chunk_size(chunk);
        let mut sink = MemorySink::default();
        let run = orchestrator::run(&mut backend, &target, &s, &mut sink, &mut |_| {}).unwrap();
        (bits(&sink.codes), run.accepted)
    };
    let all = samples(13);
    assert_eq!(samples(1), all, "chunks of 1 chain differ from one block");
    assert_eq!(samples(7), all, "chunks of 7 chains differ from one block");
}

#[test]
fn damaged_checkpoints_are_refused() {
    let target = common::small_target(20, 8, 16, 0.1, 3);
    let s = settings(3, 2);
    let mut backend = CpuBackend::new(target.clone(), s.dynamics.clone(), s.chains);
    let state = orchestrator::start(&mut backend, &target, &s).unwrap();
    let (_, _, saved) = run(&mut backend, &target, &s, state, Some(1));
    let bytes = saved.unwrap();
    assert!(Checkpoint::from_bytes(&bytes).is_ok());
    let header_end = 16 + u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    // Truncated at every offset of the header (and a few in the body): refused, never a panic.
    for cut in (0..header_end + 8).chain([bytes.len() / 2, bytes.len() - 9, bytes.len() - 1]) {
        let err = Checkpoint::from_bytes(&bytes[..cut])
            .expect_err(&format!("truncated at {cut} accepted"));
        assert!(!err.is_empty());
    }
    // One flipped bit anywhere is caught by the checksum.
    for at in [0, 9, 13, 20, header_end + 3, bytes.len() - 1] {
        let mut bad = bytes.clone();
        bad[at] ^= 0x10;
        assert!(
            Checkpoint::from_bytes(&bad).is_err(),
            "bit flip at {at} accepted"
        );
    }
}

#[test]
fn old_version_and_foreign_files_are_refused_by_name() {
    let target = common::small_target(20, 8, 16, 0.1, 3);
    let s = settings(3, 2);
    let mut backend = CpuBackend::new(target.clone(), s.dynamics.clone(), s.chains);
    let state = orchestrator::start(&mut backend, &target, &s).unwrap();
    let (_, _, saved) = run(&mut backend, &target, &s, state, Some(1));
    let bytes = saved.unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A version-1 file (the layout before the postcard payload) names both versions.
    let mut old = bytes.clone();
    old[8..12].copy_from_slice(&1u32.to_le_bytes());
    let path = dir.path().join("old.rmld");
    std::fs::write(&path, &old).unwrap();
    let err = Checkpoint::read(&path).unwrap_err().to_string();
    assert!(err.contains("old.rmld"), "{err}");
    assert!(
        err.contains("version 1") && err.contains("versions 4 to 10"),
        "{err}"
    );
    // A version-2 file predates the prior's saved state (the ssgl prior): said so.
    old[8..12].copy_from_slice(&2u32.to_le_bytes());
    std::fs::write(&path, &old).unwrap();
    let err = Checkpoint::read(&path).unwrap_err().to_string();
    assert!(err.contains("version 2") && err.contains("ssgl"), "{err}");
    // A version-3 file predates the step size's saved adaptation: said so.
    old[8..12].copy_from_slice(&3u32.to_le_bytes());
    std::fs::write(&path, &old).unwrap();
    let err = Checkpoint::read(&path).unwrap_err().to_string();
    assert!(
        err.contains("version 3") && err.contains("adaptation"),
        "{err}"
    );
    // Not a checkpoint at all.
    let path = dir.path().join("x.npy");
    rmld::io::write_npy_u8(&path, &[3], &[1, 2, 3]).unwrap();
    let err = Checkpoint::read(&path).unwrap_err().to_string();
    assert!(err.contains("x.npy") && err.contains("RMLDCKPT"), "{err}");
    // Written and read back through the file: identical bytes.
    let path = dir.path().join("c.rmld");
    let checkpoint = Checkpoint::from_bytes(&bytes).unwrap();
    checkpoint.write(&path).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(Checkpoint::read(&path).unwrap().to_bytes(), bytes);
}

/// The SSGL prior on the GPU, adapting for 4 of the 6 iterations: stopped at 2 (mid-adaptation),
/// its checkpoint (positions and latent state, through the checkpoint's bytes) continued on a
/// fresh GPU backend equals the uninterrupted run bit for bit, latent state included.
#[cfg(feature = "gpu")]
#[test]
fn gpu_ssgl_resume_equals_uninterrupted_run() {
    use rmld::model::{Prior, Ssgl};
    let Some(context) = gpu_common::context("gpu_ssgl_resume_equals_uninterrupted_run") else {
        return;
    };
    let ssgl = Ssgl {
        adapt_iterations: 4,
        ..Ssgl::default()
    };
    let target = std::sync::Arc::new(
        Target::clone(&common::small_target(60, 12, 40, 0.1, 5)).with_prior(Prior::Ssgl(ssgl)),
    );
    let s = settings(5, 6);
    check_resume(&|| gpu_backend(&context, &target, &s), &target);
}
