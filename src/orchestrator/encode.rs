//! Batched LASSO encoding: rows encoded a batch at a time with progress and stops between batches, a shard's rows computed as in the whole run's batches, and the reconstructions A z.

use std::collections::BTreeMap;

use crate::backend::{Backend, EncodeStats};
use crate::Result;

/// The batches in which a whole run encodes `total` rows, `batch` at a time, cut to `rows`
/// (increasing): per batch that holds some of them, the rows the whole run's batch has (`like`:
/// the CPU's products take their path by the row count, see `matmul::rows_like`) and the given
/// rows in it.
pub fn batches(rows: &[usize], total: usize, batch: usize) -> Vec<(usize, &[usize])> {
    rows.chunk_by(|a, b| a / batch == b / batch)
        .map(|group| {
            let first = group[0] / batch * batch;
            (batch.min(total - first), group)
        })
        .collect()
}

/// Backends for encoding rows as in the whole run's batches: one per batch size (`like`), or
/// one for every batch, made by `make` on first use, whose encodings' counts add up.
pub struct BatchBackends<'a> {
    make: Box<dyn FnMut(usize) -> Result<Box<dyn Backend>> + 'a>,
    per_batch_size: bool,
    backends: BTreeMap<usize, Box<dyn Backend>>,
}

impl<'a> BatchBackends<'a> {
    /// A backend per batch size, made by `make(like)` (computing as over `like` rows): a
    /// part's rows computed as in the whole run.
    pub fn per_batch_size(make: impl FnMut(usize) -> Result<Box<dyn Backend>> + 'a) -> Self {
        BatchBackends {
            make: Box::new(make),
            per_batch_size: true,
            backends: BTreeMap::new(),
        }
    }

    /// One backend for every batch, made by `make` (told the first batch's size): the whole run.
    pub fn one(make: impl FnMut(usize) -> Result<Box<dyn Backend>> + 'a) -> Self {
        BatchBackends {
            per_batch_size: false,
            ..Self::per_batch_size(make)
        }
    }

    /// The backend for batches of `like` rows.
    pub fn get(&mut self, like: usize) -> Result<&mut dyn Backend> {
        let key = if self.per_batch_size { like } else { 0 };
        if !self.backends.contains_key(&key) {
            let backend = (self.make)(like)?;
            self.backends.insert(key, backend);
        }
        Ok(self
            .backends
            .get_mut(&key)
            .map(|b| b.as_mut())
            .expect("inserted above"))
    }

    /// The encodings' counts summed over every backend made (None when one does not count).
    pub fn stats(&self) -> Option<EncodeStats> {
        let mut sum = EncodeStats::default();
        for backend in self.backends.values() {
            sum.add(&backend.encode_stats()?);
        }
        Some(sum)
    }
}

/// LASSO codes of the rows `rows` (increasing) of the `total` a whole run encodes `batch` at a
/// time, each computed as in the whole run's batch (on `backends.get(like)`); `image(i)` is
/// row i (model units). `progress` is told the rows done after each batch; `None` when `stop`
/// said so before a batch.
#[allow(clippy::too_many_arguments)]
pub fn encode_like_whole(
    backends: &mut BatchBackends,
    rows: &[usize],
    total: usize,
    batch: usize,
    (lam, iterations): (f32, u32),
    image: &dyn Fn(usize) -> Vec<f32>,
    progress: &mut dyn FnMut(usize),
    stop: &dyn Fn() -> bool,
) -> Result<Option<Vec<f32>>> {
    let mut codes = Vec::new();
    let mut done = 0;
    for (like, group) in batches(rows, total, batch) {
        if stop() {
            return Ok(None);
        }
        let images: Vec<f32> = group.iter().flat_map(|&i| image(i)).collect();
        codes.extend(backends.get(like)?.encode(&images, lam, iterations)?);
        done += group.len();
        progress(done);
    }
    Ok(Some(codes))
}

/// Encodes `n` rows `batch` at a time: `images` gives a range of rows (model units), `encode`
/// their codes, `sink` takes them, `progress` is told the rows done. False when `stop` said so
/// before a batch.
pub fn encode_batches(
    encode: &mut dyn FnMut(&[f32]) -> Result<Vec<f32>>,
    (n, batch): (usize, usize),
    images: &dyn Fn(std::ops::Range<usize>) -> Vec<f32>,
    sink: &mut dyn FnMut(&[f32]) -> Result<()>,
    progress: &mut dyn FnMut(usize),
    stop: &dyn Fn() -> bool,
) -> Result<bool> {
    for start in (0..n).step_by(batch.max(1)) {
        if stop() {
            return Ok(false);
        }
        let end = (start + batch).min(n);
        sink(&encode(&images(start..end))?)?;
        progress(end);
    }
    Ok(true)
}

/// A z for every code (rows of p), computed as over `like` rows (the single run's n in a shard;
/// see `matmul::rows_like`).
pub fn reconstruct(a: &[f32], (d, p): (usize, usize), codes: &[f32], like: usize) -> Vec<f32> {
    use crate::backend::cpu::matmul;
    let rows = codes.len() / p;
    let mut out = vec![0f32; rows * d];
    let zeros = vec![0f32; rows * d];
    matmul::residual_product_like(
        matmul::Layouts::rows(a),
        d,
        p,
        codes,
        &zeros,
        &mut out,
        like,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_follow_the_whole_run() {
        // 10 rows in batches of 4: [0, 4), [4, 8), [8, 10).
        let rows = [3, 4, 5, 9];
        let got: Vec<(usize, Vec<usize>)> = batches(&rows, 10, 4)
            .into_iter()
            .map(|(like, g)| (like, g.to_vec()))
            .collect();
        assert_eq!(got, vec![(4, vec![3]), (4, vec![4, 5]), (2, vec![9])]);
    }
}
