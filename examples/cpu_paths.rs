//! The chains' two products alone on every CPU path (`RMLD_CPU_PATH`) against both gemm crates, side by side: `cargo run --release --example cpu_paths [C,C,...] [ROUNDS]`.
//!
//! For each chain count C, R (C × d) · A (the gradient) and Z (C × p) · Aᵀ (the residual) at
//! d = 784, p = 3136 are timed on each path this CPU runs, by gemm 0.18 (AVX2 at most: what
//! the CPU backend took below 128 rows before issue 43, and on a CPU without AVX-512 at any
//! count) and by gemm 0.19 (its AVX-512 kernels where the CPU has them: what it took from 128
//! rows). The rounds interleave the contenders, so a busy host slows all alike; each reports
//! its best round.

use std::time::Instant;

use rmld::backend::cpu::packed::{CpuPath, PackedOperand};

const D: usize = 784;
const P: usize = 3136;

/// Deterministic values in [−1, 1).
fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 8) as f32 / (1u32 << 23) as f32 - 1.0
        })
        .collect()
}

/// out (m × n) = lhs (m × k) · rhs, rhs given by its (row, column) strides, by gemm 0.18
/// (`wide`: false) or 0.19.
#[allow(clippy::too_many_arguments)]
fn gemm_product(
    wide: bool,
    m: usize,
    n: usize,
    k: usize,
    lhs: &[f32],
    rhs: &[f32],
    rhs_strides: (usize, usize),
    out: &mut [f32],
) {
    macro_rules! call {
        ($krate:ident) => {
            // SAFETY: lhs is m × k and rhs k × n row-major or transposed, out m × n.
            unsafe {
                $krate::gemm(
                    m,
                    n,
                    k,
                    out.as_mut_ptr(),
                    1,
                    n as isize,
                    false,
                    lhs.as_ptr(),
                    1,
                    k as isize,
                    rhs.as_ptr(),
                    rhs_strides.1 as isize,
                    rhs_strides.0 as isize,
                    0.0,
                    1.0,
                    false,
                    false,
                    false,
                    $krate::Parallelism::Rayon(rayon::current_num_threads()),
                )
            }
        };
    }
    if wide {
        call!(gemm_wide);
    } else {
        call!(gemm);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let chains: Vec<usize> = args
        .get(1)
        .map(|s| s.split(',').map(|c| c.parse().expect("C,C,...")).collect())
        .unwrap_or_else(|| vec![1, 64, 512]);
    let rounds: usize = args.get(2).map_or(5, |r| r.parse().expect("ROUNDS"));
    let a = values(D * P, 1);
    let by_rows = PackedOperand::from_rows(&a, D, P);
    let by_transpose = PackedOperand::from_transpose(&a, D, P);
    let paths: Vec<CpuPath> = CpuPath::ALL.into_iter().filter(|p| p.supported()).collect();
    println!(
        "d = {D}, p = {P}, {} threads, best of {rounds} interleaved rounds (GFLOP/s)",
        rayon::current_num_threads()
    );
    for &c in &chains {
        let (r, z) = (values(c * D, 2), values(c * P, 3));
        let (mut out_p, mut out_d) = (vec![0f32; c * P], vec![0f32; c * D]);
        let names: Vec<String> = paths
            .iter()
            .map(|p| p.name().to_string())
            .chain(["gemm 0.18".into(), "gemm 0.19".into()])
            .collect();
        // best[contender][product]
        let mut best = vec![[f64::INFINITY; 2]; names.len()];
        // Calls per timing: about 0.1 GFLOP each.
        let calls = (1 + 50 / c).min(50);
        for _ in 0..rounds {
            for (i, best) in best.iter_mut().enumerate() {
                for (product, best) in best.iter_mut().enumerate() {
                    let mut run = || match (paths.get(i), product) {
                        (Some(&path), 0) => by_rows.product_on(path, &r, None, &mut out_p),
                        (Some(&path), _) => by_transpose.product_on(path, &z, None, &mut out_d),
                        (None, 0) => {
                            let wide = i > paths.len();
                            gemm_product(wide, c, P, D, &r, &a, (P, 1), &mut out_p)
                        }
                        (None, _) => {
                            let wide = i > paths.len();
                            gemm_product(wide, c, D, P, &z, &a, (1, P), &mut out_d)
                        }
                    };
                    run();
                    let started = Instant::now();
                    for _ in 0..calls {
                        run();
                    }
                    *best = best.min(started.elapsed().as_secs_f64() / calls as f64);
                }
            }
        }
        let flop = 2.0 * (c * D * P) as f64;
        for (name, [ra, za]) in names.iter().zip(&best) {
            println!(
                "C = {c:4}  {name:9}  R·A {:6.1}  Z·Aᵀ {:6.1}  both {:6.1}",
                flop / ra / 1e9,
                flop / za / 1e9,
                2.0 * flop / (ra + za) / 1e9
            );
        }
    }
}
