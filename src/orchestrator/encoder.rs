//! The augmentation's LASSO encodings: a whole run's on its own backend a batch at a time, through the code cache; a shard's part computed as in the whole run's batches.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::backend_choice::{make_backend, BackendChoice};
use super::encode::{encode_batches, encode_like_whole, EncodeBackend};
use super::observer::{Notice, Observer, Phase};
use crate::backend::Backend;
use crate::io::code_cache;
use crate::io::code_cache::CodeKey;
use crate::io::Split;
use crate::methods::DynamicsSettings;
use crate::model::Target;
use crate::Result;

/// Rows LASSO-encoded per backend call (bounds memory, moves the progress bar, checks for a stop).
pub const ENCODE_BATCH: usize = 2048;

/// What the encodings of a run share: its settings, the problem's target (the dictionary and
/// λ), the observer, the split, and the whole run's backend (a shard's encodings make their
/// own; a merge encodes nothing).
pub struct Encoder<'a> {
    pub args: EncodeArgs,
    pub target: &'a Arc<Target>,
    pub observer: &'a dyn Observer,
    pub split: Split<'a>,
    pub backend: Option<&'a mut (dyn Backend + 'static)>,
}

/// The run's settings that its encodings follow.
pub struct EncodeArgs {
    /// The data's full scale (`ProblemSettings::pixel_max`).
    pub pixel_max: f32,
    /// FISTA's iterations, or ADMM's most.
    pub lasso_iterations: u32,
    /// ADMM's relative duality gap (0: FISTA).
    pub lasso_tolerance: f32,
    /// The code cache's folder, if any.
    pub code_cache: Option<PathBuf>,
    /// The run's seed (a shard's encoding backend's).
    pub seed: u64,
    /// Which backend a shard's encodings run on.
    pub backend: BackendChoice,
}

impl EncodeArgs {
    /// The code cache's folder and the key its entry of the codes of `n` rows `image(i)`,
    /// encoded with `target`'s dictionary and λ on `device`, is kept under; None without a
    /// cache.
    fn cache_entry(
        &self,
        target: &Target,
        device: &str,
        n: usize,
        image: &dyn Fn(usize) -> Vec<f32>,
    ) -> Option<(&Path, [u8; 16])> {
        let dir = self.code_cache.as_deref()?;
        let key = CodeKey {
            dictionary: &target.dictionary.a,
            d: target.d(),
            p: target.p(),
            lam: target.lam,
            iterations: self.lasso_iterations,
            tolerance: self.lasso_tolerance,
            device,
        }
        .hash((0..n).map(image));
        Some((dir, key))
    }

    /// Whether the code cache has an entry for these rows' codes (a whole run's encoding then
    /// reads them; the entry is checked whole only when read), for the run's estimate.
    pub fn cache_holds(
        &self,
        target: &Target,
        device: &str,
        n: usize,
        image: &dyn Fn(usize) -> Vec<f32>,
    ) -> bool {
        self.cache_entry(target, device, n, image)
            .is_some_and(|(dir, key)| code_cache::entry_path(dir, &key).is_file())
    }
}

/// Rows to encode: every one of `total`, or a shard's (increasing).
pub enum Rows<'a> {
    All(usize),
    Part { rows: &'a [usize], total: usize },
}

impl Encoder<'_> {
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
        let (args, target, observer) = (&self.args, self.target, self.observer);
        let Some(backend) = self.backend.as_deref_mut() else {
            return Err(crate::Error::Internal("encoding without a backend".into()));
        };
        let (p, iterations) = (target.p(), args.lasso_iterations);
        let device = backend.info().device;
        let cache = args.cache_entry(target, &device, n, image);
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
            &mut |images| {
                backend.encode_or_stop(images, target.lam, iterations, &|| {
                    observer.stop_requested()
                })
            },
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

    /// A shard's rows of `total`, in the whole run's batches, on a backend of their own.
    fn part(
        &self,
        rows: &[usize],
        total: usize,
        image: &dyn Fn(usize) -> Vec<f32>,
        sink: &mut dyn FnMut(&[f32]) -> Result<()>,
    ) -> Result<bool> {
        let (args, observer) = (&self.args, self.observer);
        let mut backend = EncodeBackend::new(|like| {
            let dynamics = DynamicsSettings::encoding_only(args.seed);
            let mut backend = make_backend(args.backend, observer, self.target, &dynamics, like)?;
            backend.set_lasso_tolerance(args.lasso_tolerance);
            Ok(backend)
        });
        let codes = encode_like_whole(
            &mut backend,
            rows,
            total,
            ENCODE_BATCH,
            (self.target.lam, args.lasso_iterations),
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
