//! Kernel HMC: the GPU against the CPU, the gradient against finite differences, the one-image
//! class as a Gaussian, the median heuristic, and the backend contract.

#[cfg(feature = "gpu")]
mod gpu_common;

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rmld::backend::kernel_hmc::{kernel_energy, KernelHmcCpu, CHUNK};
use rmld::backend::kernel_hmc::{median_bandwidth2, KernelTarget, MAX_BANDWIDTH_PAIRS};
use rmld::backend::{Backend, DynamicsSettings};
use rmld::io::Pixels;
use rmld::methods::{Method, MhRule};
use rmld::model::Observations;
use rmld::{Error, Result};

/// A generator from a fixed seed (RMLD_TEST_SEED replaces it to explore others), printed.
fn fixed_rng(test: &str, seed: u64) -> StdRng {
    let seed = std::env::var("RMLD_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(seed);
    eprintln!("{test}: RMLD_TEST_SEED={seed}");
    StdRng::seed_from_u64(seed)
}

/// Random images of the given class sizes, rows sorted by class, 8-bit or float, in [0, 1].
fn classes(
    r: &mut StdRng,
    sizes: &[usize],
    d: usize,
    u8_pixels: bool,
) -> (Observations, Vec<[u32; 2]>) {
    let n: usize = sizes.iter().sum();
    let pixels = if u8_pixels {
        Pixels::U8((0..n * d).map(|_| r.random()).collect())
    } else {
        Pixels::F32((0..n * d).map(|_| r.random_range(0.0..255.0)).collect())
    };
    let mut ranges = Vec::new();
    let mut start = 0;
    for &size in sizes {
        ranges.push([start as u32, size as u32]);
        start += size;
    }
    let observations = Observations {
        n,
        d,
        pixels,
        scale: 1.0 / 255.0,
    };
    (observations, ranges)
}

/// Chains assigned to the classes in turn, with h² by the median heuristic.
fn target(observations: Observations, ranges: &[[u32; 2]], chains: usize) -> Arc<KernelTarget> {
    let rows = (0..chains).map(|c| ranges[c % ranges.len()]).collect();
    Arc::new(KernelTarget::with_median_bandwidth(Arc::new(observations), rows, 7).unwrap())
}

/// Each chain starts at a random image of its class plus N(0, noise²)-ish jitter.
fn starts(r: &mut StdRng, target: &KernelTarget, noise: f32) -> Vec<f32> {
    let mut x = Vec::new();
    for &[start, count] in &target.chain_rows {
        let row = target
            .observations
            .row((start + r.random_range(0..count)) as usize);
        x.extend(row.iter().map(|v| v + noise * r.random_range(-1.0f32..1.0)));
    }
    x
}

fn settings(eta: f32, steps: u32, batch: u32, sghmc_noise: bool, seed: u64) -> DynamicsSettings {
    DynamicsSettings {
        eta,
        steps,
        batch,
        sghmc_noise,
        seed,
        ..Default::default()
    }
}

/// What both backends offer beyond `Backend`, so one test body runs on either.
trait KernelBackend: Backend {
    fn energies(&mut self) -> Result<Vec<f32>>;
    fn gradients(&mut self) -> Result<Vec<f32>>;
}

impl KernelBackend for KernelHmcCpu {
    fn energies(&mut self) -> Result<Vec<f32>> {
        KernelHmcCpu::energies(self)
    }
    fn gradients(&mut self) -> Result<Vec<f32>> {
        KernelHmcCpu::gradients(self)
    }
}

#[cfg(feature = "gpu")]
impl KernelBackend for rmld::backend::gpu::KernelHmcGpu {
    fn energies(&mut self) -> Result<Vec<f32>> {
        rmld::backend::gpu::KernelHmcGpu::energies(self)
    }
    fn gradients(&mut self) -> Result<Vec<f32>> {
        rmld::backend::gpu::KernelHmcGpu::gradients(self)
    }
}

/// Every index where |got − want| > tol·scale (or got is not finite), with both values.
fn mismatches(what: &str, got: &[f32], want: &[f64], scale: &[f64], tol: f64) -> Vec<String> {
    let mut bad = Vec::new();
    if got.len() != want.len() {
        bad.push(format!(
            "{what}: {} values, expected {}",
            got.len(),
            want.len()
        ));
    }
    for (i, ((&g, &w), &s)) in got.iter().zip(want).zip(scale).enumerate() {
        if !(g.is_finite() && ((g as f64) - w).abs() <= tol * s) {
            bad.push(format!(
                "{what}[{i}]: got {g:e}, reference {w:e} (tolerance {:e})",
                tol * s
            ));
        }
    }
    bad
}

/// Panics listing every mismatch.
fn assert_none(bad: Vec<String>) {
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// Every |gpu − cpu| > tol·max(|cpu|, floor), with index and both values (got = gpu).
#[cfg(feature = "gpu")]
fn compare(what: &str, gpu: &[f32], cpu: &[f32], tol: f64, floor: f64) -> Vec<String> {
    let want: Vec<f64> = cpu.iter().map(|&v| v as f64).collect();
    let scale: Vec<f64> = want.iter().map(|v| v.abs().max(floor)).collect();
    mismatches(
        &format!("{what} (got gpu, reference cpu)"),
        gpu,
        &want,
        &scale,
        tol,
    )
}

/// Positions, energies and gradients of both backends.
#[cfg(feature = "gpu")]
fn compare_state(
    when: &str,
    gpu: &mut rmld::backend::gpu::KernelHmcGpu,
    cpu: &mut KernelHmcCpu,
) -> Vec<String> {
    let pairs = [
        (
            "positions",
            gpu.positions().unwrap(),
            cpu.positions().unwrap(),
        ),
        ("energies", gpu.energies().unwrap(), cpu.energies().unwrap()),
        (
            "gradients",
            gpu.gradients().unwrap(),
            cpu.gradients().unwrap(),
        ),
    ];
    pairs
        .into_iter()
        .flat_map(|(what, g, c)| compare(&format!("{when}: {what}"), &g, &c, TOL, 1.0))
        .collect()
}

#[cfg(feature = "gpu")]
fn terms_rows(terms: &[rmld::backend::MhTerms]) -> [Vec<f32>; 4] {
    [
        terms.iter().map(|t| t.energy_current).collect(),
        terms.iter().map(|t| t.energy_difference).collect(),
        terms.iter().map(|t| t.forward_norm).collect(),
        terms.iter().map(|t| t.reverse_norm).collect(),
    ]
}

// Tolerance of the GPU/CPU comparison, relative to max(|cpu value|, 1). Both run the same f32
// operations in the same order except: the WGSL's exp and log (within 3 + 2|x| ULP, and 2^-21
// absolute on [0.5, 2]), the workgroup trees for the softmax denominators and the MH norms
// (sequential sums on the CPU), and fused multiply-adds the driver may form. The exponents are
// O(1)-O(10) here, so the weights agree to ~1e-6 relative; positions and gradients are O(1),
// energies O(1) (−ln of at most a few hundred terms ≤ 1), the norms sums of d = 50 squares.
// Lavapipe differs by at most 5e-7 (energy differences), 3e-7 (norms), 1.4e-7 (positions);
// 1e-5 leaves a factor 20 for other drivers' exp and log and still catches any wrong draw,
// weight or step (those move values by 1e-3 and more).
#[cfg(feature = "gpu")]
const TOL: f64 = 1e-5;

#[cfg(feature = "gpu")]
fn gpu_matches_cpu(
    label: &str,
    seed: u64,
    sizes: &[usize],
    d: usize,
    u8_pixels: bool,
    chains: usize,
    s: DynamicsSettings,
) {
    use rmld::backend::gpu::KernelHmcGpu;
    let Some(ctx) = gpu_common::context(label) else {
        return;
    };
    let mut r = fixed_rng(label, seed);
    let (observations, ranges) = classes(&mut r, sizes, d, u8_pixels);
    let target = target(observations, &ranges, chains);
    let mut gpu = KernelHmcGpu::with_context(ctx, target.clone(), s.clone()).unwrap();
    let mut cpu = KernelHmcCpu::new(target.clone(), s).unwrap();
    let x0 = starts(&mut r, &target, 0.1);
    gpu.load_positions(&x0).unwrap();
    cpu.load_positions(&x0).unwrap();
    let mut bad = compare_state("loaded", &mut gpu, &mut cpu);
    // Outer 1 accepted everywhere (positions become Z), outer 2 under a mixed mask (select).
    let masks = [
        vec![true; chains],
        (0..chains).map(|c| c % 3 != 1).collect(),
    ];
    for (outer, mask) in (1..=2u32).zip(masks) {
        let (tg, tc) = (gpu.propose(outer).unwrap(), cpu.propose(outer).unwrap());
        let names = [
            "energy_current",
            "energy_difference",
            "forward_norm",
            "reverse_norm",
        ];
        for ((name, g), c) in names.iter().zip(terms_rows(&tg)).zip(terms_rows(&tc)) {
            bad.extend(compare(&format!("outer {outer}: {name}"), &g, &c, TOL, 1.0));
        }
        if tg.iter().any(|t| t.kinetic_difference != 0.0) {
            bad.push(format!(
                "outer {outer}: a non-zero kinetic difference on the GPU"
            ));
        }
        gpu.accept(&mask).unwrap();
        cpu.accept(&mask).unwrap();
        bad.extend(compare_state(
            &format!("outer {outer} accepted {mask:?}"),
            &mut gpu,
            &mut cpu,
        ));
    }
    assert_none(bad);
}

#[cfg(feature = "gpu")]
#[test]
fn gpu_matches_cpu_three_small_classes_u8() {
    gpu_matches_cpu(
        "gpu_matches_cpu_three_small_classes_u8",
        0x5eed_0001,
        &[7, 13, 20],
        50,
        true,
        8,
        settings(0.05, 3, 8, false, 0xC0FFEE),
    );
}

/// A class larger than one chunk (the online log-sum-exp's rescaling), a batch larger than the
/// workgroup (strided draws), float pixels and SGHMC noise.
#[cfg(feature = "gpu")]
#[test]
fn gpu_matches_cpu_large_class_f32_noise() {
    gpu_matches_cpu(
        "gpu_matches_cpu_large_class_f32_noise",
        0x5eed_0002,
        &[9, 2 * CHUNK + 89, 11],
        50,
        false,
        6,
        settings(0.05, 3, 100, true, 0xBADC0DE),
    );
}

/// Central differences of the f64 energy, with the step the f32 perturbation actually made.
fn finite_difference(target: &KernelTarget, chain: usize, x: &[f32], epsilon: f32) -> Vec<f64> {
    (0..x.len())
        .map(|j| {
            let (mut up, mut down) = (x.to_vec(), x.to_vec());
            up[j] += epsilon;
            down[j] -= epsilon;
            let step = up[j] as f64 - down[j] as f64;
            (target.energy_f64(chain, &up) - target.energy_f64(chain, &down)) / step
        })
        .collect()
}

#[test]
fn full_gradient_matches_finite_differences() {
    let label = "full_gradient_matches_finite_differences";
    let mut r = fixed_rng(label, 0x5eed_0003);
    let d = 20;
    // A class over one chunk long (the online rescaling) and a small one.
    let (observations, ranges) = classes(&mut r, &[CHUNK + 44, 9], d, true);
    let target = target(observations, &ranges, 4);
    let x = starts(&mut r, &target, 0.3);
    let info = target.chain_info();
    let mut bad = Vec::new();
    let mut weights = Vec::new();
    for c in 0..target.chains() {
        let xc = &x[c * d..(c + 1) * d];
        let h = (target.bandwidth2[c] as f64).sqrt();
        let fd = finite_difference(&target, c, xc, (1e-3 * h) as f32);
        let exact = target.gradient_f64(c, xc);
        let norm = exact.iter().fold(0f64, |m, g| m.max(g.abs()));
        // Central differences err by ε²/6·U''' ~ (ε/h)² relative = 1e-6, plus f64 rounding.
        let scale = vec![norm; d];
        bad.extend(mismatches(
            &format!("chain {c}: f64 gradient vs finite differences"),
            &exact.iter().map(|&g| g as f32).collect::<Vec<_>>(),
            &fd,
            &scale,
            1e-5,
        ));
        let mut g32 = vec![0f32; d];
        let u32_ = kernel_energy(&target.observations, &info[c], xc, &mut g32, &mut weights);
        // f32 twin against f64: sums of ≤ 300 rounded terms of O(1).
        bad.extend(mismatches(
            &format!("chain {c}: f32 gradient vs finite differences"),
            &g32,
            &fd,
            &scale,
            1e-4,
        ));
        let u64_ = target.energy_f64(c, xc);
        if ((u32_ as f64) - u64_).abs() > 1e-5 * u64_.abs().max(1.0) {
            bad.push(format!(
                "chain {c}: f32 energy {u32_:e}, f64 energy {u64_:e}"
            ));
        }
    }
    assert_none(bad);
}

/// After a few outer iterations with MH, the cached energies and gradients are those of a fresh
/// f64 evaluation at the current positions (on the CPU, and on the GPU when there is one).
fn cache_is_fresh<B: KernelBackend>(
    backend: &mut B,
    target: &KernelTarget,
    x0: &[f32],
    label: &str,
) {
    let rule = MhRule {
        enabled: true,
        discount: 1.0,
        delta: 0.02 * 3.0,
        method: Method::Rmld,
    };
    backend.load_positions(x0).unwrap();
    for outer in 1..=3 {
        let terms = backend.propose(outer).unwrap();
        let mask: Vec<bool> = terms
            .iter()
            .enumerate()
            .map(|(c, t)| rule.decide(t, 11, c as u32, outer).accepted)
            .collect();
        backend.accept(&mask).unwrap();
    }
    let d = target.d();
    let (x, e, g) = (
        backend.positions().unwrap(),
        backend.energies().unwrap(),
        backend.gradients().unwrap(),
    );
    let mut bad = Vec::new();
    for c in 0..target.chains() {
        let xc = &x[c * d..(c + 1) * d];
        let want = target.energy_f64(c, xc);
        if ((e[c] as f64) - want).abs() > 1e-5 * want.abs().max(1.0) {
            bad.push(format!(
                "{label} chain {c}: cached energy {:e}, fresh {want:e}",
                e[c]
            ));
        }
        let gw = target.gradient_f64(c, xc);
        let norm = gw.iter().fold(1f64, |m, v| m.max(v.abs()));
        bad.extend(mismatches(
            &format!("{label} chain {c}: cached gradient"),
            &g[c * d..(c + 1) * d],
            &gw,
            &vec![norm; d],
            1e-4,
        ));
    }
    assert_none(bad);
}

#[test]
fn cached_energy_and_gradient_equal_fresh_evaluations() {
    let label = "cached_energy_and_gradient_equal_fresh_evaluations";
    let mut r = fixed_rng(label, 0x5eed_0004);
    let (observations, ranges) = classes(&mut r, &[CHUNK + 30, 12, 17], 30, true);
    let target = target(observations, &ranges, 6);
    let x0 = starts(&mut r, &target, 0.2);
    let s = settings(0.02, 3, 16, false, 11);
    let mut cpu = KernelHmcCpu::new(target.clone(), s.clone()).unwrap();
    cache_is_fresh(&mut cpu, &target, &x0, "cpu");
    #[cfg(feature = "gpu")]
    if let Some(ctx) = gpu_common::context(label) {
        let mut gpu =
            rmld::backend::gpu::KernelHmcGpu::with_context(ctx, target.clone(), s).unwrap();
        cache_is_fresh(&mut gpu, &target, &x0, "gpu");
    }
}

/// Chains whose classes are single images, h² given (the median heuristic has no pair).
fn single_image_target(chains: usize, d: usize, h2: f32) -> Arc<KernelTarget> {
    let mut r = StdRng::seed_from_u64(0x5eed_0005);
    let (observations, ranges) = classes(&mut r, &vec![1; chains], d, true);
    Arc::new(KernelTarget::new(Arc::new(observations), ranges, vec![h2; chains]).unwrap())
}

/// U = ||x − x_1||²/(2h²) and ∇U = (x − x_1)/h² exactly; acceptance near 1 for a tiny eta and
/// near 0 for a huge one.
fn single_image_is_gaussian<B: KernelBackend>(
    make: impl Fn(Arc<KernelTarget>, DynamicsSettings) -> B,
    label: &str,
) {
    let (chains, d, h2) = (64, 30, 0.5f32);
    let target = single_image_target(chains, d, h2);
    let mut r = StdRng::seed_from_u64(0x5eed_0006);
    let x0 = starts(&mut r, &target, 0.5);
    let mut backend = make(target.clone(), settings(0.01, 3, 4, false, 3));
    backend.load_positions(&x0).unwrap();
    let (e, g) = (backend.energies().unwrap(), backend.gradients().unwrap());
    let mut bad = Vec::new();
    for c in 0..chains {
        let image = target.observations.row(c);
        let xc = &x0[c * d..(c + 1) * d];
        let dist2: f64 = xc
            .iter()
            .zip(&image)
            .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
            .sum();
        let want = dist2 / (2.0 * h2 as f64);
        // One term: the log-sum-exp is the exponent itself, rounded as a d-term f32 sum.
        if ((e[c] as f64) - want).abs() > 1e-5 * want.max(1.0) {
            bad.push(format!(
                "{label} chain {c}: energy {:e}, Gaussian {want:e}",
                e[c]
            ));
        }
        let gw: Vec<f64> = xc
            .iter()
            .zip(&image)
            .map(|(&a, &b)| (a as f64 - b as f64) / h2 as f64)
            .collect();
        bad.extend(mismatches(
            &format!("{label} chain {c}: gradient"),
            &g[c * d..(c + 1) * d],
            &gw,
            &vec![1.0; d],
            1e-5,
        ));
    }
    assert_none(bad);
    for (eta, steps, expect_most) in [(1e-3f32, 3u32, true), (1.5, 10, false)] {
        let s = settings(eta, steps, 4, false, 3);
        let rule = MhRule {
            enabled: true,
            discount: 1.0,
            delta: s.delta(),
            method: Method::Rmld,
        };
        let mut backend = make(target.clone(), s.clone());
        backend.load_positions(&x0).unwrap();
        let (mut accepted, mut total) = (0usize, 0usize);
        for outer in 1..=4 {
            let terms = backend.propose(outer).unwrap();
            let mask: Vec<bool> = terms
                .iter()
                .enumerate()
                .map(|(c, t)| rule.decide(t, s.seed, c as u32, outer).accepted)
                .collect();
            accepted += mask.iter().filter(|&&a| a).count();
            total += mask.len();
            backend.accept(&mask).unwrap();
        }
        let rate = accepted as f64 / total as f64;
        eprintln!("{label}: eta {eta}, T {steps}: acceptance {rate:.3}");
        if expect_most {
            assert!(
                rate > 0.95,
                "{label}: tiny eta {eta} accepted only {rate:.3}"
            );
        } else {
            assert!(rate < 0.05, "{label}: huge eta {eta} accepted {rate:.3}");
        }
    }
}

#[test]
fn single_image_class_is_gaussian_cpu() {
    single_image_is_gaussian(|t, s| KernelHmcCpu::new(t, s).unwrap(), "cpu");
}

#[cfg(feature = "gpu")]
#[test]
fn single_image_class_is_gaussian_gpu() {
    use rmld::backend::gpu::KernelHmcGpu;
    let Some(ctx) = gpu_common::context("single_image_class_is_gaussian_gpu") else {
        return;
    };
    single_image_is_gaussian(
        |t, s| KernelHmcGpu::with_context(ctx.clone(), t, s).unwrap(),
        "gpu",
    );
}

#[test]
fn single_image_class_has_no_median_bandwidth() {
    let target = single_image_target(3, 5, 1.0);
    let observations = target.observations.clone();
    assert!(median_bandwidth2(&observations, 1, 1, 0).is_nan());
    let err = KernelTarget::with_median_bandwidth(observations, vec![[1, 1]], 0).unwrap_err();
    assert!(matches!(err, Error::Usage { .. }), "{err}");
}

/// Rows of one value each along the first coordinate (the rest zero), raw 8-bit.
fn line(values: &[u8], d: usize, scale: f32) -> Observations {
    let mut pixels = vec![0u8; values.len() * d];
    for (i, &v) in values.iter().enumerate() {
        pixels[i * d] = v;
    }
    Observations {
        n: values.len(),
        d,
        pixels: Pixels::U8(pixels),
        scale,
    }
}

#[test]
fn median_bandwidth_known_answers() {
    let close = |got: f64, want: f64| (got - want).abs() <= 1e-12 * want.abs();
    // Rows 1..4 are 0, 2, 6 raw, 0, 1, 3 in model units (scale 0.5): distances 1, 3, 2, median
    // 2, h² 4. Rows outside the range (200, 100) must not count.
    let odd = line(&[200, 0, 2, 6, 100], 3, 0.5);
    let got = median_bandwidth2(&odd, 1, 3, 9);
    assert!(close(got, 4.0), "odd: {got}");
    // 0, 1, 2, 3: distances 1, 2, 3, 1, 2, 1: the middle two are 1 and 2, median 1.5, h² 2.25.
    let even = line(&[0, 1, 2, 3], 2, 1.0);
    let got = median_bandwidth2(&even, 0, 4, 9);
    assert!(close(got, 2.25), "even: {got}");
    // 100 rows 200·e_k (4950 pairs: the sampled path): every distance is 200·√2·scale.
    let (n, scale) = (100, 1.0 / 255.0);
    let mut pixels = vec![0u8; n * n];
    for k in 0..n {
        pixels[k * n + k] = 200;
    }
    let basis = Observations {
        n,
        d: n,
        pixels: Pixels::U8(pixels),
        scale,
    };
    assert!(n * (n - 1) / 2 > MAX_BANDWIDTH_PAIRS);
    let got = median_bandwidth2(&basis, 0, n, 5);
    let want = 2.0 * (200.0 * scale as f64).powi(2);
    assert!(
        (got - want).abs() <= 1e-9 * want,
        "basis: {got}, want {want}"
    );
    // Empty, single and out-of-range classes have none.
    for (start, count) in [(0, 0), (0, 1), (3, 2), (usize::MAX, 2)] {
        assert!(
            median_bandwidth2(&even, start, count, 0).is_nan(),
            "{start}, {count}"
        );
    }
}

#[test]
fn median_bandwidth_sample_is_seeded_and_near_the_exact_median() {
    let mut r = fixed_rng("median_bandwidth_sample", 0x5eed_0007);
    let (n, d) = (150, 16);
    let (observations, _) = classes(&mut r, &[n], d, true);
    let mut distances: Vec<f64> = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            let (a, b) = (observations.row(i), observations.row(j));
            let s: f64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| (*x as f64 - *y as f64).powi(2))
                .sum();
            distances.push(s.sqrt());
        }
    }
    distances.sort_by(f64::total_cmp);
    let m = distances.len() / 2;
    let exact = (0.5 * (distances[m - 1] + distances[m])).powi(2);
    let a = median_bandwidth2(&observations, 0, n, 1);
    assert_eq!(
        a,
        median_bandwidth2(&observations, 0, n, 1),
        "not deterministic"
    );
    let b = median_bandwidth2(&observations, 0, n, 2);
    assert_ne!(a, b, "the seed does not reach the sampler");
    // 2000 of 11175 pairs: the sample median's spread is well under 1% for these distances.
    for (seed, got) in [(1, a), (2, b)] {
        assert!(
            (got / exact - 1.0).abs() < 0.02,
            "seed {seed}: {got}, exact {exact}"
        );
    }
}

/// Shapes of the backend contract, encode's refusal, and its input checks.
fn contract<B: KernelBackend>(backend: &mut B, chains: usize, d: usize, label: &str) {
    assert_eq!(backend.chains(), chains, "{label}");
    let x: Vec<f32> = (0..chains * d).map(|i| (i % 7) as f32 * 0.1).collect();
    backend.load_positions(&x).unwrap();
    assert_eq!(backend.positions().unwrap(), x, "{label}: positions");
    assert_eq!(
        backend.images().unwrap(),
        x,
        "{label}: images are the positions"
    );
    assert_eq!(backend.energies().unwrap().len(), chains, "{label}");
    assert_eq!(backend.gradients().unwrap().len(), chains * d, "{label}");
    assert_eq!(
        backend.propose(1).unwrap().len(),
        chains,
        "{label}: MH terms"
    );
    let dynamic: &mut dyn Backend = backend;
    let err = dynamic.encode(&vec![0.0; d], 0.1, 10).unwrap_err();
    assert!(matches!(err, Error::Usage { .. }), "{label}: {err}");
    assert!(err.to_string().contains("kernel-hmc"), "{label}: {err}");
    assert!(
        backend.load_positions(&x[1..]).is_err(),
        "{label}: short positions"
    );
    assert!(
        backend.accept(&vec![true; chains + 1]).is_err(),
        "{label}: long mask"
    );
}

fn contract_target() -> Arc<KernelTarget> {
    let mut r = StdRng::seed_from_u64(0x5eed_0008);
    let (observations, ranges) = classes(&mut r, &[5, 8], 12, true);
    target(observations, &ranges, 5)
}

#[test]
fn backend_contract_cpu() {
    let target = contract_target();
    let mut cpu = KernelHmcCpu::new(target, settings(0.01, 2, 4, false, 1)).unwrap();
    contract(&mut cpu, 5, 12, "cpu");
}

#[cfg(feature = "gpu")]
#[test]
fn backend_contract_gpu() {
    use rmld::backend::gpu::KernelHmcGpu;
    let Some(ctx) = gpu_common::context("backend_contract_gpu") else {
        return;
    };
    let target = contract_target();
    let mut gpu = KernelHmcGpu::with_context(ctx, target, settings(0.01, 2, 4, false, 1)).unwrap();
    contract(&mut gpu, 5, 12, "gpu");
}

#[test]
fn bad_targets_and_settings_are_usage_errors() {
    let target = contract_target();
    let observations = target.observations.clone();
    let usage = |r: Result<KernelTarget>, what: &str| match r {
        Err(Error::Usage { .. }) => {}
        other => panic!("{what}: expected a usage error, got {other:?}"),
    };
    let n = observations.n as u32;
    usage(
        KernelTarget::new(observations.clone(), vec![], vec![]),
        "no chains",
    );
    usage(
        KernelTarget::new(observations.clone(), vec![[0, 0]], vec![1.0]),
        "empty class",
    );
    usage(
        KernelTarget::new(observations.clone(), vec![[n - 1, 2]], vec![1.0]),
        "past the end",
    );
    usage(
        KernelTarget::new(observations.clone(), vec![[u32::MAX, 2]], vec![1.0]),
        "overflow",
    );
    usage(
        KernelTarget::new(observations.clone(), vec![[0, 2]], vec![0.0]),
        "h² zero",
    );
    usage(
        KernelTarget::new(observations.clone(), vec![[0, 2]], vec![f32::NAN]),
        "h² NaN",
    );
    usage(
        KernelTarget::new(observations.clone(), vec![[0, 2]], vec![1.0, 1.0]),
        "lengths",
    );
    let mut broken = (*observations).clone();
    broken.n += 1;
    usage(
        KernelTarget::new(Arc::new(broken), vec![[0, 2]], vec![1.0]),
        "short pixels",
    );
    for method in [Method::Mala, Method::Hmc] {
        let s = DynamicsSettings {
            method,
            ..settings(0.01, 2, 4, false, 1)
        };
        match KernelHmcCpu::new(target.clone(), s) {
            Err(Error::Usage { .. }) => {}
            other => panic!("{method:?}: expected a usage error, got {:?}", other.err()),
        }
    }
    match KernelHmcCpu::new(target, settings(0.01, 2, 0, false, 1)) {
        Err(Error::Usage { .. }) => {}
        other => panic!("batch 0: expected a usage error, got {:?}", other.err()),
    }
}
