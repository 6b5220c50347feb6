//! A stack of dense layers on the GPU (`shaders/dense.wgsl`): the learned sampler's network, uploaded once and applied to batches.

use std::sync::Arc;

use super::buffers::{read_back_after, storage, upload, SlotLayout};
use super::context::GpuContext;
use super::kernels::{dense::DenseBuffers, DenseParams};
use crate::{Error, Result};

/// One layer: inputs, outputs, weights (row-major `n_in × n_out`) and bias.
pub struct DenseLayerRef<'a> {
    /// Inputs per row.
    pub n_in: usize,
    /// Outputs per row.
    pub n_out: usize,
    /// Row-major `n_in × n_out`.
    pub weights: &'a [f32],
    /// One per output.
    pub bias: &'a [f32],
}

/// Dense layers resident on the device, every one but the last followed by a leaky ReLU.
pub struct DenseNet {
    context: Arc<GpuContext>,
    layers: Vec<(usize, usize, wgpu::Buffer, wgpu::Buffer)>,
    leak: f32,
}

impl DenseNet {
    /// Uploads `layers` (each layer's inputs must be the previous one's outputs).
    pub fn new(context: Arc<GpuContext>, layers: &[DenseLayerRef], leak: f32) -> Result<Self> {
        for (l, layer) in layers.iter().enumerate() {
            let chained = l == 0 || layers[l - 1].n_out == layer.n_in;
            if !chained
                || layer.weights.len() != layer.n_in * layer.n_out
                || layer.bias.len() != layer.n_out
            {
                return Err(Error::Internal(format!(
                    "dense layer {l}: {} × {} with {} weights and {} biases",
                    layer.n_in,
                    layer.n_out,
                    layer.weights.len(),
                    layer.bias.len()
                )));
            }
        }
        let uploaded = context.checked("uploading the network", || {
            layers
                .iter()
                .map(|l| {
                    let w = upload(&context, "weights", bytemuck::cast_slice(l.weights));
                    let b = upload(&context, "bias", bytemuck::cast_slice(l.bias));
                    (l.n_in, l.n_out, w, b)
                })
                .collect()
        })?;
        Ok(DenseNet {
            context,
            layers: uploaded,
            leak,
        })
    }

    /// The network's output for `rows` rows of `x` (`rows × inputs`), as `Mlp::infer` computes
    /// it on the CPU (equal to rounding: the sums run in another order).
    pub fn infer(&self, x: &[f32], rows: usize) -> Result<Vec<f32>> {
        let (Some(first), Some(last)) = (self.layers.first(), self.layers.last()) else {
            return Ok(x.to_vec());
        };
        if x.len() != rows * first.0 {
            return Err(Error::Internal(format!(
                "dense network: {} inputs for {rows} rows of {}",
                x.len(),
                first.0
            )));
        }
        if rows == 0 {
            return Ok(Vec::new());
        }
        let context = &self.context;
        let n_out = last.1;
        context.checked("running the network", || -> Result<Vec<f32>> {
            let mut layout = SlotLayout::new(context);
            let slots = layout.per_step::<DenseParams>(self.layers.len());
            let params = layout.build(context);
            let count = self.layers.len();
            params
                .writer()
                .set_all(slots, |l| DenseParams {
                    rows: rows as u32,
                    n_in: self.layers[l].0 as u32,
                    n_out: self.layers[l].1 as u32,
                    leaky: u32::from(l + 1 < count),
                    leak: self.leak,
                    ..Default::default()
                })
                .finish(context);
            let mut current = upload(context, "network input", bytemuck::cast_slice(x));
            let mut encoder = context
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            let mut outputs = Vec::with_capacity(count);
            for (l, (_, n_out, weights, bias)) in self.layers.iter().enumerate() {
                let output = storage(context, "layer output", (4 * rows * n_out) as u64);
                let launch = DenseBuffers {
                    weights,
                    bias,
                    input: &current,
                    output: &output,
                }
                .bind(&context.kernels, &context.device, &params, slots);
                {
                    let mut pass = encoder.begin_compute_pass(&Default::default());
                    let groups = [n_out.div_ceil(16) as u32, rows.div_ceil(16) as u32, 1];
                    context.kernels.dispatch(&mut pass, &launch, l, groups);
                }
                outputs.push(std::mem::replace(&mut current, output));
            }
            let bytes = read_back_after(
                context,
                encoder,
                &[(&current, 0, (4 * rows * n_out) as u64)],
            )?;
            drop(outputs);
            Ok(bytemuck::pod_collect_to_vec(&bytes))
        })?
    }
}
