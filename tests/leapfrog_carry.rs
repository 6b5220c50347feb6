//! HMC's carried trajectory on the CPU (the residual moved by ε·A r through a leapfrog
//! trajectory instead of recomputed with A): the same proposals and MH terms as recomputing it
//! at every step, within rounding, on the paper's and the tangent target; the state a chain
//! keeps is the exact one, bit for bit that of a backend loaded at the same positions.

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rmld::backend::cpu::CpuBackend;
use rmld::backend::{Backend, DynamicsSettings, MhTerms, Tuning};
use rmld::io::Pixels;
use rmld::methods::Method;
use rmld::model::{ChainClasses, Dictionary, Observations, Target, TargetKind};

const D: usize = 24;
const P: usize = 96;
const CHAINS: usize = 5;

fn target(kind: TargetKind, lam: f32, seed: u64) -> Arc<Target> {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    let n = 40;
    let observations = Arc::new(Observations {
        n,
        d: D,
        pixels: Pixels::U8((0..n * D).map(|_| r.random()).collect()),
        scale: 1.0 / 255.0,
    });
    let dictionary = Arc::new(Dictionary::gaussian(D, P, seed));
    let target = Target::new(dictionary, observations.clone(), lam).with_sigma2(0.5);
    let ranges = [[0u32, 20], [20, 20]];
    let means: Vec<f32> = ranges
        .iter()
        .flat_map(|&[first, count]| observations.mean_of_rows(first as usize, count as usize))
        .collect();
    let classes = ChainClasses::new(&ranges, &means, D, &[0, 1, 0, 1, 0]).unwrap();
    let target = target.with_classes(classes);
    Arc::new(target.with_kind(kind, CHAINS, seed).unwrap())
}

fn hmc(leapfrog_steps: u32, seed: u64) -> DynamicsSettings {
    DynamicsSettings {
        method: Method::Hmc,
        eta: 0.03,
        leapfrog_steps,
        seed,
        ..Default::default()
    }
}

/// Every entry of `got` within `tolerance`·(1 + |want|) of `want`; each mismatch with its index
/// and both values.
fn mismatches(what: &str, got: &[f32], want: &[f32], tolerance: f32) -> Vec<String> {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    got.iter()
        .zip(want)
        .enumerate()
        // A NaN in either fails too.
        .filter(|(_, (g, w))| {
            (*g - *w).abs().is_nan() || (*g - *w).abs() > tolerance * (1.0 + w.abs())
        })
        .map(|(i, (g, w))| format!("{what}[{i}]: carried {g}, recomputed {w}"))
        .collect()
}

fn terms_mismatches(outer: u32, got: &[MhTerms], want: &[MhTerms]) -> Vec<String> {
    let fields = |t: &[MhTerms]| -> Vec<f32> {
        t.iter()
            .flat_map(|t| [t.energy_current, t.energy_difference, t.kinetic_difference])
            .collect()
    };
    mismatches(
        &format!("outer {outer} MH terms (current, difference, kinetic)"),
        &fields(got),
        &fields(want),
        1e-3,
    )
}

/// Four trajectories of 12 steps from the same start: the carried backend's proposals and MH
/// terms against the recomputing one's, the chains kept in step by accepting every proposal
/// (with λ > 0 coordinates change sign, so the prior's image moves by columns of A).
fn carried_matches_recomputed(kind: TargetKind, seed: u64) {
    let t = target(kind, 0.5, seed);
    let s = hmc(12, seed);
    let mut carried = CpuBackend::new(t.clone(), s.clone(), CHAINS);
    let mut recomputed = CpuBackend::new(t.clone(), s.clone(), CHAINS).with_recomputed_leapfrog();
    let mut r = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5EED);
    let start: Vec<f32> = (0..CHAINS * P)
        .map(|_| 0.3 * (r.random::<f32>() - 0.5))
        .collect();
    carried.load_positions(&start).unwrap();
    recomputed.load_positions(&start).unwrap();
    let mut bad = Vec::new();
    let mut differs = false;
    for outer in 0..4 {
        let got = carried.propose(outer).unwrap();
        let want = recomputed.propose(outer).unwrap();
        assert!(
            carried.carries_trajectory(),
            "{kind:?}: the trajectory was not carried"
        );
        assert!(!recomputed.carries_trajectory());
        let (z, momentum) = carried.proposals().unwrap();
        let (z_want, momentum_want) = recomputed.proposals().unwrap();
        differs |= z != z_want;
        bad.extend(mismatches(
            &format!("outer {outer} position"),
            &z,
            &z_want,
            1e-4,
        ));
        bad.extend(mismatches(
            &format!("outer {outer} momentum"),
            &momentum,
            &momentum_want,
            1e-4,
        ));
        bad.extend(terms_mismatches(outer, &got, &want));
        carried.accept(&[true; CHAINS]).unwrap();
        recomputed.accept(&[true; CHAINS]).unwrap();
        // The kept state is exact: a backend loaded at the carried positions has its images
        // bit for bit.
        let mut fresh = CpuBackend::new(t.clone(), s.clone(), CHAINS);
        let positions = carried.positions().unwrap();
        fresh.load_positions(&positions).unwrap();
        let (images, exact) = (carried.images().unwrap(), fresh.images().unwrap());
        for (i, (a, b)) in images.iter().zip(&exact).enumerate() {
            if a.to_bits() != b.to_bits() {
                bad.push(format!(
                    "outer {outer} image[{i}]: kept {a}, recomputed at the position {b}"
                ));
            }
        }
    }
    assert!(
        differs,
        "{kind:?}: carried and recomputed proposals are bit-identical, so nothing was carried"
    );
    assert!(bad.is_empty(), "{kind:?}:\n{}", bad.join("\n"));
}

#[test]
fn carried_trajectory_matches_recomputed_on_the_paper_target() {
    carried_matches_recomputed(TargetKind::Paper, 0xCA11);
}

#[test]
fn carried_trajectory_matches_recomputed_on_the_tangent_target() {
    carried_matches_recomputed(TargetKind::Tangent, 0xCA12);
}

/// Short trajectories (the carry's three extra products outweigh what it saves), SSGL and a
/// learned precision keep recomputing.
#[test]
fn short_trajectories_are_not_carried() {
    let t = target(TargetKind::Paper, 0.5, 7);
    let mut b = CpuBackend::new(t, hmc(3, 7), CHAINS);
    b.load_positions(&vec![0.1; CHAINS * P]).unwrap();
    b.propose(0).unwrap();
    assert!(!b.carries_trajectory());
}
