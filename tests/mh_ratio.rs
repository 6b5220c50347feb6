//! The backend's MH terms against a direct f64 computation of Algorithm 3's log-ratio.

mod common;

use rmld::backend::cpu::CpuBackend;
use rmld::backend::Backend;
use rmld::math::Portable;
use rmld::methods::MhRule;

#[test]
fn log_ratio_matches_direct_f64() {
    let (d, p, chains, steps, eta) = (16, 48, 4, 5, 0.02f32);
    let target = common::small_target(30, d, p, 0.2, 2);
    let mut backend = CpuBackend::new(target.clone(), common::dynamics(eta, steps, 8, 4), chains);
    let x = common::random_positions(chains, p, 9, 0.5);
    backend.load_positions(&x).unwrap();
    let terms = backend.propose(1).unwrap();
    backend.accept(&vec![true; chains]).unwrap();
    let z = backend.positions().unwrap();
    let delta = (eta * steps as f32) as f64;
    for c in 0..chains {
        let (xc, zc) = (&x[c * p..(c + 1) * p], &z[c * p..(c + 1) * p]);
        let gx = target.gradient_f64(xc, &target.xbar);
        let gz = target.gradient_f64(zc, &target.xbar);
        let forward: f64 = (0..p)
            .map(|j| (zc[j] as f64 - xc[j] as f64 + delta * gx[j]).powi(2))
            .sum();
        let reverse: f64 = (0..p)
            .map(|j| (xc[j] as f64 - zc[j] as f64 + delta * gz[j]).powi(2))
            .sum();
        let direct = -(target.energy_f64(zc) - target.energy_f64(xc)) - reverse / (4.0 * delta)
            + forward / (4.0 * delta);
        let got = terms[c].log_ratio(delta);
        assert!(
            (got - direct).abs() < 1e-3 * (1.0 + direct.abs()),
            "chain {c}: backend {got} vs direct {direct}"
        );
        let energy = target.energy_f64(xc);
        assert!((terms[c].energy_current as f64 - energy).abs() < 1e-4 * (1.0 + energy.abs()));
    }
}

#[test]
fn nan_terms_are_rejected_as_divergent() {
    let rule = MhRule {
        enabled: true,
        discount: 1.0,
        delta: 0.1,
        method: Default::default(),
    };
    let terms = rmld::backend::MhTerms {
        energy_difference: f32::NAN,
        ..Default::default()
    };
    let decision = rule.decide(&terms, 0, 0, 1);
    assert!(!decision.accepted && decision.divergent);
    let no_mh = MhRule {
        enabled: false,
        ..rule
    };
    assert!(
        !no_mh.decide(&terms, 0, 0, 1).accepted,
        "a divergent proposal is rejected even without MH"
    );
}

#[test]
fn discount_makes_acceptance_harder() {
    // log α = −1: accepted iff e^{−1} > discount·u. Over many chains the rate is e^{−1}/discount.
    let terms = rmld::backend::MhTerms {
        energy_difference: 1.0,
        ..Default::default()
    };
    let rate = |discount: f32| {
        let rule = MhRule {
            enabled: true,
            discount,
            delta: 1.0,
            method: Default::default(),
        };
        (0..20_000)
            .filter(|&c| rule.decide(&terms, 3, c, 1).accepted)
            .count() as f64
            / 20_000.0
    };
    let expected = (-1f64).exp_portable();
    // Binomial standard error at n = 20000 is below 0.0035.
    assert!(
        (rate(1.0) - expected).abs() < 0.015,
        "discount 1: {}",
        rate(1.0)
    );
    assert!(
        (rate(1.25) - expected / 1.25).abs() < 0.015,
        "discount 1.25: {}",
        rate(1.25)
    );
}
