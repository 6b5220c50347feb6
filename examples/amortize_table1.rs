//! Table 1 of paper 004: SAL-MC with and without MH against HMC on Ring, Mog2, Mog6 and Ring5 (ESS of 2000, ESS/s, R-hat).
//!
//! `cargo run --release --example amortize_table1 [-- TARGET...] [--iterations N] [--chains C]`
//!
//! Per target: train SAL-MC (timed), then C chains of 2000 draws each of SAL-MC without MH,
//! SAL-MC with the exact MH step, and HMC, all from N(0, I) starts. ESS is the per-chain ESS
//! (Geyer, `diagnostics::ess_basic` on one chain), averaged over the chains, of the smallest
//! dimension (Ring5: of the radius, the paper's statistic for it); ESS/s divides the chains'
//! summed ESS by the sampling wall time of all chains; R-hat is the rank-normalised split-R̂
//! across the C chains (the worst dimension).

use rmld::math::Portable;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::SeedableRng;
use rmld::amortize::{train, Adjust, Hmc2d, Operator, Progress, SalSettings, Target2d, Toy};
use rmld::diagnostics::{ess_basic, split_rhat};

const DRAWS: usize = 2000;

/// The paper's Table 1: (ESS, ESS/s) without and with MH.
fn paper(toy: Toy) -> (Option<(f64, f64)>, (f64, f64)) {
    match toy {
        Toy::Ring => (None, (1561.0, 25624.0)),
        Toy::Mog2 => (Some((1635.0, 121138.0)), (1172.0, 17531.0)),
        Toy::Mog6 => (Some((1435.0, 72691.0)), (978.0, 12235.0)),
        Toy::Ring5 => (Some((1212.0, 65287.0)), (414.0, 16287.0)),
    }
}

/// The statistics whose ESS is reported (the smallest is taken).
fn statistics(toy: Toy, p: [f64; 2]) -> Vec<f64> {
    match toy {
        Toy::Ring5 => vec![(p[0] * p[0] + p[1] * p[1]).sqrt()],
        _ => vec![p[0], p[1]],
    }
}

struct Row {
    ess: f64,
    ess_per_s: f64,
    rhat: f64,
    acceptance: f64,
}

fn summarise(toy: Toy, draws: &[[f64; 2]], chains: usize, seconds: f64, acceptance: f64) -> Row {
    let dims = statistics(toy, [0.0, 0.0]).len();
    let mut ess = f64::INFINITY;
    let mut rhat = 0.0f64;
    for d in 0..dims {
        let per_chain: Vec<Vec<f64>> = (0..chains)
            .map(|c| {
                draws[c * DRAWS..(c + 1) * DRAWS]
                    .iter()
                    .map(|&p| statistics(toy, p)[d])
                    .collect()
            })
            .collect();
        let mean_ess = per_chain
            .iter()
            .map(|ch| {
                ess_basic(std::slice::from_ref(ch))
                    .unwrap_or(0.0)
                    .min(DRAWS as f64)
            })
            .sum::<f64>()
            / chains as f64;
        ess = ess.min(mean_ess);
        rhat = rhat.max(split_rhat(&per_chain).unwrap_or(f64::NAN));
    }
    Row {
        ess,
        ess_per_s: ess * chains as f64 / seconds,
        rhat,
        acceptance,
    }
}

fn hmc_for(toy: Toy) -> Hmc2d {
    match toy {
        Toy::Ring => Hmc2d {
            step: 0.1,
            leapfrog: 10,
        },
        Toy::Mog2 | Toy::Mog6 => Hmc2d {
            step: 0.15,
            leapfrog: 10,
        },
        Toy::Ring5 => Hmc2d {
            step: 0.05,
            leapfrog: 10,
        },
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut toys = Vec::new();
    let mut settings = SalSettings::default();
    let mut chains = 32usize;
    let mut log_every = 0usize;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--iterations" => {
                i += 1;
                settings.iterations = args[i].parse().expect("--iterations N");
            }
            "--chains" => {
                i += 1;
                chains = args[i].parse().expect("--chains C");
            }
            "--set" => {
                i += 1;
                let (key, value) = args[i].split_once('=').expect("--set key=value");
                let f: f64 = value.parse().expect("--set key=number");
                match key {
                    "hidden" => settings.hidden = f as usize,
                    "particles" => settings.particles = f as usize,
                    "disc_steps" => settings.disc_steps = f as usize,
                    "lr" => settings.lr = f as f32,
                    "w2_weight" => settings.w2_weight = f as f32,
                    "jump_weight" => settings.jump_weight = f as f32,
                    "accept_weight" => settings.accept_weight = f as f32,
                    "sigma_min" => settings.sigma_min = f as f32,
                    "svgd_steps" => settings.svgd_steps = f as usize,
                    "svgd_step" => settings.svgd.step = f,
                    "h_svgd" => settings.svgd.h_svgd = f,
                    "h_density" => settings.svgd.h_density = f,
                    "eta" => settings.svgd.eta = f,
                    "seed" => settings.seed = f as u64,
                    "global_components" => settings.global_components = f as usize,
                    "global_share" => settings.global_share = f,
                    "agsvgd" => settings.adjust = Adjust::AgSvgd,
                    "hmc_teacher" => {
                        settings.adjust = Adjust::Hmc(Hmc2d {
                            step: f,
                            leapfrog: 10,
                        })
                    }
                    _ => panic!("unknown setting {key}"),
                }
            }
            "--log" => {
                i += 1;
                log_every = args[i].parse().expect("--log N");
            }
            "--mlp-bench" | "--svgd-only" => {}
            name => toys.push(
                *Toy::ALL
                    .iter()
                    .find(|t| t.name().eq_ignore_ascii_case(name))
                    .unwrap_or_else(|| panic!("unknown target {name}: Ring, Mog2, Mog6, Ring5")),
            ),
        }
        i += 1;
    }
    if args.iter().any(|a| a == "--svgd-only") {
        for &toy in &toys {
            svgd_only(toy, &settings.svgd);
        }
        return;
    }
    if args.iter().any(|a| a == "--mlp-bench") {
        mlp_bench();
        return;
    }
    if toys.is_empty() {
        toys = Toy::ALL.to_vec();
    }
    println!(
        "| target | sampler | ESS (of {DRAWS}) | ESS/s | R-hat | accept | paper ESS / ESS/s |"
    );
    println!("|---|---|---|---|---|---|---|");
    for toy in toys {
        let t0 = Instant::now();
        let (op, stats) = train(&toy, &settings, |p: &Progress| {
            if log_every > 0 && p.iteration.is_multiple_of(log_every) {
                eprintln!(
                    "  {} it {}: D {:.3} G {:.3} rms {:.3} sigma {:.3} |mu| {:.3}",
                    toy.name(),
                    p.iteration,
                    p.disc_loss,
                    p.gen_loss,
                    p.particle_rms,
                    p.mean_sigma,
                    p.mean_mu
                );
            }
            true
        })
        .expect("training");
        eprintln!(
            "{}: trained in {:.1} s (D loss {:.3}, G loss {:.3})",
            toy.name(),
            t0.elapsed().as_secs_f64(),
            stats.disc_loss,
            stats.gen_loss
        );
        let mut rng = StdRng::seed_from_u64(7);
        if let Some(q) = &op.global {
            // The global proposal's importance-sampling efficiency (Σw)² / (N Σw²), w = e^−U / q:
            // 1 when q equals the target, and about the independence moves' acceptance.
            let logw: Vec<f64> = (0..20000)
                .map(|_| {
                    let x = q.sample(&mut rng);
                    -toy.energy_grad(x).0 - q.log_density(x)
                })
                .collect();
            let top = logw.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let w: Vec<f64> = logw.iter().map(|l| (l - top).exp_portable()).collect();
            let (s1, s2) = (w.iter().sum::<f64>(), w.iter().map(|v| v * v).sum::<f64>());
            eprintln!(
                "  global proposal: {} Gaussians, importance-sampling efficiency {:.3}",
                q.len(),
                s1 * s1 / (w.len() as f64 * s2)
            );
        }
        let starts: Vec<[f64; 2]> = (0..chains)
            .map(|_| [rmld_normal(&mut rng), rmld_normal(&mut rng)])
            .collect();
        let (paper_plain, paper_mh) = paper(toy);
        for (label, mh) in [("SAL-MC", false), ("SAL-MC + MH", true)] {
            let t = Instant::now();
            let run = op.chains(&toy, &starts, DRAWS, mh, &mut rng);
            let row = summarise(
                toy,
                &run.draws,
                chains,
                t.elapsed().as_secs_f64(),
                run.acceptance,
            );
            let paper = if mh { Some(paper_mh) } else { paper_plain };
            print_row(toy, label, &row, paper);
        }
        let hmc = hmc_for(toy);
        let t = Instant::now();
        let mut draws = vec![[0.0; 2]; chains * DRAWS];
        let mut accepted = 0usize;
        for (c, start) in starts.iter().enumerate() {
            let mut x = *start;
            for k in 0..DRAWS {
                let (next, a) = hmc.transition(&toy, x, &mut rng);
                x = next;
                accepted += a as usize;
                draws[c * DRAWS + k] = x;
            }
        }
        let row = summarise(
            toy,
            &draws,
            chains,
            t.elapsed().as_secs_f64(),
            accepted as f64 / (chains * DRAWS) as f64,
        );
        print_row(
            toy,
            &format!("HMC ε={} L={}", hmc.step, hmc.leapfrog),
            &row,
            None,
        );
        let _ = sanity(&op, &toy);
    }
}

fn print_row(toy: Toy, label: &str, row: &Row, paper: Option<(f64, f64)>) {
    let paper = paper.map_or("N/A".to_string(), |(e, s)| format!("{e:.0} / {s:.0}"));
    println!(
        "| {} | {label} | {:.0} | {:.0} | {:.3} | {:.2} | {paper} |",
        toy.name(),
        row.ess,
        row.ess_per_s,
        row.rhat,
        row.acceptance
    );
}

/// The operator's μ and σ at the origin (printed to stderr, for the record).
fn sanity(op: &Operator, toy: &impl Target2d) -> f64 {
    let ls = op.location_scale(&[[0.0, 0.0]]);
    eprintln!("  G at origin: mu {:?} sigma {:?}", ls[0].0, ls[0].1);
    toy.energy_grad([0.0, 0.0]).0
}

fn rmld_normal(rng: &mut StdRng) -> f64 {
    use rand::Rng;
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random();
    (-2.0 * u1.ln_portable()).sqrt() * (std::f64::consts::TAU * u2).cos_portable()
}

/// Times one training step (forward, backward, Adam) of a 784-512-512-784 MLP on 256 rows (the
/// size docs/amortized.md compares with burn).
fn mlp_bench() {
    use rmld::amortize::{Adam, Mlp};
    let mut rng = StdRng::seed_from_u64(1);
    let mut net = Mlp::new(&[784, 512, 512, 784], &mut rng);
    let mut adam = Adam::new(&net, 1e-3);
    let batch = 256;
    let x: Vec<f32> = (0..batch * 784).map(|i| (i % 7) as f32 * 0.1).collect();
    let reps = 10;
    let mut t = Instant::now();
    for i in 0..reps + 2 {
        if i == 2 {
            t = Instant::now(); // two warm-up steps, as the burn measurement
        }
        let tape = net.forward(&x, batch);
        let g: Vec<f32> = tape.output().iter().map(|o| o * 1e-3).collect();
        let mut grads = net.zero_grads();
        net.backward(&tape, &g, &mut grads);
        adam.step(&mut net, &grads);
    }
    let s = t.elapsed().as_secs_f64() / reps as f64;
    let flops = 6.0 * net.macs() as f64 * batch as f64;
    println!(
        "784-512-512-784 MLP, batch {batch}: {:.1} ms per training step ({:.2} GFLOP/s, {} threads)",
        s * 1e3,
        flops / s / 1e9,
        rayon::current_num_threads()
    );
    // The same step on the GPU (`Mlp::trainer_on_gpu`), when an adapter exists.
    #[cfg(feature = "gpu")]
    if rmld::backend::gpu::adapter_available() {
        let context = rmld::backend::gpu::GpuContext::shared().expect("GPU context");
        let mut trainer = net
            .trainer_on_gpu(&adam, context.clone())
            .expect("network on the GPU");
        let mut t = Instant::now();
        for i in 0..reps + 2 {
            if i == 2 {
                t = Instant::now();
            }
            let out = trainer.forward(&x, batch).expect("forward");
            let g: Vec<f32> = out.iter().map(|o| o * 1e-3).collect();
            trainer.backward_and_step(&g).expect("backward");
        }
        let s = t.elapsed().as_secs_f64() / reps as f64;
        println!(
            "the same on {}: {:.1} ms per training step ({:.2} GFLOP/s)",
            context.describe(),
            s * 1e3,
            flops / s / 1e9
        );
    }
}

/// AG-SVGD alone: 256 particles from N(0, I), 1000 steps; prints the MMD to exact draws every 100.
fn svgd_only(toy: Toy, svgd: &rmld::amortize::AgSvgdSettings) {
    let mut rng = StdRng::seed_from_u64(9);
    let mut x: Vec<[f64; 2]> = (0..256)
        .map(|_| [rmld_normal(&mut rng), rmld_normal(&mut rng)])
        .collect();
    let exact = toy.draws(256, &mut rng);
    for step in 0..=1000 {
        if step % 100 == 0 {
            let flat: Vec<f64> = x.iter().flat_map(|p| *p).collect();
            let (mmd, _) = rmld::amortize::mmd_test(&flat, &exact, 1.0, 0, &mut rng);
            let rms = (flat.iter().map(|v| v * v).sum::<f64>() / flat.len() as f64).sqrt();
            eprintln!(
                "{} AG-SVGD step {step}: MMD² {mmd:.4}, rms {rms:.3}",
                toy.name()
            );
        }
        rmld::amortize::agsvgd_step(&mut x, |p| toy.energy(p), svgd).expect("AG-SVGD");
    }
}
