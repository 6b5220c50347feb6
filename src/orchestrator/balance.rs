//! How many samples each class gets, in imbalanced-learn's words (`sampling_strategy`): bring the classes up to the majority's count, or to counts given per class.
//!
//! The meanings are imbalanced-learn's for an over-sampler (`imblearn.utils.check_sampling_strategy`):
//! "auto" = "not majority"; "minority", "not minority", "all": those classes up to the majority's
//! count; a float (two classes only): the minority's count after resampling over the majority's;
//! counts per class: each named class's count after resampling (at least its count before).
//! Ties for the majority or the minority go to the smallest label, so a run is reproducible.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// imbalanced-learn's `sampling_strategy` for an over-sampler. Settings written as JSON (the
/// Python package's, a shard's) may give it as the command line's text (`"auto"`,
/// `"5:300,6:300"`), a ratio, imbalanced-learn's dict of counts (`{"5": 300}`), or as it is
/// written (`"not-majority"`, `{"counts": {...}}`, `{"ratio": 0.5}`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Balance {
    /// Every class but the majority, up to the majority's count ("auto", "not majority").
    NotMajority,
    /// Only the minority class, up to the majority's count.
    Minority,
    /// Every class but the minority, up to the majority's count (the majority gets none).
    NotMinority,
    /// Every class, up to the majority's count (the majority gets none).
    All,
    /// Two classes only: the minority's count after resampling over the majority's, in (0, 1].
    Ratio(f64),
    /// Each named class's count after resampling (label → count); other classes get none.
    Counts(BTreeMap<u32, usize>),
}

impl Balance {
    /// Parses the command line's form: `auto`, `not-majority`, `minority`, `not-minority`,
    /// `all` (spaces or underscores for the dashes too), a number in (0, 1], or counts per class
    /// `LABEL:COUNT,LABEL:COUNT,...`.
    pub fn parse(text: &str) -> std::result::Result<Balance, String> {
        let t = text.trim();
        let word = t.to_ascii_lowercase().replace([' ', '_'], "-");
        match word.as_str() {
            "auto" | "not-majority" => return Ok(Balance::NotMajority),
            "minority" => return Ok(Balance::Minority),
            "not-minority" => return Ok(Balance::NotMinority),
            "all" => return Ok(Balance::All),
            _ => {}
        }
        if t.contains(':') {
            let mut counts = BTreeMap::new();
            for part in t.split(',') {
                let (label, count) = part
                    .split_once(':')
                    .ok_or_else(|| format!("expected LABEL:COUNT in {part:?} (of {text:?})"))?;
                let label: u32 = label.trim().parse().map_err(|_| {
                    format!(
                        "the class label {:?} is not a non-negative integer",
                        label.trim()
                    )
                })?;
                let count: usize = count.trim().parse().map_err(|_| {
                    format!(
                        "the count {:?} of class {label} is not a non-negative integer",
                        count.trim()
                    )
                })?;
                if counts.insert(label, count).is_some() {
                    return Err(format!("class {label} is given twice"));
                }
            }
            return Ok(Balance::Counts(counts));
        }
        match t.parse::<f64>() {
            Ok(r) if r.is_finite() && r > 0.0 && r <= 1.0 => Ok(Balance::Ratio(r)),
            Ok(r) => Err(format!("a ratio must lie in (0, 1], got {r}")),
            Err(_) => Err(format!(
                "expected auto, minority, not-minority, not-majority, all, a ratio in (0, 1] or \
                 LABEL:COUNT,..., got {text:?}"
            )),
        }
    }

    /// Samples to generate per class, given each class's count before resampling (label →
    /// count, every class of the data). Classes that get none are left out. Errors (on the
    /// setting `balance`) name the class: a class not in the data, a count below the class's
    /// own, a ratio with other than two classes or one that would remove samples.
    pub fn generated(&self, counts: &BTreeMap<u32, usize>) -> Result<BTreeMap<u32, usize>> {
        let usage = |m: String| Error::usage("balance", m);
        let (Some(majority), Some(minority)) = (extreme(counts, true), extreme(counts, false))
        else {
            return Err(usage("the data has no class".into()));
        };
        let top = counts[&majority];
        let up_to_majority = |keep: &dyn Fn(u32) -> bool| {
            counts
                .iter()
                .filter(|(label, _)| keep(**label))
                .map(|(&label, &n)| (label, top - n))
                .filter(|(_, g)| *g > 0)
                .collect()
        };
        Ok(match self {
            Balance::NotMajority => up_to_majority(&|l| l != majority),
            Balance::Minority => up_to_majority(&|l| l == minority),
            Balance::NotMinority => up_to_majority(&|l| l != minority),
            Balance::All => up_to_majority(&|_| true),
            Balance::Ratio(r) => {
                if counts.len() != 2 {
                    return Err(usage(format!(
                        "a ratio needs exactly two classes, the data has {} ({:?}): give counts \
                         per class or a named strategy",
                        counts.len(),
                        counts.keys().collect::<Vec<_>>()
                    )));
                }
                let wanted = (r * top as f64).floor() as usize;
                let have = counts[&minority];
                if wanted < have {
                    return Err(usage(format!(
                        "a ratio of {r} asks for {wanted} images of class {minority}, which has \
                         {have} already: an over-sampler only adds"
                    )));
                }
                [(minority, wanted - have)]
                    .into_iter()
                    .filter(|(_, g)| *g > 0)
                    .collect()
            }
            Balance::Counts(wanted) => {
                let mut out = BTreeMap::new();
                for (&label, &target) in wanted {
                    let Some(&have) = counts.get(&label) else {
                        return Err(usage(format!(
                            "class {label} is not among the data's labels {:?}",
                            counts.keys().collect::<Vec<_>>()
                        )));
                    };
                    if target < have {
                        return Err(usage(format!(
                            "class {label} has {have} images and {target} are asked for: an \
                             over-sampler only adds, so ask for at least {have}"
                        )));
                    }
                    if target > have {
                        out.insert(label, target - have);
                    }
                }
                out
            }
        })
    }
}

impl<'de> Deserialize<'de> for Balance {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        use serde_json::Value;
        let value = Value::deserialize(deserializer)?;
        let counts = |map: &serde_json::Map<String, Value>| {
            let mut counts = BTreeMap::new();
            for (label, count) in map {
                let label: u32 = label.trim().parse().map_err(|_| {
                    format!("the class {label:?} is not a label (an integer from 0)")
                })?;
                let count = count.as_u64().ok_or_else(|| {
                    format!("the count {count} of class {label} is not a non-negative integer")
                })?;
                counts.insert(label, count as usize);
            }
            Ok(Balance::Counts(counts))
        };
        let balance = match &value {
            Value::String(text) => Balance::parse(text),
            Value::Number(ratio) => Balance::parse(&ratio.to_string()),
            Value::Object(map) => match (map.len(), map.get("counts"), map.get("ratio")) {
                (1, Some(Value::Object(inner)), _) => counts(inner),
                (1, _, Some(Value::Number(ratio))) => Balance::parse(&ratio.to_string()),
                _ => counts(map),
            },
            _ => Err(format!(
                "expected a strategy (\"auto\", \"minority\", ...), a ratio in (0, 1] or counts \
                 per class ({{\"5\": 300}}), got {value}"
            )),
        };
        balance.map_err(D::Error::custom)
    }
}

/// The label of the largest (`largest`) or smallest class; ties go to the smallest label.
fn extreme(counts: &BTreeMap<u32, usize>, largest: bool) -> Option<u32> {
    let mut best: Option<(u32, usize)> = None;
    for (&label, &n) in counts {
        let better = match best {
            None => true,
            Some((_, b)) => (largest && n > b) || (!largest && n < b),
        };
        if better {
            best = Some((label, n));
        }
    }
    best.map(|(label, _)| label)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_json_takes_the_command_lines_forms_imbalanced_learns_dict_and_its_own() {
        let read = |json: &str| serde_json::from_str::<Balance>(json);
        let five = Balance::Counts(counts(&[(5, 300), (6, 200)]));
        assert_eq!(read(r#""auto""#).unwrap(), Balance::NotMajority);
        assert_eq!(read(r#""not majority""#).unwrap(), Balance::NotMajority);
        assert_eq!(read(r#""5:300,6:200""#).unwrap(), five);
        assert_eq!(read(r#"{"5": 300, "6": 200}"#).unwrap(), five);
        assert_eq!(read("0.5").unwrap(), Balance::Ratio(0.5));
        assert_eq!(read("1").unwrap(), Balance::Ratio(1.0));
        // What serializing writes reads back.
        for balance in [
            five,
            Balance::Ratio(0.25),
            Balance::NotMinority,
            Balance::All,
        ] {
            let json = serde_json::to_string(&balance).unwrap();
            assert_eq!(read(&json).unwrap(), balance, "{json}");
        }
        for (json, needle) in [
            (r#""bogus""#, "expected auto"),
            ("1.5", "(0, 1]"),
            (r#"{"five": 3}"#, "\"five\" is not a label"),
            (r#"{"5": -3}"#, "count -3 of class 5"),
            ("[5]", "expected a strategy"),
        ] {
            let err = read(json).unwrap_err().to_string();
            assert!(err.contains(needle), "{json}: {err}");
        }
    }

    fn counts(pairs: &[(u32, usize)]) -> BTreeMap<u32, usize> {
        pairs.iter().copied().collect()
    }

    #[test]
    fn named_strategies_mean_what_imbalanced_learn_means() {
        let c = counts(&[(0, 400), (1, 20), (2, 50), (3, 400)]);
        assert_eq!(
            Balance::parse("auto").unwrap().generated(&c).unwrap(),
            counts(&[(1, 380), (2, 350)])
        );
        assert_eq!(
            Balance::parse("minority").unwrap().generated(&c).unwrap(),
            counts(&[(1, 380)])
        );
        assert_eq!(
            Balance::parse("not minority")
                .unwrap()
                .generated(&c)
                .unwrap(),
            counts(&[(2, 350)])
        );
        assert_eq!(
            Balance::parse("all").unwrap().generated(&c).unwrap(),
            counts(&[(1, 380), (2, 350)])
        );
        assert_eq!(
            Balance::parse("not_majority").unwrap(),
            Balance::NotMajority
        );
    }

    #[test]
    fn a_ratio_is_for_two_classes_and_only_adds() {
        let two = counts(&[(3, 1000), (8, 100)]);
        assert_eq!(
            Balance::parse("0.5").unwrap().generated(&two).unwrap(),
            counts(&[(8, 400)])
        );
        let e = Balance::Ratio(0.05)
            .generated(&two)
            .unwrap_err()
            .to_string();
        assert!(e.contains("class 8") && e.contains("only adds"), "{e}");
        let three = counts(&[(0, 10), (1, 20), (2, 30)]);
        let e = Balance::Ratio(0.5)
            .generated(&three)
            .unwrap_err()
            .to_string();
        assert!(e.contains("exactly two classes"), "{e}");
        assert!(Balance::parse("1.5").is_err());
        assert!(Balance::parse("0").is_err());
    }

    #[test]
    fn counts_per_class_are_targets_after_resampling() {
        let c = counts(&[(0, 400), (7, 20)]);
        let b = Balance::parse("7:400, 0:400").unwrap();
        assert_eq!(b.generated(&c).unwrap(), counts(&[(7, 380)]));
        let e = Balance::parse("7:10")
            .unwrap()
            .generated(&c)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("class 7 has 20 images and 10 are asked for"),
            "{e}"
        );
        let e = Balance::parse("5:100")
            .unwrap()
            .generated(&c)
            .unwrap_err()
            .to_string();
        assert!(e.contains("class 5 is not among"), "{e}");
        assert!(Balance::parse("7:1,7:2").unwrap_err().contains("twice"));
        assert!(Balance::parse("seven:1").is_err());
        assert!(Balance::parse("sometimes").is_err());
    }

    #[test]
    fn ties_go_to_the_smallest_label() {
        let c = counts(&[(4, 10), (2, 10), (9, 30), (5, 30)]);
        // majority 5, minority 2
        assert_eq!(Balance::Minority.generated(&c).unwrap(), counts(&[(2, 20)]));
        assert_eq!(
            Balance::NotMajority.generated(&c).unwrap(),
            counts(&[(2, 20), (4, 20)])
        );
    }
}
