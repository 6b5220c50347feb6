//! What shard i of an augmentation saves of the stages it runs: its chains' samples and run, its part of every encoding (`orchestrator::shard::join_augment` joins them).

use serde_json::json;

use super::encoding::Codes;
use super::load::{Device, Loaded};
use super::sampling::Generated;
use super::stage::Pipeline;
use super::{original_codes, test_codes};
use crate::io::shards::{configuration, Shard};
use crate::orchestrator::shard::{finish_shard, ShardEnd, TRACE};
use crate::orchestrator::shard::{AUGMENT_CODES as CODES, AUGMENT_IMAGES as IMAGES};
use crate::session::Outcome;
use crate::{io, Error, Result};

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
    // Kernel HMC has no codes, deform without --reencode none either (`writes_codes`).
    if run.writes_codes() {
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
        "rmld_build": crate::BUILD,
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
    hashed.problem.clear_placement();
    let end = ShardEnd {
        command: "augment",
        config: serde_json::to_value(&run.asked)
            .map_err(|e| Error::Internal(format!("configuration: {e}")))?,
        configuration: configuration(&hashed, &device.info, run.hashes),
        hashes: run.hashes,
        shape: (d, p),
        seed: run.args.problem.seed,
    };
    let positions = match device.backend.as_mut() {
        Some(backend) => backend.positions()?,
        None => Vec::new(),
    };
    let chains = (shard, range.clone(), run.whole.chains);
    let staged = pipe.output.staged()?;
    finish_shard(staged, end, chains, &generated.run, positions, &names)?;
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
