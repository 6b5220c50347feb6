//! `rmld sample`'s arguments.

use clap::Args;

use rmld::methods::Method;
use rmld::orchestrator::{Init, KeepPolicy};
use rmld::session::SampleSettings;

use super::common::{parse_burn_in, BurnInArg, DynamicsArgs, ProblemArgs};

/// The library's defaults, which the options below show and fill in.
fn sample() -> SampleSettings {
    SampleSettings::default()
}

#[derive(Args, Debug, Clone)]
pub struct SampleArgs {
    #[command(flatten)]
    pub problem: ProblemArgs,

    /// Number of chains C, run together.
    #[arg(long, value_name = "C", default_value_t = sample().chains)]
    pub chains: usize,

    /// K, outer iterations: samples per chain (Algorithm 1, line 4).
    #[arg(long, value_name = "K", default_value_t = sample().samples)]
    pub samples: u32,

    /// The proposal: rmld (the paper's Algorithms 1 and 3), or an exact method with the
    /// full-data gradient: mala (Langevin step h = eta) or hmc (L leapfrog steps of size eta).
    #[arg(long, value_enum, default_value_t = sample().method)]
    pub method: Method,

    /// Start each chain at white noise N(0, I), or at the LASSO code of a random data point (eq. 10).
    #[arg(long, value_enum, default_value_t = sample().init)]
    pub init: Init,

    #[command(flatten)]
    pub dynamics: DynamicsArgs,

    /// Which samples are written: all, last, or every:N (after the burn-in). Samples are
    /// streamed to disk as they come, so memory does not grow with K.
    #[arg(long, value_name = "POLICY", default_value_t = sample().keep, value_parser = parse_keep)]
    pub keep: KeepPolicy,

    /// Outer iterations discarded before any sample is kept: a count B, or `auto` (or
    /// `auto:CAP`) to end the warm-up where the adapted step size (and HMC's trajectory length)
    /// and the chains' traced statistics settle, checked every ⌈CAP/20⌉ (at least 10)
    /// iterations, at most after CAP (default: half the samples); the report and summary say
    /// where it ended and whether it settled (docs/adaptation.md). Default: `auto` for
    /// `--method mala` and `hmc` (their step size adapts during it; a shard starts from the
    /// run's --warm-up), 0 for rmld, with `--no-adapt` or an adapting `--prior ssgl`.
    #[arg(long, value_name = "B|auto[:CAP]", value_parser = parse_burn_in)]
    pub burn_in: Option<BurnInArg>,

    /// Write a checkpoint (checkpoint.rmld in --out) every N outer iterations; 0: only when
    /// interrupted (and on --checkpoint-minutes' timer). `rmld resume DIR` continues from it.
    #[arg(long, value_name = "N", default_value_t = sample().checkpoint_every)]
    pub checkpoint_every: u32,

    /// Also write a checkpoint once M minutes have passed since the last (0: never), so that a
    /// run killed without warning (kill -9, out of memory, a power cut) can be resumed from it;
    /// a run that completes without --checkpoint-every removes it.
    #[arg(long, value_name = "M", default_value_t = sample().checkpoint_minutes)]
    pub checkpoint_minutes: f64,

    /// Keep --eta as given. By default, --method mala and hmc adapt their step size during the
    /// burn-in (dual averaging across all chains toward mean acceptance 0.574 for MALA, 0.8 for
    /// HMC), then freeze it for the kept draws; with --burn-in 0 nothing adapts.
    #[arg(long)]
    pub no_adapt: bool,
}

fn parse_keep(text: &str) -> Result<KeepPolicy, String> {
    text.parse()
}

impl SampleArgs {
    /// The library's settings.
    pub fn settings(&self) -> SampleSettings {
        let settings = SampleSettings {
            problem: self.problem.settings(),
            chains: self.chains,
            samples: self.samples,
            method: self.method,
            init: self.init,
            dynamics: self.dynamics.options(),
            keep: self.keep,
            burn_in: self.burn_in.map_or(0, |b| b.count),
            auto_burn_in: self.burn_in.is_some_and(|b| b.auto),
            checkpoint_every: self.checkpoint_every,
            checkpoint_minutes: self.checkpoint_minutes,
            no_adapt: self.no_adapt,
        };
        match self.burn_in {
            Some(_) => settings,
            None => settings.with_default_warm_up(),
        }
    }
}
