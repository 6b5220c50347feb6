//! A small fully connected network (LeakyReLU hidden layers, linear output) with manual backprop and Adam.
//!
//! Chosen over `burn` 0.22 by measurement (docs/amortized.md): with its three products per layer
//! on a tuned kernel, a 784-512-512-784 training step is within 1.5x of burn's CPU backends, and
//! burn would add 12 minutes of compilation on 2 cores to every clean build. The products run on
//! the chains' packed kernels (`backend::cpu::packed`), which sum every output in one order on
//! every CPU path, so a seed trains the same network, and generates the same images, on any
//! x86-64 CPU (on `gemm`, the order followed the CPU's kernels and cache sizes).

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::normal;
use crate::backend::cpu::packed::{transposed, PackedOperand};

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

impl Dense {
    /// `batch` rows of `bias + x W` (x is `batch × n_in`, row-major).
    fn affine(&self, x: &[f32], batch: usize) -> Vec<f32> {
        assert_eq!(x.len(), batch * self.n_in, "dense layer: input size");
        // x W − (−bias): the bias is added after the sum over n_in, in one rounding.
        let minus: Vec<f32> = (0..batch)
            .flat_map(|_| self.bias.iter().map(|b| -b))
            .collect();
        let mut out = vec![0.0; batch * self.n_out];
        PackedOperand::from_rows(&self.w, self.n_in, self.n_out).product(x, Some(&minus), &mut out);
        out
    }
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
            let out = layer.affine(&current, batch);
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

    /// The network on the GPU of `context` (`backend::gpu::dense`), its layers uploaded once;
    /// its `infer` is this one's twin.
    #[cfg(feature = "gpu")]
    pub fn on_gpu(
        &self,
        context: std::sync::Arc<crate::backend::gpu::GpuContext>,
    ) -> crate::Result<crate::backend::gpu::dense::DenseNet> {
        crate::backend::gpu::dense::DenseNet::new(context, &self.layer_refs(), LEAK)
    }

    /// The layers as the GPU paths upload them.
    #[cfg(feature = "gpu")]
    fn layer_refs(&self) -> Vec<crate::backend::gpu::dense::DenseLayerRef<'_>> {
        self.layers
            .iter()
            .map(|l| crate::backend::gpu::dense::DenseLayerRef {
                n_in: l.n_in,
                n_out: l.n_out,
                weights: &l.w,
                bias: &l.bias,
            })
            .collect()
    }

    /// The network and `adam`'s state on the GPU for training
    /// (`backend::gpu::dense_train::DenseTrainer`); [`Mlp::load_trained`] brings them back.
    #[cfg(feature = "gpu")]
    pub fn trainer_on_gpu(
        &self,
        adam: &Adam,
        context: std::sync::Arc<crate::backend::gpu::GpuContext>,
    ) -> crate::Result<crate::backend::gpu::dense_train::DenseTrainer> {
        use crate::backend::gpu::dense_train::{AdamState, DenseTrainer};
        let state = AdamState {
            lr: adam.lr,
            beta1: adam.beta1,
            beta2: adam.beta2,
            t: adam.t,
            m: adam.m.clone(),
            v: adam.v.clone(),
        };
        DenseTrainer::new(context, &self.layer_refs(), LEAK, state)
    }

    /// Takes the parameters and Adam's state of a GPU training back
    /// (`DenseTrainer::download`).
    #[cfg(feature = "gpu")]
    pub fn load_trained(
        &mut self,
        adam: &mut Adam,
        trained: (Vec<Vec<f32>>, crate::backend::gpu::dense_train::AdamState),
    ) -> crate::Result<()> {
        let (values, state) = trained;
        let fits = values.len() == 2 * self.layers.len()
            && self
                .params_mut()
                .iter()
                .zip(&values)
                .all(|(p, v)| p.len() == v.len());
        if !fits || state.m.len() != values.len() || state.v.len() != values.len() {
            return Err(crate::Error::Internal(
                "the trained network read back does not match its shape".into(),
            ));
        }
        for (p, v) in self.params_mut().into_iter().zip(values) {
            *p = v;
        }
        adam.t = state.t;
        adam.m = state.m;
        adam.v = state.v;
        Ok(())
    }

    /// The output of the forward pass over `batch` rows of `x` (`batch × inputs`), computed
    /// with the same products as [`Mlp::forward`] (so equal to its output): for sampling, where
    /// no tape is needed.
    pub fn infer(&self, x: &[f32], batch: usize) -> Vec<f32> {
        assert_eq!(x.len(), batch * self.inputs(), "infer: input size");
        let mut current = x.to_vec();
        for (l, layer) in self.layers.iter().enumerate() {
            let mut out = layer.affine(&current, batch);
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
            for grow in g.chunks(layer.n_out) {
                for (acc, v) in gb.iter_mut().zip(grow) {
                    *acc += v;
                }
            }
            // gW += Xᵀ G (n_in × n_out) and gX = G Wᵀ (batch × n_in), as two products.
            let (n_in, n_out) = (layer.n_in, layer.n_out);
            let mut step = vec![0.0f32; n_in * n_out];
            PackedOperand::from_rows(&g, batch, n_out).product(
                &transposed(x, batch, n_in),
                None,
                &mut step,
            );
            for (acc, v) in gw.iter_mut().zip(&step) {
                *acc += v;
            }
            PackedOperand::from_transpose(&layer.w, n_in, n_out).product(&g, None, &mut gx);
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
