//! Planning a class-conditional augmentation run: which rows each class owns, how many samples and chains it gets.

use serde::Serialize;

use super::SampleSink;
use crate::diagnostics::per_class::{Anchoring, ClassLayout};
use crate::model::{ChainClasses, TargetKind};
use crate::{Error, Result};

/// One class of the plan.
#[derive(Clone, Debug, Serialize)]
pub struct ClassPlan {
    /// The class's label value.
    pub label: u32,
    /// (first row, count) of its rows in the class-sorted data.
    pub rows: [u32; 2],
    /// Samples to generate: round(count / ratio), at least 1.
    pub generated: usize,
    /// Chains that generate them: ceil(generated / samples per chain).
    pub chains: usize,
}

/// Classes, their rows in class order, and the chains' layout (class 0's chains first).
#[derive(Clone, Debug)]
pub struct AugmentPlan {
    /// Dataset row indices sorted by class (stable: dataset order within a class).
    pub order: Vec<usize>,
    /// The classes in increasing label order.
    pub classes: Vec<ClassPlan>,
    /// Samples kept per chain (outer iterations after the burn-in).
    pub samples_per_chain: u32,
}

impl ClassLayout for AugmentPlan {
    fn class_chains(&self) -> Vec<(u32, usize)> {
        self.classes.iter().map(|c| (c.label, c.chains)).collect()
    }
}

impl From<TargetKind> for Anchoring {
    /// The local and tangent targets anchor each chain's posterior at its start image.
    fn from(target: TargetKind) -> Self {
        match target {
            TargetKind::Paper | TargetKind::Mixture => Anchoring::Shared,
            TargetKind::Local | TargetKind::Tangent => Anchoring::AtStart,
        }
    }
}

/// Parses an "original:generated" ratio ("6:1", "3:2" or "6") into originals per generated sample.
pub fn parse_ratio(text: &str) -> std::result::Result<f64, String> {
    let parse = |s: &str| {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v > 0.0)
    };
    let ratio = match text.split_once(':') {
        Some((a, b)) => parse(a).zip(parse(b)).map(|(a, b)| a / b),
        None => parse(text),
    };
    ratio.ok_or_else(|| {
        format!("expected original:generated with positive numbers, like 6:1, got {text:?}")
    })
}

impl AugmentPlan {
    /// Plans the run for `labels` (one per row): only the classes in `wanted` (all when `None`),
    /// `ratio` originals per generated sample, `samples_per_chain` samples from each chain.
    /// Every class needs at least `batch` rows, so a minibatch is not mostly repeats.
    pub fn new(
        labels: &[u32],
        wanted: Option<&[u32]>,
        ratio: f64,
        samples_per_chain: u32,
        batch: u32,
    ) -> Result<Self> {
        if !(ratio.is_finite() && ratio > 0.0) {
            return Err(Error::usage(
                "ratio",
                format!("must be positive, got {ratio}"),
            ));
        }
        let generated = |count: usize| ((count as f64 / ratio).round() as usize).max(1);
        Self::planned(
            labels,
            wanted,
            &|_, count| generated(count),
            (samples_per_chain, batch),
        )
    }

    /// Plans the run for `labels` with `balance`'s samples per class: the classes that get
    /// some, each of at least two images (one image has nothing to vary against).
    pub fn balanced(
        labels: &[u32],
        balance: &super::Balance,
        samples_per_chain: u32,
        batch: u32,
    ) -> Result<Self> {
        let mut counts = std::collections::BTreeMap::new();
        for &label in labels {
            *counts.entry(label).or_insert(0usize) += 1;
        }
        let generated = balance.generated(&counts)?;
        if let Some((label, _)) = generated.iter().find(|(l, _)| counts[*l] < 2) {
            return Err(Error::usage(
                "balance",
                format!("class {label} has one image: too few to generate from"),
            ));
        }
        if generated.is_empty() {
            let sizes: Vec<String> = counts.iter().map(|(l, n)| format!("{l}: {n}")).collect();
            return Err(Error::usage(
                "balance",
                format!(
                    "asks for no new image of any class: each class it targets already has its \
                     count (images per class: {})",
                    sizes.join(", ")
                ),
            ));
        }
        let wanted: Vec<u32> = generated.keys().copied().collect();
        let per_class = |label: u32, _| generated[&label];
        Self::planned(
            labels,
            Some(&wanted),
            &per_class,
            (samples_per_chain, batch),
        )
    }

    /// The plan of `wanted`'s classes, `generated(label, count)` samples each.
    fn planned(
        labels: &[u32],
        wanted: Option<&[u32]>,
        generated: &dyn Fn(u32, usize) -> usize,
        (samples_per_chain, batch): (u32, u32),
    ) -> Result<Self> {
        if samples_per_chain == 0 {
            return Err(Error::usage("samples", "must be at least 1"));
        }
        let mut present: Vec<u32> = labels.to_vec();
        present.sort_unstable();
        present.dedup();
        let chosen: Vec<u32> = match wanted {
            None => present.clone(),
            Some(w) => {
                if let Some(bad) = w.iter().find(|l| present.binary_search(l).is_err()) {
                    return Err(Error::usage(
                        "classes",
                        format!("class {bad} is not among the data's labels {present:?}"),
                    ));
                }
                let mut w = w.to_vec();
                w.sort_unstable();
                w.dedup();
                w
            }
        };
        if chosen.is_empty() {
            return Err(Error::usage("classes", "no class to augment"));
        }
        let mut order = Vec::new();
        let mut classes = Vec::new();
        for &label in &chosen {
            let first = order.len();
            order.extend((0..labels.len()).filter(|&i| labels[i] == label));
            let count = order.len() - first;
            if count < batch as usize {
                return Err(Error::usage(
                    "batch",
                    format!(
                        "class {label} has {count} images, fewer than the minibatch of {batch}: \
                         lower `batch` or leave the class out with `classes`"
                    ),
                ));
            }
            let generated = generated(label, count);
            classes.push(ClassPlan {
                label,
                rows: [first as u32, count as u32],
                generated,
                chains: generated.div_ceil(samples_per_chain as usize),
            });
        }
        if order.len() > u32::MAX as usize {
            return Err(Error::usage("data", "more than 4294967295 images"));
        }
        Ok(AugmentPlan {
            order,
            classes,
            samples_per_chain,
        })
    }

    /// Total chains.
    pub fn chains(&self) -> usize {
        self.classes.iter().map(|c| c.chains).sum()
    }

    /// Total samples to generate.
    pub fn generated(&self) -> usize {
        self.classes.iter().map(|c| c.generated).sum()
    }

    /// Each chain's class index (into `classes`), class 0's chains first.
    pub fn class_of_chain(&self) -> Vec<u32> {
        self.classes
            .iter()
            .enumerate()
            .flat_map(|(k, c)| std::iter::repeat_n(k as u32, c.chains))
            .collect()
    }

    /// The mean observation of each class (rows of d, model units), from the class-sorted data.
    pub fn class_means(&self, observations: &crate::model::Observations) -> Vec<f32> {
        self.classes
            .iter()
            .flat_map(|c| observations.mean_of_rows(c.rows[0] as usize, c.rows[1] as usize))
            .collect()
    }

    /// The chains' class layout, given each class's mean observation (rows of d, model units).
    pub fn chain_classes(&self, class_means: &[f32], d: usize) -> Result<ChainClasses> {
        let ranges: Vec<[u32; 2]> = self.classes.iter().map(|c| c.rows).collect();
        ChainClasses::new(&ranges, class_means, d, &self.class_of_chain())
    }
}

/// Collects each class's first `generated` samples, in (iteration, chain) order, after the burn-in.
///
/// A class of `n` chains and `g` samples keeps, at its t-th kept iteration, the draw of its j-th
/// chain when `t·n + j < g`; a shard (chains `range` of the run) keeps exactly its chains' part
/// of the single run's samples, in the same (iteration, chain) order.
pub struct AugmentSink {
    class_of_chain: Vec<u32>,
    /// Per chain of the sink: its index among its class's chains (of the whole run).
    in_class: Vec<usize>,
    /// Per class: its chains in the whole run.
    class_chains: Vec<usize>,
    wanted: Vec<usize>,
    burn_in: u32,
    /// Iterations each chain keeps after the burn-in.
    samples_per_chain: u32,
    /// The last iteration recorded.
    last: u32,
    keep_codes: bool,
    /// Per class: the codes kept (rows of p; empty when codes are not kept).
    pub codes: Vec<Vec<f32>>,
    /// Per class: the images kept (rows of d, model units).
    pub images: Vec<Vec<f32>>,
    /// Per class: samples kept.
    pub kept: Vec<usize>,
    /// Per class: each kept sample's index among the class's samples of the whole run.
    pub positions: Vec<Vec<usize>>,
}

impl AugmentSink {
    /// A sink for `plan` that skips the first `burn_in` iterations; `keep_codes` false keeps
    /// only images (pixel-space samplers, whose codes are the images).
    pub fn new(plan: &AugmentPlan, burn_in: u32, keep_codes: bool) -> Self {
        Self::for_chains(plan, 0..plan.chains(), burn_in, keep_codes)
    }

    /// A sink for the chains `range` of `plan` (a shard's): it keeps those chains' part of the
    /// samples the whole run's sink keeps, per class in the same order.
    pub fn for_chains(
        plan: &AugmentPlan,
        range: std::ops::Range<usize>,
        burn_in: u32,
        keep_codes: bool,
    ) -> Self {
        let k = plan.classes.len();
        let all = plan.class_of_chain();
        let mut in_class = Vec::with_capacity(all.len());
        let mut seen = vec![0usize; k];
        for &class in &all {
            in_class.push(seen[class as usize]);
            seen[class as usize] += 1;
        }
        let range = range.start.min(all.len())..range.end.min(all.len());
        AugmentSink {
            class_of_chain: all[range.clone()].to_vec(),
            in_class: in_class[range].to_vec(),
            class_chains: plan.classes.iter().map(|c| c.chains).collect(),
            wanted: plan.classes.iter().map(|c| c.generated).collect(),
            burn_in,
            samples_per_chain: plan.samples_per_chain,
            last: 0,
            keep_codes,
            codes: vec![Vec::new(); k],
            images: vec![Vec::new(); k],
            kept: vec![0; k],
            positions: vec![Vec::new(); k],
        }
    }

    /// Samples kept over all classes.
    pub fn total(&self) -> usize {
        self.kept.iter().sum()
    }
}

impl SampleSink for AugmentSink {
    /// An automatic burn-in ended: the samples are the draws after `outer` (the sink started
    /// with the cap as its burn-in).
    fn warm_up_ended(&mut self, outer: u32) {
        self.burn_in = outer;
    }

    /// Every chain has kept its samples after the burn-in (with a fixed burn-in, at the run's
    /// last iteration).
    fn full(&self) -> bool {
        self.last >= self.burn_in.saturating_add(self.samples_per_chain)
    }

    fn record(&mut self, outer: u32, codes: &[f32], images: &[f32]) -> Result<()> {
        self.last = outer;
        if outer <= self.burn_in {
            return Ok(());
        }
        let chains = self.class_of_chain.len().max(1);
        let (p, d) = (codes.len() / chains, images.len() / chains);
        let t = (outer - self.burn_in - 1) as usize;
        for (c, &k) in self.class_of_chain.iter().enumerate() {
            let k = k as usize;
            let position = t * self.class_chains[k] + self.in_class[c];
            if position >= self.wanted[k] {
                continue;
            }
            self.positions[k].push(position);
            if self.keep_codes {
                self.codes[k].extend_from_slice(&codes[c * p..(c + 1) * p]);
            }
            self.images[k].extend_from_slice(&images[c * d..(c + 1) * d]);
            self.kept[k] += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_parses() {
        assert_eq!(parse_ratio("6:1"), Ok(6.0));
        assert_eq!(parse_ratio("3:2"), Ok(1.5));
        assert_eq!(parse_ratio(" 4 "), Ok(4.0));
        assert!(parse_ratio("6:0").is_err());
        assert!(parse_ratio("-1").is_err());
        assert!(parse_ratio("a:b").is_err());
    }

    #[test]
    fn plan_sorts_by_class_and_sizes_the_chains() {
        let labels = [2, 0, 2, 1, 0, 2, 2, 0, 1, 2, 2, 2];
        let plan = AugmentPlan::new(&labels, None, 2.0, 2, 2).unwrap();
        assert_eq!(plan.order, vec![1, 4, 7, 3, 8, 0, 2, 5, 6, 9, 10, 11]);
        let rows: Vec<_> = plan.classes.iter().map(|c| c.rows).collect();
        assert_eq!(rows, vec![[0, 3], [3, 2], [5, 7]]);
        // round(3/2) = 2, round(2/2) = 1, round(7/2) = 4; chains = ceil(generated / 2).
        let generated: Vec<_> = plan.classes.iter().map(|c| c.generated).collect();
        assert_eq!(generated, vec![2, 1, 4]);
        assert_eq!(plan.class_of_chain(), vec![0, 1, 2, 2]);
        let some = AugmentPlan::new(&labels, Some(&[2, 0]), 2.0, 2, 2).unwrap();
        assert_eq!(some.classes.len(), 2);
        assert!(AugmentPlan::new(&labels, Some(&[5]), 2.0, 2, 2).is_err());
        assert!(AugmentPlan::new(&labels, None, 2.0, 2, 3).is_err());
    }

    #[test]
    fn balanced_plan_gives_each_class_its_count_and_refuses_a_single_image() {
        let labels = [0, 0, 0, 0, 1, 1, 2, 2, 2];
        let plan = AugmentPlan::balanced(&labels, &crate::orchestrator::Balance::NotMajority, 1, 1)
            .unwrap();
        let generated: Vec<_> = plan
            .classes
            .iter()
            .map(|c| (c.label, c.generated))
            .collect();
        assert_eq!(generated, vec![(1, 2), (2, 1)]);
        assert_eq!(plan.order, vec![4, 5, 6, 7, 8]);
        let lonely = [0, 0, 0, 1];
        let error = AugmentPlan::balanced(&lonely, &crate::orchestrator::Balance::All, 1, 1)
            .unwrap_err()
            .to_string();
        assert!(error.contains("class 1"), "{error}");
        let even = [0, 0, 1, 1];
        let error = AugmentPlan::balanced(&even, &crate::orchestrator::Balance::NotMajority, 1, 1)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("balance") && error.contains("0: 2, 1: 2"),
            "{error}"
        );
    }

    #[test]
    fn sink_keeps_each_class_first_samples_after_burn_in() {
        let labels = [0, 0, 0, 1, 1, 1];
        // 3 rows per class, ratio 1: 3 samples each, 2 per chain: 2 chains per class.
        let plan = AugmentPlan::new(&labels, None, 1.0, 2, 1).unwrap();
        let mut sink = AugmentSink::new(&plan, 1, true);
        for outer in 1..=3u32 {
            let codes: Vec<f32> = (0..4).map(|c| (outer * 10 + c) as f32).collect();
            sink.record(outer, &codes, &codes).unwrap();
        }
        assert_eq!(sink.kept, vec![3, 3]);
        assert_eq!(sink.codes[0], vec![20.0, 21.0, 30.0]);
        assert_eq!(sink.images[1], vec![22.0, 23.0, 32.0]);
    }

    /// An automatic burn-in that ended at iteration 2 of a cap of 5: the sink keeps the draws
    /// after 2 and is full after 2 + 2 iterations, not at cap + samples.
    #[test]
    fn sink_follows_an_automatic_burn_in_and_says_when_it_is_full() {
        let labels = [0, 0, 0, 1, 1, 1];
        let plan = AugmentPlan::new(&labels, None, 1.0, 2, 1).unwrap();
        let mut sink = AugmentSink::new(&plan, 5, true);
        for outer in 1..=4u32 {
            if outer == 2 {
                sink.warm_up_ended(2);
            }
            let codes: Vec<f32> = (0..4).map(|c| (outer * 10 + c) as f32).collect();
            sink.record(outer, &codes, &codes).unwrap();
            assert_eq!(sink.full(), outer == 4, "after iteration {outer}");
        }
        assert_eq!(sink.kept, vec![3, 3]);
        assert_eq!(sink.codes[0], vec![30.0, 31.0, 40.0]);
    }

    #[test]
    fn shard_sinks_keep_their_part_of_the_samples() {
        // 5 rows of class 0 and 3 of class 1, ratio 1, 2 per chain: 3 + 2 chains.
        let labels = [0, 0, 0, 0, 0, 1, 1, 1];
        let plan = AugmentPlan::new(&labels, None, 1.0, 2, 1).unwrap();
        let draws = |outer: u32, range: std::ops::Range<usize>| -> Vec<f32> {
            range.map(|c| (outer * 10 + c as u32) as f32).collect()
        };
        let mut whole = AugmentSink::new(&plan, 1, false);
        for outer in 1..=3 {
            let x = draws(outer, 0..5);
            whole.record(outer, &x, &x).unwrap();
        }
        for range in [0..2, 2..4, 4..5] {
            let mut part = AugmentSink::for_chains(&plan, range.clone(), 1, false);
            for outer in 1..=3 {
                let x = draws(outer, range.clone());
                part.record(outer, &x, &x).unwrap();
            }
            for k in 0..2 {
                let expected: Vec<f32> = whole.images[k]
                    .iter()
                    .copied()
                    .filter(|&v| range.contains(&((v as u32 % 10) as usize)))
                    .collect();
                assert_eq!(part.images[k], expected, "chains {range:?}, class {k}");
            }
        }
    }
}
