//! The LASSO encoders: monotone FISTA never raises the objective and reaches a coordinate-descent optimum; the gap stops (FISTA, ADMM) are within their tolerance.

mod common;

use rmld::backend::cpu::fista;
use rmld::backend::cpu::packed::PackedMatrix;
use rmld::model::Dictionary;

/// LASSO by cyclic coordinate descent in f64, run to convergence: the reference optimum.
fn coordinate_descent(dict: &Dictionary, x: &[f32], lam: f64) -> Vec<f64> {
    let (d, p) = (dict.d, dict.p);
    let col = |j: usize| (0..d).map(move |i| dict.a[i * p + j] as f64);
    let norms: Vec<f64> = (0..p).map(|j| col(j).map(|a| a * a).sum()).collect();
    let mut z = vec![0f64; p];
    let mut residual: Vec<f64> = x.iter().map(|&v| v as f64).collect(); // x − A z
    for _ in 0..20_000 {
        let mut change = 0f64;
        for j in 0..p {
            let rho: f64 = col(j).zip(&residual).map(|(a, r)| a * r).sum::<f64>() + norms[j] * z[j];
            let new = rho.signum() * (rho.abs() - lam).max(0.0) / norms[j];
            let diff = new - z[j];
            if diff != 0.0 {
                for (r, a) in residual.iter_mut().zip(col(j)) {
                    *r -= a * diff;
                }
                change = change.max(diff.abs());
                z[j] = new;
            }
        }
        if change < 1e-13 {
            break;
        }
    }
    z
}

fn objective(dict: &Dictionary, x: &[f32], z: &[f64], lam: f64) -> f64 {
    let az = dict.apply_f64(z);
    0.5 * az
        .iter()
        .zip(x)
        .map(|(a, &b)| (a - b as f64).powi(2))
        .sum::<f64>()
        + lam * z.iter().map(|v| v.abs()).sum::<f64>()
}

#[test]
fn objective_never_increases_and_reaches_the_optimum() {
    let (d, p, rows, lam) = (20, 60, 4, 0.05f32);
    let target = common::small_target(rows, d, p, lam, 21);
    let dict = &target.dictionary;
    let images: Vec<f32> = (0..rows).flat_map(|i| target.observations.row(i)).collect();
    let lipschitz = dict.spectral_norm_squared() as f32;
    let mut trace = Vec::new();
    let codes = fista::encode(
        &dict.a,
        d,
        p,
        lipschitz,
        &images,
        lam,
        3000,
        Some(&mut trace),
    );

    for (it, pair) in trace.windows(2).enumerate() {
        for (row, (before, after)) in pair[0].iter().zip(&pair[1]).enumerate() {
            assert!(
                after <= before,
                "row {row}: objective rose at iteration {} ({before} → {after})",
                it + 1
            );
        }
    }
    for row in 0..rows {
        let x = &images[row * d..(row + 1) * d];
        let reference = coordinate_descent(dict, x, lam as f64);
        let optimum = objective(dict, x, &reference, lam as f64);
        let z: Vec<f64> = codes[row * p..(row + 1) * p]
            .iter()
            .map(|&v| v as f64)
            .collect();
        let reached = objective(dict, x, &z, lam as f64);
        assert!(
            (reached - optimum) / optimum < 1e-5,
            "row {row}: FISTA {reached} vs optimum {optimum}"
        );
    }
}

#[test]
fn spectral_norm_matches_the_largest_eigenvalue_bound() {
    // ||A v||² ≤ σ² ||v||² for random v, and power iteration's σ² is attained (within 1%) by its vector.
    let dict = Dictionary::gaussian(30, 90, 4);
    let sigma2 = dict.spectral_norm_squared();
    for seed in 0..20 {
        let v: Vec<f64> = common::random_positions(1, 90, seed, 1.0)
            .iter()
            .map(|&x| x as f64)
            .collect();
        let av = dict.apply_f64(&v);
        let ratio = av.iter().map(|x| x * x).sum::<f64>() / v.iter().map(|x| x * x).sum::<f64>();
        assert!(
            ratio <= sigma2,
            "Rayleigh quotient {ratio} above σ² = {sigma2}"
        );
    }
    // Marchenko-Pastur: σ_max² ≈ (1 + sqrt(p/d))² · p/d… for N(0, 1/d) entries: (1 + sqrt(3))² ≈ 7.46.
    assert!(sigma2 > 4.0 && sigma2 < 11.0, "σ² = {sigma2}");
}

/// The duality-gap stop: every row it stops is within its tolerance of the optimum (relative),
/// it stops before the cap, and a tighter tolerance runs longer.
#[test]
fn gap_stop_is_within_its_tolerance_of_the_optimum() {
    let (d, p, rows, lam) = (20, 60, 6, 0.05f32);
    let target = common::small_target(rows, d, p, lam, 23);
    let dict = &target.dictionary;
    let images: Vec<f32> = (0..rows).flat_map(|i| target.observations.row(i)).collect();
    let lipschitz = dict.spectral_norm_squared() as f32;
    let mut previous = 0;
    for tolerance in [1e-2f32, 1e-3, 1e-4] {
        let a = PackedMatrix::both(&dict.a, d, p);
        let (codes, stats) =
            fista::encode_until(&a, d, p, lipschitz, &images, lam, 5000, tolerance);
        assert_eq!(stats.capped, 0, "tolerance {tolerance}: rows at the cap");
        assert!(
            stats.iterations > previous && stats.iterations < 5000 * rows as u64,
            "tolerance {tolerance}: {} iterations in all (the looser one ran {previous})",
            stats.iterations
        );
        previous = stats.iterations;
        assert_within_tolerance(dict, &images, &codes, lam, tolerance, "FISTA");
    }
}

/// Every row's objective at `codes` is within `tolerance` (relative) of its f64 optimum.
fn assert_within_tolerance(
    dict: &Dictionary,
    images: &[f32],
    codes: &[f32],
    lam: f32,
    tolerance: f32,
    what: &str,
) {
    let (d, p) = (dict.d, dict.p);
    for (row, (x, z)) in images.chunks(d).zip(codes.chunks(p)).enumerate() {
        let lam = lam as f64;
        let optimum = objective(dict, x, &coordinate_descent(dict, x, lam), lam);
        let z: Vec<f64> = z.iter().map(|&v| v as f64).collect();
        let reached = objective(dict, x, &z, lam);
        let excess = (reached - optimum) / optimum;
        assert!(
            excess <= tolerance as f64 * 1.01 + 1e-6,
            "{what}, row {row}, tolerance {tolerance}: objective {reached} is {excess:.2e} above the optimum {optimum}"
        );
    }
}

/// Tolerance 0 is the fixed-iteration encoder byte for byte.
#[test]
fn gap_stop_off_is_the_fixed_iteration_encoder() {
    let (d, p, rows, lam) = (20, 60, 5, 0.05f32);
    let target = common::small_target(rows, d, p, lam, 29);
    let dict = &target.dictionary;
    let images: Vec<f32> = (0..rows).flat_map(|i| target.observations.row(i)).collect();
    let lipschitz = dict.spectral_norm_squared() as f32;
    let fixed = fista::encode(&dict.a, d, p, lipschitz, &images, lam, 50, None);
    let a = PackedMatrix::both(&dict.a, d, p);
    let (off, stats) = fista::encode_until(&a, d, p, lipschitz, &images, lam, 50, 0.0);
    for (i, (a, b)) in fixed.iter().zip(&off).enumerate() {
        assert_eq!(
            a.to_bits(),
            b.to_bits(),
            "value {i}: fixed {a}, tolerance 0 {b}"
        );
    }
    assert_eq!(stats.iterations, 50 * rows as u64);
}

/// A row's code does not depend on the other rows of its batch, though rows leave the batch as
/// they converge (every product sums each output in one order, whatever the rows).
#[test]
fn gap_stop_codes_do_not_depend_on_the_batch() {
    let (d, p, rows, lam) = (20, 60, 8, 0.05f32);
    let target = common::small_target(rows, d, p, lam, 31);
    let dict = &target.dictionary;
    let images: Vec<f32> = (0..rows).flat_map(|i| target.observations.row(i)).collect();
    let lipschitz = dict.spectral_norm_squared() as f32;
    let a = PackedMatrix::both(&dict.a, d, p);
    let encode = |from: usize, to: usize| {
        let x = &images[from * d..to * d];
        fista::encode_until(&a, d, p, lipschitz, x, lam, 400, 1e-3).0
    };
    let whole = encode(0, rows);
    let parts: Vec<f32> = [(0, 3), (3, 4), (4, 8)]
        .iter()
        .flat_map(|&(a, b)| encode(a, b))
        .collect();
    for (i, (a, b)) in whole.iter().zip(&parts).enumerate() {
        assert_eq!(
            a.to_bits(),
            b.to_bits(),
            "row {}, atom {}: in one batch {a}, in parts {b}",
            i / p,
            i % p
        );
    }
}

/// ADMM with the exact quadratic step: every row within its tolerance of the optimum, its gap
/// met before the cap, fewer iterations than FISTA's gap stop to the same tolerance, and a row's
/// code independent of its batch; over- and undercomplete dictionaries alike.
#[test]
fn admm_encoder_is_within_its_tolerance_and_batch_free() {
    use rmld::backend::cpu::lasso_admm;
    for (d, p, seed) in [(20, 60, 37), (30, 20, 41)] {
        let (rows, lam) = (8, 0.05f32);
        let target = common::small_target(rows, d, p, lam, seed);
        let dict = &target.dictionary;
        let images: Vec<f32> = (0..rows).flat_map(|i| target.observations.row(i)).collect();
        let lipschitz = dict.spectral_norm_squared() as f32;
        let factor = lasso_admm::Factor::new(&dict.a, d, p).expect("factor");
        let a = PackedMatrix::both(&dict.a, d, p);
        for tolerance in [1e-2f32, 1e-4] {
            let encode = |x: &[f32]| lasso_admm::encode(&a, &factor, d, p, x, lam, 5000, tolerance);
            let (codes, stats) = encode(&images);
            assert_eq!(
                stats.capped, 0,
                "{d}×{p}, tolerance {tolerance}: rows at the cap"
            );
            let (_, fista_stats) =
                fista::encode_until(&a, d, p, lipschitz, &images, lam, 5000, tolerance);
            assert!(
                stats.iterations < fista_stats.iterations,
                "{d}×{p}, tolerance {tolerance}: ADMM ran {} iterations, FISTA {}",
                stats.iterations,
                fista_stats.iterations
            );
            assert_within_tolerance(
                dict,
                &images,
                &codes,
                lam,
                tolerance,
                &format!("ADMM {d}×{p}"),
            );
            let parts: Vec<f32> = [(0, 3), (3, 4), (4, 8)]
                .iter()
                .flat_map(|&(a, b)| encode(&images[a * d..b * d]).0)
                .collect();
            for (i, (a, b)) in codes.iter().zip(&parts).enumerate() {
                assert_eq!(
                    a.to_bits(),
                    b.to_bits(),
                    "{d}×{p}, value {i}: in one batch {a}, in parts {b}"
                );
            }
        }
    }
}
