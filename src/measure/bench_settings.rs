//! A benchmark's settings: which backends, chain counts, tiles and variants to measure, and the synthetic problem's size.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::memory;
use crate::{Error, Result};

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
    pub(crate) fn check_dictionary_fits(&self, d: usize) -> Result<()> {
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
