//! A benchmark's measurements: its data, the CPU rows and the GPU rows (each with its ceiling), bench.json's content.
//!
//! What the rows are measured against and what they are told to: a `BenchProgress` (the session
//! turns it into its observer's notices and stop requests).

use std::sync::Arc;

use serde_json::{json, Value};

use super::bench_settings::BenchSettings;
use super::cpu::{blas_description, cpu_ceiling, cpu_phases, roofline, Phases, Roofline};
use super::peer::{run_peer, PeerProblem, PeerRow};
use super::throughput::{measure, measure_with, memory_note, synthetic, Ceiling, Row};
use crate::backend::cpu::CpuBackend;
use crate::backend::DynamicsSettings;
use crate::io::Dataset;
use crate::model::{Observations, Target};
use crate::{Error, Result};

/// What a benchmark tells as it measures, and whether it should stop.
pub(crate) trait BenchProgress {
    /// A backend's ceiling, measured (`timing`: how the GPU timed it).
    fn ceiling(&self, ceiling: &Ceiling, timing: Option<String>);
    /// A row measured: chain-steps/s of `backend` at `chains` (and the CPU products' GFLOP/s).
    fn measured(&self, backend: &str, chains: usize, rate: f64, products_gflops: Option<f64>);
    /// Whether to stop: asked before every chain count and every timed outer iteration.
    fn stop_requested(&self) -> bool;
}

/// The Laplace rate: λ = 0.05 at pixel-max 1 (the README's pairing); it barely matters for speed.
pub(crate) const LAMBDA: f32 = 0.05;
/// A small step keeps every chain finite from the zero start, so no NaN or denormal slows a backend.
pub(crate) const ETA: f32 = 0.001;

/// The bench's data and where it came from: `data`, or `images` synthetic ones.
pub(crate) fn observations(args: &BenchSettings) -> Result<(Observations, String)> {
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
pub(crate) struct Measured {
    pub(crate) rows: Vec<Row>,
    pub(crate) ceilings: Vec<Ceiling>,
    pub(crate) phases: Vec<Phases>,
    pub(crate) rooflines: Vec<Roofline>,
    pub(crate) peers: Vec<PeerRow>,
    pub(crate) notes: Vec<String>,
}

/// The CPU's ceiling, then at every chain count its row, phases and roofline (and, when asked,
/// the NumPy peer and the SSGL row).
pub(crate) fn cpu_rows(
    args: &BenchSettings,
    target: &Arc<Target>,
    dynamics: &DynamicsSettings,
    measured: &mut Measured,
    progress: &dyn BenchProgress,
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
    progress.ceiling(&ceiling, None);
    let bytes = 4 * (5 * p + 5 * d);
    let stop = &|| progress.stop_requested();
    for &c in &args.chains {
        if progress.stop_requested() {
            break;
        }
        if let Some(note) = memory_note(c, bytes, d, p) {
            measured.rows.push(Row::skipped("cpu", "", c, note));
            continue;
        }
        let mut backend = CpuBackend::new(target.clone(), dynamics.clone(), c);
        // A measurement cut short by a stop is no measurement: it is left out.
        let Some(mut row) = measure(&mut backend, dynamics, (d, p), args.outer, stop)? else {
            break;
        };
        drop(backend);
        row.timing = "wall-clock".into();
        row.ceiling_fraction = row.gflops_counted / ceiling.gflops;
        let phase = cpu_phases(target, dynamics, c)?;
        progress.measured(
            "cpu",
            c,
            row.chain_steps_per_second,
            Some(phase.products_gflops),
        );
        measured.phases.push(phase);
        #[allow(unused_mut)]
        let mut line = roofline(target, c, row.chain_steps_per_second);
        #[cfg(feature = "blas")]
        {
            let mut backend =
                CpuBackend::new(target.clone(), dynamics.clone(), c).with_blas_products();
            let Some(blas_row) = measure(&mut backend, dynamics, (d, p), args.outer, stop)? else {
                break;
            };
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
            let outer = (args.outer, true);
            let Some(mut row) = measure_with(&mut backend, dynamics, (d, p), outer, stop)? else {
                break;
            };
            row.backend = "cpu-ssgl".into();
            row.timing = "wall-clock".into();
            row.ceiling_fraction = row.gflops_counted / ceiling.gflops;
            progress.measured("cpu-ssgl", c, row.chain_steps_per_second, None);
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
pub(crate) fn report_json(
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
        "rmld_build": crate::BUILD,
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
pub(crate) mod gpu {
    //! Stand-in when the binary is built without the `gpu` feature.

    use super::{BenchProgress, BenchSettings, DynamicsSettings, Measured, Target};
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
        _: &dyn BenchProgress,
    ) -> Result<()> {
        Err(Error::Gpu(
            "this rmld was built without the `gpu` feature".into(),
        ))
    }
}

#[cfg(feature = "gpu")]
pub(crate) mod gpu {
    //! The GPU rows: the ceilings, then the backend per chain count, tile and variant.

    use std::sync::Arc;

    use crate::backend::gpu::kernels::GemmTile;
    use crate::backend::gpu::{adapter_available, GpuBackend, GpuContext, GpuOptions};
    use crate::measure::bench_settings::BenchTile;
    use crate::measure::gpu::{gpu_ceiling, GpuCeiling};
    use crate::measure::throughput::{measure, measure_with, memory_note, Row};
    use crate::Result;

    use super::{ssgl_target, BenchProgress, BenchSettings, DynamicsSettings, Measured, Target};

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
        progress: &dyn BenchProgress,
    ) -> Row {
        let mut row = row;
        row.backend = label.into();
        row.gemm_tile = backend.gemm_tile().name().into();
        row.timing = gpu.timing.into();
        row.ceiling_fraction = row.gflops_counted / gpu.ceiling.gflops;
        row.device_ceiling_fraction = row.gflops_device.map(|g| g / gpu.ceiling.gflops);
        progress.measured(label, row.chains, row.chain_steps_per_second, None);
        row
    }

    /// Measures the ceilings, then the backend at every chain count; rows go into `measured`.
    pub fn run(
        args: &BenchSettings,
        target: &Arc<Target>,
        dynamics: &DynamicsSettings,
        measured: &mut Measured,
        progress: &dyn BenchProgress,
    ) -> Result<()> {
        let context = GpuContext::shared()?;
        let gpu = gpu_ceiling(&context)?;
        progress.ceiling(&gpu.ceiling, Some(gpu.timing.to_string()));
        let (d, p) = (target.d(), target.p());
        let bytes = 4 * (5 * p + 4 * d + 5);
        let rows = &mut measured.rows;
        let stop = &|| progress.stop_requested();
        'chains: for &c in &args.chains {
            if progress.stop_requested() {
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
                let Some(row) = measure(&mut backend, dynamics, (d, p), args.outer, stop)? else {
                    break 'chains;
                };
                rows.push(finish(row, label, &backend, &gpu, progress));
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
                let outer = (args.outer, adapts);
                let Some(row) = measure_with(&mut backend, dynamics, (d, p), outer, stop)? else {
                    break 'chains;
                };
                rows.push(finish(row, label, &backend, &gpu, progress));
            }
        }
        measured.ceilings.push(gpu.ceiling);
        Ok(())
    }
}
