//! Pieces of the JSON report and the picture layout shared by the runs.

use serde_json::{json, Value};

use crate::io::Dataset;

/// The dataset's description for the report.
pub fn dataset_json(dataset: &Dataset) -> Value {
    json!({
        "source": dataset.source.display().to_string(),
        "n": dataset.n,
        "d": dataset.d,
        "height": dataset.height,
        "width": dataset.width,
        "full_scale": dataset.full_scale,
        "labelled": dataset.labels.is_some(),
    })
}

/// Minimum, quartiles and maximum of per-chain values.
pub fn chain_quantiles(values: &[f64]) -> Value {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return Value::Null;
    }
    v.sort_by(f64::total_cmp);
    let q = |f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
    json!({ "min": q(0.0), "q25": q(0.25), "median": q(0.5), "q75": q(0.75), "max": q(1.0) })
}

/// Columns of the PNG grids: up to 16.
pub fn picture_columns(count: usize) -> usize {
    count.clamp(1, 16)
}

/// The process's peak resident memory (Linux: VmHWM), if the platform tells.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
