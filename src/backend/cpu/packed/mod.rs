//! Products against a constant matrix packed once into 64-column panels, every output summed in one fixed order on every CPU path.
//!
//! gemm packs its operands at every call: for the chains' Aᵀ r at C = 129 that is a 9.8 MB copy
//! of A per product, 13% of an `augment` run's chain time (docs/benchmarks.md). A dictionary
//! does not change, so it is packed here once, panel by panel (64 output columns × k), and the
//! kernels read it as it lies. Each output is one fused multiply-add chain over k in order from
//! zero (minus y last, where asked) on every path ([`CpuPath`]: AVX-512, AVX2, scalar), and FMA
//! rounds once, so the bits depend neither on the path nor on the row count nor on the threads:
//! a seed gives the same codes on any x86-64 CPU, and a shard's chains get the single run's
//! numbers. [`reference_product`] is the kernels' scalar twin, bit for bit.

mod avx2;
mod avx512;
mod path;
mod scalar;
mod tile;

use rayon::prelude::*;

use crate::Result;

pub use path::{CpuPath, CPU_PATH_VARIABLE};
use tile::{OutPtr, Tile, KERNEL_ROWS, PANEL};

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
    /// M (k × n, row-major) packed.
    pub fn from_rows(m: &[f32], k: usize, n: usize) -> Self {
        Self::try_from_rows(m, k, n).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Self::from_rows`], with a refused allocation an error (`crate::alloc`).
    pub fn try_from_rows(m: &[f32], k: usize, n: usize) -> Result<Self> {
        assert_eq!(m.len(), k * n, "packed operand: values do not match k × n");
        Self::pack(k, n, true, |kk, col| m[kk * n + col])
    }

    /// M = Aᵀ for A (rows × cols, row-major) packed (k = cols, n = rows).
    pub fn from_transpose(a: &[f32], rows: usize, cols: usize) -> Self {
        Self::try_from_transpose(a, rows, cols).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Self::from_transpose`], with a refused allocation an error (`crate::alloc`).
    pub fn try_from_transpose(a: &[f32], rows: usize, cols: usize) -> Result<Self> {
        assert_eq!(
            a.len(),
            rows * cols,
            "packed operand: values do not match rows × cols"
        );
        Self::pack(cols, rows, false, |kk, col| a[col * cols + kk])
    }

    /// Packs M given element by element (`at(kk, col)`, read along a row of M where `by_rows`,
    /// else down a column, whichever lies contiguous in the source); a refused allocation is an
    /// error on `atoms` (the packed matrix is a dictionary or a product of one).
    fn pack(
        k: usize,
        n: usize,
        by_rows: bool,
        at: impl Fn(usize, usize) -> f32 + Sync,
    ) -> Result<Self> {
        let len = n.div_ceil(PANEL) * k * PANEL;
        let mut values =
            crate::alloc::try_zeroed(len, "atoms", "a matrix packed for the CPU's products")?;
        if k > 0 {
            values
                .par_chunks_mut(k * PANEL)
                .enumerate()
                .for_each(|(j, panel)| {
                    let cols = (n - j * PANEL).min(PANEL);
                    if by_rows {
                        for kk in 0..k {
                            for c in 0..cols {
                                panel[kk * PANEL + c] = at(kk, j * PANEL + c);
                            }
                        }
                    } else {
                        for c in 0..cols {
                            for kk in 0..k {
                                panel[kk * PANEL + c] = at(kk, j * PANEL + c);
                            }
                        }
                    }
                });
        }
        Ok(Self { k, n, values })
    }

    /// out (m × n) = X (m × k) · M, minus Y (m × n) where given; all row-major; on this
    /// process's path ([`CpuPath::active`]).
    pub fn product(&self, x: &[f32], minus: Option<&[f32]>, out: &mut [f32]) {
        self.product_on(CpuPath::active(), x, minus, out);
    }

    /// [`Self::product`] on the kernels of `path` (the same bits on every path).
    ///
    /// # Panics
    /// If this CPU cannot run `path` ([`CpuPath::supported`]), or the shapes do not match.
    pub fn product_on(&self, path: CpuPath, x: &[f32], minus: Option<&[f32]>, out: &mut [f32]) {
        assert!(
            path.supported(),
            "packed product: this CPU cannot run the {} path",
            path.name()
        );
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
            let first = rows * TASK_ROWS;
            for start in (first..(first + TASK_ROWS).min(m)).step_by(KERNEL_ROWS) {
                let count = (m - start).min(KERNEL_ROWS);
                let tile = Tile {
                    x: &x[start * k..(start + count) * k],
                    panel: &self.values[j * k * PANEL..(j + 1) * k * PANEL],
                    k,
                    rows: count,
                    minus: minus.map(|y| &y[start * n..(start + count) * n]),
                    out: out_at,
                    row: start,
                    column: j * PANEL,
                    stride: n,
                    cols: (n - j * PANEL).min(PANEL),
                };
                tile.check();
                // SAFETY: tasks write disjoint (rows, panel) blocks of `out`, whose bounds the
                // asserts above and `Tile::check` fix; the CPU runs `path` (asserted above).
                unsafe {
                    match path {
                        CpuPath::Avx512 => avx512::run(&tile),
                        CpuPath::Avx2 => avx2::run(&tile),
                        CpuPath::Scalar => scalar::run(&tile),
                    }
                }
            }
        });
    }
}

/// `rows × cols` values (row-major) transposed: the other operand's layout for the callers that
/// pack their own matrices (the amortised sampler's network, the quality classifier).
pub fn transposed(values: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0f32; values.len()];
    for (r, row) in values.chunks_exact(cols.max(1)).enumerate().take(rows) {
        for (c, &v) in row.iter().enumerate() {
            out[c * rows + r] = v;
        }
    }
    out
}

/// A constant matrix A (rows × cols) packed for the products taken with it: R · A
/// ([`Self::transpose_product`]) and, where asked, Z · Aᵀ − Y ([`Self::residual_product`]).
#[derive(Clone, Debug)]
pub struct PackedMatrix {
    /// A itself as the right operand.
    times: PackedOperand,
    /// Aᵀ as the right operand.
    times_transpose: Option<PackedOperand>,
}

impl PackedMatrix {
    /// A packed both ways.
    pub fn both(a: &[f32], rows: usize, cols: usize) -> Self {
        Self::try_both(a, rows, cols).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Self::both`], with a refused allocation an error (`crate::alloc`).
    pub fn try_both(a: &[f32], rows: usize, cols: usize) -> Result<Self> {
        Ok(Self {
            times: PackedOperand::try_from_rows(a, rows, cols)?,
            times_transpose: Some(PackedOperand::try_from_transpose(a, rows, cols)?),
        })
    }

    /// A packed for R · A only.
    pub fn times_only(a: &[f32], rows: usize, cols: usize) -> Self {
        Self {
            times: PackedOperand::from_rows(a, rows, cols),
            times_transpose: None,
        }
    }

    /// out (m × cols) = R (m × rows) · A: per row of R, Aᵀ r.
    pub fn transpose_product(&self, r: &[f32], out: &mut [f32]) {
        self.times.product(r, None, out);
    }

    /// out (m × rows) = Z (m × cols) · Aᵀ − Y (m × rows): per row, A z − y.
    ///
    /// # Panics
    /// If A was packed for R · A only ([`Self::times_only`]).
    pub fn residual_product(&self, z: &[f32], y: &[f32], out: &mut [f32]) {
        let transposed = self.times_transpose.as_ref();
        transposed
            .expect("packed matrix: packed for R · A only, not Z · Aᵀ")
            .product(z, Some(y), out);
    }
}

/// AAᵀ (d × d, row-major) for A (d × p, row-major), in the products' order: row i is A aᵢ.
pub fn gram(a: &[f32], d: usize, p: usize) -> Vec<f32> {
    let mut gram = vec![0f32; d * d];
    PackedOperand::from_transpose(a, d, p).product(a, None, &mut gram);
    gram
}

/// The kernels' scalar twin: out = X · M (− Y), each output one `mul_add` chain over k from
/// zero, as the kernels sum; M row-major (k × n).
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

    /// Values in [−1, 1) with signed zeros, subnormals and magnitudes from 1e-15 to 1e15
    /// mixed in, so that the sums cancel, underflow and round in every way a chain can (no
    /// overflow: an infinity's NaN would be compared by its bits).
    fn awkward_values(n: usize, seed: u32) -> Vec<f32> {
        values(n, seed)
            .into_iter()
            .enumerate()
            .map(|(i, v)| match i % 13 {
                3 => -0.0,
                5 => 0.0,
                7 => v * 1e-38,
                9 => v * 1e15,
                11 => v * 1e-15,
                _ => v,
            })
            .collect()
    }

    /// The paths this CPU runs; the others are named on stderr as not checked here.
    fn runnable_paths() -> Vec<CpuPath> {
        for path in CpuPath::ALL.into_iter().filter(|p| !p.supported()) {
            eprintln!(
                "packed kernels: this CPU cannot run the {} path, so it is not checked here",
                path.name()
            );
        }
        CpuPath::ALL.into_iter().filter(|p| p.supported()).collect()
    }

    /// Odd shapes on both sides of every tile edge (rows 1–200 across the 6-row kernels and
    /// 96-row tasks, columns across the AVX2 kernel's 16, 32 and 64 and the panels' 64, k
    /// across the AVX2 kernel's blocks of 256), both packings, with and without Y, ordinary
    /// and awkward values: every path the CPU runs equals the scalar twin bit for bit, and a
    /// row's values do not depend on the rows around it.
    #[test]
    fn the_kernel_equals_its_scalar_twin_bit_for_bit() {
        let paths = runnable_paths();
        assert!(paths.contains(&CpuPath::Scalar));
        for &(m, k, n) in &[
            (1, 1, 1),
            (5, 17, 63),
            (6, 64, 64),
            (7, 3, 15),
            (13, 100, 129),
            (97, 40, 200),
            (200, 9, 65),
            (12, 33, 17),
            (3, 300, 70),
            (8, 513, 33),
        ] {
            for data in [values, awkward_values] {
                let (a, x, y) = (data(k * n, 4), data(m * k, 5), data(m * n, 6));
                let at = columns_of(&a, k, n);
                let rows = PackedOperand::from_rows(&a, k, n);
                let transpose = PackedOperand::from_transpose(&at, n, k);
                for minus in [None, Some(&y[..])] {
                    let mut want = vec![0f32; m * n];
                    reference_product(&a, k, n, &x, minus, &mut want);
                    for path in &paths {
                        for (name, packed) in [("rows", &rows), ("transpose", &transpose)] {
                            let mut got = vec![f32::NAN; m * n];
                            packed.product_on(*path, &x, minus, &mut got);
                            let bad = mismatches(&got, &want, n);
                            assert!(
                                bad.is_empty(),
                                "{} path, {m} × {k} × {n} ({name}, minus {}): {bad:?}",
                                path.name(),
                                minus.is_some()
                            );
                        }
                    }
                }
                // The last row alone gets the same values as among all m.
                for path in &paths {
                    let (mut all, mut one) = (vec![0f32; m * n], vec![0f32; n]);
                    rows.product_on(*path, &x, None, &mut all);
                    rows.product_on(*path, &x[(m - 1) * k..], None, &mut one);
                    assert!(
                        mismatches(&one, &all[(m - 1) * n..], n).is_empty(),
                        "{} path, {m} × {k} × {n}: last row",
                        path.name()
                    );
                }
            }
        }
    }

    /// A packed matrix takes both products as the kernels sum (the twin, bit for bit), and
    /// AAᵀ is the twin's too.
    #[test]
    fn a_packed_matrix_takes_both_products_as_the_kernels_sum() {
        let (d, p, m) = (70, 130, 9);
        let a = values(d * p, 11);
        let packed = PackedMatrix::both(&a, d, p);
        let (z, y, r) = (values(m * p, 12), values(m * d, 13), values(m * d, 14));
        let transposed = columns_of(&a, d, p);
        let (mut got, mut want) = (vec![0f32; m * d], vec![0f32; m * d]);
        packed.residual_product(&z, &y, &mut got);
        reference_product(&transposed, p, d, &z, Some(&y), &mut want);
        let bad = mismatches(&got, &want, d);
        assert!(bad.is_empty(), "Z·Aᵀ − Y: {bad:?}");
        let (mut got, mut want) = (vec![0f32; m * p], vec![0f32; m * p]);
        packed.transpose_product(&r, &mut got);
        reference_product(&a, d, p, &r, None, &mut want);
        let bad = mismatches(&got, &want, p);
        assert!(bad.is_empty(), "R·A: {bad:?}");
        let mut want = vec![0f32; d * d];
        reference_product(&transposed, p, d, &a, None, &mut want);
        let bad = mismatches(&gram(&a, d, p), &want, d);
        assert!(bad.is_empty(), "AAᵀ: {bad:?}");
    }
}
