//! What fitting the settings to the data changed: each fitted setting's (asked, used), the data's scales, for the report and the summary.

use serde_json::{json, Value};

use super::data_scale::{self, DataScale, PIXELS_PER_TANGENT_DIRECTION};

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

/// Images in the smallest of the `chosen` classes (all without).
pub(crate) fn smallest_class(chosen: Option<&[u32]>, labels: &[u32]) -> Option<usize> {
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
    pub(crate) scale: DataScale,
    /// Seconds spent measuring the data's scales.
    pub(crate) seconds: f64,
    pub(crate) eta: Option<(f32, f32)>,
    pub(crate) sigma2: Option<(f32, f32)>,
    pub(crate) smooth: Option<(f32, f32)>,
    pub(crate) tangent_scale: Option<(f32, f32)>,
    /// The tangent target's k (asked, used) when the image size lowered it.
    pub(crate) tangent_k: Option<(u32, u32)>,
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
