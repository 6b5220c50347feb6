//! The diagnostics against reference values: i.i.d. normals, AR(1), chains far apart, erfc, the
//! closed-form Gaussian × Laplace CDF and the KS p-value.

use rmld::diagnostics::reference::{erfc, ks_p_value, ks_statistic, normal_cdf, LaplaceGaussian};
use rmld::diagnostics::{ess_bulk, ess_tail, geweke_z, normal_quantile, split_rhat};
use rmld::math::Portable;
use rmld::rng::{Purpose, Stream};

/// `chains` chains of `n` standard normals from fixed streams.
fn normals(chains: usize, n: usize, seed: u64) -> Vec<Vec<f64>> {
    (0..chains)
        .map(|c| {
            let mut v = vec![0f32; n];
            Stream::new(seed, c as u32, 0, 0, Purpose::InitNoise).fill_normal(&mut v);
            v.iter().map(|&x| x as f64).collect()
        })
        .collect()
}

/// AR(1) chains x_t = ρ x_{t−1} + sqrt(1 − ρ²) ε_t, started in the stationary law.
fn ar1(chains: usize, n: usize, rho: f64, seed: u64) -> Vec<Vec<f64>> {
    normals(chains, n, seed)
        .into_iter()
        .map(|e| {
            let mut x = Vec::with_capacity(n);
            let mut prev = e[0];
            x.push(prev);
            for &eps in &e[1..] {
                prev = rho * prev + (1.0 - rho * rho).sqrt() * eps;
                x.push(prev);
            }
            x
        })
        .collect()
}

#[test]
fn independent_draws_have_rhat_one_and_full_ess() {
    let (chains, n) = (4, 2000);
    let draws = normals(chains, n, 7);
    let total = (chains * n) as f64;
    let rhat = split_rhat(&draws).unwrap();
    let bulk = ess_bulk(&draws).unwrap();
    let tail = ess_tail(&draws).unwrap();
    eprintln!("iid: R-hat {rhat}, bulk {bulk}, tail {tail} of {total}");
    assert!((rhat - 1.0).abs() < 0.01, "R-hat {rhat}");
    // The ESS estimate of white noise scatters by a few per cent around the number of draws.
    assert!((bulk / total - 1.0).abs() < 0.1, "bulk ESS {bulk}");
    assert!((tail / total - 1.0).abs() < 0.2, "tail ESS {tail}");
}

#[test]
fn ar1_ess_matches_its_integrated_autocorrelation() {
    for rho in [0.5, 0.9] {
        let (chains, n) = (4, 5000);
        let draws = ar1(chains, n, rho, 11);
        let expected = (chains * n) as f64 * (1.0 - rho) / (1.0 + rho);
        let bulk = ess_bulk(&draws).unwrap();
        eprintln!("AR(1) rho {rho}: bulk ESS {bulk}, expected {expected}");
        assert!(
            (bulk / expected - 1.0).abs() < 0.15,
            "rho {rho}: ESS {bulk} vs {expected}"
        );
        assert!(split_rhat(&draws).unwrap() < 1.01);
    }
}

#[test]
fn chains_far_apart_have_large_rhat_and_fail_geweke() {
    let mut draws = normals(4, 500, 3);
    for (c, chain) in draws.iter_mut().enumerate() {
        chain.iter_mut().for_each(|x| *x += 3.0 * c as f64);
    }
    let rhat = split_rhat(&draws).unwrap();
    eprintln!("far apart: R-hat {rhat}");
    assert!(rhat > 1.1, "R-hat {rhat}");
    // A chain drifting from 5 to 0 fails Geweke; a stationary one passes.
    let drifting: Vec<f64> = (0..400)
        .map(|i| 5.0 * (-(i as f64) / 60.0).exp_portable() + draws[0][i])
        .collect();
    assert!(geweke_z(&drifting).unwrap().abs() > 2.0);
    assert!(geweke_z(&draws[0]).unwrap().abs() < 2.0);
}

#[test]
fn erfc_and_normal_quantile_match_reference_values() {
    // Values from the standard tables (Abramowitz & Stegun; mpmath to 16 digits).
    let table = [
        (0.0, 1.0),
        (0.1, 0.887_537_083_981_715),
        (0.5, 0.479_500_122_186_953_5),
        (1.0, 0.157_299_207_050_285_1),
        (2.0, 4.677_734_981_047_266e-3),
        (2.5, 4.069_520_174_449_59e-4),
        (3.0, 2.209_049_699_858_544e-5),
        (5.0, 1.537_459_794_428_035e-12),
        (-1.0, 1.842_700_792_949_715),
    ];
    for (x, want) in table {
        let got = erfc(x);
        assert!(
            ((got - want) / want).abs() < 1e-12,
            "erfc({x}) = {got}, want {want}"
        );
    }
    for p in [1e-6, 0.01, 0.3, 0.5, 0.9, 0.999] {
        let x = normal_quantile(p);
        assert!(
            (normal_cdf(x) - p).abs() < 1e-12 * p.max(1e-3),
            "quantile {p}"
        );
    }
}

#[test]
fn laplace_gaussian_cdf_matches_its_density() {
    for (m, s2, lam) in [
        (0.7, 1.0, 2.0),
        (-1.5, 3.0, 0.4),
        (0.0, 0.5, 0.0),
        (4.0, 1.0, 5.0),
    ] {
        let dist = LaplaceGaussian { m, s2, lam };
        // The CDF's derivative is the normalised density: compare by numerical differentiation.
        let (mean, var) = dist.moments();
        let density = |x: f64| (-(x - m).powi(2) / (2.0 * s2) - lam * x.abs()).exp_portable();
        let (lo, hi) = (mean - 10.0 * var.sqrt(), mean + 10.0 * var.sqrt());
        let norm: f64 = (0..=40_000)
            .map(|i| {
                let w = if i == 0 || i == 40_000 { 0.5 } else { 1.0 };
                w * density(lo + i as f64 * (hi - lo) / 40_000.0)
            })
            .sum::<f64>()
            * (hi - lo)
            / 40_000.0;
        for x in [mean - var.sqrt(), -0.2, 0.0, 0.3, mean + 2.0 * var.sqrt()] {
            let n = 40_000;
            let h = (x - lo) / n as f64;
            let integral: f64 = (0..=n)
                .map(|i| {
                    let w = if i == 0 || i == n { 0.5 } else { 1.0 };
                    w * density(lo + i as f64 * h)
                })
                .sum::<f64>()
                * h
                / norm;
            let cdf = dist.cdf(x);
            assert!(
                (cdf - integral).abs() < 1e-6,
                "(m {m}, s2 {s2}, lam {lam}) F({x}) = {cdf}, quadrature {integral}"
            );
        }
        assert!(dist.cdf(-1e6) < 1e-12 && (dist.cdf(1e6) - 1.0).abs() < 1e-12);
    }
}

#[test]
fn ks_accepts_normals_and_rejects_a_shift() {
    let draws: Vec<f64> = normals(1, 4000, 5).remove(0);
    let d = ks_statistic(&draws, normal_cdf);
    let p = ks_p_value(d, draws.len());
    assert!(p > 0.01, "D {d}, p {p}");
    let shifted: Vec<f64> = draws.iter().map(|x| x + 0.1).collect();
    let d = ks_statistic(&shifted, normal_cdf);
    assert!(
        ks_p_value(d, draws.len()) < 1e-3,
        "shift not detected: D {d}"
    );
}

/// rmld's nested R-hat, R-hat, bulk/tail ESS and MCSE of the mean equal the reference libraries'
/// (arviz-stats 0.8.0 `rhat_nested`, ArviZ 0.23.4) on the fixed draws of
/// tests/data/diagnostics_reference.json, to 1e-6 (relative); the script that made the file is
/// scripts/reference/diagnostics_reference.py.
#[test]
fn estimators_match_the_reference_libraries() {
    use rmld::diagnostics::{mcse_mean, nested_rhat};
    let text = include_str!("data/diagnostics_reference.json");
    let reference: serde_json::Value = serde_json::from_str(text).unwrap();
    let mut failures = Vec::new();
    for case in reference["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let draws: Vec<Vec<f64>> = serde_json::from_value(case["draws"].clone()).unwrap();
        let superchains: Vec<usize> = serde_json::from_value(case["superchains"].clone()).unwrap();
        let ours = [
            ("nested_rhat", nested_rhat(&draws, &superchains)),
            ("rhat", split_rhat(&draws)),
            ("ess_bulk", ess_bulk(&draws)),
            ("ess_tail", ess_tail(&draws)),
            ("mcse_mean", mcse_mean(&draws)),
        ];
        for (quantity, value) in ours {
            let expected = case[quantity].as_f64().unwrap();
            match value {
                Some(v) if (v - expected).abs() <= 1e-6 * expected.abs() => {}
                _ => failures.push(format!(
                    "{name}: {quantity} {value:?}, reference {expected}"
                )),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
