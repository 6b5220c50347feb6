//! Nearest images in pixel space: the k candidates nearest an anchor, ties by index, shared by the tangent target's span and deform's interpolants.

/// The indices of the `k` of `candidates` (index, row) nearest `anchor` (squared Euclidean
/// distance summed in f64), nearest first, ties by index, so the choice is deterministic.
pub fn nearest<R: AsRef<[f32]>>(
    anchor: &[f32],
    candidates: impl Iterator<Item = (usize, R)>,
    k: usize,
) -> Vec<usize> {
    let mut by_distance: Vec<(f64, usize)> = candidates
        .map(|(i, row)| {
            let distance = row
                .as_ref()
                .iter()
                .zip(anchor)
                .map(|(&x, &y)| (x as f64 - y as f64).powi(2))
                .sum::<f64>();
            (distance, i)
        })
        .collect();
    let order = |a: &(f64, usize), b: &(f64, usize)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
    if k < by_distance.len() {
        by_distance.select_nth_unstable_by(k, order);
        by_distance.truncate(k);
    }
    by_distance.sort_by(order);
    by_distance.into_iter().map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_come_first_and_ties_go_by_index() {
        // One-pixel rows at 0, 1, 3, 7 and -1 (tied with 1 from 0).
        let rows = [[0.0f32], [1.0], [3.0], [7.0], [-1.0]];
        let from_zero = nearest(&rows[0], (1..5).map(|j| (j, rows[j])), 3);
        assert_eq!(from_zero, vec![1, 4, 2]);
        let all = nearest(&rows[3], (0..3).map(|j| (j, rows[j])), 10);
        assert_eq!(all, vec![2, 1, 0]);
    }
}
