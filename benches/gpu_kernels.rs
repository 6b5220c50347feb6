//! Criterion benches of the GPU backend's kernels (wgpu), device synchronised before the clock stops.

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};

use rmld::backend::gpu::testing::{gather_params, upload_observations};
use rmld::backend::gpu::testing::{storage, upload, SlotLayout};
use rmld::backend::gpu::testing::{Kernel, Launch, MatmulParams};
use rmld::backend::gpu::{GpuBackend, GpuContext, GpuOptions};
use rmld::backend::{Backend, DynamicsSettings, Encode};
use rmld::io::Pixels;
use rmld::methods::MhRule;
use rmld::model::{Dictionary, Observations, Target};
use rmld::rng::{Purpose, Stream};

// Small enough for lavapipe (Mesa's software Vulkan) to finish in reasonable time.
const D: usize = 784;
const P: usize = 3136;
const CHAINS: usize = 4;

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

/// Submits one dispatch of `launch` and waits for the device.
fn dispatch(context: &GpuContext, launch: &Launch, workgroups: [u32; 3]) {
    let mut encoder = context
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        let kernels = context.kernels().expect("compiling the kernels");
        kernels.dispatch(&mut pass, launch, 0, workgroups);
    }
    context.queue.submit([encoder.finish()]);
    context
        .device
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("waiting for the device");
}

fn kernels(c: &mut Criterion) {
    let context = match GpuContext::shared() {
        Ok(context) => context,
        Err(e) if std::env::var("RMLD_REQUIRE_GPU").is_ok_and(|v| v == "1") => {
            panic!("gpu_kernels: no GPU adapter ({e}), but RMLD_REQUIRE_GPU=1 requires one")
        }
        Err(e) => {
            eprintln!("gpu_kernels: no GPU adapter ({e}); benching nothing");
            return;
        }
    };
    let target = target();
    let zeros = vec![0.01f32; CHAINS * P.max(D)];
    let a = upload(&context, "A", bytemuck::cast_slice(&target.dictionary.a));
    let z = upload(&context, "Z", bytemuck::cast_slice(&zeros[..CHAINS * P]));
    let y = upload(&context, "Y", bytemuck::cast_slice(&zeros[..CHAINS * D]));
    let residual = storage(&context, "R", (4 * CHAINS * D) as u64);
    let gradient = storage(&context, "G", (4 * CHAINS * P) as u64);
    let data = upload_observations(&context, &target.observations).expect("uploading the data");
    let ybar = storage(&context, "Ybar", (4 * CHAINS * D) as u64);
    let params = MatmulParams {
        chains: CHAINS as u32,
        d: D as u32,
        p: P as u32,
        y_stride: D as u32,
        ..Default::default()
    };
    let mut layout = SlotLayout::new(&context);
    let (product_slots, gather_slots) = (layout.once(), layout.once());
    let slots = layout.build(&context);
    let gather = gather_params(&target.observations, 0, 1, 1, 64);
    slots
        .writer()
        .set(product_slots, 0, params)
        .set(gather_slots, 0, gather)
        .finish(&context);
    let k = &*context.kernels().expect("compiling the kernels");
    let residual_group = k.bind(
        &context.device,
        Kernel::ResidualProduct,
        &slots,
        product_slots,
        &[&a, &z, &y, &residual],
    );
    let transpose_group = k.bind(
        &context.device,
        Kernel::TransposeProduct,
        &slots,
        product_slots,
        &[&a, &residual, &gradient],
    );
    let rows = vec![[0u32, target.observations.n as u32]; CHAINS];
    let rows = rmld::backend::gpu::testing::upload(&context, "rows", bytemuck::cast_slice(&rows));
    let gather_group = k.bind(
        &context.device,
        Kernel::Gather,
        &slots,
        gather_slots,
        &[&data, &ybar, &rows],
    );

    let mut group = c.benchmark_group(format!("gpu d={D} p={P} C={CHAINS}"));
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    let chains = (CHAINS as u32).div_ceil(64);
    group.bench_function("gpu/residual_product", |b| {
        b.iter(|| {
            dispatch(
                &context,
                &residual_group,
                [(D as u32).div_ceil(64), chains, 1],
            )
        })
    });
    group.bench_function("gpu/transpose_product", |b| {
        b.iter(|| {
            dispatch(
                &context,
                &transpose_group,
                [(P as u32).div_ceil(64), chains, 1],
            )
        })
    });
    group.bench_function("gpu/gather", |b| {
        b.iter(|| {
            let mut encoder = context
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                k.dispatch(
                    &mut pass,
                    &gather_group,
                    0,
                    [(D as u32).div_ceil(64), CHAINS as u32, 1],
                );
            }
            context.queue.submit([encoder.finish()]);
            context
                .device
                .poll(wgpu::PollType::wait_indefinitely())
                .expect("waiting for the device");
        })
    });
    // Whole-backend runs: propose reads the MH terms back, so it is synchronised by construction.
    for (name, steps) in [
        ("gpu/dynamics_step_T1", 1),
        ("gpu/outer_iteration_T5_with_mh", 5),
    ] {
        let settings = DynamicsSettings {
            eta: 0.001,
            steps,
            batch: 64,
            sghmc_noise: false,
            seed: 0,
            ..DynamicsSettings::default()
        };
        let mut backend = GpuBackend::new(target.clone(), settings, CHAINS, GpuOptions::default())
            .expect("building the GPU backend");
        backend
            .load_positions(&vec![0f32; CHAINS * P])
            .expect("loading positions");
        let rule = MhRule {
            enabled: true,
            discount: 1.0,
            delta: 0.001 * steps as f32,
            method: rmld::methods::Method::Rmld,
        };
        let mut outer = 0;
        group.bench_function(name, |b| {
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
    }
    let mut backend = GpuBackend::new(
        target.clone(),
        DynamicsSettings {
            eta: 0.001,
            steps: 1,
            batch: 64,
            sghmc_noise: false,
            seed: 0,
            ..DynamicsSettings::default()
        },
        CHAINS,
        GpuOptions::default(),
    )
    .expect("building the GPU backend");
    let images: Vec<f32> = (0..4).flat_map(|i| target.observations.row(i)).collect();
    group.bench_function("gpu/lasso_encode_4x20", |b| {
        b.iter(|| backend.encode(&images, 0.05, 20).expect("encode"))
    });
    group.finish();
}

criterion_group!(benches, kernels);
criterion_main!(benches);
