//! The `mixture` and `local` targets on the CPU backend: gradient against finite differences,
//! energies against the f64 reference, one image (mixture = local), and local anchors.

mod common;

use rmld::math::Portable;
use std::sync::Arc;

use rmld::backend::cpu::{gradient_step, matmul, CpuBackend};
use rmld::backend::kernel_hmc::kernel_energy;
use rmld::backend::{Backend, DynamicsSettings};
use rmld::methods::Method;
use rmld::model::{start_rows, ChainClasses, Target, TargetKind};

const D: usize = 17;
const P: usize = 41;
const CHAINS: usize = 4;

/// Chains 0 and 2 on rows 0..12, 1 on rows 12..30, 3 on rows 30..40; σ² = 1.5 on data in
/// [0, 1]^17 (squared distances about 3) keeps the softmax weights spread over several rows.
fn mixture_target(lam: f32) -> Target {
    let target = (*common::small_target(40, D, P, lam, 21))
        .clone()
        .with_sigma2(1.5);
    let ranges = [[0u32, 12], [12, 18], [30, 10]];
    let means: Vec<f32> = ranges
        .iter()
        .flat_map(|&[f, c]| target.observations.mean_of_rows(f as usize, c as usize))
        .collect();
    let classes = ChainClasses::new(&ranges, &means, D, &[0, 1, 0, 2]).unwrap();
    target
        .with_classes(classes)
        .with_kind(TargetKind::Mixture, CHAINS, 0)
        .unwrap()
}

/// −log Σ_i exp(−||A x − x_i||²/(2σ²)) + lam·||x||₁ over `rows`, all in f64, written out here
/// independently of the library's reference.
fn energy_f64(target: &Target, rows: [u32; 2], x: &[f64]) -> f64 {
    let ax = target.dictionary.apply_f64(x);
    let exponents: Vec<f64> = (rows[0]..rows[0] + rows[1])
        .map(|i| {
            let row = target.observations.row(i as usize);
            let dist2: f64 = ax
                .iter()
                .zip(&row)
                .map(|(a, &b)| (a - b as f64).powi(2))
                .sum();
            -dist2 / (2.0 * target.sigma2 as f64)
        })
        .collect();
    let max = exponents.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lse = max
        + exponents
            .iter()
            .map(|e| (e - max).exp_portable())
            .sum::<f64>()
            .ln_portable();
    -lse + target.lam as f64 * x.iter().map(|v| v.abs()).sum::<f64>()
}

/// The CPU backend's composition of twins (A x, the full-class kernel energy and scaled residual,
/// Aᵀ·, lam·sign) against central differences of the f64 energy, and the library's f64 gradient.
#[test]
fn mixture_gradient_matches_central_differences() {
    let target = mixture_target(0.2);
    let rows = target.chain_rows(CHAINS).unwrap();
    let info = target.mixture_chain_info(CHAINS).unwrap();
    let x = common::random_positions(CHAINS, P, 7, 0.4);
    let mut image = vec![0f32; CHAINS * D];
    matmul::residual_product(
        &target.dictionary.a,
        D,
        P,
        &x,
        &vec![0.0; CHAINS * D],
        &mut image,
    );
    let mut scaled = vec![0f32; CHAINS * D];
    let mut weights = Vec::new();
    for c in 0..CHAINS {
        kernel_energy(
            &target.observations,
            &info[c],
            &image[c * D..(c + 1) * D],
            &mut scaled[c * D..(c + 1) * D],
            &mut weights,
        );
    }
    let mut gradient = vec![0f32; CHAINS * P];
    matmul::transpose_product(&target.dictionary.a, D, P, &scaled, &mut gradient);
    gradient_step::full_gradient(&mut gradient, &x, &target.prior, 1.0);

    let h = 1e-4f64;
    let mut failures = Vec::new();
    for c in 0..CHAINS {
        let xc: Vec<f64> = x[c * P..(c + 1) * P].iter().map(|&v| v as f64).collect();
        let reference = target
            .mixture_gradient_f64(CHAINS, c, &x[c * P..(c + 1) * P])
            .unwrap();
        for j in 0..P {
            // Away from the kink of |x_j|: the difference quotient must not straddle 0.
            if xc[j].abs() < 10.0 * h {
                continue;
            }
            let energy = |shift: f64| {
                let mut xs = xc.clone();
                xs[j] += shift;
                energy_f64(&target, rows[c], &xs)
            };
            let numeric = (energy(h) - energy(-h)) / (2.0 * h);
            let kernel = gradient[c * P + j] as f64;
            // f32 kernels on O(1) values: a few ulps of the sums over d and p.
            if (numeric - kernel).abs() > 1e-4 * (1.0 + numeric.abs()) {
                failures.push(format!(
                    "chain {c} atom {j}: kernel {kernel} vs finite difference {numeric}"
                ));
            }
            if (numeric - reference[j]).abs() > 1e-6 * (1.0 + numeric.abs()) {
                failures.push(format!(
                    "chain {c} atom {j}: f64 reference {} vs finite difference {numeric}",
                    reference[j]
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

/// The backend's cached energy (the MH terms' U(X)) equals a fresh f64 evaluation after every
/// accepted step, and its reverse proposal norm uses the true gradient at Z (checked through MALA).
#[test]
fn mixture_cached_energy_and_gradient_match_the_reference() {
    let target = Arc::new(mixture_target(0.1));
    let settings = DynamicsSettings {
        method: Method::Mala,
        eta: 0.01,
        seed: 5,
        ..Default::default()
    };
    let mut backend = CpuBackend::new(target.clone(), settings.clone(), CHAINS);
    backend
        .load_positions(&common::random_positions(CHAINS, P, 9, 0.4))
        .unwrap();
    let mut failures = Vec::new();
    for outer in 1..=4u32 {
        let x = backend.positions().unwrap();
        let terms = backend.propose(outer).unwrap();
        // Accept everything so Z becomes readable as the next X.
        backend.accept(&[true; CHAINS]).unwrap();
        let z = backend.positions().unwrap();
        for c in 0..CHAINS {
            let (xc, zc) = (&x[c * P..(c + 1) * P], &z[c * P..(c + 1) * P]);
            let ux = target.mixture_energy_f64(CHAINS, c, xc).unwrap();
            let uz = target.mixture_energy_f64(CHAINS, c, zc).unwrap();
            let gz = target.mixture_gradient_f64(CHAINS, c, zc).unwrap();
            let reverse: f64 = (0..P)
                .map(|j| (xc[j] as f64 - zc[j] as f64 + settings.eta as f64 * gz[j]).powi(2))
                .sum();
            let t = terms[c];
            let checks = [
                ("U(X)", t.energy_current as f64, ux),
                ("U(Z) - U(X)", t.energy_difference as f64, uz - ux),
                ("reverse norm", t.reverse_norm as f64, reverse),
            ];
            for (what, got, want) in checks {
                // f32 energies of size ~10: 1e-4 relative covers the sums' rounding.
                if (got - want).abs() > 1e-4 * (1.0 + want.abs()) {
                    failures.push(format!(
                        "outer {outer} chain {c} {what}: {got} vs f64 {want}"
                    ));
                }
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

/// With one image per chain the mixture −log exp(−||A X − x||²/(2σ²)) is the local target's
/// ||A X − x||²/(2σ²): the same chains, step for step, on both targets.
#[test]
fn mixture_with_one_image_equals_local_target() {
    let base = (*common::small_target(30, D, P, 0.05, 3))
        .clone()
        .with_sigma2(2.0);
    let singles = [[4u32, 1], [11, 1], [17, 1], [29, 1]];
    let means: Vec<f32> = singles
        .iter()
        .flat_map(|&[f, _]| base.observations.row(f as usize))
        .collect();
    let classes = ChainClasses::new(&singles, &means, D, &[0, 1, 2, 3]).unwrap();
    let with = |kind| {
        Arc::new(
            base.clone()
                .with_classes(classes.clone())
                .with_kind(kind, CHAINS, 0)
                .unwrap(),
        )
    };
    let settings = common::dynamics(0.02, 5, 8, 13);
    let mut mixture = CpuBackend::new(with(TargetKind::Mixture), settings.clone(), CHAINS);
    let mut local = CpuBackend::new(with(TargetKind::Local), settings, CHAINS);
    let start = common::random_positions(CHAINS, P, 4, 0.3);
    mixture.load_positions(&start).unwrap();
    local.load_positions(&start).unwrap();
    let mut failures = Vec::new();
    for outer in 1..=3u32 {
        let (tm, tl) = (
            mixture.propose(outer).unwrap(),
            local.propose(outer).unwrap(),
        );
        for c in 0..CHAINS {
            let pairs = [
                ("U(X)", tm[c].energy_current, tl[c].energy_current),
                (
                    "U(Z) - U(X)",
                    tm[c].energy_difference,
                    tl[c].energy_difference,
                ),
                ("forward", tm[c].forward_norm, tl[c].forward_norm),
                ("reverse", tm[c].reverse_norm, tl[c].reverse_norm),
            ];
            for (what, a, b) in pairs {
                // The mixture's difference of two cached energies against the local target's
                // one reduction: equal up to f32 rounding of energies of size ~5.
                if (a - b).abs() > 1e-4 * (1.0 + b.abs()) {
                    failures.push(format!(
                        "outer {outer} chain {c} {what}: mixture {a}, local {b}"
                    ));
                }
            }
        }
        let mask: Vec<bool> = (0..CHAINS)
            .map(|c| (c + outer as usize).is_multiple_of(2))
            .collect();
        mixture.accept(&mask).unwrap();
        local.accept(&mask).unwrap();
        let (pm, pl) = (mixture.images().unwrap(), local.images().unwrap());
        for (i, (a, b)) in pm.iter().zip(&pl).enumerate() {
            if (a - b).abs() > 1e-4 * (1.0 + b.abs()) {
                failures.push(format!(
                    "outer {outer} image value {i}: mixture {a}, local {b}"
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

/// The local target anchors each chain at the image its LASSO start encodes: its rows are that
/// one image and its mean is that image.
#[test]
fn local_target_anchors_each_chain_at_its_start_image() {
    let base = mixture_target(0.1);
    let rows = base.chain_rows(CHAINS).unwrap();
    let starts = start_rows(&rows, 77);
    let local = base.with_kind(TargetKind::Local, CHAINS, 77).unwrap();
    let means = local.xbar_rows(CHAINS).unwrap();
    for (c, &i) in starts.iter().enumerate() {
        assert!(
            i >= rows[c][0] as usize && i < (rows[c][0] + rows[c][1]) as usize,
            "chain {c}: start row {i} outside its class {:?}",
            rows[c]
        );
        assert_eq!(local.chain_rows(CHAINS).unwrap()[c], [i as u32, 1]);
        assert_eq!(&means[c * D..(c + 1) * D], &local.observations.row(i)[..]);
    }
    // Different seeds anchor differently (the picks are not all the same row).
    let other = start_rows(&rows, 78);
    assert_ne!(starts, other, "seeds 77 and 78 drew the same start rows");
}
