//! Encoding runs (`Encoder`): LASSO codes of a dataset and their reconstructions A z (the paper's "Compression").

use std::ops::Range;
use std::path::PathBuf;
use std::time::Instant;

use serde_json::{json, Value};

use crate::diagnostics::degenerate;
use crate::io::shards::{configuration, Shard, ShardFiles};
use crate::io::{self, Output};
use crate::methods::DynamicsSettings;
use crate::orchestrator::encode::{batches, encode_like_whole, reconstruct, EncodeBackend};
use crate::orchestrator::encode::{join_encoded, write_encoded, Encoded};
use crate::orchestrator::report::{dataset_json, lasso_json};
use crate::Result;

use super::observer::{Notice, Observer, Phase};
use super::outputs;
use super::problem::{dictionary_json, load_problem, make_backend, Problem};
use super::sample::{hashes, tell_recovery};
use super::settings::EncodeSettings;
use super::Outcome;

/// Rows encoded per backend call: bounds memory and lets the progress bar move.
const ENCODE_BATCH: usize = 1024;

/// LASSO-encodes a dataset with the dictionary and writes codes.npy, reconstructions.npy,
/// dictionary.npy, reconstructions.png and report.json into `settings.problem.out`.
#[derive(Clone, Debug)]
pub struct Encoder {
    settings: EncodeSettings,
}

impl Encoder {
    /// An encoding run with these settings (checked when it runs).
    pub fn new(settings: EncodeSettings) -> Self {
        Encoder { settings }
    }

    /// The settings.
    pub fn settings(&self) -> &EncodeSettings {
        &self.settings
    }

    /// Encodes and writes every output, published together at the end. Stopped by the observer
    /// (polled between batches of rows), nothing is written, as encoding has no state to
    /// resume, and `interrupted` is set.
    pub fn run(&self, observer: &dyn Observer) -> Result<Outcome> {
        encode(&self.settings, observer)
    }
}

fn encode(args: &EncodeSettings, observer: &dyn Observer) -> Result<Outcome> {
    let started = Instant::now();
    args.validate()?;
    let inputs = [
        args.problem.data.as_deref(),
        args.problem.dictionary.as_deref(),
    ];
    let names = match args.problem.shard {
        Some(_) => SHARD_OUTPUTS,
        None => outputs::ENCODE_OUTPUTS,
    };
    let mut output = Output::check(&args.problem.out, names, &inputs, args.problem.force)?;
    // A manifest left by an earlier shard here must not vouch for this run's files.
    output.also_replace(&[io::MANIFEST]);
    tell_recovery(observer, &output, None);
    let problem = load_problem(&args.problem)?;
    if let Some(notice) = args.problem.scaling_notice(&problem.dataset) {
        observer.notice(&notice);
    }
    let target = &problem.target;
    let (d, p) = (target.d(), target.p());
    let n = match args.limit {
        Some(c) => c.min(problem.dataset.n),
        None => problem.dataset.n,
    };
    // A shard encodes its contiguous part of the originals; every row is encoded on its own.
    let range = match args.problem.shard {
        Some(shard) => shard.range(n),
        None => 0..n,
    };
    let sharded = args.problem.shard.is_some();
    let chains = ENCODE_BATCH.min(range.len()).max(1);
    let shape = (range.len(), chains, if sharded { 2 } else { 1 });
    problem.check_encoder_fits(&args.problem, shape, args.lasso_tolerance)?;
    let out = &args.problem.out;
    let rows = range.len();
    io::disk::Writes::new()
        .add("codes.npy", io::disk::npy_f32_bytes(rows, p))
        .add("reconstructions.npy", io::disk::npy_f32_bytes(rows, d))
        .add("dictionary.npy", io::disk::npy_f32_bytes(d, p))
        .check(out, "limit", "encode fewer rows (`limit`)")?;
    output.open()?;
    // The single run encodes rows in batches [k·B, (k+1)·B) of n on one backend; a shard
    // encodes its rows in the same batches (cut to its range).
    let mut backend = EncodeBackend::new(|_| {
        let dynamics = DynamicsSettings::encoding_only(args.problem.seed);
        let mut backend = make_backend(args.problem.backend, observer, target, &dynamics, chains)?;
        backend.set_lasso_tolerance(args.lasso_tolerance);
        Ok(backend)
    });
    let rows: Vec<usize> = range.clone().collect();
    let first = batches(&rows, n, ENCODE_BATCH).first().map_or(1, |b| b.0);
    let info = backend.get(first)?.info();
    observer.phase_start(&Phase {
        name: "encoding",
        len: Some(rows.len() as u64),
        unit: "",
    });
    let codes = encode_like_whole(
        &mut backend,
        &rows,
        n,
        ENCODE_BATCH,
        (target.lam, args.lasso_iterations),
        &|i| target.observations.row(i),
        &mut |done| observer.phase_advance(done as u64),
        &|| observer.stop_requested(),
    )?;
    observer.phase_finish();
    let Some(codes) = codes else {
        observer.notice(&Notice::EncodeInterrupted);
        return Ok(Outcome {
            interrupted: true,
            report: Value::Null,
            summary: Vec::new(),
            draw_stats: None,
        });
    };
    let originals: Vec<f32> = rows
        .iter()
        .flat_map(|&i| target.observations.row(i))
        .collect();
    // A code of all zeros, or every row at the cap, is a result, not an error: said, not refused.
    let stats = backend.stats();
    let mut degenerate = degenerate::assess(0, 0, None, stats.map(|s| (s.rows, s.capped)));
    degenerate.codes_all_zero = !codes.is_empty() && codes.iter().all(|&v| v == 0.0);
    for warning in degenerate.warnings() {
        observer.notice(&Notice::Degenerate { warning });
    }
    let reconstructions = reconstruct(&target.dictionary.a, (d, p), &codes);
    let encoded = Encoded {
        n: rows.len(),
        d,
        p,
        height: problem.dataset.height,
        width: problem.dataset.width,
        codes,
        reconstructions,
        originals,
    };
    let base = json!({
        "lambda": target.lam,
        "iterations": args.lasso_iterations,
        "lasso": lasso_json(args.lasso_tolerance, args.lasso_iterations, stats),
        "pixel_max": args.problem.pixel_max,
        "dataset": dataset_json(&problem.dataset),
        "dictionary": dictionary_json(&problem, d, p),
        "backend": info,
        "degenerate": degenerate,
    });
    if let Some(shard) = args.problem.shard {
        let part = (shard, range, n);
        let outcome = write_shard(args, &problem, &encoded, base, part, &output, started)?;
        output.publish()?;
        return Ok(outcome);
    }
    let (report, per_pixel, nonzero) = write_encoded(
        output.staged()?,
        &encoded,
        &target.dictionary.a,
        base,
        &|| started.elapsed().as_secs_f64(),
    )?;
    output.publish()?;
    let summary = vec![format!(
        "rmld encode: {n} observations → {p} atoms on {} in {:.1} s; mean squared error per pixel {per_pixel:.4} \
         (pixel-max {}), {nonzero:.1} non-zero atoms on average; wrote {}",
        info.device,
        started.elapsed().as_secs_f64(),
        args.problem.pixel_max,
        out.display()
    )];
    Ok(Outcome {
        interrupted: false,
        report,
        summary,
        draw_stats: None,
    })
}

/// What a shard of `rmld encode` writes into its output folder (beside manifest.json).
const SHARD_OUTPUTS: &[&str] = &[
    "codes.npy",
    "reconstructions.npy",
    "originals.npy",
    "dictionary.npy",
    "report.json",
    io::MANIFEST,
];

/// Writes shard `shard`'s part (rows `range` of `total`) and its manifest into the staging
/// folder of `output`.
fn write_shard(
    args: &EncodeSettings,
    problem: &Problem,
    encoded: &Encoded,
    base: Value,
    (shard, range, total): (Shard, Range<usize>, usize),
    output: &Output,
    started: Instant,
) -> Result<Outcome> {
    let out = output.staged()?;
    let (rows, d, p) = (encoded.n, encoded.d, encoded.p);
    let target = &problem.target;
    io::write_npy_f32(&out.join("codes.npy"), &[rows, p], &encoded.codes)?;
    io::write_npy_f32(
        &out.join("reconstructions.npy"),
        &[rows, d],
        &encoded.reconstructions,
    )?;
    io::write_npy_f32(&out.join("originals.npy"), &[rows, d], &encoded.originals)?;
    io::write_npy_f32(&out.join("dictionary.npy"), &[d, p], &target.dictionary.a)?;
    let part = io::Part {
        unit: "originals".into(),
        start: range.start,
        end: range.end,
        total,
    };
    let mut report = json!({
        "command": "encode",
        "rmld_version": env!("CARGO_PKG_VERSION"),
        "rmld_build": crate::BUILD,
        "shard": shard,
        "part": part,
        "encoded": rows,
        "seconds": started.elapsed().as_secs_f64(),
    });
    if let (Some(report), Value::Object(base)) = (report.as_object_mut(), base) {
        report.extend(base);
    }
    io::write_json_atomic(&out.join("report.json"), &report)?;
    let mut config = args.clone();
    config.problem.out = PathBuf::new();
    config.problem.shard = None;
    io::shards::write_manifest(
        out,
        "encode",
        configuration(&config, &report["backend"], hashes(target)),
        args.problem.seed,
        shard,
        part,
        &SHARD_OUTPUTS[..SHARD_OUTPUTS.len() - 1],
    )?;
    let summary = vec![format!(
        "rmld encode: shard {shard}: observations {}..{} of {total} in {:.1} s; wrote {} \
         (join the shards with `rmld merge`)",
        range.start,
        range.end,
        started.elapsed().as_secs_f64(),
        args.problem.out.display()
    )];
    Ok(Outcome {
        interrupted: false,
        report,
        summary,
        draw_stats: None,
    })
}

/// Joins the shards of an encoding run (checked and in order) into the single run's files,
/// published together.
pub(crate) fn merge_shards(output: &mut Output, shards: &[ShardFiles]) -> Result<Outcome> {
    let started = Instant::now();
    let (encoded, dictionary, base, seconds) = join_encoded(shards)?;
    output.open()?;
    let staged = output.staged()?;
    let (report, per_pixel, _) = write_encoded(staged, &encoded, &dictionary, base, &|| seconds)?;
    output.publish()?;
    let out = &output.dir;
    let summary = vec![format!(
        "rmld merge: {} shards of encode, {} observations, mean squared error per pixel {per_pixel:.4}, \
         in {:.1} s; wrote {}",
        shards.len(),
        encoded.n,
        started.elapsed().as_secs_f64(),
        out.display()
    )];
    Ok(Outcome {
        interrupted: false,
        report,
        summary,
        draw_stats: None,
    })
}
