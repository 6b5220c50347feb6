//! Encoding runs (`Encoder`): LASSO codes of a dataset and their reconstructions A z (the paper's "Compression").

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{json, Value};

use crate::backend::{Backend, EncodeStats};
use crate::io;
use crate::methods::DynamicsSettings;
use crate::{Error, Result};

use super::observer::{Notice, Observer, Phase};
use super::outputs;
use super::problem::{load_problem, make_backend, Problem};
use super::report::{dataset_json, picture_columns};
use super::sample::lock_output;
use super::settings::EncodeSettings;
use super::shard::{self, Shard, ShardFiles};
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

    /// Encodes and writes every output. Stopped by the observer (polled between batches of
    /// rows), nothing is written, as encoding has no state to resume, and `interrupted` is set.
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
    outputs::check_output_folder(&args.problem.out, names, &inputs, args.problem.force)?;
    let problem = load_problem(&args.problem)?;
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
    let out = &args.problem.out;
    io::prepare_output_dir(out)?;
    let _lock = lock_output(out)?;
    let dynamics = DynamicsSettings {
        eta: 1.0,
        steps: 1,
        batch: 1,
        seed: args.problem.seed,
        ..Default::default()
    };
    // The single run encodes rows in batches [k·B, (k+1)·B) of n; a shard encodes its rows in
    // the same batches (cut to its range), each computed as over its single-run batch's rows
    // (`run_chains`: the CPU's products take their path by the row count).
    let like = |start: usize| ENCODE_BATCH.min(n - start / ENCODE_BATCH * ENCODE_BATCH);
    let sharded = args.problem.shard.is_some();
    let backend_for = |start: usize| {
        let mut dynamics = dynamics.clone();
        if sharded {
            dynamics.run_chains = like(start) as u32;
        }
        let mut backend = make_backend(
            args.problem.backend,
            observer,
            target,
            &dynamics,
            ENCODE_BATCH.min(range.len()).max(1),
        )?;
        backend.set_lasso_tolerance(args.lasso_tolerance);
        Ok::<_, Error>(backend)
    };
    let mut backend = backend_for(range.start)?;
    // The encodings' counts over every backend a shard makes (None: a backend not counting).
    let mut stats = Some(EncodeStats::default());
    let count = |backend: &dyn Backend, stats: &mut Option<EncodeStats>| match (
        stats.as_mut(),
        backend.encode_stats(),
    ) {
        (Some(sum), Some(more)) => sum.add(&more),
        _ => *stats = None,
    };
    let mut backend_like = like(range.start);
    let info = backend.info();

    observer.phase_start(&Phase {
        name: "encoding",
        len: Some(range.len() as u64),
        unit: "",
    });
    let rows_total = range.len();
    let mut codes = Vec::with_capacity(rows_total * p);
    let mut originals = Vec::with_capacity(rows_total * d);
    let batches = (range.start..range.end)
        .step_by(ENCODE_BATCH)
        .map(|s| s / ENCODE_BATCH * ENCODE_BATCH)
        .chain(std::iter::once(range.end / ENCODE_BATCH * ENCODE_BATCH))
        .map(|s| s.max(range.start))
        .filter(|&s| s < range.end)
        .collect::<std::collections::BTreeSet<_>>();
    for start in batches {
        if sharded && like(start) != backend_like {
            count(backend.as_ref(), &mut stats);
            backend = backend_for(start)?;
            backend_like = like(start);
        }
        if observer.stop_requested() {
            observer.phase_finish();
            observer.notice(&Notice::EncodeInterrupted);
            return Ok(Outcome {
                interrupted: true,
                report: serde_json::Value::Null,
                summary: Vec::new(),
                draw_stats: None,
            });
        }
        let rows =
            (start / ENCODE_BATCH * ENCODE_BATCH + ENCODE_BATCH - start).min(range.end - start);
        let images: Vec<f32> = (start..start + rows)
            .flat_map(|i| target.observations.row(i))
            .collect();
        codes.extend(backend.encode(&images, target.lam, args.lasso_iterations)?);
        originals.extend(images);
        observer.phase_advance((start + rows - range.start) as u64);
    }
    observer.phase_finish();
    let reconstructions = reconstruct(&target.dictionary.a, d, p, &codes);
    let encoded = Encoded {
        n: rows_total,
        d,
        p,
        height: problem.dataset.height,
        width: problem.dataset.width,
        codes,
        reconstructions,
        originals,
    };
    count(backend.as_ref(), &mut stats);
    let base = json!({
        "lambda": target.lam,
        "iterations": args.lasso_iterations,
        "lasso": super::report::lasso_json(
            args.lasso_tolerance,
            args.lasso_iterations,
            stats,
        ),
        "pixel_max": args.problem.pixel_max,
        "dataset": dataset_json(&problem.dataset),
        "dictionary": super::report::dictionary_json(&problem, d, p),
        "backend": info,
    });
    if let Some(shard) = args.problem.shard {
        return write_shard(args, &problem, &encoded, base, shard, range, n, started);
    }
    let (report, per_pixel, nonzero) =
        write_outputs(out, &encoded, &target.dictionary.a, base, &|| {
            started.elapsed().as_secs_f64()
        })?;
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
    shard::MANIFEST,
];

/// Rows encoded, with what the report and the picture need.
struct Encoded {
    n: usize,
    d: usize,
    p: usize,
    height: usize,
    width: usize,
    /// n × p.
    codes: Vec<f32>,
    /// n × d, A z.
    reconstructions: Vec<f32>,
    /// n × d, model units.
    originals: Vec<f32>,
}

/// Writes a single run's files (codes.npy, reconstructions.npy, dictionary.npy,
/// reconstructions.png, report.json) for `encoded`; `base` holds the report's fields that do
/// not depend on the codes, `seconds` tells the run's duration. Returns the report, the mean
/// squared error per pixel and the mean non-zero atoms.
fn write_outputs(
    out: &Path,
    encoded: &Encoded,
    dictionary: &[f32],
    base: Value,
    seconds: &dyn Fn() -> f64,
) -> Result<(Value, f64, f64)> {
    let Encoded {
        n,
        d,
        p,
        height: h,
        width: w,
        ..
    } = *encoded;
    let (codes, reconstructions, originals) =
        (&encoded.codes, &encoded.reconstructions, &encoded.originals);
    io::write_npy_f32(&out.join("codes.npy"), &[n, p], codes)?;
    io::write_npy_f32(&out.join("reconstructions.npy"), &[n, d], reconstructions)?;
    io::write_npy_f32(&out.join("dictionary.npy"), &[d, p], dictionary)?;
    let pixel_max = base["pixel_max"].as_f64().unwrap_or(1.0) as f32;
    let shown = picture_columns(n);
    io::write_png_grid(
        &out.join("reconstructions.png"),
        &[
            (&originals[..shown * d], shown),
            (&reconstructions[..shown * d], shown),
        ],
        h,
        w,
        shown,
        (0.0, pixel_max),
        (112 / h.max(w)).clamp(1, 8),
    )?;
    // ||x − A z||² per image, and its mean per pixel (model units, pixel-max scale).
    let per_image: f64 = originals
        .iter()
        .zip(reconstructions)
        .map(|(a, b)| ((a - b) as f64).powi(2))
        .sum::<f64>()
        / n as f64;
    let per_pixel = per_image / d as f64;
    let nonzero = codes.iter().filter(|&&v| v != 0.0).count() as f64 / n as f64;
    let mut report = json!({
        "command": "encode",
        "rmld_version": env!("CARGO_PKG_VERSION"),
        "encoded": n,
        "seconds": seconds(),
        "mean_squared_error_per_pixel": per_pixel,
        "squared_error_per_image": per_image,
        "mean_nonzero_atoms": nonzero,
        "outputs": { "codes.npy": [n, p], "reconstructions.npy": [n, d], "dictionary.npy": [d, p],
                     "reconstructions.png": "top: originals; bottom: their reconstructions A z" },
    });
    if let (Some(report), Value::Object(base)) = (report.as_object_mut(), base) {
        report.extend(base);
    }
    io::write_json_atomic(&out.join("report.json"), &report)?;
    Ok((report, per_pixel, nonzero))
}

/// Writes shard `shard`'s part (rows `range` of `total`) and its manifest.
#[allow(clippy::too_many_arguments)]
fn write_shard(
    args: &EncodeSettings,
    problem: &Problem,
    encoded: &Encoded,
    base: Value,
    shard: Shard,
    range: Range<usize>,
    total: usize,
    started: Instant,
) -> Result<Outcome> {
    let out = &args.problem.out;
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
    let part = shard::Part {
        unit: "originals".into(),
        start: range.start,
        end: range.end,
        total,
    };
    let mut report = json!({
        "command": "encode",
        "rmld_version": env!("CARGO_PKG_VERSION"),
        "shard": shard,
        "part": part,
        "encoded": rows,
        "seconds": started.elapsed().as_secs_f64(),
    });
    if let (Some(report), Value::Object(base)) = (report.as_object_mut(), base) {
        report.extend(base);
    }
    io::write_json_atomic(&out.join("report.json"), &report)?;
    let (data, dictionary) = super::sample::hashes(target);
    let mut config = args.clone();
    config.problem.out = PathBuf::new();
    config.problem.shard = None;
    // The device that ran it: `auto` may pick the CPU on one node and a GPU on another, and
    // two GPU adapters round differently; CPU results do not depend on the thread count.
    let backend = &report["backend"];
    let device = match backend["kind"].as_str() {
        Some("cpu") => "cpu".to_string(),
        _ => format!("{}: {}", backend["kind"], backend["device"]),
    };
    let config = (config, device);
    shard::write_manifest(
        out,
        "encode",
        shard::configuration_hash(&config, data, dictionary),
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
        out.display()
    )];
    Ok(Outcome {
        interrupted: false,
        report,
        summary,
        draw_stats: None,
    })
}

/// Joins the shards of an encoding run (checked and in order) into the single run's files.
pub(crate) fn merge_shards(out: &Path, shards: &[ShardFiles]) -> Result<Outcome> {
    let started = Instant::now();
    let first = &shards[0];
    let mut encoded: Option<Encoded> = None;
    let mut seconds = 0f64;
    let mut lasso = Vec::with_capacity(shards.len());
    for s in shards {
        let report = s.json("report.json")?;
        seconds = seconds.max(report["seconds"].as_f64().unwrap_or(0.0));
        lasso.push(report["lasso"].clone());
        let (code_shape, codes) = s.npy_f32("codes.npy")?;
        let (recon_shape, reconstructions) = s.npy_f32("reconstructions.npy")?;
        let (orig_shape, originals) = s.npy_f32("originals.npy")?;
        let rows = s.manifest.part.end - s.manifest.part.start;
        let bad_shape = |name: &str| {
            Error::input(
                s.dir.join(name),
                format!(
                    "shard {}: the shape does not fit its {rows} rows",
                    s.manifest.shard
                ),
            )
        };
        let (Some(&p), Some(&d)) = (code_shape.get(1), recon_shape.get(1)) else {
            return Err(bad_shape("codes.npy"));
        };
        if code_shape[0] != rows {
            return Err(bad_shape("codes.npy"));
        }
        if recon_shape != [rows, d] {
            return Err(bad_shape("reconstructions.npy"));
        }
        if orig_shape != [rows, d] {
            return Err(bad_shape("originals.npy"));
        }
        if s.file("dictionary.npy")? != first.file("dictionary.npy")? {
            return Err(Error::input(
                s.dir.join("dictionary.npy"),
                format!(
                    "shard {}'s dictionary differs from shard {}'s",
                    s.manifest.shard, first.manifest.shard
                ),
            ));
        }
        let e = encoded.get_or_insert_with(|| Encoded {
            n: 0,
            d,
            p,
            height: report["dataset"]["height"].as_u64().unwrap_or(0) as usize,
            width: report["dataset"]["width"].as_u64().unwrap_or(0) as usize,
            codes: Vec::new(),
            reconstructions: Vec::new(),
            originals: Vec::new(),
        });
        if (e.d, e.p) != (d, p) {
            return Err(bad_shape("codes.npy"));
        }
        e.n += rows;
        e.codes.extend(codes);
        e.reconstructions.extend(reconstructions);
        e.originals.extend(originals);
    }
    let encoded = encoded.ok_or_else(|| Error::Internal("no shard".into()))?;
    let (_, dictionary) = first.npy_f32("dictionary.npy")?;
    let report = first.json("report.json")?;
    let keep = [
        "lambda",
        "iterations",
        "pixel_max",
        "dataset",
        "dictionary",
        "backend",
    ];
    let mut base: serde_json::Map<String, Value> = keep
        .iter()
        .filter_map(|k| report.get(*k).map(|v| (k.to_string(), v.clone())))
        .collect();
    if let Some(lasso) = super::report::merged_lasso_json(&lasso) {
        base.insert("lasso".into(), lasso);
    }
    io::prepare_output_dir(out)?;
    let _lock = lock_output(out)?;
    let (report, per_pixel, _) =
        write_outputs(out, &encoded, &dictionary, Value::Object(base), &|| seconds)?;
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

/// A z for every code (rows of p), in the CPU products' one order (a shard's rows as the single
/// run's, on any CPU).
fn reconstruct(a: &[f32], d: usize, p: usize, codes: &[f32]) -> Vec<f32> {
    let mut out = vec![0f32; codes.len() / p * d];
    let transposed = crate::backend::cpu::packed::PackedOperand::from_transpose(a, d, p);
    transposed.product(codes, None, &mut out);
    out
}
