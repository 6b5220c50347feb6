//! `rmld sample`: run the chains and write codes, images, the dictionary, a picture and a report.

use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;

use rmld::backend::DynamicsSettings;
use rmld::io;
use rmld::orchestrator::{self, MemorySink, SamplerSettings};
use rmld::Result;

use super::args::SampleArgs;
use super::problem::{load_problem, make_backend};
use super::report::{chain_quantiles, dataset_json, picture_columns};

pub fn sample(args: &SampleArgs) -> Result<()> {
    let started = Instant::now();
    let problem = load_problem(&args.problem)?;
    let target = &problem.target;
    let settings = SamplerSettings {
        chains: args.chains,
        samples: args.samples,
        dynamics: DynamicsSettings {
            method: args.method,
            leapfrog_steps: args.leapfrog_steps,
            eta: args.eta,
            steps: args.steps,
            batch: args.batch,
            sghmc_noise: args.sghmc_noise,
            seed: args.problem.seed,
        },
        mh: !args.no_mh,
        discount: args.discount,
        init: args.init,
        lasso_iterations: args.lasso_iterations,
    };
    settings.validate()?;
    let out = &args.problem.out;
    io::prepare_output_dir(out)?;
    let mut backend = make_backend(
        args.problem.backend,
        target,
        &settings.dynamics,
        settings.chains,
    )?;
    let info = backend.info();

    let bar = ProgressBar::new(settings.samples as u64).with_style(
        ProgressStyle::with_template(
            "{spinner} sampling [{bar:30}] {pos}/{len} outer iterations ({elapsed})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut samples = MemorySink::default();
    let run = orchestrator::run(
        backend.as_mut(),
        target,
        &settings,
        &mut samples,
        &mut |k| bar.set_position(k as u64),
    )?;
    bar.finish_and_clear();

    let (d, p, c, k) = (
        target.d(),
        target.p(),
        settings.chains,
        settings.samples as usize,
    );
    io::write_npy_f32(&out.join("codes.npy"), &[k, c, p], &samples.codes)?;
    io::write_npy_f32(&out.join("images.npy"), &[k, c, d], &samples.images)?;
    io::write_npy_f32(&out.join("dictionary.npy"), &[d, p], &target.dictionary.a)?;

    // The picture: the real images the chains started from above, the last samples below.
    let (h, w) = (problem.dataset.height, problem.dataset.width);
    let columns = picture_columns(c);
    let shown = columns.min(c);
    let real: Vec<f32> = match &run.start_indices {
        Some(idx) => idx
            .iter()
            .take(shown)
            .flat_map(|&i| target.observations.row(i))
            .collect(),
        None => (0..shown)
            .flat_map(|i| target.observations.row(i * target.observations.n / shown))
            .collect(),
    };
    let rows = 4.min(c.div_ceil(columns));
    let last = &run.final_images;
    let generated = &last[..(rows * columns).min(c) * d];
    let upscale = (112 / h.max(w)).clamp(1, 8);
    io::write_png_grid(
        &out.join("samples.png"),
        &[(real.as_slice(), shown), (generated, generated.len() / d)],
        h,
        w,
        columns,
        (0.0, args.problem.pixel_max),
        upscale,
    )?;

    let acceptance = run.acceptance_rate();
    let per_chain: Vec<f64> = run.accepted.iter().map(|&a| a as f64 / k as f64).collect();
    let moved = run.mean_distance_moved();
    let diagnostics = rmld::diagnostics::summarize(&run, run.timings.sampling_seconds);
    let report = json!({
        "command": "sample",
        "rmld_version": env!("CARGO_PKG_VERSION"),
        "settings": settings,
        "lambda": target.lam,
        "pixel_max": args.problem.pixel_max,
        "dataset": dataset_json(&problem.dataset),
        "dictionary": { "source": problem.dictionary_source, "d": d, "p": p },
        "backend": info,
        "timings": { "total_seconds": started.elapsed().as_secs_f64(), "phases": run.timings },
        "acceptance": {
            "overall": acceptance,
            "per_chain": per_chain,
            "per_chain_quantiles": chain_quantiles(&per_chain),
            "divergent_proposals": run.divergent.iter().sum::<u32>(),
        },
        "mean_distance_moved_from_start": moved,
        "diagnostics": diagnostics,
        "start_indices": run.start_indices,
        "outputs": {
            "codes.npy": [k, c, p],
            "images.npy": [k, c, d],
            "dictionary.npy": [d, p],
            "samples.png": "top: the real images the first chains started from; below: their last samples",
        },
    });
    io::write_json_atomic(&out.join("report.json"), &report)?;
    println!(
        "rmld sample: {c} chains × {k} samples ({d} → {p} atoms) on {} in {:.1} s; acceptance {:.1}%, \
         mean distance moved from start {moved:.3}; wrote {}",
        info.device,
        started.elapsed().as_secs_f64(),
        100.0 * acceptance,
        out.display()
    );
    println!("{}", diagnostics.summary_line());
    Ok(())
}
