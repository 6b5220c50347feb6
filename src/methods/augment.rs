//! What generates an augmentation's new samples: the chains of a method, or one of the paper's two baselines; and whether a learned sampler stands in for the chains.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Method;

/// What generates the new samples of an augmentation (`--method`): the chains of any method in
/// [`Method`], or one of the paper's baselines. Each method is listed once, in `Method`; the
/// questions below are `match`es, so a new baseline does not compile until it answers each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AugmentMethod {
    /// The chains of a method on the class's posterior: RMLD (with `no_mh` the paper's "RMLD w/o
    /// MH"), or MALA or HMC with the class's full-data gradient (exact for the class posterior).
    Chains(Method),
    /// The paper's "Compression": the LASSO code of a random image of the class, decoded with A.
    Compression,
    /// The paper's "Kernel HMC": chains over images (0..1 pixel scale, whatever `pixel_max`) on
    /// a Gaussian kernel density of the class (bandwidth by the median heuristic), with RMLD's
    /// momentum dynamics and MH; no codes.
    KernelHmc,
    /// Exact draws along each image's transformation tangents (rotation, scale, shears,
    /// thickness; anchors moved by one whole pixel on images of 28 px or more), one per image
    /// in turn (docs/usefulness.md, "The Rust implementation"); past four new images per
    /// original, half the rest are interpolants between a class's neighbouring images; no
    /// chains, and the codes are the generated images' LASSO codes (`reencode`; none written
    /// without it).
    Deform,
}

impl Default for AugmentMethod {
    fn default() -> Self {
        AugmentMethod::Chains(Method::default())
    }
}

impl AugmentMethod {
    /// The baselines, after the methods in the lists of names.
    const BASELINES: [AugmentMethod; 3] = [
        AugmentMethod::Compression,
        AugmentMethod::KernelHmc,
        AugmentMethod::Deform,
    ];

    /// Every one: each method's chains, then the baselines (the command line's order).
    pub fn all() -> impl Iterator<Item = AugmentMethod> {
        Method::ALL
            .into_iter()
            .map(AugmentMethod::Chains)
            .chain(Self::BASELINES)
    }

    /// The name a user types (`--method`) and reads in settings and summaries.
    pub fn name(self) -> &'static str {
        match self {
            AugmentMethod::Chains(method) => method.name(),
            AugmentMethod::Compression => "compression",
            AugmentMethod::KernelHmc => "kernel-hmc",
            AugmentMethod::Deform => "deform",
        }
    }

    /// The one named `name`.
    pub fn named(name: &str) -> Option<AugmentMethod> {
        Self::all().find(|m| m.name() == name)
    }

    /// The dynamics its chains run: the method's own; Kernel HMC runs RMLD's over images;
    /// Compression runs none (its chains' settings are RMLD's, for their LASSO starts).
    pub fn dynamics(self) -> Method {
        match self {
            AugmentMethod::Chains(method) => method,
            AugmentMethod::Compression | AugmentMethod::KernelHmc | AugmentMethod::Deform => {
                Method::Rmld
            }
        }
    }

    /// The method whose chains it runs on the codes' posterior (None for the baselines).
    pub fn method(self) -> Option<Method> {
        match self {
            AugmentMethod::Chains(method) => Some(method),
            AugmentMethod::Compression | AugmentMethod::KernelHmc | AugmentMethod::Deform => None,
        }
    }

    /// Whether its chains move from their starts: false for Compression, whose samples are
    /// the starts themselves, and Deform, one exact draw per image (one per chain, no burn-in,
    /// no MH).
    pub fn moves(self) -> bool {
        match self {
            AugmentMethod::Chains(_) | AugmentMethod::KernelHmc => true,
            AugmentMethod::Compression | AugmentMethod::Deform => false,
        }
    }

    /// Whether its chains are images rather than codes (Kernel HMC: no dictionary, no codes to
    /// write, replace or learn from; the 0..1 pixel scale; chains start at the class's images).
    pub fn samples_images(self) -> bool {
        match self {
            AugmentMethod::Chains(_) | AugmentMethod::Compression | AugmentMethod::Deform => false,
            AugmentMethod::KernelHmc => true,
        }
    }
}

impl Serialize for AugmentMethod {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for AugmentMethod {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        AugmentMethod::named(&name).ok_or_else(|| {
            let names: Vec<&str> = AugmentMethod::all().map(AugmentMethod::name).collect();
            serde::de::Error::custom(format!(
                "unknown method {name:?}; expected one of {}",
                names.join(", ")
            ))
        })
    }
}

#[cfg(feature = "cli")]
impl clap::ValueEnum for AugmentMethod {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: std::sync::OnceLock<Vec<AugmentMethod>> = std::sync::OnceLock::new();
        ALL.get_or_init(|| AugmentMethod::all().collect())
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        use clap::builder::PossibleValue;
        match self {
            AugmentMethod::Chains(method) => method.to_possible_value(),
            AugmentMethod::Compression => Some(PossibleValue::new(self.name()).help(
                "The paper's \"Compression\": the LASSO code of a random image of the class, \
                 decoded with A",
            )),
            AugmentMethod::KernelHmc => Some(PossibleValue::new(self.name()).help(
                "The paper's \"Kernel HMC\": chains over images (0..1 pixel scale, whatever \
                 --pixel-max) on a Gaussian kernel density of the class (bandwidth by the median \
                 heuristic), with RMLD's momentum dynamics and MH; no codes",
            )),
            AugmentMethod::Deform => Some(PossibleValue::new(self.name()).help(
                "Exact draws along each image's transformation tangents (rotation, scale, \
                 shears, thickness), one per image in turn; codes are the new images' LASSO \
                 codes (docs/usefulness.md)",
            )),
        }
    }
}

/// Where an augmentation's new samples come from (`--sampler`): the chains of its
/// [`AugmentMethod`] (the default), or a learned sampler trained on them by `rmld amortize
/// train` (experimental; docs/amortized.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum SamplerChoice {
    /// The chains of `method` (the default).
    #[default]
    Mcmc,
    /// One pass of a trained class-conditional code sampler per sample (`model`).
    Amortized,
}

impl SamplerChoice {
    /// Whether a learned sampler stands in for the chains (they run no iterations).
    pub fn is_amortized(self) -> bool {
        match self {
            SamplerChoice::Mcmc => false,
            SamplerChoice::Amortized => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every method and baseline reads back from its name, in settings as a plain string; the
    /// names are unique; an unknown one lists them.
    #[test]
    fn names_round_trip() {
        let all: Vec<AugmentMethod> = AugmentMethod::all().collect();
        assert_eq!(all.len(), Method::ALL.len() + 3);
        for m in &all {
            let text = serde_json::to_string(m).unwrap();
            assert_eq!(text, format!("\"{}\"", m.name()));
            assert_eq!(serde_json::from_str::<AugmentMethod>(&text).unwrap(), *m);
            assert_eq!(all.iter().filter(|o| o.name() == m.name()).count(), 1);
        }
        assert_eq!(
            AugmentMethod::named("hmc"),
            Some(AugmentMethod::Chains(Method::Hmc))
        );
        let err = serde_json::from_str::<AugmentMethod>("\"nuts\"").unwrap_err();
        assert!(
            err.to_string()
                .contains("rmld, mala, hmc, compression, kernel-hmc, deform"),
            "{err}"
        );
    }

    /// `Method::ALL` is every method: the command line's derived list has no other.
    #[cfg(feature = "cli")]
    #[test]
    fn all_lists_every_method() {
        use clap::ValueEnum;
        assert_eq!(Method::value_variants(), Method::ALL);
        for m in Method::ALL {
            let possible = m.to_possible_value().unwrap();
            assert_eq!(possible.get_name(), m.name());
            assert_eq!(
                serde_json::to_string(&m).unwrap(),
                format!("\"{}\"", m.name())
            );
        }
    }
}
