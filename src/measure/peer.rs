//! `rmld bench`'s NumPy peer: benches/peers/numpy_step.py run beside the CPU rows, same sizes and threads.

use std::path::Path;
use std::process::Command;

use serde::Serialize;

/// The peer script, embedded so an installed binary needs only a Python with NumPy.
const SCRIPT: &str = include_str!("../../benches/peers/numpy_step.py");

/// The NumPy peer at one chain count, beside rmld's CPU row of the same run.
#[derive(Clone, Debug, Serialize)]
pub struct PeerRow {
    /// Chains C.
    pub chains: usize,
    /// NumPy's chain-steps/s (the same step: gather, the two products, the update; plus the full
    /// residual and gradient per outer iteration), wall-clock after one warm-up iteration.
    pub numpy_chain_steps_per_second: f64,
    /// rmld's chain-steps/s in this run's CPU row.
    pub rmld_chain_steps_per_second: f64,
    /// rmld over NumPy.
    pub rmld_over_numpy: f64,
    /// NumPy's version and BLAS, as the script reports them.
    pub numpy: String,
}

/// The sizes the peer runs with (those of the CPU rows).
pub(crate) struct PeerProblem {
    /// Dimension d.
    pub d: usize,
    /// Atoms p.
    pub p: usize,
    /// Minibatch m.
    pub batch: u32,
    /// Steps T.
    pub steps: u32,
    /// Timed outer iterations.
    pub outer: u32,
    /// Images in the data.
    pub images: usize,
    /// The seed.
    pub seed: u64,
    /// Threads of its BLAS (rayon's).
    pub threads: usize,
}

/// Runs the peer with `python` at `chains`; an error text (the command, its stderr) when it
/// cannot run or says nothing readable.
pub(crate) fn run_peer(
    python: &Path,
    problem: &PeerProblem,
    chains: usize,
    rmld: f64,
) -> std::result::Result<PeerRow, String> {
    let threads = problem.threads.to_string();
    let output = Command::new(python)
        .arg("-c")
        .arg(SCRIPT)
        .args(["--d", &problem.d.to_string(), "--p", &problem.p.to_string()])
        .args(["--chains", &chains.to_string()])
        .args(["--batch", &problem.batch.to_string()])
        .args(["--steps", &problem.steps.to_string()])
        .args(["--outer", &problem.outer.to_string()])
        .args(["--images", &problem.images.to_string()])
        .args(["--seed", &problem.seed.to_string()])
        .env("OMP_NUM_THREADS", &threads)
        .env("OPENBLAS_NUM_THREADS", &threads)
        .env("MKL_NUM_THREADS", &threads)
        .env("VECLIB_MAXIMUM_THREADS", &threads)
        .output()
        .map_err(|e| format!("cannot run `{}` (peer_python): {e}", python.display()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().last().unwrap_or("").trim();
        return Err(format!(
            "`{}` (peer_python) failed running benches/peers/numpy_step.py ({}): {last}",
            python.display(),
            output.status
        ));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let value: serde_json::Value = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| format!("the NumPy peer printed no JSON line: {}", stdout.trim()))?;
    let rate = value["chain_steps_per_second"]
        .as_f64()
        .filter(|r| r.is_finite() && *r > 0.0)
        .ok_or_else(|| format!("the NumPy peer printed no chain_steps_per_second: {value}"))?;
    let numpy = format!(
        "numpy {} ({}), Python {}, {threads} threads",
        value["numpy"].as_str().unwrap_or("?"),
        value["blas"].as_str().unwrap_or("?"),
        value["python"].as_str().unwrap_or("?"),
    );
    Ok(PeerRow {
        chains,
        numpy_chain_steps_per_second: rate,
        rmld_chain_steps_per_second: rmld,
        rmld_over_numpy: rmld / rate,
        numpy,
    })
}
