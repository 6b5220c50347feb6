//! A dataset's LASSO codes for the stages: a whole run's streamed into its file, a shard's part kept, a merge's joined from the shards (the encodings themselves: `orchestrator::encoder`).

use super::stage::{Halt, Step};
use crate::io::{Dataset, NpyStream};
use crate::io::{Output, Split};
use crate::model::{Observations, Target};
pub(super) use crate::orchestrator::encoder::{EncodeArgs, Encoder, Rows};
use crate::session::settings::AugmentSettings;

/// The settings the run's encodings follow.
pub(super) fn encode_args(args: &AugmentSettings) -> EncodeArgs {
    EncodeArgs {
        pixel_max: args.problem.pixel_max,
        lasso_iterations: args.dynamics.lasso_iterations,
        lasso_tolerance: args.lasso_tolerance,
        code_cache: args.code_cache.clone(),
        seed: args.problem.seed,
        backend: args.problem.backend,
    }
}

/// Whether the code cache holds the codes of every row of `dataset` as the whole run's
/// encodings on `device` would make them (they are then read, not encoded).
pub(super) fn cached(args: &EncodeArgs, target: &Target, device: &str, dataset: &Dataset) -> bool {
    let observations = Observations::from_dataset(dataset, args.pixel_max);
    let image = |i: usize| observations.row(i);
    args.cache_holds(target, device, observations.n, &image)
}

/// A dataset's codes: streamed into an output file (a whole run, a merge), or a shard's part.
pub(super) enum Codes {
    Stream(NpyStream),
    Part(Vec<f32>),
}

impl Encoder<'_> {
    /// Every row of `dataset` LASSO-encoded: a whole run streams the codes into `file` of
    /// `output` (finished by the writing stage), a shard keeps its part, a merge joins the
    /// shards' parts (saved as `part`) into `file`.
    pub(super) fn dataset(
        &mut self,
        output: &mut Output,
        dataset: &Dataset,
        (file, part): (&str, &str),
        cache: &mut &'static str,
    ) -> Step<Codes> {
        let observations = Observations::from_dataset(dataset, self.args.pixel_max);
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
            // A warm-up ends before the encodings.
            Split::Whole | Split::WarmUp => {
                let mut stream = output.stream(file, &[p])?;
                let mut append = |c: &[f32]| stream.append(c);
                match self.encode("encoding", Rows::All(n), &image, &mut append, cache)? {
                    true => Ok(Codes::Stream(stream)),
                    false => Err(Halt::Stopped),
                }
            }
        }
    }
}
