//! The AVX2 product kernel: 4–6 rows × 16 columns, 2–3 rows × 32 or one row × 64 at a time, k in blocks, one 8-lane fused multiply-add chain over k per output register.
//!
//! The same sums as the AVX-512 kernel, each output one chain over k from zero, in half-width
//! registers: 6 rows × 2 registers of accumulators leave the panel's two and the broadcast of
//! the 16. A panel takes four such passes, so k runs in blocks of [`K_BLOCK`], each pass
//! carrying its sums from the block before: the rows' block of X stays in L1 for the four
//! passes instead of coming from L2 four times (the chains over k are unbroken). Written out
//! register by register, as the AVX-512 kernel is, for the dev profile's opt-level 1.

use super::tile::{Tile, KERNEL_ROWS, PANEL};

/// Terms per block of k: the tile's 6 rows' block of X is 6 KB.
#[cfg(target_arch = "x86_64")]
const K_BLOCK: usize = 256;

/// The tile's running sums, a full panel's width per row.
type Sums = [[f32; PANEL]; KERNEL_ROWS];

/// Runs the tile's rows against its panel, block of k by block, a part of its columns at a
/// time: all 64 for one row, 32 for two or three, 16 for more, so that each pass keeps 8 to 12
/// independent accumulators (one row's two alone would wait on the fused multiply-add's
/// latency).
///
/// # Safety
/// AVX2 and FMA are available; the tile passed [`Tile::check`] and its output rows are its own.
pub unsafe fn run(tile: &Tile) {
    let mut sums: Sums = [[0.0; PANEL]; KERNEL_ROWS];
    #[cfg(target_arch = "x86_64")]
    {
        let width = match tile.rows {
            1 => 64,
            2 | 3 => 32,
            _ => 16,
        };
        for start in (0..tile.k).step_by(K_BLOCK) {
            let ks = start..(start + K_BLOCK).min(tile.k);
            for from in (0..tile.cols).step_by(width) {
                let ks = ks.clone();
                match tile.rows {
                    6 => kernel6(tile, from, ks, &mut sums),
                    5 => kernel5(tile, from, ks, &mut sums),
                    4 => kernel4(tile, from, ks, &mut sums),
                    3 => kernel3(tile, from, ks, &mut sums),
                    2 => kernel2(tile, from, ks, &mut sums),
                    1 => kernel1(tile, from, ks, &mut sums),
                    rows => unreachable!("a tile has 1 to 6 rows, not {rows}"),
                }
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("AVX2 runs on x86-64 only ({} rows)", tile.rows);
    #[allow(unreachable_code)]
    for (r, sums) in sums.iter().enumerate().take(tile.rows) {
        tile.write(r, 0, sums);
    }
}

/// The kernel for R (4 to 6) rows × the 16 panel columns from `from`, over the terms `ks`:
/// per k, those columns' two registers times each row's X[r][k], fused into 2R accumulators
/// that start from and end in `sums`.
macro_rules! kernel16 {
    ($name:ident, $rows:literal: $($r:literal)+) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn $name(tile: &Tile, from: usize, ks: std::ops::Range<usize>, sums: &mut Sums) {
            use std::arch::x86_64::*;
            let (x, a, k) = (tile.x.as_ptr(), tile.panel.as_ptr().add(from), tile.k);
            let mut acc = [[_mm256_setzero_ps(); 2]; $rows];
            $(
                let s = sums[$r].as_ptr().add(from);
                acc[$r][0] = _mm256_loadu_ps(s);
                acc[$r][1] = _mm256_loadu_ps(s.add(8));
            )+
            for kk in ks {
                let column = a.add(kk * PANEL);
                let l0 = _mm256_loadu_ps(column);
                let l1 = _mm256_loadu_ps(column.add(8));
                $(
                    let b = _mm256_broadcast_ss(&*x.add($r * k + kk));
                    acc[$r][0] = _mm256_fmadd_ps(l0, b, acc[$r][0]);
                    acc[$r][1] = _mm256_fmadd_ps(l1, b, acc[$r][1]);
                )+
            }
            $(
                let s = sums[$r].as_mut_ptr().add(from);
                _mm256_storeu_ps(s, acc[$r][0]);
                _mm256_storeu_ps(s.add(8), acc[$r][1]);
            )+
        }
    };
}

/// The kernel for R (2 or 3) rows × the 32 panel columns from `from`: 4R accumulators.
macro_rules! kernel32 {
    ($name:ident, $rows:literal: $($r:literal)+) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn $name(tile: &Tile, from: usize, ks: std::ops::Range<usize>, sums: &mut Sums) {
            use std::arch::x86_64::*;
            let (x, a, k) = (tile.x.as_ptr(), tile.panel.as_ptr().add(from), tile.k);
            let mut acc = [[_mm256_setzero_ps(); 4]; $rows];
            $(
                let s = sums[$r].as_ptr().add(from);
                acc[$r][0] = _mm256_loadu_ps(s);
                acc[$r][1] = _mm256_loadu_ps(s.add(8));
                acc[$r][2] = _mm256_loadu_ps(s.add(16));
                acc[$r][3] = _mm256_loadu_ps(s.add(24));
            )+
            for kk in ks {
                let column = a.add(kk * PANEL);
                let l0 = _mm256_loadu_ps(column);
                let l1 = _mm256_loadu_ps(column.add(8));
                let l2 = _mm256_loadu_ps(column.add(16));
                let l3 = _mm256_loadu_ps(column.add(24));
                $(
                    let b = _mm256_broadcast_ss(&*x.add($r * k + kk));
                    acc[$r][0] = _mm256_fmadd_ps(l0, b, acc[$r][0]);
                    acc[$r][1] = _mm256_fmadd_ps(l1, b, acc[$r][1]);
                    acc[$r][2] = _mm256_fmadd_ps(l2, b, acc[$r][2]);
                    acc[$r][3] = _mm256_fmadd_ps(l3, b, acc[$r][3]);
                )+
            }
            $(
                let s = sums[$r].as_mut_ptr().add(from);
                _mm256_storeu_ps(s, acc[$r][0]);
                _mm256_storeu_ps(s.add(8), acc[$r][1]);
                _mm256_storeu_ps(s.add(16), acc[$r][2]);
                _mm256_storeu_ps(s.add(24), acc[$r][3]);
            )+
        }
    };
}

/// The kernel for one row × the 64 panel columns: 8 accumulators.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn kernel1(tile: &Tile, from: usize, ks: std::ops::Range<usize>, sums: &mut Sums) {
    use std::arch::x86_64::*;
    let (x, a) = (tile.x.as_ptr(), tile.panel.as_ptr().add(from));
    let s = sums[0].as_mut_ptr().add(from);
    let (mut a0, mut a1) = (_mm256_loadu_ps(s), _mm256_loadu_ps(s.add(8)));
    let (mut a2, mut a3) = (_mm256_loadu_ps(s.add(16)), _mm256_loadu_ps(s.add(24)));
    let (mut a4, mut a5) = (_mm256_loadu_ps(s.add(32)), _mm256_loadu_ps(s.add(40)));
    let (mut a6, mut a7) = (_mm256_loadu_ps(s.add(48)), _mm256_loadu_ps(s.add(56)));
    for kk in ks {
        let column = a.add(kk * PANEL);
        let b = _mm256_broadcast_ss(&*x.add(kk));
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(column), b, a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(column.add(8)), b, a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(column.add(16)), b, a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(column.add(24)), b, a3);
        a4 = _mm256_fmadd_ps(_mm256_loadu_ps(column.add(32)), b, a4);
        a5 = _mm256_fmadd_ps(_mm256_loadu_ps(column.add(40)), b, a5);
        a6 = _mm256_fmadd_ps(_mm256_loadu_ps(column.add(48)), b, a6);
        a7 = _mm256_fmadd_ps(_mm256_loadu_ps(column.add(56)), b, a7);
    }
    for (c, acc) in [a0, a1, a2, a3, a4, a5, a6, a7].into_iter().enumerate() {
        _mm256_storeu_ps(s.add(8 * c), acc);
    }
}

kernel32!(kernel2, 2: 0 1);
kernel32!(kernel3, 3: 0 1 2);
kernel16!(kernel4, 4: 0 1 2 3);
kernel16!(kernel5, 5: 0 1 2 3 4);
kernel16!(kernel6, 6: 0 1 2 3 4 5);
