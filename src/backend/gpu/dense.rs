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
        let Some(first) = self.layers.first() else {
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
        let layers: Vec<LayerBuffers> = self
            .layers
            .iter()
            .map(|(n_in, n_out, w, b)| (*n_in, *n_out, w, b))
            .collect();
        let (_, output) = forward_pass(
            &self.context,
            "running the network",
            &layers,
            self.leak,
            x,
            rows,
        )?;
        Ok(output)
    }
}

/// One layer as the forward pass reads it: inputs, outputs, weights, bias.
pub(super) type LayerBuffers<'a> = (usize, usize, &'a wgpu::Buffer, &'a wgpu::Buffer);

/// Runs `layers` (a leaky ReLU with slope `leak` after every one but the last) on `rows` rows of
/// `x` in one submission: returns the tape (x's upload, then each layer's output) and the last
/// layer's output read back. `what` names the work in a device error.
pub(super) fn forward_pass(
    context: &GpuContext,
    what: &str,
    layers: &[LayerBuffers],
    leak: f32,
    x: &[f32],
    rows: usize,
) -> Result<(Vec<wgpu::Buffer>, Vec<f32>)> {
    let count = layers.len();
    let n_out = layers.last().map_or(0, |l| l.1);
    context.checked(what, || -> Result<_> {
        let kernels = context.kernels()?;
        let mut layout = SlotLayout::new(context);
        let slots = layout.per_step::<DenseParams>(count);
        let params = layout.build(context);
        params
            .writer()
            .set_all(slots, |l| DenseParams {
                rows: rows as u32,
                n_in: layers[l].0 as u32,
                n_out: layers[l].1 as u32,
                leaky: u32::from(l + 1 < count),
                leak,
                ..Default::default()
            })
            .finish(context);
        let mut tape = vec![upload(context, "network input", bytemuck::cast_slice(x))];
        let mut encoder = context
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        for (l, &(_, layer_out, weights, bias)) in layers.iter().enumerate() {
            let output = storage(context, "layer output", (4 * rows * layer_out) as u64);
            let launch = DenseBuffers {
                weights,
                bias,
                input: &tape[l],
                output: &output,
            }
            .bind(&kernels, &context.device, &params, slots);
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                let groups = [layer_out.div_ceil(16) as u32, rows.div_ceil(16) as u32, 1];
                kernels.dispatch(&mut pass, &launch, l, groups);
            }
            tape.push(output);
        }
        let outputs = read_back_after(
            context,
            encoder,
            &[(&tape[count], 0, (4 * rows * n_out) as u64)],
        )?;
        Ok((tape, outputs))
    })?
}
