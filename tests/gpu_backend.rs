//! The GPU backend against the CPU backend from one seed: outer iterations, accept, FISTA, and
//! the chunked path against the unchunked one.

mod gpu_common;

use std::sync::Arc;

use gpu_common::{assert_none, context, rng, uniform};
use rand::Rng;
use rmld::backend::cpu::CpuBackend;
use rmld::backend::gpu::{GpuBackend, GpuOptions};
use rmld::backend::{Backend, DynamicsSettings, MhTerms};
use rmld::io::Pixels;
use rmld::rng::{Purpose, Stream};
use rmld::target::{Dictionary, Observations, Target};

const D: usize = 37;
const P: usize = 129;
const CHAINS: usize = 5;

fn target(lam: f32, seed: u64) -> Arc<Target> {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    let n = 60;
    let observations = Observations {
        n,
        d: D,
        pixels: Pixels::U8((0..n * D).map(|_| r.random()).collect()),
        scale: 1.0 / 255.0,
    };
    let dictionary = Dictionary::gaussian(D, P, seed);
    Arc::new(Target::new(
        Arc::new(dictionary),
        Arc::new(observations),
        lam,
    ))
}

use rand::SeedableRng;

fn settings(steps: u32, sghmc_noise: bool, seed: u64) -> DynamicsSettings {
    DynamicsSettings {
        eta: 0.02,
        steps,
        batch: 8,
        sghmc_noise,
        seed,
    }
}

/// Relative difference with a floor, so values near zero compare absolutely at `floor`.
fn close(a: f32, b: f32, tol: f64, floor: f64) -> bool {
    let (a, b) = (a as f64, b as f64);
    a.is_finite() && b.is_finite() && (a - b).abs() <= tol * (a.abs().max(b.abs()).max(floor))
}

fn compare_terms(gpu: &[MhTerms], cpu: &[MhTerms], tol: f64) -> Vec<String> {
    let mut bad = Vec::new();
    for (c, (g, k)) in gpu.iter().zip(cpu).enumerate() {
        // U(Z) − U(X) is a difference of energies: its error scales with the energies and the
        // step, so its floor is the current energy's magnitude.
        let pairs = [
            ("energy_current", g.energy_current, k.energy_current, 1e-6),
            (
                "energy_difference",
                g.energy_difference,
                k.energy_difference,
                k.energy_current.abs() as f64 * 1e-2,
            ),
            ("forward_norm", g.forward_norm, k.forward_norm, 1e-6),
            ("reverse_norm", g.reverse_norm, k.reverse_norm, 1e-6),
        ];
        for (name, a, b, floor) in pairs {
            if !close(a, b, tol, floor) {
                bad.push(format!("chain {c} {name}: gpu {a:e}, cpu {b:e}"));
            }
        }
    }
    bad
}

fn compare_rows(what: &str, gpu: &[f32], cpu: &[f32], width: usize, tol: f64) -> Vec<String> {
    let mut bad = Vec::new();
    for (c, (g, k)) in gpu.chunks(width).zip(cpu.chunks(width)).enumerate() {
        let norm = k
            .iter()
            .map(|v| (*v as f64).powi(2))
            .sum::<f64>()
            .sqrt()
            .max(1e-6);
        for (j, (&a, &b)) in g.iter().zip(k).enumerate() {
            if !(a.is_finite() && ((a - b) as f64).abs() <= tol * norm) {
                bad.push(format!(
                    "{what} chain {c} [{j}]: gpu {a:e}, cpu {b:e} (row norm {norm:e})"
                ));
            }
        }
    }
    bad
}

/// The MH rule as the orchestrator applies it (discount 1).
fn decisions(terms: &[MhTerms], settings: &DynamicsSettings, outer: u32) -> Vec<bool> {
    let delta = settings.eta as f64 * settings.steps as f64;
    terms
        .iter()
        .enumerate()
        .map(|(c, t)| {
            let u = Stream::new(settings.seed, c as u32, outer, 0, Purpose::Accept).uniform();
            t.log_ratio(delta).min(0.0).exp() > u as f64
        })
        .collect()
}

fn outer_iteration_matches(lam: f32, steps: u32, noise: bool, label: &str) {
    let Some(ctx) = context(label) else {
        return;
    };
    let mut r = rng(label);
    let seed: u64 = r.random();
    let target = target(lam, seed);
    let s = settings(steps, noise, seed);
    let mut gpu = GpuBackend::with_context(
        ctx,
        target.clone(),
        s.clone(),
        CHAINS,
        GpuOptions::default(),
    )
    .unwrap();
    let mut cpu = CpuBackend::new(target, s.clone(), CHAINS);
    let start: Vec<f32> = uniform(&mut r, CHAINS * P)
        .iter()
        .map(|v| 0.3 * v)
        .collect();
    gpu.load_positions(&start).unwrap();
    cpu.load_positions(&start).unwrap();
    let mut bad = compare_rows(
        "images before",
        &gpu.images().unwrap(),
        &cpu.images().unwrap(),
        D,
        1e-5,
    );
    for outer in 1..=2 {
        let (tg, tc) = (gpu.propose(outer).unwrap(), cpu.propose(outer).unwrap());
        eprintln!("outer {outer}: gpu {:?}\n         cpu {:?}", tg[0], tc[0]);
        bad.extend(compare_terms(&tg, &tc, 1e-4));
        let (dg, dc) = (decisions(&tg, &s, outer), decisions(&tc, &s, outer));
        if bad.is_empty() && dg != dc {
            bad.push(format!(
                "outer {outer}: decisions differ: gpu {dg:?}, cpu {dc:?}"
            ));
        }
        // Apply a mask with both outcomes so select is exercised either way.
        let mask: Vec<bool> = (0..CHAINS)
            .map(|c| if c < 2 { c == 0 } else { dc[c] })
            .collect();
        gpu.accept(&mask).unwrap();
        cpu.accept(&mask).unwrap();
        bad.extend(compare_rows(
            "positions",
            &gpu.positions().unwrap(),
            &cpu.positions().unwrap(),
            P,
            1e-4,
        ));
        bad.extend(compare_rows(
            "images",
            &gpu.images().unwrap(),
            &cpu.images().unwrap(),
            D,
            1e-4,
        ));
    }
    assert_none(bad);
}

#[test]
fn outer_iteration_matches_cpu_lam_zero() {
    outer_iteration_matches(0.0, 5, false, "outer_iteration_matches_cpu_lam_zero");
}

/// With lam > 0 a coordinate near zero may take the other sign on one backend after a few steps
/// and the trajectories part, so only T = 1 is compared.
#[test]
fn outer_iteration_matches_cpu_lam_positive_one_step() {
    outer_iteration_matches(
        0.05,
        1,
        false,
        "outer_iteration_matches_cpu_lam_positive_one_step",
    );
}

#[test]
fn outer_iteration_matches_cpu_with_sghmc_noise() {
    outer_iteration_matches(0.0, 3, true, "outer_iteration_matches_cpu_with_sghmc_noise");
}
