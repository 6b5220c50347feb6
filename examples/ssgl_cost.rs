//! What the SSGL prior costs on the CPU backend at MNIST's shape (d = 784, p = 3136): seconds per outer iteration (RMLD, T = 20 steps) with the Laplace prior and with SSGL adapting, and the SSGL update's share (`CpuPhase::PriorUpdate`: the SA update and X's gradient recomputed under the new state).
//!
//! `cargo run --release --example ssgl_cost -- [--chains C] [--outer K]`

use std::sync::Arc;
use std::time::Instant;

use rmld::backend::cpu::{CpuBackend, CpuPhase};
use rmld::backend::{Backend, DynamicsSettings, ModelState};
use rmld::io::Pixels;
use rmld::model::{Dictionary, Observations, Prior, Ssgl, SsglMode, Target};

fn main() {
    let (mut chains, mut outer) = (16usize, 5u32);
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let value = pair.get(1).map(String::as_str).unwrap_or("");
        match pair[0].as_str() {
            "--chains" => chains = value.parse().expect("--chains C"),
            "--outer" => outer = value.parse().expect("--outer K"),
            other => panic!("unknown argument {other} (--chains, --outer)"),
        }
    }
    let (d, p, n) = (784, 3136, 256);
    let pixels: Vec<u8> = (0..n * d)
        .map(|i| ((i * 2654435761usize) >> 7) as u8)
        .collect();
    let observations = Arc::new(Observations {
        n,
        d,
        pixels: Pixels::U8(pixels),
        scale: 1.0 / 255.0,
    });
    let dictionary = Arc::new(Dictionary::gaussian(d, p, 1));
    let dynamics = DynamicsSettings {
        eta: 0.001,
        ..Default::default()
    };
    let ssgl = Prior::Ssgl(Ssgl {
        mode: SsglMode::Continuous,
        ..Ssgl::default()
    });
    let laplace = Target::new(dictionary, observations, 0.05);
    let mut per_iteration = Vec::new();
    for (name, target) in [
        ("laplace", laplace.clone()),
        ("ssgl", laplace.with_prior(ssgl)),
    ] {
        let target = Arc::new(target);
        let mut backend =
            CpuBackend::new(target.clone(), dynamics.clone(), chains).with_phase_timing();
        backend.load_positions(&vec![0.01; chains * p]).unwrap();
        // One untimed warm-up iteration (thread pool, first touches of the buffers).
        backend.propose(1).unwrap();
        backend.accept(&vec![true; chains]).unwrap();
        if target.prior.ssgl().is_some() {
            backend.prior_update(1).unwrap();
        }
        let warm = backend.phase_seconds().unwrap()[CpuPhase::PriorUpdate as usize];
        let started = Instant::now();
        for k in 2..=outer + 1 {
            backend.propose(k).unwrap();
            backend.accept(&vec![true; chains]).unwrap();
            if target.prior.ssgl().is_some() {
                backend.prior_update(k).unwrap();
            }
        }
        let seconds = started.elapsed().as_secs_f64() / outer as f64;
        let phases = backend.phase_seconds().unwrap();
        let update = (phases[CpuPhase::PriorUpdate as usize] - warm) / outer as f64;
        let fused = phases[CpuPhase::Update as usize] / (outer + 1) as f64;
        println!(
            "{name}: {chains} chains, {d} × {p}, T = {}: {seconds:.3} s per outer iteration \
             ({:.1} chain-iterations/s), of which the prior's update {update:.4} s ({:.1}%); \
             the fused momentum/position updates (with the prior's gradient) {fused:.4} s",
            dynamics.steps,
            chains as f64 / seconds,
            100.0 * update / seconds
        );
        per_iteration.push(seconds);
    }
    println!(
        "ssgl / laplace: {:.3}× the time per outer iteration",
        per_iteration[1] / per_iteration[0]
    );
}
