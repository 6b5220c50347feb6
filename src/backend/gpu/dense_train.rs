//! Training the learned sampler's dense network on the GPU: forward with the activations kept, backward (`shaders/dense.wgsl`) and Adam (`shaders/adam.wgsl`), the parameters resident.

use std::sync::Arc;

use super::buffers::{read_back, read_back_after, storage, upload, SlotLayout};
use super::context::GpuContext;
use super::dense::{forward_pass, DenseLayerRef, LayerBuffers};
use super::kernels::dense::{
    AdamBuffers, DenseBiasGradBuffers, DenseInputGradBuffers, DenseWeightGradBuffers,
};
use super::kernels::{AdamParams, DenseParams};
use crate::{Error, Result};

/// Adam's settings and state, tensors in the network's order (each layer's weights, then its
/// bias), as `amortize::Adam` holds them.
#[derive(Clone, Debug, PartialEq)]
pub struct AdamState {
    /// Learning rate.
    pub lr: f32,
    /// First-moment decay.
    pub beta1: f32,
    /// Second-moment decay.
    pub beta2: f32,
    /// Steps taken.
    pub t: i32,
    /// First moments.
    pub m: Vec<Vec<f32>>,
    /// Second moments.
    pub v: Vec<Vec<f32>>,
}

/// One layer's buffers: parameters, their gradients and Adam's moments.
struct TrainLayer {
    n_in: usize,
    n_out: usize,
    /// Weights, bias (parameter tensors 2l and 2l + 1).
    values: [wgpu::Buffer; 2],
    gradients: [wgpu::Buffer; 2],
    first: [wgpu::Buffer; 2],
    second: [wgpu::Buffer; 2],
}

impl TrainLayer {
    /// The length of parameter tensor `k` (0: the weights, 1: the bias).
    fn len(&self, k: usize) -> usize {
        if k == 0 {
            self.n_in * self.n_out
        } else {
            self.n_out
        }
    }
}

/// A dense network (leaky ReLU after every layer but the last) trained on the device.
pub struct DenseTrainer {
    context: Arc<GpuContext>,
    layers: Vec<TrainLayer>,
    leak: f32,
    adam: AdamState,
    /// The last forward pass: its input, then each layer's output (rows of each).
    tape: Vec<wgpu::Buffer>,
    rows: usize,
}

/// Workgroups of 256 for `count` elements, as (x, y) with x ≤ 65535.
fn groups_256(count: usize) -> [u32; 3] {
    let groups = count.div_ceil(256).max(1);
    let x = groups.min(65535);
    [x as u32, groups.div_ceil(x) as u32, 1]
}

impl DenseTrainer {
    /// Uploads the network and Adam's state (`adam.m` and `adam.v` shaped like the parameters).
    pub fn new(
        context: Arc<GpuContext>,
        layers: &[DenseLayerRef],
        leak: f32,
        adam: AdamState,
    ) -> Result<Self> {
        let shapes_fit = layers.iter().enumerate().all(|(l, layer)| {
            let sizes = [layer.n_in * layer.n_out, layer.n_out];
            (l == 0 || layers[l - 1].n_out == layer.n_in)
                && layer.weights.len() == sizes[0]
                && layer.bias.len() == sizes[1]
                && (0..2).all(|k| {
                    adam.m.get(2 * l + k).map(Vec::len) == Some(sizes[k])
                        && adam.v.get(2 * l + k).map(Vec::len) == Some(sizes[k])
                })
        });
        if layers.is_empty() || !shapes_fit || adam.m.len() != 2 * layers.len() {
            return Err(Error::Internal(
                "dense trainer: the layers, the parameters and Adam's state do not match".into(),
            ));
        }
        let uploaded = context.checked("uploading the network for training", || {
            layers
                .iter()
                .enumerate()
                .map(|(l, layer)| {
                    let up =
                        |label: &str, v: &[f32]| upload(&context, label, bytemuck::cast_slice(v));
                    let zeros = |label: &str, n: usize| storage(&context, label, 4 * n as u64);
                    TrainLayer {
                        n_in: layer.n_in,
                        n_out: layer.n_out,
                        values: [up("weights", layer.weights), up("bias", layer.bias)],
                        gradients: [
                            zeros("weight gradient", layer.weights.len()),
                            zeros("bias gradient", layer.bias.len()),
                        ],
                        first: [
                            up("adam m", &adam.m[2 * l]),
                            up("adam m", &adam.m[2 * l + 1]),
                        ],
                        second: [
                            up("adam v", &adam.v[2 * l]),
                            up("adam v", &adam.v[2 * l + 1]),
                        ],
                    }
                })
                .collect()
        })?;
        Ok(DenseTrainer {
            context,
            layers: uploaded,
            leak,
            adam,
            tape: Vec::new(),
            rows: 0,
        })
    }

    /// The network's output for `rows` rows of `x`, keeping every layer's activations for
    /// [`DenseTrainer::backward_and_step`].
    pub fn forward(&mut self, x: &[f32], rows: usize) -> Result<Vec<f32>> {
        let n_in = self.layers[0].n_in;
        if x.len() != rows * n_in || rows == 0 {
            return Err(Error::Internal(format!(
                "dense trainer: {} inputs for {rows} rows of {n_in}",
                x.len()
            )));
        }
        let layers: Vec<LayerBuffers> = self
            .layers
            .iter()
            .map(|l| (l.n_in, l.n_out, &l.values[0], &l.values[1]))
            .collect();
        let (tape, out) = forward_pass(
            &self.context,
            "the network's forward pass",
            &layers,
            self.leak,
            x,
            rows,
        )?;
        self.tape = tape;
        self.rows = rows;
        Ok(out)
    }

    /// Backpropagates `grad_out` (the loss's gradient with respect to the last forward pass's
    /// output) and takes one Adam step, as `Mlp::backward` then `Adam::step` do on the CPU.
    pub fn backward_and_step(&mut self, grad_out: &[f32]) -> Result<()> {
        let (rows, count) = (self.rows, self.layers.len());
        let n_out = self.layers[count - 1].n_out;
        if self.tape.len() != count + 1 || grad_out.len() != rows * n_out {
            return Err(Error::Internal(
                "dense trainer: backward without the matching forward pass".into(),
            ));
        }
        self.adam.t += 1;
        let c1 = 1.0 - self.adam.beta1.powi(self.adam.t);
        let c2 = 1.0 - self.adam.beta2.powi(self.adam.t);
        let context = self.context.clone();
        context.checked(
            "the network's backward pass and Adam step",
            || -> Result<()> {
                let mut layout = SlotLayout::new(&context);
                let dense_slots = layout.per_step::<DenseParams>(count);
                let adam_slots = layout.per_step::<AdamParams>(2 * count);
                let params = layout.build(&context);
                let mut writer = params.writer();
                writer.set_all(dense_slots, |l| DenseParams {
                    rows: rows as u32,
                    n_in: self.layers[l].n_in as u32,
                    n_out: self.layers[l].n_out as u32,
                    // The input's derivative is masked where the input is a hidden activation.
                    leaky: u32::from(l > 0),
                    leak: self.leak,
                    ..Default::default()
                });
                writer.set_all(adam_slots, |k| AdamParams {
                    count: self.layers[k / 2].len(k % 2) as u32,
                    lr: self.adam.lr,
                    beta1: self.adam.beta1,
                    beta2: self.adam.beta2,
                    c1,
                    c2,
                    ..Default::default()
                });
                writer.finish(&context);
                let mut grad = upload(&context, "output gradient", bytemuck::cast_slice(grad_out));
                let mut encoder = context
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
                let kernels = &*context.kernels()?;
                let mut keep = Vec::with_capacity(count);
                for l in (0..count).rev() {
                    let layer = &self.layers[l];
                    let input = &self.tape[l];
                    let weight_grad = DenseWeightGradBuffers {
                        input,
                        grad_out: &grad,
                        grad_weights: &layer.gradients[0],
                    }
                    .bind(kernels, &context.device, &params, dense_slots);
                    let bias_grad = DenseBiasGradBuffers {
                        grad_out: &grad,
                        grad_bias: &layer.gradients[1],
                    }
                    .bind(kernels, &context.device, &params, dense_slots);
                    let grad_in = (l > 0).then(|| {
                        storage(&context, "input gradient", (4 * rows * layer.n_in) as u64)
                    });
                    let input_grad = grad_in.as_ref().map(|grad_in| {
                        DenseInputGradBuffers {
                            weights: &layer.values[0],
                            input,
                            grad_out: &grad,
                            grad_in,
                        }
                        .bind(
                            kernels,
                            &context.device,
                            &params,
                            dense_slots,
                        )
                    });
                    {
                        let mut pass = encoder.begin_compute_pass(&Default::default());
                        let (n_in, n_out) = (layer.n_in as u32, layer.n_out as u32);
                        let wg = [n_out.div_ceil(16), n_in.div_ceil(16), 1];
                        kernels.dispatch(&mut pass, &weight_grad, l, wg);
                        kernels.dispatch(&mut pass, &bias_grad, l, [n_out.div_ceil(64), 1, 1]);
                        if let Some(launch) = &input_grad {
                            let ig = [n_in.div_ceil(16), (rows as u32).div_ceil(16), 1];
                            kernels.dispatch(&mut pass, launch, l, ig);
                        }
                    }
                    if let Some(next) = grad_in {
                        keep.push(std::mem::replace(&mut grad, next));
                    }
                }
                // Adam after every gradient: the input gradients above read the old weights.
                {
                    let mut pass = encoder.begin_compute_pass(&Default::default());
                    for (l, layer) in self.layers.iter().enumerate() {
                        for k in 0..2 {
                            let launch = AdamBuffers {
                                values: &layer.values[k],
                                gradient: &layer.gradients[k],
                                first_moment: &layer.first[k],
                                second_moment: &layer.second[k],
                            }
                            .bind(
                                kernels,
                                &context.device,
                                &params,
                                adam_slots,
                            );
                            let groups = groups_256(layer.len(k));
                            kernels.dispatch(&mut pass, &launch, 2 * l + k, groups);
                        }
                    }
                }
                read_back_after::<u8>(&context, encoder, &[])?;
                drop(keep);
                Ok(())
            },
        )?
    }

    /// The parameters (each layer's weights, then its bias) and Adam's state, read back.
    pub fn download(&self) -> Result<(Vec<Vec<f32>>, AdamState)> {
        let mut pieces = Vec::new();
        let mut lens = Vec::new();
        for layer in &self.layers {
            for k in 0..2 {
                let n = layer.len(k);
                for buffer in [&layer.values[k], &layer.first[k], &layer.second[k]] {
                    pieces.push((buffer, 0, 4 * n as u64));
                    lens.push(n);
                }
            }
        }
        let all: Vec<f32> = self.context.checked("reading the trained network", || {
            read_back(&self.context, &pieces)
        })??;
        let mut at = 0;
        let mut tensors = lens.iter().map(|&n| {
            let t = all[at..at + n].to_vec();
            at += n;
            t
        });
        let (mut values, mut m, mut v) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..2 * self.layers.len() {
            values.push(tensors.next().unwrap_or_default());
            m.push(tensors.next().unwrap_or_default());
            v.push(tensors.next().unwrap_or_default());
        }
        let adam = AdamState {
            m,
            v,
            ..self.adam.clone()
        };
        Ok((values, adam))
    }
}
