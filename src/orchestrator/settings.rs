//! The sampler's settings: a plain struct with documented fields, defaults and validation.

use serde::{Deserialize, Serialize};

use crate::measure::memory;
use crate::methods::{DynamicsSettings, Method};
use crate::{Error, Result};

/// How chains start (equation 10 of the paper, or white noise).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Init {
    /// X^0 ~ N(0, I).
    Noise,
    /// X^0 = the LASSO code of a data point drawn at random.
    Lasso,
    /// X^0 = a data point drawn at random, itself (pixel-space samplers, where p = d).
    #[cfg_attr(feature = "cli", value(skip))]
    Data,
}

/// Everything `run` needs besides the target and the backend.
#[derive(Clone, Debug, Serialize)]
pub struct SamplerSettings {
    /// Number of chains C.
    pub chains: usize,
    /// Outer iterations K (one sample per chain each).
    pub samples: u32,
    /// Step size, steps, minibatch, noise and seed.
    pub dynamics: DynamicsSettings,
    /// Metropolis-Hastings on (false accepts every proposal).
    pub mh: bool,
    /// The MH discount (1 = SpHMC).
    pub discount: f32,
    /// How chains start.
    pub init: Init,
    /// FISTA iterations for LASSO starts.
    pub lasso_iterations: u32,
    /// Warm-up step-size adaptation across chains (`adapt::StepAdaptation`); None runs the
    /// given step size throughout.
    pub adapt: Option<super::adapt::Adaptation>,
    /// An automatic burn-in (`burn_in::BurnInMonitor`): the warm-up ends where the adapted
    /// quantities settle and the chains stop drifting, at most at its cap; `adapt`'s iterations
    /// must then equal the cap. None: the burn-in, if any, is `adapt`'s fixed count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_burn_in: Option<super::burn_in::AutoBurnIn>,
}

fn positive(field: &'static str, value: f64) -> Result<()> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(Error::usage(
            field,
            format!("must be a positive number, got {value}"),
        ))
    }
}

impl SamplerSettings {
    /// Refuses, before anything is allocated, steps and minibatches whose host buffers cannot
    /// fit: the outer iteration's program holds one operation per momentum or leapfrog step,
    /// and each thread the minibatch's row indices (the chains' own buffers are the sampler
    /// footprint's). A failed allocation would abort the process (`steps` or `batch` of
    /// 2^32 − 1 did).
    fn check_step_sizes_fit(&self) -> Result<()> {
        let per_step = (2 * std::mem::size_of::<crate::methods::ops::ChainOp>()) as f64;
        let leapfrog = self.dynamics.method.runs_trajectory();
        for (setting, steps, used) in [
            ("steps", self.dynamics.steps, true),
            ("leapfrog_steps", self.dynamics.leapfrog_steps, leapfrog),
        ] {
            if used {
                let what = format!("the outer iteration's program of {steps} steps");
                memory::check_fits(setting, &what, steps as f64 * per_step)?;
            }
        }
        let holders = rayon::current_num_threads() as f64;
        let batch = self.dynamics.batch as f64;
        memory::check_fits(
            "batch",
            &format!("minibatch indices of {batch} rows"),
            batch * 4.0 * holders,
        )
    }

    /// Checks every setting before anything is dispatched.
    pub fn validate(&self) -> Result<()> {
        positive("eta", self.dynamics.eta as f64)?;
        positive("steps", self.dynamics.steps as f64)?;
        positive("batch", self.dynamics.batch as f64)?;
        positive("chains", self.chains as f64)?;
        positive("samples", self.samples as f64)?;
        positive("discount", self.discount as f64)?;
        if self.dynamics.method.runs_trajectory() {
            positive("leapfrog_steps", self.dynamics.leapfrog_steps as f64)?;
        }
        if self.chains > u32::MAX as usize {
            return Err(Error::usage("chains", "at most 4294967295 chains"));
        }
        self.check_step_sizes_fit()?;
        if self.init == Init::Lasso && self.lasso_iterations == 0 {
            return Err(Error::usage(
                "lasso_iterations",
                "must be at least 1 with `init` lasso",
            ));
        }
        if let Some(a) = self.adapt {
            if a.iterations >= self.samples {
                return Err(Error::usage(
                    "burn_in",
                    format!(
                        "the step size adapts during the burn-in, which must be shorter than the \
                         {} samples, got {}",
                        self.samples, a.iterations
                    ),
                ));
            }
            if self.auto_burn_in.is_some_and(|b| b.cap != a.iterations) {
                return Err(Error::usage(
                    "burn_in",
                    format!(
                        "an automatic burn-in adapts up to its cap {}, the adaptation's \
                         iterations are {}",
                        self.auto_burn_in.map_or(0, |b| b.cap),
                        a.iterations
                    ),
                ));
            }
            if !(a.target > 0.0 && a.target < 1.0) {
                return Err(Error::usage(
                    "adapt",
                    format!("target acceptance must be in (0, 1), got {}", a.target),
                ));
            }
        }
        if let Some(b) = self.auto_burn_in {
            if b.cap == 0 || b.cap >= self.samples {
                return Err(Error::usage(
                    "burn_in",
                    format!(
                        "an automatic burn-in's cap must be at least 1 and below the {} samples, \
                         got {}",
                        self.samples, b.cap
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Which outer iterations' samples are written (after `burn_in` discarded iterations).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeepPolicy {
    /// Every sample after the burn-in.
    All,
    /// Only the last sample (iteration K).
    Last,
    /// Every N-th sample after the burn-in.
    Every(u32),
}

impl std::str::FromStr for KeepPolicy {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        let text = text.trim().to_ascii_lowercase();
        match text.as_str() {
            "all" => Ok(KeepPolicy::All),
            "last" => Ok(KeepPolicy::Last),
            _ => {
                let n = text
                    .strip_prefix("every")
                    .map(|rest| rest.trim_start_matches([':', '=', ' ']))
                    .and_then(|n| n.parse::<u32>().ok())
                    .filter(|&n| n > 0);
                n.map(KeepPolicy::Every)
                    .ok_or_else(|| format!("expected all, last or every:N (N ≥ 1), got {text:?}"))
            }
        }
    }
}

/// As `from_str` reads it: `all`, `last`, `every:N`.
impl std::fmt::Display for KeepPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeepPolicy::All => write!(f, "all"),
            KeepPolicy::Last => write!(f, "last"),
            KeepPolicy::Every(n) => write!(f, "every:{n}"),
        }
    }
}

impl KeepPolicy {
    /// Whether outer iteration `outer` (1-based) of a run of `samples` is kept.
    pub fn keeps(self, outer: u32, burn_in: u32, samples: u32) -> bool {
        match self {
            KeepPolicy::All => outer > burn_in,
            KeepPolicy::Last => outer == samples,
            KeepPolicy::Every(n) => outer > burn_in && (outer - burn_in).is_multiple_of(n),
        }
    }

    /// How many of the iterations 1..=outer are kept.
    pub fn kept_up_to(self, outer: u32, burn_in: u32, samples: u32) -> usize {
        match self {
            KeepPolicy::All => outer.saturating_sub(burn_in) as usize,
            KeepPolicy::Last => usize::from(outer >= samples),
            KeepPolicy::Every(n) => (outer.saturating_sub(burn_in) / n) as usize,
        }
    }
}

/// The momentum dynamics and the MH correction, shared by sampling and augmentation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DynamicsOptions {
    /// T, momentum steps per outer iteration (Algorithm 1, line 8).
    pub steps: u32,
    /// m, minibatch size of the gradient estimate (Algorithm 2), drawn per chain and step.
    pub batch: u32,
    /// L, leapfrog steps per proposal of HMC.
    pub leapfrog_steps: u32,
    /// η, the step size (and friction) of the momentum dynamics; MALA's step h, HMC's leapfrog step.
    pub eta: f32,
    /// The MH discount (Algorithm 3): accept iff α > discount·u. 1 is SpHMC; >1 accepts less.
    pub discount: f32,
    /// Accept every proposal (the paper's "RMLD w/o MH").
    pub no_mh: bool,
    /// Inject SGHMC noise sqrt(2·η)·ξ into the momentum at every step (equation 2).
    pub sghmc_noise: bool,
    /// FISTA iterations of LASSO encodings (LASSO starts, re-encoding, the originals' codes).
    pub lasso_iterations: u32,
}

impl Default for DynamicsOptions {
    fn default() -> Self {
        DynamicsOptions {
            steps: 20,
            batch: 64,
            leapfrog_steps: 10,
            eta: 0.01,
            discount: 1.0,
            no_mh: false,
            sghmc_noise: false,
            lasso_iterations: 200,
        }
    }
}

impl DynamicsOptions {
    /// The backends' dynamics settings for `method` and `seed`.
    pub fn settings(&self, method: Method, seed: u64) -> DynamicsSettings {
        DynamicsSettings {
            method,
            leapfrog_steps: self.leapfrog_steps,
            eta: self.eta,
            steps: self.steps,
            batch: self.batch,
            sghmc_noise: self.sghmc_noise,
            seed,
            chain_offset: 0,
        }
    }

    /// The orchestrator's settings for `chains` chains, `samples` outer iterations, `method`,
    /// `init` and `seed`, validated.
    pub fn sampler(
        &self,
        chains: usize,
        samples: u32,
        method: Method,
        init: Init,
        seed: u64,
    ) -> Result<SamplerSettings> {
        let settings = SamplerSettings {
            chains,
            samples,
            dynamics: self.settings(method, seed),
            mh: !self.no_mh,
            discount: self.discount,
            init,
            lasso_iterations: self.lasso_iterations,
            adapt: None,
            auto_burn_in: None,
        };
        settings.validate()?;
        Ok(settings)
    }
}

/// `AugmentSettings::lasso_tolerance`'s default: a relative duality gap of 5e-3, which the
/// CPU's ADMM encoder reaches on MNIST in about 50 iterations against FISTA's 200, with an
/// objective level with FISTA's (whose own gaps there are 0.7% to 1.7%); docs/benchmarks.md,
/// "LASSO by ADMM". 0 brings back FISTA's fixed iterations and the codes of earlier runs.
pub fn lasso_tolerance_default() -> f32 {
    5e-3
}

/// Refuses a `lasso_tolerance` outside [0, 1).
pub(crate) fn check_lasso_tolerance(tolerance: f32) -> Result<()> {
    if tolerance.is_finite() && (0.0..1.0).contains(&tolerance) {
        return Ok(());
    }
    Err(Error::usage(
        "lasso_tolerance",
        format!(
            "must be at least 0 and below 1 (a relative duality gap; 0 runs every iteration), \
             got {tolerance}"
        ),
    ))
}
