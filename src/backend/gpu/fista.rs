//! Batched monotone FISTA on the device, the twin of `cpu/fista.rs`.

// Per iteration: transpose product, prox, A u, per-row objective and update, one `FistaParams`
// slot each (the products' one `MatmulParams` slot serves every iteration). A group of rows'
// iterations go in submissions that double in length until one takes `STOP_CHECK_SECONDS`, a
// stop asked for between two of them ending the encoding: a few round trips on a fast device,
// an iteration's wait at most on a slow one (lavapipe). The same work in the same order: the
// same codes as one submission.

use std::ops::Range;
use std::time::{Duration, Instant};

use super::buffers::{self, storage, upload, SlotLayout};
use super::kernels::{fista, matmul, FistaParams, MatmulParams};
use super::{group_size, GpuBackend, GpuContext};
use crate::{Error, Result};

/// A submission of FISTA iterations is made longer (twice) until it takes this long; a stop is
/// seen between submissions.
const STOP_CHECK_SECONDS: f64 = 0.25;

/// LASSO codes (rows of p) of `images` (rows of d) by `iterations` MFISTA iterations with step
/// 1/`lipschitz`, rows split into groups that fit the binding limit; None once `stop` says so
/// (asked between submissions).
pub fn encode(
    backend: &GpuBackend,
    images: &[f32],
    lam: f32,
    iterations: u32,
    lipschitz: f32,
    stop: &dyn Fn() -> bool,
) -> Result<Option<Vec<f32>>> {
    let (d, p) = (backend.target.d(), backend.target.p());
    if !images.len().is_multiple_of(d) {
        return Err(Error::Internal(format!(
            "encode: {} values are not rows of {d}",
            images.len()
        )));
    }
    let rows = images.len() / d;
    if stop() {
        return Ok(None);
    }
    if rows == 0 || iterations == 0 {
        return Ok(Some(vec![0.0; rows * p]));
    }
    // The CPU's scalars, rounded alike: step 1/L, tau = lam/L, and the t sequence in f32.
    let step = 1.0 / lipschitz;
    let mut t = 1f32;
    let slots: Vec<FistaParams> = (0..iterations)
        .map(|_| {
            let t_next = (1.0 + (1.0 + 4.0 * t * t).sqrt()) / 2.0;
            let params = FistaParams {
                d: d as u32,
                p: p as u32,
                lam,
                step_size: step,
                tau: lam * step,
                c_u: t / t_next,
                c_prev: (t - 1.0) / t_next,
                ..Default::default()
            };
            t = t_next;
            params
        })
        .collect();
    let per_group = group_size(backend.limit, d.max(p), rows)?;
    let mut codes = Vec::with_capacity(rows * p);
    for start in (0..rows).step_by(per_group) {
        let count = per_group.min(rows - start);
        let chunk = &images[start * d..(start + count) * d];
        let Some(group) = encode_group(backend, chunk, count, &slots, stop)? else {
            return Ok(None);
        };
        codes.extend(group);
    }
    Ok(Some(codes))
}

fn encode_group(
    backend: &GpuBackend,
    images: &[f32],
    rows: usize,
    slots: &[FistaParams],
    stop: &dyn Fn() -> bool,
) -> Result<Option<Vec<f32>>> {
    let context = &backend.context;
    let (d, p) = (backend.target.d(), backend.target.p());
    let objective: Vec<f32> = images
        .chunks(d)
        .map(|x| (0.5 * x.iter().map(|&v| (v as f64).powi(2)).sum::<f64>()) as f32)
        .collect();
    context.checked("running FISTA", || -> Result<Option<Vec<f32>>> {
        let buffer = |label: &str, width: usize| storage(context, label, (4 * rows * width) as u64);
        let x = upload(context, "images", bytemuck::cast_slice(images));
        let (z, y, u, grad) = (
            buffer("z", p),
            buffer("y", p),
            buffer("u", p),
            buffer("grad", p),
        );
        let (az, ay, au, residual) = (
            buffer("Az", d),
            buffer("Ay", d),
            buffer("Au", d),
            buffer("res", d),
        );
        let zeros = buffer("zeros", d);
        let objective = upload(context, "objective", bytemuck::cast_slice(&objective));
        let improved = buffer("improved", 1);
        let mut layout = SlotLayout::new(context);
        let (iteration, product) = (layout.per_step(slots.len()), layout.once());
        let params = layout.build(context);
        let rows32 = rows as u32;
        params
            .writer()
            .set_all(iteration, |i| slots[i])
            .set(
                product,
                0,
                MatmulParams {
                    chains: rows32,
                    d: d as u32,
                    p: p as u32,
                    ..Default::default()
                },
            )
            .finish(context);
        // The pipelines built for this target (its prior and A's precision): `dict` is its A.
        let k = &backend.shared.kernels;
        let (dev, s, dict) = (&context.device, &params, &backend.shared.dict);
        let shape = (d, p);
        // Element-wise stages: 64 elements of a row per workgroup, one row per y.
        let rowwise = |width: usize| [(width as u32).div_ceil(64), rows32, 1];
        let with = |launch, groups: [u32; 3]| (launch, groups);
        let stages = [
            with(
                fista::FistaResidualBuffers {
                    left: &ay,
                    right: &x,
                    result: &residual,
                }
                .bind(k, dev, s, iteration),
                rowwise(d),
            ),
            with(
                matmul::TransposeProductBuffers {
                    dict,
                    lhs: &residual,
                    out: &grad,
                }
                .bind(k, dev, s, product, shape),
                k.product_groups(rows, p),
            ),
            with(
                fista::FistaProxBuffers {
                    left: &y,
                    right: &grad,
                    result: &u,
                }
                .bind(k, dev, s, iteration),
                rowwise(p),
            ),
            with(
                matmul::ResidualProductBuffers {
                    dict,
                    lhs: &u,
                    y: &zeros,
                    out: &au,
                }
                .bind(k, dev, s, product, shape),
                k.product_groups(rows, d),
            ),
            with(
                fista::FistaObjectiveBuffers {
                    left: &au,
                    right: &x,
                    candidate: &u,
                    objective: &objective,
                    improved: &improved,
                }
                .bind(k, dev, s, iteration),
                [rows32, 1, 1],
            ),
            with(
                fista::FistaUpdateBuffers {
                    left: &au,
                    candidate: &u,
                    improved: &improved,
                    code: &z,
                    extrapolated: &y,
                    code_image: &az,
                    extrapolated_image: &ay,
                }
                .bind(k, dev, s, iteration),
                rowwise(d.max(p)),
            ),
        ];
        let record = |iterations: Range<usize>| {
            let mut encoder = dev.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("FISTA"),
            });
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                for iteration in iterations {
                    // The objective is one workgroup per row.
                    for (launch, groups) in &stages {
                        k.dispatch(&mut pass, launch, iteration, *groups);
                    }
                }
            }
            encoder
        };
        let Some(last) = submit_in_pieces(context, slots.len(), &record, stop)? else {
            return Ok(None);
        };
        buffers::read_back_after(context, last, &[(&z, 0, (4 * rows * p) as u64)]).map(Some)
    })?
}

/// Submits iterations 0..`n` as `record` records them, in pieces that double in length until
/// one takes [`STOP_CHECK_SECONDS`], waiting for each and asking `stop` after it; the last
/// piece comes back recorded, not submitted (its read-back joins it), or None once `stop` says
/// so.
fn submit_in_pieces(
    context: &GpuContext,
    n: usize,
    record: &dyn Fn(Range<usize>) -> wgpu::CommandEncoder,
    stop: &dyn Fn() -> bool,
) -> Result<Option<wgpu::CommandEncoder>> {
    let (mut done, mut length) = (0, 1);
    while n - done > length {
        let started = Instant::now();
        context.queue.submit([record(done..done + length).finish()]);
        context
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::Gpu(format!("waiting for the device: {e}")))?;
        done += length;
        if stop() {
            return Ok(None);
        }
        if started.elapsed() < Duration::from_secs_f64(STOP_CHECK_SECONDS) {
            length *= 2;
        }
    }
    Ok(Some(record(done..n)))
}
