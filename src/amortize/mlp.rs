//! A small fully connected network (LeakyReLU hidden layers, linear output) with manual backprop and Adam.
//!
//! Chosen over `burn` by measurement (docs/amortized.md): the learned samplers' networks are a few
//! thousand weights on 2-D targets, where one hand-written f32 layer loop is all the work, and the
//! crate builds with no new dependency.

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::normal;

/// The slope of LeakyReLU below 0.
const LEAK: f32 = 0.2;

/// One dense layer: `out[b][o] = Σ_i x[b][i] w[i][o] + bias[o]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Dense {
    n_in: usize,
    n_out: usize,
    /// Row-major `n_in × n_out`.
    w: Vec<f32>,
    bias: Vec<f32>,
}

/// A multilayer perceptron: `sizes[0]` inputs, LeakyReLU(0.2) after every hidden layer, a linear
/// last layer of `sizes.last()` outputs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Mlp {
    layers: Vec<Dense>,
}

/// What a forward pass keeps for the backward pass: each layer's input and the network's output.
#[derive(Clone, Debug)]
pub struct Tape {
    batch: usize,
    /// `inputs[l]` is layer l's input (after the previous activation), `batch × n_in`.
    inputs: Vec<Vec<f32>>,
    /// Pre-activations of every layer, `batch × n_out`.
    pre: Vec<Vec<f32>>,
}

impl Tape {
    /// The network's output, `batch × outputs`, row-major.
    pub fn output(&self) -> &[f32] {
        self.pre.last().map(Vec::as_slice).unwrap_or(&[])
    }
}

/// Gradients with the shape of an [`Mlp`]'s parameters, in the order of [`Mlp::params_mut`].
#[derive(Clone, Debug)]
pub struct Grads(pub Vec<Vec<f32>>);

impl Mlp {
    /// He-initialised weights (normal, variance 2 / fan-in), zero biases.
    pub fn new(sizes: &[usize], rng: &mut impl Rng) -> Self {
        let layers = sizes
            .windows(2)
            .map(|pair| {
                let (n_in, n_out) = (pair[0], pair[1]);
                let scale = (2.0 / n_in as f64).sqrt();
                Dense {
                    n_in,
                    n_out,
                    w: (0..n_in * n_out)
                        .map(|_| (normal(rng) * scale) as f32)
                        .collect(),
                    bias: vec![0.0; n_out],
                }
            })
            .collect();
        Mlp { layers }
    }

    /// Number of inputs.
    pub fn inputs(&self) -> usize {
        self.layers.first().map_or(0, |l| l.n_in)
    }

    /// Number of outputs.
    pub fn outputs(&self) -> usize {
        self.layers.last().map_or(0, |l| l.n_out)
    }

    /// Multiply-adds of one forward pass per sample.
    pub fn macs(&self) -> usize {
        self.layers.iter().map(|l| l.n_in * l.n_out).sum()
    }

    /// The parameters, layer by layer: weights then biases.
    pub fn params_mut(&mut self) -> Vec<&mut Vec<f32>> {
        self.layers
            .iter_mut()
            .flat_map(|l| [&mut l.w, &mut l.bias])
            .collect()
    }

    /// The parameters, flattened in the order of [`Mlp::params_mut`] (for saving and tests).
    pub fn params(&self) -> Vec<f32> {
        self.layers
            .iter()
            .flat_map(|l| l.w.iter().chain(l.bias.iter()).copied())
            .collect()
    }

    /// Zero gradients of this network's shape.
    pub fn zero_grads(&self) -> Grads {
        Grads(
            self.layers
                .iter()
                .flat_map(|l| [vec![0.0; l.w.len()], vec![0.0; l.bias.len()]])
                .collect(),
        )
    }

    /// The forward pass over `batch` rows of `x` (`batch × inputs`, row-major).
    pub fn forward(&self, x: &[f32], batch: usize) -> Tape {
        debug_assert_eq!(x.len(), batch * self.inputs());
        let mut inputs = Vec::with_capacity(self.layers.len());
        let mut pre = Vec::with_capacity(self.layers.len());
        let mut current = x.to_vec();
        for (l, layer) in self.layers.iter().enumerate() {
            let mut out = vec![0.0f32; batch * layer.n_out];
            for b in 0..batch {
                let row = &mut out[b * layer.n_out..(b + 1) * layer.n_out];
                row.copy_from_slice(&layer.bias);
                for i in 0..layer.n_in {
                    let xi = current[b * layer.n_in + i];
                    if xi == 0.0 {
                        continue;
                    }
                    let w = &layer.w[i * layer.n_out..(i + 1) * layer.n_out];
                    for (o, wo) in row.iter_mut().zip(w) {
                        *o += xi * wo;
                    }
                }
            }
            let next = if l + 1 < self.layers.len() {
                out.iter()
                    .map(|&v| if v > 0.0 { v } else { LEAK * v })
                    .collect()
            } else {
                Vec::new()
            };
            inputs.push(std::mem::replace(&mut current, next));
            pre.push(out);
        }
        Tape { batch, inputs, pre }
    }

    /// The output of the forward pass over `batch` rows of `x` (`batch × inputs`), computed
    /// with the `gemm` crate (rayon-parallel): for sampling, where no tape is needed. Equal to
    /// [`Mlp::forward`]'s output up to the order of the float sums.
    pub fn infer(&self, x: &[f32], batch: usize) -> Vec<f32> {
        assert_eq!(x.len(), batch * self.inputs(), "infer: input size");
        let mut current = x.to_vec();
        for (l, layer) in self.layers.iter().enumerate() {
            let mut out: Vec<f32> = (0..batch)
                .flat_map(|_| layer.bias.iter().copied())
                .collect();
            if batch > 0 && layer.n_out > 0 && layer.n_in > 0 {
                // SAFETY: out is batch × n_out (row stride n_out), current batch × n_in (row
                // stride n_in), w n_in × n_out (row stride n_out): every index the strides reach
                // is inside the lengths (asserted above and by construction of the layers).
                unsafe {
                    gemm::gemm(
                        batch,
                        layer.n_out,
                        layer.n_in,
                        out.as_mut_ptr(),
                        1,
                        layer.n_out as isize,
                        true,
                        current.as_ptr(),
                        1,
                        layer.n_in as isize,
                        layer.w.as_ptr(),
                        1,
                        layer.n_out as isize,
                        1.0,
                        1.0,
                        false,
                        false,
                        false,
                        gemm::Parallelism::Rayon(rayon::current_num_threads()),
                    );
                }
            }
            if l + 1 < self.layers.len() {
                for v in out.iter_mut() {
                    if *v <= 0.0 {
                        *v *= LEAK;
                    }
                }
            }
            current = out;
        }
        current
    }

    /// The backward pass: adds d loss / d params to `grads` given `grad_out` = d loss / d output
    /// (`batch × outputs`), and returns d loss / d input (`batch × inputs`).
    pub fn backward(&self, tape: &Tape, grad_out: &[f32], grads: &mut Grads) -> Vec<f32> {
        let batch = tape.batch;
        let mut g = grad_out.to_vec();
        for l in (0..self.layers.len()).rev() {
            let layer = &self.layers[l];
            if l + 1 < self.layers.len() {
                for (gv, &p) in g.iter_mut().zip(&tape.pre[l]) {
                    if p <= 0.0 {
                        *gv *= LEAK;
                    }
                }
            }
            let x = &tape.inputs[l];
            let mut gx = vec![0.0f32; batch * layer.n_in];
            let (gw, gb) = {
                let (a, b) = grads.0.split_at_mut(2 * l + 1);
                (&mut a[2 * l], &mut b[0])
            };
            for b in 0..batch {
                let grow = &g[b * layer.n_out..(b + 1) * layer.n_out];
                for (acc, v) in gb.iter_mut().zip(grow) {
                    *acc += v;
                }
                for i in 0..layer.n_in {
                    let xi = x[b * layer.n_in + i];
                    let w = &layer.w[i * layer.n_out..(i + 1) * layer.n_out];
                    let gwi = &mut gw[i * layer.n_out..(i + 1) * layer.n_out];
                    let mut s = 0.0f32;
                    for o in 0..layer.n_out {
                        gwi[o] += xi * grow[o];
                        s += grow[o] * w[o];
                    }
                    gx[b * layer.n_in + i] = s;
                }
            }
            g = gx;
        }
        g
    }
}

/// Adam (Kingma & Ba) with the usual β₁ = 0.5 of GAN training, β₂ = 0.999, ε = 1e-8.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Adam {
    /// Learning rate.
    pub lr: f32,
    beta1: f32,
    beta2: f32,
    t: i32,
    m: Vec<Vec<f32>>,
    v: Vec<Vec<f32>>,
}

impl Adam {
    /// Adam for `net`'s parameters.
    pub fn new(net: &Mlp, lr: f32) -> Self {
        let zeros = net.zero_grads().0;
        Adam {
            lr,
            beta1: 0.5,
            beta2: 0.999,
            t: 0,
            m: zeros.clone(),
            v: zeros,
        }
    }

    /// One step against the gradient `grads`.
    pub fn step(&mut self, net: &mut Mlp, grads: &Grads) {
        self.t += 1;
        let c1 = 1.0 - self.beta1.powi(self.t);
        let c2 = 1.0 - self.beta2.powi(self.t);
        for (k, p) in net.params_mut().into_iter().enumerate() {
            for (j, w) in p.iter_mut().enumerate() {
                let g = grads.0[k][j];
                let m = &mut self.m[k][j];
                let v = &mut self.v[k][j];
                *m = self.beta1 * *m + (1.0 - self.beta1) * g;
                *v = self.beta2 * *v + (1.0 - self.beta2) * g * g;
                *w -= self.lr * (*m / c1) / ((*v / c2).sqrt() + 1e-8);
            }
        }
    }
}
