//! Method "deform": each class's images moved along their transformation tangents and shaded, with elastic distortions (strokes) or interpolants past four per image, drawn at once (model/deformation.rs), kept as one-draw chains as Compression's starts are (a shard keeps its range).

use crate::model::deformation::{
    anchor_move_px, bright_background, class_draws, past_deformations,
};
use crate::model::elastic;
use crate::model::shading::surface_shade;
use crate::orchestrator::{AugmentPlan, AugmentSink, SampleRun, SampleSink};
use crate::{Error, Result};

use super::load::Loaded;
use crate::session::problem::Problem;

/// What deform reads off the run's images, once per run (at load): whether their background
/// is bright (`bright_background`: the draws are then made on the inverted images) and whether,
/// as drawn, they are strokes (`elastic::strokes`); the report says both.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Ink {
    pub bright: bool,
    pub strokes: bool,
}

impl Ink {
    /// The ink of `problem`'s images, pixel-max `pixel_max`: two passes over every pixel.
    pub(super) fn of(problem: &Problem, pixel_max: f32) -> Ink {
        let observations = &problem.target.observations;
        let (h, w) = (problem.dataset.height, problem.dataset.width);
        let unit = observations.scale / pixel_max;
        let value = |i: usize, j: usize| observations.raw(i, j) * unit;
        let bright = bright_background(observations.n, (h, w), value);
        let strokes = elastic::strokes(observations.n, (h, w), |i, j| match bright {
            true => 1.0 - value(i, j),
            false => value(i, j),
        });
        Ink { bright, strokes }
    }

    /// Whether each class's tangent spreads are learned from its images: on graded surfaces
    /// (`model::learned_spreads`); strokes keep the fixed ones.
    pub(super) fn learns_spreads(&self) -> bool {
        !self.strokes
    }

    /// Whole pixels each draw's anchor moves by on images `width` pixels wide, as
    /// `class_draws` moves them (given `learns_spreads` as its `surface`), for the report.
    pub(super) fn anchor_move_px(&self, width: usize) -> isize {
        anchor_move_px(width, !self.learns_spreads())
    }
}

/// The scale of the elastic distortions a class brought past four new images per original
/// takes instead of interpolants, if it does: strokes ([`Ink`]) of 28 px or more and the
/// run's `elastic` above 0 (`elastic::distorts`).
fn distortion(run: &Loaded) -> Option<f64> {
    let alpha = run.args.elastic as f64;
    elastic::distorts(run.ink.strokes, run.problem.dataset.width, alpha).then_some(alpha)
}

/// The shading of a class of `images` originals: the run's, or on graded surfaces whose
/// shading the preset fits (`fit_shade_to_ink`, no `--shade` given) one that halves as the
/// class grows from 100 to 200 images (`shading::surface_shade`).
pub(super) fn class_shade(run: &Loaded, images: usize) -> f32 {
    match run.shades_by_class() {
        true => surface_shade(images),
        false => run.args.shade,
    }
}

/// Every class's draws (model units) in a sink of one-draw chains, class by class, and a run
/// of no iterations. The draws are made on the 0..1 scale (the images divided by pixel-max),
/// where the tangents' scales are set, and brought back to the model's; a set with a bright
/// background ([`Ink`]) is drawn on its inverted images (1 − v), so that its background is
/// the 0 the draws shift in and shade around, and inverted back. A shard draws every
/// class as the whole run does (a second or so) and keeps its range of the chains, so that the
/// shards' merge is the whole run's draws. Each draw's start is the image it was drawn from
/// (an interpolant's: the image it leans away from).
pub(super) fn deform(run: &Loaded, plan: &AugmentPlan) -> Result<(AugmentSink, SampleRun)> {
    let observations = &run.problem.target.observations;
    let (h, w) = (run.problem.dataset.height, run.problem.dataset.width);
    let d = h * w;
    let full = run.args.problem_settings().pixel_max;
    let seed = run.args.problem.seed;
    let inverted = run.ink.bright;
    let distortion = distortion(run);
    let to_draw = |v: f32| match inverted {
        true => 1.0 - v / full,
        false => v / full,
    };
    let from_draw = |v: &f32| match inverted {
        true => (1.0 - v) * full,
        false => v * full,
    };
    // One row per chain of the whole run: a class's draws, then zeros for any chain past them
    // (their rows are never kept); each draw's start is the image it was drawn around, so that
    // the report's distance moved is the draw's distance from its original.
    let mut images = Vec::with_capacity(plan.chains() * d);
    let mut starts = Vec::with_capacity(plan.chains() * d);
    for class in &plan.classes {
        let [first, count] = class.rows.map(|v| v as usize);
        let originals: Vec<f32> = (first..first + count)
            .flat_map(|i| observations.row(i))
            .map(to_draw)
            .collect();
        let (draws, origins) = class_draws(
            &originals,
            (h, w),
            class.generated,
            (seed, class.label),
            (
                class_shade(run, count) as f64,
                distortion,
                run.ink.learns_spreads(),
            ),
        );
        images.extend(draws.iter().map(from_draw));
        for origin in origins {
            starts.extend(observations.row(first + origin));
        }
        let extra = class.chains.saturating_sub(class.generated);
        images.resize(images.len() + extra * d, 0.0);
        starts.resize(images.len(), 0.0);
    }
    let range = run.chains.clone();
    let rows = range.start * d..range.end * d;
    let (Some(kept), Some(started)) = (images.get(rows.clone()), starts.get(rows)) else {
        return Err(Error::Internal(
            "deform: the shard's chains past the draws".into(),
        ));
    };
    let mut sink = AugmentSink::for_chains(plan, range.clone(), 0, false);
    sink.record(1, &[], kept)?;
    let chains = range.len();
    let state = SampleRun {
        completed: 0,
        accepted: vec![0; chains],
        divergent: vec![0; chains],
        trace_stride: 1,
        start_images: started.to_vec(),
        final_images: kept.to_vec(),
        ..SampleRun::default()
    };
    Ok((sink, state))
}

/// Per row of `sink`'s images (class by class, as written): whether it is an interpolant or an
/// elastic distortion, which the post-processing leaves unsmoothed. They are a class's last
/// draws (`class_draws`), so a row's position among its class's draws of the whole run tells.
pub(super) fn unsmoothed_rows(run: &Loaded, plan: &AugmentPlan, sink: &AugmentSink) -> Vec<bool> {
    let distorts = distortion(run).is_some();
    plan.classes
        .iter()
        .zip(&sink.positions)
        .flat_map(|(class, positions)| {
            let count = class.rows[1] as usize;
            let first = class.generated - past_deformations(count, class.generated, distorts);
            positions.iter().map(move |&position| position >= first)
        })
        .collect()
}
