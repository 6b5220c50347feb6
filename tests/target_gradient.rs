//! The CPU gradient kernels against central finite differences of the f64 energy.

mod common;

use rmld::backend::cpu::{gradient_step, matmul};

#[test]
fn full_gradient_matches_central_differences() {
    let (d, p, chains) = (23, 71, 3);
    // σ² ≠ 1 so the likelihood's scale is checked too.
    let target = (*common::small_target(50, d, p, 0.3, 11))
        .clone()
        .with_sigma2(2.5);
    let x = common::random_positions(chains, p, 5, 1.0);
    let xbar_rows = target.xbar.repeat(chains);
    let mut residual = vec![0f32; chains * d];
    let mut gradient = vec![0f32; chains * p];
    matmul::residual_product(&target.dictionary.a, d, p, &x, &xbar_rows, &mut residual);
    matmul::transpose_product(&target.dictionary.a, d, p, &residual, &mut gradient);
    gradient_step::full_gradient(&mut gradient, &x, &target.prior, target.inv_sigma2());

    let h = 1e-3f64;
    let mut failures = Vec::new();
    for c in 0..chains {
        let xc: Vec<f64> = x[c * p..(c + 1) * p].iter().map(|&v| v as f64).collect();
        for j in 0..p {
            // Away from the kink of |x_j|: the difference quotient must not straddle 0.
            if xc[j].abs() < 10.0 * h {
                continue;
            }
            let energy = |shift: f64| {
                let mut xs = xc.clone();
                xs[j] += shift;
                energy_f64(&target, &xs)
            };
            let numeric = (energy(h) - energy(-h)) / (2.0 * h);
            let analytic = gradient[c * p + j] as f64;
            if (numeric - analytic).abs() > 1e-4 * (1.0 + numeric.abs()) {
                failures.push(format!(
                    "chain {c} atom {j}: kernel {analytic} vs finite difference {numeric}"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// 1/(2σ²)·||A x − xbar||² + lam·||x||₁ with x in f64 throughout.
fn energy_f64(target: &rmld::model::Target, x: &[f64]) -> f64 {
    let ax = target.dictionary.apply_f64(x);
    0.5 * ax
        .iter()
        .zip(&target.xbar)
        .map(|(a, &b)| (a - b as f64).powi(2))
        .sum::<f64>()
        / target.sigma2 as f64
        + target.lam as f64 * x.iter().map(|v| v.abs()).sum::<f64>()
}

#[test]
fn minibatch_gradient_is_unbiased_for_the_full_gradient() {
    // E[ybar] = xbar, so the mean of many minibatch means approaches xbar: check the gather twin.
    let target = common::small_target(40, 9, 20, 0.0, 3);
    let chains = 2000;
    let mut ybar = vec![0f32; chains * 9];
    let rows = vec![[0, 40]; chains];
    rmld::backend::cpu::gather::gather(&target.observations, &rows, 8, 1, 1, 4, &mut ybar);
    for j in 0..9 {
        let mean: f64 = ybar.chunks(9).map(|r| r[j] as f64).sum::<f64>() / chains as f64;
        let values: Vec<f64> = (0..40)
            .map(|i| target.observations.row(i)[j] as f64)
            .collect();
        let mu = values.iter().sum::<f64>() / 40.0;
        let var = values.iter().map(|v| (v - mu).powi(2)).sum::<f64>() / 40.0;
        // Standard error of a mean of chains × m i.i.d. draws.
        let se = (var / (chains as f64 * 4.0)).sqrt();
        assert!(
            (mean - target.xbar[j] as f64).abs() < 5.0 * se + 1e-6,
            "coordinate {j}: {mean} vs {}",
            target.xbar[j]
        );
    }
}
