//! The learned sampler (paper 004): the MLP's backprop against finite differences, the exact draws
//! of the 2-D targets, AG-SVGD's direction, and the MH-corrected SAL-MC chains against exact draws of
//! each Table 1 target by an MMD permutation test. Fixed seeds; small enough for a debug build.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rmld::amortize::{mmd_test, train, MhRatio, Mlp, Operator, Progress, SalSettings, Toy};
use rmld::math::Portable;

/// d loss / d params and d loss / d input by backprop equal central differences (loss = Σ w ⊙ out).
#[test]
fn mlp_backprop_matches_finite_differences() {
    let mut rng = StdRng::seed_from_u64(1);
    let mut net = Mlp::new(&[3, 5, 4, 2], &mut rng);
    let batch = 3;
    let x: Vec<f32> = (0..batch * 3).map(|_| rng.random::<f32>() - 0.5).collect();
    let w: Vec<f32> = (0..batch * 2).map(|_| rng.random::<f32>() - 0.5).collect();
    let loss = |net: &Mlp, x: &[f32]| -> f64 {
        let t = net.forward(x, batch);
        t.output().iter().zip(&w).map(|(o, w)| (o * w) as f64).sum()
    };
    let tape = net.forward(&x, batch);
    let mut grads = net.zero_grads();
    let gx = net.backward(&tape, &w, &mut grads);
    let h = 1e-2f32;
    let mut mismatches = Vec::new();
    for (i, &g) in gx.iter().enumerate() {
        let mut xp = x.clone();
        xp[i] += h;
        let mut xm = x.clone();
        xm[i] -= h;
        let fd = (loss(&net, &xp) - loss(&net, &xm)) / (2.0 * h as f64);
        if (fd - g as f64).abs() > 2e-3 {
            mismatches.push(format!("input {i}: backprop {g} vs difference {fd}"));
        }
    }
    let n_params = grads.0.len();
    for k in 0..n_params {
        for j in 0..grads.0[k].len() {
            let orig = net.params_mut()[k][j];
            net.params_mut()[k][j] = orig + h;
            let lp = loss(&net, &x);
            net.params_mut()[k][j] = orig - h;
            let lm = loss(&net, &x);
            net.params_mut()[k][j] = orig;
            let fd = (lp - lm) / (2.0 * h as f64);
            let g = grads.0[k][j] as f64;
            if (fd - g).abs() > 2e-3 {
                mismatches.push(format!("param {k}[{j}]: backprop {g} vs difference {fd}"));
            }
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// The exact draws have the targets' known moments (A-NICE-MC's: Mog2 std (5, 0.5); Mog6 std
/// 3.57 per axis; Ring std 1.456 per axis; Ring5's radius, rings i = 1..5 weighted by i: mean
/// (Σ i² + 5·0.02)/15 = 3.673, std 1.237, from 20 000 draws (standard error about 0.009).
#[test]
fn exact_draws_have_the_known_moments() {
    let mut rng = StdRng::seed_from_u64(2);
    let n = 20_000;
    let std = |v: &[f64]| {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / v.len() as f64).sqrt()
    };
    for (toy, expect) in [
        (Toy::Mog2, [5.0, 0.5]),
        (Toy::Mog6, [3.57, 3.57]),
        (Toy::Ring, [1.456, 1.456]),
    ] {
        let d = toy.draws(n, &mut rng);
        for (axis, &expected) in expect.iter().enumerate() {
            let v: Vec<f64> = d.iter().skip(axis).step_by(2).copied().collect();
            let s = std(&v);
            // The standard error of a standard deviation is about s/√(2n) (Gaussian); the
            // mixtures' is larger, so allow 5% relative.
            assert!(
                (s - expected).abs() < 0.05 * expected,
                "{}: axis {axis} std {s}, expected {}",
                toy.name(),
                expected
            );
        }
    }
    let d = Toy::Ring5.draws(n, &mut rng);
    let r: Vec<f64> = d
        .chunks_exact(2)
        .map(|p| p[0].hypot_portable(p[1]))
        .collect();
    let mean = r.iter().sum::<f64>() / n as f64;
    assert!(
        (mean - 3.673).abs() < 0.04,
        "Ring5 radius mean {mean}, expected 3.673"
    );
    assert!(
        (std(&r) - 1.237).abs() < 0.04,
        "Ring5 radius std {}, expected 1.237",
        std(&r)
    );
}

/// Bad settings are refused with the setting's name.
#[test]
fn bad_settings_name_the_setting() {
    let settings = SalSettings {
        particles: 1,
        ..SalSettings::default()
    };
    let err = train(&Toy::Ring, &settings, |_: &Progress| true)
        .unwrap_err()
        .to_string();
    assert!(err.contains("particles"), "{err}");
}

/// Final states of `chains` independent MH-corrected chains of `steps` steps each, flattened.
fn final_states(
    op: &Operator,
    toy: Toy,
    starts: &[[f64; 2]],
    steps: usize,
    ratio: MhRatio,
    rng: &mut StdRng,
) -> (Vec<f64>, f64) {
    let run = op.chains_with(&toy, starts, steps, Some(ratio), rng);
    let last = (0..starts.len())
        .flat_map(|c| run.draws[c * steps + steps - 1])
        .collect();
    (last, run.acceptance)
}

fn brief_training(toy: Toy, iterations: usize) -> Operator {
    let settings = SalSettings {
        iterations,
        particles: 128,
        hidden: 32,
        seed: 3,
        ..SalSettings::default()
    };
    train(&toy, &settings, |_: &Progress| true)
        .expect("training")
        .0
}

/// The two-sample test of issue 25: SAL-MC (briefly trained, HMC teacher) with the exact MH step,
/// 400 independent chains from uniform starts on [−1, 1]², 300 steps each; their final states
/// against 400 exact draws of each Table 1 target by an MMD permutation test (RBF, bandwidth 1,
/// 200 permutations): p > 0.01 per target, fixed seeds. This checks where the chains end up, not
/// how fast they mix (the example's ESS does that). Most steps (0.8) propose from the global
/// mixture fitted to the teacher's samples (`SalSettings::global_share`); with G's moves alone
/// the chains stayed in the modes they reached first (Mog6: p = 0.005, acceptance 0.09).
#[test]
fn mh_corrected_sal_mc_matches_exact_draws() {
    for toy in Toy::ALL {
        let op = brief_training(toy, 200);
        let mut rng = StdRng::seed_from_u64(4);
        let starts: Vec<[f64; 2]> = (0..400)
            .map(|_| {
                [
                    rng.random::<f64>() * 2.0 - 1.0,
                    rng.random::<f64>() * 2.0 - 1.0,
                ]
            })
            .collect();
        let (sample, acceptance) = final_states(&op, toy, &starts, 300, MhRatio::Exact, &mut rng);
        let exact = toy.draws(400, &mut rng);
        let (mmd, p) = mmd_test(&sample, &exact, 1.0, 200, &mut rng);
        println!(
            "{}: MMD² {mmd:.4}, p = {p:.4}, acceptance {acceptance:.2}",
            toy.name()
        );
        assert!(
            p > 0.01,
            "{}: MMD² {mmd:.4}, permutation p = {p:.4} (acceptance {acceptance:.2})",
            toy.name()
        );
    }
}

/// The exact MH step keeps each target invariant: 400 chains started from exact draws, 100
/// MH-corrected steps of the untrained G with its last layer's weights × 0.2 (near the identity,
/// σ ≈ 0.3, a small asymmetric drift μ:
/// the trained ones barely accept on Mog2 and Mog6, which would make the check empty), final
/// states against fresh exact draws (MMD permutation p > 0.01, acceptance above 5%). The paper's
/// ratio p(x')/p(x) (`MhRatio::TargetOnly`) on the same chains must fail (p < 0.01): the test
/// can tell a biased MH step.
#[test]
fn exact_mh_keeps_each_target() {
    for toy in Toy::ALL {
        let mut op = brief_training(toy, 0);
        // Damp the drift's growth away from the origin (the last layer's weights; its biases,
        // hence σ ≈ 0.3, stay).
        let mut params = op.net.params_mut();
        let last = params.len() - 2;
        for w in params[last].iter_mut() {
            *w *= 0.2;
        }
        let mut rng = StdRng::seed_from_u64(5);
        let starts: Vec<[f64; 2]> = toy
            .draws(400, &mut rng)
            .chunks_exact(2)
            .map(|p| [p[0], p[1]])
            .collect();
        let exact = toy.draws(400, &mut rng);
        let mut p_values = Vec::new();
        for ratio in [MhRatio::Exact, MhRatio::TargetOnly] {
            let (sample, acceptance) = final_states(&op, toy, &starts, 100, ratio, &mut rng);
            let (mmd, p) = mmd_test(&sample, &exact, 1.0, 200, &mut rng);
            println!(
                "{} {ratio:?}: MMD² {mmd:.4}, p = {p:.4}, acceptance {acceptance:.2}",
                toy.name()
            );
            p_values.push((p, acceptance));
        }
        let (exact_p, acceptance) = p_values[0];
        assert!(exact_p > 0.01, "{}: exact MH p = {exact_p}", toy.name());
        assert!(
            acceptance > 0.05,
            "{}: exact MH acceptance {acceptance}",
            toy.name()
        );
        assert!(
            p_values[1].0 < 0.01,
            "{}: the paper's ratio passed, p = {}",
            toy.name(),
            p_values[1].0
        );
    }
}

/// AG-SVGD alone (eq. 12-14, default settings) moves 128 particles from N(0, I) onto Mog2 and
/// Ring in 300 steps: the (unbiased) MMD² estimate against 400 exact draws falls below 0.02 and to under a tenth of
/// its start (N(0, I) against Mog2 starts near 0.66, against Ring near 0.15).
#[test]
fn ag_svgd_moves_particles_onto_the_target() {
    use rmld::amortize::{agsvgd_step, AgSvgdSettings};
    let mut rng = StdRng::seed_from_u64(6);
    for toy in [Toy::Mog2, Toy::Ring] {
        let mut x: Vec<[f64; 2]> = (0..128)
            .map(|_| {
                let u1: f64 = 1.0 - rng.random::<f64>();
                let u2: f64 = rng.random();
                let r = (-2.0 * u1.ln_portable()).sqrt();
                let a = std::f64::consts::TAU * u2;
                [r * a.cos_portable(), r * a.sin_portable()]
            })
            .collect();
        let exact = toy.draws(400, &mut rng);
        let mmd = |x: &[[f64; 2]], rng: &mut StdRng| {
            let flat: Vec<f64> = x.iter().flat_map(|p| *p).collect();
            mmd_test(&flat, &exact, 1.0, 0, rng).0
        };
        let before = mmd(&x, &mut rng);
        for _ in 0..300 {
            agsvgd_step(&mut x, |p| toy.energy(p), &AgSvgdSettings::default()).expect("AG-SVGD");
        }
        let after = mmd(&x, &mut rng);
        println!("{}: MMD² {before:.4} → {after:.4}", toy.name());
        assert!(
            after < 0.02 && after < before / 10.0,
            "{}: MMD² {before:.4} → {after:.4}",
            toy.name()
        );
    }
}
