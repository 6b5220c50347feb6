//! The large-p-small-n regression of paper 003 (Section 5.1) sampled with rmld: A := X, one
//! observation y, a Laplace prior and σ² = 3. Prints the posterior means of the first
//! coordinates and the test MSE on 50 new points.
//!
//! `cargo run --release --example regression -- [--method rmld|mala|hmc] [--chains C]
//!  [--samples K] [--eta ETA] [--leapfrog-steps L] [--lambda LAM] [--init lasso|noise]`, or `-- --save-data DIR` to
//!  write the data as NPY for an outside reference sampler.

use std::sync::Arc;

use clap::ValueEnum;
use rmld::backend::cpu::CpuBackend;
use rmld::backend::DynamicsSettings;
use rmld::io::Pixels;
use rmld::methods::Method;
use rmld::model::{Dictionary, Observations, Target};
use rmld::orchestrator::{self, Init, MemorySink, SamplerSettings};
use rmld::rng::{Purpose, Stream, SHARED_CHAIN};

/// Observations n, predictors p, test points, noise variance and the correlation of Σ.
const N: usize = 100;
const P: usize = 1000;
const TEST: usize = 50;
const NOISE_VARIANCE: f64 = 3.0;
const RHO: f64 = 0.6;

/// How to sample the regression posterior.
#[derive(Clone, Debug)]
pub struct RegressionConfig {
    pub method: Method,
    pub chains: usize,
    pub samples: u32,
    pub eta: f32,
    pub leapfrog_steps: u32,
    pub lam: f32,
    pub seed: u64,
    /// Where the chains start: LASSO codes of y (the default) or white noise.
    pub init: Init,
}

impl Default for RegressionConfig {
    fn default() -> Self {
        // Checked against an exact Gibbs sampler (tests/regression_example.rs): these settings
        // mix (acceptance ~90%) and converge from white noise within the first half.
        RegressionConfig {
            method: Method::Hmc,
            chains: 16,
            samples: 1200,
            eta: 0.005,
            leapfrog_steps: 60,
            lam: 3.0,
            seed: 2024,
            init: Init::Noise,
        }
    }
}

/// What the run found.
#[derive(Clone, Debug)]
pub struct RegressionResult {
    /// The true β (first three nonzero).
    pub beta: Vec<f64>,
    /// The posterior mean of β (second half of every chain).
    pub posterior_mean: Vec<f64>,
    /// Mean squared error of X*·E[β | y] against y* on the 50 test points.
    pub test_mse: f64,
    /// The same with the true β (the noise floor, about 3).
    pub oracle_mse: f64,
    /// Overall acceptance.
    pub acceptance: f64,
    /// Each chain's mean of the second half of its draws (for Monte Carlo errors).
    pub chain_means: Vec<Vec<f64>>,
    /// Each chain's mean of ||β||₁ and of ||y − Xβ||² over the same draws: global statistics that
    /// lam and σ² move strongly.
    pub chain_l1: Vec<f64>,
    pub chain_rss: Vec<f64>,
}

/// n rows of X ~ N(0, Σ), Σ_ij = 0.6^|i−j| (an AR(1) along the predictors), row-major, f64;
/// row i from the stream (seed, SHARED_CHAIN, outer = `base + i`).
fn design(rows: usize, base: u32, seed: u64) -> Vec<f64> {
    let mut x = vec![0f64; rows * P];
    let mut z = vec![0f32; P];
    for (i, row) in x.chunks_mut(P).enumerate() {
        Stream::new(seed, SHARED_CHAIN, base + i as u32, 0, Purpose::InitNoise).fill_normal(&mut z);
        row[0] = z[0] as f64;
        for j in 1..P {
            row[j] = RHO * row[j - 1] + (1.0 - RHO * RHO).sqrt() * z[j] as f64;
        }
    }
    x
}

/// y = X β + N(0, 3·I), noise from the stream (seed, SHARED_CHAIN, `outer`, 1).
fn responses(x: &[f64], beta: &[f64], outer: u32, seed: u64) -> Vec<f64> {
    let rows = x.len() / P;
    let mut e = vec![0f32; rows];
    Stream::new(seed, SHARED_CHAIN, outer, 1, Purpose::InitNoise).fill_normal(&mut e);
    x.chunks(P)
        .zip(&e)
        .map(|(row, &e)| {
            row.iter().zip(beta).map(|(a, b)| a * b).sum::<f64>() + NOISE_VARIANCE.sqrt() * e as f64
        })
        .collect()
}

/// The example's data: β, the training design and responses, and the test points.
pub struct RegressionData {
    pub beta: Vec<f64>,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub x_test: Vec<f64>,
    pub y_test: Vec<f64>,
}

/// β = (3, 2, 1 each + N(0, 0.2²), 0, …), n training and 50 test rows, all from `seed`.
pub fn regression_data(seed: u64) -> RegressionData {
    let mut b = [0f32; 4];
    Stream::new(seed, SHARED_CHAIN, 0, 2, Purpose::InitNoise).fill_normal(&mut b);
    let mut beta = vec![0f64; P];
    for (k, centre) in [3.0, 2.0, 1.0].iter().enumerate() {
        beta[k] = centre + 0.2 * b[k] as f64;
    }
    let x = design(N, 1, seed);
    let y = responses(&x, &beta, 0, seed);
    let x_test = design(TEST, 1 + N as u32, seed);
    let y_test = responses(&x_test, &beta, 1, seed);
    RegressionData {
        beta,
        x,
        y,
        x_test,
        y_test,
    }
}

/// ||β||₁ and ||y − Xβ||² for a design `x` of rows of P.
pub fn l1_and_rss(x: &[f64], y: &[f64], beta: &[f64]) -> (f64, f64) {
    let rss = x
        .chunks(P)
        .zip(y)
        .map(|(row, &yi)| (yi - row.iter().zip(beta).map(|(a, b)| a * b).sum::<f64>()).powi(2))
        .sum();
    (beta.iter().map(|b| b.abs()).sum(), rss)
}

/// Generates the data, samples the posterior on the CPU backend and scores it.
pub fn run_regression(config: &RegressionConfig) -> RegressionResult {
    let seed = config.seed;
    let RegressionData {
        beta,
        x,
        y,
        x_test,
        y_test,
    } = regression_data(seed);
    let dictionary = Dictionary {
        d: N,
        p: P,
        a: x.iter().map(|&v| v as f32).collect(),
    };
    let observations = Observations {
        n: 1,
        d: N,
        pixels: Pixels::F32(y.iter().map(|&v| v as f32).collect()),
        scale: 1.0,
    };
    let target = Arc::new(
        Target::new(Arc::new(dictionary), Arc::new(observations), config.lam)
            .with_sigma2(NOISE_VARIANCE as f32),
    );
    let dynamics = DynamicsSettings {
        method: config.method,
        eta: config.eta,
        leapfrog_steps: config.leapfrog_steps,
        steps: 10,
        batch: 1,
        seed,
        ..Default::default()
    };
    let settings = SamplerSettings {
        chains: config.chains,
        samples: config.samples,
        dynamics: dynamics.clone(),
        mh: true,
        discount: 1.0,
        init: config.init,
        lasso_iterations: 500,
        adapt: None,
        auto_burn_in: None,
    };
    let mut backend = CpuBackend::new(target.clone(), dynamics, config.chains);
    let mut sink = MemorySink::default();
    let run = orchestrator::run(&mut backend, &target, &settings, &mut sink, &mut |_| {})
        .expect("sampling failed");
    let k = config.samples as usize;
    let kept = &sink.codes[(k / 2) * config.chains * P..];
    let draws = (kept.len() / P) as f64;
    let mut posterior_mean = vec![0f64; P];
    let mut chain_means = vec![vec![0f64; P]; config.chains];
    let per_chain = draws / config.chains as f64;
    let (mut chain_l1, mut chain_rss) = (vec![0f64; config.chains], vec![0f64; config.chains]);
    // The sink holds sample k of every chain before sample k + 1: row i is chain i mod C.
    for (i, row) in kept.chunks(P).enumerate() {
        let b: Vec<f64> = row.iter().map(|&v| v as f64).collect();
        let (l1, rss) = l1_and_rss(&x, &y, &b);
        chain_l1[i % config.chains] += l1 / per_chain;
        chain_rss[i % config.chains] += rss / per_chain;
        let chain = &mut chain_means[i % config.chains];
        for ((m, c), &v) in posterior_mean.iter_mut().zip(chain.iter_mut()).zip(row) {
            *m += v as f64 / draws;
            *c += v as f64 / per_chain;
        }
    }
    let mse = |coef: &[f64]| {
        x_test
            .chunks(P)
            .zip(&y_test)
            .map(|(row, &yt)| (yt - row.iter().zip(coef).map(|(a, b)| a * b).sum::<f64>()).powi(2))
            .sum::<f64>()
            / TEST as f64
    };
    RegressionResult {
        test_mse: mse(&posterior_mean),
        oracle_mse: mse(&beta),
        acceptance: run.acceptance_rate(),
        chain_means,
        chain_l1,
        chain_rss,
        beta,
        posterior_mean,
    }
}

/// Writes the data as NPY (x, y, x_test, y_test, beta; f64 as f32) for an outside reference
/// sampler (`scripts/exactness/bayesian_lasso_gibbs.py`).
#[allow(dead_code)]
fn save_data(dir: &std::path::Path, seed: u64) -> rmld::Result<()> {
    let data = regression_data(seed);
    std::fs::create_dir_all(dir)
        .map_err(|e| rmld::Error::input(dir, format!("cannot create the folder: {e}")))?;
    let f32s = |v: &[f64]| v.iter().map(|&a| a as f32).collect::<Vec<f32>>();
    for (name, shape, values) in [
        ("x.npy", vec![N, P], &data.x),
        ("y.npy", vec![N], &data.y),
        ("x_test.npy", vec![TEST, P], &data.x_test),
        ("y_test.npy", vec![TEST], &data.y_test),
        ("beta.npy", vec![P], &data.beta),
    ] {
        rmld::io::write_npy_f32(&dir.join(name), &shape, &f32s(values))?;
    }
    println!("wrote {}", dir.display());
    Ok(())
}

#[allow(dead_code)]
fn main() {
    let mut config = RegressionConfig::default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let value = pair.get(1).map(String::as_str).unwrap_or("");
        match pair[0].as_str() {
            "--method" => config.method = Method::from_str(value, true).expect("--method"),
            "--chains" => config.chains = value.parse().expect("--chains"),
            "--samples" => config.samples = value.parse().expect("--samples"),
            "--eta" => config.eta = value.parse().expect("--eta"),
            "--leapfrog-steps" => config.leapfrog_steps = value.parse().expect("--leapfrog-steps"),
            "--lambda" => config.lam = value.parse().expect("--lambda"),
            "--init" => config.init = Init::from_str(value, true).expect("--init"),
            "--save-data" => {
                save_data(std::path::Path::new(value), config.seed).expect("--save-data");
                return;
            }
            other => panic!("unknown argument {other}"),
        }
    }
    let started = std::time::Instant::now();
    let result = run_regression(&config);
    println!(
        "regression (n = {N}, p = {P}, sigma² = 3, lam = {}) with {:?}: {} chains × {} samples, \
         acceptance {:.1}%, {:.1} s",
        config.lam,
        config.method,
        config.chains,
        config.samples,
        100.0 * result.acceptance,
        started.elapsed().as_secs_f64()
    );
    for j in 0..6 {
        println!(
            "  beta[{}]: true {:+.3}, posterior mean {:+.3}",
            j + 1,
            result.beta[j],
            result.posterior_mean[j]
        );
    }
    let rest = &result.posterior_mean[3..];
    println!(
        "  beta[4..{P}]: max |posterior mean| {:.3}, mean |posterior mean| {:.4}",
        rest.iter().fold(0f64, |m, v| m.max(v.abs())),
        rest.iter().map(|v| v.abs()).sum::<f64>() / rest.len() as f64
    );
    let chains = result.chain_rss.len() as f64;
    println!(
        "  posterior means of ||beta||_1 {:.3} and ||y - X beta||^2 {:.3}",
        result.chain_l1.iter().sum::<f64>() / chains,
        result.chain_rss.iter().sum::<f64>() / chains
    );
    println!(
        "  test MSE on {TEST} new points: {:.3} (with the true beta: {:.3}; paper's SGLD-SA: 3.5 to 5.6)",
        result.test_mse, result.oracle_mse
    );
}
