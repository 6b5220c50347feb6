//! `--noise gibbs`: the conditional Gibbs draw of the noise precision against its posterior
//! (KS, fixed X so the residual is fixed: a Gamma at X = 0, the Bayesian-lasso tilt by quadrature
//! at X ≠ 0), the precision's use in the energies, bad settings
//! refused by name, bit-identical resume with the precision (both backends), and the GPU chains
//! against the CPU's from one seed with per-chain precisions, element by element.

#[cfg(feature = "gpu")]
mod gpu_common;

use rmld::math::Portable;
use std::sync::Arc;

use rmld::backend::cpu::CpuBackend;
use rmld::backend::{Backend, DynamicsSettings, ModelState};
use rmld::diagnostics::reference::{ks_p_value, ks_statistic, tilted_root_gamma_cdf};
use rmld::io::Pixels;
use rmld::methods::Method;
use rmld::model::{Dictionary, NoiseModel, Observations, Target};
use rmld::orchestrator::{self, Hooks, Init, MemorySink, SampleRun, SamplerSettings};

/// ln Γ(x) by Lanczos (g = 7, n = 9), relative error below 1e-13 for x > 0.
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    let x = x - 1.0;
    let t = x + 7.5;
    let sum: f64 = C[0] + (1..9).map(|i| C[i] / (x + i as f64)).sum::<f64>();
    0.5 * (2.0 * std::f64::consts::PI).ln_portable() + (x + 0.5) * t.ln_portable() - t
        + sum.ln_portable()
}

/// The regularised lower incomplete gamma P(a, x): the Gamma(a, 1) CDF at x (series below
/// a + 1, Lentz's continued fraction above; Numerical Recipes §6.2).
fn gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    let front = (a * x.ln_portable() - x - ln_gamma(a)).exp_portable();
    if x < a + 1.0 {
        let (mut term, mut sum, mut n) = (1.0 / a, 1.0 / a, a);
        for _ in 0..10_000 {
            n += 1.0;
            term *= x / n;
            sum += term;
            if term.abs() < sum.abs() * 1e-15 {
                break;
            }
        }
        return front * sum;
    }
    let tiny = 1e-300;
    let mut b = x + 1.0 - a;
    let mut c = 1.0 / tiny;
    let mut d = 1.0 / b;
    let mut h = d;
    for i in 1..10_000 {
        let an = -(i as f64) * (i as f64 - a);
        b += 2.0;
        d = an * d + b;
        d = if d.abs() < tiny { tiny } else { d };
        c = b + an / c;
        c = if c.abs() < tiny { tiny } else { c };
        d = 1.0 / d;
        let delta = d * c;
        h *= delta;
        if (delta - 1.0).abs() < 1e-15 {
            break;
        }
    }
    1.0 - front * h
}

/// One observation `y` (d pixels, scale 1) under a d × p dictionary, with noise model `noise`.
fn target(d: usize, p: usize, y: Vec<f32>, noise: NoiseModel) -> Arc<Target> {
    let a: Vec<f32> = (0..d * p)
        .map(|i| ((i * 37 % 101) as f32 / 50.0 - 1.0) * 0.5)
        .collect();
    let observations = Observations {
        n: 1,
        d,
        pixels: Pixels::F32(y),
        scale: 1.0,
    };
    Arc::new(
        Target::new(
            Arc::new(Dictionary { d, p, a }),
            Arc::new(observations),
            0.5,
        )
        .with_noise(noise),
    )
}

/// A deterministic observation: a sine ramp of amplitude `scale`.
fn ramp(d: usize, scale: f32) -> Vec<f32> {
    (0..d)
        .map(|i| (i as f32 * 0.7).sin_portable() * scale + 0.3 * scale)
        .collect()
}

fn dynamics(method: Method, seed: u64) -> DynamicsSettings {
    DynamicsSettings {
        method,
        eta: 0.01,
        leapfrog_steps: 3,
        seed,
        steps: 3,
        batch: 1,
        ..Default::default()
    }
}

fn settings(chains: usize, samples: u32, dynamics: &DynamicsSettings) -> SamplerSettings {
    SamplerSettings {
        chains,
        samples,
        adapt: None,
        auto_burn_in: None,
        dynamics: dynamics.clone(),
        mh: true,
        discount: 1.0,
        init: Init::Noise,
        lasso_iterations: 1,
    }
}

/// Fixed X (never proposed, so the residual never changes) and Gaussian residuals: X = 0, so
/// r = −y with y ~ N(0, s²) per pixel and ||X||₁ = 0: the precision drawn by `noise_step` (the
/// run's own Gibbs step: images, residual norms, the per-chain streams, the backend's update)
/// must follow Gamma(e + (d + p)/2, f + ||r||²/2) (the Bayesian-lasso prior's (λ√τ)^p normaliser
/// adds p/2 to the shape). 250 chains × 8 outer iterations = 2000 draws, fixed seed; the test
/// fails when the KS p-value is below 0.001 (a correct sampler fails it for 0.1% of seeds;
/// the seed is fixed, so the test is deterministic), and when the sample mean is more than 4
/// Monte Carlo standard errors from the posterior mean.
#[test]
fn gibbs_draws_follow_the_gamma_posterior() {
    let (d, p, chains) = (48, 16, 250);
    // Gaussian pixels from the crate's own normal stream (fixed).
    let mut y = vec![0f32; d];
    rmld::rng::Stream::new(99, 0, 0, 0, rmld::rng::Purpose::InitNoise).fill_normal(&mut y);
    let s = 0.3f32;
    y.iter_mut().for_each(|v| *v *= s);
    let (e, f) = (2.0f32, 0.5f32);
    let t = target(d, p, y.clone(), NoiseModel::Gibbs { e, f });
    let dyn_ = dynamics(Method::Rmld, 5);
    let set = settings(chains, 8, &dyn_);
    let mut cpu = CpuBackend::new(t.clone(), dyn_.clone(), chains);
    let codes = vec![0.0; chains * p];
    cpu.load_positions(&codes).unwrap();
    let images = cpu.images().unwrap();
    assert!(images.iter().all(|&v| v == 0.0));
    let r2: f64 = y.iter().map(|&v| (v as f64).powi(2)).sum();
    let (shape, rate) = (e as f64 + (d + p) as f64 / 2.0, f as f64 + r2 / 2.0);
    let mut draws = Vec::new();
    for outer in 1..=8 {
        let tau = orchestrator::noise_step(&mut cpu, &t, &set, &images, &codes, outer).unwrap();
        assert_eq!(cpu.noise_precision().unwrap().unwrap(), tau);
        draws.extend(tau.iter().map(|&v| v as f64));
    }
    let n = draws.len();
    let dks = ks_statistic(&draws, |x| gamma_p(shape, rate * x));
    let pv = ks_p_value(dks, n);
    eprintln!(
        "KS D = {dks:.4} p = {pv:.3e} wrong-shape p = {:.3e}",
        ks_p_value(ks_statistic(&draws, |x| gamma_p(shape + 1.0, rate * x)), n)
    );
    assert!(pv > 1e-3, "KS D = {dks:.4}, p = {pv:.2e} over {n} draws");
    let mean = draws.iter().sum::<f64>() / n as f64;
    let se = (shape / (rate * rate) / n as f64).sqrt();
    assert!(
        (mean - shape / rate).abs() < 4.0 * se,
        "mean {mean} vs posterior mean {} (se {se})",
        shape / rate
    );
    // The CDF itself: P(a, a) near ½ for large a, and the mean of Gamma(a, 1) at its median-ish.
    assert!((gamma_p(1.0, 1.0) - (1.0 - (-1.0f64).exp_portable())).abs() < 1e-12);
}

/// The same at a fixed X ≠ 0, where the Bayesian-lasso prior exp(−λ√τ·||X||₁) tilts the
/// conditional: √τ has density ∝ u^(2k−1)·exp(−β·u² − γ·u), k = e + (d + p)/2,
/// β = f + ||A X − y||²/2, γ = λ·||X||₁. 2000 draws of the run's own step (per chain its own
/// X, so its own β and γ; the KS test takes each draw through its chain's CDF by quadrature,
/// so the transformed draws are U(0, 1)); fails below p = 0.001; γ = 0 in place of λ||X||₁
/// must fail.
#[test]
fn gibbs_draws_follow_the_tilted_posterior_at_a_fixed_x() {
    let (d, p, chains) = (48, 16, 250);
    let mut y = vec![0f32; d];
    rmld::rng::Stream::new(99, 0, 0, 0, rmld::rng::Purpose::InitNoise).fill_normal(&mut y);
    let (e, f) = (2.0f32, 0.5f32);
    let t = target(d, p, y.clone(), NoiseModel::Gibbs { e, f });
    let dyn_ = dynamics(Method::Rmld, 5);
    let set = settings(chains, 8, &dyn_);
    let mut cpu = CpuBackend::new(t.clone(), dyn_.clone(), chains);
    let codes: Vec<f32> = (0..chains * p)
        .map(|i| ((i * 7919 % 61) as f32 / 30.0 - 1.0) * 0.4)
        .collect();
    cpu.load_positions(&codes).unwrap();
    let images = cpu.images().unwrap();
    let k = e as f64 + (d + p) as f64 / 2.0;
    let cdfs: Vec<_> = (0..chains)
        .map(|c| {
            let r2: f64 = images[c * d..(c + 1) * d]
                .iter()
                .zip(&y)
                .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
                .sum();
            let l1: f64 = codes[c * p..(c + 1) * p]
                .iter()
                .map(|v| v.abs() as f64)
                .sum();
            let beta = f as f64 + r2 / 2.0;
            (
                tilted_root_gamma_cdf(k, beta, t.lam as f64 * l1, 100_000),
                tilted_root_gamma_cdf(k, beta, 0.0, 100_000),
            )
        })
        .collect();
    let (mut right, mut untilted) = (Vec::new(), Vec::new());
    for outer in 1..=8 {
        let tau = orchestrator::noise_step(&mut cpu, &t, &set, &images, &codes, outer).unwrap();
        for (c, &v) in tau.iter().enumerate() {
            let u = (v as f64).sqrt();
            right.push(cdfs[c].0(u));
            untilted.push(cdfs[c].1(u));
        }
    }
    let n = right.len();
    let uniform = |x: f64| x.clamp(0.0, 1.0);
    let pv = ks_p_value(ks_statistic(&right, uniform), n);
    let wrong = ks_p_value(ks_statistic(&untilted, uniform), n);
    eprintln!("tilted KS p = {pv:.3e}; against the untilted conditional p = {wrong:.3e}");
    assert!(pv > 1e-3, "KS p = {pv:.2e} over {n} draws");
    assert!(
        wrong < 1e-3,
        "the untilted conditional passes too (p = {wrong:.2e})"
    );
}

/// The precision set on a backend is the one its energies use: U(X) = τ/2·||A X − y||² +
/// lam·√τ·||X||₁ per chain (the Bayesian-lasso prior in noise units), and the cached gradient follows (a second set restores the first MH
/// terms exactly).
#[test]
fn the_precision_is_used_in_the_energies() {
    let (d, p, chains) = (12, 20, 3);
    let t = target(d, p, ramp(d, 2.0), NoiseModel::gibbs());
    let dyn_ = dynamics(Method::Mala, 3);
    let mut cpu = CpuBackend::new(t.clone(), dyn_, chains);
    let x: Vec<f32> = (0..chains * p)
        .map(|i| ((i * 7919 % 61) as f32 / 30.0 - 1.0) * 0.8)
        .collect();
    cpu.load_positions(&x).unwrap();
    let tau = [0.25f32, 1.0, 4.0];
    cpu.set_noise_precision(&tau).unwrap();
    let terms = cpu.propose(1).unwrap();
    let images = cpu.images().unwrap();
    for c in 0..chains {
        let r2: f64 = images[c * d..(c + 1) * d]
            .iter()
            .zip(&t.xbar)
            .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
            .sum();
        let l1: f64 = x[c * p..(c + 1) * p].iter().map(|v| v.abs() as f64).sum();
        let want = 0.5 * tau[c] as f64 * r2 + t.lam as f64 * (tau[c] as f64).sqrt() * l1;
        let got = terms[c].energy_current as f64;
        assert!(
            (got - want).abs() <= 1e-4 * want.abs(),
            "chain {c}: energy {got}, expected {want}"
        );
    }
    // Bad precisions are refused (not finite, not positive, wrong length).
    for bad in [vec![1.0, f32::NAN, 1.0], vec![1.0, 0.0, 1.0], vec![1.0]] {
        assert!(cpu.set_noise_precision(&bad).is_err(), "{bad:?}");
    }
}

#[test]
fn bad_noise_settings_are_refused_by_name_and_range() {
    for (e, f, name) in [
        (0.0, 1.0, "noise_e"),
        (-1.0, 1.0, "noise_e"),
        (f32::NAN, 1.0, "noise_e"),
        (1.0, 0.0, "noise_f"),
        (1.0, f32::INFINITY, "noise_f"),
    ] {
        let err = NoiseModel::Gibbs { e, f }
            .validate()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(name) && err.contains("positive finite"),
            "{e}, {f}: {err}"
        );
        // The session refuses it before any work, naming the setting.
        let mut problem = rmld::session::ProblemSettings {
            noise: NoiseModel::Gibbs { e, f },
            ..Default::default()
        };
        let err = problem.validate().unwrap_err().to_string();
        assert!(err.contains(name), "{err}");
        problem.noise = NoiseModel::gibbs();
        problem.target = rmld::TargetKind::Tangent;
        let err = problem.validate().unwrap_err().to_string();
        assert!(err.contains("noise") && err.contains("tangent"), "{err}");
    }
    // A run with a bad model never starts either.
    let t = target(4, 8, ramp(4, 1.0), NoiseModel::Gibbs { e: -1.0, f: 1.0 });
    let dyn_ = dynamics(Method::Rmld, 1);
    let mut cpu = CpuBackend::new(t.clone(), dyn_.clone(), 2);
    let mut sink = MemorySink::default();
    let err = orchestrator::run(&mut cpu, &t, &settings(2, 2, &dyn_), &mut sink, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("noise_e"), "{err}");
}

/// Runs `samples` iterations on `backend`, or `split` then the rest on `resumed` after loading
/// the positions and the precision as a checkpoint holds them.
fn run_split(
    make: &mut dyn FnMut() -> Box<dyn Backend>,
    t: &Arc<Target>,
    dyn_: &DynamicsSettings,
    chains: usize,
    samples: u32,
    split: Option<u32>,
) -> (Vec<f32>, SampleRun) {
    let mut sink = MemorySink::default();
    let Some(split) = split else {
        let mut b = make();
        let run = orchestrator::run(
            b.as_mut(),
            t,
            &settings(chains, samples, dyn_),
            &mut sink,
            &mut |_| {},
        )
        .unwrap();
        return (b.positions().unwrap(), run);
    };
    let mut first = make();
    let part = orchestrator::run(
        first.as_mut(),
        t,
        &settings(chains, split, dyn_),
        &mut sink,
        &mut |_| {},
    )
    .unwrap();
    // Through the checkpoint's bytes, as `resume` reads them.
    let checkpoint = orchestrator::Checkpoint {
        config: serde_json::json!({}),
        data_hash: 0,
        dictionary_hash: 0,
        d: t.d(),
        p: t.p(),
        positions: first.positions().unwrap(),
        run: part,
        identity: None,
        written_by: None,
        device: None,
        wall_seconds: None,
    };
    let checkpoint = orchestrator::Checkpoint::from_bytes(&checkpoint.to_bytes()).unwrap();
    assert_eq!(checkpoint.run.noise_precision.len(), chains);
    let mut second = make();
    second.load_positions(&checkpoint.positions).unwrap();
    second
        .set_noise_precision(&checkpoint.run.noise_precision)
        .unwrap();
    let hooks = Hooks {
        sink: &mut sink,
        progress: &mut |_| {},
        stop: &|| false,
        checkpoint_every: 0,
        checkpoint_due: &|| false,
        checkpoint: &mut |_, _| Ok(()),
    };
    let run = orchestrator::continue_run(
        second.as_mut(),
        t,
        &settings(chains, samples, dyn_),
        checkpoint.run,
        hooks,
    )
    .unwrap();
    (second.positions().unwrap(), run)
}

fn assert_resume_identical(make: &mut dyn FnMut() -> Box<dyn Backend>, t: &Arc<Target>) {
    let dyn_ = dynamics(Method::Rmld, 7);
    let (x_full, full) = run_split(make, t, &dyn_, 4, 10, None);
    let (x_split, split) = run_split(make, t, &dyn_, 4, 10, Some(6));
    assert_eq!(x_split, x_full);
    assert_eq!(split.noise_precision, full.noise_precision);
    assert_eq!(split.noise_trace, full.noise_trace);
    assert_eq!(split.accepted, full.accepted);
    assert_eq!(full.noise_trace.len(), 10 * 4);
    // The precision moved with X (not a constant).
    assert_ne!(full.noise_trace[..4], full.noise_trace[36..]);
}

#[test]
fn resume_with_the_precision_is_bit_identical() {
    let t = target(12, 20, ramp(12, 2.0), NoiseModel::gibbs());
    let dyn_ = dynamics(Method::Rmld, 7);
    assert_resume_identical(
        &mut || Box::new(CpuBackend::new(t.clone(), dyn_.clone(), 4)),
        &t,
    );
}

#[cfg(feature = "gpu")]
#[test]
fn gpu_resume_with_the_precision_is_bit_identical() {
    let Some(ctx) = gpu_common::context("gpu_resume_with_the_precision_is_bit_identical") else {
        return;
    };
    let t = target(12, 20, ramp(12, 2.0), NoiseModel::gibbs());
    let dyn_ = dynamics(Method::Rmld, 7);
    assert_resume_identical(
        &mut || Box::new(gpu_common::backend(&ctx, &t, &dyn_, 4, None)),
        &t,
    );
}

/// |a − b| ≤ tol·max(|a|, |b|, floor), both finite.
#[cfg(feature = "gpu")]
fn close(a: f64, b: f64, tol: f64, floor: f64) -> bool {
    a.is_finite() && b.is_finite() && (a - b).abs() <= tol * a.abs().max(b.abs()).max(floor)
}

/// The GPU's per-chain precision buffer (gradient steps, full gradients, MH terms) against the
/// CPU twin: distinct precisions per chain in two groups of buffers, then whole gibbs runs from
/// one seed; every MH term, position and drawn precision element by element (relative 1e-4,
/// the twin tolerance of the other GPU tests), each mismatch with its index and both values.
#[cfg(feature = "gpu")]
fn gpu_matches_cpu(label: &str, d: usize, p: usize, method: Method) {
    let Some(ctx) = gpu_common::context(label) else {
        return;
    };
    let chains = 4;
    let t = target(d, p, ramp(d, 2.0), NoiseModel::gibbs());
    let dyn_ = dynamics(method, 11);
    // Two chains per group: each group's precision buffer is indexed from its own first chain.
    let limit = Some((4 * d.max(p) * chains / 2) as u64);
    let mut gpu = gpu_common::backend(&ctx, &t, &dyn_, chains, limit);
    assert_eq!(gpu.groups(), 2);
    let mut cpu = CpuBackend::new(t.clone(), dyn_.clone(), chains);
    let start: Vec<f32> = (0..chains * p)
        .map(|i| ((i * 7919 % 61) as f32 / 30.0 - 1.0) * 0.8)
        .collect();
    let tau = [0.2f32, 1.0, 3.0, 9.0];
    let mut bad = Vec::new();
    for b in [&mut gpu as &mut dyn Backend, &mut cpu] {
        b.load_positions(&start).unwrap();
        b.set_noise_precision(&tau).unwrap();
    }
    for outer in 1..=3 {
        let (tg, tc) = (gpu.propose(outer).unwrap(), cpu.propose(outer).unwrap());
        for (c, (g, k)) in tg.iter().zip(&tc).enumerate() {
            let floor = k.energy_current.abs() as f64 * 1e-2;
            for (name, a, b, floor) in [
                ("energy_current", g.energy_current, k.energy_current, 1e-6),
                (
                    "energy_difference",
                    g.energy_difference,
                    k.energy_difference,
                    floor,
                ),
                ("forward_norm", g.forward_norm, k.forward_norm, 1e-6),
                ("reverse_norm", g.reverse_norm, k.reverse_norm, 1e-6),
                (
                    "kinetic_difference",
                    g.kinetic_difference,
                    k.kinetic_difference,
                    floor,
                ),
            ] {
                if !close(a as f64, b as f64, 1e-4, floor) {
                    bad.push(format!(
                        "outer {outer} chain {c} {name}: gpu {a:e}, cpu {b:e}"
                    ));
                }
            }
        }
        // Both outcomes, so the selection runs either way.
        let mask = [true, false, outer % 2 == 1, true];
        gpu.accept(&mask).unwrap();
        cpu.accept(&mask).unwrap();
        let (xg, xc) = (gpu.positions().unwrap(), cpu.positions().unwrap());
        for (i, (&a, &b)) in xg.iter().zip(&xc).enumerate() {
            if !close(a as f64, b as f64, 1e-4, 1e-3) {
                bad.push(format!(
                    "outer {outer} position chain {} [{}]: gpu {a:e}, cpu {b:e}",
                    i / p,
                    i % p
                ));
            }
        }
    }
    // Whole runs: the precisions drawn from one seed on both backends.
    let mut sink = MemorySink::default();
    let s = settings(chains, 5, &dyn_);
    let mut gpu = gpu_common::backend(&ctx, &t, &dyn_, chains, limit);
    let mut cpu = CpuBackend::new(t.clone(), dyn_.clone(), chains);
    let rg = orchestrator::run(&mut gpu, &t, &s, &mut sink, &mut |_| {}).unwrap();
    let rc = orchestrator::run(&mut cpu, &t, &s, &mut sink, &mut |_| {}).unwrap();
    assert_eq!(rc.noise_trace.len(), 5 * chains);
    for (i, (&a, &b)) in rg.noise_trace.iter().zip(&rc.noise_trace).enumerate() {
        if !close(a as f64, b as f64, 1e-4, 0.0) {
            bad.push(format!(
                "run precision outer {} chain {}: gpu {a:e}, cpu {b:e}",
                i / chains + 1,
                i % chains
            ));
        }
    }
    if rg.accepted != rc.accepted {
        bad.push(format!(
            "accepted gpu {:?}, cpu {:?}",
            rg.accepted, rc.accepted
        ));
    }
    gpu_common::assert_none(bad);
}

#[cfg(feature = "gpu")]
#[test]
fn gpu_rmld_gibbs_matches_cpu_in_two_groups() {
    gpu_matches_cpu(
        "gpu_rmld_gibbs_matches_cpu_in_two_groups",
        12,
        20,
        Method::Rmld,
    );
}

#[cfg(feature = "gpu")]
#[test]
fn gpu_hmc_gibbs_matches_cpu_scalar_loads() {
    gpu_matches_cpu(
        "gpu_hmc_gibbs_matches_cpu_scalar_loads",
        11,
        19,
        Method::Hmc,
    );
}

#[cfg(feature = "gpu")]
#[test]
fn gpu_mala_gibbs_matches_cpu_in_two_groups() {
    gpu_matches_cpu(
        "gpu_mala_gibbs_matches_cpu_in_two_groups",
        12,
        20,
        Method::Mala,
    );
}

/// Scale equivariance (docs/noise.md): the same problem with the data × 255, same seed, LASSO
/// starts. With the prior and the moves in noise units, every chain's run at scale 255 is the
/// run at scale 1 with codes × 255 and τ / 255² (up to f32 rounding): the same MH decisions,
/// τ·255² within 1e-3 relative, codes / 255 within 1e-2 (of the largest code), for RMLD, MALA
/// and HMC. Under a fixed σ² the decisions differ (checked for RMLD, to show the test can fail).
#[test]
fn gibbs_runs_are_scale_equivariant() {
    let (d, p, chains, k, s) = (24, 40, 6, 6u32, 255f32);
    for method in [Method::Rmld, Method::Mala, Method::Hmc] {
        let mut runs = Vec::new();
        for (scale, noise) in [
            (1.0, NoiseModel::gibbs()),
            (s, NoiseModel::gibbs()),
            (1.0, NoiseModel::Fixed),
            (s, NoiseModel::Fixed),
        ] {
            let t = target(d, p, ramp(d, scale), noise);
            let mut dyn_ = dynamics(method, 21);
            dyn_.eta = match method {
                Method::Rmld => 0.02,
                _ => 0.05,
            };
            let mut set = settings(chains, k, &dyn_);
            set.init = Init::Lasso;
            set.lasso_iterations = 200;
            let mut cpu = CpuBackend::new(t.clone(), dyn_.clone(), chains);
            let mut sink = MemorySink::default();
            let run = orchestrator::run(&mut cpu, &t, &set, &mut sink, &mut |_| {}).unwrap();
            runs.push((run, sink));
        }
        let (a, b) = (&runs[0], &runs[1]);
        eprintln!(
            "{method:?}: accepted at 1 {:?}, at 255 {:?}; fixed σ²: {:?} vs {:?}",
            a.0.accepted, b.0.accepted, runs[2].0.accepted, runs[3].0.accepted
        );
        assert_eq!(
            a.0.accepted, b.0.accepted,
            "{method:?}: MH decisions differ"
        );
        assert!(
            a.0.accepted.iter().sum::<u32>() > 0,
            "{method:?}: nothing accepted"
        );
        let mut bad = Vec::new();
        for (i, (&t1, &t2)) in a.0.noise_trace.iter().zip(&b.0.noise_trace).enumerate() {
            let scaled = t2 as f64 * (s as f64).powi(2);
            if (scaled - t1 as f64).abs() > 1e-3 * t1 as f64 {
                bad.push(format!(
                    "τ [{i}]: scale 1 {t1:e}, scale 255 × 255² {scaled:e}"
                ));
            }
        }
        let top = a.1.codes.iter().fold(0f32, |m, v| m.max(v.abs())) as f64;
        for (i, (&x1, &x2)) in a.1.codes.iter().zip(&b.1.codes).enumerate() {
            if (x2 as f64 / s as f64 - x1 as f64).abs() > 1e-2 * top {
                bad.push(format!(
                    "code [{i}]: scale 1 {x1:e}, scale 255 / 255 {:e}",
                    x2 / s
                ));
            }
        }
        assert!(
            bad.is_empty(),
            "{method:?}: {} mismatches: {:?}",
            bad.len(),
            &bad[..bad.len().min(10)]
        );
        if method == Method::Rmld {
            assert_ne!(
                runs[2].0.accepted, runs[3].0.accepted,
                "fixed σ² is scale-free too?"
            );
        }
    }
}

/// Asks to stop once `stop_after` outer iterations are done.
struct StopAfter(u32, std::sync::atomic::AtomicU32);

impl rmld::session::Observer for StopAfter {
    fn phase_advance(&self, position: u64) {
        self.1
            .store(position as u32, std::sync::atomic::Ordering::SeqCst);
    }
    fn stop_requested(&self) -> bool {
        self.1.load(std::sync::atomic::Ordering::SeqCst) >= self.0
    }
}

/// The session path: `rmld sample --noise gibbs` stopped after 2 of 6 iterations and resumed
/// from its checkpoint (the noise model read back from the checkpoint's configuration) writes
/// the uninterrupted run's codes and images byte for byte, and its report the same precisions.
#[test]
fn a_stopped_gibbs_session_resumes_to_the_uninterrupted_run() {
    use rmld::session::{BackendChoice, SampleSettings, Sampler, Silent};
    let dir = tempfile::tempdir().unwrap();
    let settings = |out: std::path::PathBuf| {
        let mut s = SampleSettings::default();
        s.problem.backend = BackendChoice::Cpu;
        s.problem.out = out;
        s.problem.noise = NoiseModel::gibbs();
        s.chains = 4;
        s.samples = 6;
        s.dynamics.steps = 3;
        s.dynamics.lasso_iterations = 20;
        s
    };
    let (whole, split) = (dir.path().join("whole"), dir.path().join("split"));
    let full = Sampler::new(settings(whole.clone())).run(&Silent).unwrap();
    let stopped = Sampler::new(settings(split.clone()))
        .run(&StopAfter(2, Default::default()))
        .unwrap();
    assert!(stopped.interrupted);
    let resumed = Sampler::resume(&split, &Silent).unwrap();
    assert!(!resumed.interrupted);
    for name in ["codes.npy", "images.npy"] {
        let a = std::fs::read(whole.join(name)).unwrap();
        let b = std::fs::read(split.join(name)).unwrap();
        assert!(a == b, "{name} differs after resume");
    }
    let (a, b) = (&full.report["noise"], &resumed.report["noise"]);
    assert!(a["posterior_mean"].as_f64().unwrap() > 0.0, "{a}");
    assert_eq!(a["trace"], b["trace"]);
    assert_eq!(a["final"], b["final"]);
    assert_eq!(a["trace"].as_array().unwrap().len(), 6);
    // τ is a traced quantity of the diagnostics, with R-hat and ESS (as for the energy).
    let quantities = full.report["diagnostics"]["quantities"].as_array().unwrap();
    let tau = quantities
        .iter()
        .find(|q| q["name"] == "noise precision")
        .unwrap_or_else(|| panic!("no noise precision in {quantities:?}"));
    let energy = &quantities[0];
    for key in ["rhat", "ess_bulk", "ess_tail"] {
        assert_eq!(
            tau[key].is_number(),
            energy[key].is_number(),
            "{key}: {tau}"
        );
    }
}
