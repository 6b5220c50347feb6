//! A run's shards: a shard's part of the run's warm-up, the trace and manifest a shard ends with, and the whole run joined from the shards' parts (their runs chain by chain, their draws, their augmentation samples in the single run's order).

use std::ops::Range;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::augment::{AugmentPlan, AugmentSink};
use super::{Checkpoint, ClassSteps, SampleRun, SampleSink, PROJECTIONS};
use crate::diagnostics::degenerate::DrawWatch;
use crate::io::shards::{write_manifest, Part, Shard, ShardFiles, Split, MANIFEST};
use crate::io::ARRAY_SOURCE;
use crate::{Error, Result};

/// A shard's chains' finished run (a checkpoint of it, with the configuration), which the
/// merge joins.
pub const TRACE: &str = "trace.rmld";

/// An augmentation shard's generated images (rows of d, model units, class by class), its
/// chains' samples.
pub const AUGMENT_IMAGES: &str = "generated-images.npy";
/// An augmentation shard's generated codes (rows of p, as the images), re-encoded with
/// `reencode`.
pub const AUGMENT_CODES: &str = "generated-codes.npy";

/// What a shard ends with besides its part of the outputs.
pub struct ShardEnd<'a> {
    /// The command (`sample`, `augment`).
    pub command: &'a str,
    /// The shard's settings as given (the trace's configuration).
    pub config: Value,
    /// The configuration's hash (`io::shards::configuration`).
    pub configuration: String,
    /// The data's and the dictionary's hashes.
    pub hashes: (u64, u64),
    /// d and p.
    pub shape: (usize, usize),
    /// The seed.
    pub seed: u64,
}

/// Ends shard `shard`, whose chains `chains` of `total` ran `run` to `positions`: writes its
/// trace, then the manifest of `names` (the trace and the manifest aside) in `out`.
pub fn finish_shard(
    out: &Path,
    end: ShardEnd,
    (shard, chains, total): (Shard, Range<usize>, usize),
    run: &SampleRun,
    positions: Vec<f32>,
    names: &[&str],
) -> Result<()> {
    let trace = Checkpoint {
        config: end.config,
        data_hash: end.hashes.0,
        dictionary_hash: end.hashes.1,
        d: end.shape.0,
        p: end.shape.1,
        positions,
        run: run.clone(),
        identity: None,
        written_by: None,
        device: None,
        wall_seconds: None,
    };
    trace.write(&out.join(TRACE))?;
    let mut files = names.to_vec();
    files.push(TRACE);
    let part = Part {
        unit: "chains".into(),
        start: chains.start,
        end: chains.end,
        total,
    };
    let (configuration, seed) = (end.configuration, end.seed);
    write_manifest(out, end.command, configuration, seed, shard, part, &files)?;
    Ok(())
}

/// Shard `s`'s trace.
pub fn shard_trace(s: &ShardFiles) -> Result<Checkpoint> {
    s.file(TRACE)?;
    Checkpoint::read(&s.dir.join(TRACE))
}

/// The settings the shards ran with, from the first one's trace.
pub fn shard_settings<T: DeserializeOwned>(first: &ShardFiles, trace: &Checkpoint) -> Result<T> {
    serde_json::from_value(trace.config.clone()).map_err(|e| {
        Error::input(
            first.dir.join(TRACE),
            format!("the shard's configuration is not one this rmld reads: {e}"),
        )
    })
}

/// The part of `state` (a checkpoint of all its run's chains) that the chains `range` hold:
/// their positions and per-chain figures, their columns of every traced iteration, and the
/// run's own state (iterations, step-size adaptation, automatic burn-in) as it is. With
/// per-class step sizes, `classes` (the whole run's class of each chain in `range`) renumbers
/// the classes as the part's chains meet them, as `class_of_chain` numbers a shard's.
pub fn chain_slice(
    state: &Checkpoint,
    range: Range<usize>,
    classes: Option<&[u32]>,
) -> Result<Checkpoint> {
    let run = &state.run;
    let part = PartOf {
        range: range.clone(),
        total: run.accepted.len(),
    };
    if range.is_empty() || range.end > part.total {
        return Err(part.bad("chain count"));
    }
    let class_steps = match (&run.class_steps, classes) {
        (None, _) => None,
        (Some(steps), Some(classes)) if classes.len() == range.len() => {
            Some(classes_met(steps, classes).ok_or_else(|| part.bad("per-class steps"))?)
        }
        (Some(_), _) => return Err(part.bad("class list")),
    };
    let sliced = SampleRun {
        completed: run.completed,
        interrupted: run.interrupted,
        trace_stride: run.trace_stride,
        final_images: part.chains(&run.final_images, "final images")?,
        projections: part.traced(&run.projections, PROJECTIONS, "projections")?,
        start_images: part.chains(&run.start_images, "start images")?,
        start_indices: match &run.start_indices {
            Some(rows) => Some(part.chains(rows, "start rows")?),
            None => None,
        },
        log_alpha: part.traced(&run.log_alpha, 1, "log α")?,
        energies: part.traced(&run.energies, 1, "energies")?,
        accepted: part.chains(&run.accepted, "acceptances")?,
        divergent: part.chains(&run.divergent, "divergences")?,
        prior_nonfinite: part.chains(&run.prior_nonfinite, "prior updates")?,
        prior_state: part.chains(&run.prior_state, "prior state")?,
        noise_precision: part.chains(&run.noise_precision, "noise precision")?,
        noise_trace: part.traced(&run.noise_trace, 1, "noise trace")?,
        timings: run.timings.clone(),
        adaptation: run.adaptation,
        class_steps,
        burn_in: run.burn_in.clone(),
    };
    Ok(Checkpoint {
        config: state.config.clone(),
        data_hash: state.data_hash,
        dictionary_hash: state.dictionary_hash,
        d: state.d,
        p: state.p,
        positions: part.chains(&state.positions, "positions")?,
        run: sliced,
        // A warm-up is no resumable run: the shard checks it by its settings' hash.
        identity: None,
        written_by: None,
        device: None,
        wall_seconds: None,
    })
}

/// The classes' steps in the order `classes` (each chain's class in the whole run) meets them.
fn classes_met(steps: &ClassSteps, classes: &[u32]) -> Option<ClassSteps> {
    let mut met: Vec<u32> = Vec::new();
    for &k in classes {
        if !met.contains(&k) {
            met.push(k);
        }
    }
    let classes = met
        .iter()
        .map(|&k| steps.classes.get(k as usize).copied())
        .collect::<Option<Vec<_>>>()?;
    Some(ClassSteps { classes })
}

/// Chains `range` of a run of `total`: their part of per-chain values and of traced iterations.
struct PartOf {
    range: Range<usize>,
    total: usize,
}

impl PartOf {
    /// The error for run values (`what`) that do not hold the chains.
    fn bad(&self, what: &str) -> Error {
        Error::Internal(format!(
            "the chains {}..{} of a run of {}: its {what} does not hold them",
            self.range.start, self.range.end, self.total
        ))
    }

    /// The range's part of per-chain `values` (the same number per chain; none when empty).
    fn chains<T: Copy>(&self, values: &[T], what: &str) -> Result<Vec<T>> {
        if self.total == 0 || !values.len().is_multiple_of(self.total) {
            return Err(self.bad(what));
        }
        let w = values.len() / self.total;
        Ok(values[self.range.start * w..self.range.end * w].to_vec())
    }

    /// The range's part of every traced iteration of `values`: per iteration, `width` values
    /// per chain.
    fn traced<T: Copy>(&self, values: &[T], width: usize, what: &str) -> Result<Vec<T>> {
        let row = self.total * width;
        if row == 0 || !values.len().is_multiple_of(row) {
            return Err(self.bad(what));
        }
        let (start, end) = (self.range.start * width, self.range.end * width);
        Ok(values
            .chunks(row)
            .flat_map(|r| &r[start..end])
            .copied()
            .collect())
    }
}

/// Checks that a merge reads the data and dictionary the shards sampled (`trace`, the first
/// shard's): `hashes` of those `sources` now.
pub fn check_inputs(
    first: &ShardFiles,
    trace: &Checkpoint,
    hashes: (u64, u64),
    (data, dictionary): (&Path, &str),
) -> Result<()> {
    if hashes != (trace.data_hash, trace.dictionary_hash) {
        if sampled_an_array(first) {
            return Err(Error::input(
                first.dir.join(TRACE),
                format!(
                    "the shards sampled data given in memory ({ARRAY_SOURCE}), which a merge \
                     cannot read again (it read {} instead): save the array as an NPY file and \
                     give its path as the shards' and the merge's data, or run the shards with \
                     rmld.distributed, which does so",
                    data.display(),
                ),
            ));
        }
        return Err(Error::input(
            first.dir.join(TRACE),
            format!(
                "the shards sampled other data or another dictionary than {} and {dictionary} \
                 hold now (their hashes differ): merge where the shards' inputs are readable \
                 unchanged",
                data.display(),
            ),
        ));
    }
    Ok(())
}

/// Whether the shard's report names its data as an array given in memory.
fn sampled_an_array(shard: &ShardFiles) -> bool {
    shard
        .json("report.json")
        .is_ok_and(|report| report["dataset"]["source"] == ARRAY_SOURCE)
}

/// The whole run's run joined from the shards' `runs` (each shard's chains, the same
/// iterations).
pub fn joined_run(shards: &[ShardFiles], runs: &[SampleRun]) -> Result<SampleRun> {
    let chains: Vec<usize> = shards
        .iter()
        .map(|s| s.manifest.part.end - s.manifest.part.start)
        .collect();
    join_runs(runs, &chains, &|k| {
        let s = &shards[k];
        Error::input(
            s.dir.join(MANIFEST),
            format!(
                "shard {}'s trace does not fit its {} chains or the other shards' iterations",
                s.manifest.shard, chains[k]
            ),
        )
    })
}

/// The whole run joined from its shards' runs (`runs[k]` of `chains[k]` chains, in chain order):
/// per-chain figures end to end, per-iteration traces chain by chain within each traced
/// iteration, the longest shard's timings, and the warm-up's adapted steps and automatic
/// burn-in, which every shard started from. Each run must hold its chains, the same iterations
/// and the same warm-up; `misfit(k)` is the error for a run `k` that does not.
pub fn join_runs(
    runs: &[SampleRun],
    chains: &[usize],
    misfit: &dyn Fn(usize) -> Error,
) -> Result<SampleRun> {
    let (Some(r0), Some(&c0)) = (runs.first(), chains.first()) else {
        return Err(Error::usage("shards", "no shard folder to merge"));
    };
    let mut run = SampleRun {
        completed: r0.completed,
        interrupted: false,
        trace_stride: r0.trace_stride,
        start_indices: r0.start_indices.as_ref().map(|_| Vec::new()),
        adaptation: r0.adaptation,
        class_steps: r0.class_steps.clone(),
        burn_in: r0.burn_in.clone(),
        ..SampleRun::default()
    };
    let traced = r0.energies.len() / c0.max(1);
    for (k, (r, &c)) in runs.iter().zip(chains).enumerate() {
        let consistent = r.completed == run.completed
            && !r.interrupted
            && r.trace_stride == run.trace_stride
            && r.accepted.len() == c
            && r.energies.len() == traced * c
            && r.log_alpha.len() == traced * c
            && r.projections.len() == traced * c * PROJECTIONS
            && r.start_indices.is_some() == run.start_indices.is_some()
            && warm_up_of(r) == warm_up_of(&run);
        if !consistent {
            return Err(misfit(k));
        }
        run.accepted.extend(&r.accepted);
        run.divergent.extend(&r.divergent);
        run.prior_nonfinite.extend(&r.prior_nonfinite);
        run.prior_state.extend(&r.prior_state);
        run.start_images.extend(&r.start_images);
        run.final_images.extend(&r.final_images);
        if let (Some(all), Some(mine)) = (run.start_indices.as_mut(), &r.start_indices) {
            all.extend(mine);
        }
        let timings = &mut run.timings;
        timings.init_seconds = timings.init_seconds.max(r.timings.init_seconds);
        timings.sampling_seconds = timings.sampling_seconds.max(r.timings.sampling_seconds);
        timings.host_mh_seconds = timings.host_mh_seconds.max(r.timings.host_mh_seconds);
        timings.adaptation_seconds = timings.adaptation_seconds.max(r.timings.adaptation_seconds);
    }
    for i in 0..traced {
        for (r, &c) in runs.iter().zip(chains) {
            run.energies.extend(&r.energies[i * c..(i + 1) * c]);
            run.log_alpha.extend(&r.log_alpha[i * c..(i + 1) * c]);
            let w = c * PROJECTIONS;
            run.projections.extend(&r.projections[i * w..(i + 1) * w]);
        }
    }
    Ok(run)
}

/// What a run's warm-up left it, to compare between shards: its adapted steps and automatic
/// burn-in as text (a NaN measurement of the burn-in's last check equals itself there).
fn warm_up_of(run: &SampleRun) -> String {
    format!("{:?}", (&run.adaptation, &run.class_steps, &run.burn_in))
}

/// The draws of the shards' chains joined: each part holds (draw, its chains, `width`) values
/// and its chain count; `sink` gets one draw of every chain (in part order) at a time.
fn join_draws(
    parts: &[(Vec<f32>, usize)],
    (draws, width): (usize, usize),
    sink: &mut dyn FnMut(&[f32]) -> Result<()>,
) -> Result<()> {
    let chains: usize = parts.iter().map(|(_, c)| c).sum();
    let mut draw = Vec::with_capacity(chains * width);
    for k in 0..draws {
        draw.clear();
        for (values, c) in parts {
            draw.extend_from_slice(&values[k * c * width..(k + 1) * c * width]);
        }
        sink(&draw)?;
    }
    Ok(())
}

/// The draws of a sampling run's shards joined into `codes.npy` and `images.npy` in `out`:
/// every draw's chains in shard order (codes of p, images of d values), in a folder the caller
/// holds. Returns the draws kept.
pub fn join_sample_draws(
    shards: &[ShardFiles],
    (d, p): (usize, usize),
    out: &Path,
) -> Result<(usize, DrawWatch)> {
    let mut codes = Vec::with_capacity(shards.len());
    let mut images = Vec::with_capacity(shards.len());
    let mut kept = None;
    for s in shards {
        let c = s.manifest.part.end - s.manifest.part.start;
        let (k1, w1, v1) = shard_draws(s, "codes.npy", c)?;
        let (k2, w2, v2) = shard_draws(s, "images.npy", c)?;
        if (w1, w2) != (p, d) || k1 != k2 || kept.is_some_and(|k| k != k1) {
            return Err(Error::input(
                s.dir.join("codes.npy"),
                format!(
                    "shard {}: its draws' shapes differ from the other shards'",
                    s.manifest.shard
                ),
            ));
        }
        kept = Some(k1);
        codes.push((v1, c));
        images.push((v2, c));
    }
    let kept = kept.unwrap_or(0);
    let c = codes.iter().map(|(_, c)| c).sum::<usize>();
    // The joined codes watched as the single run's were (`SampleStreams`).
    let mut watch = DrawWatch::new(c, p);
    for (name, parts, width) in [("codes.npy", &codes, p), ("images.npy", &images, d)] {
        let mut stream = crate::io::NpyStream::create(&out.join(name), &[c, width])?;
        join_draws(parts, (kept, width), &mut |draw| {
            if name == "codes.npy" {
                watch.observe(draw);
            }
            stream.append(draw)
        })?;
        stream.finish()?;
    }
    Ok((kept, watch))
}

/// A shard's `codes.npy` or `images.npy`: (kept draws, its chains, width) and the values.
fn shard_draws(s: &ShardFiles, name: &str, chains: usize) -> Result<(usize, usize, Vec<f32>)> {
    s.file(name)?;
    let path = s.dir.join(name);
    let array = crate::io::read_npy(&path)?;
    let bad = || {
        Error::input(
            &path,
            format!(
                "shard {}: shape {:?} does not hold its {chains} chains",
                s.manifest.shard, array.shape
            ),
        )
    };
    let (&[kept, c, width], crate::io::Pixels::F32(values)) = (array.shape.as_slice(), &array.data)
    else {
        return Err(bad());
    };
    if c != chains {
        return Err(bad());
    }
    Ok((kept, width, values.clone()))
}

/// One shard's augmentation samples: the rows its chains kept (class by class, images of d and
/// codes of p values; no codes for pixel-space samplers) and which of their class's samples
/// they are.
struct SinkPart {
    /// Per class: the rows kept.
    kept: Vec<usize>,
    /// Per class: each kept row's index among its class's samples of the whole run.
    positions: Vec<Vec<usize>>,
    /// The images, rows of d.
    images: Vec<f32>,
    /// The codes, rows of p (empty without codes).
    codes: Vec<f32>,
}

/// What the sink of the chains `range` keeps when they run `completed` outer iterations after
/// `burn_in` (counts and positions, no values): a shard's sink replayed from its trace.
fn replay_sink(
    plan: &AugmentPlan,
    range: Range<usize>,
    burn_in: u32,
    completed: u32,
) -> Result<AugmentSink> {
    let mut counts = AugmentSink::for_chains(plan, range.clone(), burn_in, false);
    let zeros = vec![0.0; range.len()];
    // (Compression records its starts as iteration 1 of a run of none.)
    for outer in 1..=completed.max(1) {
        counts.record(outer, &zeros, &zeros)?;
    }
    Ok(counts)
}

/// The whole run's sink from its shards' parts (in chain order): class k's samples in the
/// single run's (iteration, chain) order, that is at each kept iteration the shards' chains in
/// order; `keep_codes` false for pixel-space samplers, whose parts hold no codes.
/// `Err((held, k))` when the parts hold only `held` of class k's samples (a shard ran
/// fewer iterations than the others).
fn join_sinks(
    plan: &AugmentPlan,
    burn_in: u32,
    keep_codes: bool,
    (d, p): (usize, usize),
    parts: &[SinkPart],
) -> std::result::Result<AugmentSink, (usize, usize)> {
    let mut sink = AugmentSink::new(plan, burn_in, keep_codes);
    // Where each class's rows begin in a shard's files (class by class), and a cursor.
    let offsets: Vec<Vec<usize>> = parts
        .iter()
        .map(|s| {
            s.kept
                .iter()
                .scan(0, |at, &kept| {
                    let first = *at;
                    *at += kept;
                    Some(first)
                })
                .collect()
        })
        .collect();
    let mut cursors = vec![vec![0usize; plan.classes.len()]; parts.len()];
    for (k, class) in plan.classes.iter().enumerate() {
        let mut position = 0;
        while position < class.generated {
            let before = position;
            for (s, part) in parts.iter().enumerate() {
                let cursor = &mut cursors[s][k];
                while *cursor < part.kept[k] && part.positions[k][*cursor] == position {
                    let row = offsets[s][k] + *cursor;
                    sink.images[k].extend_from_slice(&part.images[row * d..(row + 1) * d]);
                    if keep_codes {
                        sink.codes[k].extend_from_slice(&part.codes[row * p..(row + 1) * p]);
                    }
                    sink.positions[k].push(position);
                    sink.kept[k] += 1;
                    *cursor += 1;
                    position += 1;
                }
            }
            if position == before {
                return Err((position, k));
            }
        }
    }
    Ok(sink)
}

/// The whole run's samples and run joined from the shards' (checked, in order): every class's
/// samples in the single run's (iteration, chain) order, the chains' traces end to end. `cap`:
/// the fixed burn-in, or an automatic one's cap (the shards' traces say where it ended).
/// `no_codes`: the run writes no codes (Kernel HMC; deform without `--reencode`), so the shards
/// hold none.
pub fn join_augment(
    shards: &[ShardFiles],
    plan: &AugmentPlan,
    cap: u32,
    (no_codes, d, p): (bool, usize, usize),
) -> Result<(AugmentSink, SampleRun)> {
    let chains = plan.chains();
    let mut burn_in = cap;
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
        let trace = shard_trace(s)?;
        if trace.run.interrupted || trace.run.accepted.len() != range.len() {
            return Err(bad(format!(
                "its trace does not hold its {} chains' finished run",
                range.len()
            )));
        }
        // Which samples the shard's chains kept: its sink, replayed without draws, after the
        // burn-in its warm-up made (all shards started from one: `joined_run` checks it).
        burn_in = trace.run.burn_in.as_ref().map_or(cap, |m| m.burn_in());
        let counts = replay_sink(plan, range, burn_in, trace.run.completed)?;
        let rows = counts.total();
        let (shape, images) = s.npy_f32(AUGMENT_IMAGES)?;
        if shape != [rows, d] {
            return Err(bad(format!(
                "{AUGMENT_IMAGES} has shape {shape:?}, its chains kept {rows} samples of {d} pixels"
            )));
        }
        let codes = match no_codes {
            true => Vec::new(),
            false => {
                let (shape, codes) = s.npy_f32(AUGMENT_CODES)?;
                if shape != [rows, p] {
                    return Err(bad(format!(
                        "{AUGMENT_CODES} has shape {shape:?}, its chains kept {rows} samples of {p} atoms"
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
    let sink = join_sinks(plan, burn_in, !no_codes, (d, p), &parts).map_err(|(held, k)| {
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
    let run = joined_run(shards, &runs)?;
    Ok((sink, run))
}
