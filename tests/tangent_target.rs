//! The `tangent` target on the CPU backend against dense f64 references: C⁻¹ r, energy, gradient, s = 0 = local.

mod common;

use std::sync::Arc;

use rmld::backend::cpu::CpuBackend;
use rmld::backend::{Backend, DynamicsSettings};
use rmld::methods::Method;
use rmld::model::{start_rows, ChainClasses, TangentSettings, Target, TargetKind};
use rmld::model::{tangent_energy, tangent_step};
use rmld::Error;

const D: usize = 17;
const P: usize = 41;
const CHAINS: usize = 4;
const K: u32 = 3;

/// Chains 0 and 2 in rows 0..12, 1 in rows 12..30, 3 in rows 30..40; σ² = 0.3 against squared
/// neighbour distances of about 3 (data in [0, 1]^17) gives shrinkages γ well inside (0, 1).
fn base(lam: f32, scale: f32) -> Target {
    let target = (*common::small_target(40, D, P, lam, 21))
        .clone()
        .with_sigma2(0.3)
        .with_tangent(TangentSettings { k: K, scale });
    let ranges = [[0u32, 12], [12, 18], [30, 10]];
    let means: Vec<f32> = ranges
        .iter()
        .flat_map(|&[f, c]| target.observations.mean_of_rows(f as usize, c as usize))
        .collect();
    let classes = ChainClasses::new(&ranges, &means, D, &[0, 1, 0, 2]).unwrap();
    target.with_classes(classes)
}

const SEED: u64 = 5;

fn tangent_target(lam: f32, scale: f32) -> Target {
    base(lam, scale)
        .with_kind(TargetKind::Tangent, CHAINS, SEED)
        .unwrap()
}

/// Chain c's anchor and neighbours, found here by brute force in f64 (independently of the
/// library), and its dense covariance C = (s²/k)·B Bᵀ + σ²·I (d × d, row-major).
struct Dense {
    anchor: Vec<f64>,
    neighbours: Vec<usize>,
    covariance: Vec<f64>,
}

fn dense(target: &Target, c: usize, scale: f32) -> Dense {
    let class = base(0.0, scale).chain_rows(CHAINS).unwrap()[c];
    let anchor_row = start_rows(&base(0.0, scale).chain_rows(CHAINS).unwrap(), SEED)[c];
    let row = |i: usize| -> Vec<f64> {
        target
            .observations
            .row(i)
            .iter()
            .map(|&v| v as f64)
            .collect()
    };
    let anchor = row(anchor_row);
    let mut others: Vec<(f64, usize)> = (class[0] as usize..(class[0] + class[1]) as usize)
        .filter(|&i| i != anchor_row)
        .map(|i| {
            let dist: f64 = row(i)
                .iter()
                .zip(&anchor)
                .map(|(a, b)| (a - b).powi(2))
                .sum();
            (dist, i)
        })
        .collect();
    others.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let neighbours: Vec<usize> = others.iter().take(K as usize).map(|&(_, i)| i).collect();
    let factor = (scale as f64).powi(2) / K as f64;
    let mut covariance = vec![0f64; D * D];
    for &n in &neighbours {
        let b: Vec<f64> = row(n).iter().zip(&anchor).map(|(x, a)| x - a).collect();
        for i in 0..D {
            for j in 0..D {
                covariance[i * D + j] += factor * b[i] * b[j];
            }
        }
    }
    (0..D).for_each(|i| covariance[i * D + i] += target.sigma2 as f64);
    Dense {
        anchor,
        neighbours,
        covariance,
    }
}

/// x with C x = r, by Gaussian elimination with partial pivoting in f64.
fn solve(matrix: &[f64], rhs: &[f64]) -> Vec<f64> {
    let n = rhs.len();
    let mut m = matrix.to_vec();
    let mut x = rhs.to_vec();
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&a, &b| m[a * n + col].abs().total_cmp(&m[b * n + col].abs()))
            .unwrap();
        for j in 0..n {
            m.swap(col * n + j, pivot * n + j);
        }
        x.swap(col, pivot);
        for r in col + 1..n {
            let f = m[r * n + col] / m[col * n + col];
            for j in col..n {
                m[r * n + j] -= f * m[col * n + j];
            }
            x[r] -= f * x[col];
        }
    }
    for col in (0..n).rev() {
        let s: f64 = (col + 1..n).map(|j| m[col * n + j] * x[j]).sum();
        x[col] = (x[col] - s) / m[col * n + col];
    }
    x
}

/// ½ (A x − a)ᵀ C⁻¹ (A x − a) + lam·||x||₁ by a dense solve.
fn energy_f64(target: &Target, dense: &Dense, x: &[f64]) -> f64 {
    let r: Vec<f64> = target
        .dictionary
        .apply_f64(x)
        .iter()
        .zip(&dense.anchor)
        .map(|(a, b)| a - b)
        .collect();
    let solved = solve(&dense.covariance, &r);
    0.5 * r.iter().zip(&solved).map(|(a, b)| a * b).sum::<f64>()
        + target.lam as f64 * x.iter().map(|v| v.abs()).sum::<f64>()
}

fn report(failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The library's neighbours are the brute-force ones, and its C⁻¹ r (the CPU twin on the stored
/// Q, γ) equals a dense solve of C x = r, for r inside span(B) (where C⁻¹ shrinks by
/// 1/(σ² + λ_j)) and for a general r.
#[test]
fn inverse_covariance_matches_a_dense_solve() {
    let target = tangent_target(0.0, 1.3);
    let bases = target.tangent_bases(CHAINS).unwrap();
    let inv_sigma2 = target.inv_sigma2();
    let mut failures = Vec::new();
    for c in 0..CHAINS {
        let dense = dense(&target, c, 1.3);
        if bases.neighbours[c] != dense.neighbours {
            failures.push(format!(
                "chain {c}: neighbours {:?}, brute force {:?}",
                bases.neighbours[c], dense.neighbours
            ));
        }
        let noise = common::random_positions(1, D, 30 + c as u64, 0.5);
        let in_span: Vec<f64> = (0..D)
            .map(|i| {
                dense
                    .neighbours
                    .iter()
                    .enumerate()
                    .map(|(j, &n)| {
                        let w = [0.7, -1.1, 0.4][j];
                        w * (target.observations.row(n)[i] as f64 - dense.anchor[i])
                    })
                    .sum()
            })
            .collect();
        let general: Vec<f64> = noise.iter().map(|&v| v as f64).collect();
        for (what, r) in [("in span", in_span), ("general", general)] {
            let want = solve(&dense.covariance, &r);
            let r32: Vec<f32> = r.iter().map(|&v| v as f32).collect();
            let mut got = vec![0f32; D];
            let energy = tangent_energy(
                bases.chain_basis(c),
                bases.chain_gamma(c),
                inv_sigma2,
                &r32,
                &mut got,
            );
            let norm = want.iter().map(|v| v * v).sum::<f64>().sqrt();
            for i in 0..D {
                if (got[i] as f64 - want[i]).abs() > 1e-5 * norm {
                    failures.push(format!(
                        "chain {c} {what} [{i}]: C⁻¹r {} vs dense {} (norm {norm})",
                        got[i], want[i]
                    ));
                }
            }
            let energy_want = 0.5 * r.iter().zip(&want).map(|(a, b)| a * b).sum::<f64>();
            if (energy as f64 - energy_want).abs() > 1e-5 * (1.0 + energy_want) {
                failures.push(format!(
                    "chain {c} {what}: energy {energy} vs dense {energy_want}"
                ));
            }
            let mut stepped = r32.clone();
            tangent_step(
                bases.chain_basis(c),
                bases.chain_gamma(c),
                inv_sigma2,
                &mut stepped,
            );
            if stepped != got {
                failures.push(format!(
                    "chain {c} {what}: in-place step {stepped:?} vs {got:?}"
                ));
            }
        }
    }
    report(failures);
}

/// The backend's full gradient (cached at X, read through MALA's proposal mean with the noise
/// subtracted) against central differences of the dense f64 energy, and its cached energy (the
/// MH terms' U(X)) against the dense energy, over several accepted steps.
#[test]
fn gradient_and_cached_energy_match_dense_f64() {
    let target = Arc::new(tangent_target(0.2, 1.0));
    let settings = DynamicsSettings {
        method: Method::Mala,
        eta: 0.002,
        seed: 3,
        ..Default::default()
    };
    let mut backend = CpuBackend::new(target.clone(), settings.clone(), CHAINS);
    backend
        .load_positions(&common::random_positions(CHAINS, P, 9, 0.4))
        .unwrap();
    let denses: Vec<Dense> = (0..CHAINS).map(|c| dense(&target, c, 1.0)).collect();
    let mut failures = Vec::new();
    for outer in 1..=3u32 {
        let x = backend.positions().unwrap();
        let terms = backend.propose(outer).unwrap();
        backend.accept(&[true; CHAINS]).unwrap();
        let z = backend.positions().unwrap();
        for c in 0..CHAINS {
            let xc: Vec<f64> = x[c * P..(c + 1) * P].iter().map(|&v| v as f64).collect();
            let zc: Vec<f64> = z[c * P..(c + 1) * P].iter().map(|&v| v as f64).collect();
            let (ux, uz) = (
                energy_f64(&target, &denses[c], &xc),
                energy_f64(&target, &denses[c], &zc),
            );
            let checks = [
                ("U(X)", terms[c].energy_current as f64, ux),
                ("U(Z) - U(X)", terms[c].energy_difference as f64, uz - ux),
            ];
            for (what, got, want) in checks {
                if (got - want).abs() > 1e-4 * (1.0 + ux.abs()) {
                    failures.push(format!(
                        "outer {outer} chain {c} {what}: {got} vs dense f64 {want}"
                    ));
                }
            }
            // The reverse norm ||X − Z + h∇U(Z)||² reads the backend's cached gradient at Z:
            // rebuild it from central differences of the dense energy.
            let h = 1e-4f64;
            let numeric: Vec<f64> = (0..P)
                .map(|j| {
                    let mut plus = zc.clone();
                    let mut minus = zc.clone();
                    plus[j] += h;
                    minus[j] -= h;
                    (energy_f64(&target, &denses[c], &plus)
                        - energy_f64(&target, &denses[c], &minus))
                        / (2.0 * h)
                })
                .collect();
            let reverse: f64 = (0..P)
                .map(|j| (xc[j] - zc[j] + settings.eta as f64 * numeric[j]).powi(2))
                .sum();
            let got = terms[c].reverse_norm as f64;
            if (got - reverse).abs() > 1e-3 * (1e-6 + reverse) {
                failures.push(format!(
                    "outer {outer} chain {c} reverse norm (∇U(Z)): {got} vs finite differences {reverse}"
                ));
            }
        }
    }
    report(failures);
}

/// The CPU twins composed as the backend composes them (A x − a, C⁻¹, Aᵀ, lam·sign) against
/// central differences of the dense f64 energy, atom by atom.
#[test]
fn gradient_matches_central_differences_per_atom() {
    use rmld::backend::cpu::{gradient_step, matmul};
    let target = tangent_target(0.2, 1.0);
    let bases = target.tangent_bases(CHAINS).unwrap();
    let anchors = target.xbar_rows(CHAINS).unwrap();
    let x = common::random_positions(CHAINS, P, 7, 0.4);
    let mut residual = vec![0f32; CHAINS * D];
    matmul::residual_product(&target.dictionary.a, D, P, &x, &anchors, &mut residual);
    let mut scaled = vec![0f32; CHAINS * D];
    for c in 0..CHAINS {
        tangent_energy(
            bases.chain_basis(c),
            bases.chain_gamma(c),
            target.inv_sigma2(),
            &residual[c * D..(c + 1) * D],
            &mut scaled[c * D..(c + 1) * D],
        );
    }
    let mut gradient = vec![0f32; CHAINS * P];
    matmul::transpose_product(&target.dictionary.a, D, P, &scaled, &mut gradient);
    gradient_step::full_gradient(&mut gradient, &x, &target.prior, 1.0);
    let h = 1e-4f64;
    let mut failures = Vec::new();
    for c in 0..CHAINS {
        let dense = dense(&target, c, 1.0);
        let xc: Vec<f64> = x[c * P..(c + 1) * P].iter().map(|&v| v as f64).collect();
        for j in 0..P {
            // Away from the kink of |x_j|: the difference quotient must not straddle 0.
            if xc[j].abs() < 10.0 * h {
                continue;
            }
            let energy = |shift: f64| {
                let mut xs = xc.clone();
                xs[j] += shift;
                energy_f64(&target, &dense, &xs)
            };
            let numeric = (energy(h) - energy(-h)) / (2.0 * h);
            let kernel = gradient[c * P + j] as f64;
            if (numeric - kernel).abs() > 1e-4 * (1.0 + numeric.abs()) {
                failures.push(format!(
                    "chain {c} atom {j}: kernel {kernel} vs finite difference {numeric}"
                ));
            }
        }
    }
    report(failures);
}

/// With s = 0 every γ is 0 and C = σ²·I: the tangent target is the local target at the same σ²,
/// step for step (energies, proposal norms built from the gradients, images).
#[test]
fn zero_scale_equals_the_local_target() {
    let tangent = Arc::new(tangent_target(0.05, 0.0));
    let bases = tangent.tangent_bases(CHAINS).unwrap();
    assert!(
        bases.gamma.iter().all(|&g| g == 0.0),
        "s = 0 left shrinkages {:?}",
        bases.gamma
    );
    let local = Arc::new(
        base(0.05, 0.0)
            .with_kind(TargetKind::Local, CHAINS, SEED)
            .unwrap(),
    );
    assert_eq!(
        tangent.xbar_rows(CHAINS).unwrap(),
        local.xbar_rows(CHAINS).unwrap()
    );
    for method in [Method::Rmld, Method::Mala] {
        let settings = DynamicsSettings {
            method,
            ..common::dynamics(0.01, 4, 8, 13)
        };
        let mut t = CpuBackend::new(tangent.clone(), settings.clone(), CHAINS);
        let mut l = CpuBackend::new(local.clone(), settings, CHAINS);
        let start = common::random_positions(CHAINS, P, 4, 0.3);
        t.load_positions(&start).unwrap();
        l.load_positions(&start).unwrap();
        let mut failures = Vec::new();
        for outer in 1..=3u32 {
            let (tt, tl) = (t.propose(outer).unwrap(), l.propose(outer).unwrap());
            for c in 0..CHAINS {
                let pairs = [
                    ("U(X)", tt[c].energy_current, tl[c].energy_current),
                    (
                        "U(Z) - U(X)",
                        tt[c].energy_difference,
                        tl[c].energy_difference,
                    ),
                    ("forward", tt[c].forward_norm, tl[c].forward_norm),
                    ("reverse", tt[c].reverse_norm, tl[c].reverse_norm),
                ];
                for (what, a, b) in pairs {
                    // Cached energies' difference against the local target's one reduction.
                    if (a - b).abs() > 1e-4 * (1.0 + tl[c].energy_current.abs()) {
                        failures.push(format!(
                            "{method:?} outer {outer} chain {c} {what}: tangent {a}, local {b}"
                        ));
                    }
                }
            }
            let mask: Vec<bool> = (0..CHAINS)
                .map(|c| (c + outer as usize).is_multiple_of(2))
                .collect();
            t.accept(&mask).unwrap();
            l.accept(&mask).unwrap();
            let (it, il) = (t.images().unwrap(), l.images().unwrap());
            for (i, (a, b)) in it.iter().zip(&il).enumerate() {
                if (a - b).abs() > 1e-4 * (1.0 + b.abs()) {
                    failures.push(format!(
                        "{method:?} outer {outer} image value {i}: tangent {a}, local {b}"
                    ));
                }
            }
        }
        report(failures);
    }
}

/// k = 0, k above the kernels' limit, a class with fewer than k + 1 images, and a negative or
/// non-finite scale are usage errors, not panics, naming the setting (the library names settings,
/// not options: `tests/cli.rs` checks that the command line still prints `--tangent-k`).
#[test]
fn bad_settings_are_usage_errors() {
    let cases = [
        (TangentSettings { k: 0, scale: 1.0 }, "tangent_k"),
        (TangentSettings { k: 65, scale: 1.0 }, "tangent_k"),
        // Chain 3's class has 10 rows: k = 10 needs 11.
        (TangentSettings { k: 10, scale: 1.0 }, "tangent_k"),
        (TangentSettings { k: 3, scale: -0.5 }, "tangent_scale"),
        (
            TangentSettings {
                k: 3,
                scale: f32::NAN,
            },
            "tangent_scale",
        ),
        (
            TangentSettings {
                k: 3,
                scale: f32::INFINITY,
            },
            "tangent_scale",
        ),
    ];
    for (settings, expected) in cases {
        match base(0.0, 1.0)
            .with_tangent(settings)
            .with_kind(TargetKind::Tangent, CHAINS, SEED)
        {
            Err(Error::Usage { field, .. }) if field == expected => {}
            Err(e) => panic!("{settings:?}: expected a usage error on {expected}, got {e}"),
            Ok(_) => panic!("{settings:?}: accepted"),
        }
    }
    // k = 9 fits every class (the smallest has 10 rows).
    base(0.0, 1.0)
        .with_tangent(TangentSettings { k: 9, scale: 1.0 })
        .with_kind(TargetKind::Tangent, CHAINS, SEED)
        .unwrap();
}
