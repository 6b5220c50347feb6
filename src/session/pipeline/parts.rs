//! An augmentation's shard parts: what shard i saves of the stages it runs (its chains' samples and run, its part of every encoding), and how the merge joins them into the whole run's.

use serde_json::json;

use super::encoding::Codes;
use super::load::{Device, Loaded};
use super::shards::{self, ShardEnd, Split, TRACE};
use super::{original_codes, test_codes, Generated, Pipeline};
use crate::io::shards::{Shard, ShardFiles};
use crate::orchestrator::join::{join_sinks, replay_sink, SinkPart};
use crate::orchestrator::{AugmentPlan, AugmentSink, SampleRun};
use crate::session::Outcome;
use crate::{io, Error, Result};

/// A shard's generated images (rows of d, model units, class by class), its chains' samples.
const IMAGES: &str = "generated-images.npy";
/// A shard's generated codes (rows of p, as the images), re-encoded with `reencode`.
const CODES: &str = "generated-codes.npy";

/// What a shard of `rmld augment` writes.
pub(crate) const SHARD_OUTPUTS: &[&str] = &[
    IMAGES,
    CODES,
    original_codes::PART,
    test_codes::PART,
    TRACE,
    "report.json",
    io::MANIFEST,
];

/// Saves shard `shard`'s parts: its samples with their `codes` (re-encoded, or the chains'
/// positions), its part of the originals' and the test split's codes, its run's trace, a
/// report and the manifest.
pub(super) fn save(
    pipe: &mut Pipeline,
    (run, device): (&Loaded, &mut Device),
    generated: &Generated,
    codes: &[f32],
    (originals, test): (Option<Codes>, Option<Codes>),
    shard: Shard,
) -> Result<Outcome> {
    let (d, p) = (run.d, run.p);
    let kept = generated.sink.total();
    let mut names = vec![IMAGES, "report.json"];
    let output = &mut pipe.output;
    output.write(IMAGES, |path| {
        io::write_npy_f32(path, &[kept, d], &generated.sink.images.concat())
    })?;
    if !run.kernel {
        output.write(CODES, |path| io::write_npy_f32(path, &[kept, p], codes))?;
        names.push(CODES);
    }
    for (codes, name) in [(originals, original_codes::PART), (test, test_codes::PART)] {
        if let Some(Codes::Part(codes)) = codes {
            let rows = codes.len() / p.max(1);
            output.write(name, |path| io::write_npy_f32(path, &[rows, p], &codes))?;
            names.push(name);
        }
    }
    let (phases, seconds) = pipe.finish();
    let range = &run.chains;
    let report = json!({
        "command": "augment",
        "rmld_version": env!("CARGO_PKG_VERSION"),
        "shard": shard,
        "chains": { "start": range.start, "end": range.end, "total": run.whole.chains },
        "kept_per_class": generated.sink.kept,
        "backend": device.info,
        "estimate": device.estimate,
        "interrupted": false,
        "phase_seconds": phases,
        "seconds": seconds,
        "outputs": "a shard's part of an augmentation: join the shards with `rmld merge`",
    });
    pipe.output.report(&report)?;
    let mut hashed = run.asked.clone();
    hashed.problem.out = std::path::PathBuf::new();
    hashed.problem.shard = None;
    hashed.problem.force = false;
    let end = ShardEnd {
        command: "augment",
        config: serde_json::to_value(&run.asked)
            .map_err(|e| Error::Internal(format!("configuration: {e}")))?,
        configuration: shards::configuration(&hashed, &device.info, run.hashes),
        hashes: run.hashes,
        shape: (d, p),
        seed: run.args.problem.seed,
    };
    let positions = match device.backend.as_mut() {
        Some(backend) => backend.positions()?,
        None => Vec::new(),
    };
    let chains = (range.clone(), run.whole.chains);
    shards::finish_shard(
        &pipe.output.dir,
        end,
        shard,
        chains,
        &generated.run,
        positions,
        &names,
    )?;
    Ok(Outcome {
        interrupted: false,
        report,
        summary: vec![format!(
            "rmld augment shard {shard}: chains {}..{} of {}, {kept} samples, {seconds:.1} s; \
             join the shards with `rmld merge`",
            range.start, range.end, run.whole.chains,
        )],
        draw_stats: None,
    })
}

/// The whole run's samples and run joined from the shards' (checked, in order): every class's
/// samples in the single run's (iteration, chain) order, the chains' traces end to end.
pub(super) fn join(
    shards: &[ShardFiles],
    plan: &AugmentPlan,
    burn_in: u32,
    (kernel, d, p): (bool, usize, usize),
) -> Result<(AugmentSink, SampleRun)> {
    let chains = plan.chains();
    let mut runs = Vec::with_capacity(shards.len());
    let mut parts = Vec::with_capacity(shards.len());
    for s in shards {
        let shard = s.manifest.shard;
        let range = Split::Shard(shard).chains(chains)?;
        let bad = |what: String| Error::input(s.dir.join(TRACE), format!("shard {shard}: {what}"));
        let part = &s.manifest.part;
        if (part.start, part.end, part.total) != (range.start, range.end, chains) {
            return Err(bad(format!(
                "covers chains {}..{} of {}, the run has {chains} chains",
                part.start, part.end, part.total
            )));
        }
        let trace = shards::trace(s)?;
        if trace.run.interrupted || trace.run.accepted.len() != range.len() {
            return Err(bad(format!(
                "its trace does not hold its {} chains' finished run",
                range.len()
            )));
        }
        // Which samples the shard's chains kept: its sink, replayed without draws.
        let counts = replay_sink(plan, range, burn_in, trace.run.completed)?;
        let rows = counts.total();
        let (shape, images) = s.npy_f32(IMAGES)?;
        if shape != [rows, d] {
            return Err(bad(format!(
                "{IMAGES} has shape {shape:?}, its chains kept {rows} samples of {d} pixels"
            )));
        }
        let codes = match kernel {
            true => Vec::new(),
            false => {
                let (shape, codes) = s.npy_f32(CODES)?;
                if shape != [rows, p] {
                    return Err(bad(format!(
                        "{CODES} has shape {shape:?}, its chains kept {rows} samples of {p} atoms"
                    )));
                }
                codes
            }
        };
        parts.push(SinkPart {
            kept: counts.kept,
            positions: counts.positions,
            images,
            codes,
        });
        runs.push(trace.run);
    }
    let sink = join_sinks(plan, burn_in, !kernel, (d, p), &parts).map_err(|(held, k)| {
        let class = &plan.classes[k];
        Error::input(
            &shards[0].dir,
            format!(
                "the shards hold {held} of class {}'s {} samples: a shard ran fewer iterations \
                 than the others",
                class.label, class.generated
            ),
        )
    })?;
    let run = shards::joined_run(shards, &runs)?;
    Ok((sink, run))
}
