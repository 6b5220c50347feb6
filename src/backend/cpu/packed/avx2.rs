//! The AVX2 product kernel: up to 6 rows × 16 columns at a time, a panel in four quarters, one 8-lane fused multiply-add chain over k per output register.
//!
//! The same sums as the AVX-512 kernel, each output one chain over k from zero, in half-width
//! registers: 6 rows × 2 registers of accumulators leave the panel's two and the broadcast of
//! the 16. Written out row by row, as the AVX-512 kernel is, for the dev profile's opt-level 1.

use super::tile::Tile;
#[cfg(target_arch = "x86_64")]
use super::tile::PANEL;

/// Panel columns per pass: two 8-lane registers.
#[cfg(target_arch = "x86_64")]
const QUARTER: usize = 16;

/// Runs the tile's rows against its panel, a quarter at a time.
///
/// # Safety
/// AVX2 and FMA are available; the tile passed [`Tile::check`] and its output rows are its own.
pub unsafe fn run(tile: &Tile) {
    #[cfg(target_arch = "x86_64")]
    for quarter in 0..tile.cols.div_ceil(QUARTER) {
        let from = quarter * QUARTER;
        match tile.rows {
            6 => kernel6(tile, from),
            5 => kernel5(tile, from),
            4 => kernel4(tile, from),
            3 => kernel3(tile, from),
            2 => kernel2(tile, from),
            1 => kernel1(tile, from),
            rows => unreachable!("a tile has 1 to 6 rows, not {rows}"),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("AVX2 runs on x86-64 only ({} rows)", tile.rows)
}

/// The kernel for R rows × the 16 panel columns from `from`: per k, those columns' two
/// registers times each row's X[r][k], fused into 2R accumulators; then stored (minus Y).
macro_rules! kernel {
    ($name:ident, $rows:literal: $($r:literal)+) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn $name(tile: &Tile, from: usize) {
            use std::arch::x86_64::*;
            let (x, a, k) = (tile.x.as_ptr(), tile.panel.as_ptr().add(from), tile.k);
            let mut acc = [[_mm256_setzero_ps(); 2]; $rows];
            for kk in 0..k {
                let column = a.add(kk * PANEL);
                let l0 = _mm256_loadu_ps(column);
                let l1 = _mm256_loadu_ps(column.add(8));
                $(
                    let b = _mm256_broadcast_ss(&*x.add($r * k + kk));
                    acc[$r][0] = _mm256_fmadd_ps(l0, b, acc[$r][0]);
                    acc[$r][1] = _mm256_fmadd_ps(l1, b, acc[$r][1]);
                )+
            }
            store(tile, from, &acc);
        }
    };
}

kernel!(kernel1, 1: 0);
kernel!(kernel2, 2: 0 1);
kernel!(kernel3, 3: 0 1 2);
kernel!(kernel4, 4: 0 1 2 3);
kernel!(kernel5, 5: 0 1 2 3 4);
kernel!(kernel6, 6: 0 1 2 3 4 5);

/// A tile's accumulators for the 16 columns from `from`, stored through [`Tile::write`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn store(tile: &Tile, from: usize, acc: &[[std::arch::x86_64::__m256; 2]]) {
    use std::arch::x86_64::*;
    for (r, acc) in acc.iter().enumerate() {
        let mut row = [0f32; QUARTER];
        _mm256_storeu_ps(row.as_mut_ptr(), acc[0]);
        _mm256_storeu_ps(row.as_mut_ptr().add(8), acc[1]);
        tile.write(r, from, &row);
    }
}
