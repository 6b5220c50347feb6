//! Euclidean nearest-neighbour and mean pairwise distances by matrix products (‖a‖² + ‖b‖² − 2a·b), blocked, on rayon.
//!
//! Rows are images of `d` values, row-major. The products run one block at a time (at most
//! [`QUERY_BLOCK`] × [`REFERENCE_BLOCK`] dot products per worker; each reference block packed
//! once), so memory stays bounded whatever the number of images, on the chains' packed kernels
//! (`backend::cpu::packed`): each dot product is one FMA chain over d in order, so a set scores
//! the same bits on every CPU (on `gemm` the order followed the CPU's kernels and cache sizes).
//! Rayon spreads the query blocks over the cores, and results are combined in block order, so
//! they do not depend on the number of threads.

use rayon::prelude::*;

use crate::backend::cpu::packed::PackedOperand;

/// Query rows per block (one rayon task).
pub const QUERY_BLOCK: usize = 256;
/// Reference rows per packed block (one product against each query block).
pub const REFERENCE_BLOCK: usize = 2048;

/// A cooperative stop: polled between blocks; `true` abandons the computation.
pub type Stop<'a> = &'a (dyn Fn() -> bool + Sync);

/// Squared norm of each row, accumulated in f64.
fn squared_norms(rows: &[f32], d: usize) -> Vec<f32> {
    rows.chunks(d.max(1))
        .map(|r| r.iter().map(|&v| (v as f64) * (v as f64)).sum::<f64>() as f32)
        .collect()
}

/// The exact Euclidean distance of two rows, accumulated in f64.
pub fn exact_distance(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| {
            let v = x as f64 - y as f64;
            v * v
        })
        .sum::<f64>()
        .sqrt()
}

/// For each query row, the Euclidean distance to its nearest reference row and that row's index.
///
/// Candidates are ranked by ‖q‖² + ‖r‖² − 2 q·r in f32 (clamped at 0); the winner's distance is
/// then recomputed exactly in f64, so a query that is a copy of a reference row gets exactly 0.
/// Only rankings between references within f32 rounding of each other can differ from an exact
/// search, and then the distance reported is that of a reference equally close up to rounding.
/// `None` when `stop` asked to stop, or when there are no references.
pub fn nearest_neighbours(
    queries: &[f32],
    references: &[f32],
    d: usize,
    stop: Stop,
) -> Option<Vec<(f64, usize)>> {
    if references.is_empty() || d == 0 {
        return None;
    }
    let reference_norms = squared_norms(references, d);
    let query_norms = squared_norms(queries, d);
    let mut best = vec![(f32::INFINITY, 0usize); queries.len() / d];
    // Each reference block is packed once and met by every query block; a query still takes its
    // candidates in reference order, so the winner does not depend on the blocking.
    for (b, refs) in references.chunks(REFERENCE_BLOCK * d).enumerate() {
        if stop() {
            return None;
        }
        let (n, first) = (refs.len() / d, b * REFERENCE_BLOCK);
        let packed = PackedOperand::from_transpose(refs, n, d);
        queries
            .par_chunks(QUERY_BLOCK * d)
            .zip(best.par_chunks_mut(QUERY_BLOCK))
            .zip(query_norms.par_chunks(QUERY_BLOCK))
            .for_each(|((block, best), query_norms)| {
                let mut dots = vec![0f32; best.len() * n];
                packed.product(block, None, &mut dots);
                for ((row, best), &qn) in dots.chunks(n).zip(best).zip(query_norms) {
                    for (j, &dot) in row.iter().enumerate() {
                        let v = (qn + reference_norms[first + j] - 2.0 * dot).max(0.0);
                        if v < best.0 {
                            *best = (v, first + j);
                        }
                    }
                }
            });
    }
    Some(
        best.par_iter()
            .zip(queries.par_chunks(d))
            .map(|(&(_, j), q)| (exact_distance(q, &references[j * d..(j + 1) * d]), j))
            .collect(),
    )
}

/// The mean Euclidean distance over all unordered pairs of distinct rows (i < j); `None` with
/// fewer than two rows.
///
/// The rows are first centred on their mean (distances do not change; the norms, and with them
/// the rounding of ‖a‖² + ‖b‖² − 2a·b, shrink), so a set of identical rows gives exactly 0.
pub fn mean_pairwise_distance(rows: &[f32], d: usize) -> Option<f64> {
    let n = rows.len() / d.max(1);
    if n < 2 || d == 0 {
        return None;
    }
    let mut mean = vec![0f64; d];
    for row in rows.chunks(d) {
        mean.iter_mut().zip(row).for_each(|(m, &v)| *m += v as f64);
    }
    let mean: Vec<f32> = mean.iter().map(|&m| (m / n as f64) as f32).collect();
    let centred: Vec<f32> = rows
        .chunks(d)
        .flat_map(|row| row.iter().zip(&mean).map(|(&v, &m)| v - m))
        .collect();
    let norms = squared_norms(&centred, d);
    // Each block of "others" is packed once and met by every query block; a query block adds its
    // pairs in the same order whatever the blocking of the work.
    let mut sums = vec![0f64; n.div_ceil(QUERY_BLOCK)];
    for (c, others) in centred.chunks(REFERENCE_BLOCK * d).enumerate() {
        let (k, start) = (others.len() / d, c * REFERENCE_BLOCK);
        let packed = PackedOperand::from_transpose(others, k, d);
        centred
            .par_chunks(QUERY_BLOCK * d)
            .zip(sums.par_iter_mut())
            .enumerate()
            .for_each(|(b, (block, sum))| {
                let (m, first) = (block.len() / d, b * QUERY_BLOCK);
                if start + k <= first + 1 {
                    return; // every pair of this block has j <= i
                }
                let mut dots = vec![0f32; m * k];
                packed.product(block, None, &mut dots);
                for (i, row) in dots.chunks(k).enumerate() {
                    let gi = first + i;
                    for (j, &dot) in row.iter().enumerate() {
                        let gj = start + j;
                        if gj > gi {
                            let v = (norms[gi] + norms[gj] - 2.0 * dot).max(0.0);
                            *sum += (v as f64).sqrt();
                        }
                    }
                }
            });
    }
    let pairs = n as f64 * (n as f64 - 1.0) / 2.0;
    Some(sums.iter().sum::<f64>() / pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn never() -> bool {
        false
    }

    /// A small deterministic pseudo-random matrix.
    fn matrix(n: usize, d: usize, seed: u32) -> Vec<f32> {
        (0..n * d)
            .map(|i| {
                let x = (i as u32)
                    .wrapping_mul(2654435761)
                    .wrapping_add(seed.wrapping_mul(97));
                (x >> 8) as f32 / (1u32 << 24) as f32
            })
            .collect()
    }

    #[test]
    fn nearest_neighbours_match_brute_force_across_blocks() {
        // More references than one block and more queries than one block.
        let d = 7;
        let refs = matrix(REFERENCE_BLOCK + 37, d, 1);
        let queries = matrix(QUERY_BLOCK + 5, d, 2);
        let got = nearest_neighbours(&queries, &refs, d, &never).unwrap();
        for (i, q) in queries.chunks(d).enumerate() {
            let want = refs
                .chunks(d)
                .map(|r| exact_distance(q, r))
                .fold(f64::INFINITY, f64::min);
            assert!(
                (got[i].0 - want).abs() < 1e-3,
                "{i}: {} vs {want}",
                got[i].0
            );
        }
    }

    #[test]
    fn copies_are_at_distance_exactly_zero() {
        let d = 784;
        let refs = matrix(300, d, 3);
        let queries = refs[50 * d..60 * d].to_vec();
        let got = nearest_neighbours(&queries, &refs, d, &never).unwrap();
        for (k, &(dist, j)) in got.iter().enumerate() {
            assert_eq!(dist, 0.0);
            assert_eq!(j, 50 + k);
        }
    }

    #[test]
    fn mean_pairwise_matches_brute_force_and_is_zero_for_identical_rows() {
        let d = 5;
        let rows = matrix(QUERY_BLOCK + REFERENCE_BLOCK / 4, d, 4);
        let n = rows.len() / d;
        let mut sum = 0.0;
        for i in 0..n {
            for j in i + 1..n {
                sum += exact_distance(&rows[i * d..(i + 1) * d], &rows[j * d..(j + 1) * d]);
            }
        }
        let want = sum / (n * (n - 1) / 2) as f64;
        let got = mean_pairwise_distance(&rows, d).unwrap();
        assert!((got - want).abs() < 1e-4 * want, "{got} vs {want}");
        let same: Vec<f32> = rows[..d].repeat(40);
        assert_eq!(mean_pairwise_distance(&same, d), Some(0.0));
        assert_eq!(mean_pairwise_distance(&rows[..d], d), None);
    }

    #[test]
    fn a_stop_request_abandons_the_search() {
        let refs = matrix(10, 3, 5);
        assert!(nearest_neighbours(&refs, &refs, 3, &|| true).is_none());
    }
}
