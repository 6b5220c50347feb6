//! Batched LASSO encoding: rows encoded a batch at a time with progress and stops (between batches, and on the CPU between iterations), a shard's rows computed as in the whole run's batches, and the reconstructions A z.

use std::path::Path;

use serde_json::{json, Value};

use super::report::{merged_lasso_json, picture_columns};
use crate::backend::{Backend, EncodeStats};
use crate::io::{self, ShardFiles};
use crate::{Error, Result};

/// The batches in which a whole run encodes `total` rows, `batch` at a time, cut to `rows`
/// (increasing): per batch that holds some of them, the rows the whole run's batch has (`like`)
/// and the given rows in it.
pub fn batches(rows: &[usize], total: usize, batch: usize) -> Vec<(usize, &[usize])> {
    rows.chunk_by(|a, b| a / batch == b / batch)
        .map(|group| {
            let first = group[0] / batch * batch;
            (batch.min(total - first), group)
        })
        .collect()
}

/// The backend of an encoding, made by `make` on first use, told the first batch's size (the
/// most rows any batch holds: only the whole run's last batch is shorter). One backend serves
/// every batch: the CPU's products sum in one order whatever the row count, so a part's rows
/// come out as in the whole run.
pub struct EncodeBackend<'a> {
    make: Box<dyn FnMut(usize) -> Result<Box<dyn Backend>> + 'a>,
    backend: Option<Box<dyn Backend>>,
}

impl<'a> EncodeBackend<'a> {
    /// The backend `make(rows)` will make, for batches of at most `rows` rows.
    pub fn new(make: impl FnMut(usize) -> Result<Box<dyn Backend>> + 'a) -> Self {
        EncodeBackend {
            make: Box::new(make),
            backend: None,
        }
    }

    /// The backend, made for batches of `rows` rows on first use.
    pub fn get(&mut self, rows: usize) -> Result<&mut dyn Backend> {
        if self.backend.is_none() {
            self.backend = Some((self.make)(rows)?);
        }
        Ok(self
            .backend
            .as_mut()
            .map(|b| b.as_mut())
            .expect("made above"))
    }

    /// The encodings' counts (None when the backend does not count them; all zero before it
    /// is made).
    pub fn stats(&self) -> Option<EncodeStats> {
        match &self.backend {
            Some(backend) => backend.encode_stats(),
            None => Some(EncodeStats::default()),
        }
    }
}

/// LASSO codes of the rows `rows` (increasing) of the `total` a whole run encodes `batch` at a
/// time, in the whole run's batches (cut to `rows`) on `backend`; `image(i)` is row i (model
/// units). `progress` is told the rows done after each batch; `None` when `stop`
/// said so (before a batch, or inside one where the backend asks).
#[allow(clippy::too_many_arguments)]
pub fn encode_like_whole(
    backend: &mut EncodeBackend,
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
        match backend
            .get(like)?
            .encode_or_stop(&images, lam, iterations, stop)?
        {
            Some(batch) => codes.extend(batch),
            None => return Ok(None),
        }
        done += group.len();
        progress(done);
    }
    Ok(Some(codes))
}

/// Codes of a batch of images, or None when it stopped inside it.
pub type EncodeOrStop<'a> = dyn FnMut(&[f32]) -> Result<Option<Vec<f32>>> + 'a;

/// Encodes `n` rows `batch` at a time: `images` gives a range of rows (model units), `encode`
/// their codes (None: it stopped), `sink` takes them, `progress` is told the rows done. False
/// when `stop` said so before a batch, or `encode` stopped inside one.
pub fn encode_batches(
    encode: &mut EncodeOrStop,
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
        let Some(codes) = encode(&images(start..end))? else {
            return Ok(false);
        };
        sink(&codes)?;
        progress(end);
    }
    Ok(true)
}

/// A z for every code (rows of p), in the CPU products' one order (a shard's rows as the single
/// run's, on any CPU).
pub fn reconstruct(a: &[f32], (d, p): (usize, usize), codes: &[f32]) -> Vec<f32> {
    let mut out = vec![0f32; codes.len() / p * d];
    let transposed = crate::backend::cpu::packed::PackedOperand::from_transpose(a, d, p);
    transposed.product(codes, None, &mut out);
    out
}

/// Rows encoded, with what the report and the picture need.
pub struct Encoded {
    /// Rows n.
    pub n: usize,
    /// Pixels d and atoms p.
    pub d: usize,
    pub p: usize,
    /// The images' geometry.
    pub height: usize,
    pub width: usize,
    /// n × p.
    pub codes: Vec<f32>,
    /// n × d, A z.
    pub reconstructions: Vec<f32>,
    /// n × d, model units.
    pub originals: Vec<f32>,
}

/// Writes a single run's files (codes.npy, reconstructions.npy, dictionary.npy,
/// reconstructions.png, report.json) for `encoded`; `base` holds the report's fields that do
/// not depend on the codes, `seconds` tells the run's duration. Returns the report, the mean
/// squared error per pixel and the mean non-zero atoms.
pub fn write_encoded(
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
        "rmld_build": crate::BUILD,
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

/// The rows the shards of an encoding run encoded (checked, in order) with the dictionary,
/// the report's fields that do not depend on the codes (the first shard's, the LASSO counts
/// summed) and the longest shard's seconds.
pub fn join_encoded(shards: &[ShardFiles]) -> Result<(Encoded, Vec<f32>, Value, f64)> {
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
    if let Some(lasso) = merged_lasso_json(&lasso) {
        base.insert("lasso".into(), lasso);
    }
    // The single run's signs of a degenerate run, from the whole set's codes and LASSO counts.
    let counts = |k: &str| {
        base.get("lasso")
            .and_then(|l| l[k].as_u64())
            .map(|v| v as usize)
    };
    let capped = counts("rows").zip(counts("rows_at_cap"));
    let mut degenerate = crate::diagnostics::degenerate::assess(0, 0, None, capped);
    degenerate.codes_all_zero =
        !encoded.codes.is_empty() && encoded.codes.iter().all(|&v| v == 0.0);
    base.insert("degenerate".into(), serde_json::json!(degenerate));
    Ok((encoded, dictionary, Value::Object(base), seconds))
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
