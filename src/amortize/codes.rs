//! A learned sampler of sparse codes per class (`CodeModel`): a Gaussian transition operator fitted to a teacher's samples, its training steps, and its versioned, checksummed file format.
//!
//! **What it learns.** For each class c, an operator G_c(u, ξ) = u + μ(u) + σ(u) ⊙ ξ, ξ ~ N(0, I),
//! on standardised codes u = (z − m_c) / s_c (m_c, s_c the per-atom mean and standard deviation of
//! the class's teacher samples), where one MLP of u gives μ and s, σ = σ_min + softplus(s), as in
//! SAL-MC's operator (`sal.rs`). It is fitted by maximum likelihood to the teacher's samples: each
//! step draws `batch` pairs (u_a, u_b) of the class's teacher samples at random and lowers the
//! Gaussian negative log-likelihood of u_b under N(u_a + μ(u_a), σ(u_a)²) (the AL-MC variant of
//! paper 004: learning from samples, with the MCMC sampler as the teacher; no adversary). Samples
//! start at a stored teacher sample (an anchor) and take `apply_steps` applications of G.
//!
//! **The file.** 8 bytes of magic (`RMLDAMZ\n`), the format version (u32 LE), the payload's
//! length (u64 LE), its xxh3-64 checksum (u64 LE), then the payload: the [`CodeModel`] in
//! postcard. A partly trained model (a checkpoint) has the same format; [`CodeModel::complete`]
//! tells them apart.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::mlp::{Adam, Mlp};
use super::normal;
use crate::math::Portable;
use crate::{Error, Result};

/// The most bytes an amortised-sampler model file may have (models are a few megabytes).
const MAX_MODEL_BYTES: u64 = 1 << 30;

/// G's network applied to `rows` rows of p (returns rows of 2p: μ and σ's pre-activation).
type Infer<'a> = dyn FnMut(&[f32], usize) -> Result<Vec<f32>> + 'a;

/// The first bytes of a model file.
pub const MODEL_MAGIC: &[u8; 8] = b"RMLDAMZ\n";
/// The model file format this build writes and reads.
pub const MODEL_VERSION: u32 = 2;
/// Magic, version, length and checksum.
const HEADER_BYTES: usize = 8 + 4 + 8 + 8;

/// How a [`CodeModel`] is trained and sampled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CodeTrainSettings {
    /// Width of the operator network's hidden layer.
    pub hidden: usize,
    /// Adam steps per class.
    pub fit_steps: u32,
    /// Pairs per step.
    pub pairs: usize,
    /// Adam's learning rate.
    pub lr: f32,
    /// The smallest σ of a move (standardised units).
    pub sigma_min: f32,
    /// Applications of G per generated sample, from an anchor.
    pub apply_steps: u32,
    /// Pairs (u_a, u_b) take u_b among the k teacher samples nearest u_a (Euclidean, in code
    /// space): G learns local moves and its samples stay near the teacher's. 0: u_b is any
    /// other sample of the class, and G learns to jump to the class's distribution (a Gaussian
    /// with the teacher's per-atom variances).
    #[serde(default)]
    pub neighbours: usize,
    /// Seeds the networks, the pairs and the draws.
    pub seed: u64,
}

impl Default for CodeTrainSettings {
    fn default() -> Self {
        CodeTrainSettings {
            hidden: 64,
            fit_steps: 600,
            pairs: 64,
            lr: 1e-3,
            sigma_min: 0.05,
            apply_steps: 1,
            // 4 / 6 / 8 / 16 on MNIST 2000: diversity 0.76 / 0.72 / 0.69 / 0.62 (the Gaussian
            // averages over its neighbours); 6 meets every goal on MNIST and Fashion-MNIST
            // (docs/amortized.md, "The number of neighbours").
            neighbours: 6,
            seed: 0,
        }
    }
}

impl CodeTrainSettings {
    /// Refuses settings out of range, naming the setting.
    pub fn validate(&self) -> Result<()> {
        if self.hidden == 0 || self.hidden > 4096 {
            return Err(Error::usage("hidden", "must be 1..=4096"));
        }
        if self.fit_steps == 0 {
            return Err(Error::usage("fit_steps", "must be at least 1"));
        }
        if self.pairs == 0 || self.pairs > 65536 {
            return Err(Error::usage("pairs", "must be 1..=65536"));
        }
        if !(self.lr.is_finite() && self.lr > 0.0 && self.lr <= 1.0) {
            return Err(Error::usage("lr", "must be in (0, 1]"));
        }
        if !(self.sigma_min.is_finite() && self.sigma_min > 0.0) {
            return Err(Error::usage("sigma_min", "must be positive"));
        }
        if self.apply_steps == 0 || self.apply_steps > 1000 {
            return Err(Error::usage("apply_steps", "must be 1..=1000"));
        }
        if self.neighbours > 1000 {
            return Err(Error::usage("neighbours", "must be 0..=1000"));
        }
        Ok(())
    }
}

/// What a model was trained on: a model is used only with the same image size, dictionary and
/// classes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelShape {
    /// Image height in pixels.
    pub height: usize,
    /// Image width in pixels.
    pub width: usize,
    /// Atoms of the dictionary.
    pub p: usize,
    /// A hash of the dictionary's values and shape.
    pub dictionary_hash: u64,
    /// The classes (label values), in order.
    pub classes: Vec<u32>,
}

/// One class's operator, its optimiser state and its teacher's statistics.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClassModel {
    /// The label value.
    pub label: u32,
    /// Per-atom mean of the teacher's codes.
    pub mean: Vec<f32>,
    /// Per-atom standard deviation of the teacher's codes (floored).
    pub scale: Vec<f32>,
    /// The teacher's codes, standardised, rows of p: the pairs of training and the anchors.
    pub samples: Vec<f32>,
    /// Per teacher sample, its nearest others (`min(neighbours, n − 1)` each; empty when
    /// `neighbours` is 0).
    pub neighbours: Vec<u32>,
    /// μ and s of G: p inputs, 2p outputs.
    pub net: Mlp,
    /// Adam's state while training: kept in `MODEL.partial` so that a resumed training continues
    /// exactly, dropped from the finished model file ([`CodeModel::drop_optimiser_state`]), where
    /// it was three quarters of the bytes. A step taken without it starts Adam afresh.
    pub adam: Option<Adam>,
    /// Steps taken.
    pub steps_done: u32,
    /// The last step's mean negative log-likelihood per atom.
    pub last_loss: f32,
}

/// A learned class-conditional code sampler (see the module's documentation).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CodeModel {
    /// What the model was trained on.
    pub shape: ModelShape,
    /// How it was trained.
    pub settings: CodeTrainSettings,
    /// The teacher's description (its settings, as JSON text), recorded for the reports.
    pub teacher: String,
    /// Per class, in the order of `shape.classes`.
    pub classes: Vec<ClassModel>,
}

fn softplus(x: f32) -> f32 {
    if x > 20.0 {
        x
    } else {
        x.exp_portable().ln_1p_portable()
    }
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp_portable())
}

impl CodeModel {
    /// A fresh model: per class, the teacher's codes (`codes[k]`: rows of `shape.p` for
    /// `shape.classes[k]`) standardised, and an operator initialised near the identity.
    pub fn new(
        shape: ModelShape,
        settings: CodeTrainSettings,
        teacher: String,
        codes: &[Vec<f32>],
    ) -> Result<Self> {
        settings.validate()?;
        let p = shape.p;
        if codes.len() != shape.classes.len() {
            return Err(Error::Internal(format!(
                "{} classes of teacher codes for {} classes",
                codes.len(),
                shape.classes.len()
            )));
        }
        let mut classes = Vec::with_capacity(codes.len());
        for (k, (rows, &label)) in codes.iter().zip(&shape.classes).enumerate() {
            let n = rows.len() / p.max(1);
            if p == 0 || rows.len() % p != 0 || n < 2 {
                return Err(Error::usage(
                    "ratio",
                    format!(
                        "class {label} has {n} teacher samples; training needs at least 2 per \
                         class (lower the ratio or raise the limit)"
                    ),
                ));
            }
            let mut mean = vec![0.0f64; p];
            for row in rows.chunks_exact(p) {
                for (m, &v) in mean.iter_mut().zip(row) {
                    *m += v as f64;
                }
            }
            mean.iter_mut().for_each(|m| *m /= n as f64);
            let mut var = vec![0.0f64; p];
            for row in rows.chunks_exact(p) {
                for ((s, &v), m) in var.iter_mut().zip(row).zip(&mean) {
                    *s += (v as f64 - m).powi(2);
                }
            }
            let sd: Vec<f64> = var.iter().map(|s| (s / (n - 1) as f64).sqrt()).collect();
            // Atoms the teacher never moved keep a small scale, so that they stay put.
            let largest = sd.iter().cloned().fold(0.0f64, f64::max);
            let floor = (largest * 1e-3).max(1e-8);
            let scale: Vec<f32> = sd.iter().map(|&s| s.max(floor) as f32).collect();
            let mean: Vec<f32> = mean.iter().map(|&m| m as f32).collect();
            let samples: Vec<f32> = rows
                .chunks_exact(p)
                .flat_map(|row| {
                    row.iter()
                        .zip(&mean)
                        .zip(&scale)
                        .map(|((&v, &m), &s)| (v - m) / s)
                        .collect::<Vec<_>>()
                })
                .collect();
            let neighbours = nearest(rows, p, settings.neighbours.min(n - 1));
            let mut rng = StdRng::seed_from_u64(settings.seed ^ ((k as u64 + 1) << 48));
            let mut net = Mlp::new(&[p, settings.hidden, 2 * p], &mut rng);
            // Near the identity: small weights in the last layer, σ ≈ 0.3 + σ_min to start.
            let s0 = (0.3f32.exp_portable() - 1.0).ln_portable();
            {
                let params = net.params_mut();
                let last = params.len() - 2;
                let mut params = params;
                for w in params[last].iter_mut() {
                    *w *= 0.01;
                }
                for (j, b) in params[last + 1].iter_mut().enumerate() {
                    *b = if j >= p { s0 } else { 0.0 };
                }
            }
            let adam = Some(Adam::new(&net, settings.lr));
            classes.push(ClassModel {
                label,
                mean,
                scale,
                samples,
                neighbours,
                net,
                adam,
                steps_done: 0,
                last_loss: f32::NAN,
            });
        }
        Ok(CodeModel {
            shape,
            settings,
            teacher,
            classes,
        })
    }

    /// True when every class has taken all its steps.
    pub fn complete(&self) -> bool {
        self.classes
            .iter()
            .all(|c| c.steps_done >= self.settings.fit_steps)
    }

    /// Drops every class's optimiser state: what a finished model keeps (the generator needs
    /// only the networks and the teacher's statistics).
    pub fn drop_optimiser_state(&mut self) {
        for class in &mut self.classes {
            class.adam = None;
        }
    }

    /// Steps taken, over all classes.
    pub fn steps_done(&self) -> u64 {
        self.classes.iter().map(|c| c.steps_done as u64).sum()
    }

    /// One training step of class `k` (an index into `classes`); returns its loss. The pairs
    /// come from a generator seeded by the seed, the class and the step, so a resumed training
    /// takes exactly the steps an uninterrupted one would.
    pub fn train_step(&mut self, k: usize) -> f32 {
        class_step(&mut self.classes[k], self.shape.p, &self.settings)
    }

    /// Up to `steps` more training steps of every unfinished class, the classes in parallel
    /// (rayon); each class's steps are those [`CodeModel::train_step`] takes, so the result
    /// does not depend on the threads.
    pub fn train_round(&mut self, steps: u32) {
        use rayon::prelude::*;
        let (p, settings) = (self.shape.p, &self.settings);
        self.classes.par_iter_mut().for_each(|class| {
            let end = round_end(class, steps, settings);
            while class.steps_done < end {
                class_step(class, p, settings);
            }
        });
    }

    /// [`CodeModel::train_round`] with each class's network trained on the GPU (`context`), the
    /// classes one after another: the same pairs and loss, the sums in another order, so the
    /// weights agree with the CPU's to rounding, not bit for bit.
    #[cfg(feature = "gpu")]
    pub fn train_round_on_gpu(
        &mut self,
        steps: u32,
        context: &std::sync::Arc<crate::backend::gpu::GpuContext>,
    ) -> Result<()> {
        let (p, settings) = (self.shape.p, &self.settings);
        for class in self.classes.iter_mut() {
            let end = round_end(class, steps, settings);
            class_steps_on_gpu(class, p, settings, end, context)?;
        }
        Ok(())
    }

    /// The index in `classes` of label `label`.
    pub fn class_index(&self, label: u32) -> Option<usize> {
        self.classes.iter().position(|c| c.label == label)
    }

    /// `count` codes (rows of p) of class `k`: each starts at a random anchor and takes
    /// `apply_steps` applications of G; `seed` seeds the draws.
    pub fn sample(&self, k: usize, count: usize, seed: u64) -> Vec<f32> {
        let net = &self.classes[k].net;
        let infer = &mut |x: &[f32], rows: usize| Ok(net.infer(x, rows));
        // The CPU network cannot fail.
        self.sample_with(k, count, seed, infer).unwrap_or_default()
    }

    /// `sample` with G's network run on the GPU of `context` (uploaded once): the same anchors
    /// and noise, G's outputs equal to rounding.
    #[cfg(feature = "gpu")]
    pub fn sample_on_gpu(
        &self,
        context: std::sync::Arc<crate::backend::gpu::GpuContext>,
        k: usize,
        count: usize,
        seed: u64,
    ) -> Result<Vec<f32>> {
        let net = self.classes[k].net.on_gpu(context)?;
        self.sample_with(k, count, seed, &mut |x, rows| net.infer(x, rows))
    }

    /// `sample` with G's network applied by `infer`.
    fn sample_with(
        &self,
        k: usize,
        count: usize,
        seed: u64,
        infer: &mut Infer,
    ) -> Result<Vec<f32>> {
        let p = self.shape.p;
        let class = &self.classes[k];
        let n = class.samples.len() / p;
        let mut rng = StdRng::seed_from_u64(seed ^ ((class.label as u64 + 1) << 32));
        let mut u = Vec::with_capacity(count * p);
        for _ in 0..count {
            let a = rng.random_range(0..n);
            u.extend_from_slice(&class.samples[a * p..(a + 1) * p]);
        }
        // In blocks, so that the network's activations stay small.
        const BLOCK: usize = 256;
        for _ in 0..self.settings.apply_steps {
            for start in (0..count).step_by(BLOCK) {
                let rows = BLOCK.min(count - start);
                let part = &mut u[start * p..(start + rows) * p];
                let out = infer(part, rows)?;
                for r in 0..rows {
                    for j in 0..p {
                        let (mu, s) = (out[r * 2 * p + j], out[r * 2 * p + p + j]);
                        let sigma = self.settings.sigma_min + softplus(s);
                        part[r * p + j] += mu + sigma * normal(&mut rng) as f32;
                    }
                }
            }
        }
        for row in u.chunks_exact_mut(p) {
            for ((v, &m), &s) in row.iter_mut().zip(&class.mean).zip(&class.scale) {
                *v = *v * s + m;
            }
        }
        Ok(u)
    }

    /// Multiply-adds of G per generated sample.
    pub fn macs_per_sample(&self) -> usize {
        self.classes.first().map_or(0, |c| c.net.macs()) * self.settings.apply_steps as usize
    }

    /// Reads and checks a model file (magic, version, length, checksum, sizes).
    pub fn load(path: &std::path::Path) -> Result<Self> {
        // Bounded, regular files only: `--model /dev/zero` is refused, not read forever.
        let bytes = crate::io::read_regular_file(path, "amortised-sampler model", MAX_MODEL_BYTES)?;
        CodeModel::from_bytes(path, &bytes)
    }

    /// Writes the model to `path` atomically.
    pub fn save(&self, path: &std::path::Path) -> Result<()> {
        let bytes = self.to_bytes()?;
        crate::io::write_atomic(path, |w| w.write_all(&bytes))
    }

    /// The model file's bytes: header, then the postcard payload.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let payload = postcard::to_allocvec(self)
            .map_err(|e| Error::Internal(format!("cannot serialise the model: {e}")))?;
        let mut bytes = Vec::with_capacity(HEADER_BYTES + payload.len());
        bytes.extend_from_slice(MODEL_MAGIC);
        bytes.extend_from_slice(&MODEL_VERSION.to_le_bytes());
        bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(&payload).to_le_bytes());
        bytes.extend_from_slice(&payload);
        Ok(bytes)
    }

    /// Reads a model file's bytes; `path` names the file in the errors (not an rmld model, another
    /// version, truncated, corrupted).
    pub fn from_bytes(path: &std::path::Path, bytes: &[u8]) -> Result<Self> {
        let bad = |message: String| Error::input(path, message);
        if bytes.len() < 8 || &bytes[..8] != MODEL_MAGIC {
            return Err(bad(
                "not an rmld amortised-sampler model (no RMLDAMZ header); train one with \
                 `rmld amortize train`"
                    .into(),
            ));
        }
        if bytes.len() < HEADER_BYTES {
            return Err(bad(format!(
                "truncated: {} bytes, shorter than the {HEADER_BYTES}-byte header",
                bytes.len()
            )));
        }
        let word = |at: usize, n: usize| -> u64 {
            let mut buf = [0u8; 8];
            buf[..n].copy_from_slice(&bytes[at..at + n]);
            u64::from_le_bytes(buf)
        };
        let version = word(8, 4) as u32;
        if version != MODEL_VERSION {
            return Err(bad(format!(
                "model format version {version}, but this rmld reads version {MODEL_VERSION}; \
                 train the model again with this rmld"
            )));
        }
        let len = word(12, 8);
        let checksum = word(20, 8);
        let payload = &bytes[HEADER_BYTES..];
        if (payload.len() as u64) < len {
            return Err(bad(format!(
                "truncated: the header announces {len} bytes of model, the file holds {}",
                payload.len()
            )));
        }
        if (payload.len() as u64) > len {
            return Err(bad(format!(
                "{} bytes after the model's {len}: not a file rmld wrote",
                payload.len() as u64 - len
            )));
        }
        if xxhash_rust::xxh3::xxh3_64(payload) != checksum {
            return Err(bad(
                "checksum mismatch: the file is corrupted (train the model again)".into(),
            ));
        }
        let model: CodeModel = postcard::from_bytes(payload)
            .map_err(|e| bad(format!("cannot decode the model: {e}")))?;
        model.check_consistent().map_err(bad)?;
        Ok(model)
    }

    /// Internal consistency of a decoded model (sizes agree).
    fn check_consistent(&self) -> std::result::Result<(), String> {
        let p = self.shape.p;
        if self.classes.len() != self.shape.classes.len() {
            return Err("class list and class models disagree".into());
        }
        for (c, &label) in self.classes.iter().zip(&self.shape.classes) {
            let ok = c.label == label
                && c.mean.len() == p
                && c.scale.len() == p
                && p > 0
                && c.samples.len() % p == 0
                && c.samples.len() >= 2 * p
                && c.neighbours
                    .iter()
                    .all(|&j| (j as usize) < c.samples.len() / p)
                && c.neighbours.len() % (c.samples.len() / p) == 0
                && c.net.inputs() == p
                && c.net.outputs() == 2 * p;
            if !ok {
                return Err(format!("class {label}'s sizes do not match p = {p}"));
            }
        }
        Ok(())
    }

    /// The pixel scale its teacher sampled at (`pixel_max`: a full-intensity pixel's value in
    /// model units), read from the teacher's recorded settings; None where they do not say.
    pub fn teacher_pixel_max(&self) -> Option<f32> {
        let teacher: serde_json::Value = serde_json::from_str(&self.teacher).ok()?;
        teacher["problem"]["pixel_max"].as_f64().map(|v| v as f32)
    }

    /// Refuses generation at another pixel scale than its teacher's: its codes make images
    /// whose full intensity is the teacher's `pixel_max`, so at another scale every image would
    /// come out too bright or too faint (at 1 against 255, nearly every pixel saturated).
    pub fn check_pixel_max(&self, path: &std::path::Path, pixel_max: f32) -> Result<()> {
        match self.teacher_pixel_max() {
            Some(trained) if trained != pixel_max => {
                Err(Error::usage(
                    "pixel_max",
                    format!(
                    "{} was trained on pixels scaled to {trained} (its teacher's `pixel_max`), \
                     but this run scales them to {pixel_max}: its codes would make images {} \
                     times too {}; give `pixel_max` {trained}",
                    path.display(),
                    trained.max(pixel_max) / trained.min(pixel_max),
                    if trained > pixel_max { "bright" } else { "faint" },
                ),
                ))
            }
            _ => Ok(()),
        }
    }

    /// Refuses use with data of another shape: image size, dictionary, classes. `path` names
    /// the model file; `what` names the other side (e.g. "the data and dictionary of this run").
    pub fn check_matches(&self, path: &std::path::Path, want: &ModelShape) -> Result<()> {
        let have = &self.shape;
        let bad = |message: String| Err(Error::input(path, message));
        if (have.height, have.width) != (want.height, want.width) {
            return bad(format!(
                "trained on {}×{} images, but this run's are {}×{}",
                have.height, have.width, want.height, want.width
            ));
        }
        if have.p != want.p || have.dictionary_hash != want.dictionary_hash {
            return bad(format!(
                "trained with another dictionary ({} atoms, hash {:016x}); this run's has {} \
                 atoms, hash {:016x} (use the same --dictionary/--atoms/--seed as training)",
                have.p, have.dictionary_hash, want.p, want.dictionary_hash
            ));
        }
        let missing: Vec<u32> = want
            .classes
            .iter()
            .filter(|c| !have.classes.contains(c))
            .copied()
            .collect();
        if !missing.is_empty() {
            return bad(format!(
                "has no model of classes {missing:?}: it was trained on classes {:?}",
                have.classes
            ));
        }
        Ok(())
    }
}

/// The step count a round of up to `steps` more steps brings `class` to.
fn round_end(class: &ClassModel, steps: u32, settings: &CodeTrainSettings) -> u32 {
    settings
        .fit_steps
        .min(class.steps_done.saturating_add(steps))
}

/// One training step of `class` (see [`CodeModel::train_step`]).
fn class_step(class: &mut ClassModel, p: usize, settings: &CodeTrainSettings) -> f32 {
    let (x, y) = step_pairs(class, p, settings);
    let batch = settings.pairs;
    let tape = class.net.forward(&x, batch);
    let (grad, loss) = loss_gradient(tape.output(), &x, &y, p, settings);
    let mut grads = class.net.zero_grads();
    class.net.backward(&tape, &grad, &mut grads);
    class
        .adam
        .get_or_insert_with(|| Adam::new(&class.net, settings.lr))
        .step(&mut class.net, &grads);
    class.steps_done += 1;
    class.last_loss = loss;
    loss
}

/// The (anchor, neighbour) pairs of `class`'s next step (rows of p each): from a generator
/// seeded by the seed, the class and the step, so every path takes the same pairs.
fn step_pairs(class: &ClassModel, p: usize, settings: &CodeTrainSettings) -> (Vec<f32>, Vec<f32>) {
    let n = class.samples.len() / p;
    let step = class.steps_done as u64;
    let mut rng = StdRng::seed_from_u64(
        settings.seed ^ ((class.label as u64 + 1) << 40) ^ step.wrapping_mul(0x9E37_79B9),
    );
    let batch = settings.pairs;
    let mut x = Vec::with_capacity(batch * p);
    let mut y = Vec::with_capacity(batch * p);
    for _ in 0..batch {
        let a = rng.random_range(0..n);
        let k = class.neighbours.len() / n;
        let b = if k > 0 {
            class.neighbours[a * k + rng.random_range(0..k)] as usize
        } else {
            let b = rng.random_range(0..n - 1);
            if b >= a {
                b + 1
            } else {
                b
            }
        };
        x.extend_from_slice(&class.samples[a * p..(a + 1) * p]);
        y.extend_from_slice(&class.samples[b * p..(b + 1) * p]);
    }
    (x, y)
}

/// The Gaussian move's negative log-likelihood of y given x (mean per value) and its gradient
/// with respect to the network's output `out` (rows of 2p: μ, then s with σ = σ_min + softplus(s)).
fn loss_gradient(
    out: &[f32],
    x: &[f32],
    y: &[f32],
    p: usize,
    settings: &CodeTrainSettings,
) -> (Vec<f32>, f32) {
    let batch = x.len() / p;
    let mut grad = vec![0.0f32; batch * 2 * p];
    let mut loss = 0.0f64;
    let norm = 1.0 / (batch * p) as f32;
    for r in 0..batch {
        let o = &out[r * 2 * p..(r + 1) * 2 * p];
        let g = &mut grad[r * 2 * p..(r + 1) * 2 * p];
        for j in 0..p {
            let (mu, s) = (o[j], o[p + j]);
            let sigma = settings.sigma_min + softplus(s);
            let resid = y[r * p + j] - x[r * p + j] - mu;
            let z = resid / sigma;
            loss += (0.5 * z * z + sigma.ln_portable()) as f64;
            g[j] = -z / sigma * norm;
            g[p + j] = (1.0 - z * z) / sigma * sigmoid(s) * norm;
        }
    }
    (grad, (loss / (batch * p) as f64) as f32)
}

/// Up to `steps` more training steps of `class` on the GPU: the same pairs and loss as
/// [`class_step`], the network's forward, backward and Adam step on the device.
#[cfg(feature = "gpu")]
fn class_steps_on_gpu(
    class: &mut ClassModel,
    p: usize,
    settings: &CodeTrainSettings,
    end: u32,
    context: &std::sync::Arc<crate::backend::gpu::GpuContext>,
) -> Result<()> {
    if class.steps_done >= end {
        return Ok(());
    }
    let mut adam = class
        .adam
        .take()
        .unwrap_or_else(|| Adam::new(&class.net, settings.lr));
    let mut trainer = class.net.trainer_on_gpu(&adam, context.clone())?;
    while class.steps_done < end {
        let (x, y) = step_pairs(class, p, settings);
        let out = trainer.forward(&x, settings.pairs)?;
        let (grad, loss) = loss_gradient(&out, &x, &y, p, settings);
        trainer.backward_and_step(&grad)?;
        class.steps_done += 1;
        class.last_loss = loss;
    }
    class.net.load_trained(&mut adam, trainer.download()?)?;
    class.adam = Some(adam);
    Ok(())
}

/// For each of the `n` rows of `rows` (p values each), the indices of its `k` nearest other
/// rows (squared Euclidean distance, ties by index), row by row.
fn nearest(rows: &[f32], p: usize, k: usize) -> Vec<u32> {
    use rayon::prelude::*;
    if k == 0 {
        return Vec::new();
    }
    let n = rows.len() / p;
    (0..n)
        .into_par_iter()
        .flat_map_iter(|i| {
            let a = &rows[i * p..(i + 1) * p];
            let mut d: Vec<(f64, usize)> = (0..n)
                .filter(|&j| j != i)
                .map(|j| {
                    let b = &rows[j * p..(j + 1) * p];
                    let s: f64 = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum();
                    (s, j)
                })
                .collect();
            d.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
            d.into_iter()
                .take(k)
                .map(|(_, j)| j as u32)
                .collect::<Vec<_>>()
        })
        .collect()
}
