//! Criterion benches of the CPU backend's kernels at d = 784, p = 3136 and a few chains.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};

use rmld::backend::cpu::{fista, gather, gradient_step, matmul, CpuBackend};
use rmld::backend::{Backend, DynamicsSettings};
use rmld::io::Pixels;
use rmld::methods::MhRule;
use rmld::model::{Dictionary, Laplace, Observations, Prior, Target};
use rmld::rng::{Purpose, Stream};

const D: usize = 784;
const P: usize = 3136;
const CHAINS: usize = 16;

fn target() -> Arc<Target> {
    let n = 2000;
    let mut words = vec![0u32; n * D];
    Stream::new(0, 0, 0, 0, Purpose::InitPick).fill_u32(&mut words);
    let observations = Observations {
        n,
        d: D,
        pixels: Pixels::U8(words.iter().map(|w| (w >> 24) as u8).collect()),
        scale: 1.0 / 255.0,
    };
    Arc::new(Target::new(
        Arc::new(Dictionary::gaussian(D, P, 0)),
        Arc::new(observations),
        0.05,
    ))
}

fn dynamics(steps: u32) -> DynamicsSettings {
    DynamicsSettings {
        eta: 0.001,
        steps,
        batch: 64,
        sghmc_noise: false,
        seed: 0,
        ..DynamicsSettings::default()
    }
}

fn kernels(c: &mut Criterion) {
    let target = target();
    let a = &target.dictionary.a;
    let z = vec![0.01f32; CHAINS * P];
    let y = target.xbar.repeat(CHAINS);
    let rows = vec![[0, target.observations.n as u32]; CHAINS];
    let mut residual = vec![0f32; CHAINS * D];
    let mut gradient = vec![0f32; CHAINS * P];
    let mut momentum = vec![0f32; CHAINS * P];
    let mut position = z.clone();
    let mut ybar = vec![0f32; CHAINS * D];
    let mut group = c.benchmark_group(format!("cpu d={D} p={P} C={CHAINS}"));
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    group.bench_function("cpu/residual_product", |b| {
        b.iter(|| matmul::residual_product(a, D, P, black_box(&z), &y, &mut residual))
    });
    group.bench_function("cpu/transpose_product", |b| {
        b.iter(|| matmul::transpose_product(a, D, P, black_box(&residual), &mut gradient))
    });
    group.bench_function("cpu/gather", |b| {
        b.iter(|| gather::gather(&target.observations, &rows, 0, 1, 1, 64, &mut ybar))
    });
    group.bench_function("cpu/dynamics_step", |b| {
        b.iter(|| {
            gather::gather(&target.observations, &rows, 0, 1, 1, 64, &mut ybar);
            matmul::residual_product(a, D, P, &position, &ybar, &mut residual);
            matmul::transpose_product(a, D, P, &residual, &mut gradient);
            gradient_step::gradient_step(
                &gradient,
                &mut position,
                &mut momentum,
                P,
                &Prior::Laplace(Laplace { lam: 0.05 }),
                1.0,
                0.001,
                None,
            );
        })
    });
    let mut backend = CpuBackend::new(target.clone(), dynamics(5), CHAINS);
    backend
        .load_positions(&vec![0f32; CHAINS * P])
        .expect("loading positions");
    let rule = MhRule {
        enabled: true,
        discount: 1.0,
        delta: 0.005,
        method: rmld::methods::Method::Rmld,
    };
    let mut outer = 0;
    group.bench_function("cpu/outer_iteration_T5_with_mh", |b| {
        b.iter(|| {
            outer += 1;
            let terms = backend.propose(outer).expect("propose");
            let mask: Vec<bool> = terms
                .iter()
                .enumerate()
                .map(|(c, t)| rule.decide(t, 0, c as u32, outer).accepted)
                .collect();
            backend.accept(&mask).expect("accept");
        })
    });
    let images: Vec<f32> = (0..4).flat_map(|i| target.observations.row(i)).collect();
    let lipschitz = target.dictionary.spectral_norm_squared() as f32;
    group.bench_function("cpu/lasso_encode_4x20", |b| {
        b.iter(|| fista::encode(a, D, P, lipschitz, black_box(&images), 0.05, 20, None))
    });
    group.finish();
}

criterion_group!(benches, kernels);
criterion_main!(benches);
