//! Interpolants between a class's images (SMOTE's draws): the share of method "deform"'s draws that a class brought up past four new images per original takes (docs/usefulness.md).
//!
//! A class of n images asked for g new ones gets, past the first 4 n (each image's four moved
//! deformations), half its draws as interpolants: x = a + λ (b − a), a each image in turn (a
//! permutation per round), b one of a's k = min(5, n − 1) nearest images of the class (Euclidean
//! on the 0..1 scale), λ uniform on [0, 1). On imbalanced cuts (a class of 20 brought to 400)
//! deformations alone widen the rare class and a linear model gives it the common classes'
//! ground; the interpolants fill the class between its images instead, and the mixture is above
//! SMOTE and deformations alone for logistic regression on Fashion-MNIST while costing MNIST a
//! few tenths. At four new images per original or fewer nothing changes.

use rayon::prelude::*;

use super::neighbours::nearest;
use crate::rng::{index_from_word, uniform_from_word, Purpose, Stream};

/// New images per original a class's deformations take before interpolants join them: one per
/// anchor move (right, left, down, up).
pub const DEFORMATIONS_PER_IMAGE: usize = 4;

/// Nearest images of the class an interpolant may lean towards (SMOTE's `k_neighbors`).
pub const NEIGHBOURS: usize = 5;

/// Of `count` new images for a class of `n` images, how many are interpolants: half of those
/// past [`DEFORMATIONS_PER_IMAGE`] per image (rounded down); none for a class of one image.
pub fn interpolant_count(n: usize, count: usize) -> usize {
    if n < 2 {
        return 0;
    }
    count.saturating_sub(DEFORMATIONS_PER_IMAGE * n) / 2
}

/// The order in which `n` images take `count` turns: every image in turn, a permutation per
/// round drawn from (`seed`, `label`, round) under `purpose`.
pub fn turns(n: usize, count: usize, seed: u64, label: u32, purpose: Purpose) -> Vec<usize> {
    let mut out = Vec::with_capacity(count);
    let mut round = 0u32;
    while out.len() < count && n > 0 {
        let mut words = vec![0u32; n];
        Stream::new(seed, label, round, 0, purpose).fill_u32(&mut words);
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            order.swap(i, index_from_word(words[i], i as u32 + 1) as usize);
        }
        out.extend(order.into_iter().take(count - out.len()));
        round += 1;
    }
    out
}

/// The [`NEIGHBOURS`] nearest other images of each image in `bases` (rows of `d` pixels), by
/// image (empty for the images no interpolant starts from). O(n d) per base, a base per thread
/// (all 6,000 of an MNIST digit as bases: 3·10¹⁰ operations).
fn class_neighbours(images: &[f32], d: usize, bases: &[usize]) -> Vec<Vec<usize>> {
    let n = images.len() / d.max(1);
    let row = |i: usize| &images[i * d..(i + 1) * d];
    let mut wanted = vec![false; n];
    bases.iter().for_each(|&a| wanted[a] = true);
    (0..n)
        .into_par_iter()
        .map(|i| match wanted[i] {
            true => nearest(
                row(i),
                (0..n).filter(|&j| j != i).map(|j| (j, row(j))),
                NEIGHBOURS,
            ),
            false => Vec::new(),
        })
        .collect()
}

/// `count` interpolants of the class whose `n` images (rows of `d` pixels, 0..1 scale) are
/// `images`, as rows of `d`, with the image each starts from: interpolant i starts from
/// [`turns`]' i-th image a and leans a uniform λ of the way to one of its nearest images, both
/// drawn from (`seed`, `label`, i).
pub fn interpolants(
    images: &[f32],
    d: usize,
    count: usize,
    seed: u64,
    label: u32,
) -> (Vec<f32>, Vec<usize>) {
    let n = images.len() / d.max(1);
    if n < 2 || count == 0 {
        return (Vec::new(), Vec::new());
    }
    let bases = turns(n, count, seed, label, Purpose::InterpolationBases);
    let neighbours = class_neighbours(images, d, &bases);
    let mut out = Vec::with_capacity(count * d);
    for (i, &a) in bases.iter().enumerate() {
        let words = Stream::new(seed, label, i as u32, 0, Purpose::Interpolation).block(0);
        let near = &neighbours[a];
        let b = near[index_from_word(words[0], near.len() as u32) as usize];
        let step = uniform_from_word(words[1]);
        let (from, to) = (&images[a * d..(a + 1) * d], &images[b * d..(b + 1) * d]);
        out.extend(from.iter().zip(to).map(|(&x, &y)| x + step * (y - x)));
    }
    (out, bases)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolants_join_only_past_four_per_image() {
        assert_eq!(interpolant_count(50, 200), 0);
        assert_eq!(interpolant_count(50, 100), 0);
        assert_eq!(interpolant_count(20, 380), 150);
        assert_eq!(interpolant_count(20, 81), 0);
        assert_eq!(interpolant_count(20, 82), 1);
        assert_eq!(interpolant_count(1, 100), 0);
    }

    /// Every interpolant lies on the segment from its start to one of the start's nearest
    /// images, and every image starts one per round.
    #[test]
    fn interpolants_lie_between_a_start_and_a_neighbour() {
        let d = 3;
        let images: Vec<f32> = (0..8 * d).map(|i| ((i * 37) % 11) as f32 / 10.0).collect();
        let (draws, starts) = interpolants(&images, d, 20, 9, 2);
        assert_eq!((draws.len(), starts.len()), (20 * d, 20));
        let mut first_round = starts[..8].to_vec();
        first_round.sort_unstable();
        assert_eq!(first_round, (0..8).collect::<Vec<_>>());
        let nearest = class_neighbours(&images, d, &starts);
        for (i, (draw, &a)) in draws.chunks(d).zip(&starts).enumerate() {
            let from = &images[a * d..(a + 1) * d];
            let on_a_segment = nearest[a].iter().any(|&b| {
                let to = &images[b * d..(b + 1) * d];
                // One λ for every pixel: (draw − from) = λ (to − from), 0 ≤ λ < 1.
                let lambdas: Vec<f32> = (0..d)
                    .filter(|&p| (to[p] - from[p]).abs() > 1e-6)
                    .map(|p| (draw[p] - from[p]) / (to[p] - from[p]))
                    .collect();
                let still = (0..d)
                    .filter(|&p| (to[p] - from[p]).abs() <= 1e-6)
                    .all(|p| (draw[p] - from[p]).abs() < 1e-6);
                still
                    && lambdas.iter().all(|&l| (-1e-5..1.0 + 1e-5).contains(&l))
                    && lambdas.windows(2).all(|w| (w[0] - w[1]).abs() < 1e-4)
            });
            assert!(on_a_segment, "interpolant {i} from image {a}: {draw:?}");
        }
    }
}
