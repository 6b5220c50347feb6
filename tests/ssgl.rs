//! The SSGL prior (Deng et al. 2019): its settings' validation, the stochastic-approximation
//! update's GPU kernel against its CPU twin element by element, the GPU chains against the CPU's
//! from one seed, adapt-then-freeze, non-finite state handling, bit-identical resume with the
//! latent state (both backends), and MALA/HMC on the frozen posterior against quadrature (both
//! backends).

#[cfg(feature = "gpu")]
mod gpu_common;

use rmld::math::Portable;
use std::sync::Arc;

use rmld::backend::cpu::CpuBackend;
use rmld::backend::{Backend, DynamicsSettings, ModelState};
use rmld::diagnostics::reference::{ks_p_value, ks_statistic};
use rmld::diagnostics::{ess_bulk, ess_tail, summarize};
use rmld::io::Pixels;
use rmld::methods::Method;
use rmld::model::ssgl_state_stride as stride;
use rmld::model::{sa_update, UpdateScalars};
use rmld::model::{Dictionary, Observations, Prior, Ssgl, SsglMode, Target};
use rmld::orchestrator::{self, Hooks, Init, MemorySink, SamplerSettings};

/// Observations `rows` (rows of d, scale 1) under dictionary `a` (d × p) with an SSGL prior.
fn target(a: Vec<f32>, d: usize, p: usize, rows: Vec<f32>, ssgl: Ssgl, sigma2: f32) -> Arc<Target> {
    let observations = Observations {
        n: rows.len() / d,
        d,
        pixels: Pixels::F32(rows),
        scale: 1.0,
    };
    let dictionary = Dictionary { d, p, a };
    Arc::new(
        Target::new(Arc::new(dictionary), Arc::new(observations), 1.0)
            .with_sigma2(sigma2)
            .with_prior(Prior::Ssgl(ssgl)),
    )
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
        steps: 3,
        batch: 1,
        ..Default::default()
    }
}

fn settings(chains: usize, samples: u32, dynamics: &DynamicsSettings) -> SamplerSettings {
    SamplerSettings {
        chains,
        samples,
        dynamics: dynamics.clone(),
        mh: true,
        discount: 1.0,
        init: Init::Noise,
        lasso_iterations: 1,
        adapt: None,
        auto_burn_in: None,
    }
}

/// A small regression-like problem: a deterministic 12 × 20 dictionary, one observation.
fn small_problem(ssgl: Ssgl) -> Arc<Target> {
    let (d, p) = (12, 20);
    let a: Vec<f32> = (0..d * p)
        .map(|i| ((i * 37 % 101) as f32 / 50.0 - 1.0) * 0.5)
        .collect();
    let y: Vec<f32> = (0..d)
        .map(|i| (i as f32 * 0.7).sin_portable() * 2.0)
        .collect();
    target(a, d, p, y, ssgl, 1.0)
}

#[test]
fn bad_hyper_parameters_are_refused_by_name_and_range() {
    let cases: [(Ssgl, &str, &str); 7] = [
        (
            Ssgl {
                v0: 0.0,
                ..Ssgl::default()
            },
            "ssgl_v0",
            "> 0",
        ),
        (
            Ssgl {
                v0: -1.0,
                ..Ssgl::default()
            },
            "ssgl_v0",
            "> 0",
        ),
        (
            Ssgl {
                v1: 0.0,
                ..Ssgl::default()
            },
            "ssgl_v1",
            "> 0",
        ),
        (
            Ssgl {
                a: 0.0,
                ..Ssgl::default()
            },
            "ssgl_a",
            "> 0",
        ),
        (
            Ssgl {
                b: Some(-2.0),
                ..Ssgl::default()
            },
            "ssgl_b",
            "> 0",
        ),
        (
            Ssgl {
                delta: 1.0,
                ..Ssgl::default()
            },
            "ssgl_delta",
            "(0, 1)",
        ),
        (
            Ssgl {
                delta: 0.0,
                ..Ssgl::default()
            },
            "ssgl_delta",
            "(0, 1)",
        ),
    ];
    for (ssgl, field, range) in cases {
        let err = ssgl.validate().unwrap_err();
        let text = format!("{err:?} {err}");
        assert!(
            text.contains(field) && text.contains(range),
            "{field}: {text}"
        );
        // The backend refuses it too, before anything runs.
        let t = small_problem(ssgl);
        let err = CpuBackend::try_new(t, dynamics(Method::Mala, 0.01, 1, 1), 2)
            .err()
            .unwrap();
        assert!(format!("{err:?}").contains(field), "{err:?}");
    }
    Ssgl::default().validate().unwrap();
}

/// Random state, positions and residuals for `chains` chains of d × p, each value from a fixed
/// generator; the state is a valid one (ρ, δ in (0, 1), κ ≥ 0, σ > 0).
fn random_inputs(chains: usize, d: usize, p: usize, seed: u64) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut s = seed;
    let mut next = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 40) as f32) / (1u64 << 24) as f32
    };
    let mut state = Vec::new();
    for _ in 0..chains {
        state.extend((0..p).map(|_| next()));
        state.extend((0..p).map(|_| 20.0 * next()));
        state.extend((0..p).map(|_| 0.2 * next()));
        state.push(0.5 + 2.0 * next());
        state.push(0.05 + 0.9 * next());
    }
    let x: Vec<f32> = (0..chains * p).map(|_| 6.0 * next() - 3.0).collect();
    let r: Vec<f32> = (0..chains * d).map(|_| 4.0 * next() - 2.0).collect();
    (state, x, r)
}

#[test]
fn cpu_update_keeps_state_of_a_chain_whose_update_is_not_finite() {
    let (chains, d, p) = (3, 7, 11);
    let (state, mut x, r) = random_inputs(chains, d, p, 5);
    // Chain 1's x² overflows f32: Σ κ1 x² is infinite, so its update must be discarded.
    x[p + 4] = 1e30;
    let s = UpdateScalars::new(&Ssgl::default(), 3, d, p);
    let mut new = state.clone();
    let status = sa_update(&s, &mut new, &x, &r, d, p);
    assert_eq!(status, vec![0, 1, 0]);
    let w = stride(p);
    assert_eq!(&new[w..2 * w], &state[w..2 * w], "chain 1 kept its state");
    assert_ne!(&new[..w], &state[..w], "chain 0 moved");
    assert!(new.iter().all(|v| v.is_finite()));
}

#[cfg(feature = "gpu")]
#[test]
fn gpu_update_matches_cpu_element_by_element() {
    let Some(ctx) = gpu_common::context("gpu_update_matches_cpu_element_by_element") else {
        return;
    };
    // p > 256 and d > 256 exercise the strided loops; chain 2 is not finite (kept, status 1).
    let (chains, d, p) = (4, 300, 530);
    let (state, mut x, r) = random_inputs(chains, d, p, 11);
    x[2 * p + 17] = f32::NAN;
    for (k, ssgl) in [
        (1, Ssgl::default()),
        (
            40,
            Ssgl {
                v0: 0.01,
                b: Some(3.0),
                c: 1.0,
                alpha: 0.0,
                ..Ssgl::default()
            },
        ),
    ] {
        let s = UpdateScalars::new(&ssgl, k, d, p);
        let mut want = state.clone();
        let want_status = sa_update(&s, &mut want, &x, &r, d, p);
        let (got, got_status) = rmld::backend::gpu::testing::prior_update(
            &ctx,
            &Prior::Ssgl(ssgl),
            k,
            &state,
            &x,
            &r,
            d,
            p,
        )
        .unwrap();
        assert_eq!(got_status, want_status, "status per chain (k = {k})");
        assert_eq!(want_status, vec![0, 0, 1, 0]);
        let want64: Vec<f64> = want.iter().map(|&v| v as f64).collect();
        // exp and the workgroup tree round unlike the CPU: 1e-5 of max(|value|, 1).
        let scale: Vec<f64> = want64.iter().map(|v| v.abs().max(1.0)).collect();
        let bad = gpu_common::mismatches(&format!("state (k = {k})"), &got, &want64, &scale, 1e-5);
        gpu_common::assert_none(bad);
        let w = stride(p);
        assert_eq!(
            &got[2 * w..3 * w],
            &state[2 * w..3 * w],
            "chain 2 kept its state"
        );
    }
}

/// Runs `samples` iterations of the small problem; returns the final state and positions.
fn run_small(ssgl: Ssgl, samples: u32) -> (Vec<f32>, Vec<f32>, orchestrator::SampleRun) {
    let t = small_problem(ssgl);
    let dyn_ = dynamics(Method::Mala, 0.01, 1, 7);
    let mut backend = CpuBackend::new(t.clone(), dyn_.clone(), 4);
    let mut sink = MemorySink::default();
    let run = orchestrator::run(
        &mut backend,
        &t,
        &settings(4, samples, &dyn_),
        &mut sink,
        &mut |_| {},
    )
    .unwrap();
    (
        backend.prior_state().unwrap().unwrap(),
        backend.positions().unwrap(),
        run,
    )
}

#[test]
fn adapt_mode_freezes_theta_after_the_burn_in() {
    let adapt = Ssgl {
        adapt_iterations: 5,
        ..Ssgl::default()
    };
    let (after_5, _, _) = run_small(adapt, 5);
    let (after_12, _, run) = run_small(adapt, 12);
    assert_eq!(after_5, after_12, "theta must not move after the burn-in");
    assert_eq!(run.prior_nonfinite, vec![0; 4]);
    assert_ne!(
        after_5,
        Ssgl::default().initial_state(4, 20),
        "theta adapted"
    );
    let continuous = Ssgl {
        mode: SsglMode::Continuous,
        ..adapt
    };
    let (c5, _, _) = run_small(continuous, 5);
    let (c12, _, _) = run_small(continuous, 12);
    assert_eq!(
        c5, after_5,
        "the first 5 iterations are the same in both modes"
    );
    assert_ne!(c12, c5, "continuous mode keeps adapting");
    let fixed = Ssgl {
        mode: SsglMode::Fixed,
        ..adapt
    };
    let (f12, _, _) = run_small(fixed, 12);
    assert_eq!(f12, Ssgl::default().initial_state(4, 20));
}

#[test]
fn resume_with_the_latent_state_is_bit_identical() {
    let ssgl = Ssgl {
        mode: SsglMode::Continuous,
        ..Ssgl::default()
    };
    let (state_full, x_full, _) = run_small(ssgl, 10);
    // 6 iterations, a "checkpoint" (positions and prior state), a fresh backend, 4 more.
    let t = small_problem(ssgl);
    let dyn_ = dynamics(Method::Mala, 0.01, 1, 7);
    let s6 = settings(4, 6, &dyn_);
    let mut first = CpuBackend::new(t.clone(), dyn_.clone(), 4);
    let mut sink = MemorySink::default();
    let run6 = orchestrator::run(&mut first, &t, &s6, &mut sink, &mut |_| {}).unwrap();
    let (positions, state) = (
        first.positions().unwrap(),
        first.prior_state().unwrap().unwrap(),
    );
    let mut second = CpuBackend::new(t.clone(), dyn_.clone(), 4);
    second.load_positions(&positions).unwrap();
    second.load_prior_state(&state).unwrap();
    let hooks = Hooks {
        sink: &mut sink,
        progress: &mut |_| {},
        stop: &|| false,
        checkpoint_every: 0,
        checkpoint_due: &|| false,
        checkpoint: &mut |_, _| Ok(()),
    };
    orchestrator::continue_run(&mut second, &t, &settings(4, 10, &dyn_), run6, hooks).unwrap();
    assert_eq!(second.positions().unwrap(), x_full);
    assert_eq!(second.prior_state().unwrap().unwrap(), state_full);
    // A non-finite state (a corrupt checkpoint) is refused.
    let mut bad = state.clone();
    bad[3] = f32::NAN;
    assert!(second.load_prior_state(&bad).is_err());
}

#[test]
fn a_non_finite_update_is_counted_and_never_sampled() {
    let t = small_problem(Ssgl {
        mode: SsglMode::Continuous,
        ..Ssgl::default()
    });
    let dyn_ = dynamics(Method::Mala, 0.01, 1, 3);
    let mut backend = CpuBackend::new(t.clone(), dyn_.clone(), 2);
    let mut x = vec![0.1f32; 40];
    x[25] = 1e30; // chain 1: x² overflows, its update is discarded
    backend.load_positions(&x).unwrap();
    let before = backend.prior_state().unwrap().unwrap();
    let status = backend.prior_update(1).unwrap();
    assert_eq!(status, vec![0, 1]);
    let after = backend.prior_state().unwrap().unwrap();
    let w = stride(20);
    assert_eq!(&after[w..], &before[w..]);
    assert!(after.iter().all(|v| v.is_finite()));
}

/// The frozen SSGL posterior of one coordinate under A = I:
/// ∝ exp(−(x − y)²/(2 s2) − κ0|x|/σ − κ1 x²/(2σ²)), its CDF by the trapezoid rule.
struct Quadrature {
    grid: Vec<f64>,
    cdf: Vec<f64>,
}

impl Quadrature {
    fn new(y: f64, s2: f64, ssgl: &Ssgl) -> Self {
        let (lo, hi, n) = (-12.0, 12.0, 240_001);
        let h = (hi - lo) / (n - 1) as f64;
        let grid: Vec<f64> = (0..n).map(|i| lo + h * i as f64).collect();
        let density: Vec<f64> = grid
            .iter()
            .map(|&x| (-(x - y).powi(2) / (2.0 * s2) - ssgl.element_f64(x as f32)).exp_portable())
            .collect();
        let mut cdf = vec![0f64; n];
        for i in 1..n {
            cdf[i] = cdf[i - 1] + 0.5 * h * (density[i] + density[i - 1]);
        }
        let total = cdf[n - 1];
        cdf.iter_mut().for_each(|c| *c /= total);
        Quadrature { grid, cdf }
    }

    fn at(&self, x: f64) -> f64 {
        let h = self.grid[1] - self.grid[0];
        let i = ((x - self.grid[0]) / h).floor();
        if i < 0.0 {
            return 0.0;
        }
        let i = i as usize;
        if i + 1 >= self.grid.len() {
            return 1.0;
        }
        let t = (x - self.grid[i]) / h;
        self.cdf[i] * (1.0 - t) + self.cdf[i + 1] * t
    }
}

/// MALA or HMC on A = I (p = 3), θ frozen at its initial value, against quadrature by KS at
/// level 0.01 (Bonferroni over the coordinates), draws thinned by the ESS.
fn frozen_posterior_matches_quadrature(method: Method, eta: f32, leapfrog: u32) {
    frozen_posterior_on(method, eta, leapfrog, None);
}

/// `frozen_posterior_matches_quadrature` on the CPU, or on the GPU context given.
fn frozen_posterior_on(
    method: Method,
    eta: f32,
    leapfrog: u32,
    #[cfg(feature = "gpu")] gpu: Option<Arc<rmld::backend::gpu::GpuContext>>,
    #[cfg(not(feature = "gpu"))] gpu: Option<()>,
) {
    let y = [0.4f32, -2.5, 1.2];
    let p = y.len();
    let ssgl = Ssgl {
        v0: 0.5,
        v1: 4.0,
        sigma: 1.3,
        delta: 0.3,
        mode: SsglMode::Fixed,
        ..Ssgl::default()
    };
    let s2 = 0.8f32;
    let t = target(identity(p), p, p, y.to_vec(), ssgl, s2);
    let dyn_ = dynamics(method, eta, leapfrog, 42);
    let (chains, samples, burn) = (32, 800, 50);
    let mut backend: Box<dyn Backend> = match gpu {
        #[cfg(feature = "gpu")]
        Some(ctx) => Box::new(gpu_common::backend(&ctx, &t, &dyn_, chains, None)),
        #[cfg(not(feature = "gpu"))]
        Some(()) => unreachable!(),
        None => Box::new(CpuBackend::new(t.clone(), dyn_.clone(), chains)),
    };
    let mut sink = MemorySink::default();
    let run = orchestrator::run(
        backend.as_mut(),
        &t,
        &settings(chains, samples, &dyn_),
        &mut sink,
        &mut |_| {},
    )
    .unwrap();
    let report = summarize(&run, 1.0);
    assert!(report.acceptance.overall > 0.3 && report.divergences == 0);
    let alpha = 0.01 / p as f64;
    let mut bad = Vec::new();
    for (j, &yj) in y.iter().enumerate() {
        let draws: Vec<Vec<f64>> = (0..chains)
            .map(|c| {
                (burn..samples as usize)
                    .map(|i| sink.codes[(i * chains + c) * p + j] as f64)
                    .collect()
            })
            .collect();
        let ess = ess_bulk(&draws).unwrap().min(ess_tail(&draws).unwrap());
        let stride = ((chains * draws[0].len()) as f64 / ess).ceil().max(1.0) as usize;
        let thinned: Vec<f64> = draws
            .iter()
            .flat_map(|c| c.iter().step_by(stride).copied())
            .collect();
        let q = Quadrature::new(yj as f64, s2 as f64, &ssgl);
        let d = ks_statistic(&thinned, |x| q.at(x));
        let pv = ks_p_value(d, thinned.len());
        eprintln!(
            "{method:?} coordinate {j}: ESS {ess:.0}, n {}, D {d:.4}, p {pv:.3}",
            thinned.len()
        );
        if pv < alpha {
            bad.push(format!("coordinate {j}: D {d}, p {pv} < {alpha}"));
        }
    }
    assert!(bad.is_empty(), "{method:?}: {}", bad.join("; "));
}

#[test]
fn mala_samples_the_frozen_ssgl_posterior() {
    frozen_posterior_matches_quadrature(Method::Mala, 0.15, 1);
}

#[test]
fn hmc_samples_the_frozen_ssgl_posterior() {
    frozen_posterior_matches_quadrature(Method::Hmc, 0.2, 8);
}

#[cfg(feature = "gpu")]
#[test]
fn gpu_mala_samples_the_frozen_ssgl_posterior() {
    if let Some(ctx) = gpu_common::context("gpu_mala_samples_the_frozen_ssgl_posterior") {
        frozen_posterior_on(Method::Mala, 0.15, 1, Some(ctx));
    }
}

#[cfg(feature = "gpu")]
#[test]
fn gpu_hmc_samples_the_frozen_ssgl_posterior() {
    if let Some(ctx) = gpu_common::context("gpu_hmc_samples_the_frozen_ssgl_posterior") {
        frozen_posterior_on(Method::Hmc, 0.2, 8, Some(ctx));
    }
}

/// A `d` × `p` regression-like problem like `small_problem` (any shape: d, p not multiples of 4
/// take the scalar-load kernels).
#[cfg(feature = "gpu")]
fn problem(d: usize, p: usize, ssgl: Ssgl) -> Arc<Target> {
    let a: Vec<f32> = (0..d * p)
        .map(|i| ((i * 37 % 101) as f32 / 50.0 - 1.0) * 0.5)
        .collect();
    let y: Vec<f32> = (0..d)
        .map(|i| (i as f32 * 0.7).sin_portable() * 2.0)
        .collect();
    target(a, d, p, y, ssgl, 1.0)
}

/// |a − b| ≤ tol·max(|a|, |b|, floor), both finite.
#[cfg(feature = "gpu")]
fn close(a: f32, b: f32, tol: f64, floor: f64) -> bool {
    let (a, b) = (a as f64, b as f64);
    a.is_finite() && b.is_finite() && (a - b).abs() <= tol * a.abs().max(b.abs()).max(floor)
}

/// Every element of `gpu` not close to `cpu`, by row `width` and index, with both values.
#[cfg(feature = "gpu")]
fn mismatches(what: &str, gpu: &[f32], cpu: &[f32], width: usize, tol: f64) -> Vec<String> {
    let mut bad = Vec::new();
    if gpu.len() != cpu.len() {
        bad.push(format!(
            "{what}: {} values on the gpu, {} on the cpu",
            gpu.len(),
            cpu.len()
        ));
    }
    for (i, (&a, &b)) in gpu.iter().zip(cpu).enumerate() {
        if !close(a, b, tol, 1e-3) {
            bad.push(format!(
                "{what} chain {} [{}]: gpu {a:e}, cpu {b:e}",
                i / width,
                i % width
            ));
        }
    }
    bad
}

/// The GPU chains against the CPU's from one seed, outer iteration by outer iteration: the MH
/// terms, the decisions, the positions, and after each SA update its status and every value of
/// the latent state (continuous mode, so every iteration adapts), element by element.
#[cfg(feature = "gpu")]
fn gpu_matches_cpu(label: &str, d: usize, p: usize, method: Method, groups: usize) {
    let Some(ctx) = gpu_common::context(label) else {
        return;
    };
    let chains = 4;
    let ssgl = Ssgl {
        mode: SsglMode::Continuous,
        ..Ssgl::default()
    };
    let t = problem(d, p, ssgl);
    let dyn_ = DynamicsSettings {
        steps: 3,
        ..dynamics(method, 0.01, 4, 11)
    };
    // A binding limit of chains/groups chains' state splits the chains into `groups` groups.
    let limit = (groups > 1).then(|| (4 * stride(p) * chains / groups) as u64);
    let mut gpu = gpu_common::backend(&ctx, &t, &dyn_, chains, limit);
    assert_eq!(gpu.groups(), groups);
    let mut cpu = CpuBackend::new(t.clone(), dyn_.clone(), chains);
    let start: Vec<f32> = (0..chains * p)
        .map(|i| ((i * 7919 % 61) as f32 / 30.0 - 1.0) * 0.8)
        .collect();
    gpu.load_positions(&start).unwrap();
    cpu.load_positions(&start).unwrap();
    let w = stride(p);
    let mut bad = Vec::new();
    for outer in 1..=4 {
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
                if !close(a, b, 1e-4, floor) {
                    bad.push(format!(
                        "outer {outer} chain {c} {name}: gpu {a:e}, cpu {b:e}"
                    ));
                }
            }
        }
        let decide = |terms: &[rmld::backend::MhTerms]| -> Vec<bool> {
            terms
                .iter()
                .enumerate()
                .map(|(c, t)| {
                    let u = rmld::rng::Stream::new(
                        dyn_.seed,
                        c as u32,
                        outer,
                        0,
                        rmld::rng::Purpose::Accept,
                    )
                    .uniform();
                    t.method_log_ratio(method, dyn_.delta() as f64)
                        .min(0.0)
                        .exp_portable()
                        > u as f64
                })
                .collect()
        };
        let (dg, dc) = (decide(&tg), decide(&tc));
        if bad.is_empty() && dg != dc {
            bad.push(format!("outer {outer}: decisions gpu {dg:?}, cpu {dc:?}"));
        }
        // Both outcomes, whatever the rule says, so the selection runs either way.
        let mask: Vec<bool> = (0..chains)
            .map(|c| if c < 2 { c == 0 } else { dc[c] })
            .collect();
        gpu.accept(&mask).unwrap();
        cpu.accept(&mask).unwrap();
        let (sg, sc) = (
            gpu.prior_update(outer).unwrap(),
            cpu.prior_update(outer).unwrap(),
        );
        if sg != sc {
            bad.push(format!(
                "outer {outer}: update status gpu {sg:?}, cpu {sc:?}"
            ));
        }
        let what = format!("outer {outer} state");
        bad.extend(mismatches(
            &what,
            &gpu.prior_state().unwrap().unwrap(),
            &cpu.prior_state().unwrap().unwrap(),
            w,
            1e-4,
        ));
        let what = format!("outer {outer} positions");
        bad.extend(mismatches(
            &what,
            &gpu.positions().unwrap(),
            &cpu.positions().unwrap(),
            p,
            1e-4,
        ));
    }
    // The state did move (the comparison is not of two initial states).
    assert_ne!(
        cpu.prior_state().unwrap().unwrap(),
        ssgl.initial_state(chains, p)
    );
    gpu_common::assert_none(bad);
}

#[cfg(feature = "gpu")]
#[test]
fn gpu_rmld_ssgl_matches_cpu_in_two_groups() {
    gpu_matches_cpu(
        "gpu_rmld_ssgl_matches_cpu_in_two_groups",
        12,
        20,
        Method::Rmld,
        2,
    );
}

#[cfg(feature = "gpu")]
#[test]
fn gpu_mala_ssgl_matches_cpu_scalar_loads() {
    gpu_matches_cpu(
        "gpu_mala_ssgl_matches_cpu_scalar_loads",
        11,
        19,
        Method::Mala,
        1,
    );
}

#[cfg(feature = "gpu")]
#[test]
fn gpu_hmc_ssgl_matches_cpu() {
    gpu_matches_cpu("gpu_hmc_ssgl_matches_cpu", 12, 20, Method::Hmc, 1);
}

/// A GPU run interrupted after 6 outer iterations (positions and latent state read back as a
/// checkpoint holds them) and resumed on a fresh GPU backend equals the uninterrupted GPU run
/// bit for bit, state included, in adapt mode across the freeze (burn-in 8 of 10).
#[cfg(feature = "gpu")]
#[test]
fn gpu_resume_with_the_latent_state_is_bit_identical() {
    let Some(ctx) = gpu_common::context("gpu_resume_with_the_latent_state_is_bit_identical") else {
        return;
    };
    let ssgl = Ssgl {
        adapt_iterations: 8,
        ..Ssgl::default()
    };
    let t = small_problem(ssgl);
    let dyn_ = dynamics(Method::Rmld, 0.01, 1, 7);
    let mut full = gpu_common::backend(&ctx, &t, &dyn_, 4, None);
    let mut sink = MemorySink::default();
    let run = orchestrator::run(
        &mut full,
        &t,
        &settings(4, 10, &dyn_),
        &mut sink,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(run.prior_nonfinite, vec![0; 4]);
    let (x_full, state_full) = (
        full.positions().unwrap(),
        full.prior_state().unwrap().unwrap(),
    );
    let mut first = gpu_common::backend(&ctx, &t, &dyn_, 4, None);
    let mut sink = MemorySink::default();
    let run6 = orchestrator::run(
        &mut first,
        &t,
        &settings(4, 6, &dyn_),
        &mut sink,
        &mut |_| {},
    )
    .unwrap();
    let (positions, state) = (
        first.positions().unwrap(),
        first.prior_state().unwrap().unwrap(),
    );
    assert_ne!(state, state_full, "the state adapted after iteration 6");
    let mut second = gpu_common::backend(&ctx, &t, &dyn_, 4, None);
    second.load_positions(&positions).unwrap();
    second.load_prior_state(&state).unwrap();
    let hooks = Hooks {
        sink: &mut sink,
        progress: &mut |_| {},
        stop: &|| false,
        checkpoint_every: 0,
        checkpoint_due: &|| false,
        checkpoint: &mut |_, _| Ok(()),
    };
    orchestrator::continue_run(&mut second, &t, &settings(4, 10, &dyn_), run6, hooks).unwrap();
    assert_eq!(second.positions().unwrap(), x_full);
    assert_eq!(second.prior_state().unwrap().unwrap(), state_full);
    let mut bad = state.clone();
    bad[3] = f32::NAN;
    assert!(second.load_prior_state(&bad).is_err());
    assert!(second.load_prior_state(&state[1..]).is_err());
}

/// A chain whose update is not finite keeps its state on the GPU too, and says so.
#[cfg(feature = "gpu")]
#[test]
fn gpu_non_finite_update_is_counted() {
    let Some(ctx) = gpu_common::context("gpu_non_finite_update_is_counted") else {
        return;
    };
    let t = small_problem(Ssgl {
        mode: SsglMode::Continuous,
        ..Ssgl::default()
    });
    let mut backend = gpu_common::backend(&ctx, &t, &dynamics(Method::Mala, 0.01, 1, 3), 2, None);
    let mut x = vec![0.1f32; 40];
    x[25] = 1e30;
    backend.load_positions(&x).unwrap();
    let before = backend.prior_state().unwrap().unwrap();
    assert_eq!(backend.prior_update(1).unwrap(), vec![0, 1]);
    let after = backend.prior_state().unwrap().unwrap();
    let w = stride(20);
    assert_eq!(&after[w..], &before[w..]);
    assert_ne!(&after[..w], &before[..w]);
}
