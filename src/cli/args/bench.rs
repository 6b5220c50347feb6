//! `rmld bench`'s arguments.

use std::path::PathBuf;

use clap::Args;

use rmld::session::{BenchBackends, BenchSettings, BenchTile};

/// The library's defaults, which the options below show and fill in.
fn bench() -> BenchSettings {
    BenchSettings::default()
}

/// Chain counts as `--chains` takes them: "1,16,256".
fn chain_list(chains: &[usize]) -> String {
    let counts: Vec<String> = chains.iter().map(usize::to_string).collect();
    counts.join(",")
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Backends to measure.
    #[arg(long, value_enum, default_value_t = bench().backend)]
    pub backend: BenchBackends,

    /// Chain counts to measure, a comma-separated list.
    #[arg(long, value_name = "C,C,...", default_value_t = chain_list(&bench().chains))]
    pub chains: String,

    /// Dimension d of the synthetic dataset (default 784); with --data it must match the data.
    #[arg(long, value_name = "D")]
    pub dim: Option<usize>,

    /// Number of atoms p of the Gaussian dictionary. Default: 4·d.
    #[arg(long, value_name = "P")]
    pub atoms: Option<usize>,

    /// m, minibatch size per chain and step.
    #[arg(long, value_name = "M", default_value_t = bench().batch)]
    pub batch: u32,

    /// T, momentum steps per outer iteration.
    #[arg(long, value_name = "T", default_value_t = bench().steps)]
    pub steps: u32,

    /// Timed outer iterations per measurement, after one warm-up iteration.
    #[arg(long, value_name = "N", default_value_t = bench().outer)]
    pub outer: u32,

    /// Dataset (as for `rmld sample`). Default: random 8-bit images of dimension --dim.
    #[arg(long, value_name = "PATH")]
    pub data: Option<PathBuf>,

    /// Number of random images in the synthetic dataset.
    #[arg(long, value_name = "N", default_value_t = bench().images)]
    pub images: usize,

    /// Side n of the square product that measures the CPU's GEMM ceiling (2·n³ flops).
    #[arg(long, value_name = "N", default_value_t = bench().ceiling_size)]
    pub ceiling_size: usize,

    /// Seed of the dictionary, the synthetic data and the dynamics.
    #[arg(long, default_value_t = bench().seed)]
    pub seed: u64,

    /// Output folder (bench.json, bench.csv, bench.png; written atomically).
    #[arg(long, value_name = "DIR", default_value_os_t = bench().out)]
    pub out: PathBuf,

    /// Replace bench.json, bench.csv and bench.png when --out holds them already.
    #[arg(long)]
    pub force: bool,

    /// `ssgl`: also measure each backend with the SSGL prior adapting at every outer iteration
    /// (rows `cpu-ssgl`, `gpu-ssgl`, beside the Laplace rows of the same run; the SA update is
    /// timed with accept).
    #[arg(long = "prior", value_enum, default_value_t = rmld::Prior::default())]
    pub bench_prior: rmld::Prior,

    /// Also time the NumPy peer (benches/peers/numpy_step.py: the same step at the same sizes,
    /// its BLAS on as many threads) at every CPU chain count and print rmld over NumPy.
    #[arg(long)]
    pub peers: bool,

    /// The Python (with NumPy) that runs the peer; implies --peers [default: $RMLD_PEER_PYTHON,
    /// else python3].
    #[arg(long, value_name = "PATH")]
    pub peer_python: Option<PathBuf>,

    /// Also measure the GPU with the dictionary stored as f16 (rows `gpu-f16`, beside the f32
    /// rows of the same run; `--precision f16` of sample and augment).
    #[arg(long)]
    pub f16: bool,

    /// The GPU products' tiles to measure, a row each per chain count: auto (the backend's
    /// choice for the chain count, rows `gpu`), narrow (64 × 64 blocks, 8 × 4 per invocation,
    /// rows `gpu-narrow`), wide (128 × 128 blocks, 8 × 8 per invocation, rows `gpu-wide`).
    /// The same choice for sample and augment: the RMLD_GEMM_TILE environment variable.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        value_name = "TILE,...",
        default_values_t = bench().gemm_tiles
    )]
    pub gemm_tile: Vec<BenchTile>,
}
