//! Per-class convergence diagnostics of an augmentation run: each class's chains on their own.
//!
//! `rmld augment` runs the chains of every class side by side; each class's posterior is its
//! own, so R-hat across classes means nothing. Here every class's chains are cut out of the
//! run's trace and diagnosed alone on the draws after the burn-in, and the run's verdict is the
//! worst class's. Where a class's chains share one posterior (the paper and mixture targets),
//! they are diagnosed together, with nested R-hat over the chains started from one image
//! (Margossian et al. 2024). Where every chain's posterior is anchored at the image it started
//! from (the local and tangent targets), only chains with one anchor share a posterior: each
//! such group is diagnosed alone (one chain: its split R-hat, Vehtari et al. 2021, compares the
//! chain's two halves) and the class reports its worst group.

use serde_json::{json, Value};

use super::{ChainTrace, DiagnosticsReport, Scope, RHAT_THRESHOLD};

/// Whose posterior a class's chains sample (the target decides: `From<TargetKind>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchoring {
    /// Every chain of a class samples the class's one posterior (the paper and mixture targets).
    Shared,
    /// Each chain's posterior is anchored at the image it started from (the local and tangent
    /// targets): only chains started from one image share a posterior.
    AtStart,
}

/// The classes of a run's chains: each class's label and its number of chains, in chain order
/// (class 0's chains first; the orchestrator's `AugmentPlan` is one).
pub trait ClassLayout {
    /// (label, chains) per class, in chain order.
    fn class_chains(&self) -> Vec<(u32, usize)>;
}

/// One class's chains cut out of a run's trace.
struct ChainSlice {
    completed: u32,
    stride: u32,
    accepted: Vec<u32>,
    divergent: Vec<u32>,
    log_alpha: Vec<f64>,
    energies: Vec<f32>,
    projections: Vec<f32>,
    per_draw: usize,
}

impl ChainSlice {
    /// The trace of `chains` (indices into the run's chains), in that order.
    fn new(run: &dyn ChainTrace, chains: &[usize]) -> Self {
        let (accepted, divergent) = (run.accepted(), run.divergent());
        let (log_alpha, energies, projections) =
            (run.log_alpha(), run.energies(), run.projections());
        let per_draw = run.projections_per_draw();
        let total = accepted.len().max(1);
        let rows = log_alpha.len() / total;
        let wide = projections.len() == rows * total * per_draw;
        let mut slice = ChainSlice {
            completed: run.completed(),
            stride: run.trace_stride().max(1),
            accepted: chains.iter().map(|&c| accepted[c]).collect(),
            divergent: chains
                .iter()
                .map(|&c| divergent.get(c).copied().unwrap_or(0))
                .collect(),
            log_alpha: Vec::with_capacity(rows * chains.len()),
            energies: Vec::with_capacity(rows * chains.len()),
            projections: Vec::new(),
            per_draw,
        };
        for r in 0..rows {
            for &c in chains {
                let at = r * total + c;
                slice.log_alpha.push(log_alpha[at]);
                slice.energies.push(energies[at]);
                if wide {
                    slice
                        .projections
                        .extend_from_slice(&projections[at * per_draw..(at + 1) * per_draw]);
                }
            }
        }
        slice
    }
}

impl ChainTrace for ChainSlice {
    fn completed(&self) -> u32 {
        self.completed
    }
    fn accepted(&self) -> &[u32] {
        &self.accepted
    }
    fn divergent(&self) -> &[u32] {
        &self.divergent
    }
    fn log_alpha(&self) -> &[f64] {
        &self.log_alpha
    }
    fn energies(&self) -> &[f32] {
        &self.energies
    }
    fn projections(&self) -> &[f32] {
        &self.projections
    }
    fn projections_per_draw(&self) -> usize {
        self.per_draw
    }
    fn trace_stride(&self) -> u32 {
        self.stride
    }
}

/// One class's diagnostics: those of its chains together, or of its worst group of chains that
/// share an anchor.
#[derive(Clone, Debug)]
pub struct ClassDiagnostics {
    /// The class's label.
    pub label: u32,
    /// Groups of chains diagnosed apart (1 where the class's chains share one posterior).
    pub groups: usize,
    /// Groups with too few draws for an R-hat.
    pub unassessed: usize,
    /// The diagnostics of the class's chains, or of its worst group.
    pub report: DiagnosticsReport,
}

fn rhat_of(d: &DiagnosticsReport) -> Option<f64> {
    d.max_nested_rhat.or(d.max_rhat)
}

/// Per class, the diagnostics of its chains after `burn_in`, in the plan's class order.
pub fn per_class(
    plan: &impl ClassLayout,
    run: &impl ChainTrace,
    target: impl Into<Anchoring>,
    burn_in: u32,
    seconds: f64,
) -> Vec<ClassDiagnostics> {
    let anchored = target.into() == Anchoring::AtStart;
    let classes = plan.class_chains();
    let mut first = 0;
    let mut out = Vec::with_capacity(classes.len());
    for (label, class_chains) in classes {
        let chains: Vec<usize> = (first..first + class_chains).collect();
        first += class_chains;
        let starts: Option<Vec<usize>> = run
            .start_indices()
            .map(|s| chains.iter().filter_map(|&c| s.get(c).copied()).collect())
            .filter(|s: &Vec<usize>| s.len() == chains.len());
        let groups: Vec<Vec<usize>> = match (&starts, anchored) {
            (Some(starts), true) => {
                let mut anchors: Vec<usize> = starts.clone();
                anchors.sort_unstable();
                anchors.dedup();
                anchors
                    .iter()
                    .map(|a| {
                        (0..chains.len())
                            .filter(|&i| starts[i] == *a)
                            .map(|i| chains[i])
                            .collect()
                    })
                    .collect()
            }
            _ => vec![chains.clone()],
        };
        let reports: Vec<DiagnosticsReport> = groups
            .iter()
            .map(|group| {
                let slice = ChainSlice::new(run, group);
                let ids: Option<Vec<usize>> = starts.as_ref().filter(|_| !anchored).cloned();
                let scope = Scope {
                    burn_in,
                    superchains: ids.as_deref().map(|s| (s, "chains started from one image")),
                };
                super::summarize_scoped(&slice, seconds, scope)
            })
            .collect();
        let unassessed = reports.iter().filter(|d| rhat_of(d).is_none()).count();
        let groups = reports.len();
        let Some(worst) = reports.into_iter().max_by(|a, b| {
            let key = |d: &DiagnosticsReport| rhat_of(d).unwrap_or(f64::NEG_INFINITY);
            key(a).total_cmp(&key(b))
        }) else {
            continue;
        };
        out.push(ClassDiagnostics {
            label,
            groups,
            unassessed,
            report: worst,
        });
    }
    out
}

/// The run's verdict from its classes' diagnostics: the worst class decides. With
/// `short_chains` (augment's quality preset, whose chains stop short of equilibrium on purpose)
/// a failing R-hat is reported as expected, with what the run is judged by instead of the advice
/// to run longer, as longer chains carry samples out of their class.
pub fn verdict(classes: &[ClassDiagnostics], short_chains: bool) -> String {
    let assessed: Vec<(u32, &DiagnosticsReport, f64)> = classes
        .iter()
        .filter_map(|c| rhat_of(&c.report).map(|r| (c.label, &c.report, r)))
        .collect();
    let Some(&(label, worst, r)) = assessed.iter().max_by(|a, b| a.2.total_cmp(&b.2)) else {
        let draws = classes.first().map_or(0, |c| c.report.draws_per_chain);
        return format!(
            "per class: convergence not assessed ({draws} draws per chain after the burn-in; at \
             least 4 are needed): run more samples per chain (samples) to judge it"
        );
    };
    let failing = assessed
        .iter()
        .filter(|(_, _, r)| *r > RHAT_THRESHOLD)
        .count();
    let unassessed = classes.len() - assessed.len();
    let missing = if unassessed > 0 {
        format!("; {unassessed} class(es) not assessed")
    } else {
        String::new()
    };
    if failing == 0 {
        format!(
            "per class: every assessed class converged (worst: class {label}: {}){missing}",
            worst.verdict
        )
    } else if short_chains {
        format!(
            "per class: {failing} of {} classes not converged (worst: class {label}, R-hat {r:.3} \
             > {}), as expected: the quality preset stops its chains short of the target's \
             equilibrium on purpose (docs/adaptation.md), so its samples are judged by the quality \
             metrics, not by R-hat; longer chains carry samples out of their class. For converged \
             draws use `rmld sample` or the paper preset with more samples{missing}",
            classes.len(),
            RHAT_THRESHOLD
        )
    } else {
        format!(
            "per class: {failing} of {} classes not converged (worst: class {label}, R-hat \
             {r:.3}: {}){missing}",
            classes.len(),
            worst.verdict
        )
    }
}

/// The report's `diagnostics_per_class` entry.
pub fn report_json(
    classes: &[ClassDiagnostics],
    target: impl Into<Anchoring>,
    verdict: &str,
) -> Value {
    let scope = if target.into() == Anchoring::AtStart {
        "each class's chains on the draws after the burn-in, in groups of chains started from \
         one image (each chain's posterior is anchored at its start image, so only such chains \
         share one); a class shows its worst group (one chain: split R-hat of its two halves)"
    } else {
        "each class's chains together on the draws after the burn-in; nested R-hat's superchains \
         are the class's chains started from one image"
    };
    json!({
        "verdict": verdict,
        "scope": scope,
        "classes": classes
            .iter()
            .map(|c| json!({
                "label": c.label,
                "groups": c.groups,
                "groups_not_assessed": c.unassessed,
                "diagnostics": c.report,
            }))
            .collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Projections per draw, as the orchestrator traces them.
    const PROJECTIONS: usize = 4;

    #[test]
    fn a_slice_holds_its_chains_values_row_by_row() {
        // 4 chains × 3 traced rows; value = 10·row + chain.
        let (chains, rows) = (4usize, 3usize);
        let at = |r: usize, c: usize| (10 * r + c) as f64;
        // A whole run's trace, laid out as the orchestrator's `SampleRun` holds it.
        let run = ChainSlice {
            completed: 3,
            stride: 1,
            accepted: vec![1, 2, 3, 4],
            divergent: vec![0, 1, 0, 1],
            log_alpha: (0..rows)
                .flat_map(|r| (0..chains).map(move |c| at(r, c)))
                .collect(),
            energies: (0..rows)
                .flat_map(|r| (0..chains).map(move |c| at(r, c) as f32))
                .collect(),
            projections: (0..rows * chains * PROJECTIONS).map(|i| i as f32).collect(),
            per_draw: PROJECTIONS,
        };
        let slice = ChainSlice::new(&run, &[3, 1]);
        assert_eq!(slice.accepted, vec![4, 2]);
        assert_eq!(slice.divergent, vec![1, 1]);
        let want: Vec<f64> = (0..rows).flat_map(|r| [at(r, 3), at(r, 1)]).collect();
        for (i, (got, want)) in slice.log_alpha.iter().zip(&want).enumerate() {
            assert_eq!(got, want, "log α {i}: {got} vs {want}");
        }
        for (i, (got, want)) in slice.energies.iter().zip(&want).enumerate() {
            assert_eq!(*got as f64, *want, "energy {i}: {got} vs {want}");
        }
        let projections: Vec<f32> = (0..rows)
            .flat_map(|r| [3usize, 1].map(|c| (r * chains + c) * PROJECTIONS))
            .flat_map(|start| (start..start + PROJECTIONS).map(|i| i as f32))
            .collect();
        assert_eq!(slice.projections, projections);
    }
}
