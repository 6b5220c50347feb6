//! Method "deform": each class's images moved along their transformation tangents, drawn at once (model/deformation.rs), kept as one-draw chains as Compression's starts are.

use crate::model::deformation::class_draws;
use crate::orchestrator::{AugmentPlan, AugmentSink, SampleRun, SampleSink};
use crate::session::settings::{AugmentMethod, AugmentSettings, SamplerChoice};
use crate::{Error, Result};

use super::load::Loaded;

/// Every class's draws (model units) in a sink of one-draw chains, class by class, and a run
/// of no iterations. The draws are made on the 0..1 scale (the images divided by pixel-max),
/// where the tangents' scales are set, and brought back to the model's.
pub(super) fn deform(run: &Loaded, plan: &AugmentPlan) -> Result<(AugmentSink, SampleRun)> {
    let observations = &run.problem.target.observations;
    let (h, w) = (run.problem.dataset.height, run.problem.dataset.width);
    let full = run.args.problem_settings().pixel_max;
    let seed = run.args.problem.seed;
    let mut images = Vec::with_capacity(plan.generated() * h * w);
    for class in &plan.classes {
        let [first, count] = class.rows.map(|v| v as usize);
        let originals: Vec<f32> = (first..first + count)
            .flat_map(|i| observations.row(i))
            .map(|v| v / full)
            .collect();
        let draws = class_draws(&originals, (h, w), class.generated, seed, class.label);
        images.extend(draws.iter().map(|v| v * full));
    }
    let mut sink = AugmentSink::new(plan, 0, false);
    sink.record(1, &[], &images)?;
    let chains = plan.chains();
    let state = SampleRun {
        completed: 0,
        accepted: vec![0; chains],
        divergent: vec![0; chains],
        ..SampleRun::default()
    };
    Ok((sink, state))
}

/// Deform draws every class at once on the CPU: no shards, no amortized sampler, no MH or
/// step-size adaptation to speak of.
pub(super) fn refuse_what_it_has_not(args: &AugmentSettings) -> Result<()> {
    if args.method != AugmentMethod::Deform {
        return Ok(());
    }
    if args.problem.shard.is_some() {
        return Err(Error::usage(
            "shard",
            "method deform draws every image at once in a second or so: run it whole",
        ));
    }
    if args.sampler == SamplerChoice::Amortized {
        return Err(Error::usage(
            "sampler",
            "method deform draws its images directly; the amortized sampler generates codes",
        ));
    }
    Ok(())
}
