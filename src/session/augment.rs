//! Class-conditional augmentation (`Augmenter`): chains per class in one run, their samples mixed with the originals and written as IDX, NPY and PNG.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};

use crate::backend::kernel_hmc::KernelTarget;
use crate::backend::Backend;
use crate::diagnostics::quality::LabelledImages;
use crate::io::{self, Dataset, NpyStream, Pixels};
use crate::methods::{DynamicsSettings, Method};
use crate::model::{Dictionary, Observations, Target, TargetKind};
use crate::orchestrator::augment::{AugmentPlan, AugmentSink};
use crate::orchestrator::{
    self, Adaptation, Checkpoint, Hooks, Init, SampleRun, SampleSink, SamplerSettings,
};
use crate::{Error, Result};

use super::amortized::amortized_generation;
use super::estimate::{estimate_augment, AugmentWork};
use super::observer::{Notice, Observer, Phase};
use super::problem::{
    build_problem, make_backend, make_grouped_backend, make_kernel_backend, Problem,
};
use super::quality::judge;
use super::sample::{hashes, lock_output, remove_if_present};
use super::settings::{AugmentMethod, AugmentSettings, Preset, SamplerChoice};
use super::shard::{self, Shard, ShardFiles};
use super::{outputs, Outcome};
use crate::io::code_cache;
use crate::measure::memory;
use crate::model::data_scale::{self, DataScale};
use crate::orchestrator::report::{chain_quantiles, dataset_json};
use crate::orchestrator::CodeKey;

/// Rows LASSO-encoded per backend call (bounds memory, moves the progress bar, checks for a stop).
const ENCODE_BATCH: usize = 2048;
/// Generated samples per class shown in the PNG grid.
const GRID_COLUMNS: usize = 12;
/// A shard's generated images (rows of d, model units, class by class), its chains' samples.
const SHARD_IMAGES: &str = "generated-images.npy";
/// A shard's generated codes (rows of p, as the images), re-encoded with `reencode`.
const SHARD_CODES: &str = "generated-codes.npy";
/// A shard's part of the originals' LASSO codes.
const ORIGINAL_CODES: &str = "original-codes.npy";
/// A shard's part of the test split's LASSO codes.
const TEST_CODES: &str = "test-codes.npy";
/// A shard's chains' run (a checkpoint of it, with the configuration), which `merge` joins.
const SHARD_TRACE: &str = "trace.rmld";
/// What a shard of `rmld augment` writes.
const SHARD_OUTPUTS: &[&str] = &[
    SHARD_IMAGES,
    SHARD_CODES,
    ORIGINAL_CODES,
    TEST_CODES,
    SHARD_TRACE,
    "report.json",
    shard::MANIFEST,
];

/// Generates a class-conditional augmentation set into `settings.problem.out`: new samples per
/// class (one per `ratio` originals) mixed with the originals, written as MNIST-style IDX, NPY
/// codes and labels, a PNG grid per class and report.json, with the sample-quality metrics.
#[derive(Clone, Debug)]
pub struct Augmenter {
    settings: AugmentSettings,
}

impl Augmenter {
    /// An augmentation with these settings (checked when it runs).
    pub fn new(settings: AugmentSettings) -> Self {
        Augmenter { settings }
    }

    /// The settings.
    pub fn settings(&self) -> &AugmentSettings {
        &self.settings
    }

    /// Runs the whole pipeline, phase by phase ([`AUGMENT_PHASES`], each one's time in report.json's
    /// `phase_seconds`), announcing a run estimated to take over a minute (`Notice::Estimate`).
    /// An augmentation cannot be resumed: stopped early by the observer, in any phase, it keeps
    /// no output (every data file is written in the last phase, and those already written are
    /// removed), writes a report.json that says where it stopped, and sets `interrupted`.
    /// With `problem.shard` set it runs that shard's part of the chains and of the encodings
    /// (see [`merge`](crate::session::merge), which joins the shards into this run's files).
    pub fn run(&self, observer: &dyn Observer) -> Result<Outcome> {
        augment(&self.settings, observer)
    }
}

/// The phases of an augmentation, in run order: each one's wall time is in report.json's
/// `phase_seconds` (0 for a phase the settings leave out).
pub const AUGMENT_PHASES: [&str; 9] = [
    "dataset load",
    "LASSO starts",
    "burn-in",
    "sampling",
    "re-encoding",
    "quality check",
    "original codes",
    "test codes",
    "writing",
];

/// Wall time per phase, with a progress display through the observer for the phases that have
/// none of their own.
struct PhaseClock<'a> {
    observer: &'a dyn Observer,
    seconds: Vec<(&'static str, f64)>,
    current: Option<(&'static str, Instant)>,
    /// Whether the current stage opened a progress bar (`Observer::phase_start`).
    bar: bool,
    /// The last phase begun: where a stop happened.
    last: &'static str,
}

impl<'a> PhaseClock<'a> {
    fn new(observer: &'a dyn Observer) -> Self {
        PhaseClock {
            observer,
            seconds: AUGMENT_PHASES.iter().map(|&name| (name, 0.0)).collect(),
            current: None,
            bar: false,
            last: AUGMENT_PHASES[0],
        }
    }

    /// Ends the current stage and begins `name` (`Observer::stage_start`); `bar` is a progress
    /// bar of that many outer iterations inside it (burn-in, sampling).
    fn begin(&mut self, name: &'static str, bar: Option<u64>) {
        self.end();
        self.observer.stage_start(name);
        if let Some(len) = bar {
            self.observer.phase_start(&Phase {
                name,
                len: Some(len),
                unit: "outer iterations",
            });
        }
        self.bar = bar.is_some();
        self.current = Some((name, Instant::now()));
        self.last = name;
    }

    fn end(&mut self) {
        if let Some((name, started)) = self.current.take() {
            let elapsed = started.elapsed().as_secs_f64();
            if let Some(entry) = self.seconds.iter_mut().find(|(n, _)| *n == name) {
                entry.1 += elapsed;
            }
            if std::mem::take(&mut self.bar) {
                self.observer.phase_finish();
            }
            self.observer.stage_finish(name, elapsed);
        }
    }

    fn json(&self) -> Value {
        Value::Object(
            self.seconds
                .iter()
                .map(|(name, s)| (name.to_string(), json!(s)))
                .collect(),
        )
    }

    fn summary(&self) -> String {
        let parts: Vec<String> = self
            .seconds
            .iter()
            .filter(|(_, s)| *s > 0.0)
            .map(|(name, s)| format!("{name} {s:.1} s"))
            .collect();
        format!("phases: {}", parts.join(", "))
    }
}

/// Writes one output file at the path it is given.
type WriteOne<'a> = Box<dyn FnOnce(&Path) -> Result<()> + 'a>;

/// Files written into the output folder so far, removed again when the run stops early.
#[derive(Default)]
struct Written {
    files: Vec<std::path::PathBuf>,
    streams: Vec<std::path::PathBuf>,
}

impl Written {
    fn remove_all(&mut self) {
        for path in self.files.drain(..) {
            let _ = std::fs::remove_file(&path);
        }
        for path in self.streams.drain(..) {
            let _ = std::fs::remove_file(io::partial_path(&path));
        }
    }
}

/// Ends a stopped run: removes what it wrote, writes report.json saying where it stopped and
/// that it cannot be resumed, and tells the observer.
fn stopped(
    out: &Path,
    written: &mut Written,
    clock: &mut PhaseClock,
    started: Instant,
    observer: &dyn Observer,
) -> Result<Outcome> {
    let phase = clock.last;
    clock.end();
    written.remove_all();
    let report = json!({
        "command": "augment",
        "rmld_version": env!("CARGO_PKG_VERSION"),
        "interrupted": true,
        "stopped_in": phase,
        "resumable": false,
        "outputs": "none: an augmentation cannot be resumed, so an interrupted one keeps no output; run it again",
        "phase_seconds": clock.json(),
        "seconds": started.elapsed().as_secs_f64(),
    });
    io::write_json_atomic(&out.join("report.json"), &report)?;
    observer.notice(&Notice::AugmentInterrupted {
        phase,
        out: out.to_path_buf(),
    });
    Ok(Outcome {
        interrupted: true,
        report,
        summary: Vec::new(),
        draw_stats: None,
    })
}

/// What one pass of the augmentation pipeline does: the whole run, one shard's part of it, or
/// the merge of every shard's part into the whole run's files.
#[derive(Clone, Copy)]
enum Mode<'a> {
    /// The whole run.
    Single,
    /// Shard `i/N`: its chains' samples, its part of the originals' and test split's codes.
    Shard(Shard),
    /// The merge of these shards (checked, in order): no chain runs, nothing is encoded.
    Merge(&'a [ShardFiles]),
}

fn augment(args: &AugmentSettings, observer: &dyn Observer) -> Result<Outcome> {
    let mode = match args.problem.shard {
        Some(shard) => Mode::Shard(shard),
        None => Mode::Single,
    };
    run_augment(args, observer, mode)
}

fn run_augment(args: &AugmentSettings, observer: &dyn Observer, mode: Mode) -> Result<Outcome> {
    let started = Instant::now();
    args.validate()?;
    let inputs = [
        args.problem.data.as_deref(),
        args.labels.as_deref(),
        args.problem.dictionary.as_deref(),
    ];
    let names = match mode {
        Mode::Shard(_) => SHARD_OUTPUTS,
        _ => outputs::AUGMENT_OUTPUTS,
    };
    if !matches!(mode, Mode::Merge(_)) {
        outputs::check_output_folder(&args.problem.out, names, &inputs, args.problem.force)?;
    }
    let mut clock = PhaseClock::new(observer);
    clock.begin("dataset load", None);
    let dataset = load_labelled(args)?;
    // Checked before any work: a missing test split must not cost a whole run.
    let test = if args.encode_test {
        Some(load_test(args, &dataset)?)
    } else {
        None
    };
    let labels = dataset.labels.clone().unwrap_or_default();
    let (fitted, batch_fitted) = fit_batch(args, &labels);
    let (fitted, k_fitted) = fit_tangent_k(&fitted, &labels);
    let (fitted, scale_fitted) = fit_scale(&fitted, &dataset, &labels);
    let original_args = args;
    let args = &fitted;
    let post = args.postprocess();
    let samples_per_chain = match args.method {
        AugmentMethod::Compression => 1,
        _ => args.samples,
    };
    let plan = AugmentPlan::new(
        &labels,
        args.classes.as_deref(),
        args.ratio,
        samples_per_chain,
        args.dynamics.batch,
    )?;
    // The originals: every image of the chosen classes, in dataset order.
    let mut original_rows = plan.order.clone();
    original_rows.sort_unstable();
    let originals = dataset.try_subset(&original_rows)?;
    let sorted = dataset.try_subset(&plan.order)?;
    let kernel = args.method == AugmentMethod::KernelHmc;
    if kernel && args.sampler == SamplerChoice::Amortized {
        return Err(Error::usage(
            "sampler",
            "the amortized sampler generates codes; kernel-hmc has none",
        ));
    }
    if kernel && args.reencode {
        return Err(Error::usage(
            "reencode",
            "kernel-hmc samples images and has no codes to replace",
        ));
    }
    if kernel && args.encode_test {
        return Err(Error::usage(
            "encode_test",
            "kernel-hmc samples images and has no codes to encode the test split for",
        ));
    }
    // Kernel HMC samples images on the 0..1 scale, where its step size means the same for
    // every dataset; its "dictionary" is the identity (codes are the images).
    let problem_args = args.problem_settings();
    let problem =
        build_problem(&problem_args, Arc::new(sorted))?.with_adapt_iterations(args.burn_in_cap());
    super::sample::refuse_auto_burn_in_with_adapting_prior(args.auto_burn_in, &problem)?;
    let d = problem.target.d();
    let means = class_means(&problem.target.observations, &plan);
    let base = if kernel {
        Target::new(
            Arc::new(Dictionary::identity(d)),
            problem.target.observations.clone(),
            0.0,
        )
    } else {
        Target::clone(&problem.target)
    };
    let settings = sampler_settings(args, &plan)?;
    // The chains' state, their class means, and the generated codes and images kept in memory.
    let p = if kernel { d } else { problem.target.p() };
    let generated = plan.generated() as f64;
    memory::check_fits(
        "ratio",
        &format!(
            "{} generated samples from {} chains of {p} atoms over {d} pixels",
            plan.generated(),
            settings.chains
        ),
        memory::sampler_bytes(settings.chains, d, p)
            + 4.0 * (settings.chains * d) as f64
            + generated * 4.0 * (p + d) as f64,
    )?;
    if kernel && args.problem.target != TargetKind::Paper {
        return Err(Error::usage(
            "target",
            "kernel-hmc has its own target (a kernel density of the class's images)",
        ));
    }
    let target = base
        .with_classes(plan.chain_classes(&means, d)?)
        .with_kind(args.problem.target, settings.chains, settings.dynamics.seed)?;
    // A shard runs its range of the chains, keyed by their global index, with its products
    // computed as over the whole run's chains.
    let full_settings = settings.clone();
    let chain_range = match mode {
        Mode::Shard(shard) => shard_chains(shard, settings.chains)?,
        _ => 0..settings.chains,
    };
    let (target, settings) = match mode {
        Mode::Shard(_) => {
            let mut part = settings.clone();
            part.chains = chain_range.len();
            part.dynamics.chain_offset = chain_range.start as u32;
            part.dynamics.run_chains = settings.chains as u32;
            (
                Arc::new(target.chain_slice(settings.chains, chain_range.clone())?),
                part,
            )
        }
        _ => (Arc::new(target), settings),
    };
    let (data_hash, dictionary_hash) = hashes(&problem.target);
    if let Mode::Merge(shards) = mode {
        check_merge_inputs(shards, data_hash, dictionary_hash, &problem)?;
    }
    let out = &args.problem.out;
    io::prepare_output_dir(out)?;
    let _lock = lock_output(out)?;
    if let Mode::Shard(_) = mode {
        // A manifest left by an earlier shard here must not vouch for this run's files.
        remove_if_present(&out.join(shard::MANIFEST))?;
    }
    let mut backend = if let Mode::Merge(_) = mode {
        None
    } else if kernel {
        let kernel_target = KernelTarget::with_median_bandwidth(
            target.observations.clone(),
            target.chain_rows(settings.chains)?,
            args.problem.seed,
        )?;
        Some(make_kernel_backend(
            args.problem.backend,
            observer,
            &Arc::new(kernel_target),
            &settings.dynamics,
        )?)
    } else {
        Some(make_grouped_backend(
            args.problem.backend,
            observer,
            &target,
            &settings.dynamics,
            settings.chains,
            args.adapt,
        )?)
    };
    if let Some(backend) = backend.as_mut() {
        backend.set_lasso_tolerance(args.lasso_tolerance);
    }
    clock.end();
    // The merge reports the first shard's device and estimate (each shard reckons the whole
    // run's).
    let (info, estimate) = match (&backend, mode) {
        (Some(backend), _) => {
            let info = backend.info();
            let estimate = estimate_run(
                args,
                &plan,
                &full_settings,
                d,
                p,
                &originals,
                &test,
                kernel,
                &info,
            );
            let amortized = args.sampler == SamplerChoice::Amortized;
            if estimate.worth_announcing() && !matches!(mode, Mode::Shard(_)) && !amortized {
                observer.notice(&Notice::Estimate {
                    seconds: estimate.seconds,
                    device: info.device.clone(),
                    how: estimate.how.clone(),
                });
            }
            (json!(info), json!(estimate))
        }
        (None, Mode::Merge(shards)) => {
            let report = shards[0].json("report.json")?;
            (report["backend"].clone(), report["estimate"].clone())
        }
        (None, _) => return Err(Error::Internal("augment without a backend".into())),
    };
    let device = info["device"].as_str().unwrap_or("?").to_string();
    let mut written = Written::default();
    if observer.stop_requested() {
        return stopped(out, &mut written, &mut clock, started, observer);
    }
    // With an automatic burn-in, its cap until the run says where it ended.
    let mut burn_in = if args.method == AugmentMethod::Compression {
        0
    } else {
        args.burn_in_cap()
    };
    let amortized = args.sampler == SamplerChoice::Amortized;
    let mut amortized_info = Value::Null;
    let (mut sink, run) = match backend.as_mut() {
        Some(_) if amortized => {
            clock.begin("sampling", None);
            let (h, w) = (problem.dataset.height, problem.dataset.width);
            let (sink, run, info) = amortized_generation(args, &plan, &target, h, w)?;
            amortized_info = info;
            (sink, run)
        }
        Some(backend) => {
            let mut sink = AugmentSink::for_chains(&plan, chain_range.clone(), burn_in, !kernel);
            let run = generate(
                args,
                backend.as_mut(),
                &target,
                &settings,
                &mut sink,
                &mut clock,
            )?;
            (sink, run)
        }
        None => match mode {
            Mode::Merge(shards) => merged_generation(shards, &plan, burn_in, kernel, d, p)?,
            _ => return Err(Error::Internal("augment without a backend".into())),
        },
    };
    if run.interrupted {
        return stopped(out, &mut written, &mut clock, started, observer);
    }
    if let Some(end) = run.burn_in.as_ref().and_then(|m| m.ended_at) {
        burn_in = end;
    }
    let generation_seconds = started.elapsed().as_secs_f64();
    if let Mode::Shard(shard) = mode {
        let part = ShardPart {
            shard,
            chain_range: chain_range.clone(),
            chains: full_settings.chains,
            data_hash,
            dictionary_hash,
            info: &info,
            estimate: &estimate,
        };
        return write_shard(
            args,
            original_args,
            &part,
            &problem,
            &plan,
            &originals,
            test.as_ref(),
            &mut sink,
            &run,
            backend.as_deref_mut(),
            observer,
            &mut clock,
            started,
        );
    }

    let (h, w) = (problem.dataset.height, problem.dataset.width);
    let full = problem_args.pixel_max;
    // The chains' classes in order (`orchestrator::class_of_chain`'s indices).
    let class_labels: Vec<u32> = plan.classes.iter().map(|c| c.label).collect();
    let generated_labels: Vec<u32> = plan
        .classes
        .iter()
        .zip(&sink.kept)
        .flat_map(|(c, &k)| std::iter::repeat_n(c.label, k))
        .collect();
    let generated_images: Vec<f32> = sink.images.concat();
    let generated_pixels = post.to_pixels(&generated_images, h, w, full);
    let mut generated_codes: Vec<f32> = sink.codes.concat();
    let p = target.p();
    let g = generated_labels.len();
    let label_bytes = idx_labels(&generated_labels)?;
    let mut reencode_cache = "off";
    // The merge's codes are re-encoded already (by the shards).
    if let (true, Some(backend)) = (args.reencode, backend.as_mut()) {
        clock.begin("re-encoding", None);
        let scale = full / 255.0;
        let images: Vec<f32> = generated_pixels.iter().map(|&v| v as f32 * scale).collect();
        match encode_rows(
            backend.as_mut(),
            &target,
            &images,
            args,
            observer,
            &mut reencode_cache,
        )? {
            Some(codes) => generated_codes = codes,
            None => return stopped(out, &mut written, &mut clock, started, observer),
        }
    }

    let mut report = json!({
        "command": "augment",
        "rmld_version": env!("CARGO_PKG_VERSION"),
        "preset": args.preset,
        "method": args.method,
        "mh": !args.dynamics.no_mh,
        "settings": settings,
        "ratio": args.ratio,
        "burn_in": burn_in,
        "burn_in_auto": run.burn_in.as_ref().map(crate::orchestrator::report::burn_in_json),
        "adaptation": crate::orchestrator::report::adaptation_json(&run, Some(&class_labels)),
        "postprocess": post,
        "generated_codes": if kernel {
            "none"
        } else if args.reencode {
            "LASSO codes of the post-processed generated images (--reencode)"
        } else {
            "the chains' positions X"
        },
        "pixel_max": args.problem.pixel_max,
        "lambda": args.problem.lambda,
        "sigma2": args.problem.sigma2,
        "target": args.problem.target,
        "tangent": { "k": args.problem.tangent_k, "scale": args.problem.tangent_scale },
        "dataset": dataset_json(&dataset),
        "dictionary": if kernel {
            json!("none: kernel-hmc samples images")
        } else {
            super::problem::dictionary_json(&problem, d, p)
        },
        "backend": info,
        "original_count": originals.n,
        "generated_count": g,
        "interrupted": false,
        "classes": class_report(&plan, &sink, &run),
        "acceptance_rate": run.acceptance_rate(),
        "mh_note": crate::orchestrator::report::mh_note(
            settings.mh && args.method == AugmentMethod::Rmld,
            settings.dynamics.method,
            run.acceptance_rate()
        ),
        "mean_distance_moved": run.mean_distance_moved(),
        "divergent": run.divergent.iter().map(|&v| v as u64).sum::<u64>(),
        "timings": run.timings,
        "generation_seconds": generation_seconds,
        "samples_per_second": g as f64 / generation_seconds.max(1e-9),
        "estimate": estimate,
    });
    if amortized {
        report["sampler"] = json!("amortized");
        report["amortized"] = amortized_info;
    }
    if let (Some(ssgl), Some(object)) = (problem.target.prior.ssgl(), report.as_object_mut()) {
        object.insert(
            "prior".into(),
            crate::orchestrator::report::ssgl_json(ssgl, &run, problem.target.p()),
        );
    }
    // Convergence per class on the post-burn-in draws (compression runs no chains).
    let class_verdict = (args.method != AugmentMethod::Compression && !run.log_alpha.is_empty())
        .then(|| {
            use crate::diagnostics::per_class as cd;
            let target_kind = args.problem.target;
            let seconds = run.timings.sampling_seconds;
            let classes = cd::per_class(&plan, &run, target_kind, burn_in, seconds);
            let verdict = cd::verdict(&classes, args.preset == Some(Preset::Quality));
            report["diagnostics_per_class"] = cd::report_json(&classes, target_kind, &verdict);
            verdict
        });
    if let (Some(noise), Some(object)) = (
        crate::orchestrator::report::noise_json(&problem.target.noise, &run, burn_in),
        report.as_object_mut(),
    ) {
        object.insert("noise".into(), noise);
    }
    if !args.no_quality {
        clock.begin("quality check", None);
    }
    let quality = add_quality(
        args,
        &originals,
        &generated_pixels,
        &generated_labels,
        observer,
        &mut report,
    )?;
    if matches!(quality, Quality::Interrupted) {
        return stopped(out, &mut written, &mut clock, started, observer);
    }

    // The originals' codes and the test split's, streamed into hidden partial files that the
    // writing phase finishes (renames) with the rest.
    let mut cache_status = ["off"; 2];
    let mut original_codes = None;
    if !args.no_original_codes && !kernel {
        clock.begin("original codes", None);
        let path = out.join("codes.npy");
        written.streams.push(path.clone());
        match encode_or_join(
            &path,
            ORIGINAL_CODES,
            backend.as_deref_mut(),
            mode,
            &problem.target,
            &originals,
            args,
            observer,
            &mut cache_status[0],
        )? {
            Some(stream) => original_codes = Some(stream),
            None => return stopped(out, &mut written, &mut clock, started, observer),
        }
    }
    let mut test_codes = None;
    if let Some(test) = &test {
        clock.begin("test codes", None);
        let path = out.join("test-codes.npy");
        written.streams.push(path.clone());
        match encode_or_join(
            &path,
            TEST_CODES,
            backend.as_deref_mut(),
            mode,
            &problem.target,
            test,
            args,
            observer,
            &mut cache_status[1],
        )? {
            Some(stream) => test_codes = Some((stream, test)),
            None => return stopped(out, &mut written, &mut clock, started, observer),
        }
    }

    // Every output at the end, so that a stop before leaves none; a stop between two files
    // removes those written.
    clock.begin("writing", None);
    let mut all_pixels = original_pixels(&originals);
    all_pixels.extend_from_slice(&generated_pixels);
    let mut all_labels = originals.labels.clone().unwrap_or_default();
    all_labels.extend_from_slice(&generated_labels);
    let n = all_labels.len();
    let all_label_bytes = idx_labels(&all_labels)?;
    let mut writes: Vec<(&str, WriteOne)> = vec![
        (
            "generated-images-idx3-ubyte.gz",
            Box::new(|path| io::write_idx_images(path, g, h, w, &generated_pixels)),
        ),
        (
            "generated-labels-idx1-ubyte.gz",
            Box::new(|path| io::write_idx_labels(path, &label_bytes)),
        ),
    ];
    if !kernel {
        writes.push((
            "generated-codes.npy",
            Box::new(|path| io::write_npy_f32(path, &[g, p], &generated_codes)),
        ));
        writes.push((
            "dictionary.npy",
            Box::new(|path| io::write_npy_f32(path, &[d, p], &target.dictionary.a)),
        ));
    }
    writes.push((
        "generated-labels.npy",
        Box::new(|path| io::write_npy_i64(path, &[g], &as_i64(&generated_labels))),
    ));
    writes.push((
        "generated.png",
        Box::new(|_| write_class_grid(out, &problem, &plan, &sink, &generated_pixels, h, w)),
    ));
    if let Some(mut stream) = original_codes {
        writes.push((
            "codes.npy",
            Box::new(|_| {
                stream.append(&generated_codes)?;
                stream.finish()
            }),
        ));
    }
    writes.push((
        "train-images-idx3-ubyte.gz",
        Box::new(|path| io::write_idx_images(path, n, h, w, &all_pixels)),
    ));
    writes.push((
        "train-labels-idx1-ubyte.gz",
        Box::new(|path| io::write_idx_labels(path, &all_label_bytes)),
    ));
    if !args.no_original_codes && !kernel {
        writes.push((
            "labels.npy",
            Box::new(|path| io::write_npy_i64(path, &[n], &as_i64(&all_labels))),
        ));
    }
    if let Some((stream, test)) = test_codes {
        writes.push(("test-codes.npy", Box::new(move |_| stream.finish())));
        writes.push((
            "test-labels.npy",
            Box::new(move |path| {
                let labels = test.labels.clone().unwrap_or_default();
                io::write_npy_i64(path, &[test.n], &as_i64(&labels))
            }),
        ));
        report["test_count"] = json!(test.n);
    }
    for (k, (name, write)) in writes.into_iter().enumerate() {
        if observer.stop_requested() {
            return stopped(out, &mut written, &mut clock, started, observer);
        }
        let path = out.join(name);
        written.files.push(path.clone());
        write(&path)?;
        observer.phase_advance(k as u64 + 1);
    }
    if let Some(fit) = &scale_fitted {
        report["scale_fitted_to_data"] = fit.json();
    }
    if let Some((asked, used)) = k_fitted {
        report["tangent_k_fitted_to_classes"] = json!({ "asked": asked, "used": used });
    }
    if let Some((asked, used)) = batch_fitted {
        report["batch_fitted_to_classes"] = json!({ "asked": asked, "used": used });
    }
    clock.end();
    report["lasso"] = crate::orchestrator::report::lasso_json(
        args.lasso_tolerance,
        args.dynamics.lasso_iterations,
        backend.as_ref().and_then(|b| b.encode_stats()),
    );
    if args.method == AugmentMethod::KernelHmc {
        // Its chains start at images and its codes are images: nothing is LASSO-encoded.
        report["lasso"]["encoder"] = json!("none (Kernel HMC encodes nothing)");
    }
    report["code_cache"] = json!({
        "folder": args.code_cache,
        "original_codes": cache_status[0],
        "test_codes": cache_status[1],
        "reencoded_codes": reencode_cache,
    });
    report["phase_seconds"] = clock.json();
    report["seconds"] = json!(started.elapsed().as_secs_f64());
    io::write_json_atomic(&out.join("report.json"), &report)?;
    let mut summary = vec![if amortized {
        format!(
            "rmld augment (amortized sampler {}): {g} samples of {} classes in {:.2} s of \
             generation ({:.0} samples/s); {} originals; wrote {}",
            args.model.as_deref().unwrap_or(Path::new("?")).display(),
            plan.classes.len(),
            report["amortized"]["generation_seconds"]
                .as_f64()
                .unwrap_or(0.0),
            report["amortized"]["samples_per_second"]
                .as_f64()
                .unwrap_or(0.0),
            originals.n,
            out.display()
        )
    } else {
        format!(
        "rmld augment ({}): {g} samples of {} classes from {} chains on {} in {generation_seconds:.1} s \
         ({:.0} samples/s, acceptance {:.1}%); {} originals; wrote {}",
        args.method.name(),
        plan.classes.len(),
        settings.chains,
        device,
        g as f64 / generation_seconds.max(1e-9),
        100.0 * run.acceptance_rate(),
        originals.n,
        out.display()
    )
    }];
    summary.push(format!(
        "{} (in all {:.1} s)",
        clock.summary(),
        started.elapsed().as_secs_f64()
    ));
    if let Some(fit) = &scale_fitted {
        summary.push(fit.summary());
    }
    summary.extend(run.burn_in.as_ref().map(|m| {
        crate::orchestrator::report::burn_in_line_with(m, "give a larger cap (--burn-in auto:CAP)")
    }));
    if let (Some(a), Some(c)) = (&run.adaptation, &run.class_steps) {
        let steps: Vec<f32> = c.classes.iter().map(|s| s.step()).collect();
        let (low, high) = steps
            .iter()
            .fold((f32::INFINITY, 0f32), |(l, h), &s| (l.min(s), h.max(s)));
        summary.push(format!(
            "step size adapted per class over {} burn-in iterations: {:.4e} → {low:.4e} to \
             {high:.4e} (dual averaging on each class's chains toward mean acceptance {}), \
             frozen for the kept draws; report.json's adaptation.classes lists them",
            a.count, a.initial_step, a.target
        ));
        if let Some(t) = a.trajectory {
            summary.push(format!(
                "trajectory length adapted by ChEES across classes: {:.4} → {:.4}",
                t.initial_length,
                t.length()
            ));
        }
    }
    if let Some((asked, used)) = k_fitted {
        summary.push(format!(
            "note: the tangent target's k was lowered from {asked} to {used}: the smallest class \
             has {} images, the anchor and its k neighbours",
            used + 1
        ));
    }
    if let Some((asked, used)) = batch_fitted {
        summary.push(format!(
            "note: the minibatch was lowered from {asked} to {used}, the size of the smallest class"
        ));
    }
    if let Some(verdict) = class_verdict {
        summary.push(verdict);
    }
    if let Quality::Line(line) = quality {
        summary.push(line);
    }
    Ok(Outcome {
        interrupted: false,
        report,
        summary,
        draw_stats: None,
    })
}

/// The whole run's estimate on the device `info` describes (a shard reckons the whole run's too,
/// for the merged report).
#[allow(clippy::too_many_arguments)]
fn estimate_run(
    args: &AugmentSettings,
    plan: &AugmentPlan,
    settings: &SamplerSettings,
    d: usize,
    p: usize,
    originals: &Dataset,
    test: &Option<Dataset>,
    kernel: bool,
    info: &crate::backend::BackendInfo,
) -> super::estimate::Estimate {
    estimate_augment(
        &AugmentWork {
            method: args.method,
            d,
            p,
            chains: settings.chains,
            outer: if args.method == AugmentMethod::Compression {
                0
            } else {
                settings.samples
            },
            steps: args.dynamics.steps,
            batch: args.dynamics.batch,
            leapfrog_steps: args.dynamics.leapfrog_steps,
            lasso_iterations: args.dynamics.lasso_iterations,
            class_images: originals.n / plan.classes.len().max(1),
            generated: plan.generated(),
            reencode: args.reencode,
            original_codes: if args.no_original_codes || kernel {
                0
            } else {
                originals.n
            },
            test_codes: test.as_ref().map_or(0, |t| t.n),
        },
        info,
    )
}

/// The chains of shard `shard` of a run of `chains` (an error naming `shard` when it has none).
fn shard_chains(shard: Shard, chains: usize) -> Result<std::ops::Range<usize>> {
    shard.check()?;
    let range = shard.range(chains);
    if range.is_empty() {
        return Err(Error::usage(
            "shard",
            format!(
                "{shard}: shard {} of {} holds none of the run's {chains} chains (split the \
                 chains into at most {chains} shards)",
                shard.index, shard.count
            ),
        ));
    }
    Ok(range)
}

/// Checks that the merge reads the data and dictionary the shards sampled.
fn check_merge_inputs(
    shards: &[ShardFiles],
    data_hash: u64,
    dictionary_hash: u64,
    problem: &Problem,
) -> Result<()> {
    let first = &shards[0];
    first.file(SHARD_TRACE)?;
    let trace = Checkpoint::read(&first.dir.join(SHARD_TRACE))?;
    if (data_hash, dictionary_hash) != (trace.data_hash, trace.dictionary_hash) {
        return Err(Error::input(
            first.dir.join(SHARD_TRACE),
            format!(
                "the shards sampled other data or another dictionary than {} and {} hold now \
                 (their hashes differ): merge where the shards' inputs are readable unchanged",
                problem.dataset.source.display(),
                problem.dictionary_source
            ),
        ));
    }
    Ok(())
}

/// The whole run's sink and run, joined from the shards' (checked, in order): every class's
/// samples in the single run's (iteration, chain) order, the chains' traces end to end.
fn merged_generation(
    shards: &[ShardFiles],
    plan: &AugmentPlan,
    burn_in: u32,
    kernel: bool,
    d: usize,
    p: usize,
) -> Result<(AugmentSink, SampleRun)> {
    let classes = plan.classes.len();
    let chains = plan.chains();
    let mut runs = Vec::with_capacity(shards.len());
    // Per shard and class: its images and codes (rows, in its order) and a cursor.
    let mut parts = Vec::with_capacity(shards.len());
    for s in shards {
        let shard = s.manifest.shard;
        let range = shard_chains(shard, chains)?;
        let bad =
            |what: String| Error::input(s.dir.join(SHARD_TRACE), format!("shard {shard}: {what}"));
        if (
            s.manifest.part.start,
            s.manifest.part.end,
            s.manifest.part.total,
        ) != (range.start, range.end, chains)
        {
            return Err(bad(format!(
                "covers chains {}..{} of {}, the run has {chains} chains",
                s.manifest.part.start, s.manifest.part.end, s.manifest.part.total
            )));
        }
        s.file(SHARD_TRACE)?;
        let trace = Checkpoint::read(&s.dir.join(SHARD_TRACE))?;
        if trace.run.interrupted || trace.run.accepted.len() != range.len() {
            return Err(bad(format!(
                "its trace does not hold its {} chains' finished run",
                range.len()
            )));
        }
        // Which samples the shard's chains kept: its sink, replayed without draws.
        let mut counts = AugmentSink::for_chains(plan, range.clone(), burn_in, false);
        let width = range.len();
        // (Compression records its starts as iteration 1 of a run of none.)
        for outer in 1..=trace.run.completed.max(1) {
            counts.record(outer, &vec![0.0; width], &vec![0.0; width])?;
        }
        let rows: usize = counts.kept.iter().sum();
        let (shape, images) = s.npy_f32(SHARD_IMAGES)?;
        if shape != [rows, d] {
            return Err(bad(format!(
                "{SHARD_IMAGES} has shape {shape:?}, its chains kept {rows} samples of {d} pixels"
            )));
        }
        let codes = if kernel {
            Vec::new()
        } else {
            let (shape, codes) = s.npy_f32(SHARD_CODES)?;
            if shape != [rows, p] {
                return Err(bad(format!(
                    "{SHARD_CODES} has shape {shape:?}, its chains kept {rows} samples of {p} atoms"
                )));
            }
            codes
        };
        parts.push((counts, images, codes, vec![0usize; classes]));
        runs.push(trace.run);
    }
    let mut sink = AugmentSink::new(plan, burn_in, !kernel);
    // Class k's samples in (iteration, chain) order: at each kept iteration, the shards' chains
    // in order, each shard's rows of the class in its own (iteration, chain) order.
    // Where each class's rows begin in a shard's files (class by class).
    let offsets: Vec<Vec<usize>> = parts
        .iter()
        .map(|(counts, ..)| {
            counts
                .kept
                .iter()
                .scan(0, |at, &kept| {
                    let first = *at;
                    *at += kept;
                    Some(first)
                })
                .collect()
        })
        .collect();
    for (k, class) in plan.classes.iter().enumerate() {
        let mut position = 0;
        while position < class.generated {
            let before = position;
            for (s, (counts, images, codes, cursor)) in parts.iter_mut().enumerate() {
                while cursor[k] < counts.kept[k] && counts.positions[k][cursor[k]] == position {
                    let row = offsets[s][k] + cursor[k];
                    sink.images[k].extend_from_slice(&images[row * d..(row + 1) * d]);
                    if !kernel {
                        sink.codes[k].extend_from_slice(&codes[row * p..(row + 1) * p]);
                    }
                    sink.kept[k] += 1;
                    cursor[k] += 1;
                    position += 1;
                }
            }
            if position == before {
                return Err(Error::input(
                    &shards[0].dir,
                    format!(
                        "the shards hold {position} of class {}'s {} samples: a shard ran fewer \
                         iterations than the others",
                        class.label, class.generated
                    ),
                ));
            }
        }
    }
    let run = shard::join_runs(shards, &runs)?;
    Ok((sink, run))
}

/// The LASSO codes of `dataset` into a new NPY at `path` (not yet finished): encoded here (a
/// whole run), or joined from the shards' `name` files (a merge); `None` when a stop was
/// requested.
#[allow(clippy::too_many_arguments)]
fn encode_or_join(
    path: &Path,
    name: &str,
    backend: Option<&mut (dyn Backend + 'static)>,
    mode: Mode,
    target: &Target,
    dataset: &Dataset,
    args: &AugmentSettings,
    observer: &dyn Observer,
    status: &mut &'static str,
) -> Result<Option<NpyStream>> {
    match (backend, mode) {
        (Some(backend), _) => encode_into(
            path, "encoding", backend, target, dataset, args, observer, status,
        ),
        (None, Mode::Merge(shards)) => {
            let p = target.p();
            let mut stream = NpyStream::create(path, &[p])?;
            for s in shards {
                let rows = s.manifest.shard.range(dataset.n).len();
                let (shape, codes) = s.npy_f32(name)?;
                if shape != [rows, p] {
                    return Err(Error::input(
                        s.dir.join(name),
                        format!(
                            "shard {}: shape {shape:?}, expected [{rows}, {p}]",
                            s.manifest.shard
                        ),
                    ));
                }
                stream.append(&codes)?;
            }
            Ok(Some(stream))
        }
        (None, _) => Err(Error::Internal("encoding without a backend".into())),
    }
}

/// LASSO codes (`lasso_iterations`) of the rows `rows` (increasing) of the `total` rows a whole
/// run encodes ENCODE_BATCH at a time, each computed as in the whole run's batch (the CPU's
/// products take their path by the row count, see `matmul::rows_like`); `image(i)` is row i
/// (model units). `None` when a stop was requested.
fn encode_part(
    args: &AugmentSettings,
    problem: &Problem,
    observer: &dyn Observer,
    what: &'static str,
    total: usize,
    rows: &[usize],
    image: &dyn Fn(usize) -> Vec<f32>,
) -> Result<Option<Vec<f32>>> {
    let mut backends: std::collections::BTreeMap<usize, Box<dyn Backend>> = Default::default();
    let mut codes = Vec::with_capacity(rows.len() * problem.target.p());
    observer.phase_start(&Phase {
        name: what,
        len: Some(rows.len() as u64),
        unit: "",
    });
    let mut done = 0;
    for group in rows.chunk_by(|a, b| a / ENCODE_BATCH == b / ENCODE_BATCH) {
        if observer.stop_requested() {
            observer.phase_finish();
            return Ok(None);
        }
        let first = group[0] / ENCODE_BATCH * ENCODE_BATCH;
        let like = ENCODE_BATCH.min(total - first);
        let backend = match backends.entry(like) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                let dynamics = DynamicsSettings {
                    eta: 1.0,
                    steps: 1,
                    batch: 1,
                    seed: args.problem.seed,
                    run_chains: like as u32,
                    ..Default::default()
                };
                let mut backend = make_backend(
                    args.problem.backend,
                    observer,
                    &problem.target,
                    &dynamics,
                    like,
                )?;
                backend.set_lasso_tolerance(args.lasso_tolerance);
                e.insert(backend)
            }
        };
        let images: Vec<f32> = group.iter().flat_map(|&i| image(i)).collect();
        codes.extend(backend.encode(
            &images,
            problem.target.lam,
            args.dynamics.lasso_iterations,
        )?);
        done += group.len();
        observer.phase_advance(done as u64);
    }
    observer.phase_finish();
    Ok(Some(codes))
}

/// Where a shard stands once its chains ran: which shard, its chains, the inputs' hashes and
/// the device.
struct ShardPart<'a> {
    shard: Shard,
    chain_range: std::ops::Range<usize>,
    chains: usize,
    data_hash: u64,
    dictionary_hash: u64,
    info: &'a Value,
    estimate: &'a Value,
}

/// Writes a shard's part of an augmentation: its chains' samples (re-encoded with `reencode`),
/// its part of the originals' and test split's codes, its run's trace, a report and the manifest.
#[allow(clippy::too_many_arguments)]
fn write_shard(
    args: &AugmentSettings,
    original_args: &AugmentSettings,
    part: &ShardPart,
    problem: &Problem,
    plan: &AugmentPlan,
    originals: &Dataset,
    test: Option<&Dataset>,
    sink: &mut AugmentSink,
    run: &SampleRun,
    backend: Option<&mut (dyn Backend + 'static)>,
    observer: &dyn Observer,
    clock: &mut PhaseClock,
    started: Instant,
) -> Result<Outcome> {
    let out = &args.problem.out;
    let kernel = args.method == AugmentMethod::KernelHmc;
    let shard = part.shard;
    let (h, w) = (problem.dataset.height, problem.dataset.width);
    let (d, p) = (h * w, if kernel { h * w } else { problem.target.p() });
    let mut written = Written::default();
    if args.reencode && !kernel {
        clock.begin("re-encoding", None);
        let full = args.problem_settings().pixel_max;
        let pixels = args
            .postprocess()
            .to_pixels(&sink.images.concat(), h, w, full);
        let scale = full / 255.0;
        let mut first = 0;
        let mut rows = Vec::with_capacity(sink.total());
        for (k, class) in plan.classes.iter().enumerate() {
            rows.extend(sink.positions[k].iter().map(|&i| first + i));
            first += class.generated;
        }
        let index: std::collections::HashMap<usize, usize> =
            rows.iter().enumerate().map(|(at, &i)| (i, at)).collect();
        let image = |i: usize| -> Vec<f32> {
            let at = index[&i];
            pixels[at * d..(at + 1) * d]
                .iter()
                .map(|&v| v as f32 * scale)
                .collect()
        };
        let mut sorted = rows.clone();
        sorted.sort_unstable();
        let Some(codes) = encode_part(
            args,
            problem,
            observer,
            "re-encoding",
            plan.generated(),
            &sorted,
            &image,
        )?
        else {
            return stopped(out, &mut written, clock, started, observer);
        };
        let at: std::collections::HashMap<usize, usize> =
            sorted.iter().enumerate().map(|(at, &i)| (i, at)).collect();
        let mut row = 0;
        for (k, kept) in sink.kept.iter().enumerate() {
            sink.codes[k] = rows[row..row + kept]
                .iter()
                .flat_map(|i| codes[at[i] * p..(at[i] + 1) * p].iter().copied())
                .collect();
            row += kept;
        }
    }
    let mut names = vec![SHARD_IMAGES, SHARD_TRACE, "report.json"];
    let mut encode_range = |what: &'static str,
                            name: &'static str,
                            dataset: &Dataset,
                            written: &mut Written|
     -> Result<bool> {
        let observations = Observations::from_dataset(dataset, args.problem.pixel_max);
        let rows: Vec<usize> = shard.range(dataset.n).collect();
        let Some(codes) = encode_part(args, problem, observer, what, dataset.n, &rows, &|i| {
            observations.row(i)
        })?
        else {
            return Ok(false);
        };
        let path = out.join(name);
        written.files.push(path.clone());
        io::write_npy_f32(&path, &[rows.len(), p], &codes)?;
        names.push(name);
        Ok(true)
    };
    if !args.no_original_codes && !kernel {
        clock.begin("original codes", None);
        if !encode_range("encoding", ORIGINAL_CODES, originals, &mut written)? {
            return stopped(out, &mut written, clock, started, observer);
        }
    }
    if let Some(test) = test {
        clock.begin("test codes", None);
        if !encode_range("encoding", TEST_CODES, test, &mut written)? {
            return stopped(out, &mut written, clock, started, observer);
        }
    }
    clock.begin("writing", None);
    let images = sink.images.concat();
    let kept = sink.total();
    let path = out.join(SHARD_IMAGES);
    written.files.push(path.clone());
    io::write_npy_f32(&path, &[kept, d], &images)?;
    if !kernel {
        let path = out.join(SHARD_CODES);
        written.files.push(path.clone());
        io::write_npy_f32(&path, &[kept, p], &sink.codes.concat())?;
        names.push(SHARD_CODES);
    }
    let config = serde_json::to_value(original_args)
        .map_err(|e| Error::Internal(format!("configuration: {e}")))?;
    let trace = Checkpoint {
        config,
        data_hash: part.data_hash,
        dictionary_hash: part.dictionary_hash,
        d,
        p,
        positions: match backend {
            Some(backend) => backend.positions()?,
            None => Vec::new(),
        },
        run: run.clone(),
    };
    trace.write(&out.join(SHARD_TRACE))?;
    clock.end();
    let range = &part.chain_range;
    let report = json!({
        "command": "augment",
        "rmld_version": env!("CARGO_PKG_VERSION"),
        "shard": shard,
        "chains": { "start": range.start, "end": range.end, "total": part.chains },
        "kept_per_class": sink.kept,
        "backend": part.info,
        "estimate": part.estimate,
        "interrupted": false,
        "phase_seconds": clock.json(),
        "seconds": started.elapsed().as_secs_f64(),
        "outputs": "a shard's part of an augmentation: join the shards with `rmld merge`",
    });
    io::write_json_atomic(&out.join("report.json"), &report)?;
    let mut hashed = original_args.clone();
    hashed.problem.out = std::path::PathBuf::new();
    hashed.problem.shard = None;
    hashed.problem.force = false;
    shard::write_manifest(
        out,
        "augment",
        shard::configuration_hash(
            &(hashed, shard::device_key(part.info)),
            part.data_hash,
            part.dictionary_hash,
        ),
        args.problem.seed,
        shard,
        shard::Part {
            unit: "chains".into(),
            start: range.start,
            end: range.end,
            total: part.chains,
        },
        &names,
    )?;
    Ok(Outcome {
        interrupted: false,
        report,
        summary: vec![format!(
            "rmld augment shard {shard}: chains {}..{} of {}, {kept} samples, {} s; join the \
             shards with `rmld merge`",
            range.start,
            range.end,
            part.chains,
            format_args!("{:.1}", started.elapsed().as_secs_f64())
        )],
        draw_stats: None,
    })
}

/// Joins the shards of an augmentation (checked and in order) into the single run's files: the
/// configuration comes from the first shard's trace; the data, labels and dictionary are read
/// again, the samples joined in the single run's order, and the rest (post-processing, the
/// quality metrics, the picture, the report) made as the single run makes them.
pub(crate) fn merge_shards(out: &Path, shards: &[ShardFiles]) -> Result<Outcome> {
    let started = Instant::now();
    let first = &shards[0];
    first.file(SHARD_TRACE)?;
    let trace = Checkpoint::read(&first.dir.join(SHARD_TRACE))?;
    let mut args: AugmentSettings = serde_json::from_value(trace.config).map_err(|e| {
        Error::input(
            first.dir.join(SHARD_TRACE),
            format!("the shard's configuration is not one this rmld reads: {e}"),
        )
    })?;
    args.problem.shard = None;
    args.problem.out = out.to_path_buf();
    let mut outcome = run_augment(&args, &super::observer::Silent, Mode::Merge(shards))?;
    outcome.summary.insert(
        0,
        format!(
            "rmld merge: {} shards of augment in {:.1} s",
            shards.len(),
            started.elapsed().as_secs_f64()
        ),
    );
    Ok(outcome)
}

/// How the sample-quality metrics went.
enum Quality {
    /// Computed: the summary line.
    Line(String),
    /// Not computed (--no-quality, an interrupted run, or a note in report.json says why).
    Skipped,
    /// Cut short by a stop request.
    Interrupted,
}

/// The sample-quality metrics of the generated part (0..255 pixels as written, /255) against the
/// originals, in `report["quality"]` and report.json. A problem with the metrics' inputs (say, no
/// real image left to calibrate them) is a note in the report, not a failed run.
fn add_quality(
    args: &AugmentSettings,
    originals: &Dataset,
    generated_pixels: &[u8],
    generated_labels: &[u32],
    observer: &dyn Observer,
    report: &mut Value,
) -> Result<Quality> {
    if args.no_quality || generated_labels.is_empty() {
        return Ok(Quality::Skipped);
    }
    let generated = LabelledImages::new(
        originals.d,
        generated_pixels.iter().map(|&v| v as f32 / 255.0).collect(),
        generated_labels.to_vec(),
    )?;
    let judged = judge(
        args.problem.data.as_deref(),
        originals,
        args.test_limit,
        &generated,
        args.problem.seed,
        observer,
    );
    let quality = match judged {
        Ok(Some(q)) => {
            report["quality"] = json!(q);
            Quality::Line(q.summary_line())
        }
        Ok(None) => return Ok(Quality::Interrupted),
        Err(e) if e.is_user_error() => {
            report["quality"] = json!({ "skipped": e.to_string() });
            observer.notice(&Notice::QualitySkipped { error: e });
            Quality::Skipped
        }
        Err(e) => return Err(e),
    };
    Ok(quality)
}

/// The training data with labels, limited to its first `limit` images.
/// `args` with the minibatch lowered to the smallest chosen class when it is larger and
/// `fit_batch_to_classes` allows it, and (asked, used) when it was lowered.
fn fit_batch(args: &AugmentSettings, labels: &[u32]) -> (AugmentSettings, Option<(u32, u32)>) {
    let mut fitted = args.clone();
    if !args.fit_batch_to_classes {
        return (fitted, None);
    }
    match smallest_class(args, labels) {
        Some(n) if n > 0 && (n as u64) < args.dynamics.batch as u64 => {
            fitted.dynamics.batch = n as u32;
            (fitted, Some((args.dynamics.batch, n as u32)))
        }
        _ => (fitted, None),
    }
}

/// Images in the smallest chosen class.
fn smallest_class(args: &AugmentSettings, labels: &[u32]) -> Option<usize> {
    let mut counts = std::collections::BTreeMap::<u32, usize>::new();
    for &label in labels {
        *counts.entry(label).or_default() += 1;
    }
    match args.classes.as_deref() {
        Some(chosen) => chosen.iter().filter_map(|c| counts.get(c)).min().copied(),
        None => counts.values().min().copied(),
    }
}

/// `args` with the tangent target's k lowered so that the smallest chosen class holds k + 1
/// images (the anchor and its k neighbours), when `fit_tangent_k_to_classes` allows it, and
/// (asked, used) when it was lowered.
fn fit_tangent_k(args: &AugmentSettings, labels: &[u32]) -> (AugmentSettings, Option<(u32, u32)>) {
    let mut fitted = args.clone();
    if !args.fit_tangent_k_to_classes || args.problem.target != TargetKind::Tangent {
        return (fitted, None);
    }
    match smallest_class(args, labels) {
        Some(n) if n >= 2 && n as u64 <= args.problem.tangent_k as u64 => {
            let k = (n - 1) as u32;
            fitted.problem.tangent_k = k;
            (fitted, Some((args.problem.tangent_k, k)))
        }
        _ => (fitted, None),
    }
}

/// What `fit_scale` changed: the data's scales and each rescaled setting's (asked, used).
struct ScaleFitted {
    scale: DataScale,
    /// Seconds spent measuring the data's scales.
    seconds: f64,
    eta: Option<(f32, f32)>,
    sigma2: Option<(f32, f32)>,
    smooth: Option<(f32, f32)>,
    tangent_scale: Option<(f32, f32)>,
    /// The tangent target's k (asked, used) when the image size lowered it.
    tangent_k: Option<(u32, u32)>,
}

impl ScaleFitted {
    fn json(&self) -> Value {
        let pair =
            |p: Option<(f32, f32)>| p.map(|(asked, used)| json!({ "asked": asked, "used": used }));
        json!({
            "median_class_nn_distance": self.scale.nn_distance,
            "reference_nn_distance": data_scale::REFERENCE_NN_DISTANCE,
            "nn_images_per_class": data_scale::NN_PER_CLASS,
            "image_side": self.scale.side,
            "reference_side": data_scale::REFERENCE_SIDE,
            "eta": pair(self.eta),
            "sigma2": pair(self.sigma2),
            "smooth": pair(self.smooth),
            "class_margin": self.scale.class_margin,
            "reference_class_margin": data_scale::REFERENCE_CLASS_MARGIN,
            "tangent_scale": pair(self.tangent_scale),
            "tangent_k": self.tangent_k.map(|(asked, used)| json!({ "asked": asked, "used": used })),
            "pixels_per_tangent_direction": super::settings::PIXELS_PER_TANGENT_DIRECTION,
            "seconds": self.seconds,
        })
    }

    fn summary(&self) -> String {
        let mut parts = Vec::new();
        let mut push = |name: &str, p: Option<(f32, f32)>| {
            if let Some((asked, used)) = p {
                parts.push(format!("{name} {asked} → {used:.3e}"));
            }
        };
        push("η", self.eta);
        push("σ²", self.sigma2);
        push("smoothing (px)", self.smooth);
        push("tangent scale", self.tangent_scale);
        if let Some((asked, used)) = self.tangent_k {
            parts.push(format!(
                "tangent k {asked} → {used} (one direction per {} pixels)",
                super::settings::PIXELS_PER_TANGENT_DIRECTION
            ));
        }
        let margin = self.scale.class_margin.map_or(String::new(), |m| {
            format!(
                "; class margin {m:.3}, MNIST's {}",
                data_scale::REFERENCE_CLASS_MARGIN
            )
        });
        format!(
            "note: scaled to the data (median same-class nearest-neighbour distance {:.3}, MNIST's \
             {}{margin}; image side {:.0} px): {}",
            self.scale.nn_distance,
            data_scale::REFERENCE_NN_DISTANCE,
            self.scale.side,
            parts.join(", ")
        )
    }
}

/// `args` with η, σ² and the smoothing rescaled to the data's length scales where
/// `fit_scale_to_data` asks for it (chain-based methods only), and what changed.
fn fit_scale(
    args: &AugmentSettings,
    dataset: &Dataset,
    labels: &[u32],
) -> (AugmentSettings, Option<ScaleFitted>) {
    let mut fitted = args.clone();
    let fit = args.fit_scale_to_data;
    let chains = !matches!(
        args.method,
        AugmentMethod::Compression | AugmentMethod::KernelHmc
    );
    if !fit.any() || !chains {
        return (fitted, None);
    }
    let started = Instant::now();
    let Some(scale) = DataScale::of(dataset, labels, args.classes.as_deref()) else {
        return (fitted, None);
    };
    let length = scale.length_ratio();
    let mut changed = ScaleFitted {
        scale,
        seconds: started.elapsed().as_secs_f64(),
        eta: None,
        sigma2: None,
        smooth: None,
        tangent_scale: None,
        tangent_k: None,
    };
    if fit.eta {
        let used = (args.dynamics.eta as f64 * length) as f32;
        fitted.dynamics.eta = used;
        changed.eta = Some((args.dynamics.eta, used));
    }
    if fit.sigma2 {
        let used = (args.problem.sigma2 as f64 * length * length) as f32;
        fitted.problem.sigma2 = used;
        changed.sigma2 = Some((args.problem.sigma2, used));
    }
    if fit.smooth && args.smooth > 0.0 {
        let used = (args.smooth as f64 * scale.side_ratio()) as f32;
        fitted.smooth = used;
        changed.smooth = Some((args.smooth, used));
    }
    if fit.tangent_scale && args.problem.target == TargetKind::Tangent {
        // Never below 1: the neighbours' own spread (the tangent target's unscaled span).
        let asked = args.problem.tangent_scale;
        let used = ((asked as f64 * scale.tangent_ratio()) as f32).max(asked.min(1.0));
        if used != asked {
            fitted.problem.tangent_scale = used;
            changed.tangent_scale = Some((asked, used));
        }
    }
    if fit.tangent_k && args.problem.target == TargetKind::Tangent {
        let pixels = dataset.height * dataset.width;
        let most = (pixels / super::settings::PIXELS_PER_TANGENT_DIRECTION).max(1) as u32;
        let asked = fitted.problem.tangent_k;
        if asked > most {
            fitted.problem.tangent_k = most;
            changed.tangent_k = Some((asked, most));
        }
    }
    (fitted, Some(changed))
}

fn load_labelled(args: &AugmentSettings) -> Result<Arc<Dataset>> {
    let mut dataset = args.problem.load_dataset()?;
    if let Some(path) = &args.labels {
        dataset = Arc::new(Arc::unwrap_or_clone(dataset).with_labels_file(path)?);
    }
    if dataset.labels.is_none() {
        return Err(Error::input(
            &dataset.source,
            "has no labels, and augmentation is per class: put the labels file beside the \
             images (…-labels-idx1-ubyte[.gz]) or name it with `labels`",
        ));
    }
    match args.limit {
        Some(0) => Err(Error::usage("limit", "must be at least 1")),
        Some(n) if n < dataset.n => dataset
            .try_subset(&(0..n).collect::<Vec<_>>())
            .map(Arc::new),
        _ => Ok(dataset),
    }
}

/// The mean observation of each class (rows of d, model units), from the class-sorted data.
fn class_means(observations: &Observations, plan: &AugmentPlan) -> Vec<f32> {
    plan.classes
        .iter()
        .flat_map(|c| observations.mean_of_rows(c.rows[0] as usize, c.rows[1] as usize))
        .collect()
}

fn sampler_settings(args: &AugmentSettings, plan: &AugmentPlan) -> Result<SamplerSettings> {
    let method = match args.method {
        AugmentMethod::Mala => Method::Mala,
        AugmentMethod::Hmc => Method::Hmc,
        AugmentMethod::Rmld | AugmentMethod::Compression | AugmentMethod::KernelHmc => Method::Rmld,
    };
    let samples = match args.method {
        AugmentMethod::Compression => 1,
        _ => args
            .burn_in_cap()
            .checked_add(args.samples)
            .ok_or_else(|| {
                Error::usage(
                    "burn_in/samples",
                    format!(
                        "the burn-in ({}) plus the samples ({}) pass 4294967295 outer iterations",
                        args.burn_in_cap(),
                        args.samples
                    ),
                )
            })?,
    };
    if plan.chains() > u32::MAX as usize {
        return Err(Error::usage(
            "ratio",
            format!(
                "{} generated samples need {} chains, more than the 4294967295 a run can hold: \
                 lower the generated part of `ratio` or raise `samples`",
                plan.generated(),
                plan.chains()
            ),
        ));
    }
    let settings = SamplerSettings {
        chains: plan.chains(),
        samples,
        dynamics: args.dynamics.settings(method, args.problem.seed),
        mh: !args.dynamics.no_mh,
        discount: args.dynamics.discount,
        init: if args.method == AugmentMethod::KernelHmc {
            Init::Data
        } else {
            Init::Lasso
        },
        lasso_iterations: args.dynamics.lasso_iterations,
        adapt: class_adaptation(args, method)?,
        auto_burn_in: automatic_burn_in(args)?,
    };
    settings.validate()?;
    Ok(settings)
}

/// `args.adapt`'s warm-up: each class's step size (and with HMC the trajectory length) adapted
/// over the burn-in; None when it is off.
fn class_adaptation(args: &AugmentSettings, method: Method) -> Result<Option<Adaptation>> {
    if !args.adapt {
        return Ok(None);
    }
    let exact = matches!(args.method, AugmentMethod::Mala | AugmentMethod::Hmc);
    if !exact || args.dynamics.no_mh {
        return Err(Error::usage(
            "adapt",
            "adapts the step size of method mala or hmc with their MH test on; this run has none \
             to adapt (give method mala or hmc, or leave adapt off)",
        ));
    }
    if args.burn_in_cap() == 0 {
        return Err(Error::usage(
            "adapt",
            "adapts during the burn-in, and burn_in is 0: give a burn-in (e.g. 50, or auto)",
        ));
    }
    if args.sampler == SamplerChoice::Amortized {
        return Err(Error::usage(
            "adapt",
            "tunes the MCMC chains' step sizes, and the amortized sampler runs none: leave adapt \
             off with sampler amortized",
        ));
    }
    if args.problem.shard.is_some() {
        return Err(Error::usage(
            "adapt",
            "a shard sees only its own chains, so its adapted steps would not be the single \
             run's: leave adapt off for a sharded run",
        ));
    }
    Ok(
        Adaptation::for_method(method, args.burn_in_cap()).map(|a| Adaptation {
            per_class: true,
            ..a
        }),
    )
}

/// `args.auto_burn_in`'s monitor (up to `burn_in_cap`); None for a fixed burn-in. A shard would
/// end its warm-up on its own chains, and Compression runs no chains: both refuse it.
fn automatic_burn_in(args: &AugmentSettings) -> Result<Option<orchestrator::AutoBurnIn>> {
    if !args.auto_burn_in {
        return Ok(None);
    }
    if args.method == AugmentMethod::Compression {
        return Err(Error::usage(
            "burn_in",
            "method compression runs no chains to warm up: give a count, not auto",
        ));
    }
    if let Some(shard) = args.problem.shard {
        return Err(Error::usage(
            "burn_in",
            format!(
                "shard {shard} would end its automatic burn-in on its own chains only, so the \
                 shards would not make the single run's samples: give a fixed burn-in"
            ),
        ));
    }
    Ok(Some(orchestrator::AutoBurnIn {
        cap: args.burn_in_cap(),
    }))
}

/// Runs the chains (or, for Compression, only their LASSO starts) into `sink`: the phases
/// "LASSO starts", "burn-in" and "sampling". A stop after the starts returns a run marked
/// interrupted with no iteration done.
fn generate(
    args: &AugmentSettings,
    backend: &mut dyn Backend,
    target: &Target,
    settings: &SamplerSettings,
    sink: &mut AugmentSink,
    clock: &mut PhaseClock,
) -> Result<SampleRun> {
    let observer = clock.observer;
    clock.begin("LASSO starts", None);
    let state = orchestrator::start(backend, target, settings)?;
    if args.method == AugmentMethod::Compression {
        let codes = backend.positions()?;
        sink.record(1, &codes, &state.start_images)?;
        clock.end();
        return Ok(SampleRun {
            completed: 0,
            ..state
        });
    }
    if observer.stop_requested() {
        return Ok(SampleRun {
            interrupted: true,
            ..state
        });
    }
    // The burn-in, or an automatic one's cap: `warm_up_end` follows where it ended.
    let burn_in = args.burn_in_cap().min(settings.samples);
    let kept = settings.samples - burn_in;
    let sampling = Some(kept as u64);
    if burn_in > 0 {
        clock.begin("burn-in", Some(burn_in as u64));
    } else {
        clock.begin("sampling", sampling);
    }
    let clock = std::cell::RefCell::new(clock);
    let warm_up_end = std::cell::Cell::new(burn_in);
    let mut progress = |outer: u32| {
        let burn_in = warm_up_end.get();
        if outer <= burn_in {
            observer.phase_advance(outer as u64);
            if outer == burn_in {
                clock.borrow_mut().begin("sampling", sampling);
            }
        } else {
            observer.phase_advance((outer - burn_in) as u64);
        }
    };
    let stop_now = || observer.stop_requested();
    let mut sink = WarmUpEnd {
        sink,
        end: &warm_up_end,
    };
    let hooks = Hooks {
        sink: &mut sink,
        progress: &mut progress,
        stop: &stop_now,
        checkpoint_every: 0,
        checkpoint: &mut |_, _| Ok(()),
    };
    let run = orchestrator::continue_run(backend, target, settings, state, hooks)?;
    Ok(run)
}

/// `sink`, telling `end` where an automatic burn-in ended (the progress phases follow it).
struct WarmUpEnd<'a> {
    sink: &'a mut AugmentSink,
    end: &'a std::cell::Cell<u32>,
}

impl SampleSink for WarmUpEnd<'_> {
    fn record(&mut self, outer: u32, codes: &[f32], images: &[f32]) -> Result<()> {
        self.sink.record(outer, codes, images)
    }

    fn warm_up_ended(&mut self, outer: u32) {
        self.end.set(outer);
        self.sink.warm_up_ended(outer);
    }

    fn full(&self) -> bool {
        self.sink.full()
    }
}

/// LASSO codes (--lasso-iterations) of every image of `dataset` streamed into a new NPY at
/// `path` (not yet finished); `None`, with the partial file removed, when a stop was requested.
/// With `args.code_cache`, codes cached for the same rows, dictionary, λ, stop rule and device
/// are read instead, and codes encoded are cached; `status` says which ("read", "written").
#[allow(clippy::too_many_arguments)]
fn encode_into(
    path: &Path,
    what: &'static str,
    backend: &mut dyn Backend,
    target: &Target,
    dataset: &Dataset,
    args: &AugmentSettings,
    observer: &dyn Observer,
    status: &mut &'static str,
) -> Result<Option<NpyStream>> {
    let observations = Observations::from_dataset(dataset, args.problem.pixel_max);
    let (n, p) = (observations.n, target.p());
    let mut stream = NpyStream::create(path, &[p])?;
    let iterations = args.dynamics.lasso_iterations;
    let device = backend.info().device;
    let cache = args.code_cache.as_deref().map(|dir| {
        let key = CodeKey {
            dictionary: &target.dictionary.a,
            d: target.d(),
            p,
            lam: target.lam,
            iterations,
            tolerance: args.lasso_tolerance,
            device: &device,
        }
        .hash((0..n).map(|i| observations.row(i)));
        (dir, key)
    });
    *status = "off";
    if let Some((dir, key)) = &cache {
        match code_cache::load(dir, key, n, p) {
            Ok(Some(codes)) => {
                stream.append(&codes)?;
                *status = "read";
                return Ok(Some(stream));
            }
            Ok(None) => {}
            Err(reason) => observer.notice(&Notice::CodeCacheIgnored {
                path: code_cache::entry_path(dir, key),
                reason,
            }),
        }
    }
    let mut kept = Vec::new();
    let finished = encode_batches(
        &mut |images| backend.encode(images, target.lam, iterations),
        n,
        what,
        observer,
        |rows| rows.flat_map(|i| observations.row(i)).collect(),
        |codes| {
            if cache.is_some() {
                kept.extend_from_slice(codes);
            }
            stream.append(codes)
        },
    )?;
    if !finished {
        drop(stream);
        let _ = std::fs::remove_file(io::partial_path(path));
        return Ok(None);
    }
    if let Some((dir, key)) = &cache {
        *status = "written";
        if let Err(e) = code_cache::store(dir, key, n, p, &kept) {
            *status = "not written";
            observer.notice(&Notice::CodeCacheIgnored {
                path: code_cache::entry_path(dir, key),
                reason: e.to_string(),
            });
        }
    }
    Ok(Some(stream))
}

/// LASSO codes (--lasso-iterations) of `images` (rows of d, model units); `None` when a stop
/// was requested midway. Read from and written to `args.code_cache` as in [`encode_into`]
/// (a repeated run with the same seed re-encodes the same images).
fn encode_rows(
    backend: &mut dyn Backend,
    target: &Target,
    images: &[f32],
    args: &AugmentSettings,
    observer: &dyn Observer,
    status: &mut &'static str,
) -> Result<Option<Vec<f32>>> {
    let (d, p) = (target.d(), target.p());
    let n = images.len() / d;
    let iterations = args.dynamics.lasso_iterations;
    let device = backend.info().device;
    let cache = args.code_cache.as_deref().map(|dir| {
        let key = CodeKey {
            dictionary: &target.dictionary.a,
            d,
            p,
            lam: target.lam,
            iterations,
            tolerance: args.lasso_tolerance,
            device: &device,
        }
        .hash(images.chunks(d.max(1)));
        (dir, key)
    });
    *status = "off";
    if let Some((dir, key)) = &cache {
        match code_cache::load(dir, key, n, p) {
            Ok(Some(codes)) => {
                *status = "read";
                return Ok(Some(codes));
            }
            Ok(None) => {}
            Err(reason) => observer.notice(&Notice::CodeCacheIgnored {
                path: code_cache::entry_path(dir, key),
                reason,
            }),
        }
    }
    let mut codes = Vec::with_capacity(n * p);
    let finished = encode_batches(
        &mut |batch| backend.encode(batch, target.lam, iterations),
        n,
        "re-encoding",
        observer,
        |rows| images[rows.start * d..rows.end * d].to_vec(),
        |batch| {
            codes.extend_from_slice(batch);
            Ok(())
        },
    )?;
    if !finished {
        return Ok(None);
    }
    if let Some((dir, key)) = &cache {
        *status = "written";
        if let Err(e) = code_cache::store(dir, key, n, p, &codes) {
            *status = "not written";
            observer.notice(&Notice::CodeCacheIgnored {
                path: code_cache::entry_path(dir, key),
                reason: e.to_string(),
            });
        }
    }
    Ok(Some(codes))
}

/// Encodes `n` images ENCODE_BATCH at a time with a progress bar: `images` gives a range of rows
/// (model units), `encode` their codes, `sink` takes them. False when a stop was requested first.
fn encode_batches(
    encode: &mut dyn FnMut(&[f32]) -> Result<Vec<f32>>,
    n: usize,
    what: &'static str,
    observer: &dyn Observer,
    images: impl Fn(std::ops::Range<usize>) -> Vec<f32>,
    mut sink: impl FnMut(&[f32]) -> Result<()>,
) -> Result<bool> {
    observer.phase_start(&Phase {
        name: what,
        len: Some(n as u64),
        unit: "",
    });
    for start in (0..n).step_by(ENCODE_BATCH) {
        if observer.stop_requested() {
            observer.phase_finish();
            return Ok(false);
        }
        let end = (start + ENCODE_BATCH).min(n);
        sink(&encode(&images(start..end))?)?;
        observer.phase_advance(end as u64);
    }
    observer.phase_finish();
    Ok(true)
}

/// The labelled test split beside --data, limited to --test-limit images.
fn load_test(args: &AugmentSettings, train: &Dataset) -> Result<Dataset> {
    let dir = args.problem.data.as_deref().ok_or_else(|| {
        Error::usage(
            "encode_test",
            "needs `data` naming a folder with a test split",
        )
    })?;
    let test = Dataset::load_test_split(dir)?.ok_or_else(|| {
        Error::input(
            dir,
            "holds no test split (t10k-images-idx3-ubyte[.gz] or *-test-images-idx3-ubyte[.gz]) for `encode_test`",
        )
    })?;
    if test.d != train.d {
        return Err(Error::input(
            &test.source,
            format!(
                "images have {} values, the training images {}",
                test.d, train.d
            ),
        ));
    }
    if test.labels.is_none() {
        return Err(Error::input(&test.source, "has no labels file beside it"));
    }
    match args.test_limit {
        Some(0) => Err(Error::usage("test_limit", "must be at least 1")),
        Some(n) if n < test.n => test.try_subset(&(0..n).collect::<Vec<_>>()),
        _ => Ok(test),
    }
}

/// The originals as 8-bit pixels (full scale mapped to 255).
fn original_pixels(dataset: &Dataset) -> Vec<u8> {
    match &dataset.pixels {
        Pixels::U8(v) if dataset.full_scale == 255.0 => v.clone(),
        Pixels::U8(v) => v
            .iter()
            .map(|&x| {
                (x as f32 * 255.0 / dataset.full_scale)
                    .round()
                    .clamp(0.0, 255.0) as u8
            })
            .collect(),
        Pixels::F32(v) => v
            .iter()
            .map(|&x| (x * 255.0 / dataset.full_scale).round().clamp(0.0, 255.0) as u8)
            .collect(),
    }
}

/// Labels as IDX bytes; IDX labels are single bytes.
fn idx_labels(labels: &[u32]) -> Result<Vec<u8>> {
    labels
        .iter()
        .map(|&l| {
            u8::try_from(l).map_err(|_| {
                Error::usage(
                    "labels",
                    format!("label {l} does not fit an IDX labels file (0..=255)"),
                )
            })
        })
        .collect()
}

fn as_i64(labels: &[u32]) -> Vec<i64> {
    labels.iter().map(|&l| l as i64).collect()
}

/// Per class: label, counts, chains, acceptance and the distance its chains moved.
fn class_report(plan: &AugmentPlan, sink: &AugmentSink, run: &SampleRun) -> Value {
    let distances = run.distances_moved();
    let mut first_chain = 0;
    let mut classes = Vec::new();
    for (k, class) in plan.classes.iter().enumerate() {
        let chains = first_chain..first_chain + class.chains;
        let accepted: u64 = run.accepted[chains.clone()].iter().map(|&a| a as u64).sum();
        let proposals = (run.completed as u64 * class.chains as u64).max(1);
        let moved = distances.get(chains.clone()).unwrap_or_default();
        let acceptance: Vec<f64> = chains
            .clone()
            .map(|c| run.accepted[c] as f64 / run.completed.max(1) as f64)
            .collect();
        classes.push(json!({
            "label": class.label,
            "originals": class.rows[1],
            "generated": sink.kept[k],
            "chains": class.chains,
            "acceptance_rate": accepted as f64 / proposals as f64,
            "acceptance_per_chain": chain_quantiles(&acceptance),
            "mean_distance_moved": moved.iter().sum::<f64>() / moved.len().max(1) as f64,
        }));
        first_chain = chains.end;
    }
    Value::Array(classes)
}

/// generated.png: one row per class, a few real images of the class then its generated samples.
fn write_class_grid(
    out: &Path,
    problem: &Problem,
    plan: &AugmentPlan,
    sink: &AugmentSink,
    generated_pixels: &[u8],
    h: usize,
    w: usize,
) -> Result<()> {
    let d = h * w;
    let observations = &problem.target.observations;
    let real = 3;
    let mut rows: Vec<Vec<f32>> = Vec::new();
    let mut offset = 0;
    for (k, class) in plan.classes.iter().enumerate() {
        let [first, count] = class.rows;
        let mut row: Vec<f32> = (first..first + count.min(real as u32))
            .flat_map(|i| observations.row(i as usize))
            .map(|v| v * 255.0 / problem.target.observations.scale / problem.dataset.full_scale)
            .collect();
        row.resize(real * d, 0.0);
        let shown = sink.kept[k].min(GRID_COLUMNS - real);
        row.extend(
            generated_pixels[offset * d..(offset + shown) * d]
                .iter()
                .map(|&v| v as f32),
        );
        row.resize(GRID_COLUMNS * d, 0.0);
        offset += sink.kept[k];
        rows.push(row);
    }
    let flat: Vec<f32> = rows.concat();
    io::write_png_grid(
        &out.join("generated.png"),
        &[(&flat, rows.len() * GRID_COLUMNS)],
        h,
        w,
        GRID_COLUMNS,
        (0.0, 255.0),
        (112 / h.max(w)).clamp(1, 8),
    )
}
