//! How far RMLD's output is from the posterior it targets, on A = I where the posterior is known
//! in closed form: the bias of the mean and of the variance per coordinate as a function of eta,
//! T and the discount, with MALA and HMC as the exact reference. Prints the tables of
//! `docs/exactness.md`.
//!
//! `cargo run --release --example rmld_bias`

use std::sync::Arc;

use rmld::backend::cpu::CpuBackend;
use rmld::backend::DynamicsSettings;
use rmld::diagnostics::reference::LaplaceGaussian;
use rmld::io::Pixels;
use rmld::methods::Method;
use rmld::model::{Dictionary, Observations, Target};
use rmld::orchestrator::{self, Init, MemorySink, SamplerSettings};

const Y: [f32; 6] = [0.3, -1.2, 2.0, 0.0, 0.8, -0.4];
const LAM: f32 = 1.5;
const SIGMA2: f32 = 0.7;
const N: usize = 16;
const CHAINS: usize = 256;
const SAMPLES: u32 = 400;
const BURN: usize = 100;

/// A = I (p = d = 6) and 16 observations whose mean is Y (Y ± 0.5 in a fixed pattern), so RMLD's
/// minibatches (m = 4) are noisy while the posterior depends on Y only.
fn target() -> Arc<Target> {
    let p = Y.len();
    let mut a = vec![0f32; p * p];
    (0..p).for_each(|i| a[i * p + i] = 1.0);
    let rows: Vec<f32> = (0..N)
        .flat_map(|i| {
            Y.iter()
                .enumerate()
                .map(move |(j, &y)| y + if (i + j) % 2 == 0 { 0.5 } else { -0.5 })
        })
        .collect();
    let observations = Observations {
        n: N,
        d: p,
        pixels: Pixels::F32(rows),
        scale: 1.0,
    };
    Arc::new(
        Target::new(
            Arc::new(Dictionary { d: p, p, a }),
            Arc::new(observations),
            LAM,
        )
        .with_sigma2(SIGMA2),
    )
}

/// Per coordinate (mean, variance) of the draws after burn-in, and the acceptance.
fn moments(dynamics: DynamicsSettings, mh: bool, discount: f32) -> (Vec<(f64, f64)>, f64) {
    let t = target();
    let p = t.p();
    let settings = SamplerSettings {
        chains: CHAINS,
        samples: SAMPLES,
        dynamics: dynamics.clone(),
        mh,
        discount,
        init: Init::Noise,
        lasso_iterations: 1,
        adapt: None,
        auto_burn_in: None,
    };
    let mut backend = CpuBackend::new(t.clone(), dynamics, CHAINS);
    let mut sink = MemorySink::default();
    let run = orchestrator::run(&mut backend, &t, &settings, &mut sink, &mut |_| {}).unwrap();
    let kept = &sink.codes[BURN * CHAINS * p..];
    let n = (kept.len() / p) as f64;
    let stats = (0..p)
        .map(|j| {
            let mean = kept
                .iter()
                .skip(j)
                .step_by(p)
                .map(|&v| v as f64)
                .sum::<f64>()
                / n;
            let var = kept
                .iter()
                .skip(j)
                .step_by(p)
                .map(|&v| (v as f64 - mean).powi(2))
                .sum::<f64>()
                / (n - 1.0);
            (mean, var)
        })
        .collect();
    (stats, run.acceptance_rate())
}

fn main() {
    let exact: Vec<(f64, f64)> = Y
        .iter()
        .map(|&y| {
            LaplaceGaussian {
                m: y as f64,
                s2: SIGMA2 as f64,
                lam: LAM as f64,
            }
            .moments()
        })
        .collect();
    println!("A = I (p = 6), y = {Y:?}, lam = {LAM}, sigma² = {SIGMA2}; {CHAINS} chains × {SAMPLES} samples, first {BURN} dropped; RMLD minibatch m = 4 of n = {N}.");
    println!("exact (mean, variance) per coordinate: {exact:.3?}\n");
    println!("| method | eta | T (L) | discount | acceptance | mean bias per coordinate | variance ratio per coordinate |");
    println!("|---|---|---|---|---|---|---|");
    let row =
        |label: &str, eta: f32, steps: String, discount: String, stats: &[(f64, f64)], acc: f64| {
            let bias: Vec<String> = stats
                .iter()
                .zip(&exact)
                .map(|(s, e)| format!("{:+.3}", s.0 - e.0))
                .collect();
            let ratio: Vec<String> = stats
                .iter()
                .zip(&exact)
                .map(|(s, e)| format!("{:.2}", s.1 / e.1))
                .collect();
            println!(
                "| {label} | {eta} | {steps} | {discount} | {:.1}% | {} | {} |",
                100.0 * acc,
                bias.join(" "),
                ratio.join(" ")
            );
        };
    for (method, eta, l) in [(Method::Mala, 0.15, 1), (Method::Hmc, 0.3, 5)] {
        let dynamics = DynamicsSettings {
            method,
            eta,
            leapfrog_steps: l,
            seed: 1,
            ..Default::default()
        };
        let (stats, acc) = moments(dynamics, true, 1.0);
        let steps = if method == Method::Hmc {
            format!("({l})")
        } else {
            "-".into()
        };
        row(&format!("{method:?}"), eta, steps, "-".into(), &stats, acc);
    }
    for eta in [0.01f32, 0.05, 0.2] {
        for steps in [5u32, 20] {
            for (mh, discount) in [(true, 1.0f32), (true, 1.25), (false, 1.0)] {
                let dynamics = DynamicsSettings {
                    method: Method::Rmld,
                    eta,
                    steps,
                    batch: 4,
                    seed: 1,
                    ..Default::default()
                };
                let (stats, acc) = moments(dynamics, mh, discount);
                let d = if mh {
                    format!("{discount}")
                } else {
                    "no MH".into()
                };
                row("RMLD", eta, steps.to_string(), d, &stats, acc);
            }
        }
    }
}
