//! The CPU's ceilings: a square GEMM's GFLOP/s, one outer iteration phase by phase, and the step's two products alone (gemm crate, packed, OpenBLAS).

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use super::Ceiling;
use crate::backend::cpu::{matmul, CpuBackend};
use crate::backend::{Backend, DynamicsSettings};
use crate::model::Target;
use crate::Result;

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

/// Best of three timed runs of `f` after one warm-up, in seconds.
pub(crate) fn best_of_three(mut f: impl FnMut()) -> f64 {
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
pub fn cpu_ceiling(n: usize) -> Ceiling {
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
pub fn cpu_phases(
    target: &Arc<Target>,
    dynamics: &DynamicsSettings,
    chains: usize,
) -> Result<Phases> {
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
pub fn roofline(target: &Target, chains: usize, rmld: f64) -> Roofline {
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
pub fn blas_description() -> String {
    #[cfg(feature = "blas")]
    return format!(
        "OpenBLAS ({}), {} threads",
        crate::backend::cpu::blas::config().trim(),
        rayon::current_num_threads()
    );
    #[cfg(not(feature = "blas"))]
    "not measured: build with `--features blas` (links the system OpenBLAS)".into()
}
