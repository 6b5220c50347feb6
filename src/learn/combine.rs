//! Algorithm 2's final dictionary: K-means over the signals' best atom parameters, after the family's fixed atoms; and its pictures.

use std::path::Path;

use super::kmeans::kmeans;
use super::omp::Atoms;
use super::signal_chain::SignalResult;
use crate::io;
use crate::model::{AtomFamily, Dictionary};
use crate::Result;

/// The final dictionary from the signals' best parameters (Algorithm 2): K-means with `centers`
/// centres (over (Trise, Tdecay) for EDA, replicated over the onsets; over all parameters for
/// Gabor), after the family's fixed atoms. Returns the atoms and the centres' parameters.
pub(crate) fn combine(
    family: &AtomFamily,
    results: &[&SignalResult],
    centers: usize,
    seed: u64,
    stream: u32,
) -> (Atoms, Vec<Vec<f64>>) {
    let points: Vec<Vec<f64>> = results
        .iter()
        .flat_map(|r| r.best_params.iter().cloned())
        .collect();
    let q = family.q();
    let units = family.units();
    let shifts = family.shifts();
    let dims: Vec<usize> = if shifts.is_empty() {
        (0..q).collect()
    } else {
        (1..q).collect()
    };
    let centres = kmeans(&points, &dims, &units, centers, seed, stream);
    let d = family.dim();
    // The fixed atoms, less those equal to an earlier one up to sign (Table III's three constant
    // tonic atoms are one atom up to sign; the learned dictionary keeps one).
    let mut cols: Vec<f64> = Vec::new();
    for a in family.fixed_atoms() {
        let duplicate = cols
            .chunks(d)
            .any(|b| b.iter().zip(&a).map(|(x, y)| x * y).sum::<f64>().abs() > 1.0 - 1e-12);
        if !duplicate {
            cols.extend_from_slice(&a);
        }
    }
    let mut params = Vec::new();
    let mut a = vec![0.0; d];
    for c in &centres {
        let thetas: Vec<Vec<f64>> = if shifts.is_empty() {
            vec![c.clone()]
        } else {
            shifts
                .iter()
                .map(|&t0| std::iter::once(t0).chain(c.iter().copied()).collect())
                .collect()
        };
        for t in thetas {
            let t: Vec<f64> = t
                .iter()
                .zip(family.ranges())
                .map(|(&v, (lo, hi))| v.clamp(lo, hi))
                .collect();
            if family.atom(&t, &mut a) {
                cols.extend_from_slice(&a);
                params.push(t);
            }
        }
    }
    (Atoms { d, cols }, params)
}

/// Atoms as the crate's d × p row-major f32 dictionary.
pub(crate) fn to_dictionary(atoms: &Atoms) -> Dictionary {
    let (d, p) = (atoms.d, atoms.len());
    let mut a = vec![0f32; d * p];
    for j in 0..p {
        for (i, &v) in atoms.col(j).iter().enumerate() {
            a[i * p + j] = v as f32;
        }
    }
    Dictionary { d, p, a }
}

/// Writes at most 256 atoms as a PNG grid: Gabor atoms as images (scaled by their largest
/// |value|), 1-D atoms as 32-pixel-high line plots.
pub(crate) fn write_atoms_png(path: &Path, family: &AtomFamily, atoms: &Atoms) -> Result<()> {
    let shown = atoms.len().min(256);
    let d = atoms.d;
    match *family {
        AtomFamily::Gabor { side } => {
            let mut tiles = Vec::with_capacity(shown * d);
            for k in 0..shown {
                let col = atoms.col(k);
                let top = col.iter().fold(1e-12f64, |m, v| m.max(v.abs()));
                tiles.extend(col.iter().map(|v| (v / top) as f32));
            }
            io::write_png_grid(path, &[(&tiles, shown)], side, side, 16, (-1.0, 1.0), 3)
        }
        AtomFamily::Eda { .. } => {
            let h = 32usize;
            let mut tiles = vec![0f32; shown * h * d];
            for k in 0..shown {
                let col = atoms.col(k);
                let lo = col.iter().cloned().fold(f64::INFINITY, f64::min);
                let hi = col.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let span = (hi - lo).max(1e-12);
                let row = |v: f64| ((h - 1) as f64 * (1.0 - (v - lo) / span)).round() as usize;
                let tile = &mut tiles[k * h * d..(k + 1) * h * d];
                for t in 0..d {
                    let (a, b) = if t + 1 < d {
                        (row(col[t]), row(col[t + 1]))
                    } else {
                        (row(col[t]), row(col[t]))
                    };
                    for y in a.min(b)..=a.max(b) {
                        tile[y * d + t] = 1.0;
                    }
                }
            }
            io::write_png_grid(path, &[(&tiles, shown)], h, d, 4, (0.0, 1.0), 2)
        }
    }
}
