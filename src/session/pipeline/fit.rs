//! The settings fitted to the data before a run: the minibatch and the tangent target's k to the smallest class, η, σ², the smoothing and the tangent target to the data's scales.

use std::time::Instant;

use serde_json::{json, Value};

use crate::io::Dataset;
use crate::model::data_scale::{self, DataScale};
use crate::model::TargetKind;
use crate::session::settings::{AugmentMethod, AugmentSettings, PIXELS_PER_TANGENT_DIRECTION};

/// What fitting changed: each setting's (asked, used).
#[derive(Default)]
pub(crate) struct Fitted {
    /// The minibatch, lowered to the smallest class.
    pub batch: Option<(u32, u32)>,
    /// The tangent target's k, lowered to the smallest class.
    pub tangent_k: Option<(u32, u32)>,
    /// The data's scales and what they changed.
    pub scale: Option<ScaleFitted>,
}

/// `args` fitted to `dataset` (with `labels`), and what changed: where allowed, the minibatch
/// lowered to the smallest chosen class, the tangent target's k lowered so that it holds k + 1
/// images (the anchor and its k neighbours), then the scales (`fit_scale`).
pub(crate) fn fit(
    args: &AugmentSettings,
    dataset: &Dataset,
    labels: &[u32],
) -> (AugmentSettings, Fitted) {
    let mut fitted = args.clone();
    let smallest = smallest_class(args.classes.as_deref(), labels);
    let asked = args.dynamics.batch;
    let batch = match smallest {
        Some(n) if args.fit_batch_to_classes && n > 0 && (n as u64) < asked as u64 => {
            fitted.dynamics.batch = n as u32;
            Some((asked, n as u32))
        }
        _ => None,
    };
    let asked = args.problem.tangent_k;
    let tangent = args.fit_tangent_k_to_classes && args.problem.target == TargetKind::Tangent;
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

/// Images in the smallest of the `chosen` classes (all without).
fn smallest_class(chosen: Option<&[u32]>, labels: &[u32]) -> Option<usize> {
    let mut counts = std::collections::BTreeMap::<u32, usize>::new();
    for &label in labels {
        *counts.entry(label).or_default() += 1;
    }
    match chosen {
        Some(chosen) => chosen.iter().filter_map(|c| counts.get(c)).min().copied(),
        None => counts.values().min().copied(),
    }
}

impl Fitted {
    /// Adds what was fitted to `report`.
    pub fn report(&self, report: &mut Value) {
        if let Some(fit) = &self.scale {
            report["scale_fitted_to_data"] = fit.json();
        }
        let pair = |(asked, used): (u32, u32)| json!({ "asked": asked, "used": used });
        if let Some(k) = self.tangent_k {
            report["tangent_k_fitted_to_classes"] = pair(k);
        }
        if let Some(batch) = self.batch {
            report["batch_fitted_to_classes"] = pair(batch);
        }
    }

    /// The notes on the minibatch and the tangent target's k, for the summary.
    pub fn class_notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some((asked, used)) = self.tangent_k {
            notes.push(format!(
                "note: the tangent target's k was lowered from {asked} to {used}: the smallest \
                 class has {} images, the anchor and its k neighbours",
                used + 1
            ));
        }
        if let Some((asked, used)) = self.batch {
            notes.push(format!(
                "note: the minibatch was lowered from {asked} to {used}, the size of the \
                 smallest class"
            ));
        }
        notes
    }
}

/// What `fit_scale` changed: the data's scales and each rescaled setting's (asked, used).
pub(crate) struct ScaleFitted {
    scale: DataScale,
    /// Seconds spent measuring the data's scales.
    seconds: f64,
    eta: Option<(f32, f32)>,
    sigma2: Option<(f32, f32)>,
    smooth: Option<(f32, f32)>,
    tangent_scale: Option<(f32, f32)>,
    /// The tangent target's k (asked, used) when the image size lowered it.
    tangent_k: Option<(u32, u32)>,
}

impl ScaleFitted {
    fn json(&self) -> Value {
        let pair =
            |p: Option<(f32, f32)>| p.map(|(asked, used)| json!({ "asked": asked, "used": used }));
        json!({
            "median_class_nn_distance": self.scale.nn_distance,
            "reference_nn_distance": data_scale::REFERENCE_NN_DISTANCE,
            "nn_images_per_class": data_scale::NN_PER_CLASS,
            "image_side": self.scale.side,
            "reference_side": data_scale::REFERENCE_SIDE,
            "eta": pair(self.eta),
            "sigma2": pair(self.sigma2),
            "smooth": pair(self.smooth),
            "class_margin": self.scale.class_margin,
            "reference_class_margin": data_scale::REFERENCE_CLASS_MARGIN,
            "tangent_scale": pair(self.tangent_scale),
            "tangent_k": self.tangent_k.map(|(asked, used)| json!({ "asked": asked, "used": used })),
            "pixels_per_tangent_direction": PIXELS_PER_TANGENT_DIRECTION,
            "seconds": self.seconds,
        })
    }

    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        let mut push = |name: &str, p: Option<(f32, f32)>| {
            if let Some((asked, used)) = p {
                parts.push(format!("{name} {asked} → {used:.3e}"));
            }
        };
        push("η", self.eta);
        push("σ²", self.sigma2);
        push("smoothing (px)", self.smooth);
        push("tangent scale", self.tangent_scale);
        if let Some((asked, used)) = self.tangent_k {
            parts.push(format!(
                "tangent k {asked} → {used} (one direction per {} pixels)",
                PIXELS_PER_TANGENT_DIRECTION
            ));
        }
        let margin = self.scale.class_margin.map_or(String::new(), |m| {
            format!(
                "; class margin {m:.3}, MNIST's {}",
                data_scale::REFERENCE_CLASS_MARGIN
            )
        });
        format!(
            "note: scaled to the data (median same-class nearest-neighbour distance {:.3}, MNIST's \
             {}{margin}; image side {:.0} px): {}",
            self.scale.nn_distance,
            data_scale::REFERENCE_NN_DISTANCE,
            self.scale.side,
            parts.join(", ")
        )
    }
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
    let chains = !matches!(
        args.method,
        AugmentMethod::Compression | AugmentMethod::KernelHmc
    );
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
    if fit.tangent_scale && args.problem.target == TargetKind::Tangent {
        // Never below 1: the neighbours' own spread (the tangent target's unscaled span).
        let asked = args.problem.tangent_scale;
        let used = ((asked as f64 * scale.tangent_ratio()) as f32).max(asked.min(1.0));
        if used != asked {
            fitted.problem.tangent_scale = used;
            changed.tangent_scale = Some((asked, used));
        }
    }
    if fit.tangent_k && args.problem.target == TargetKind::Tangent {
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
