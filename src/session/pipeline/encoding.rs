//! How the stages' LASSO encodings run: a whole run's on its own backend a batch at a time, through the code cache; a shard's part computed as in the whole run's batches.

use std::sync::Arc;

use super::stage::{Halt, Step};
use crate::backend::Backend;
use crate::io::code_cache;
use crate::io::{Dataset, NpyStream};
use crate::io::{Output, Split};
use crate::methods::DynamicsSettings;
use crate::model::{Observations, Target};
use crate::orchestrator::encode::{encode_batches, encode_like_whole, BatchBackends};
use crate::orchestrator::CodeKey;
use crate::session::observer::{Notice, Observer, Phase};
use crate::session::problem::make_backend;
use crate::session::settings::AugmentSettings;
use crate::Result;

/// Rows LASSO-encoded per backend call (bounds memory, moves the progress bar, checks for a stop).
pub(super) const ENCODE_BATCH: usize = 2048;

/// What the encodings of a run share: its settings, the problem's target (the dictionary and
/// λ), the observer, the split, and the whole run's backend (a shard's encodings make their
/// own; a merge encodes nothing).
pub(super) struct Encoder<'a> {
    pub args: &'a AugmentSettings,
    pub target: &'a Arc<Target>,
    pub observer: &'a dyn Observer,
    pub split: Split<'a>,
    pub backend: Option<&'a mut (dyn Backend + 'static)>,
}

/// A dataset's codes: streamed into an output file (a whole run, a merge), or a shard's part.
pub(super) enum Codes {
    Stream(NpyStream),
    Part(Vec<f32>),
}

/// Rows to encode: every one of `total`, or a shard's (increasing).
pub(super) enum Rows<'a> {
    All(usize),
    Part { rows: &'a [usize], total: usize },
}

impl Encoder<'_> {
    /// Every row of `dataset` LASSO-encoded: a whole run streams the codes into `file` of
    /// `output` (finished by the writing stage), a shard keeps its part, a merge joins the
    /// shards' parts (saved as `part`) into `file`.
    pub fn dataset(
        &mut self,
        output: &mut Output,
        dataset: &Dataset,
        (file, part): (&str, &str),
        cache: &mut &'static str,
    ) -> Step<Codes> {
        let observations = Observations::from_dataset(dataset, self.args.problem.pixel_max);
        let (n, p) = (observations.n, self.target.p());
        let image = |i: usize| observations.row(i);
        match self.split {
            Split::Shard(shard) => {
                let rows: Vec<usize> = shard.range(n).collect();
                let mut codes = Vec::new();
                let rows = Rows::Part {
                    rows: &rows,
                    total: n,
                };
                let mut keep = |c: &[f32]| {
                    codes.extend_from_slice(c);
                    Ok(())
                };
                match self.encode("encoding", rows, &image, &mut keep, cache)? {
                    true => Ok(Codes::Part(codes)),
                    false => Err(Halt::Stopped),
                }
            }
            Split::Merge(parts) => {
                let mut stream = output.stream(file, &[p])?;
                for s in parts {
                    stream.append(&s.rows(part, (n, p))?)?;
                }
                Ok(Codes::Stream(stream))
            }
            Split::Whole => {
                let mut stream = output.stream(file, &[p])?;
                let mut append = |c: &[f32]| stream.append(c);
                match self.encode("encoding", Rows::All(n), &image, &mut append, cache)? {
                    true => Ok(Codes::Stream(stream)),
                    false => Err(Halt::Stopped),
                }
            }
        }
    }

    /// LASSO codes (`lasso_iterations`) of `rows`, `image(i)` being row i (model units), handed
    /// to `sink` (in batches of the whole run); the progress bar is named `what`. A whole run
    /// reads and fills the code cache (`cache` says "read", "written", "not written" or
    /// "off"). False when a stop was requested.
    pub fn encode(
        &mut self,
        what: &'static str,
        rows: Rows,
        image: &dyn Fn(usize) -> Vec<f32>,
        sink: &mut dyn FnMut(&[f32]) -> Result<()>,
        cache: &mut &'static str,
    ) -> Result<bool> {
        let len = match rows {
            Rows::All(n) => n,
            Rows::Part { rows, .. } => rows.len(),
        };
        self.observer.phase_start(&Phase {
            name: what,
            len: Some(len as u64),
            unit: "",
        });
        let done = match rows {
            Rows::All(n) => self.whole(n, image, sink, cache)?,
            Rows::Part { rows, total } => self.part(rows, total, image, sink)?,
        };
        self.observer.phase_finish();
        Ok(done)
    }

    /// Every row, on the whole run's backend, through the code cache.
    fn whole(
        &mut self,
        n: usize,
        image: &dyn Fn(usize) -> Vec<f32>,
        sink: &mut dyn FnMut(&[f32]) -> Result<()>,
        status: &mut &'static str,
    ) -> Result<bool> {
        let (args, target, observer) = (self.args, self.target, self.observer);
        let Some(backend) = self.backend.as_deref_mut() else {
            return Err(crate::Error::Internal("encoding without a backend".into()));
        };
        let (p, iterations) = (target.p(), args.dynamics.lasso_iterations);
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
            .hash((0..n).map(image));
            (dir, key)
        });
        *status = "off";
        if let Some((dir, key)) = &cache {
            match code_cache::load(dir, key, n, p) {
                Ok(Some(codes)) => {
                    sink(&codes)?;
                    *status = "read";
                    return Ok(true);
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
            (n, ENCODE_BATCH),
            &|rows| rows.flat_map(image).collect(),
            &mut |codes| {
                if cache.is_some() {
                    kept.extend_from_slice(codes);
                }
                sink(codes)
            },
            &mut |done| observer.phase_advance(done as u64),
            &|| observer.stop_requested(),
        )?;
        if let (true, Some((dir, key))) = (finished, &cache) {
            *status = "written";
            if let Err(e) = code_cache::store(dir, key, n, p, &kept) {
                *status = "not written";
                observer.notice(&Notice::CodeCacheIgnored {
                    path: code_cache::entry_path(dir, key),
                    reason: e.to_string(),
                });
            }
        }
        Ok(finished)
    }

    /// A shard's rows of `total`, each computed as in the whole run's batch, on backends of
    /// their own.
    fn part(
        &self,
        rows: &[usize],
        total: usize,
        image: &dyn Fn(usize) -> Vec<f32>,
        sink: &mut dyn FnMut(&[f32]) -> Result<()>,
    ) -> Result<bool> {
        let (args, observer) = (self.args, self.observer);
        let mut backends = BatchBackends::per_batch_size(|like| {
            let dynamics = DynamicsSettings {
                eta: 1.0,
                steps: 1,
                batch: 1,
                seed: args.problem.seed,
                run_chains: like as u32,
                ..Default::default()
            };
            let mut backend =
                make_backend(args.problem.backend, observer, self.target, &dynamics, like)?;
            backend.set_lasso_tolerance(args.lasso_tolerance);
            Ok(backend)
        });
        let codes = encode_like_whole(
            &mut backends,
            rows,
            total,
            ENCODE_BATCH,
            (self.target.lam, args.dynamics.lasso_iterations),
            image,
            &mut |done| observer.phase_advance(done as u64),
            &|| observer.stop_requested(),
        )?;
        match codes {
            Some(codes) => sink(&codes).map(|_| true),
            None => Ok(false),
        }
    }
}
