//! Products against a constant matrix packed once into 64-column panels, by an AVX-512 kernel.
//!
//! gemm packs its operands at every call: for the chains' Aᵀ r at C = 129 that is a 9.8 MB copy
//! of A per product, 13% of an `augment` run's chain time (docs/benchmarks.md). A dictionary
//! does not change, so it is packed here once, panel by panel (64 output columns × k, the four
//! 16-lane registers the kernel loads per k), and the kernel reads it as it lies. Each output is
//! one fused multiply-add chain over k in order from zero (minus y last, where asked), so a
//! row's values depend neither on the row count nor on the threads: a shard's chains get the
//! single run's numbers without `matmul::rows_like`'s padding. Where AVX-512F is missing, or
//! `RMLD_PACKED_PRODUCTS=0` asks (to measure against gemm in one binary), nothing is packed and
//! gemm computes. [`reference_product`] is the kernel's scalar twin, bit for bit.

use rayon::prelude::*;

/// Output columns per panel: four 16-lane registers.
const PANEL: usize = 64;

/// Rows per kernel call: 6 × 4 accumulators leave registers for the panel's four and the
/// broadcast.
const KERNEL_ROWS: usize = 6;

/// Rows per parallel task, a multiple of [`KERNEL_ROWS`]: a task streams one panel past this
/// many rows, so the panel is read from memory once per this many rows.
const TASK_ROWS: usize = 96;

/// A constant right operand M (k × n) packed into panels: `values[(j·k + kk)·64 + c]` =
/// M[kk][64 j + c], zero past n.
#[derive(Clone, Debug)]
pub struct PackedOperand {
    k: usize,
    n: usize,
    values: Vec<f32>,
}

impl PackedOperand {
    /// M (k × n, row-major) packed, or None where the kernel cannot run (see [`available`]).
    pub fn from_rows(m: &[f32], k: usize, n: usize) -> Option<Self> {
        assert_eq!(m.len(), k * n, "packed operand: values do not match k × n");
        available().then(|| Self::pack(k, n, |kk, col| m[kk * n + col]))
    }

    /// M = Aᵀ for A (rows × cols, row-major) packed (k = cols, n = rows), or None where the
    /// kernel cannot run.
    pub fn from_transpose(a: &[f32], rows: usize, cols: usize) -> Option<Self> {
        assert_eq!(
            a.len(),
            rows * cols,
            "packed operand: values do not match rows × cols"
        );
        available().then(|| Self::pack(cols, rows, |kk, col| a[col * cols + kk]))
    }

    /// Packs M given element by element (`at(kk, col)`).
    fn pack(k: usize, n: usize, at: impl Fn(usize, usize) -> f32 + Sync) -> Self {
        let mut values = vec![0f32; n.div_ceil(PANEL) * k * PANEL];
        if k > 0 {
            values
                .par_chunks_mut(k * PANEL)
                .enumerate()
                .for_each(|(j, panel)| {
                    let cols = (n - j * PANEL).min(PANEL);
                    for c in 0..cols {
                        for kk in 0..k {
                            panel[kk * PANEL + c] = at(kk, j * PANEL + c);
                        }
                    }
                });
        }
        Self { k, n, values }
    }

    /// out (m × n) = X (m × k) · M, minus Y (m × n) where given; all row-major.
    pub fn product(&self, x: &[f32], minus: Option<&[f32]>, out: &mut [f32]) {
        let (k, n) = (self.k, self.n);
        let m = x.len().checked_div(k).unwrap_or(out.len() / n.max(1));
        assert!(
            x.len() == m * k && out.len() == m * n && minus.is_none_or(|y| y.len() == m * n),
            "packed product: X is {} values, out {}, for k = {k}, n = {n}",
            x.len(),
            out.len()
        );
        if m == 0 || n == 0 {
            return;
        }
        let panels = n.div_ceil(PANEL);
        let row_tasks = m.div_ceil(TASK_ROWS);
        let out_at = OutPtr(out.as_mut_ptr());
        // Panel-major, so that consecutive tasks (one thread's share) reuse a panel.
        (0..panels * row_tasks).into_par_iter().for_each(|task| {
            let (j, rows) = (task / row_tasks, task % row_tasks);
            let panel = &self.values[j * k * PANEL..(j + 1) * k * PANEL];
            let cols = (n - j * PANEL).min(PANEL);
            let first = rows * TASK_ROWS;
            for start in (first..(first + TASK_ROWS).min(m)).step_by(KERNEL_ROWS) {
                let count = (m - start).min(KERNEL_ROWS);
                let tile = Tile {
                    x: &x[start * k..(start + count) * k],
                    minus: minus.map(|y| &y[start * n..(start + count) * n]),
                    out: out_at,
                    row: start,
                    column: j * PANEL,
                    stride: n,
                    cols,
                };
                // SAFETY: tasks write disjoint (rows, panel) blocks of `out`, whose bounds the
                // assert above and `Tile` fix; `available()` held when the operand was packed.
                unsafe { tile.run(panel, k, count) };
            }
        });
    }
}

/// A constant matrix A (rows × cols) packed for the products taken with it: X · A (`times`)
/// and, where asked, Z · Aᵀ (`times_transpose`).
#[derive(Clone, Debug)]
pub struct PackedMatrix {
    /// A itself as the right operand.
    pub times: PackedOperand,
    /// Aᵀ as the right operand.
    pub times_transpose: Option<PackedOperand>,
}

impl PackedMatrix {
    /// A packed both ways, or None where the kernel cannot run.
    pub fn both(a: &[f32], rows: usize, cols: usize) -> Option<Self> {
        Some(Self {
            times: PackedOperand::from_rows(a, rows, cols)?,
            times_transpose: Some(PackedOperand::from_transpose(a, rows, cols)?),
        })
    }

    /// A packed for X · A only, or None where the kernel cannot run.
    pub fn times_only(a: &[f32], rows: usize, cols: usize) -> Option<Self> {
        Some(Self {
            times: PackedOperand::from_rows(a, rows, cols)?,
            times_transpose: None,
        })
    }
}

/// `out`'s base pointer, shared by the tasks that write its disjoint blocks.
#[derive(Clone, Copy)]
struct OutPtr(*mut f32);

// SAFETY: every task writes only its own (rows, panel) block (`PackedOperand::product`).
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

/// One kernel call: `count` rows of X (and of Y) against one panel, written to `out` from
/// (`row`, `column`), row stride `stride`, over the panel's first `cols` columns.
struct Tile<'a> {
    x: &'a [f32],
    minus: Option<&'a [f32]>,
    out: OutPtr,
    row: usize,
    column: usize,
    stride: usize,
    cols: usize,
}

impl Tile<'_> {
    /// # Safety
    /// AVX-512F is available; `out` holds rows `row..row + count` of `stride` values, and
    /// `column + cols <= stride`.
    unsafe fn run(&self, panel: &[f32], k: usize, count: usize) {
        // The kernel reads X and the panel through raw pointers within these bounds.
        assert!(self.x.len() == count * k && panel.len() == k * PANEL && self.cols <= PANEL);
        #[cfg(target_arch = "x86_64")]
        match count {
            6 => kernel6(self, panel, k),
            5 => kernel5(self, panel, k),
            4 => kernel4(self, panel, k),
            3 => kernel3(self, panel, k),
            2 => kernel2(self, panel, k),
            1 => kernel1(self, panel, k),
            _ => unreachable!("a tile has 1 to {KERNEL_ROWS} rows, not {count}"),
        }
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("packed products run on x86-64 only ({count} rows, k = {k}, {panel:p})")
    }
}

/// The kernel for R rows × 64 columns: per k, the panel's four registers times each row's
/// X[r][k], fused into 4R accumulators; then minus Y and stored. Written out row by row and
/// register by register, with no loop over rows or columns and no closures, because the dev
/// profile compiles rmld at opt-level 1, which neither unrolls such loops nor keeps their
/// accumulators in registers: the looped version ran `augment` 3× slower than gemm in the
/// test build.
macro_rules! kernel {
    ($name:ident, $rows:literal: $($r:literal)+) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f")]
        unsafe fn $name(tile: &Tile, panel: &[f32], k: usize) {
            use std::arch::x86_64::*;
            let (x, a) = (tile.x.as_ptr(), panel.as_ptr());
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

/// A tile's accumulators (one row's four registers each) minus Y, stored into `out`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn store(tile: &Tile, acc: &[[std::arch::x86_64::__m512; 4]]) {
    use std::arch::x86_64::*;
    for (r, acc) in acc.iter().enumerate() {
        let mut row = [0f32; PANEL];
        for (c, acc) in acc.iter().enumerate() {
            _mm512_storeu_ps(row.as_mut_ptr().add(16 * c), *acc);
        }
        let at = (tile.row + r) * tile.stride + tile.column;
        let out = std::slice::from_raw_parts_mut(tile.out.0.add(at), tile.cols);
        let row = &row[..tile.cols];
        match tile.minus {
            Some(y) => {
                let y = &y[r * tile.stride + tile.column..][..tile.cols];
                out.iter_mut()
                    .zip(row.iter().zip(y))
                    .for_each(|(o, (v, y))| *o = v - y);
            }
            None => out.copy_from_slice(row),
        }
    }
}

/// Whether the packed kernel runs here: AVX-512F, and `RMLD_PACKED_PRODUCTS` is not "0".
pub fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let asked_off = std::env::var("RMLD_PACKED_PRODUCTS").is_ok_and(|v| v == "0");
        #[cfg(target_arch = "x86_64")]
        let cpu = std::arch::is_x86_feature_detected!("avx512f");
        #[cfg(not(target_arch = "x86_64"))]
        let cpu = false;
        cpu && !asked_off
    })
}

/// The kernel's scalar twin: out = X · M (− Y), each output one `mul_add` chain over k from
/// zero, as the kernel sums; M row-major (k × n).
pub fn reference_product(
    m: &[f32],
    k: usize,
    n: usize,
    x: &[f32],
    minus: Option<&[f32]>,
    out: &mut [f32],
) {
    for (row, (x, out)) in x.chunks(k.max(1)).zip(out.chunks_mut(n)).enumerate() {
        for (c, out) in out.iter_mut().enumerate() {
            let sum = (0..k).fold(0f32, |s, kk| x[kk].mul_add(m[kk * n + c], s));
            *out = minus.map_or(sum, |y| sum - y[row * n + c]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::matmul::columns_of;
    use super::super::matmul::tests::{mismatches, values};
    use super::*;

    #[test]
    fn the_reference_twin_is_the_product() {
        let (m, k, n) = (7, 33, 70);
        let (a, x, y) = (values(k * n, 1), values(m * k, 2), values(m * n, 3));
        let mut out = vec![0f32; m * n];
        reference_product(&a, k, n, &x, Some(&y), &mut out);
        for (i, &o) in out.iter().enumerate() {
            let (r, c) = (i / n, i % n);
            let exact: f64 = (0..k)
                .map(|kk| x[r * k + kk] as f64 * a[kk * n + c] as f64)
                .sum::<f64>()
                - y[i] as f64;
            assert!(
                (o as f64 - exact).abs() < 1e-4,
                "({r}, {c}): {o} against {exact}"
            );
        }
    }

    /// Odd shapes on both sides of every tile edge, both packings, with and without Y: the
    /// kernel equals its scalar twin bit for bit, and a row's values do not depend on the rows
    /// around it.
    #[test]
    fn the_kernel_equals_its_scalar_twin_bit_for_bit() {
        if !available() {
            eprintln!("packed kernel: AVX-512F not available here, only the twin is checked");
            return;
        }
        for &(m, k, n) in &[
            (1, 1, 1),
            (5, 17, 63),
            (6, 64, 64),
            (13, 100, 129),
            (97, 40, 200),
            (200, 9, 65),
        ] {
            let (a, x, y) = (values(k * n, 4), values(m * k, 5), values(m * n, 6));
            let at = columns_of(&a, k, n);
            for (name, packed) in [
                ("rows", PackedOperand::from_rows(&a, k, n).unwrap()),
                (
                    "transpose",
                    PackedOperand::from_transpose(&at, n, k).unwrap(),
                ),
            ] {
                for minus in [None, Some(&y[..])] {
                    let mut got = vec![f32::NAN; m * n];
                    packed.product(&x, minus, &mut got);
                    let mut want = vec![0f32; m * n];
                    reference_product(&a, k, n, &x, minus, &mut want);
                    let bad = mismatches(&got, &want, n);
                    assert!(
                        bad.is_empty(),
                        "{m} × {k} × {n} ({name}, minus {}): {bad:?}",
                        minus.is_some()
                    );
                }
            }
            // The last row alone gets the same values as among all m.
            let packed = PackedOperand::from_rows(&a, k, n).unwrap();
            let (mut all, mut one) = (vec![0f32; m * n], vec![0f32; n]);
            packed.product(&x, None, &mut all);
            packed.product(&x[(m - 1) * k..], None, &mut one);
            assert!(
                mismatches(&one, &all[(m - 1) * n..], n).is_empty(),
                "{m} × {k} × {n}: last row"
            );
        }
    }
}
