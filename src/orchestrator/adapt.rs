//! Warm-up step-size adaptation across chains: dual averaging (Hoffman & Gelman 2014) on the chains' mean acceptance probability.
//!
//! Every outer iteration of the warm-up, the mean over all chains of min(1, α) (a divergent
//! proposal counts 0) is one observation of the acceptance statistic; dual averaging (Nesterov
//! 2009, as Hoffman & Gelman 2014, Algorithm 5, and Stan's `stepsize_adaptation` run it, with
//! Stan's constants γ = 0.05, t₀ = 10, κ = 0.75 and μ = log(10 ε₀)) moves log ε toward the
//! target. At the end of the warm-up the step size freezes at the averaged iterate exp(log ε̄),
//! averaged over the warm-up's second half only (so the first iterations' transient, which
//! starts from 10 ε₀, does not bias it; Stan restarts its average for the same reason), so
//! every later draw is exact for the frozen kernel. Averaging over thousands of chains makes
//! each observation nearly noise-free, which is why one iteration of the warm-up is worth many of
//! a single chain's.
//!
//! For HMC the trajectory length T = L·ε adapts too, by ChEES (Hoffman, Radul & Sountsov 2021,
//! as BlackJAX's `chees_adaptation` runs it): Adam ascends the cross-chain estimate of the ChEES
//! criterion's gradient in log T, and the length used is a moving average of log T with weight
//! t^−½; every iteration's leapfrog count is L = ⌈u·T/ε⌉ with u the base-2 Halton number of the
//! outer iteration, so the jitter is the same for all chains (one program per iteration) and a
//! pure function of the iteration (resume stays bit-identical). ChEES was chosen over a fixed L
//! or NUTS because it needs only one statistic per chain per iteration, fits lockstep chains on
//! a GPU, and is what BlackJAX and TFP use for many-chain HMC. After the warm-up T freezes; the
//! jitter continues, a state-independent schedule of exact HMC kernels.
//!
//! One step size serves every chain of a run, unless the run adapts per class (`ClassSteps`,
//! `rmld augment --adapt`): then each class's chains (each with its own target: its mean, its
//! neighbours' span) run dual averaging on their own acceptance, and ChEES's one trajectory
//! length is shared, with each iteration's leapfrog count taken at the geometric mean of the
//! classes' steps (the chains run in lockstep, one program per iteration).

use serde::{Deserialize, Serialize};

use crate::methods::Method;

use crate::math::Portable;
pub use crate::methods::{HMC_TARGET_ACCEPTANCE, MALA_TARGET_ACCEPTANCE};

/// Dual averaging's γ (Stan's `gamma`).
const GAMMA: f64 = 0.05;
/// Dual averaging's t₀ (Stan's `t0`).
const T0: f64 = 10.0;
/// Dual averaging's κ (Stan's `kappa`).
const KAPPA: f64 = 0.75;

/// ChEES's Adam learning rate on log T.
const CHEES_RATE: f64 = 0.05;
/// Adam's β₁ and β₂.
const ADAM_BETAS: (f64, f64) = (0.9, 0.999);
/// The largest change of log T in one iteration (BlackJAX's and TFP's clip, ≈ log(2)/2).
const LOG_UPDATE_CLIP: f64 = 0.35;
/// The moving average's decay: iteration t's log T has weight t^−DECAY (BlackJAX's 0.5).
const DECAY: f64 = 0.5;
/// The most leapfrog steps one proposal may take under ChEES (the jitter's largest L).
pub const MAX_LEAPFROG_STEPS: u32 = 256;

/// What a run adapts, and for how long.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Adaptation {
    /// Warm-up iterations 1..=iterations adapt the step size (the burn-in); it freezes after.
    pub iterations: u32,
    /// The mean acceptance probability aimed at.
    pub target: f64,
    /// HMC's trajectory length adapts too (ChEES), with jittered leapfrog counts.
    #[serde(default)]
    pub chees: bool,
    /// Each class of chains adapts its own step size (`ClassSteps`).
    #[serde(default)]
    pub per_class: bool,
}

impl Adaptation {
    /// The default adaptation of `method` over `iterations` warm-up iterations: the step size
    /// toward `target_for(method)`, and for HMC the trajectory length by ChEES; None for RMLD.
    pub fn for_method(method: Method, iterations: u32) -> Option<Self> {
        Some(Adaptation {
            iterations,
            target: Self::target_for(method)?,
            chees: method.runs_trajectory(),
            per_class: false,
        })
    }

    /// The documented target acceptance of `method` (`Method::target_acceptance`), or None for
    /// a method whose acceptance is not a tuning criterion (RMLD).
    pub fn target_for(method: Method) -> Option<f64> {
        method.target_acceptance()
    }
}

/// The dual-averaging state; with the run's settings it fixes every later step size, so a
/// checkpoint saves it whole.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepAdaptation {
    /// The step size the run started from, ε₀.
    pub initial_step: f64,
    /// The target acceptance.
    pub target: f64,
    /// Warm-up iterations that adapt.
    pub iterations: u32,
    /// Iterations adapted so far, t.
    pub count: u32,
    /// μ = log(10 ε₀).
    pub mu: f64,
    /// log ε_t, the step size the next warm-up iteration uses.
    pub log_step: f64,
    /// log ε̄_t, the averaged iterate the step size freezes at.
    pub log_step_bar: f64,
    /// H̄_t, the averaged gap target − acceptance.
    pub h_bar: f64,
    /// The mean acceptance probability over the warm-up (over iterations and chains).
    pub mean_acceptance: f64,
    /// HMC's trajectory length (ChEES), when it adapts.
    pub trajectory: Option<TrajectoryAdaptation>,
}

/// ChEES's state: the trajectory length T = L·ε of HMC, adapted across chains.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrajectoryAdaptation {
    /// T before any update: the given L times the given ε.
    pub initial_length: f64,
    /// log T, Adam's iterate.
    pub log_length: f64,
    /// The moving average of log T: the length every proposal uses.
    pub log_length_bar: f64,
    /// Adam's first moment.
    pub adam_m: f64,
    /// Adam's second moment.
    pub adam_v: f64,
    /// Updates made.
    pub count: u32,
    /// Proposals' mean leapfrog count over the warm-up.
    pub mean_steps: f64,
}

/// The base-2 Halton (van der Corput) number of `n` ≥ 1, in (0, 1): the jitter of iteration n.
pub fn halton(n: u32) -> f64 {
    let (mut n, mut f, mut out) = (n, 0.5, 0.0);
    while n > 0 {
        out += f * (n & 1) as f64;
        n >>= 1;
        f *= 0.5;
    }
    out
}

impl TrajectoryAdaptation {
    /// Starts from T = `steps`·`step`.
    pub fn new(steps: u32, step: f32) -> Self {
        let length = steps.max(1) as f64 * step as f64;
        TrajectoryAdaptation {
            initial_length: length,
            log_length: length.ln_portable(),
            log_length_bar: length.ln_portable(),
            adam_m: 0.0,
            adam_v: 0.0,
            count: 0,
            mean_steps: 0.0,
        }
    }

    /// The trajectory length T proposals use.
    pub fn length(&self) -> f64 {
        self.log_length_bar.exp_portable()
    }

    /// The leapfrog count of outer iteration `outer` at step size `step`: ⌈u·T/ε⌉ with u the
    /// iteration's Halton number, in 1..=MAX_LEAPFROG_STEPS.
    pub fn steps_at(&self, outer: u32, step: f32) -> u32 {
        let l = (halton(outer) * self.length() / step as f64).ceil();
        if l.is_finite() {
            l.clamp(1.0, MAX_LEAPFROG_STEPS as f64) as u32
        } else {
            1
        }
    }

    /// One warm-up iteration's ChEES update from the positions before it (`x`), the proposals
    /// (`z`) and their final momenta (`r`), C × p each, the chains' MH log α (NaN: divergent),
    /// the iteration's jitter `u`, its leapfrog count and the step size that comes next.
    #[allow(clippy::too_many_arguments)]
    pub fn observe(
        &mut self,
        x: &[f32],
        z: &[f32],
        r: &[f32],
        log_alpha: &[f64],
        u: f64,
        steps: u32,
        next_step: f32,
    ) {
        let chains = log_alpha.len();
        if chains == 0 || x.len() != z.len() || z.len() != r.len() {
            return;
        }
        let p = x.len() / chains;
        let weights: Vec<f64> = log_alpha
            .iter()
            .map(|&a| {
                if a.is_nan() {
                    0.0
                } else {
                    a.min(0.0).exp_portable()
                }
            })
            .collect();
        let total: f64 = weights.iter().sum();
        self.count += 1;
        let t = self.count as f64;
        self.mean_steps += (steps as f64 - self.mean_steps) / t;
        // The gradient in log T: u·T·(‖z − z̄‖² − ‖x − x̄‖²)·⟨z − z̄, r⟩, weighted by α; z̄ the
        // α-weighted mean of the proposals, x̄ the plain mean of the positions.
        let mut gradient = 0.0;
        if total > 0.0 {
            let mut xbar = vec![0f64; p];
            let mut zbar = vec![0f64; p];
            for (c, w) in weights.iter().enumerate() {
                for j in 0..p {
                    xbar[j] += x[c * p + j] as f64 / chains as f64;
                    zbar[j] += w * z[c * p + j] as f64 / total;
                }
            }
            for (c, w) in weights.iter().enumerate() {
                let (mut zz, mut xx, mut zr) = (0.0, 0.0, 0.0);
                for j in 0..p {
                    let (dz, dx) = (z[c * p + j] as f64 - zbar[j], x[c * p + j] as f64 - xbar[j]);
                    zz += dz * dz;
                    xx += dx * dx;
                    zr += dz * r[c * p + j] as f64;
                }
                gradient += w * u * self.length() * (zz - xx) * zr / total;
            }
        }
        if !gradient.is_finite() {
            gradient = 0.0;
        }
        // Adam, ascending.
        let (b1, b2) = ADAM_BETAS;
        self.adam_m = b1 * self.adam_m + (1.0 - b1) * gradient;
        self.adam_v = b2 * self.adam_v + (1.0 - b2) * gradient * gradient;
        let m = self.adam_m / (1.0 - b1.powf_portable(t));
        let v = self.adam_v / (1.0 - b2.powf_portable(t));
        let update = (CHEES_RATE * m / (v.sqrt() + 1e-8)).clamp(-LOG_UPDATE_CLIP, LOG_UPDATE_CLIP);
        if update.is_finite() {
            self.log_length += update;
        }
        let w = t.powf_portable(-DECAY);
        self.log_length_bar = (1.0 - w) * self.log_length_bar + w * self.log_length;
        // One leapfrog step at least, MAX_LEAPFROG_STEPS at most.
        let step = (next_step as f64).ln_portable();
        let (low, high) = (step, step + (MAX_LEAPFROG_STEPS as f64).ln_portable());
        self.log_length = self.log_length.clamp(low, high);
        self.log_length_bar = self.log_length_bar.clamp(low, high);
    }
}

impl StepAdaptation {
    /// Starts adapting from step size `initial_step` and, with ChEES, `leapfrog_steps` steps.
    pub fn with_trajectory(initial_step: f32, leapfrog_steps: u32, adaptation: Adaptation) -> Self {
        StepAdaptation {
            trajectory: adaptation
                .chees
                .then(|| TrajectoryAdaptation::new(leapfrog_steps, initial_step)),
            ..Self::new(initial_step, adaptation)
        }
    }

    /// Starts adapting from step size `initial_step`.
    pub fn new(initial_step: f32, adaptation: Adaptation) -> Self {
        let log0 = (initial_step as f64).ln_portable();
        StepAdaptation {
            initial_step: initial_step as f64,
            target: adaptation.target,
            iterations: adaptation.iterations,
            count: 0,
            mu: (10.0f64).ln_portable() + log0,
            log_step: log0,
            log_step_bar: 0.0,
            h_bar: 0.0,
            mean_acceptance: 0.0,
            trajectory: None,
        }
    }

    /// True once every warm-up iteration has adapted.
    pub fn frozen(&self) -> bool {
        self.count >= self.iterations
    }

    /// Ends the warm-up now (an automatic burn-in settled): the step size freezes at
    /// exp(`log_step`), and ChEES's length at its averaged value.
    pub fn freeze_at(&mut self, log_step: f64) {
        self.log_step_bar = log_step;
        self.iterations = self.count;
    }

    /// The step size the next iteration runs with: ε_t during the warm-up, exp(log ε̄) after.
    pub fn step(&self) -> f32 {
        if self.frozen() && self.count > 0 {
            self.log_step_bar.exp_portable() as f32
        } else {
            self.log_step.exp_portable() as f32
        }
    }

    /// One warm-up iteration's observation: the chains' MH log α (NaN: divergent, counted as 0).
    /// Does nothing once frozen.
    pub fn observe(&mut self, log_alpha: &[f64]) {
        if self.frozen() || log_alpha.is_empty() {
            return;
        }
        let accept = mean_acceptance(log_alpha);
        self.count += 1;
        let t = self.count as f64;
        self.mean_acceptance += (accept - self.mean_acceptance) / t;
        let w = 1.0 / (t + T0);
        self.h_bar = (1.0 - w) * self.h_bar + w * (self.target - accept);
        self.log_step = self.mu - t.sqrt() / GAMMA * self.h_bar;
        // ε̄ averages the second half of the warm-up only, so the first iterations' transient
        // (dual averaging starts from 10 ε₀) does not bias the frozen step.
        let half = self.iterations / 2;
        let s = if self.count > half {
            (self.count - half) as f64
        } else {
            t
        };
        let eta = s.powf_portable(-KAPPA);
        self.log_step_bar = eta * self.log_step + (1.0 - eta) * self.log_step_bar;
    }
}

/// Per-class step sizes: one dual-averaging state per class of chains, each observing only its
/// own chains' acceptance. The run's pooled `StepAdaptation` keeps the iteration count, the mean
/// acceptance over all chains and ChEES; its step is the geometric mean of the classes' steps
/// (the reference at which ChEES counts leapfrog steps).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassSteps {
    /// Per class, in the order of the chains' classes (`class_of_chain`'s indices).
    pub classes: Vec<StepAdaptation>,
}

impl ClassSteps {
    /// `classes` classes, each starting from step size `initial_step`.
    pub fn new(classes: usize, initial_step: f32, adaptation: Adaptation) -> Self {
        ClassSteps {
            classes: vec![StepAdaptation::new(initial_step, adaptation); classes],
        }
    }

    /// One warm-up iteration: each class observes its chains' log α (`class_of_chain[c]` is
    /// chain c's class), `pooled` all of them; `pooled`'s step becomes the classes' geometric
    /// mean. Does nothing once frozen.
    pub fn observe(
        &mut self,
        pooled: &mut StepAdaptation,
        log_alpha: &[f64],
        class_of_chain: &[u32],
    ) {
        if pooled.frozen() {
            return;
        }
        let mut per_class = vec![Vec::new(); self.classes.len()];
        for (&a, &k) in log_alpha.iter().zip(class_of_chain) {
            if let Some(alphas) = per_class.get_mut(k as usize) {
                alphas.push(a);
            }
        }
        for (class, alphas) in self.classes.iter_mut().zip(&per_class) {
            if alphas.is_empty() {
                // A class without chains here (a shard's) keeps count with the others.
                class.count += 1;
            } else {
                class.observe(alphas);
            }
        }
        pooled.observe(log_alpha);
        self.pool_into(pooled);
    }

    /// Freezes every class with `pooled` (an automatic burn-in ended the warm-up early): each at
    /// its averaged iterate.
    pub fn freeze(&mut self, pooled: &mut StepAdaptation) {
        for class in &mut self.classes {
            class.iterations = class.count;
        }
        self.pool_into(pooled);
    }

    /// `pooled`'s step (and its averaged iterate): the mean of the classes' logs.
    fn pool_into(&self, pooled: &mut StepAdaptation) {
        let k = self.classes.len().max(1) as f64;
        pooled.log_step = self.classes.iter().map(|c| c.log_step).sum::<f64>() / k;
        pooled.log_step_bar = self.classes.iter().map(|c| c.log_step_bar).sum::<f64>() / k;
    }

    /// Each chain's step size: its class's.
    pub fn chain_steps(&self, class_of_chain: &[u32]) -> Vec<f32> {
        class_of_chain
            .iter()
            .map(|&k| self.classes[k as usize].step())
            .collect()
    }
}

/// The mean over chains of min(1, exp(log α)), NaN (divergent) counting 0.
pub fn mean_acceptance(log_alpha: &[f64]) -> f64 {
    let sum: f64 = log_alpha
        .iter()
        .map(|&a| {
            if a.is_nan() {
                0.0
            } else {
                a.min(0.0).exp_portable()
            }
        })
        .sum();
    sum / log_alpha.len().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy kernel whose acceptance is exp(−ε): dual averaging must find ε = −ln(target).
    #[test]
    fn dual_averaging_finds_the_step_of_a_known_acceptance_curve() {
        let target = 0.574;
        let mut a = StepAdaptation::new(
            3.0,
            Adaptation {
                iterations: 500,
                target,
                chees: false,
                per_class: false,
            },
        );
        while !a.frozen() {
            let log_alpha = -(a.step() as f64);
            a.observe(&[log_alpha, log_alpha]);
        }
        let want = -target.ln_portable();
        assert!(
            (a.step() as f64 - want).abs() < 0.02 * want,
            "step {} want {want}",
            a.step()
        );
        let before = a;
        a.observe(&[0.0]);
        assert_eq!(a, before, "a frozen adaptation must not move");
    }

    /// Two classes whose acceptance curves are exp(−ε) and exp(−4ε): each class's dual
    /// averaging must find its own ε = −ln(target)/k, where one pooled step would fit neither.
    #[test]
    fn each_class_finds_its_own_step() {
        let target = 0.574;
        let adaptation = Adaptation {
            iterations: 600,
            target,
            chees: false,
            per_class: true,
        };
        let classes = [0u32, 1, 1, 0, 1];
        let mut steps = ClassSteps::new(2, 3.0, adaptation);
        let mut pooled = StepAdaptation::new(3.0, adaptation);
        let curvature = [1.0, 4.0];
        while !pooled.frozen() {
            let per_chain = steps.chain_steps(&classes);
            let log_alpha: Vec<f64> = classes
                .iter()
                .zip(&per_chain)
                .map(|(&k, &e)| -(e as f64) * curvature[k as usize])
                .collect();
            steps.observe(&mut pooled, &log_alpha, &classes);
        }
        for (k, class) in steps.classes.iter().enumerate() {
            let want = -target.ln_portable() / curvature[k];
            let got = class.step() as f64;
            assert!(
                (got - want).abs() < 0.02 * want,
                "class {k}: step {got}, want {want}"
            );
            assert!(class.frozen(), "class {k} must freeze with the run");
        }
        let mean = (steps.classes[0].log_step_bar + steps.classes[1].log_step_bar) / 2.0;
        assert!((pooled.step() as f64 - mean.exp_portable()).abs() < 1e-6 * mean.exp_portable());
        let before = steps.clone();
        steps.observe(&mut pooled, &[0.0; 5], &classes);
        assert_eq!(steps, before, "a frozen adaptation must not move");
    }

    #[test]
    fn halton_numbers_fill_the_unit_interval() {
        let h: Vec<f64> = (1..=4).map(halton).collect();
        assert_eq!(h, [0.5, 0.25, 0.75, 0.125]);
    }

    /// Standard normal chains in one dimension from x = 0: a longer trajectory moves z further
    /// (z = sin T·r), so ChEES's gradient is positive while T < π/2 and T grows.
    #[test]
    fn chees_lengthens_a_short_trajectory() {
        let mut t = TrajectoryAdaptation::new(1, 0.1);
        let chains = 64;
        for it in 1..=40u32 {
            let (u, length) = (halton(it), t.length());
            let r: Vec<f32> = (0..chains).map(|c| (c as f32 - 31.5) / 16.0).collect();
            let x: Vec<f32> = (0..chains)
                .map(|c| ((c * 7 % 64) as f32 - 31.5) / 64.0)
                .collect();
            let z: Vec<f32> = x
                .iter()
                .zip(&r)
                .map(|(x, r)| {
                    let a = (u * length) as f32;
                    x * a.cos_portable() + r * a.sin_portable()
                })
                .collect();
            let r_end: Vec<f32> = x
                .iter()
                .zip(&r)
                .map(|(x, r)| {
                    let a = (u * length) as f32;
                    -x * a.sin_portable() + r * a.cos_portable()
                })
                .collect();
            t.observe(&x, &z, &r_end, &vec![0.0; chains], u, 1, 0.1);
        }
        assert!(
            t.length() > 0.25 && t.log_length > t.log_length_bar,
            "{t:?}"
        );
    }

    #[test]
    fn divergent_proposals_count_as_rejections() {
        assert_eq!(mean_acceptance(&[f64::NAN, 0.0]), 0.5);
        assert!((mean_acceptance(&[(0.25f64).ln_portable()]) - 0.25).abs() < 1e-12);
    }
}
