//! Stage "dataset load": the labelled data (and test split), the settings fitted to it, the per-class plan, the posterior, this run's chains and the backend they run on.

use std::ops::Range;
use std::sync::Arc;

use serde_json::{json, Value};

use super::deform::Ink;
use super::encoding;
use super::fit::{fit, Fitted};
use super::sampler::sampler_settings;
use super::stage::Pipeline;
use crate::backend::kernel_hmc::KernelTarget;
use crate::backend::{Backend, BackendInfo};
use crate::io::{self, labelled, Dataset, ShardFiles, Split};
use crate::measure::memory;
use crate::methods::AugmentMethod;
use crate::model::shading::SURFACE_SHADE;
use crate::model::{Dictionary, Target, TargetKind};
use crate::orchestrator::estimate::{estimate_augment, lasso_pilot, AugmentWork, LassoPilot};
use crate::orchestrator::identity::input_hashes;
use crate::orchestrator::shard::{check_inputs, shard_trace};
use crate::orchestrator::{AugmentPlan, SamplerSettings};
use crate::session::observer::Notice;
use crate::session::problem::{build_problem, make_grouped_backend, make_kernel_backend, Problem};
use crate::session::settings::{AugmentSettings, Preset};
use crate::{Error, Result};

/// The phase's name.
pub(super) const PHASE: &str = "dataset load";

/// What the stages after the load read.
pub(super) struct Loaded {
    /// The settings as given (a shard's trace holds them).
    pub asked: AugmentSettings,
    /// The settings fitted to the data.
    pub args: AugmentSettings,
    /// What fitting changed.
    pub fitted: Fitted,
    /// The training data, labelled.
    pub dataset: Arc<Dataset>,
    /// The test split (with `encode_test`).
    pub test: Option<Dataset>,
    /// The classes, their rows and chains.
    pub plan: AugmentPlan,
    /// The originals, in dataset order: every image of the chosen classes; with `balance`,
    /// every image (imbalanced-learn's resampled set holds the classes it adds nothing to).
    pub originals: Dataset,
    /// The data (class-sorted), the dictionary and the posterior.
    pub problem: Problem,
    /// The chains' posterior: per-class means and the target kind (a shard's chains only).
    pub target: Arc<Target>,
    /// The whole run's sampler settings.
    pub whole: SamplerSettings,
    /// This run's (a shard's chains).
    pub settings: SamplerSettings,
    /// This run's chains of the whole run's.
    pub chains: Range<usize>,
    /// Kernel HMC: images are the codes, nothing is LASSO-encoded.
    pub kernel: bool,
    /// The data's and the dictionary's hashes.
    pub hashes: (u64, u64),
    /// The pixels d and the code size p (d for Kernel HMC).
    pub d: usize,
    pub p: usize,
    /// Method deform's reading of the images (the default, unread, for other methods).
    pub ink: Ink,
}

/// The device: the backend (none in a merge), its description and the run's estimate on it.
pub(super) struct Device {
    pub backend: Option<Box<dyn Backend>>,
    pub info: Value,
    pub estimate: Value,
}

/// Loads everything and opens the output folder (a stop is noticed after it).
pub(super) fn load(pipe: &mut Pipeline, asked: &AugmentSettings) -> Result<(Loaded, Device)> {
    let dataset = {
        let whole =
            labelled::labelled(asked.problem.load_dataset()?, asked.labels.as_deref(), None)?;
        let kept = labelled::labelled(whole.clone(), None, asked.limit)?;
        note_limit_leaves_classes(pipe, asked, &whole, &kept);
        kept
    };
    refuse_non_pixel_data(&dataset, asked)?;
    // Checked before any work: a missing test split must not cost a whole run.
    // (With `encode_test` the split itself is required, and its absence named, below.)
    if !asked.encode_test {
        let data = asked.problem.data.as_deref();
        labelled::refuse_unused_test_limit(data, asked.test_limit, !asked.no_quality)?;
    }
    let test = match asked.encode_test {
        true => Some(labelled::test_split(
            asked.problem.data.as_deref(),
            &dataset,
            asked.test_limit,
        )?),
        false => None,
    };
    let labels = dataset.labels.clone().unwrap_or_default();
    let (args, fitted) = fit(asked, &dataset, &labels);
    refuse_deform_without_pictures(&dataset, &args)?;
    let plan = make_plan(&args, &labels)?;
    note_few_new_images(pipe, &args, &plan);
    // A balanced set keeps the classes that get no new image (the majority's), or the
    // "balanced" training set would lack them.
    let original_rows: Vec<usize> = match args.balance {
        Some(_) => (0..dataset.n).collect(),
        None => {
            let mut rows = plan.order.clone();
            rows.sort_unstable();
            rows
        }
    };
    let originals = dataset.try_subset(&original_rows)?;
    let sorted = dataset.try_subset(&plan.order)?;
    let kernel = args.method.samples_images();
    refuse_kernel_hmc_without_codes(&args)?;
    refuse_classes_too_small(&args, &plan)?;
    let problem = build_problem(&args.problem_settings(), Arc::new(sorted))?
        .with_adapt_iterations(args.burn_in_cap());
    crate::session::sample::refuse_auto_burn_in_with_adapting_prior(args.auto_burn_in, &problem)?;
    let d = problem.target.d();
    let means = plan.class_means(&problem.target.observations);
    // Kernel HMC samples images on the 0..1 scale, where its step size means the same for
    // every dataset; its "dictionary" is the identity (codes are the images).
    let base = match kernel {
        true => Target::new(
            Arc::new(Dictionary::identity(d)),
            problem.target.observations.clone(),
            0.0,
        ),
        false => Target::clone(&problem.target),
    };
    let whole = sampler_settings(&args, &plan)?;
    // The chains' state, their class means, and the generated codes and images kept in memory.
    let p = if kernel { d } else { problem.target.p() };
    memory::check_fits(
        args.count_setting(),
        &format!(
            "{} generated samples from {} chains of {p} atoms over {d} pixels",
            plan.generated(),
            whole.chains
        ),
        memory::sampler_bytes(whole.chains, d, p)
            + 4.0 * (whole.chains * d) as f64
            + plan.generated() as f64 * 4.0 * (p + d) as f64,
    )?;
    // Any target but the default is one kernel-hmc would not sample.
    if kernel && args.problem.target != TargetKind::default() {
        return Err(Error::usage(
            "target",
            "kernel-hmc has its own target (a kernel density of the class's images)",
        ));
    }
    // Deform's draws need no chain target (only the dictionary, to re-encode them).
    let kind = match args.method {
        AugmentMethod::Deform => TargetKind::Paper,
        _ => args.problem.target,
    };
    let target = base
        .with_classes(plan.chain_classes(&means, d)?)
        .with_kind(kind, whole.chains, whole.dynamics.seed)?;
    // A shard runs its range of the chains, keyed by their global index.
    let chains = pipe.split.chains(whole.chains)?;
    let mut settings = whole.clone();
    let target = match pipe.split {
        Split::Shard(_) => {
            settings.chains = chains.len();
            settings.dynamics.chain_offset = chains.start as u32;
            target.chain_slice(whole.chains, chains.clone())?
        }
        _ => target,
    };
    let hashes = input_hashes(&problem.target);
    if let Split::Merge(shards) = pipe.split {
        let sources = (
            problem.dataset.source.as_path(),
            problem.dictionary_source.as_str(),
        );
        check_inputs(&shards[0], &shard_trace(&shards[0])?, hashes, sources)?;
    }
    let ink = match args.method {
        AugmentMethod::Deform => Ink::of(&problem, args.problem_settings().pixel_max),
        _ => Ink::default(),
    };
    // Graded surfaces, drawn with their learned spreads, take the stronger shading unless one
    // was given (halved for large classes: `Loaded::shades_by_class`).
    let mut args = args;
    if shades_surfaces(&args, &ink) {
        args.shade = SURFACE_SHADE;
    }
    let loaded = Loaded {
        asked: asked.clone(),
        args,
        fitted,
        dataset,
        test,
        plan,
        originals,
        problem,
        target: Arc::new(target),
        whole,
        settings,
        chains,
        kernel,
        hashes,
        d,
        p,
        ink,
    };
    check_disk(pipe, &loaded)?;
    pipe.output.open()?;
    let device = device(pipe, &loaded)?;
    Ok((loaded, device))
}

/// The run's plan: `ratio`'s samples of the chosen classes, or `balance`'s counts.
fn make_plan(args: &AugmentSettings, labels: &[u32]) -> Result<AugmentPlan> {
    // Compression's and deform's chains take one sample and no minibatch (they run no dynamics).
    let (samples_per_chain, batch) = match args.method.moves() {
        false => (1, 1),
        true => (args.samples, args.dynamics.batch),
    };
    match &args.balance {
        // The command line refuses the pair; settings from Python or a file must too, or the
        // classes would be ignored.
        Some(_) if args.classes.is_some() => Err(Error::usage(
            "classes",
            "cannot be used with balance, which chooses the classes itself: give counts for \
             only those classes as balance (LABEL:COUNT,...; {label: count} in Python)",
        )),
        Some(balance) => AugmentPlan::balanced(labels, balance, samples_per_chain, batch),
        None => AugmentPlan::new(
            labels,
            args.classes.as_deref(),
            args.ratio,
            samples_per_chain,
            batch,
        ),
    }
}

/// Says so when `limit` kept fewer classes than the data has and no `classes` were chosen: the
/// first images of a folder of one file per class (Quick Draw's) are all of its first class.
fn note_limit_leaves_classes(
    pipe: &Pipeline,
    asked: &AugmentSettings,
    whole: &Dataset,
    kept: &Dataset,
) {
    let classes = |d: &Dataset| {
        let labels = d.labels.as_deref().unwrap_or_default();
        labels
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    };
    let (Some(limit), None) = (asked.limit, &asked.classes) else {
        return;
    };
    let (kept, classes) = (classes(kept), classes(whole));
    if kept < classes && matches!(pipe.split, Split::Whole) {
        pipe.observer.notice(&Notice::LimitLeavesClasses {
            limit,
            kept,
            classes,
        });
    }
}

/// A ratio of a few originals per new image (the paper's 6:1, augment's default) moves no
/// classifier; the preset's method for classifiers says so once, on the whole run (not an
/// amortised sampler's MCMC teacher).
fn note_few_new_images(pipe: &Pipeline, args: &AugmentSettings, plan: &AugmentPlan) {
    let few = plan.generated() < plan.order.len();
    let for_classifiers = args.preset == Some(Preset::Quality)
        && args.method == AugmentMethod::Deform
        && args.balance.is_none();
    if few && for_classifiers && matches!(pipe.split, Split::Whole) {
        pipe.observer.notice(&Notice::FewNewImages {
            generated: plan.generated(),
            originals: plan.order.len(),
        });
    }
}

/// Refuses data that are not pixels: the augmented set is written as 8-bit images (0 up to the
/// data's full scale), so `data_scale` raw is refused, and a float value below zero, which
/// would become 0 with nothing said (real-valued data such as standardised pixels is `rmld
/// sample`'s, or `RMLDAugmenter`'s, which maps it first).
fn refuse_non_pixel_data(dataset: &Dataset, args: &AugmentSettings) -> Result<()> {
    if !args.problem.data_scale.is_auto() {
        return Err(Error::usage(
            "data_scale",
            "`augment` writes 8-bit images, so it takes its data as pixels (`auto`); `raw` is \
             for real values, in `sample` and `encode`",
        ));
    }
    let crate::io::Pixels::F32(values) = &dataset.pixels else {
        return Ok(());
    };
    let Some(i) = values.iter().position(|&v| v < 0.0) else {
        return Ok(());
    };
    let (row, column) = (i / dataset.d.max(1), i % dataset.d.max(1));
    Err(Error::input(
        &dataset.source,
        format!(
            "value at flat index {i} (image {row}, pixel {column}) is {}, below 0: `augment` \
             writes 8-bit images, 0 up to the data's full scale, where it would become 0; \
             shift and scale the images to 0..1 or 0..255 first",
            values[i]
        ),
    ))
}

/// Deform moves pictures (rotation, scale, shears, thickness, one-pixel moves): rows whose count
/// is not a square are read as one row of pixels, which a move down or up would blank.
fn refuse_deform_without_pictures(dataset: &Dataset, args: &AugmentSettings) -> Result<()> {
    let (h, w) = (dataset.height, dataset.width);
    if args.method != AugmentMethod::Deform || h.min(w) >= MIN_DEFORM_SIDE {
        return Ok(());
    }
    let one_row = match (h, w) {
        (1, 2..) => " (a count that is not a square is read as one row)",
        _ => "",
    };
    Err(Error::usage(
        "method",
        format!(
            "deform moves images, at least {MIN_DEFORM_SIDE} × {MIN_DEFORM_SIDE} pixels, and \
             {} holds rows of {} values read as {h} × {w}{one_row}: give the images' shape (an \
             (N, h, w) NPY, or `image_shape` in Python), or sample codes with --method hmc or \
             --preset paper",
            dataset.source.display(),
            dataset.d
        ),
    ))
}

/// The least height and width deform's tangents (central differences) are taken on.
const MIN_DEFORM_SIDE: usize = 3;

/// Kernel HMC samples images: it has no codes to generate, replace or encode the test split for.
/// A class with too few images for its chains' target, named by its label and its rows in the
/// data (the target's own check sees only the rows sorted by class).
fn refuse_classes_too_small(args: &AugmentSettings, plan: &AugmentPlan) -> Result<()> {
    let k = args.problem.tangent_k;
    let (setting, needed, why) = match (args.method.moves(), args.problem.target) {
        (false, _) => return Ok(()),
        (true, _) if args.method.samples_images() => (
            "method",
            2,
            "kernel-hmc's bandwidth is the median distance between the class's images".to_string(),
        ),
        (true, TargetKind::Tangent) => (
            "tangent_k",
            k as usize + 1,
            format!("the tangent target needs the anchor and its k = {k} neighbours"),
        ),
        (true, TargetKind::Paper | TargetKind::Mixture | TargetKind::Local) => return Ok(()),
    };
    for class in &plan.classes {
        let [first, count] = class.rows.map(|v| v as usize);
        if count >= needed {
            continue;
        }
        let rows = &plan.order[first..first + count];
        let shown: Vec<String> = rows.iter().take(5).map(usize::to_string).collect();
        let more = if rows.len() > 5 { ", …" } else { "" };
        return Err(Error::usage(
            setting,
            format!(
                "class {} has {count} image(s) (row(s) {}{more} of the data, counting from 0), \
                 fewer than {needed}: {why}",
                class.label,
                shown.join(", ")
            ),
        ));
    }
    Ok(())
}

fn refuse_kernel_hmc_without_codes(args: &AugmentSettings) -> Result<()> {
    if !args.method.samples_images() {
        return Ok(());
    }
    let refuse = |setting, why| Err(Error::usage(setting, why));
    if args.sampler.is_amortized() {
        return refuse(
            "sampler",
            "the amortized sampler generates codes; kernel-hmc has none",
        );
    }
    if args.reencode {
        return refuse(
            "reencode",
            "kernel-hmc samples images and has no codes to replace",
        );
    }
    if args.encode_test {
        return refuse(
            "encode_test",
            "kernel-hmc samples images and has no codes to encode the test split for",
        );
    }
    Ok(())
}

/// The backend of this run's chains (none in a merge, which reports the first shard's device
/// and estimate), and the whole run's estimate on it, announced when long.
fn device(pipe: &Pipeline, run: &Loaded) -> Result<Device> {
    let (args, settings, observer) = (&run.args, &run.settings, pipe.observer);
    let mut backend = match (pipe.split, run.kernel) {
        (Split::Merge(shards), _) => return merged_device(shards),
        (_, true) => {
            let kernel_target = KernelTarget::with_median_bandwidth(
                run.target.observations.clone(),
                run.target.chain_rows(settings.chains)?,
                args.problem.seed,
            )?;
            make_kernel_backend(
                args.problem.backend,
                observer,
                &Arc::new(kernel_target),
                &settings.dynamics,
            )?
        }
        (_, false) => make_grouped_backend(
            args.problem.backend,
            observer,
            &run.target,
            &settings.dynamics,
            settings.chains,
            args.adapt,
        )?,
    };
    backend.set_lasso_tolerance(args.lasso_tolerance);
    let info = backend.info();
    let whole = matches!(pipe.split, Split::Whole);
    let mut work = work(run);
    if whole {
        leave_out_cached_codes(&mut work, run, &info.device);
    }
    let mut estimate = estimate_augment(&work, &info, None);
    if whole && !args.sampler.is_amortized() && estimate.worth_announcing() {
        // Counted as long: time the LASSO before saying how long.
        if let Some(pilot) = lasso_pilot_for(run, &info) {
            estimate = estimate_augment(&work, &info, Some(&pilot));
        }
        if estimate.worth_announcing() {
            observer.notice(&Notice::Estimate {
                seconds: estimate.seconds,
                device: info.device.clone(),
                how: estimate.how.clone(),
            });
        }
    }
    Ok(Device {
        backend: Some(backend),
        info: json!(info),
        estimate: json!(estimate),
    })
}

/// Moves the originals' and the test split's codes that the code cache holds from the work
/// to encode to the work read: a whole run reads them in a moment (a shard's encodings use no
/// cache). The check hashes the rows, as the encoding does.
fn leave_out_cached_codes(work: &mut AugmentWork, run: &Loaded, device: &str) {
    let args = encoding::encode_args(&run.args);
    let target = &run.problem.target;
    if work.original_codes > 0 && encoding::cached(&args, target, device, &run.originals) {
        work.cached_codes += std::mem::take(&mut work.original_codes);
    }
    if let Some(test) = run.test.as_ref().filter(|_| work.test_codes > 0) {
        if encoding::cached(&args, target, device, test) {
            work.cached_codes += std::mem::take(&mut work.test_codes);
        }
    }
}

/// The largest dictionary (d × p values) a LASSO pilot copies: 64 MiB of f32 (MNIST's 784 ×
/// 3136 is 9.4 MiB).
const PILOT_MAX_DICTIONARY: usize = 16 << 20;

/// The CPU LASSO's pace on a pilot of the originals, where this run's LASSO stops at a
/// tolerance on the CPU (the ADMM encoder, whose iterations are known only by running it);
/// None elsewhere, or when the pilot fails (the estimate then counts the LASSO at its cap).
fn lasso_pilot_for(run: &Loaded, info: &BackendInfo) -> Option<LassoPilot> {
    let args = &run.args;
    // The pilot's backend packs its own copy of the dictionary: not where that copy is large.
    let large = run.d * run.p > PILOT_MAX_DICTIONARY;
    if info.kind != "cpu" || args.lasso_tolerance <= 0.0 || run.kernel || large {
        return None;
    }
    let iterations = args.dynamics.lasso_iterations;
    lasso_pilot(&run.problem.target, args.lasso_tolerance, iterations).ok()
}

/// A merge's device: the first shard's (each shard reckons the whole run's estimate).
fn merged_device(shards: &[ShardFiles]) -> Result<Device> {
    let report = shards[0].json("report.json")?;
    Ok(Device {
        backend: None,
        info: report["backend"].clone(),
        estimate: report["estimate"].clone(),
    })
}

/// Whether deform shades this run's graded surfaces by the preset's rule (no `--shade` given)
/// rather than by one amplitude.
fn shades_surfaces(args: &AugmentSettings, ink: &Ink) -> bool {
    args.method == AugmentMethod::Deform && args.fit_shade_to_ink && ink.learns_spreads()
}

impl Loaded {
    /// Whether each class's shading is set by its size (`shading::surface_shade`): the preset's
    /// deform on graded surfaces.
    pub fn shades_by_class(&self) -> bool {
        shades_surfaces(&self.args, &self.ink)
    }

    /// Whether the run writes codes: Kernel HMC has none; Deform's are its images'
    /// re-encodings, none without them.
    pub fn writes_codes(&self) -> bool {
        !(self.kernel || (self.args.method == AugmentMethod::Deform && !self.args.reencode))
    }
}

/// Refuses a whole run whose codes cannot fit on the disk before it starts: the generated
/// ones (generated-codes.npy), the originals' and the generated ones again (codes.npy), the
/// test split's and the dictionary, in f32. The IDX images, compressed, are not counted; a
/// shard writes its part, checked when it is merged.
fn check_disk(pipe: &Pipeline, run: &Loaded) -> Result<()> {
    if !matches!(pipe.split, Split::Whole) || !run.writes_codes() {
        return Ok(());
    }
    let work = work(run);
    let rows = |n: usize| match n {
        0 => 0.0,
        n => io::disk::npy_f32_bytes(n, run.p),
    };
    let with_originals = match work.original_codes {
        0 => 0,
        n => n + work.generated,
    };
    io::disk::Writes::new()
        .add("generated-codes.npy", rows(work.generated))
        .add("codes.npy", rows(with_originals))
        .add("test-codes.npy", rows(work.test_codes))
        .add("dictionary.npy", io::disk::npy_f32_bytes(run.d, run.p))
        .check(
            &pipe.output.dir,
            run.args.count_setting(),
            "generate fewer images, or leave out the originals' codes (`no_original_codes`)",
        )
}

/// The whole run's work, for its estimate.
fn work(run: &Loaded) -> AugmentWork {
    let args = &run.args;
    AugmentWork {
        method: args.method,
        d: run.d,
        p: run.p,
        chains: run.whole.chains,
        outer: if args.method.moves() {
            run.whole.samples
        } else {
            0
        },
        steps: args.dynamics.steps,
        batch: args.dynamics.batch,
        leapfrog_steps: args.dynamics.leapfrog_steps,
        lasso_iterations: args.dynamics.lasso_iterations,
        class_images: run.plan.order.len() / run.plan.classes.len().max(1),
        generated: run.plan.generated(),
        reencode: args.reencode,
        original_codes: match args.no_original_codes || run.kernel {
            true => 0,
            false => run.originals.n,
        },
        test_codes: run.test.as_ref().map_or(0, |t| t.n),
        cached_codes: 0,
    }
}
