//! One-shot runs of single kernels on host slices, for parity tests (outputs poisoned with NaN).

use super::buffers::{read_f32, storage, upload, ParamSlots};
use super::context::GpuContext;
use super::kernels::{
    gather, matmul, philox_probe, GemmTile, Kernels, Launch, MatmulParams, ModelWgsl,
    PhiloxProbeParams, Slots, WgslStruct,
};
use crate::model::{Observations, Precision};
use crate::Result;

/// Output words per probe case: 4 raw, 4 indices, 4 normals (f32 bits).
pub const PROBE_WORDS: usize = 12;

/// Runs the kernel `bind` binds (given the kernels, the device and the params slot) once, with
/// `params` in its one slot.
fn run<P: WgslStruct>(
    context: &GpuContext,
    params: P,
    bind: impl FnOnce(&Kernels, &wgpu::Device, &ParamSlots, Slots<P>) -> Launch,
    workgroups: [u32; 3],
) -> Result<()> {
    run_with(context, &*context.kernels()?, params, bind, workgroups)
}

/// `run` with the given pipelines.
fn run_with<P: WgslStruct>(
    context: &GpuContext,
    kernels: &Kernels,
    params: P,
    bind: impl FnOnce(&Kernels, &wgpu::Device, &ParamSlots, Slots<P>) -> Launch,
    workgroups: [u32; 3],
) -> Result<()> {
    context.checked("running a kernel", || {
        let (buffer, slots) = ParamSlots::one::<P>(context);
        buffer.writer().set(slots, 0, params).finish(context);
        let launch = bind(kernels, &context.device, &buffer, slots);
        let mut encoder = context
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            kernels.dispatch(&mut pass, &launch, 0, workgroups);
        }
        context.queue.submit([encoder.finish()]);
    })
}

fn poisoned(context: &GpuContext, len: usize) -> wgpu::Buffer {
    upload(
        context,
        "poisoned output",
        bytemuck::cast_slice(&vec![f32::NAN; len]),
    )
}

/// Per case (counter, key, n): the Philox block, its four indices on 0..n and its four normals.
pub fn philox(context: &GpuContext, cases: &[([u32; 4], [u32; 2], u32)]) -> Result<Vec<[u32; 12]>> {
    let words: Vec<u32> = cases
        .iter()
        .flat_map(|(c, k, n)| [c[0], c[1], c[2], c[3], k[0], k[1], *n, 0])
        .collect();
    let input = upload(context, "probe cases", bytemuck::cast_slice(&words));
    let output = storage(
        context,
        "probe draws",
        (cases.len() * PROBE_WORDS * 4) as u64,
    );
    let params = PhiloxProbeParams {
        cases: cases.len() as u32,
        ..Default::default()
    };
    let groups = (cases.len() as u32).div_ceil(64);
    run(
        context,
        params,
        |k, dev, buffer, slots| {
            philox_probe::PhiloxProbeBuffers {
                cases: &input,
                draws: &output,
            }
            .bind(k, dev, buffer, slots)
        },
        [groups, 1, 1],
    )?;
    let values = read_f32(context, &output, cases.len() * PROBE_WORDS)?;
    Ok(values
        .chunks(PROBE_WORDS)
        .map(|c| {
            let mut out = [0u32; 12];
            for (o, v) in out.iter_mut().zip(c) {
                *o = v.to_bits();
            }
            out
        })
        .collect())
}

/// The paper's model's pipelines (f32) built with the products' `tile`.
fn tiled(context: &GpuContext, tile: GemmTile) -> Result<std::sync::Arc<Kernels>> {
    context.kernels_with(&ModelWgsl::paper(), Precision::F32, tile)
}

/// out (C × d) = Z (C × p) · Aᵀ − Y, Y being C × d or one row of d broadcast, by the `tile`
/// products.
pub fn residual_product(
    context: &GpuContext,
    tile: GemmTile,
    a: &[f32],
    d: usize,
    p: usize,
    z: &[f32],
    y: &[f32],
) -> Result<Vec<f32>> {
    let chains = z.len() / p;
    let dict = upload(context, "A", bytemuck::cast_slice(a));
    let lhs = upload(context, "Z", bytemuck::cast_slice(z));
    let y_buffer = upload(context, "Y", bytemuck::cast_slice(y));
    let out = poisoned(context, chains * d);
    let params = MatmulParams {
        chains: chains as u32,
        d: d as u32,
        p: p as u32,
        y_stride: if y.len() == d { 0 } else { d as u32 },
        ..Default::default()
    };
    let kernels = tiled(context, tile)?;
    let groups = kernels.product_groups(chains, d);
    run_with(
        context,
        &kernels,
        params,
        |k, dev, buffer, slots| {
            matmul::ResidualProductBuffers {
                dict: &dict,
                lhs: &lhs,
                y: &y_buffer,
                out: &out,
            }
            .bind(k, dev, buffer, slots, (d, p))
        },
        groups,
    )?;
    read_f32(context, &out, chains * d)
}

/// out (C × p) = R (C × d) · A, by the `tile` products.
pub fn transpose_product(
    context: &GpuContext,
    tile: GemmTile,
    a: &[f32],
    d: usize,
    p: usize,
    r: &[f32],
) -> Result<Vec<f32>> {
    let chains = r.len() / d;
    let dict = upload(context, "A", bytemuck::cast_slice(a));
    let lhs = upload(context, "R", bytemuck::cast_slice(r));
    let out = poisoned(context, chains * p);
    let params = MatmulParams {
        chains: chains as u32,
        d: d as u32,
        p: p as u32,
        ..Default::default()
    };
    let kernels = tiled(context, tile)?;
    let groups = kernels.product_groups(chains, p);
    run_with(
        context,
        &kernels,
        params,
        |k, dev, buffer, slots| {
            matmul::TransposeProductBuffers {
                dict: &dict,
                lhs: &lhs,
                out: &out,
            }
            .bind(k, dev, buffer, slots, (d, p))
        },
        groups,
    )?;
    read_f32(context, &out, chains * p)
}

/// The minibatch means of chains `chain_offset..chain_offset + chains` (C × d); `rows` holds
/// (first row, count) for every chain from 0 to `chain_offset + chains`.
#[allow(clippy::too_many_arguments)]
pub fn gather(
    context: &GpuContext,
    observations: &Observations,
    rows: &[[u32; 2]],
    seed: u64,
    outer: u32,
    step: u32,
    batch: u32,
    chain_offset: u32,
    chains: usize,
) -> Result<Vec<f32>> {
    let d = observations.d;
    let data = super::upload_observations(context, observations)?;
    let rows = super::buffers::upload(context, "chain rows", bytemuck::cast_slice(rows));
    let out = poisoned(context, chains * d);
    let mut params = super::gather_params(observations, seed, outer, step, batch);
    params.stream.chain_offset = chain_offset;
    let groups = [(d as u32).div_ceil(64), chains as u32, 1];
    run(
        context,
        params,
        |k, dev, buffer, slots| {
            gather::GatherBuffers {
                data: &data,
                ybar: &out,
                chain_rows: &rows,
            }
            .bind(k, dev, buffer, slots)
        },
        groups,
    )?;
    read_f32(context, &out, chains * d)
}
