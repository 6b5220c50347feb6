//! The atom indices z of a signal's slots: Gibbs draws with replacement, MH moves under Wallenius' prior without.

use rand::Rng;

use super::linalg::dot;
use super::omp::Atoms;
use crate::math::Portable;
use crate::rng::PhiloxRng;

/// One categorical draw of a slot's atom from its Gibbs weights π_k·exp(−γε/2 · s_l(s_l −
/// 2 e_lᵀφ_k)), e_l the residual with the slot's own atom added back, the atoms `excluded` says
/// no (weight 0); `fallback` when rounding leaves no pick. Returns the pick and the weights' sum
/// (relative to the largest, so at least 1 unless every atom is excluded).
#[allow(clippy::too_many_arguments)]
pub(crate) fn draw_slot_index(
    rng: &mut PhiloxRng,
    atoms: &Atoms,
    pi: &[f64],
    gamma: f64,
    s_l: f64,
    e: &[f64],
    excluded: impl Fn(usize) -> bool,
    fallback: usize,
) -> (usize, f64) {
    let logits: Vec<f64> = (0..pi.len())
        .map(|k| {
            if excluded(k) {
                f64::NEG_INFINITY
            } else {
                pi[k].max(1e-300).ln_portable()
                    - 0.5 * gamma * s_l * (s_l - 2.0 * dot(e, atoms.col(k)))
            }
        })
        .collect();
    let top = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = logits.iter().map(|v| (v - top).exp_portable()).collect();
    let total: f64 = weights.iter().sum();
    let mut u = rng.random::<f64>() * total;
    for (k, w) in weights.iter().enumerate() {
        if *w > 0.0 && u < *w {
            return (k, total);
        }
        u -= w;
    }
    (fallback, total)
}

/// Step 1 without replacement: z is an ordered draw of L distinct atoms from Wallenius' urn
/// with weights π, W(z) = Π_r π_{z_r} / (1 − Σ_{s<r} π_{z_s}) (the sequential draw whose unordered
/// set is Wallenius-distributed). Per slot, an MH step whose proposal is the with-replacement
/// Gibbs weights π_k·L_k restricted to the atoms the other slots do not hold (the proposal
/// "tailored to the Wallenius prior" of the paper's Section III-C): π_k·L_k cancels against the
/// target, and the acceptance ratio is D(z')/D(z), D(z) = Π_r 1/(1 − Σ_{s<r} π_{z_s}). Then one
/// symmetric swap of two slots' atoms (with K = L atoms, the only move that changes z), accepted
/// by the full ratio. Every proposal draws the same number of uniforms, accepted or not.
pub(crate) fn index_mh_without_replacement(
    rng: &mut PhiloxRng,
    atoms: &Atoms,
    pi: &[f64],
    gamma: f64,
    s: &[f64],
    z: &mut [usize],
    r: &mut [f64],
) {
    let slots = z.len();
    let log_d = |z: &[usize]| -> f64 {
        let mut used = 0.0f64;
        let mut acc = 0.0;
        for &k in z {
            acc -= (1.0 - used).max(1e-300).ln_portable();
            used += pi[k];
        }
        acc
    };
    let add = |r: &mut [f64], k: usize, c: f64| {
        for (ri, a) in r.iter_mut().zip(atoms.col(k)) {
            *ri += c * a;
        }
    };
    for li in 0..slots {
        add(r, z[li], s[li]);
        let held = |k: usize| z.iter().enumerate().any(|(j, &zk)| j != li && zk == k);
        let (pick, total) = draw_slot_index(rng, atoms, pi, gamma, s[li], r, held, z[li]);
        let mut proposed = z.to_vec();
        proposed[li] = pick;
        let log_ratio = log_d(&proposed) - log_d(z);
        let accept: f64 = rng.random();
        if total.is_finite() && total > 0.0 && accept.ln_portable() < log_ratio {
            z[li] = pick;
        }
        add(r, z[li], -s[li]);
    }
    if slots >= 2 {
        let a = (rng.random::<f64>() * slots as f64) as usize % slots;
        let b = (a + 1 + (rng.random::<f64>() * (slots - 1) as f64) as usize % (slots - 1)) % slots;
        // Residual change of exchanging the two slots' atoms: e' = r + (s_a − s_b)(φ_{z_a} − φ_{z_b}).
        let (ka, kb) = (z[a], z[b]);
        let mut swapped = z.to_vec();
        swapped.swap(a, b);
        let delta = s[a] - s[b];
        let new_r: Vec<f64> = r
            .iter()
            .zip(atoms.col(ka).iter().zip(atoms.col(kb)))
            .map(|(ri, (pa, pb))| ri + delta * (pa - pb))
            .collect();
        let log_prior = |z: &[usize]| -> f64 {
            z.iter()
                .map(|&k| pi[k].max(1e-300).ln_portable())
                .sum::<f64>()
                + log_d(z)
        };
        let log_ratio =
            log_prior(&swapped) - log_prior(z) - 0.5 * gamma * (dot(&new_r, &new_r) - dot(r, r));
        let accept: f64 = rng.random();
        if accept.ln_portable() < log_ratio {
            z.swap(a, b);
            r.copy_from_slice(&new_r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Purpose, Stream};

    fn rng(i: u32) -> PhiloxRng {
        PhiloxRng::new(Stream::new(11, i, 0, 0, Purpose::DictionaryLearning))
    }

    #[test]
    fn without_replacement_moves_sample_the_wallenius_posterior() {
        let d = 4;
        let atoms = Atoms {
            d,
            cols: vec![
                1.0, 0.0, 0.0, 0.0, //
                0.0, 1.0, 0.0, 0.0, //
                0.6, 0.0, 0.8, 0.0,
            ],
        };
        let pi = [0.5, 0.3, 0.2];
        let (gamma, s) = (2.0, [1.0, -0.5, 0.3]);
        let x = [0.7, -0.2, 0.4, 0.1];
        let residual = |z: &[usize]| -> Vec<f64> {
            let mut r = x.to_vec();
            for (&k, &c) in z.iter().zip(&s) {
                for (ri, a) in r.iter_mut().zip(atoms.col(k)) {
                    *ri -= c * a;
                }
            }
            r
        };
        let orders: Vec<[usize; 3]> = vec![
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ];
        let weight = |z: &[usize]| -> f64 {
            let mut used = 0.0;
            let mut w = 1.0;
            for &k in z {
                w *= pi[k] / (1.0 - used);
                used += pi[k];
            }
            let r = residual(z);
            w * (-0.5 * gamma * dot(&r, &r)).exp_portable()
        };
        let total: f64 = orders.iter().map(|z| weight(z)).sum();
        let mut z = vec![0, 1, 2];
        let mut r = residual(&z);
        let n = 60_000;
        let mut counts = [0usize; 6];
        for m in 0..n {
            let mut rng = rng(m);
            index_mh_without_replacement(&mut rng, &atoms, &pi, gamma, &s, &mut z, &mut r);
            let mut sorted = z.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, vec![0, 1, 2], "slots share an atom: {z:?}");
            let expect = residual(&z);
            assert!(r.iter().zip(&expect).all(|(a, b)| (a - b).abs() < 1e-12));
            counts[orders.iter().position(|o| o[..] == z[..]).unwrap()] += 1;
        }
        for (o, &c) in orders.iter().zip(&counts) {
            let p = weight(o) / total;
            let freq = c as f64 / n as f64;
            // Correlated draws: a generous effective sample size of n / 10.
            let se = (p * (1.0 - p) / (n as f64 / 10.0)).sqrt();
            assert!(
                (freq - p).abs() < 4.0 * se,
                "order {o:?}: frequency {freq}, exact {p}, se {se}"
            );
        }
    }
}
