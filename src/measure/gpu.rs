//! The GPU's ceilings: our residual and transpose product kernels (each tile the adapter holds) on a square product, and a raw FMA kernel, timed by timestamp queries where the device offers them.

use std::time::Instant;

use super::Ceiling;
use crate::backend::gpu::buffers::{read_back_after, storage, upload, ParamSlots};
use crate::backend::gpu::kernels::{GemmTile, Kernel, MatmulParams, WIDE_TILE_MIN_CHAINS};
use crate::backend::gpu::timer::PassTimer;
use crate::backend::gpu::GpuContext;
use crate::model::{Laplace, Precision, Prior};
use crate::{Error, Result};

/// The GPU's ceiling, and how the GPU rows of the same run are timed.
#[derive(Clone, Debug)]
pub struct GpuCeiling {
    /// The ceiling (the best product kernel), the others beside it.
    pub ceiling: Ceiling,
    /// Which clock the GPU's measurements use.
    pub timing: &'static str,
    /// The device, labelled when it is a software renderer.
    pub device: String,
    /// The adapter is a software renderer (lavapipe): device memory is host memory.
    pub software: bool,
}

/// Measures the ceilings of the device of `context`.
pub fn gpu_ceiling(context: &GpuContext) -> Result<GpuCeiling> {
    let info = context.adapter.get_info();
    let software = info.device_type == wgpu::DeviceType::Cpu;
    // A software renderer is measured only when asked for by name, and labelled everywhere.
    let device = if software {
        format!("{} [software renderer, not a GPU]", context.describe())
    } else {
        context.describe()
    };
    // A software rasteriser (lavapipe) runs ~1000× slower: smaller ceiling problems.
    let (n, workgroups) = if software { (512, 64) } else { (4096, 16384) };
    // Every tile the adapter holds (the wide one needs 256 invocations and 16 KiB).
    let mut products = Vec::new();
    for tile in [GemmTile::Narrow, GemmTile::Wide] {
        if tile.fits(&context.limits) {
            let (residual, transpose) = matrix_ceiling(context, n, tile)?;
            products.push((tile, residual, transpose));
        }
    }
    let fma = fma_ceiling(context, workgroups)?;
    let timestamps = context.has_timestamps();
    let timing = if timestamps {
        "timestamp queries: device time of the propose and accept passes and of the ceiling \
                 kernels; throughput and host share from synchronised wall-clock time"
    } else {
        "wall-clock, synchronised by the MH read-back (the adapter offers no timestamp queries)"
    };
    let mut extra = Vec::new();
    for &(tile, residual, transpose) in &products {
        let tile = tile.name();
        extra.push((format!("residual_product ({tile} tile)"), residual));
        extra.push((format!("transpose_product ({tile} tile)"), transpose));
    }
    extra.push(("fma_peak (raw fp32 FMA)".into(), fma));
    // What the tile choice reads: the adapter's type and limits (and, for the record, its
    // subgroup sizes, which neither tile depends on: both are conflict-free per 128-byte phase).
    let (subgroup_min, subgroup_max) = context.subgroup_sizes();
    let limits = &context.limits;
    let auto = match GemmTile::choose(info.device_type, limits, usize::MAX) {
        GemmTile::Wide => format!("wide from {WIDE_TILE_MIN_CHAINS} chains, else narrow"),
        GemmTile::Narrow => "narrow".into(),
    };
    let ceiling = Ceiling {
                backend: "gpu".into(),
                what: format!(
                    "best of our residual/transpose product kernels (each tile) on a square \
                     {n}×{n}×{n} product, {}; adapter: subgroups of {subgroup_min}–{subgroup_max}, \
                     {} invocations and {} bytes of workgroup memory per workgroup; auto tile: {auto}",
                    device.clone(),
                    limits.max_compute_invocations_per_workgroup,
                    limits.max_compute_workgroup_storage_size,
                ),
                gflops: products
                    .iter()
                    .map(|&(_, r, t)| r.max(t))
                    .fold(0.0, f64::max),
                extra,
            };
    Ok(GpuCeiling {
        ceiling,
        timing,
        device,
        software,
    })
}

fn wait(context: &GpuContext) -> Result<()> {
    context
        .device
        .poll(wgpu::PollType::wait_indefinitely())
        .map(|_| ())
        .map_err(|e| Error::Gpu(format!("waiting for the device: {e}")))
}

/// Seconds per repetition of `record` (one pass of `reps` dispatches), after a warm-up, with
/// `reps` grown until the submission takes at least `target` seconds: by timestamp queries
/// around the pass where the device offers them, else synchronised wall-clock time.
fn time_dispatches(
    context: &GpuContext,
    target: f64,
    record: &dyn Fn(&mut wgpu::ComputePass),
) -> Result<f64> {
    let timer = PassTimer::new(context, 1);
    let run = |reps: u32| -> Result<f64> {
        let started = Instant::now();
        let encoder = context.checked("timing a kernel", || {
            let mut encoder = context
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("timed kernel"),
                    timestamp_writes: timer.as_ref().map(|t| t.writes(0)),
                });
                for _ in 0..reps {
                    record(&mut pass);
                }
            }
            if let Some(t) = &timer {
                t.resolve(&mut encoder);
            }
            encoder
        })?;
        let pieces: Vec<_> = timer.iter().map(|t| t.piece()).collect();
        let bytes = context.checked("reading the timestamps", || {
            read_back_after(context, encoder, &pieces)
        })??;
        let seconds = match &timer {
            Some(t) => t.seconds(&bytes)[0],
            None => {
                wait(context)?; // nothing was read back, so nothing waited yet
                started.elapsed().as_secs_f64()
            }
        };
        Ok(seconds / reps as f64)
    };
    run(1)?; // the warm-up: pipeline creation and first-touch costs
    let once = run(1)?.max(1e-6);
    let reps = ((target / once).ceil() as u32).clamp(1, 64);
    run(reps)
}

/// GFLOP/s of the residual and transpose product kernels on an n × n × n product.
fn matrix_ceiling(context: &GpuContext, n: usize, tile: GemmTile) -> Result<(f64, f64)> {
    let values: Vec<f32> = (0..n * n)
        .map(|i| ((i % 97) as f32 - 48.0) * 1e-3)
        .collect();
    let bytes = bytemuck::cast_slice(&values);
    let (a, z, y) = (
        upload(context, "A", bytes),
        upload(context, "Z", bytes),
        upload(context, "Y", bytes),
    );
    let out = storage(context, "out", (4 * n * n) as u64);
    let (params, slots) = ParamSlots::one::<MatmulParams>(context);
    params
        .writer()
        .set(
            slots,
            0,
            MatmulParams {
                chains: n as u32,
                d: n as u32,
                p: n as u32,
                y_stride: n as u32,
                ..Default::default()
            },
        )
        .finish(context);
    let kernels =
        context.kernels_for(&Prior::Laplace(Laplace { lam: 0.0 }), Precision::F32, tile)?;
    let kernels = &kernels;
    let groups = kernels.product_groups(n, n);
    let flop = 2.0 * (n as f64).powi(3);
    let mut rates = Vec::new();
    // The kernels the backend runs at this shape: the vec4-load ones where n is a multiple of 4.
    for (kernel, buffers) in [
        (
            Kernel::ResidualProduct.for_shape(n, n),
            vec![&a, &z, &y, &out],
        ),
        (Kernel::TransposeProduct.for_shape(n, n), vec![&a, &z, &out]),
    ] {
        let launch = kernels.bind(&context.device, kernel, &params, slots, &buffers);
        let seconds = time_dispatches(context, 0.3, &|pass| {
            kernels.dispatch(pass, &launch, 0, groups)
        })?;
        rates.push(flop / seconds / 1e9);
    }
    Ok((rates[0], rates[1]))
}

const FMA_WGSL: &str = r#"
@group(0) @binding(0) var<storage, read_write> sink: array<vec4<f32>>;

// 1024 iterations × 4 independent vec4 FMAs = 32768 flops per invocation.
@compute @workgroup_size(256)
fn fma_peak(@builtin(global_invocation_id) id: vec3<u32>) {
    let s = f32(id.x) * 1e-9;
    var a = vec4<f32>(s, s + 1.0, s + 2.0, s + 3.0);
    var b = a + 0.5;
    var c = a + 0.25;
    var e = a + 0.125;
    let m = vec4<f32>(0.9999999);
    let k = vec4<f32>(1e-7);
    for (var j = 0u; j < 1024u; j++) {
        a = fma(a, m, k);
        b = fma(b, m, k);
        c = fma(c, m, k);
        e = fma(e, m, k);
    }
    sink[id.x] = a + b + c + e;
}
"#;

/// GFLOP/s of a kernel that does nothing but independent fused multiply-adds.
fn fma_ceiling(context: &GpuContext, workgroups: u32) -> Result<f64> {
    let device = &context.device;
    let pipeline = context.checked("compiling the FMA kernel", || {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("fma_peak"),
            source: wgpu::ShaderSource::Wgsl(FMA_WGSL.into()),
        });
        device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("fma_peak"),
            layout: None,
            module: &module,
            entry_point: Some("fma_peak"),
            compilation_options: Default::default(),
            cache: None,
        })
    })?;
    let sink = storage(context, "fma sink", 16 * 256 * workgroups as u64);
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("fma_peak"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: sink.as_entire_binding(),
        }],
    });
    let seconds = time_dispatches(context, 0.3, &|pass| {
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(workgroups, 1, 1);
    })?;
    Ok(256.0 * workgroups as f64 * 32768.0 / seconds / 1e9)
}
