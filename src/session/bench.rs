//! Throughput measurement (`Bench`): chain-steps/s per backend and chain count, against a ceiling measured in the same run.
//!
//! The settings say which backends, chain counts, tiles and variants to measure; each
//! measurement is made by `measure` (the backend timed as the orchestrator runs it, the
//! ceilings, the NumPy peer), told to the observer as it comes, and written to bench.json and
//! bench.csv.

use std::sync::Arc;

use serde_json::Value;

use crate::backend::DynamicsSettings;
use crate::io;
use crate::measure::bench_rows::{
    cpu_rows, gpu, observations, report_json, BenchProgress, Measured, ETA, LAMBDA,
};
use crate::measure::throughput::{ratios, rows_csv};
pub use crate::measure::{BenchBackends, BenchSettings, BenchTile};
use crate::measure::{Ceiling, PeerRow, Roofline, Row};
use crate::model::{Dictionary, Target};
use crate::{Error, Result};

use super::observer::{Notice, Observer};

/// What a benchmark measured; bench.json and bench.csv are written.
#[derive(Clone, Debug)]
pub struct BenchOutcome {
    /// The problem's dimension d and atoms p.
    pub d: usize,
    /// Atoms p.
    pub p: usize,
    /// Where the data came from.
    pub source: String,
    /// One row per backend and chain count.
    pub rows: Vec<Row>,
    /// The backends' ceilings.
    pub ceilings: Vec<Ceiling>,
    /// Notes (a backend not measured, and why).
    pub notes: Vec<String>,
    /// GPU over CPU chain-steps/s per chain count where both ran.
    pub ratios: Vec<(usize, f64)>,
    /// The CPU's two products alone per chain count (gemm crate, OpenBLAS with `blas`).
    pub rooflines: Vec<Roofline>,
    /// The NumPy peer per CPU chain count (`peer_python`); empty when not run.
    pub peers: Vec<PeerRow>,
    /// The observer asked to stop: the rows are those finished before (written all the same).
    pub interrupted: bool,
    /// bench.json's content.
    pub report: Value,
}

/// Measures throughput per backend and chain count against this machine's ceiling.
#[derive(Clone, Debug)]
pub struct Bench {
    settings: BenchSettings,
}

impl Bench {
    /// A benchmark with these settings (checked when it runs).
    pub fn new(settings: BenchSettings) -> Self {
        Bench { settings }
    }

    /// Measures and writes bench.json and bench.csv; the header, the ceilings and each
    /// measurement are told to `observer` as they come (`Notice::Bench*`).
    pub fn run(&self, observer: &dyn Observer) -> Result<BenchOutcome> {
        bench(&self.settings, observer)
    }
}

/// Which backends to measure (CPU, GPU): a software renderer is measured only when `backend` is
/// `gpu` (noted, and told to the observer, otherwise).
fn backends_to_measure(
    args: &BenchSettings,
    observer: &dyn Observer,
    notes: &mut Vec<String>,
) -> (bool, bool) {
    match args.backend {
        BenchBackends::Cpu => (true, false),
        BenchBackends::Gpu => (false, true),
        // A software renderer (lavapipe) is no GPU: only `Gpu` measures it.
        BenchBackends::All | BenchBackends::Auto => match gpu::software_adapter() {
            Some(name) => {
                observer.notice(&Notice::SoftwareAdapter { name: name.clone() });
                notes.push(format!(
                    "GPU not measured: the only adapter, {name}, is a software renderer \
                     (`backend` gpu measures it anyway)"
                ));
                (true, false)
            }
            None if args.backend == BenchBackends::All => (true, true),
            None => {
                let gpu = gpu::present();
                (!gpu, gpu)
            }
        },
    }
}

fn bench(args: &BenchSettings, observer: &dyn Observer) -> Result<BenchOutcome> {
    args.validate()?;
    let mut output = io::Output::check(
        &args.out,
        super::outputs::BENCH_OUTPUTS,
        &[args.data.as_deref()],
        args.force,
    )?;
    let (observations, source) = observations(args)?;
    let d = observations.d;
    args.check_dictionary_fits(d)?;
    let p = args.atoms.unwrap_or(4 * d);
    if p == 0 {
        return Err(Error::usage("atoms", "must be at least 1"));
    }
    let mut measured = Measured::default();
    let (want_cpu, want_gpu) = backends_to_measure(args, observer, &mut measured.notes);
    output.open()?;
    let target = Arc::new(Target::new(
        Arc::new(Dictionary::gaussian(d, p, args.seed)),
        Arc::new(observations),
        LAMBDA,
    ));
    let dynamics = DynamicsSettings {
        eta: ETA,
        steps: args.steps,
        batch: args.batch,
        sghmc_noise: false,
        seed: args.seed,
        ..DynamicsSettings::default()
    };
    observer.notice(&Notice::BenchStarted {
        d,
        p,
        batch: args.batch,
        steps: args.steps,
        outer: args.outer,
        source: source.clone(),
    });
    if want_cpu {
        cpu_rows(args, &target, &dynamics, &mut measured, &Told(observer))?;
    }
    if want_gpu && !observer.stop_requested() {
        match gpu::run(args, &target, &dynamics, &mut measured, &Told(observer)) {
            Ok(()) => {}
            Err(e) if args.backend == BenchBackends::All => {
                measured.notes.push(format!("GPU not measured: {e}"));
            }
            Err(e) => return Err(e),
        }
    }
    let interrupted = observer.stop_requested();
    if interrupted {
        measured
            .notes
            .push("interrupted: the rows below are those measured before the stop".into());
        // bench.csv alone says so too: every measurement asked for and not made is a row.
        let asked = [(want_cpu, "cpu"), (want_gpu, "gpu")];
        for (_, backend) in asked.into_iter().filter(|(wanted, _)| *wanted) {
            for &chains in &args.chains {
                let made = |r: &Row| r.backend == backend && r.chains == chains;
                if !measured.rows.iter().any(made) {
                    let note = "not measured: the run was interrupted".to_string();
                    measured.rows.push(Row::skipped(backend, "", chains, note));
                }
            }
        }
    }
    let ratios = ratios(&measured.rows);
    let report = report_json(args, (d, p), &source, &measured, &ratios, interrupted);
    // Published together (the CLI draws bench.png from the rows afterwards).
    output.write("bench.json", |path| io::write_json_atomic(path, &report))?;
    let csv = rows_csv(&measured.rows);
    output.write("bench.csv", |path| {
        io::write_atomic(path, |w| w.write_all(csv.as_bytes()))
    })?;
    output.publish()?;
    let Measured {
        rows,
        ceilings,
        rooflines,
        peers,
        notes,
        ..
    } = measured;
    Ok(BenchOutcome {
        d,
        p,
        source,
        rows,
        ceilings,
        notes,
        ratios,
        rooflines,
        peers,
        interrupted,
        report,
    })
}

/// The measurements' progress, told to the observer as notices.
struct Told<'a>(&'a dyn Observer);

impl BenchProgress for Told<'_> {
    fn ceiling(&self, ceiling: &Ceiling, timing: Option<String>) {
        self.0.notice(&Notice::BenchCeiling {
            ceiling: ceiling.clone(),
            timing,
        });
    }

    fn measured(&self, backend: &str, chains: usize, rate: f64, products_gflops: Option<f64>) {
        self.0.notice(&Notice::BenchMeasured {
            backend: backend.into(),
            chains,
            chain_steps_per_second: rate,
            products_gflops,
        });
    }

    fn stop_requested(&self) -> bool {
        self.0.stop_requested()
    }
}
