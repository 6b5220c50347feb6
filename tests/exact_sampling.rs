//! MALA and HMC sample known posteriors on both backends: A = I (a Gaussian × Laplace product
//! with a closed-form CDF, checked by Kolmogorov-Smirnov) and lam = 0 (a Gaussian, checked by its
//! mean and covariance); plus the BlackJAX-style invariants and divergence handling.
//!
//! With the step size adapted across chains during the burn-in (dual averaging), the draws after
//! it freezes pass the same checks, and the frozen step meets its target acceptance within 0.05.
//!
//! Every test body takes a backend factory and runs on the CPU and, where an adapter exists, on
//! the GPU (lavapipe in CI). Seeds are fixed; tolerances come from the Monte Carlo error (ESS).

#[cfg(feature = "gpu")]
mod gpu_common;

use rmld::math::Portable;
use std::sync::Arc;

use rmld::backend::cpu::CpuBackend;
use rmld::backend::{Backend, DynamicsSettings};
use rmld::diagnostics::reference::{ks_p_value, ks_statistic, LaplaceGaussian};
use rmld::diagnostics::{ess_bulk, ess_tail, summarize};
use rmld::io::Pixels;
use rmld::methods::{Method, MhRule};
use rmld::model::{Dictionary, Observations, Target};
use rmld::orchestrator::{
    self, Adaptation, AutoBurnIn, Init, MemorySink, SampleRun, SamplerSettings,
};

type Factory = dyn Fn(Arc<Target>, DynamicsSettings, usize) -> Box<dyn Backend>;

fn cpu() -> Box<Factory> {
    Box::new(|t, s, c| Box::new(CpuBackend::new(t, s, c)))
}

#[cfg(feature = "gpu")]
fn gpu(label: &str) -> Option<Box<Factory>> {
    let ctx = gpu_common::context(label)?;
    Some(Box::new(move |t, s, c| {
        Box::new(
            rmld::backend::gpu::GpuBackend::with_context(
                ctx.clone(),
                t,
                s,
                c,
                // No group mixes classes, so per-class steps run (the same groups without).
                rmld::backend::gpu::GpuOptions {
                    class_groups: true,
                    ..Default::default()
                },
            )
            .unwrap(),
        )
    }))
}

/// One observation y (n = 1, f32 pixels, scale 1) under dictionary `a` (d × p).
fn target(a: Vec<f32>, d: usize, p: usize, rows: Vec<f32>, lam: f32, sigma2: f32) -> Arc<Target> {
    let n = rows.len() / d;
    let observations = Observations {
        n,
        d,
        pixels: Pixels::F32(rows),
        scale: 1.0,
    };
    let dictionary = Dictionary { d, p, a };
    Arc::new(Target::new(Arc::new(dictionary), Arc::new(observations), lam).with_sigma2(sigma2))
}

fn identity(p: usize) -> Vec<f32> {
    let mut a = vec![0f32; p * p];
    (0..p).for_each(|i| a[i * p + i] = 1.0);
    a
}

fn dynamics(method: Method, eta: f32, leapfrog_steps: u32, seed: u64) -> DynamicsSettings {
    DynamicsSettings {
        method,
        eta,
        leapfrog_steps,
        seed,
        steps: 1,
        batch: 1,
        ..Default::default()
    }
}

/// Runs `samples` outer iterations of `chains` chains from white noise; returns the codes.
fn sample(
    make: &Factory,
    target: &Arc<Target>,
    dynamics: DynamicsSettings,
    chains: usize,
    samples: u32,
) -> (Vec<f32>, SampleRun) {
    sample_adapting(make, target, dynamics, chains, samples, 0)
}

/// `sample` with the step size adapting over the first `adapt` iterations (0: not at all),
/// toward the method's documented target acceptance.
fn sample_adapting(
    make: &Factory,
    target: &Arc<Target>,
    dynamics: DynamicsSettings,
    chains: usize,
    samples: u32,
    adapt: u32,
) -> (Vec<f32>, SampleRun) {
    let method = dynamics.method;
    let settings = SamplerSettings {
        chains,
        samples,
        dynamics: dynamics.clone(),
        mh: true,
        discount: 1.0,
        init: Init::Noise,
        lasso_iterations: 1,
        adapt: (adapt > 0)
            .then(|| Adaptation::for_method(method, adapt))
            .flatten(),
        auto_burn_in: None,
    };
    let mut backend = make(target.clone(), dynamics, chains);
    let mut sink = MemorySink::default();
    let run =
        orchestrator::run(backend.as_mut(), target, &settings, &mut sink, &mut |_| {}).unwrap();
    (sink.codes, run)
}

/// Coordinate j's draws per chain after dropping the first `burn` iterations.
fn coordinate(codes: &[f32], chains: usize, p: usize, j: usize, burn: usize) -> Vec<Vec<f64>> {
    let k = codes.len() / (chains * p);
    (0..chains)
        .map(|c| {
            (burn..k)
                .map(|i| codes[(i * chains + c) * p + j] as f64)
                .collect()
        })
        .collect()
}

const Y: [f32; 6] = [0.3, -1.2, 2.0, 0.0, 0.8, -0.4];
const LAM: f32 = 1.5;
const SIGMA2: f32 = 0.7;

/// A = I: every coordinate's draws, thinned to about one per effective sample, pass a KS test
/// against the closed-form CDF at level 0.01 with a Bonferroni correction over the coordinates.
/// With `adapt`, the step size adapts over the burn-in from `eta` and the draws after it freeze
/// are checked.
fn identity_posterior_passes_ks(
    make: &Factory,
    method: Method,
    eta: f32,
    leapfrog: u32,
    adapt: bool,
) {
    let p = Y.len();
    let t = target(identity(p), p, p, Y.to_vec(), LAM, SIGMA2);
    let (chains, samples, burn) = (64, 300, 50);
    let (codes, run) = sample_adapting(
        make,
        &t,
        dynamics(method, eta, leapfrog, 42),
        chains,
        samples,
        if adapt { burn as u32 } else { 0 },
    );
    if let Some(a) = &run.adaptation {
        eprintln!(
            "{method:?}: step adapted {eta} → {}, trajectory {:?}",
            a.step(),
            a.trajectory.map(|t| (t.length(), t.mean_steps))
        );
    }
    assert_moves(&run, method, "");
    let bad = ks_failures(method, &codes, chains, burn);
    assert!(bad.is_empty(), "{method:?}: {}", bad.join("; "));
}

/// The chains move and stay finite: acceptance above 0.3 and no divergence.
fn assert_moves(run: &SampleRun, method: Method, label: &str) {
    let report = summarize(run, 1.0);
    eprintln!(
        "{method:?}{label}: acceptance {:.3}, {} divergences",
        report.acceptance.overall, report.divergences
    );
    assert!(report.acceptance.overall > 0.3 && report.divergences == 0);
}

/// The A = I posterior's coordinates whose draws after `burn` iterations, thinned to about one
/// per effective sample, fail the KS test at level 0.01 (Bonferroni over the coordinates).
fn ks_failures(method: Method, codes: &[f32], chains: usize, burn: usize) -> Vec<String> {
    ks_failures_of(method, codes, chains, burn, 0..chains, &Y, LAM, SIGMA2)
}

/// `ks_failures` for the chains `among` (of `chains`), whose posterior is the A = I one of
/// observation `y` with `lam` and `sigma2`.
#[allow(clippy::too_many_arguments)]
fn ks_failures_of(
    method: Method,
    codes: &[f32],
    chains: usize,
    burn: usize,
    among: std::ops::Range<usize>,
    y: &[f32],
    lam: f32,
    sigma2: f32,
) -> Vec<String> {
    let p = y.len();
    let alpha = 0.01 / p as f64;
    let mut bad = Vec::new();
    for (j, &y) in y.iter().enumerate() {
        let draws = coordinate(codes, chains, p, j, burn)[among.clone()].to_vec();
        let dist = LaplaceGaussian {
            m: y as f64,
            s2: sigma2 as f64,
            lam: lam as f64,
        };
        bad.extend(ks_failure(method, j, &draws, |x| dist.cdf(x), alpha));
    }
    bad
}

/// Coordinate j's draws (per chain), thinned to about one per effective sample, against `cdf`
/// by KS: the failure at level `alpha`, if any.
fn ks_failure(
    method: Method,
    j: usize,
    draws: &[Vec<f64>],
    cdf: impl Fn(f64) -> f64,
    alpha: f64,
) -> Option<String> {
    let chains = draws.len();
    // HMC's draws can be antithetic in x (bulk ESS > draws) yet positively correlated in |x|,
    // so thin by the smaller of the bulk and tail ESS.
    let ess = ess_bulk(draws).unwrap().min(ess_tail(draws).unwrap());
    let per_chain = draws[0].len();
    let stride = ((chains * per_chain) as f64 / ess).ceil().max(1.0) as usize;
    let thinned: Vec<f64> = draws
        .iter()
        .flat_map(|c| c.iter().step_by(stride).copied())
        .collect();
    let d = ks_statistic(&thinned, cdf);
    let pv = ks_p_value(d, thinned.len());
    eprintln!(
        "{method:?} coordinate {j}: ESS {ess:.0}, stride {stride}, n {}, D {d:.4}, p {pv:.3}",
        thinned.len()
    );
    (pv < alpha).then(|| format!("coordinate {j}: D {d}, p {pv} < {alpha}"))
}

/// d < p in closed form: A = Q·[D | 0]·P (Q a 6 × 6 rotation, D six scales, P a signed
/// permutation of 18 coordinates). Rotating the residual by Qᵀ leaves its norm, so dense
/// coordinate P(i) is LaplaceGaussian(m_i, σ²/D_i², lam) (y is chosen to put its mean at Y_i) and
/// the 12 coordinates of A's zero columns are Laplace(lam). With p = 3d and 10 leapfrog steps
/// the CPU carries HMC's residual through the trajectory (`leapfrog_carry`), whose sign flips of
/// the dense coordinates move the prior's image; every coordinate passes KS.
fn rotated_sparse_posterior_passes_ks(make: &Factory, method: Method, eta: f32, leapfrog: u32) {
    let (d, p) = (Y.len(), 3 * Y.len());
    // Q by Gram-Schmidt on the columns of a fixed matrix.
    let mut q: Vec<Vec<f64>> = (0..d)
        .map(|i| {
            (0..d)
                .map(|k| {
                    (((i * 7 + k * 13) % 17) as f64 - 8.0) / 8.0 + if i == k { 2.0 } else { 0.0 }
                })
                .collect()
        })
        .collect();
    for i in 0..d {
        for k in 0..i {
            let previous = q[k].clone();
            let dot: f64 = q[i].iter().zip(&previous).map(|(a, b)| a * b).sum();
            q[i].iter_mut()
                .zip(&previous)
                .for_each(|(v, b)| *v -= dot * b);
        }
        let norm = q[i].iter().map(|v| v * v).sum::<f64>().sqrt();
        q[i].iter_mut().for_each(|v| *v /= norm);
    }
    let scales = [1.0, 0.7, 1.4, 0.5, 1.2, 0.9];
    let columns = [3, 16, 7, 0, 11, 9];
    let signs = [1.0, -1.0, 1.0, 1.0, -1.0, 1.0];
    let mut a = vec![0f32; d * p];
    let mut y = vec![0f64; d];
    for i in 0..d {
        let factor = scales[i] * signs[i];
        for n in 0..d {
            a[n * p + columns[i]] = (q[i][n] * factor) as f32;
            y[n] += q[i][n] * factor * Y[i] as f64;
        }
    }
    let rows: Vec<f32> = y.iter().map(|&v| v as f32).collect();
    let t = target(a, d, p, rows, LAM, SIGMA2);
    let (chains, samples, burn) = (64, 300, 50);
    let (codes, run) = sample(
        make,
        &t,
        dynamics(method, eta, leapfrog, 31),
        chains,
        samples,
    );
    assert_moves(&run, method, " rotated");
    let alpha = 0.01 / p as f64;
    let lam = LAM as f64;
    let mut bad = Vec::new();
    for j in 0..p {
        let draws = coordinate(&codes, chains, p, j, burn);
        let failure = match columns.iter().position(|&c| c == j) {
            Some(i) => {
                let dist = LaplaceGaussian {
                    m: Y[i] as f64,
                    s2: SIGMA2 as f64 / (scales[i] * scales[i]),
                    lam,
                };
                ks_failure(method, j, &draws, |x| dist.cdf(x), alpha)
            }
            None => {
                let laplace = |x: f64| {
                    if x < 0.0 {
                        0.5 * (lam * x).exp_portable()
                    } else {
                        1.0 - 0.5 * (-lam * x).exp_portable()
                    }
                };
                ks_failure(method, j, &draws, laplace, alpha)
            }
        };
        bad.extend(failure);
    }
    assert!(bad.is_empty(), "{method:?} rotated: {}", bad.join("; "));
}

/// Solves the small symmetric system by Gauss-Jordan: returns M⁻¹.
fn inverse(m: &[f64], n: usize) -> Vec<f64> {
    let mut a = m.to_vec();
    let mut inv: Vec<f64> = (0..n * n)
        .map(|i| if i / n == i % n { 1.0 } else { 0.0 })
        .collect();
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&x, &y| a[x * n + col].abs().total_cmp(&a[y * n + col].abs()))
            .unwrap();
        for k in 0..n {
            a.swap(col * n + k, pivot * n + k);
            inv.swap(col * n + k, pivot * n + k);
        }
        let d = a[col * n + col];
        for k in 0..n {
            a[col * n + k] /= d;
            inv[col * n + k] /= d;
        }
        for row in 0..n {
            if row != col {
                let f = a[row * n + col];
                for k in 0..n {
                    a[row * n + k] -= f * a[col * n + k];
                    inv[row * n + k] -= f * inv[col * n + k];
                }
            }
        }
    }
    inv
}

/// lam = 0, A of full column rank: mean (AᵀA)⁻¹Aᵀ·xbar and covariance σ²(AᵀA)⁻¹, within 4.5
/// Monte Carlo standard errors (from the ESS) per entry.
fn gaussian_posterior_moments(
    make: &Factory,
    method: Method,
    eta: f32,
    leapfrog: u32,
    adapt: bool,
) {
    let (d, p) = (8, 4);
    let dictionary = Dictionary::gaussian(d, p, 5);
    let rows: Vec<f32> = (0..3 * d)
        .map(|i| ((i * 7 % 11) as f32 - 5.0) * 0.3)
        .collect();
    let sigma2 = 1.5;
    let t = target(dictionary.a.clone(), d, p, rows, 0.0, sigma2);
    let a: Vec<f64> = dictionary.a.iter().map(|&v| v as f64).collect();
    let mut ata = vec![0f64; p * p];
    for i in 0..p {
        for j in 0..p {
            ata[i * p + j] = (0..d).map(|k| a[k * p + i] * a[k * p + j]).sum();
        }
    }
    let inv = inverse(&ata, p);
    let aty: Vec<f64> = (0..p)
        .map(|i| (0..d).map(|k| a[k * p + i] * t.xbar[k] as f64).sum())
        .collect();
    let mean: Vec<f64> = (0..p)
        .map(|i| (0..p).map(|j| inv[i * p + j] * aty[j]).sum())
        .collect();
    let cov: Vec<f64> = inv.iter().map(|v| v * sigma2 as f64).collect();

    let (chains, samples, burn) = (64, 300, 50);
    let (codes, run) = sample_adapting(
        make,
        &t,
        dynamics(method, eta, leapfrog, 9),
        chains,
        samples,
        if adapt { burn as u32 } else { 0 },
    );
    eprintln!(
        "{method:?}: acceptance {:.3}, step {:?}",
        run.acceptance_rate(),
        run.adaptation.map(|a| (a.step(), a.mean_acceptance))
    );
    let draws: Vec<Vec<Vec<f64>>> = (0..p)
        .map(|j| coordinate(&codes, chains, p, j, burn))
        .collect();
    let ess: Vec<f64> = draws.iter().map(|c| ess_bulk(c).unwrap()).collect();
    let flat: Vec<Vec<f64>> = draws.iter().map(|c| c.concat()).collect();
    let n = flat[0].len() as f64;
    let means: Vec<f64> = flat.iter().map(|v| v.iter().sum::<f64>() / n).collect();
    let mut bad = Vec::new();
    for i in 0..p {
        let se = (cov[i * p + i] / ess[i]).sqrt();
        eprintln!(
            "{method:?} mean[{i}]: {:.4} vs {:.4} (se {se:.4}, ESS {:.0})",
            means[i], mean[i], ess[i]
        );
        if (means[i] - mean[i]).abs() > 4.5 * se {
            bad.push(format!("mean[{i}] {} vs {} (se {se})", means[i], mean[i]));
        }
        for j in 0..=i {
            let c: f64 = flat[i]
                .iter()
                .zip(&flat[j])
                .map(|(a, b)| (a - means[i]) * (b - means[j]))
                .sum::<f64>()
                / (n - 1.0);
            let want = cov[i * p + j];
            let e = ess[i].min(ess[j]);
            let se = ((cov[i * p + i] * cov[j * p + j] + want * want) / e).sqrt();
            if (c - want).abs() > 4.5 * se {
                bad.push(format!("cov[{i}][{j}] {c} vs {want} (se {se})"));
            }
        }
    }
    assert!(bad.is_empty(), "{method:?}: {}", bad.join("; "));
}

/// The cached energy U(X) the next proposal reports equals a fresh f64 evaluation at the
/// positions after every accept step; acceptance is in [0, 1].
fn cached_energy_is_fresh(make: &Factory, method: Method, eta: f32) {
    let p = Y.len();
    let t = target(identity(p), p, p, Y.to_vec(), LAM, SIGMA2);
    let s = dynamics(method, eta, 4, 3);
    let chains = 8;
    let mut backend = make(t.clone(), s.clone(), chains);
    let start: Vec<f32> = (0..chains * p)
        .map(|i| (i as f32 * 0.37).sin_portable())
        .collect();
    backend.load_positions(&start).unwrap();
    let rule = MhRule {
        enabled: true,
        discount: 1.0,
        delta: s.delta(),
        method,
    };
    let mut accepted = 0;
    for outer in 1..=20 {
        let x = backend.positions().unwrap();
        let terms = backend.propose(outer).unwrap();
        let mut mask = Vec::new();
        for (c, term) in terms.iter().enumerate() {
            let fresh = t.energy_f64(&x[c * p..(c + 1) * p]);
            assert!(
                (term.energy_current as f64 - fresh).abs() < 1e-5 * (1.0 + fresh.abs()),
                "{method:?} outer {outer} chain {c}: cached {} vs fresh {fresh}",
                term.energy_current
            );
            let decision = rule.decide(term, s.seed, c as u32, outer);
            assert!(decision.log_alpha <= 0.0);
            mask.push(decision.accepted);
        }
        accepted += mask.iter().filter(|&&a| a).count();
        backend.accept(&mask).unwrap();
    }
    assert!(accepted > 0, "{method:?}: nothing accepted");
}

/// A tiny step accepts almost always, a huge one rarely.
fn step_size_controls_acceptance(make: &Factory, method: Method) {
    let p = Y.len();
    let t = target(identity(p), p, p, Y.to_vec(), LAM, SIGMA2);
    let rate = |eta: f32| {
        let (_, run) = sample(make, &t, dynamics(method, eta, 5, 8), 32, 20);
        run.acceptance_rate()
    };
    let (tiny, huge) = match method {
        Method::Hmc => (rate(1e-3), rate(1.65)),
        _ => (rate(1e-4), rate(20.0)),
    };
    eprintln!("{method:?}: tiny step {tiny:.3}, huge step {huge:.3}");
    assert!(tiny > 0.97, "{method:?}: tiny step accepts {tiny}");
    assert!(huge < 0.2, "{method:?}: huge step accepts {huge}");
}

/// An enormous step overflows to inf/NaN: every such proposal is rejected and counted, nothing
/// panics, and the chains stay at their last (finite) state.
fn divergences_are_counted_and_harmless(make: &Factory, method: Method) {
    let p = Y.len();
    let t = target(identity(p), p, p, Y.to_vec(), LAM, SIGMA2);
    let (codes, run) = sample(make, &t, dynamics(method, 1e30, 3, 2), 8, 5);
    let report = summarize(&run, 1.0);
    eprintln!("{method:?}: {} divergences", report.divergences);
    assert!(report.divergences > 0, "{method:?}: no divergence counted");
    assert_eq!(run.accepted.iter().sum::<u32>(), 0);
    assert!(codes.iter().all(|v| v.is_finite()));
    assert!(run.energies.iter().all(|v| v.is_finite()));
}

/// Adapting from a step `eta` far from the right one over 100 warm-up iterations of 64 chains,
/// the frozen step's mean acceptance over the next 100 iterations (6,400 proposals) is within
/// 0.05 of the target (its Monte Carlo standard error is under 0.01).
fn adapted_step_reaches_target_acceptance(make: &Factory, method: Method, eta: f32) {
    let p = Y.len();
    let t = target(identity(p), p, p, Y.to_vec(), LAM, SIGMA2);
    let (chains, warmup, after) = (64, 100, 100);
    let (_, run) = sample_adapting(
        make,
        &t,
        dynamics(method, eta, 5, 17),
        chains,
        warmup + after,
        warmup,
    );
    let a = run.adaptation.expect("the run adapts");
    assert!(a.frozen() && a.count == warmup, "{a:?}");
    let frozen: Vec<f64> = run.log_alpha[warmup as usize * chains..].to_vec();
    assert_eq!(frozen.len(), after as usize * chains);
    let acceptance = orchestrator::mean_acceptance(&frozen);
    eprintln!(
        "{method:?}: step {eta} → {}, acceptance after freezing {acceptance:.3} (target {})",
        a.step(),
        a.target
    );
    assert!(
        (acceptance - a.target).abs() <= 0.05,
        "{method:?}: acceptance {acceptance} after freezing at step {}, target {}",
        a.step(),
        a.target
    );
}

/// With an automatic burn-in (cap 200 of 400 iterations, 64 chains, white-noise starts, the
/// step far from the right one), the warm-up settles before its cap, the frozen step's
/// acceptance after it is within 0.05 of the target, and the draws after it pass the KS checks.
/// Returns where it ended and the frozen step.
fn auto_burn_in_settles_then_samples_exactly(
    make: &Factory,
    method: Method,
    eta: f32,
) -> (u32, f32) {
    let p = Y.len();
    let t = target(identity(p), p, p, Y.to_vec(), LAM, SIGMA2);
    let (chains, samples, cap) = (64, 400, 200);
    let dynamics = dynamics(method, eta, 5, 23);
    let settings = SamplerSettings {
        chains,
        samples,
        dynamics: dynamics.clone(),
        mh: true,
        discount: 1.0,
        init: Init::Noise,
        lasso_iterations: 1,
        adapt: Adaptation::for_method(method, cap),
        auto_burn_in: Some(AutoBurnIn { cap }),
    };
    let mut backend = make(t.clone(), dynamics, chains);
    let mut sink = MemorySink::default();
    let run = orchestrator::run(backend.as_mut(), &t, &settings, &mut sink, &mut |_| {}).unwrap();
    let monitor = run.burn_in.clone().expect("an automatic burn-in");
    let a = run.adaptation.expect("the run adapts");
    eprintln!(
        "{method:?} auto burn-in: ended at {:?} (settled {}), step {eta} → {}, last check {:?}",
        monitor.ended_at,
        monitor.settled,
        a.step(),
        monitor.last_check
    );
    let end = monitor.ended_at.expect("the warm-up ended");
    assert!(monitor.settled && end < cap, "{method:?}: {monitor:?}");
    assert!(a.frozen() && a.count == end, "{a:?}");
    let frozen = &run.log_alpha[end as usize * chains..];
    let acceptance = orchestrator::mean_acceptance(frozen);
    assert!(
        (acceptance - a.target).abs() <= 0.05,
        "{method:?}: acceptance {acceptance} after the automatic burn-in froze step {}, target {}",
        a.step(),
        a.target
    );
    let bad = ks_failures(method, &sink.codes, chains, end as usize);
    assert!(bad.is_empty(), "{method:?}: {}", bad.join("; "));
    (end, a.step())
}

/// Per-class step sizes (`Adaptation::per_class`, as `rmld augment --adapt` runs them): two
/// classes of 48 chains each, A = I, λ 8, σ² 1, one observation per class. Class 0's posterior
/// sits at the Laplace kink (y near 0: width about 1/λ), class 1's far from it (y about ±18:
/// nearly N(y ∓ λ, 1)), so their right step sizes differ several-fold and no one step serves
/// both. Each class's frozen step must meet the target acceptance within 0.05 on its own chains
/// over 150 iterations after the 100 of warm-up, and its draws pass the KS checks against its
/// own closed form. Returns the classes' frozen steps.
fn per_class_steps_fit_each_class(make: &Factory, method: Method, eta: f32) -> Vec<f32> {
    let p = 6;
    let y0 = [0.0f32, 0.3, -0.2, 0.1, 0.0, -0.1];
    let y1 = [20.0f32, -18.0, 15.0, 22.0, -16.0, 19.0];
    let (lam, sigma2, per, warmup, after) = (8.0, 1.0, 48, 100u32, 150u32);
    let rows = [y0, y1].concat();
    let chains = 2 * per;
    let class_of_chain: Vec<u32> = (0..chains).map(|c| (c / per) as u32).collect();
    let classes =
        rmld::model::ChainClasses::new(&[[0, 1], [1, 1]], &rows, p, &class_of_chain).unwrap();
    let t = target(identity(p), p, p, rows.clone(), lam, sigma2);
    let t = Arc::new(Target::clone(&t).with_classes(classes));
    let dynamics = dynamics(method, eta, 5, 29);
    let settings = SamplerSettings {
        chains,
        samples: warmup + after,
        dynamics: dynamics.clone(),
        mh: true,
        discount: 1.0,
        init: Init::Noise,
        lasso_iterations: 1,
        adapt: Adaptation::for_method(method, warmup).map(|a| Adaptation {
            per_class: true,
            ..a
        }),
        auto_burn_in: None,
    };
    let mut backend = make(t.clone(), dynamics, chains);
    let mut sink = MemorySink::default();
    let run = orchestrator::run(backend.as_mut(), &t, &settings, &mut sink, &mut |_| {}).unwrap();
    let steps = run.class_steps.clone().expect("per-class steps");
    let target_acceptance = run.adaptation.expect("the run adapts").target;
    let mut frozen = Vec::new();
    for (k, y) in [&y0, &y1].into_iter().enumerate() {
        let class = &steps.classes[k];
        assert!(class.frozen(), "class {k}: {class:?}");
        let among = k * per..(k + 1) * per;
        let alphas: Vec<f64> = (warmup as usize..(warmup + after) as usize)
            .flat_map(|i| among.clone().map(move |c| i * chains + c))
            .map(|i| run.log_alpha[i])
            .collect();
        let acceptance = orchestrator::mean_acceptance(&alphas);
        eprintln!(
            "{method:?} class {k}: step {eta} → {}, acceptance after freezing {acceptance:.3} \
             (target {target_acceptance})",
            class.step()
        );
        assert!(
            (acceptance - target_acceptance).abs() <= 0.05,
            "{method:?} class {k}: acceptance {acceptance} at step {}, target {target_acceptance}",
            class.step()
        );
        let bad = ks_failures_of(
            method,
            &sink.codes,
            chains,
            warmup as usize,
            among,
            y,
            lam,
            sigma2,
        );
        assert!(bad.is_empty(), "{method:?} class {k}: {}", bad.join("; "));
        frozen.push(class.step());
    }
    assert!(
        frozen[1] > 3.0 * frozen[0],
        "{method:?}: the wide class's step {} should be several times the narrow one's {}",
        frozen[1],
        frozen[0]
    );
    frozen
}

fn all_checks(make: &Factory) {
    identity_posterior_passes_ks(make, Method::Mala, 0.15, 1, false);
    identity_posterior_passes_ks(make, Method::Hmc, 0.3, 5, false);
    rotated_sparse_posterior_passes_ks(make, Method::Hmc, 0.25, 10);
    gaussian_posterior_moments(make, Method::Mala, 0.5, 1, false);
    gaussian_posterior_moments(make, Method::Hmc, 0.4, 5, false);
    // The same closed forms with the step size adapted during the burn-in from the CLI's default
    // 0.01, draws after it froze.
    identity_posterior_passes_ks(make, Method::Mala, 0.01, 1, true);
    identity_posterior_passes_ks(make, Method::Hmc, 0.01, 5, true);
    gaussian_posterior_moments(make, Method::Mala, 0.01, 1, true);
    gaussian_posterior_moments(make, Method::Hmc, 0.01, 5, true);
    adapted_step_reaches_target_acceptance(make, Method::Mala, 3.0);
    adapted_step_reaches_target_acceptance(make, Method::Hmc, 0.005);
    auto_burn_in_settles_then_samples_exactly(make, Method::Mala, 3.0);
    auto_burn_in_settles_then_samples_exactly(make, Method::Hmc, 0.005);
    per_class_steps_fit_each_class(make, Method::Mala, 0.01);
    per_class_steps_fit_each_class(make, Method::Hmc, 0.01);
    for method in [Method::Mala, Method::Hmc] {
        cached_energy_is_fresh(make, method, 0.3);
        step_size_controls_acceptance(make, method);
        divergences_are_counted_and_harmless(make, method);
    }
    divergences_are_counted_and_harmless(make, Method::Rmld);
}

#[test]
fn exact_methods_sample_known_posteriors_on_the_cpu() {
    all_checks(cpu().as_ref());
}

#[cfg(feature = "gpu")]
#[test]
fn exact_methods_sample_known_posteriors_on_the_gpu() {
    if let Some(make) = gpu("exact_methods_sample_known_posteriors_on_the_gpu") {
        all_checks(make.as_ref());
        // One seed, both backends: MALA's automatic burn-in ends at the same iteration with the
        // same frozen step (HMC's f32 trajectories may flip an MH decision: docs/adaptation.md).
        let on_cpu = auto_burn_in_settles_then_samples_exactly(cpu().as_ref(), Method::Mala, 3.0);
        let on_gpu = auto_burn_in_settles_then_samples_exactly(make.as_ref(), Method::Mala, 3.0);
        assert_eq!(
            on_cpu.0, on_gpu.0,
            "burn-in ends: CPU {on_cpu:?}, GPU {on_gpu:?}"
        );
        let gap = (on_cpu.1 / on_gpu.1 - 1.0).abs();
        assert!(gap < 1e-5, "frozen steps: CPU {on_cpu:?}, GPU {on_gpu:?}");
        // The same for MALA's per-class steps.
        let on_cpu = per_class_steps_fit_each_class(cpu().as_ref(), Method::Mala, 0.01);
        let on_gpu = per_class_steps_fit_each_class(make.as_ref(), Method::Mala, 0.01);
        for (k, (c, g)) in on_cpu.iter().zip(&on_gpu).enumerate() {
            assert!(
                (c / g - 1.0).abs() < 1e-5,
                "class {k}'s frozen step: CPU {c}, GPU {g}"
            );
        }
    }
}
