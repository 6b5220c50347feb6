//! Table 1 of Deng et al. (NeurIPS 2019, paper 003) with rmld's SSGL prior: SGLD-SA against SGLD-EM and SGLD on the paper's large-p-small-n regression, test MAE / MSE for its four (v0, σ) settings over several seeds.
//!
//! `cargo run --release --example ssgl_regression -- [--iterations K] [--seeds S] [--eta-scale E]
//! [--init zero|lasso|noise]` (defaults 20000, 5, 1, zero: β starts at 0, as in the paper's
//! loop; `lasso` starts at the LASSO code of y with lam 1, from which SGLD-EM never meets the
//! all-spike trap and ties SGLD-SA; from white noise N(0, I) the adaptive prior locks onto "every
//! coefficient is slab"; see docs/priors.md). `--paper-loop` runs the paper's own loop, with
//! `--batch`, `--untied`, `--lr0`, `--decay`, `--lasso-start` to change one of its differences
//! from rmld's sampler at a time.
//!
//! The design is the paper's Section 5.1 (`examples/regression.rs` generates it: n = 100,
//! p = 1000, rows N(0, Σ) with Σ_ij = 0.6^|i−j|, β = (3, 2, 1) + N(0, 0.2²) then zeros, noise
//! N(0, 3), 50 test rows), A := X and one observation y. SGLD is rmld's MALA proposal without the
//! MH correction (`mh = false`): β ← β − η∇U(β) + √(2η)ξ with the full-data gradient (the paper
//! uses minibatches of 50 of the 100 rows and a decaying η). The three methods differ only in the
//! SSGL prior's mode: SGLD-SA `continuous` with ω_k = 10 (k + 1000)^−0.7, SGLD-EM `continuous`
//! with ω = 1 (c = 1, α = 0), SGLD `fixed` (θ never updated). Other hyper-parameters are the
//! paper's (v1 = 10, ν = λ = 1, a = 1, b = p, δ = 0.5). σ's initial value is the column's σ; the
//! likelihood's noise variance is σ² of the column, fixed (rmld's SSGL σ scales the prior only,
//! where the paper also rescales the likelihood by it; see docs/priors.md). The prediction is
//! X_test times the posterior mean of β over the second half of the iterations.

#[allow(dead_code)]
#[path = "regression.rs"]
mod regression;

use std::sync::Arc;

use regression::{regression_data, RegressionData};
use rmld::backend::cpu::CpuBackend;
use rmld::backend::DynamicsSettings;
use rmld::io::Pixels;
use rmld::math::Portable;
use rmld::methods::Method;
use rmld::model::{Dictionary, Observations, Prior, Ssgl, SsglMode, Target};
use rmld::orchestrator::{self, Init, SampleSink, SamplerSettings};

const N: usize = 100;
const P: usize = 1000;
const TEST: usize = 50;

/// The paper's Table 1 (MAE, MSE) per method and column.
const PAPER: [(&str, [(f64, f64); 4]); 3] = [
    (
        "SGLD-SA",
        [(1.89, 5.56), (1.72, 5.64), (1.48, 3.51), (1.54, 4.42)],
    ),
    (
        "SGLD-EM",
        [(3.49, 19.31), (2.23, 8.22), (2.23, 19.28), (2.07, 6.94)],
    ),
    (
        "SGLD",
        [
            (15.85, 416.39),
            (15.85, 416.39),
            (11.86, 229.38),
            (7.72, 88.90),
        ],
    ),
];

/// The four columns: (v0, σ).
const COLUMNS: [(f32, f32); 4] = [(0.01, 2.0), (0.1, 2.0), (0.01, 1.0), (0.1, 1.0)];

/// Averages the draws of the iterations after `burn`.
struct MeanSink {
    burn: u32,
    sum: Vec<f64>,
    count: f64,
}

impl SampleSink for MeanSink {
    fn record(&mut self, outer: u32, codes: &[f32], _images: &[f32]) -> rmld::Result<()> {
        if outer > self.burn {
            for (s, &c) in self.sum.iter_mut().zip(codes) {
                *s += c as f64;
            }
            self.count += 1.0;
        }
        Ok(())
    }
}

/// (MAE, MSE) on the test set and the final mean ρ of β1..β3 and of the rest, for one method,
/// column and dataset.
fn run(
    data: &RegressionData,
    mode: (SsglMode, f32, f32),
    column: (f32, f32),
    iterations: u32,
    eta: f32,
    seed: u64,
    init: (Init, f32),
) -> (f64, f64, f64) {
    let (init, init_lam) = init;
    let (v0, sigma) = column;
    let (mode, c, alpha) = mode;
    let ssgl = Ssgl {
        v0,
        sigma,
        mode,
        c,
        alpha,
        ..Ssgl::default()
    };
    let dictionary = Dictionary {
        d: N,
        p: P,
        a: data.x.iter().map(|&v| v as f32).collect(),
    };
    let observations = Observations {
        n: 1,
        d: N,
        pixels: Pixels::F32(data.y.iter().map(|&v| v as f32).collect()),
        scale: 1.0,
    };
    let target = Arc::new(
        Target::new(Arc::new(dictionary), Arc::new(observations), init_lam)
            .with_sigma2(sigma * sigma)
            .with_prior(Prior::Ssgl(ssgl)),
    );
    let dynamics = DynamicsSettings {
        method: Method::Mala,
        eta,
        steps: 1,
        batch: 1,
        seed,
        ..Default::default()
    };
    let settings = SamplerSettings {
        chains: 1,
        samples: iterations,
        dynamics: dynamics.clone(),
        mh: false,
        discount: 1.0,
        init,
        lasso_iterations: 500,
        adapt: None,
        auto_burn_in: None,
    };
    let mut backend = CpuBackend::new(target.clone(), dynamics, 1);
    let mut sink = MeanSink {
        burn: iterations / 2,
        sum: vec![0.0; P],
        count: 0.0,
    };
    let run = orchestrator::run(&mut backend, &target, &settings, &mut sink, &mut |_| {})
        .expect("sampling failed");
    let beta: Vec<f64> = sink.sum.iter().map(|s| s / sink.count.max(1.0)).collect();
    let (mut mae, mut mse) = (0.0, 0.0);
    for (row, &y) in data.x_test.chunks(P).zip(&data.y_test) {
        let e = y - row.iter().zip(&beta).map(|(a, b)| a * b).sum::<f64>();
        mae += e.abs() / TEST as f64;
        mse += e * e / TEST as f64;
    }
    let rho_signal = run.prior_state[..3].iter().map(|&v| v as f64).sum::<f64>() / 3.0;
    if std::env::var("SSGL_DEBUG").is_ok() {
        let st = &run.prior_state;
        let rho_rest = st[3..P].iter().map(|&v| v as f64).sum::<f64>() / (P - 3) as f64;
        eprintln!(
            "  mode {mode:?} c {c} v0 {v0} sigma0 {sigma}: sigma {:.3} delta {:.4} rho(1..3) {rho_signal:.3} rho(rest) {rho_rest:.4} beta1..4 {:.2?} accept {:.2}",
            st[3 * P], st[3 * P + 1], &beta[..4], run.acceptance_rate()
        );
    }
    (mae, mse, rho_signal)
}

/// Variations of the paper's loop, to isolate which of its differences from rmld's sampler lets
/// SGLD-EM fall into its absorbing state (docs/priors.md, "Why EM loses in one loop and not the
/// other").
#[derive(Clone, Copy, Debug)]
struct LoopOptions {
    /// Rows per minibatch (the paper: 50; 100 = the full-data gradient, N/n = 1).
    batch: usize,
    /// The likelihood's σ fixed at the column's σ (rmld's backends) instead of tied to SSGL's σ.
    untied: bool,
    /// Learning rate ε_k = lr0·k^(−decay) (the paper: 0.001, 1/3); `lr0 <= 0` means rmld's
    /// fixed η = 1e−4·σ².
    lr0: f32,
    /// The learning rate's decay exponent.
    decay: f32,
    /// β's start: 0 (the paper) or the LASSO code of y at lam 1 (rmld's sampler).
    lasso_start: bool,
}

impl Default for LoopOptions {
    fn default() -> Self {
        Self {
            batch: 50,
            untied: false,
            lr0: 0.001,
            decay: 1.0 / 3.0,
            lasso_start: false,
        }
    }
}

/// The paper's own loop, outside rmld's backends (`--paper-loop`): SGLD on minibatches of 50 of the
/// 100 rows with the likelihood scaled by N/n = 2, learning rate ε_k = 0.001·k^(−1/3), β from 0,
/// and σ tied: the likelihood's noise scale is the SSGL σ as it adapts (in `fixed` mode its initial
/// value). The prior's terms and the SA update are rmld's (`ChainState`, `model::sa_update`),
/// with I = (N/n)·Σ_S r_i² and R_a = N + p + ν, N = 100.
fn paper_loop(
    data: &RegressionData,
    mode: (SsglMode, f32, f32),
    column: (f32, f32),
    iterations: u32,
    seed: u64,
    options: LoopOptions,
) -> (f64, f64, f64) {
    use rmld::model::ChainState;
    use rmld::model::{sa_update, UpdateScalars};
    use rmld::rng::{Purpose, Stream};
    let batch = options.batch;
    let (v0, sigma) = column;
    let (mode, c, alpha) = mode;
    let ssgl = Ssgl {
        v0,
        sigma,
        mode,
        c,
        alpha,
        ..Ssgl::default()
    };
    let x: Vec<f32> = data.x.iter().map(|&v| v as f32).collect();
    let y: Vec<f32> = data.y.iter().map(|&v| v as f32).collect();
    let mut state = ssgl.initial_state(1, P);
    let mut beta = if options.lasso_start {
        lasso_start(&x, &y)
    } else {
        vec![0f32; P]
    };
    let mut sum = vec![0f64; P];
    let mut count = 0.0;
    let (mut picks, mut xi) = (vec![0u32; batch], vec![0f32; P]);
    let mut residual = vec![0f32; batch];
    let scale = N as f32 / batch as f32;
    for k in 1..=iterations {
        if batch >= N {
            picks
                .iter_mut()
                .enumerate()
                .for_each(|(i, p)| *p = i as u32);
        } else {
            Stream::new(seed, 0, k, 0, Purpose::Minibatch).fill_index(N as u32, &mut picks);
        }
        Stream::new(seed, 0, k, 0, Purpose::MalaNoise).fill_normal(&mut xi);
        for (r, &i) in residual.iter_mut().zip(&picks) {
            let row = &x[i as usize * P..(i as usize + 1) * P];
            *r = y[i as usize] - row.iter().zip(&beta).map(|(a, b)| a * b).sum::<f32>();
        }
        let prior = ChainState::of(&state, P);
        let inv_sigma2 = if options.untied {
            1.0 / (sigma * sigma)
        } else {
            prior.inv_sigma2
        };
        let eps = if options.lr0 > 0.0 {
            options.lr0 * (k as f32).powf_portable(-options.decay)
        } else {
            1e-4 * sigma * sigma
        };
        let mut grad = vec![0f32; P];
        for (&r, &i) in residual.iter().zip(&picks) {
            let row = &x[i as usize * P..(i as usize + 1) * P];
            for (g, &a) in grad.iter_mut().zip(row) {
                *g += scale * a * r * inv_sigma2;
            }
        }
        for j in 0..P {
            let g = grad[j] - prior.gradient(j, beta[j]);
            beta[j] += eps * g + (2.0 * eps).sqrt() * xi[j];
        }
        if ssgl.adapts_at(k) {
            // Equation 14's I = (N/n)·Σ_S r² at the new β.
            let scaled: Vec<f32> = picks
                .iter()
                .map(|&i| {
                    let row = &x[i as usize * P..(i as usize + 1) * P];
                    let r = y[i as usize] - row.iter().zip(&beta).map(|(a, b)| a * b).sum::<f32>();
                    scale.sqrt() * r
                })
                .collect();
            let s = UpdateScalars::new(&ssgl, k, N, P);
            sa_update(&s, &mut state, &beta, &scaled, batch, P);
        }
        if k > iterations / 2 {
            sum.iter_mut().zip(&beta).for_each(|(s, &b)| *s += b as f64);
            count += 1.0;
        }
    }
    let mean: Vec<f64> = sum.iter().map(|s| s / count).collect();
    let (mut mae, mut mse) = (0.0, 0.0);
    for (row, &yt) in data.x_test.chunks(P).zip(&data.y_test) {
        let e = yt - row.iter().zip(&mean).map(|(a, b)| a * b).sum::<f64>();
        mae += e.abs() / TEST as f64;
        mse += e * e / TEST as f64;
    }
    if std::env::var("SSGL_DEBUG").is_ok() {
        eprintln!(
            "  paper loop {mode:?} c {c} v0 {v0} sigma0 {sigma}: sigma {:.3} delta {:.4} rho(1..3) {:.2?} beta1..4 {:.2?}",
            state[3 * P], state[3 * P + 1], &state[..3], &mean[..4]
        );
    }
    (
        mae,
        mse,
        state[..3].iter().map(|&v| v as f64).sum::<f64>() / 3.0,
    )
}

/// The LASSO code of y at lam 1 (FISTA, 500 iterations), the start of rmld's sampler.
fn lasso_start(x: &[f32], y: &[f32]) -> Vec<f32> {
    // σ_max(X)² by power iteration.
    let mut v = vec![1f32; P];
    let mut lipschitz = 1f32;
    for _ in 0..100 {
        let xv: Vec<f32> = x
            .chunks(P)
            .map(|row| row.iter().zip(&v).map(|(a, b)| a * b).sum())
            .collect();
        let mut w = vec![0f32; P];
        for (row, &s) in x.chunks(P).zip(&xv) {
            w.iter_mut().zip(row).for_each(|(w, &a)| *w += a * s);
        }
        lipschitz = w.iter().map(|a| a * a).sum::<f32>().sqrt();
        v = w.iter().map(|a| a / lipschitz).collect();
    }
    rmld::backend::cpu::fista::encode(x, N, P, lipschitz * 1.01, y, 1.0, 500, None)
}

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (m, var.sqrt())
}

fn main() {
    let (mut iterations, mut seeds, mut eta_scale) = (20_000u32, 5u64, 1.0f32);
    // (start, lam of the LASSO start): lam = 1e9 makes the LASSO code exactly 0 (`--init zero`).
    let mut init = (Init::Lasso, 1e9f32);
    let mut paper = false;
    let mut options = LoopOptions::default();
    let mut only_methods: Option<Vec<String>> = None;
    let mut only_columns: Option<Vec<usize>> = None;
    let mut first_seed = 1u64;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut args = args;
    for flag in ["--paper-loop", "--untied", "--lasso-start"] {
        if let Some(i) = args.iter().position(|a| a == flag) {
            match flag {
                "--paper-loop" => paper = true,
                "--untied" => options.untied = true,
                _ => options.lasso_start = true,
            }
            args.remove(i);
        }
    }
    for pair in args.chunks(2) {
        let value = pair.get(1).map(String::as_str).unwrap_or("");
        match pair[0].as_str() {
            "--iterations" => iterations = value.parse().expect("--iterations K"),
            "--seeds" => seeds = value.parse().expect("--seeds S"),
            "--first-seed" => first_seed = value.parse().expect("--first-seed S"),
            "--eta-scale" => eta_scale = value.parse().expect("--eta-scale E"),
            "--batch" => options.batch = value.parse().expect("--batch B (1..=100)"),
            "--lr0" => options.lr0 = value.parse().expect("--lr0 E (<= 0: fixed 1e-4 sigma^2)"),
            "--decay" => options.decay = value.parse().expect("--decay D"),
            "--methods" => {
                only_methods = Some(value.split(',').map(str::to_lowercase).collect());
            }
            "--columns" => {
                only_columns = Some(
                    value
                        .split(',')
                        .map(|c| c.parse().expect("--columns 0,1,2,3"))
                        .collect(),
                );
            }
            "--init" => {
                init = match value {
                    "lasso" => (Init::Lasso, 1.0),
                    "noise" => (Init::Noise, 1.0),
                    "zero" => (Init::Lasso, 1e9),
                    _ => panic!("--init lasso|noise|zero"),
                }
            }
            other => {
                panic!(
                    "unknown argument {other} (--iterations, --seeds, --first-seed, --eta-scale, \
                     --init, --methods, --columns; paper loop: --batch, --lr0, --decay, --untied, \
                     --lasso-start)"
                )
            }
        }
    }
    assert!(
        (1..=N).contains(&options.batch),
        "--batch must lie in 1..={N}"
    );
    let methods: [(&str, (SsglMode, f32, f32)); 3] = [
        ("SGLD-SA", (SsglMode::Continuous, 10.0, 0.7)),
        ("SGLD-EM", (SsglMode::Continuous, 1.0, 0.0)),
        ("SGLD", (SsglMode::Fixed, 10.0, 0.7)),
    ];
    let started = std::time::Instant::now();
    let datasets: Vec<RegressionData> = (first_seed..first_seed + seeds)
        .map(regression_data)
        .collect();
    println!(
        "Table 1 (Deng et al. 2019) with rmld: n = {N}, p = {P}, {TEST} test rows, {iterations} \
         SGLD iterations (second half averaged), {seeds} seeds (datasets) from {first_seed}; {}; \
         MAE / MSE as mean ± sd over seeds, the paper's in brackets",
        if paper {
            format!("the paper's loop, {options:?}")
        } else {
            match init {
                (Init::Lasso, lam) if lam >= 1e9 => "rmld's sampler, beta from 0".to_string(),
                (start, lam) => format!("rmld's sampler, {start:?} starts (LASSO lam {lam})"),
            }
        }
    );
    let columns: Vec<usize> = only_columns.unwrap_or_else(|| (0..COLUMNS.len()).collect());
    print!("{:<8}", "");
    for &col in &columns {
        let (v0, sigma) = COLUMNS[col];
        print!(" | v0 = {v0}, sigma = {sigma:<27}");
    }
    println!();
    for (m, (name, mode)) in methods.iter().enumerate() {
        let short = name.trim_start_matches("SGLD-").to_lowercase();
        if let Some(only) = &only_methods {
            if !only.contains(&short) && !only.contains(&name.to_lowercase()) {
                continue;
            }
        }
        print!("{name:<8}");
        for &col in &columns {
            let (v0, sigma) = COLUMNS[col];
            // SGLD's step: stable for the likelihood's curvature ||X||²/σ² (about 4000/σ²).
            let eta = eta_scale * 1e-4 * sigma * sigma;
            let results: Vec<(f64, f64, f64)> = datasets
                .iter()
                .enumerate()
                .map(|(s, data)| {
                    let seed = s as u64 + first_seed;
                    if paper {
                        paper_loop(data, *mode, (v0, sigma), iterations, seed, options)
                    } else {
                        run(data, *mode, (v0, sigma), iterations, eta, seed, init)
                    }
                })
                .collect();
            if std::env::var("SSGL_DEBUG").is_ok() {
                let maes: Vec<String> = results.iter().map(|r| format!("{:.2}", r.0)).collect();
                eprintln!("  {name} column {col}: MAE per seed {}", maes.join(" "));
            }
            let (mae, mae_sd) = mean_sd(&results.iter().map(|r| r.0).collect::<Vec<_>>());
            let (mse, mse_sd) = mean_sd(&results.iter().map(|r| r.1).collect::<Vec<_>>());
            let (pm, ps) = PAPER[m].1[col];
            print!(" | {mae:5.2}±{mae_sd:4.2} / {mse:6.2}±{mse_sd:5.2} [{pm} / {ps}]");
        }
        println!();
    }
    println!("({:.0} s)", started.elapsed().as_secs_f64());
}
