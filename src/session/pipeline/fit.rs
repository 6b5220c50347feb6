//! The settings fitted to the data before a run: the minibatch and the tangent target's k to the smallest class, η, σ², the smoothing and the tangent target to the data's scales.

use std::time::Instant;

use crate::io::Dataset;
use crate::model::data_scale::DataScale;
use crate::model::fit::smallest_class;
pub(crate) use crate::model::fit::{Fitted, ScaleFitted};
use crate::session::settings::{AugmentSettings, PIXELS_PER_TANGENT_DIRECTION};

/// `args` fitted to `dataset` (with `labels`), and what changed: where allowed and the method's
/// chains move, the minibatch lowered to the smallest chosen class, the tangent target's k
/// lowered so that it holds k + 1 images (the anchor and its k neighbours), then the scales
/// (`fit_scale`).
pub(crate) fn fit(
    args: &AugmentSettings,
    dataset: &Dataset,
    labels: &[u32],
) -> (AugmentSettings, Fitted) {
    let mut fitted = args.clone();
    // Compression and deform run no dynamics: neither a minibatch nor a target's k to fit.
    let smallest = smallest_class(args.classes.as_deref(), labels).filter(|_| args.method.moves());
    let asked = args.dynamics.batch;
    let batch = match smallest {
        Some(n) if args.fit_batch_to_classes && n > 0 && (n as u64) < asked as u64 => {
            fitted.dynamics.batch = n as u32;
            Some((asked, n as u32))
        }
        _ => None,
    };
    let asked = args.problem.tangent_k;
    let tangent = args.fit_tangent_k_to_classes && args.problem.target.has_tangent_span();
    let tangent_k = match smallest {
        Some(n) if tangent && n >= 2 && n as u64 <= asked as u64 => {
            fitted.problem.tangent_k = (n - 1) as u32;
            Some((asked, (n - 1) as u32))
        }
        _ => None,
    };
    let (fitted, scale) = fit_scale(&fitted, dataset, labels);
    let fits = Fitted {
        batch,
        tangent_k,
        scale,
    };
    (fitted, fits)
}

/// `args` with η, σ² and the smoothing rescaled to the data's length scales where
/// `fit_scale_to_data` asks for it (chain-based methods only), and what changed.
fn fit_scale(
    args: &AugmentSettings,
    dataset: &Dataset,
    labels: &[u32],
) -> (AugmentSettings, Option<ScaleFitted>) {
    let mut fitted = args.clone();
    let fit = args.fit_scale_to_data;
    let chains = args.method.method().is_some();
    if !fit.any() || !chains {
        return (fitted, None);
    }
    let started = Instant::now();
    let Some(scale) = DataScale::of(dataset, labels, args.classes.as_deref()) else {
        return (fitted, None);
    };
    let length = scale.length_ratio();
    let mut changed = ScaleFitted {
        scale,
        seconds: started.elapsed().as_secs_f64(),
        eta: None,
        sigma2: None,
        smooth: None,
        tangent_scale: None,
        tangent_k: None,
    };
    if fit.eta {
        let used = (args.dynamics.eta as f64 * length) as f32;
        fitted.dynamics.eta = used;
        changed.eta = Some((args.dynamics.eta, used));
    }
    if fit.sigma2 {
        let used = (args.problem.sigma2 as f64 * length * length) as f32;
        fitted.problem.sigma2 = used;
        changed.sigma2 = Some((args.problem.sigma2, used));
    }
    if fit.smooth && args.smooth > 0.0 {
        let used = (args.smooth as f64 * scale.side_ratio()) as f32;
        fitted.smooth = used;
        changed.smooth = Some((args.smooth, used));
    }
    if fit.tangent_scale && args.problem.target.has_tangent_span() {
        // Never below 1: the neighbours' own spread (the tangent target's unscaled span).
        let asked = args.problem.tangent_scale;
        let used = ((asked as f64 * scale.tangent_ratio()) as f32).max(asked.min(1.0));
        if used != asked {
            fitted.problem.tangent_scale = used;
            changed.tangent_scale = Some((asked, used));
        }
    }
    if fit.tangent_k && args.problem.target.has_tangent_span() {
        let pixels = dataset.height * dataset.width;
        let most = (pixels / PIXELS_PER_TANGENT_DIRECTION).max(1) as u32;
        let asked = fitted.problem.tangent_k;
        if asked > most {
            fitted.problem.tangent_k = most;
            changed.tangent_k = Some((asked, most));
        }
    }
    (fitted, Some(changed))
}
