//! Throughput measurement (`Bench`): chain-steps/s per backend and chain count, against a ceiling measured in the same run.
//!
//! The settings say which backends, chain counts, tiles and variants to measure; each
//! measurement is made by `measure` (the backend timed as the orchestrator runs it, the
//! ceilings, the NumPy peer), told to the observer as it comes, and written to bench.json and
//! bench.csv.

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::backend::cpu::CpuBackend;
use crate::backend::DynamicsSettings;
use crate::io::{self, Dataset};
use crate::measure::cpu::{blas_description, cpu_ceiling, cpu_phases, roofline, Phases, Roofline};
use crate::measure::peer::{run_peer, PeerProblem};
use crate::measure::throughput::{
    measure, measure_with, memory_note, ratios, rows_csv, synthetic, Ceiling, Row,
};
use crate::measure::{memory, PeerRow};
use crate::model::{Dictionary, Observations, Target};
use crate::{Error, Result};

use super::observer::{Notice, Observer};

/// Which backends a benchmark measures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum BenchBackends {
    /// The GPU when an adapter exists, else the CPU.
    Auto,
    /// The CPU only.
    Cpu,
    /// The GPU only (an error when no adapter exists).
    Gpu,
    /// Every backend present (the GPU is skipped with a note when there is no adapter).
    #[default]
    All,
}

/// Which GPU products' tile a GPU row runs (`GemmTile`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum BenchTile {
    /// The backend's own choice for the chain count (rows `gpu`).
    #[default]
    Auto,
    /// The narrow tile: 64 × 64 blocks, 8 × 4 per invocation (rows `gpu-narrow`).
    Narrow,
    /// The wide tile: 128 × 128 blocks, 8 × 8 per invocation (rows `gpu-wide`).
    Wide,
}

impl BenchTile {
    /// The label of its GPU rows.
    pub fn label(self) -> &'static str {
        match self {
            BenchTile::Auto => "gpu",
            BenchTile::Narrow => "gpu-narrow",
            BenchTile::Wide => "gpu-wide",
        }
    }
}

/// Settings of a benchmark (`Bench`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchSettings {
    /// Backends to measure.
    pub backend: BenchBackends,
    /// Chain counts to measure.
    pub chains: Vec<usize>,
    /// Dimension d of the synthetic dataset (`None`: 784); with `data` it must match the data.
    pub dim: Option<usize>,
    /// Atoms p of the Gaussian dictionary; `None`: 4·d.
    pub atoms: Option<usize>,
    /// m, minibatch size per chain and step.
    pub batch: u32,
    /// T, momentum steps per outer iteration.
    pub steps: u32,
    /// Timed outer iterations per measurement, after one warm-up iteration.
    pub outer: u32,
    /// Dataset (as for sampling); `None`: random 8-bit images of dimension `dim`.
    pub data: Option<PathBuf>,
    /// Number of random images in the synthetic dataset.
    pub images: usize,
    /// Side n of the square product that measures the CPU's GEMM ceiling (2·n³ flops).
    pub ceiling_size: usize,
    /// Seed of the dictionary, the synthetic data and the dynamics.
    pub seed: u64,
    /// Output folder (bench.json, bench.csv; written atomically).
    pub out: PathBuf,
    /// Replace bench.json, bench.csv and bench.png when `out` holds them already.
    #[serde(default)]
    pub force: bool,
    /// Also measure each backend with the SSGL prior adapting at every outer iteration (its SA
    /// update timed with the accept pass), rows labelled `cpu-ssgl` and `gpu-ssgl`, beside the
    /// Laplace rows.
    #[serde(default)]
    pub ssgl: bool,
    /// Also time the NumPy peer (benches/peers/numpy_step.py, the same step at the same sizes,
    /// its BLAS pinned to rayon's thread count) with this Python at every CPU chain count, and
    /// report rmld over NumPy (`numpy_peer` in bench.json). `None`: not run.
    #[serde(default)]
    pub peer_python: Option<PathBuf>,
    /// Also measure the GPU with A stored as f16 (`Precision::F16`; rows `gpu-f16`, beside the
    /// f32 rows of the same run).
    #[serde(default)]
    pub f16: bool,
    /// The GPU products' tiles to measure, a row per tile and chain count (`auto`: the
    /// backend's choice, rows `gpu`; `narrow`, `wide`: that tile, rows `gpu-narrow`,
    /// `gpu-wide`); the GPU ceiling is measured with every tile the adapter holds.
    #[serde(default = "default_tiles")]
    pub gemm_tiles: Vec<BenchTile>,
}

/// `[Auto]`: the backend's own tile.
fn default_tiles() -> Vec<BenchTile> {
    vec![BenchTile::Auto]
}

impl Default for BenchSettings {
    fn default() -> Self {
        BenchSettings {
            backend: BenchBackends::All,
            chains: vec![1, 16, 256, 1024, 4096],
            dim: None,
            atoms: None,
            batch: 64,
            steps: 20,
            outer: 3,
            data: None,
            images: 2000,
            ceiling_size: 1536,
            seed: 0,
            out: PathBuf::from("rmld-bench"),
            force: false,
            ssgl: false,
            peer_python: None,
            f16: false,
            gemm_tiles: default_tiles(),
        }
    }
}

impl BenchSettings {
    /// Checks the settings that do not need the data.
    pub fn validate(&self) -> Result<()> {
        if self.chains.is_empty() || self.chains.iter().any(|&c| c == 0 || c > u32::MAX as usize) {
            return Err(Error::usage(
                "chains",
                format!(
                    "expected chain counts from 1 to 4294967295, got {:?}",
                    self.chains
                ),
            ));
        }
        for (field, value) in [
            ("batch", self.batch),
            ("steps", self.steps),
            ("outer", self.outer),
        ] {
            if value == 0 {
                return Err(Error::usage(field, "must be at least 1"));
            }
        }
        if self.ceiling_size == 0 {
            return Err(Error::usage("ceiling_size", "must be at least 1"));
        }
        if self.gemm_tiles.is_empty() {
            return Err(Error::usage(
                "gemm_tiles",
                "expected at least one of auto, narrow, wide",
            ));
        }
        let n = self.ceiling_size as f64;
        memory::check_fits(
            "ceiling_size",
            &format!(
                "three {0} × {0} float matrices for the GEMM ceiling",
                self.ceiling_size
            ),
            3.0 * 4.0 * n * n,
        )?;
        if self.data.is_none() {
            let d = self.dim.unwrap_or(784);
            self.check_dictionary_fits(d)?;
            memory::check_fits(
                "images",
                &format!("{} synthetic 8-bit images of {d} pixels", self.images),
                self.images as f64 * d as f64,
            )?;
        }
        Ok(())
    }

    /// Fails (naming `atoms`, or `dim` when the atoms follow from it) when the d × p dictionary
    /// and one chain do not fit the memory available.
    fn check_dictionary_fits(&self, d: usize) -> Result<()> {
        let p = self.atoms.unwrap_or(d.saturating_mul(4));
        let setting = match (self.atoms, &self.data) {
            (Some(_), _) | (None, Some(_)) => "atoms",
            (None, None) => "dim",
        };
        memory::check_fits(
            setting,
            &format!("a {d} × {p} float dictionary and one chain"),
            memory::sampler_bytes(1, d, p),
        )
    }
}

/// The Laplace rate: λ = 0.05 at pixel-max 1 (the README's pairing); it barely matters for speed.
const LAMBDA: f32 = 0.05;
/// A small step keeps every chain finite from the zero start, so no NaN or denormal slows a backend.
const ETA: f32 = 0.001;

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

/// The bench's data and where it came from: `data`, or `images` synthetic ones.
fn observations(args: &BenchSettings) -> Result<(Observations, String)> {
    match &args.data {
        Some(path) => {
            let dataset = Dataset::load(path)?;
            if dataset.n == 0 {
                return Err(Error::input(path, "the dataset holds no observations"));
            }
            if args.dim.is_some_and(|d| d != dataset.d) {
                return Err(Error::usage(
                    "dim",
                    format!("the data have dimension {}", dataset.d),
                ));
            }
            let source = format!("{} ({} × {})", path.display(), dataset.n, dataset.d);
            Ok((Observations::from_dataset(&dataset, 1.0), source))
        }
        None => {
            let d = args.dim.unwrap_or(784);
            if d == 0 || args.images == 0 {
                return Err(Error::usage(
                    "dim/images",
                    "the synthetic dataset needs d ≥ 1 and at least one image",
                ));
            }
            Ok((
                synthetic(args.images, d, args.seed),
                format!("synthetic: {} random 8-bit images of {d}", args.images),
            ))
        }
    }
}

/// What the measurements of a run gathered so far.
#[derive(Default)]
struct Measured {
    rows: Vec<Row>,
    ceilings: Vec<Ceiling>,
    phases: Vec<Phases>,
    rooflines: Vec<Roofline>,
    peers: Vec<PeerRow>,
    notes: Vec<String>,
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
    super::outputs::check_output_folder(
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
    io::prepare_output_dir(&args.out)?;
    let _lock = super::lock_output(&args.out)?;
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
        cpu_rows(args, &target, &dynamics, &mut measured, observer)?;
    }
    if want_gpu && !observer.stop_requested() {
        match gpu::run(args, &target, &dynamics, &mut measured, observer) {
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
    }
    let ratios = ratios(&measured.rows);
    let report = report_json(args, (d, p), &source, &measured, &ratios, interrupted);
    io::write_json_atomic(&args.out.join("bench.json"), &report)?;
    let csv = rows_csv(&measured.rows);
    io::write_atomic(&args.out.join("bench.csv"), |w| w.write_all(csv.as_bytes()))?;
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

/// The CPU's ceiling, then at every chain count its row, phases and roofline (and, when asked,
/// the NumPy peer and the SSGL row).
fn cpu_rows(
    args: &BenchSettings,
    target: &Arc<Target>,
    dynamics: &DynamicsSettings,
    measured: &mut Measured,
    observer: &dyn Observer,
) -> Result<()> {
    let (d, p) = (target.d(), target.p());
    let peer_problem = PeerProblem {
        d,
        p,
        batch: args.batch,
        steps: args.steps,
        outer: args.outer,
        images: target.observations.n,
        seed: args.seed,
        threads: rayon::current_num_threads(),
    };
    let ceiling = cpu_ceiling(args.ceiling_size);
    observer.notice(&Notice::BenchCeiling {
        ceiling: ceiling.clone(),
        timing: None,
    });
    let bytes = 4 * (5 * p + 5 * d);
    for &c in &args.chains {
        if observer.stop_requested() {
            break;
        }
        if let Some(note) = memory_note(c, bytes, d, p) {
            measured.rows.push(Row::skipped("cpu", "", c, note));
            continue;
        }
        let mut backend = CpuBackend::new(target.clone(), dynamics.clone(), c);
        let mut row = measure(&mut backend, dynamics, d, p, args.outer)?;
        drop(backend);
        row.timing = "wall-clock".into();
        row.ceiling_fraction = row.gflops_counted / ceiling.gflops;
        let phase = cpu_phases(target, dynamics, c)?;
        observer.notice(&Notice::BenchMeasured {
            backend: "cpu".into(),
            chains: c,
            chain_steps_per_second: row.chain_steps_per_second,
            products_gflops: Some(phase.products_gflops),
        });
        measured.phases.push(phase);
        #[allow(unused_mut)]
        let mut line = roofline(target, c, row.chain_steps_per_second);
        #[cfg(feature = "blas")]
        {
            let mut backend =
                CpuBackend::new(target.clone(), dynamics.clone(), c).with_blas_products();
            let blas_row = measure(&mut backend, dynamics, d, p, args.outer)?;
            let rate = blas_row.chain_steps_per_second;
            line.rmld_blas_products_chain_steps_per_second = Some(rate);
            line.fraction_of_blas_with_blas_products =
                line.blas_chain_steps_per_second.map(|b| rate / b);
        }
        measured.rooflines.push(line);
        if let Some(python) = &args.peer_python {
            match run_peer(python, &peer_problem, c, row.chain_steps_per_second) {
                Ok(peer) => measured.peers.push(peer),
                Err(e) => measured
                    .notes
                    .push(format!("NumPy peer not measured at C = {c}: {e}")),
            }
        }
        measured.rows.push(row);
        if args.ssgl {
            let mut backend = CpuBackend::try_new(ssgl_target(target), dynamics.clone(), c)?;
            let mut row = measure_with(&mut backend, dynamics, d, p, args.outer, true)?;
            row.backend = "cpu-ssgl".into();
            row.timing = "wall-clock".into();
            row.ceiling_fraction = row.gflops_counted / ceiling.gflops;
            observer.notice(&Notice::BenchMeasured {
                backend: "cpu-ssgl".into(),
                chains: c,
                chain_steps_per_second: row.chain_steps_per_second,
                products_gflops: None,
            });
            measured.rows.push(row);
        }
    }
    measured.ceilings.push(ceiling);
    Ok(())
}

/// The bench's target with the SSGL prior adapting at every outer iteration (the `ssgl` rows).
fn ssgl_target(target: &Target) -> Arc<Target> {
    let ssgl = crate::model::Ssgl {
        mode: crate::model::SsglMode::Continuous,
        ..crate::model::Ssgl::default()
    };
    Arc::new(Target::clone(target).with_prior(crate::model::Prior::Ssgl(ssgl)))
}

/// bench.json's content.
fn report_json(
    args: &BenchSettings,
    (d, p): (usize, usize),
    source: &str,
    measured: &Measured,
    ratios: &[(usize, f64)],
    interrupted: bool,
) -> Value {
    json!({
        "command": "bench",
        "rmld_version": env!("CARGO_PKG_VERSION"),
        "problem": { "d": d, "p": p, "batch": args.batch, "steps": args.steps, "outer": args.outer,
                     "data": source, "lambda": LAMBDA, "eta": ETA, "seed": args.seed },
        "counted_flops": "4·d·p per chain-step (A z and Aᵀ r) + 4·d·p per chain and outer iteration (full residual and gradient at Z)",
        "machine": { "threads": rayon::current_num_threads(), "os": std::env::consts::OS, "arch": std::env::consts::ARCH },
        "ceilings": measured.ceilings,
        "rows": measured.rows,
        "gpu_over_cpu": ratios.iter().map(|(c, r)| json!({ "chains": c, "ratio": r })).collect::<Vec<_>>(),
        "cpu_phases": measured.phases,
        "cpu_roofline": { "blas": blas_description(), "rows": measured.rooflines },
        "numpy_peer": { "python": args.peer_python, "threads": rayon::current_num_threads(),
                        "script": "benches/peers/numpy_step.py", "rows": measured.peers },
        "notes": measured.notes,
        "interrupted": interrupted,
    })
}

#[cfg(not(feature = "gpu"))]
mod gpu {
    //! Stand-in when the binary is built without the `gpu` feature.

    use super::{BenchSettings, DynamicsSettings, Measured, Observer, Target};
    use crate::{Error, Result};

    pub fn present() -> bool {
        false
    }

    pub fn software_adapter() -> Option<String> {
        None
    }

    pub fn run(
        _: &BenchSettings,
        _: &Target,
        _: &DynamicsSettings,
        _: &mut Measured,
        _: &dyn Observer,
    ) -> Result<()> {
        Err(Error::Gpu(
            "this rmld was built without the `gpu` feature".into(),
        ))
    }
}

#[cfg(feature = "gpu")]
mod gpu {
    //! The GPU rows: the ceilings, then the backend per chain count, tile and variant.

    use std::sync::Arc;

    use crate::backend::gpu::kernels::GemmTile;
    use crate::backend::gpu::{adapter_available, GpuBackend, GpuContext, GpuOptions};
    use crate::measure::gpu::{gpu_ceiling, GpuCeiling};
    use crate::measure::throughput::{measure, measure_with, memory_note, Row};
    use crate::Result;

    use super::{
        ssgl_target, BenchSettings, BenchTile, DynamicsSettings, Measured, Notice, Observer, Target,
    };

    /// The backend's tile setting for a bench tile.
    fn asked(tile: BenchTile) -> Option<GemmTile> {
        match tile {
            BenchTile::Auto => None,
            BenchTile::Narrow => Some(GemmTile::Narrow),
            BenchTile::Wide => Some(GemmTile::Wide),
        }
    }

    pub fn present() -> bool {
        adapter_available()
    }

    pub use crate::backend::gpu::software_adapter;

    /// A measured row labelled, set against the ceiling and announced.
    fn finish(
        row: Row,
        label: &str,
        backend: &GpuBackend,
        gpu: &GpuCeiling,
        observer: &dyn Observer,
    ) -> Row {
        let mut row = row;
        row.backend = label.into();
        row.gemm_tile = backend.gemm_tile().name().into();
        row.timing = gpu.timing.into();
        row.ceiling_fraction = row.gflops_counted / gpu.ceiling.gflops;
        row.device_ceiling_fraction = row.gflops_device.map(|g| g / gpu.ceiling.gflops);
        observer.notice(&Notice::BenchMeasured {
            backend: label.into(),
            chains: row.chains,
            chain_steps_per_second: row.chain_steps_per_second,
            products_gflops: None,
        });
        row
    }

    /// Measures the ceilings, then the backend at every chain count; rows go into `measured`.
    pub fn run(
        args: &BenchSettings,
        target: &Arc<Target>,
        dynamics: &DynamicsSettings,
        measured: &mut Measured,
        observer: &dyn Observer,
    ) -> Result<()> {
        let context = GpuContext::shared()?;
        let gpu = gpu_ceiling(&context)?;
        observer.notice(&Notice::BenchCeiling {
            ceiling: gpu.ceiling.clone(),
            timing: Some(gpu.timing.to_string()),
        });
        let (d, p) = (target.d(), target.p());
        let bytes = 4 * (5 * p + 4 * d + 5);
        let rows = &mut measured.rows;
        for &c in &args.chains {
            if observer.stop_requested() {
                break;
            }
            // Software adapters hold device memory in host memory; for a real GPU the backend's
            // allocation errors tell instead.
            if let Some(note) = gpu.software.then(|| memory_note(c, bytes, d, p)).flatten() {
                for &tile in &args.gemm_tiles {
                    rows.push(Row::skipped(tile.label(), &gpu.device, c, note.clone()));
                }
                continue;
            }
            // The variants below run the first tile asked for.
            let options = GpuOptions {
                timestamps: true,
                gemm_tile: asked(args.gemm_tiles[0]),
                ..GpuOptions::default()
            };
            for &tile in &args.gemm_tiles {
                let label = tile.label();
                let options = GpuOptions {
                    gemm_tile: asked(tile),
                    ..options.clone()
                };
                let backend = GpuBackend::new(target.clone(), dynamics.clone(), c, options);
                let mut backend = match backend {
                    Ok(b) => b,
                    Err(e) => {
                        rows.push(Row::skipped(label, &gpu.device, c, e.to_string()));
                        continue;
                    }
                };
                let row = measure(&mut backend, dynamics, d, p, args.outer)?;
                rows.push(finish(row, label, &backend, &gpu, observer));
            }
            // The variants measured beside the plain row: (label, target, SSGL's SA update).
            let mut variants: Vec<(&str, Arc<Target>, bool)> = Vec::new();
            if args.ssgl {
                variants.push(("gpu-ssgl", ssgl_target(target), true));
            }
            if args.f16 {
                let f16 = Target::clone(target).with_precision(crate::model::Precision::F16)?;
                variants.push(("gpu-f16", Arc::new(f16), false));
            }
            for (label, variant, adapts) in variants {
                let mut backend = GpuBackend::new(variant, dynamics.clone(), c, options.clone())?;
                let row = measure_with(&mut backend, dynamics, d, p, args.outer, adapts)?;
                rows.push(finish(row, label, &backend, &gpu, observer));
            }
        }
        measured.ceilings.push(gpu.ceiling);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked() {
        BenchSettings::default().validate().unwrap();
        let bad = |f: &dyn Fn(&mut BenchSettings), name: &str| {
            let mut s = BenchSettings::default();
            f(&mut s);
            match s.validate() {
                Err(Error::Usage { field, .. }) => assert_eq!(field, name),
                other => panic!("{name}: {other:?}"),
            }
        };
        bad(&|s| s.chains.clear(), "chains");
        bad(&|s| s.chains = vec![4, 0], "chains");
        bad(&|s| s.outer = 0, "outer");
        bad(&|s| s.ceiling_size = 0, "ceiling_size");
    }
}
