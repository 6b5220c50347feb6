//! Throughput measurement (`Bench`): chain-steps/s per backend and chain count, against a ceiling measured in the same run.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::backend::cpu::{matmul, CpuBackend};
use crate::backend::{Backend, DynamicsSettings};
use crate::io::{self, Dataset, Pixels};
use crate::methods::MhRule;
use crate::model::{Dictionary, Observations, Target};
use crate::rng::{Purpose, Stream};
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
        super::memory::check_fits(
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
            super::memory::check_fits(
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
        super::memory::check_fits(
            setting,
            &format!("a {d} × {p} float dictionary and one chain"),
            super::memory::sampler_bytes(1, d, p),
        )
    }
}

/// The Laplace rate: λ = 0.05 at pixel-max 1 (the README's pairing); it barely matters for speed.
const LAMBDA: f32 = 0.05;
/// A small step keeps every chain finite from the zero start, so no NaN or denormal slows a backend.
const ETA: f32 = 0.001;
/// Measurements stop growing a backend's memory past this share of the host's available memory.
const MEMORY_SHARE: f64 = 0.7;

/// One backend at one chain count.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The backend's kind ("cpu", "gpu").
    pub backend: String,
    /// The device it ran on.
    pub device: String,
    /// Chains C.
    pub chains: usize,
    /// "ok", or "skipped" with the reason in `note`.
    pub status: String,
    /// Why the measurement was skipped.
    pub note: String,
    /// Which clock timed it.
    pub timing: String,
    /// Backend memory per chain.
    pub bytes_per_chain: usize,
    /// Timed outer iterations.
    pub outer_iterations: u32,
    /// Wall seconds of the timed outer iterations, and their phases.
    pub seconds: f64,
    /// Of which proposing.
    pub propose_seconds: f64,
    /// Of which the host's MH decisions.
    pub host_mh_seconds: f64,
    /// Of which accepting.
    pub accept_seconds: f64,
    /// Of which reading positions and images back.
    pub readback_seconds: f64,
    /// Chain-steps per second.
    pub chain_steps_per_second: f64,
    /// Samples (chain × outer iteration) per second.
    pub samples_per_second: f64,
    /// 4·d·p per chain-step only.
    pub gflops_steps: f64,
    /// Plus 4·d·p per chain and outer iteration for the full residual and gradient at Z.
    pub gflops_counted: f64,
    /// gflops_counted over the backend's ceiling.
    pub ceiling_fraction: f64,
    /// (host MH + reading positions and images back) over the total.
    pub outside_device_share: f64,
    /// Accepted proposals over proposals.
    pub acceptance: f64,
    /// Device seconds of the timed propose and accept passes (timestamp queries), when measured.
    pub device_seconds: Option<f64>,
    /// gflops_counted over device seconds instead of wall seconds.
    pub gflops_device: Option<f64>,
    /// gflops_device over the ceiling.
    pub device_ceiling_fraction: Option<f64>,
    /// The GPU products' tile the row ran (`narrow`, `wide`); empty for the CPU.
    pub gemm_tile: String,
}

impl Row {
    fn skipped(backend: &str, device: &str, chains: usize, note: String) -> Row {
        Row {
            backend: backend.into(),
            device: device.into(),
            chains,
            status: "skipped".into(),
            note,
            timing: String::new(),
            bytes_per_chain: 0,
            outer_iterations: 0,
            seconds: 0.0,
            propose_seconds: 0.0,
            host_mh_seconds: 0.0,
            accept_seconds: 0.0,
            readback_seconds: 0.0,
            chain_steps_per_second: 0.0,
            samples_per_second: 0.0,
            gflops_steps: 0.0,
            gflops_counted: 0.0,
            ceiling_fraction: 0.0,
            outside_device_share: 0.0,
            acceptance: 0.0,
            device_seconds: None,
            gflops_device: None,
            device_ceiling_fraction: None,
            gemm_tile: String::new(),
        }
    }
}

/// A measured ceiling of one backend, in GFLOP/s.
#[derive(Clone, Debug, Serialize)]
pub struct Ceiling {
    /// The backend's kind.
    pub backend: String,
    /// What was measured.
    pub what: String,
    /// The ceiling.
    pub gflops: f64,
    /// Other ceilings measured alongside (e.g. the raw FMA rate of a GPU).
    pub extra: Vec<(String, f64)>,
}

/// CPU phase times of one outer iteration at one chain count (seconds).
#[derive(Clone, Debug, Serialize)]
pub struct Phases {
    /// Chains C.
    pub chains: usize,
    /// Gathering the minibatch means.
    pub gather: f64,
    /// A z − ybar.
    pub residual_product: f64,
    /// Aᵀ r.
    pub transpose_product: f64,
    /// The momentum and position update.
    pub update: f64,
    /// The full residual and gradient at Z.
    pub full_residual_and_gradient: f64,
    /// The MH terms.
    pub mh_terms: f64,
    /// GFLOP/s of the two products alone, over their own time.
    pub products_gflops: f64,
}

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
    pub peers: Vec<super::bench_peer::PeerRow>,
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

/// n random 8-bit images of dimension d from the seed (what MNIST looks like to the kernels).
fn synthetic(n: usize, d: usize, seed: u64) -> Observations {
    let mut words = vec![0u32; n * d];
    Stream::new(seed, 0, 0, 0, Purpose::InitPick).fill_u32(&mut words);
    Observations {
        n,
        d,
        pixels: Pixels::U8(words.iter().map(|w| (w >> 24) as u8).collect()),
        scale: 1.0 / 255.0,
    }
}

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

/// Why `chains` chains of `bytes_per_chain` (plus the per-iteration read-back copies) would not fit.
fn memory_note(chains: usize, bytes_per_chain: usize, d: usize, p: usize) -> Option<String> {
    let available = super::memory::available_bytes()? as f64;
    let needed = chains as f64 * (bytes_per_chain + 4 * (d + p)) as f64;
    (needed > MEMORY_SHARE * available).then(|| {
        format!(
            "needs ~{:.0} MB, more than {:.0}% of the {:.0} MB available",
            needed / 1e6,
            100.0 * MEMORY_SHARE,
            available / 1e6
        )
    })
}

/// Times `outer` outer iterations after one warm-up, phase by phase, as the orchestrator runs them.
fn measure(
    backend: &mut dyn Backend,
    dynamics: &DynamicsSettings,
    d: usize,
    p: usize,
    outer: u32,
) -> Result<Row> {
    measure_with(backend, dynamics, d, p, outer, false)
}

/// `measure`, with the prior's adaptive update after every accept when `adapt` (timed with it).
fn measure_with(
    backend: &mut dyn Backend,
    dynamics: &DynamicsSettings,
    d: usize,
    p: usize,
    outer: u32,
    adapt: bool,
) -> Result<Row> {
    let chains = backend.chains();
    backend.load_positions(&vec![0f32; chains * p])?;
    let rule = MhRule {
        enabled: true,
        discount: 1.0,
        delta: dynamics.eta * dynamics.steps as f32,
        method: crate::methods::Method::Rmld,
    };
    let (mut propose, mut mh, mut accept, mut readback) = (0.0, 0.0, 0.0, 0.0);
    let mut accepted = 0usize;
    let mut device_start = None;
    for k in 0..=outer {
        let iteration = k + 1;
        let t0 = Instant::now();
        let terms = backend.propose(iteration)?;
        let t1 = Instant::now();
        let mask: Vec<bool> = terms
            .iter()
            .enumerate()
            .map(|(c, t)| rule.decide(t, dynamics.seed, c as u32, iteration).accepted)
            .collect();
        let t2 = Instant::now();
        backend.accept(&mask)?;
        if adapt {
            backend.prior_update(iteration)?;
        }
        let t3 = Instant::now();
        // The orchestrator hands every sample to its sink: codes and images come back each time.
        let codes = backend.positions()?;
        let images = backend.images()?;
        let t4 = Instant::now();
        std::hint::black_box((&codes, &images));
        if k == 0 {
            device_start = backend.device_seconds()?;
            continue; // the warm-up
        }
        propose += (t1 - t0).as_secs_f64();
        mh += (t2 - t1).as_secs_f64();
        accept += (t3 - t2).as_secs_f64();
        readback += (t4 - t3).as_secs_f64();
        accepted += mask.iter().filter(|&&a| a).count();
    }
    let seconds = propose + mh + accept + readback;
    let steps = dynamics.steps as f64;
    let flop = 4.0 * d as f64 * p as f64 * chains as f64 * outer as f64;
    let device_seconds = backend
        .device_seconds()?
        .zip(device_start)
        .map(|(end, start)| end - start);
    let info = backend.info();
    Ok(Row {
        backend: info.kind,
        device: info.device,
        chains,
        status: "ok".into(),
        note: String::new(),
        timing: String::new(),
        bytes_per_chain: info.bytes_per_chain,
        outer_iterations: outer,
        seconds,
        propose_seconds: propose,
        host_mh_seconds: mh,
        accept_seconds: accept,
        readback_seconds: readback,
        chain_steps_per_second: chains as f64 * steps * outer as f64 / seconds,
        samples_per_second: chains as f64 * outer as f64 / seconds,
        gflops_steps: flop * steps / seconds / 1e9,
        gflops_counted: flop * (steps + 1.0) / seconds / 1e9,
        ceiling_fraction: 0.0,
        outside_device_share: (mh + readback) / seconds,
        acceptance: accepted as f64 / (chains as f64 * outer as f64),
        device_seconds,
        gflops_device: device_seconds.map(|t| flop * (steps + 1.0) / t / 1e9),
        device_ceiling_fraction: None,
        gemm_tile: String::new(),
    })
}

/// Best of three timed runs of `f` after one warm-up, in seconds.
fn best_of_three(mut f: impl FnMut()) -> f64 {
    f();
    (0..3)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// The CPU ceiling: the `gemm` crate on an n × n × n product, best of three.
fn cpu_ceiling(n: usize) -> Ceiling {
    let a: Vec<f32> = (0..n * n)
        .map(|i| ((i % 97) as f32 - 48.0) * 1e-3)
        .collect();
    let b: Vec<f32> = (0..n * n)
        .map(|i| ((i % 89) as f32 - 44.0) * 1e-3)
        .collect();
    let mut c = vec![0f32; n * n];
    let seconds = best_of_three(|| matmul::square_product(&a, &b, &mut c, n));
    Ceiling {
        backend: "cpu".into(),
        what: format!(
            "gemm crate, square {n}×{n}×{n} f32 product on {} threads",
            rayon::current_num_threads()
        ),
        gflops: 2.0 * (n as f64).powi(3) / seconds / 1e9,
        extra: Vec::new(),
    }
}

/// One outer iteration of the CPU backend timed phase by phase (`CpuBackend::with_phase_timing`):
/// the very code path `sample` runs, from chains at zero.
fn cpu_phases(target: &Arc<Target>, dynamics: &DynamicsSettings, chains: usize) -> Result<Phases> {
    let (d, p) = (target.d(), target.p());
    let mut backend =
        CpuBackend::try_new(target.clone(), dynamics.clone(), chains)?.with_phase_timing();
    // Loading computes the current state's residual and gradient, outside the timed proposal.
    backend.load_positions(&vec![0f32; chains * p])?;
    backend.propose(1)?;
    let times = backend.phase_seconds().unwrap_or_default();
    let product_flop = 4.0 * (d * p * chains) as f64 * dynamics.steps as f64;
    Ok(Phases {
        chains,
        gather: times[0],
        residual_product: times[1],
        transpose_product: times[2],
        update: times[3],
        full_residual_and_gradient: times[4],
        mh_terms: times[5],
        products_gflops: product_flop / (times[1] + times[2]) / 1e9,
    })
}

/// The step's two products alone at one chain count (best of three each, after a warm-up),
/// by the `gemm` crate, by the packed kernels the CPU backend uses (on its path) and, with the
/// `blas` feature, by the system OpenBLAS on as many threads; with rmld's measured
/// chain-steps/s over each.
#[derive(Clone, Debug, Serialize)]
pub struct Roofline {
    /// Chains C.
    pub chains: usize,
    /// gemm crate: Z (C × p) · Aᵀ, seconds.
    pub gemm_residual_seconds: f64,
    /// gemm crate: R (C × d) · A, seconds.
    pub gemm_transpose_seconds: f64,
    /// C / (both gemm products' seconds): chain-steps/s if a step were its products alone.
    pub gemm_chain_steps_per_second: f64,
    /// The packed kernels' path (`RMLD_CPU_PATH`: avx512, avx2 or scalar; the same bits).
    pub packed_path: String,
    /// rmld's packed products (`backend::cpu::packed`, what its steps take): Z · Aᵀ, seconds.
    pub packed_residual_seconds: f64,
    /// rmld's packed products: R · A, seconds.
    pub packed_transpose_seconds: f64,
    /// C / (both packed products' seconds).
    pub packed_chain_steps_per_second: f64,
    /// rmld over its packed products alone.
    pub fraction_of_packed: f64,
    /// OpenBLAS: Z · Aᵀ, seconds (`blas` feature).
    pub blas_residual_seconds: Option<f64>,
    /// OpenBLAS: R · A, seconds.
    pub blas_transpose_seconds: Option<f64>,
    /// C / (both OpenBLAS products' seconds): the roofline.
    pub blas_chain_steps_per_second: Option<f64>,
    /// OpenBLAS's GFLOP/s on the two products.
    pub blas_gflops: Option<f64>,
    /// rmld's chain-steps/s in this run's row (the whole outer iteration, wall-clock).
    pub rmld_chain_steps_per_second: f64,
    /// rmld over the OpenBLAS roofline.
    pub fraction_of_blas: Option<f64>,
    /// rmld over the gemm crate's products alone.
    pub fraction_of_gemm: f64,
    /// `blas` feature: rmld's whole outer iteration with its products on OpenBLAS
    /// (`CpuBackend::with_blas_products`, measuring only), chain-steps/s.
    pub rmld_blas_products_chain_steps_per_second: Option<f64>,
    /// That over the OpenBLAS roofline: what the gather, update and full gradient leave.
    pub fraction_of_blas_with_blas_products: Option<f64>,
}

/// The two products' roofline at `chains` (see [`Roofline`]).
fn roofline(target: &Target, chains: usize, rmld: f64) -> Roofline {
    let (d, p) = (target.d(), target.p());
    let a = &target.dictionary.a;
    let z: Vec<f32> = (0..chains * p)
        .map(|i| ((i % 97) as f32 - 48.0) * 1e-3)
        .collect();
    let r: Vec<f32> = (0..chains * d)
        .map(|i| ((i % 89) as f32 - 44.0) * 1e-3)
        .collect();
    let zeros = vec![0f32; chains * d];
    let (mut out_d, mut out_p) = (vec![0f32; chains * d], vec![0f32; chains * p]);
    // The residual product as the backend takes it, from A column by column.
    let columns = matmul::columns_of(a, d, p);
    let layouts = matmul::Layouts::both(a, &columns);
    let gemm_residual =
        best_of_three(|| matmul::residual_product_columns(layouts, d, p, &z, &zeros, &mut out_d));
    let gemm_transpose = best_of_three(|| matmul::transpose_product(a, d, p, &r, &mut out_p));
    let packed = crate::backend::cpu::packed::PackedMatrix::both(a, d, p);
    let packed_residual = best_of_three(|| packed.residual_product(&z, &zeros, &mut out_d));
    let packed_transpose = best_of_three(|| packed.transpose_product(&r, &mut out_p));
    let packed_rate = chains as f64 / (packed_residual + packed_transpose);
    #[cfg(feature = "blas")]
    let blas = {
        use crate::backend::cpu::blas;
        blas::set_threads(rayon::current_num_threads());
        Some((
            best_of_three(|| blas::residual_product(a, d, p, &z, &mut out_d)),
            best_of_three(|| blas::transpose_product(a, d, p, &r, &mut out_p)),
        ))
    };
    #[cfg(not(feature = "blas"))]
    let blas: Option<(f64, f64)> = None;
    let gemm_rate = chains as f64 / (gemm_residual + gemm_transpose);
    let blas_rate = blas.map(|(x, y)| chains as f64 / (x + y));
    Roofline {
        chains,
        gemm_residual_seconds: gemm_residual,
        gemm_transpose_seconds: gemm_transpose,
        gemm_chain_steps_per_second: gemm_rate,
        packed_path: crate::backend::cpu::packed::CpuPath::active().name().into(),
        packed_residual_seconds: packed_residual,
        packed_transpose_seconds: packed_transpose,
        packed_chain_steps_per_second: packed_rate,
        fraction_of_packed: rmld / packed_rate,
        blas_residual_seconds: blas.map(|b| b.0),
        blas_transpose_seconds: blas.map(|b| b.1),
        blas_chain_steps_per_second: blas_rate,
        blas_gflops: blas_rate.map(|r| r * 4.0 * (d * p) as f64 / 1e9),
        rmld_chain_steps_per_second: rmld,
        fraction_of_blas: blas_rate.map(|b| rmld / b),
        fraction_of_gemm: rmld / gemm_rate,
        rmld_blas_products_chain_steps_per_second: None,
        fraction_of_blas_with_blas_products: None,
    }
}

/// What linked BLAS the roofline used.
fn blas_description() -> String {
    #[cfg(feature = "blas")]
    return format!(
        "OpenBLAS ({}), {} threads",
        crate::backend::cpu::blas::config().trim(),
        rayon::current_num_threads()
    );
    #[cfg(not(feature = "blas"))]
    "not measured: build with `--features blas` (links the system OpenBLAS)".into()
}

fn bench(args: &BenchSettings, observer: &dyn Observer) -> Result<BenchOutcome> {
    args.validate()?;
    super::outputs::check_output_folder(
        &args.out,
        super::outputs::BENCH_OUTPUTS,
        &[args.data.as_deref()],
        args.force,
    )?;
    let chain_counts = &args.chains;
    let (observations, source) = observations(args)?;
    let d = observations.d;
    let n = observations.n;
    args.check_dictionary_fits(d)?;
    let p = args.atoms.unwrap_or(4 * d);
    if p == 0 {
        return Err(Error::usage("atoms", "must be at least 1"));
    }
    let mut notes = Vec::new();
    let (want_cpu, want_gpu) = match args.backend {
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
    };
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

    let mut rows = Vec::new();
    let mut ceilings = Vec::new();
    let mut phases = Vec::new();
    let mut rooflines = Vec::new();
    let mut peers = Vec::new();
    let peer_problem = super::bench_peer::PeerProblem {
        d,
        p,
        batch: args.batch,
        steps: args.steps,
        outer: args.outer,
        images: n,
        seed: args.seed,
        threads: rayon::current_num_threads(),
    };
    if want_cpu {
        let ceiling = cpu_ceiling(args.ceiling_size);
        observer.notice(&Notice::BenchCeiling {
            ceiling: ceiling.clone(),
            timing: None,
        });
        let bytes = 4 * (5 * p + 5 * d);
        for &c in chain_counts {
            if observer.stop_requested() {
                break;
            }
            if let Some(note) = memory_note(c, bytes, d, p) {
                rows.push(Row::skipped("cpu", "", c, note));
                continue;
            }
            let mut backend = CpuBackend::new(target.clone(), dynamics.clone(), c);
            let mut row = measure(&mut backend, &dynamics, d, p, args.outer)?;
            drop(backend);
            row.timing = "wall-clock".into();
            row.ceiling_fraction = row.gflops_counted / ceiling.gflops;
            let phase = cpu_phases(&target, &dynamics, c)?;
            observer.notice(&Notice::BenchMeasured {
                backend: "cpu".into(),
                chains: c,
                chain_steps_per_second: row.chain_steps_per_second,
                products_gflops: Some(phase.products_gflops),
            });
            phases.push(phase);
            #[allow(unused_mut)]
            let mut line = roofline(&target, c, row.chain_steps_per_second);
            #[cfg(feature = "blas")]
            {
                let mut backend =
                    CpuBackend::new(target.clone(), dynamics.clone(), c).with_blas_products();
                let blas_row = measure(&mut backend, &dynamics, d, p, args.outer)?;
                let rate = blas_row.chain_steps_per_second;
                line.rmld_blas_products_chain_steps_per_second = Some(rate);
                line.fraction_of_blas_with_blas_products =
                    line.blas_chain_steps_per_second.map(|b| rate / b);
            }
            rooflines.push(line);
            if let Some(python) = &args.peer_python {
                match super::bench_peer::run_peer(
                    python,
                    &peer_problem,
                    c,
                    row.chain_steps_per_second,
                ) {
                    Ok(peer) => peers.push(peer),
                    Err(e) => notes.push(format!("NumPy peer not measured at C = {c}: {e}")),
                }
            }
            rows.push(row);
            if args.ssgl {
                let ssgl = crate::model::Ssgl {
                    mode: crate::model::SsglMode::Continuous,
                    ..crate::model::Ssgl::default()
                };
                let target =
                    Arc::new(Target::clone(&target).with_prior(crate::model::Prior::Ssgl(ssgl)));
                let mut backend = CpuBackend::try_new(target, dynamics.clone(), c)?;
                let mut row = measure_with(&mut backend, &dynamics, d, p, args.outer, true)?;
                row.backend = "cpu-ssgl".into();
                row.timing = "wall-clock".into();
                row.ceiling_fraction = row.gflops_counted / ceiling.gflops;
                observer.notice(&Notice::BenchMeasured {
                    backend: "cpu-ssgl".into(),
                    chains: c,
                    chain_steps_per_second: row.chain_steps_per_second,
                    products_gflops: None,
                });
                rows.push(row);
            }
        }
        ceilings.push(ceiling);
    }
    if want_gpu && !observer.stop_requested() {
        match gpu::run(args, &target, &dynamics, chain_counts, &mut rows, observer) {
            Ok(ceiling) => ceilings.push(ceiling),
            Err(e) if args.backend == BenchBackends::All => {
                notes.push(format!("GPU not measured: {e}"));
            }
            Err(e) => return Err(e),
        }
    }

    let interrupted = observer.stop_requested();
    if interrupted {
        notes.push("interrupted: the rows below are those measured before the stop".into());
    }
    let ratios = ratios(&rows);
    let out = &args.out;
    let report = json!({
        "command": "bench",
        "rmld_version": env!("CARGO_PKG_VERSION"),
        "problem": { "d": d, "p": p, "batch": args.batch, "steps": args.steps, "outer": args.outer,
                     "data": source, "lambda": LAMBDA, "eta": ETA, "seed": args.seed },
        "counted_flops": "4·d·p per chain-step (A z and Aᵀ r) + 4·d·p per chain and outer iteration (full residual and gradient at Z)",
        "machine": { "threads": rayon::current_num_threads(), "os": std::env::consts::OS, "arch": std::env::consts::ARCH },
        "ceilings": ceilings,
        "rows": rows,
        "gpu_over_cpu": ratios.iter().map(|(c, r)| json!({ "chains": c, "ratio": r })).collect::<Vec<_>>(),
        "cpu_phases": phases,
        "cpu_roofline": { "blas": blas_description(), "rows": rooflines },
        "numpy_peer": { "python": args.peer_python, "threads": rayon::current_num_threads(),
                        "script": "benches/peers/numpy_step.py", "rows": peers },
        "notes": notes,
        "interrupted": interrupted,
    });
    io::write_json_atomic(&out.join("bench.json"), &report)?;
    let csv = csv(&rows);
    io::write_atomic(&out.join("bench.csv"), |w| w.write_all(csv.as_bytes()))?;
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

/// A CSV cell: the value, or empty when not measured.
fn optional(value: Option<f64>) -> String {
    value.map_or(String::new(), |v| v.to_string())
}

/// GPU over CPU chain-steps/s per chain count where both ran in this run.
fn ratios(rows: &[Row]) -> Vec<(usize, f64)> {
    let ok = |kind: &str, c: usize| {
        rows.iter()
            .find(|r| r.backend == kind && r.chains == c && r.status == "ok")
            .map(|r| r.chain_steps_per_second)
    };
    let mut chains: Vec<usize> = rows.iter().map(|r| r.chains).collect();
    chains.sort_unstable();
    chains.dedup();
    chains
        .into_iter()
        .filter_map(|c| Some((c, ok("gpu", c)? / ok("cpu", c)?)))
        .collect()
}

fn csv(rows: &[Row]) -> String {
    let mut s = String::from(
        "backend,chains,status,chain_steps_per_second,samples_per_second,gflops_steps,gflops_counted,\
         ceiling_fraction,bytes_per_chain,outside_device_share,seconds,propose_seconds,host_mh_seconds,\
         accept_seconds,readback_seconds,acceptance,device_seconds,gflops_device,\
         device_ceiling_fraction,timing,note,gemm_tile\n",
    );
    for r in rows {
        let quote = |t: &str| format!("\"{}\"", t.replace('"', "\"\""));
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.backend,
            r.chains,
            r.status,
            r.chain_steps_per_second,
            r.samples_per_second,
            r.gflops_steps,
            r.gflops_counted,
            r.ceiling_fraction,
            r.bytes_per_chain,
            r.outside_device_share,
            r.seconds,
            r.propose_seconds,
            r.host_mh_seconds,
            r.accept_seconds,
            r.readback_seconds,
            r.acceptance,
            optional(r.device_seconds),
            optional(r.gflops_device),
            optional(r.device_ceiling_fraction),
            quote(&r.timing),
            quote(&r.note),
            r.gemm_tile
        );
    }
    s
}

#[cfg(not(feature = "gpu"))]
mod gpu {
    //! Stand-in when the binary is built without the `gpu` feature.

    use super::{BenchSettings, Ceiling, DynamicsSettings, Observer, Row, Target};
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
        _: &[usize],
        _: &mut Vec<Row>,
        _: &dyn Observer,
    ) -> Result<Ceiling> {
        Err(Error::Gpu(
            "this rmld was built without the `gpu` feature".into(),
        ))
    }
}

#[cfg(feature = "gpu")]
mod gpu {
    //! The GPU side: the backend per chain count, our best matrix kernel and a raw FMA kernel.

    use std::sync::Arc;
    use std::time::Instant;

    use crate::backend::gpu::buffers::{read_back_after, storage, upload, ParamSlots};
    use crate::backend::gpu::kernels::{GemmTile, Kernel, MatmulParams, WIDE_TILE_MIN_CHAINS};
    use crate::backend::gpu::timer::PassTimer;
    use crate::backend::gpu::{adapter_available, GpuBackend, GpuContext, GpuOptions};
    use crate::model::{Laplace, Precision, Prior};
    use crate::{Error, Result};

    use super::{
        measure, measure_with, memory_note, BenchSettings, BenchTile, Ceiling, DynamicsSettings,
        Notice, Observer, Row, Target,
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

    fn wait(context: &GpuContext) -> Result<()> {
        context
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .map(|_| ())
            .map_err(|e| Error::Gpu(format!("waiting for the device: {e}")))
    }

    /// Seconds per repetition of `record` (one pass of `reps` dispatches), after a warm-up, with
    /// `reps` grown until the submission takes at least `target` seconds: by timestamp queries
    /// around the pass where the device offers them, else synchronised wall-clock time.
    fn time_dispatches(
        context: &GpuContext,
        target: f64,
        record: &dyn Fn(&mut wgpu::ComputePass),
    ) -> Result<f64> {
        let timer = PassTimer::new(context, 1);
        let run = |reps: u32| -> Result<f64> {
            let started = Instant::now();
            let encoder = context.checked("timing a kernel", || {
                let mut encoder = context
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
                {
                    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: Some("timed kernel"),
                        timestamp_writes: timer.as_ref().map(|t| t.writes(0)),
                    });
                    for _ in 0..reps {
                        record(&mut pass);
                    }
                }
                if let Some(t) = &timer {
                    t.resolve(&mut encoder);
                }
                encoder
            })?;
            let pieces: Vec<_> = timer.iter().map(|t| t.piece()).collect();
            let bytes = context.checked("reading the timestamps", || {
                read_back_after(context, encoder, &pieces)
            })??;
            let seconds = match &timer {
                Some(t) => t.seconds(&bytes)[0],
                None => {
                    wait(context)?; // nothing was read back, so nothing waited yet
                    started.elapsed().as_secs_f64()
                }
            };
            Ok(seconds / reps as f64)
        };
        run(1)?; // the warm-up: pipeline creation and first-touch costs
        let once = run(1)?.max(1e-6);
        let reps = ((target / once).ceil() as u32).clamp(1, 64);
        run(reps)
    }

    /// GFLOP/s of the residual and transpose product kernels on an n × n × n product.
    fn matrix_ceiling(context: &GpuContext, n: usize, tile: GemmTile) -> Result<(f64, f64)> {
        let values: Vec<f32> = (0..n * n)
            .map(|i| ((i % 97) as f32 - 48.0) * 1e-3)
            .collect();
        let bytes = bytemuck::cast_slice(&values);
        let (a, z, y) = (
            upload(context, "A", bytes),
            upload(context, "Z", bytes),
            upload(context, "Y", bytes),
        );
        let out = storage(context, "out", (4 * n * n) as u64);
        let (params, slots) = ParamSlots::one::<MatmulParams>(context);
        params
            .writer()
            .set(
                slots,
                0,
                MatmulParams {
                    chains: n as u32,
                    d: n as u32,
                    p: n as u32,
                    y_stride: n as u32,
                    ..Default::default()
                },
            )
            .finish(context);
        let kernels =
            context.kernels_for(&Prior::Laplace(Laplace { lam: 0.0 }), Precision::F32, tile)?;
        let kernels = &kernels;
        let groups = kernels.product_groups(n, n);
        let flop = 2.0 * (n as f64).powi(3);
        let mut rates = Vec::new();
        // The kernels the backend runs at this shape: the vec4-load ones where n is a multiple of 4.
        for (kernel, buffers) in [
            (
                Kernel::ResidualProduct.for_shape(n, n),
                vec![&a, &z, &y, &out],
            ),
            (Kernel::TransposeProduct.for_shape(n, n), vec![&a, &z, &out]),
        ] {
            let launch = kernels.bind(&context.device, kernel, &params, slots, &buffers);
            let seconds = time_dispatches(context, 0.3, &|pass| {
                kernels.dispatch(pass, &launch, 0, groups)
            })?;
            rates.push(flop / seconds / 1e9);
        }
        Ok((rates[0], rates[1]))
    }

    const FMA_WGSL: &str = r#"
@group(0) @binding(0) var<storage, read_write> sink: array<vec4<f32>>;

// 1024 iterations × 4 independent vec4 FMAs = 32768 flops per invocation.
@compute @workgroup_size(256)
fn fma_peak(@builtin(global_invocation_id) id: vec3<u32>) {
    let s = f32(id.x) * 1e-9;
    var a = vec4<f32>(s, s + 1.0, s + 2.0, s + 3.0);
    var b = a + 0.5;
    var c = a + 0.25;
    var e = a + 0.125;
    let m = vec4<f32>(0.9999999);
    let k = vec4<f32>(1e-7);
    for (var j = 0u; j < 1024u; j++) {
        a = fma(a, m, k);
        b = fma(b, m, k);
        c = fma(c, m, k);
        e = fma(e, m, k);
    }
    sink[id.x] = a + b + c + e;
}
"#;

    /// GFLOP/s of a kernel that does nothing but independent fused multiply-adds.
    fn fma_ceiling(context: &GpuContext, workgroups: u32) -> Result<f64> {
        let device = &context.device;
        let pipeline = context.checked("compiling the FMA kernel", || {
            let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("fma_peak"),
                source: wgpu::ShaderSource::Wgsl(FMA_WGSL.into()),
            });
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some("fma_peak"),
                layout: None,
                module: &module,
                entry_point: Some("fma_peak"),
                compilation_options: Default::default(),
                cache: None,
            })
        })?;
        let sink = storage(context, "fma sink", 16 * 256 * workgroups as u64);
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("fma_peak"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: sink.as_entire_binding(),
            }],
        });
        let seconds = time_dispatches(context, 0.3, &|pass| {
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &group, &[]);
            pass.dispatch_workgroups(workgroups, 1, 1);
        })?;
        Ok(256.0 * workgroups as f64 * 32768.0 / seconds / 1e9)
    }

    /// Measures the ceilings, then the backend at every chain count; rows go into `rows`.
    pub fn run(
        args: &BenchSettings,
        target: &Arc<Target>,
        dynamics: &DynamicsSettings,
        chain_counts: &[usize],
        rows: &mut Vec<Row>,
        observer: &dyn Observer,
    ) -> Result<Ceiling> {
        let context = GpuContext::shared()?;
        let info = context.adapter.get_info();
        let software = info.device_type == wgpu::DeviceType::Cpu;
        // A software renderer is measured only when asked for by name, and labelled everywhere.
        let device = if software {
            format!("{} [software renderer, not a GPU]", context.describe())
        } else {
            context.describe()
        };
        // A software rasteriser (lavapipe) runs ~1000× slower: smaller ceiling problems.
        let (n, workgroups) = if software { (512, 64) } else { (4096, 16384) };
        // Every tile the adapter holds (the wide one needs 256 invocations and 16 KiB).
        let mut products = Vec::new();
        for tile in [GemmTile::Narrow, GemmTile::Wide] {
            if tile.fits(&context.limits) {
                let (residual, transpose) = matrix_ceiling(&context, n, tile)?;
                products.push((tile, residual, transpose));
            }
        }
        let fma = fma_ceiling(&context, workgroups)?;
        let timestamps = context.has_timestamps();
        let timing = if timestamps {
            "timestamp queries: device time of the propose and accept passes and of the ceiling \
             kernels; throughput and host share from synchronised wall-clock time"
        } else {
            "wall-clock, synchronised by the MH read-back (the adapter offers no timestamp queries)"
        };
        let mut extra = Vec::new();
        for &(tile, residual, transpose) in &products {
            let tile = tile.name();
            extra.push((format!("residual_product ({tile} tile)"), residual));
            extra.push((format!("transpose_product ({tile} tile)"), transpose));
        }
        extra.push(("fma_peak (raw fp32 FMA)".into(), fma));
        // What the tile choice reads: the adapter's type and limits (and, for the record, its
        // subgroup sizes, which neither tile depends on: both are conflict-free per 128-byte phase).
        let (subgroup_min, subgroup_max) = context.subgroup_sizes();
        let limits = &context.limits;
        let auto = match GemmTile::choose(info.device_type, limits, usize::MAX) {
            GemmTile::Wide => format!("wide from {WIDE_TILE_MIN_CHAINS} chains, else narrow"),
            GemmTile::Narrow => "narrow".into(),
        };
        let ceiling = Ceiling {
            backend: "gpu".into(),
            what: format!(
                "best of our residual/transpose product kernels (each tile) on a square \
                 {n}×{n}×{n} product, {}; adapter: subgroups of {subgroup_min}–{subgroup_max}, \
                 {} invocations and {} bytes of workgroup memory per workgroup; auto tile: {auto}",
                device.clone(),
                limits.max_compute_invocations_per_workgroup,
                limits.max_compute_workgroup_storage_size,
            ),
            gflops: products
                .iter()
                .map(|&(_, r, t)| r.max(t))
                .fold(0.0, f64::max),
            extra,
        };
        observer.notice(&Notice::BenchCeiling {
            ceiling: ceiling.clone(),
            timing: Some(timing.to_string()),
        });
        let (d, p) = (target.d(), target.p());
        let bytes = 4 * (5 * p + 4 * d + 5);
        // A measured row labelled, set against the ceiling and announced.
        let finish = |mut row: Row, label: &str, backend: &GpuBackend| {
            row.backend = label.into();
            row.gemm_tile = backend.gemm_tile().name().into();
            row.timing = timing.into();
            row.ceiling_fraction = row.gflops_counted / ceiling.gflops;
            row.device_ceiling_fraction = row.gflops_device.map(|g| g / ceiling.gflops);
            observer.notice(&Notice::BenchMeasured {
                backend: label.into(),
                chains: row.chains,
                chain_steps_per_second: row.chain_steps_per_second,
                products_gflops: None,
            });
            row
        };
        for &c in chain_counts {
            if observer.stop_requested() {
                break;
            }
            // Software adapters hold device memory in host memory; for a real GPU the backend's
            // allocation errors tell instead.
            if let Some(note) = software.then(|| memory_note(c, bytes, d, p)).flatten() {
                for &tile in &args.gemm_tiles {
                    rows.push(Row::skipped(tile.label(), &device, c, note.clone()));
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
                        rows.push(Row::skipped(label, &device, c, e.to_string()));
                        continue;
                    }
                };
                let row = measure(&mut backend, dynamics, d, p, args.outer)?;
                rows.push(finish(row, label, &backend));
            }
            // The variants measured beside the plain row: (label, target, SSGL's SA update).
            let mut variants: Vec<(&str, Target, bool)> = Vec::new();
            if args.ssgl {
                let ssgl = crate::model::Ssgl {
                    mode: crate::model::SsglMode::Continuous,
                    ..crate::model::Ssgl::default()
                };
                let ssgl = Target::clone(target).with_prior(crate::model::Prior::Ssgl(ssgl));
                variants.push(("gpu-ssgl", ssgl, true));
            }
            if args.f16 {
                let f16 = Target::clone(target).with_precision(crate::model::Precision::F16)?;
                variants.push(("gpu-f16", f16, false));
            }
            for (label, variant, adapts) in variants {
                let variant = Arc::new(variant);
                let mut backend = GpuBackend::new(variant, dynamics.clone(), c, options.clone())?;
                let row = measure_with(&mut backend, dynamics, d, p, args.outer, adapts)?;
                rows.push(finish(row, label, &backend));
            }
        }
        Ok(ceiling)
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
