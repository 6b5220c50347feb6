//! A backend's throughput at one chain count, timed phase by phase as the orchestrator runs an outer iteration, and the rows that record it.

use std::fmt::Write as _;
use std::time::Instant;

use serde::Serialize;

use crate::backend::{Backend, DynamicsSettings};
use crate::io::Pixels;
use crate::methods::MhRule;
use crate::model::Observations;
use crate::rng::{Purpose, Stream};
use crate::Result;

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
    /// A row for a measurement not made, and why.
    pub fn skipped(backend: &str, device: &str, chains: usize, note: String) -> Row {
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

/// n random 8-bit images of dimension d from the seed (what MNIST looks like to the kernels).
pub fn synthetic(n: usize, d: usize, seed: u64) -> Observations {
    let mut words = vec![0u32; n * d];
    Stream::new(seed, 0, 0, 0, Purpose::InitPick).fill_u32(&mut words);
    Observations {
        n,
        d,
        pixels: Pixels::U8(words.iter().map(|w| (w >> 24) as u8).collect()),
        scale: 1.0 / 255.0,
    }
}

/// Why `chains` chains of `bytes_per_chain` (plus the per-iteration read-back copies) would not fit.
pub fn memory_note(chains: usize, bytes_per_chain: usize, d: usize, p: usize) -> Option<String> {
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

/// Times `outer` outer iterations after one warm-up, phase by phase, as the orchestrator runs
/// them; None when `stop` said so (asked before every iteration: `outer` can be billions).
pub fn measure(
    backend: &mut dyn Backend,
    dynamics: &DynamicsSettings,
    (d, p): (usize, usize),
    outer: u32,
    stop: &dyn Fn() -> bool,
) -> Result<Option<Row>> {
    measure_with(backend, dynamics, (d, p), (outer, false), stop)
}

/// `measure`, with the prior's adaptive update after every accept when `adapt` (timed with it).
pub fn measure_with(
    backend: &mut dyn Backend,
    dynamics: &DynamicsSettings,
    (d, p): (usize, usize),
    (outer, adapt): (u32, bool),
    stop: &dyn Fn() -> bool,
) -> Result<Option<Row>> {
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
        if stop() {
            return Ok(None);
        }
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
    Ok(Some(Row {
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
    }))
}

/// A CSV cell: the value, or empty when not measured.
fn optional(value: Option<f64>) -> String {
    value.map_or(String::new(), |v| v.to_string())
}

/// GPU over CPU chain-steps/s per chain count where both ran in this run.
pub fn ratios(rows: &[Row]) -> Vec<(usize, f64)> {
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

/// The rows as bench.csv holds them.
pub fn rows_csv(rows: &[Row]) -> String {
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
