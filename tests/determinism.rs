//! A run is a pure function of its seed: same seed, same bits; another seed, other samples.

mod common;

use rmld::backend::cpu::CpuBackend;
use rmld::orchestrator::{self, Init, MemorySink, SamplerSettings};

fn run(seed: u64, init: Init) -> (orchestrator::SampleRun, MemorySink) {
    let target = common::small_target(40, 16, 64, 0.05, 1);
    let settings = SamplerSettings {
        chains: 6,
        samples: 3,
        dynamics: common::dynamics(0.01, 4, 5, seed),
        mh: true,
        discount: 1.0,
        init,
        lasso_iterations: 50,
        adapt: None,
        auto_burn_in: None,
    };
    let mut backend = CpuBackend::new(target.clone(), settings.dynamics.clone(), settings.chains);
    let mut sink = MemorySink::default();
    let run = orchestrator::run(&mut backend, &target, &settings, &mut sink, &mut |_| {}).unwrap();
    (run, sink)
}

#[test]
fn same_seed_gives_identical_bits() {
    for init in [Init::Noise, Init::Lasso] {
        let ((a, a_samples), (b, b_samples)) = (run(7, init), run(7, init));
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a_samples.codes), bits(&b_samples.codes));
        assert_eq!(bits(&a_samples.images), bits(&b_samples.images));
        assert_eq!(a.accepted, b.accepted);
        assert_eq!(a.start_indices, b.start_indices);
    }
}

#[test]
fn different_seeds_give_different_samples() {
    let ((_, a), (_, b)) = (run(7, Init::Noise), run(8, Init::Noise));
    let same = a.codes.iter().zip(&b.codes).filter(|(x, y)| x == y).count();
    assert!(
        same < a.codes.len() / 100,
        "{same} of {} values equal across seeds",
        a.codes.len()
    );
}
