//! The sampler settings of an augmentation: one chain per `samples` generated images of a class, its warm-up (fixed or automatic) and the per-class adaptation.

use crate::methods::{AugmentMethod, Method};
use crate::orchestrator::{self, Adaptation, AugmentPlan, Init, SamplerSettings};
use crate::session::settings::{AugmentSettings, SamplerChoice};
use crate::{Error, Result};

/// The sampler settings of `args` for `plan`'s chains (the whole run's).
pub(crate) fn sampler_settings(
    args: &AugmentSettings,
    plan: &AugmentPlan,
) -> Result<SamplerSettings> {
    let method = args.method.dynamics();
    refuse_amortized_without_chains(args)?;
    // Checked whatever the method, so that a setting refused for one method is refused for
    // all (a method without chains ignores both).
    if args.samples == 0 {
        return Err(Error::usage("samples", "must be at least 1"));
    }
    let outer = args
        .burn_in_cap()
        .checked_add(args.samples)
        .ok_or_else(|| {
            Error::usage(
                "burn_in/samples",
                format!(
                    "the burn-in ({}) plus the samples ({}) pass 4294967295 outer iterations",
                    args.burn_in_cap(),
                    args.samples
                ),
            )
        })?;
    let samples = match args.method.moves() {
        false => 1,
        true => outer,
    };
    if plan.chains() > u32::MAX as usize {
        let setting = args.count_setting();
        // A ratio is originals per generated image: fewer images are a larger one.
        let fewer = match setting {
            "ratio" => "raise `ratio` (originals per new image)",
            _ => "lower the counts in `balance`",
        };
        // Each chain of a moving method makes `samples` images; Deform and Compression one.
        let longer = match args.method.moves() {
            true => ", or raise `samples`",
            false => "",
        };
        return Err(Error::usage(
            setting,
            format!(
                "{} generated samples need {} chains, more than the 4294967295 a run can hold: \
                 {fewer}{longer}",
                plan.generated(),
                plan.chains()
            ),
        ));
    }
    refuse_warm_up_without_chains(args)?;
    let settings = SamplerSettings {
        chains: plan.chains(),
        samples,
        dynamics: args.dynamics.settings(method, args.problem.seed),
        mh: !args.dynamics.no_mh,
        discount: args.dynamics.discount,
        init: if args.method.samples_images() {
            Init::Data
        } else {
            Init::Lasso
        },
        lasso_iterations: args.dynamics.lasso_iterations,
        adapt: class_adaptation(args, method)?,
        auto_burn_in: automatic_burn_in(args)?,
    };
    settings.validate()?;
    Ok(settings)
}

/// `args.adapt`'s warm-up: each class's step size (and with HMC the trajectory length) adapted
/// over the burn-in; None when it is off.
fn class_adaptation(args: &AugmentSettings, method: Method) -> Result<Option<Adaptation>> {
    if !args.adapt {
        return Ok(None);
    }
    let adapts = args.method.method().and_then(Method::target_acceptance);
    if adapts.is_none() || args.dynamics.no_mh {
        return Err(Error::usage(
            "adapt",
            "adapts the step size of method mala or hmc with their MH test on; this run has none \
             to adapt (give method mala or hmc, or leave adapt off)",
        ));
    }
    if args.burn_in_cap() == 0 {
        return Err(Error::usage(
            "adapt",
            "adapts during the burn-in, and burn_in is 0: give a burn-in (e.g. 50, or auto)",
        ));
    }
    if args.sampler.is_amortized() {
        return Err(Error::usage(
            "adapt",
            "tunes the MCMC chains' step sizes, and the amortized sampler runs none: leave adapt \
             off with sampler amortized",
        ));
    }
    if let (Some(shard), None) = (args.problem.shard, &args.problem.warm_up) {
        let why = args.coupled_warm_up().unwrap_or_default();
        return Err(shard.needs_warm_up(why, "leave `adapt` off"));
    }
    Ok(
        Adaptation::for_method(method, args.burn_in_cap()).map(|a| Adaptation {
            per_class: true,
            ..a
        }),
    )
}

/// `args.auto_burn_in`'s monitor (up to `burn_in_cap`); None for a fixed burn-in. A shard would
/// end its warm-up on its own chains, and Compression runs no chains: both refuse it.
fn automatic_burn_in(args: &AugmentSettings) -> Result<Option<orchestrator::AutoBurnIn>> {
    if !args.auto_burn_in {
        return Ok(None);
    }
    if !args.method.moves() {
        return Err(Error::usage(
            "burn_in",
            format!(
                "method {} runs no chains to warm up: give a count, not auto",
                args.method.name()
            ),
        ));
    }
    if let (Some(shard), None) = (args.problem.shard, &args.problem.warm_up) {
        let why = args.coupled_warm_up().unwrap_or_default();
        return Err(shard.needs_warm_up(why, "give a fixed burn-in"));
    }
    Ok(Some(orchestrator::AutoBurnIn {
        cap: args.burn_in_cap(),
    }))
}

/// A warm-up (`warm_up_only`, `warm_up`) is the chains' burn-in: Compression, Deform and the
/// amortized sampler run no chains.
fn refuse_warm_up_without_chains(args: &AugmentSettings) -> Result<()> {
    let field = match (args.problem.warm_up_only, &args.problem.warm_up) {
        (true, _) => "warm_up_only",
        (false, Some(_)) => "warm_up",
        (false, None) => return Ok(()),
    };
    let message = match (args.method.moves(), args.sampler) {
        (false, _) => format!(
            "method {} runs no chains to warm up: its shards run without a warm-up",
            args.method.name()
        ),
        // Its runs are not split either (`shard` is refused with it).
        (true, SamplerChoice::Amortized) => {
            "the amortized sampler runs no chains to warm up, and its runs are not split into \
             shards: leave it out"
                .to_string()
        }
        (true, SamplerChoice::Mcmc) => return Ok(()),
    };
    Err(Error::usage(field, message))
}

/// A method that draws images directly (deform) has no chains for the amortized sampler, which
/// generates codes, to stand in for.
fn refuse_amortized_without_chains(args: &AugmentSettings) -> Result<()> {
    match (args.method, args.sampler) {
        (AugmentMethod::Deform, SamplerChoice::Amortized) => Err(Error::usage(
            "sampler",
            "method deform draws its images directly; the amortized sampler generates codes",
        )),
        _ => Ok(()),
    }
}
