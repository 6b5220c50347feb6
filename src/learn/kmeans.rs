//! K-means with a k-means++ start from the Philox stream (Algorithm 2's combination of the signals' atoms).

use rand::Rng;

use crate::rng::{PhiloxRng, Purpose, Stream};

/// K-means (k-means++ start from the Philox stream, then Lloyd) of `points` (each of the
/// dimensions `dims`, distances scaled by `units`), `k` centres; fewer points than k gives them all.
pub(crate) fn kmeans(
    points: &[Vec<f64>],
    dims: &[usize],
    units: &[f64],
    k: usize,
    seed: u64,
    stream: u32,
) -> Vec<Vec<f64>> {
    let pts: Vec<Vec<f64>> = points
        .iter()
        .map(|p| dims.iter().map(|&j| p[j] / units[j]).collect())
        .collect();
    if pts.len() <= k {
        return pts
            .iter()
            .map(|p| p.iter().zip(dims).map(|(v, &j)| v * units[j]).collect())
            .collect();
    }
    let dist =
        |a: &[f64], b: &[f64]| -> f64 { a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum() };
    let mut rng = PhiloxRng::new(Stream::new(
        seed,
        crate::rng::SHARED_CHAIN,
        stream,
        1,
        Purpose::DictionaryLearning,
    ));
    let mut centres = vec![pts[rng.random_range(0..pts.len())].clone()];
    let mut nearest: Vec<f64> = pts.iter().map(|p| dist(p, &centres[0])).collect();
    while centres.len() < k {
        let total: f64 = nearest.iter().sum();
        let mut u = rng.random::<f64>() * total;
        let mut pick = pts.len() - 1;
        for (i, w) in nearest.iter().enumerate() {
            if u < *w {
                pick = i;
                break;
            }
            u -= w;
        }
        centres.push(pts[pick].clone());
        for (n, p) in nearest.iter_mut().zip(&pts) {
            *n = n.min(dist(p, &pts[pick]));
        }
    }
    let dim = dims.len();
    let mut assign = vec![usize::MAX; pts.len()];
    for _ in 0..100 {
        let mut changed = false;
        for (a, p) in assign.iter_mut().zip(&pts) {
            let best = (0..k)
                .min_by(|&i, &j| dist(p, &centres[i]).total_cmp(&dist(p, &centres[j])))
                .unwrap_or(0);
            if *a != best {
                *a = best;
                changed = true;
            }
        }
        let mut sums = vec![vec![0.0; dim]; k];
        let mut counts = vec![0usize; k];
        for (&a, p) in assign.iter().zip(&pts) {
            counts[a] += 1;
            sums[a].iter_mut().zip(p).for_each(|(s, v)| *s += v);
        }
        for c in 0..k {
            if counts[c] > 0 {
                centres[c] = sums[c].iter().map(|s| s / counts[c] as f64).collect();
            }
        }
        if !changed {
            break;
        }
    }
    centres
        .iter()
        .map(|c| c.iter().zip(dims).map(|(v, &j)| v * units[j]).collect())
        .collect()
}
