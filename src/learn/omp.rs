//! Orthogonal matching pursuit on a dictionary of unit-norm atoms, its error curve and the dictionary's coherence.

use rayon::prelude::*;

use super::linalg::{dot, solve_spd};

/// A dictionary of unit-norm atoms stored atom by atom (column-major d × p).
#[derive(Clone, Debug)]
pub(crate) struct Atoms {
    /// Values per atom.
    pub d: usize,
    /// The atoms one after another.
    pub cols: Vec<f64>,
}

impl Atoms {
    /// Atoms held.
    pub fn len(&self) -> usize {
        self.cols.len() / self.d.max(1)
    }
    /// Atom k.
    pub fn col(&self, k: usize) -> &[f64] {
        &self.cols[k * self.d..(k + 1) * self.d]
    }
}

/// Orthogonal matching pursuit of x on `atoms` for up to `iterations` steps. Returns the selected
/// atoms, their least-squares coefficients and the relative RMS error ‖x − x̂‖/‖x‖ after each step.
pub(crate) fn omp(atoms: &Atoms, x: &[f64], iterations: usize) -> (Vec<usize>, Vec<f64>, Vec<f64>) {
    let norm_x = dot(x, x).sqrt();
    let mut selected: Vec<usize> = Vec::new();
    let mut coef: Vec<f64> = Vec::new();
    let mut errors = Vec::new();
    let mut r = x.to_vec();
    for _ in 0..iterations.min(atoms.len()) {
        let best = (0..atoms.len())
            .filter(|k| !selected.contains(k))
            .map(|k| (k, dot(atoms.col(k), &r).abs()))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let Some((k, c)) = best else { break };
        if c.is_nan() || c <= 1e-14 * norm_x.max(1e-300) {
            break;
        }
        selected.push(k);
        let l = selected.len();
        let mut gram = vec![0.0; l * l];
        let mut rhs = vec![0.0; l];
        for i in 0..l {
            rhs[i] = dot(atoms.col(selected[i]), x);
            for j in 0..l {
                gram[i * l + j] = dot(atoms.col(selected[i]), atoms.col(selected[j]));
            }
            gram[i * l + i] += 1e-12;
        }
        match solve_spd(&gram, &rhs, l) {
            Some(c) => coef = c,
            None => {
                selected.pop();
                break;
            }
        }
        r.copy_from_slice(x);
        for (&k, &c) in selected.iter().zip(&coef) {
            for (ri, a) in r.iter_mut().zip(atoms.col(k)) {
                *ri -= c * a;
            }
        }
        errors.push(if norm_x > 0.0 {
            dot(&r, &r).sqrt() / norm_x
        } else {
            0.0
        });
    }
    (selected, coef, errors)
}

/// The largest |⟨d_i, d_j⟩| over distinct atoms (the dictionary's coherence).
pub(crate) fn coherence(atoms: &Atoms) -> f64 {
    let p = atoms.len();
    let mut worst: f64 = 0.0;
    for i in 0..p {
        for j in i + 1..p {
            worst = worst.max(dot(atoms.col(i), atoms.col(j)).abs());
        }
    }
    worst
}

/// Mean OMP relative RMS error after 1..=`max_iterations` steps of the signals on `atoms` (a
/// signal whose OMP stops early keeps its last error).
pub(crate) fn omp_error_curve(
    atoms: &Atoms,
    signals: &[&Vec<f64>],
    max_iterations: usize,
) -> Vec<f64> {
    let sums = signals
        .par_iter()
        .map(|x| {
            let (_, _, errs) = omp(atoms, x, max_iterations);
            (0..max_iterations)
                .map(|i| errs.get(i).or(errs.last()).copied().unwrap_or(1.0))
                .collect::<Vec<f64>>()
        })
        .reduce(
            || vec![0.0; max_iterations],
            |a, b| a.iter().zip(&b).map(|(x, y)| x + y).collect(),
        );
    sums.iter()
        .map(|v| v / signals.len().max(1) as f64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn omp_recovers_an_exact_two_atom_signal() {
        // Six orthonormal atoms and a seventh, (e0 + e1)/√2: x = 3·e1 + 2·e4 takes two steps.
        let mut cols = vec![0.0; 7 * 6];
        (0..6).for_each(|k| cols[k * 6 + k] = 1.0);
        cols[36] = std::f64::consts::FRAC_1_SQRT_2;
        cols[37] = std::f64::consts::FRAC_1_SQRT_2;
        let atoms = Atoms { d: 6, cols };
        let x = [0.0, 3.0, 0.0, 0.0, 2.0, 0.0];
        let (sel, coef, errs) = omp(&atoms, &x, 2);
        assert_eq!(sel, vec![1, 4], "selected {sel:?}");
        assert!(
            (coef[0] - 3.0).abs() < 1e-9 && (coef[1] - 2.0).abs() < 1e-9,
            "{coef:?}"
        );
        let first = (4.0f64 / 13.0).sqrt();
        assert!(
            (errs[0] - first).abs() < 1e-12,
            "errors {errs:?}, first should be {first}"
        );
        assert!(errs[1] < 1e-9, "errors {errs:?}");
    }
}
