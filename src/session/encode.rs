//! Encoding runs (`Encoder`): LASSO codes of a dataset and their reconstructions A z (the paper's "Compression").

use std::time::Instant;

use serde_json::json;

use crate::io;
use crate::methods::DynamicsSettings;
use crate::Result;

use super::observer::{Notice, Observer, Phase};
use super::outputs;
use super::problem::{load_problem, make_backend};
use super::report::{dataset_json, picture_columns};
use super::sample::lock_output;
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
    outputs::check_output_folder(
        &args.problem.out,
        outputs::ENCODE_OUTPUTS,
        &inputs,
        args.problem.force,
    )?;
    let problem = load_problem(&args.problem)?;
    let target = &problem.target;
    let (d, p) = (target.d(), target.p());
    let n = match args.limit {
        Some(c) => c.min(problem.dataset.n),
        None => problem.dataset.n,
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
    let mut backend = make_backend(
        args.problem.backend,
        observer,
        target,
        &dynamics,
        ENCODE_BATCH.min(n),
    )?;
    let info = backend.info();

    observer.phase_start(&Phase {
        name: "encoding",
        len: Some(n as u64),
        unit: "",
    });
    let mut codes = Vec::with_capacity(n * p);
    let mut originals = Vec::with_capacity(n * d);
    for start in (0..n).step_by(ENCODE_BATCH) {
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
        let rows = ENCODE_BATCH.min(n - start);
        let images: Vec<f32> = (start..start + rows)
            .flat_map(|i| target.observations.row(i))
            .collect();
        codes.extend(backend.encode(&images, target.lam, args.lasso_iterations)?);
        originals.extend(images);
        observer.phase_advance((start + rows) as u64);
    }
    observer.phase_finish();
    let reconstructions = reconstruct(&target.dictionary.a, d, p, &codes);

    io::write_npy_f32(&out.join("codes.npy"), &[n, p], &codes)?;
    io::write_npy_f32(&out.join("reconstructions.npy"), &[n, d], &reconstructions)?;
    io::write_npy_f32(&out.join("dictionary.npy"), &[d, p], &target.dictionary.a)?;
    let shown = picture_columns(n);
    let (h, w) = (problem.dataset.height, problem.dataset.width);
    io::write_png_grid(
        &out.join("reconstructions.png"),
        &[
            (&originals[..shown * d], shown),
            (&reconstructions[..shown * d], shown),
        ],
        h,
        w,
        shown,
        (0.0, args.problem.pixel_max),
        (112 / h.max(w)).clamp(1, 8),
    )?;
    // ||x − A z||² per image, and its mean per pixel (model units, pixel-max scale).
    let per_image: f64 = originals
        .iter()
        .zip(&reconstructions)
        .map(|(a, b)| ((a - b) as f64).powi(2))
        .sum::<f64>()
        / n as f64;
    let per_pixel = per_image / d as f64;
    let nonzero = codes.iter().filter(|&&v| v != 0.0).count() as f64 / n as f64;
    let report = json!({
        "command": "encode",
        "rmld_version": env!("CARGO_PKG_VERSION"),
        "lambda": target.lam,
        "iterations": args.lasso_iterations,
        "pixel_max": args.problem.pixel_max,
        "dataset": dataset_json(&problem.dataset),
        "encoded": n,
        "dictionary": { "source": problem.dictionary_source, "d": d, "p": p },
        "backend": info,
        "seconds": started.elapsed().as_secs_f64(),
        "mean_squared_error_per_pixel": per_pixel,
        "squared_error_per_image": per_image,
        "mean_nonzero_atoms": nonzero,
        "outputs": { "codes.npy": [n, p], "reconstructions.npy": [n, d], "dictionary.npy": [d, p],
                     "reconstructions.png": "top: originals; bottom: their reconstructions A z" },
    });
    io::write_json_atomic(&out.join("report.json"), &report)?;
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

/// A z for every code (rows of p), through the CPU product.
fn reconstruct(a: &[f32], d: usize, p: usize, codes: &[f32]) -> Vec<f32> {
    let rows = codes.len() / p;
    let mut out = vec![0f32; rows * d];
    crate::backend::cpu::matmul::residual_product(a, d, p, codes, &vec![0f32; rows * d], &mut out);
    out
}
