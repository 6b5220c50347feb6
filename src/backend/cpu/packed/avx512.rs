//! The AVX-512 product kernel: up to 6 rows × 64 columns, one 16-lane fused multiply-add chain over k per output register.
//!
//! Written out row by row and register by register, with no loop over rows or columns and no
//! closures, because the dev profile compiles rmld at opt-level 1, which neither unrolls such
//! loops nor keeps their accumulators in registers: the looped version ran `augment` 3× slower
//! than gemm in the test build.

use super::tile::Tile;
#[cfg(target_arch = "x86_64")]
use super::tile::PANEL;

/// Runs the tile's rows against its whole panel.
///
/// # Safety
/// AVX-512F is available; the tile passed [`Tile::check`] and its output rows are its own.
pub unsafe fn run(tile: &Tile) {
    #[cfg(target_arch = "x86_64")]
    match tile.rows {
        6 => kernel6(tile),
        5 => kernel5(tile),
        4 => kernel4(tile),
        3 => kernel3(tile),
        2 => kernel2(tile),
        1 => kernel1(tile),
        rows => unreachable!("a tile has 1 to 6 rows, not {rows}"),
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("AVX-512 runs on x86-64 only ({} rows)", tile.rows)
}

/// The kernel for R rows × 64 columns: per k, the panel's four registers times each row's
/// X[r][k], fused into 4R accumulators; then stored (minus Y).
macro_rules! kernel {
    ($name:ident, $rows:literal: $($r:literal)+) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f")]
        unsafe fn $name(tile: &Tile) {
            use std::arch::x86_64::*;
            let (x, a, k) = (tile.x.as_ptr(), tile.panel.as_ptr(), tile.k);
            let mut acc = [[_mm512_setzero_ps(); 4]; $rows];
            for kk in 0..k {
                let column = a.add(kk * PANEL);
                let l0 = _mm512_loadu_ps(column);
                let l1 = _mm512_loadu_ps(column.add(16));
                let l2 = _mm512_loadu_ps(column.add(32));
                let l3 = _mm512_loadu_ps(column.add(48));
                $(
                    let b = _mm512_set1_ps(*x.add($r * k + kk));
                    acc[$r][0] = _mm512_fmadd_ps(l0, b, acc[$r][0]);
                    acc[$r][1] = _mm512_fmadd_ps(l1, b, acc[$r][1]);
                    acc[$r][2] = _mm512_fmadd_ps(l2, b, acc[$r][2]);
                    acc[$r][3] = _mm512_fmadd_ps(l3, b, acc[$r][3]);
                )+
            }
            store(tile, &acc);
        }
    };
}

kernel!(kernel1, 1: 0);
kernel!(kernel2, 2: 0 1);
kernel!(kernel3, 3: 0 1 2);
kernel!(kernel4, 4: 0 1 2 3);
kernel!(kernel5, 5: 0 1 2 3 4);
kernel!(kernel6, 6: 0 1 2 3 4 5);

/// A tile's accumulators (one row's four registers each), stored through [`Tile::write`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn store(tile: &Tile, acc: &[[std::arch::x86_64::__m512; 4]]) {
    use std::arch::x86_64::*;
    for (r, acc) in acc.iter().enumerate() {
        let mut row = [0f32; PANEL];
        for (c, acc) in acc.iter().enumerate() {
            _mm512_storeu_ps(row.as_mut_ptr().add(16 * c), *acc);
        }
        tile.write(r, 0, &row);
    }
}
