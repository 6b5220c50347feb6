//! Dense products through the `gemm` crate, whose summation order follows its blocking and the CPU's kernels: the bench's ceilings and products outside the chains and encodings.
//!
//! The chains' and the encoders' products go through `packed` instead, in one order on every
//! CPU. Chain states are stored C × p (positions) and C × d (residuals), row-major; A is d × p.

use rayon::prelude::*;

/// A matrix operand: its values and its (row, column) strides in elements.
struct Strided<'a> {
    values: &'a [f32],
    row_stride: usize,
    col_stride: usize,
}

/// out (m × n, row-major) = keep·out + lhs (m × k) · rhs (k × n); `keep` is 0 (overwrite) or −1.
fn product(m: usize, n: usize, k: usize, out: &mut [f32], keep: f32, lhs: Strided, rhs: Strided) {
    if m == 0 || n == 0 {
        return;
    }
    let last = |s: &Strided, rows: usize, cols: usize| {
        (rows - 1) * s.row_stride + (cols - 1) * s.col_stride
    };
    assert!(out.len() >= m * n, "product: output too small");
    assert!(k == 0 || (last(&lhs, m, k) < lhs.values.len() && last(&rhs, k, n) < rhs.values.len()));
    // One call shape for both gemm versions: the crates' signatures are the same.
    macro_rules! call {
        ($krate:ident) => {
            // SAFETY: the asserts above bound every index the strides reach.
            unsafe {
                $krate::gemm(
                    m,
                    n,
                    k,
                    out.as_mut_ptr(),
                    1,
                    n as isize,
                    keep != 0.0,
                    lhs.values.as_ptr(),
                    lhs.col_stride as isize,
                    lhs.row_stride as isize,
                    rhs.values.as_ptr(),
                    rhs.col_stride as isize,
                    rhs.row_stride as isize,
                    keep,
                    1.0,
                    false,
                    false,
                    false,
                    $krate::Parallelism::Rayon(rayon::current_num_threads()),
                )
            }
        };
    }
    if m >= WIDE_MIN_ROWS {
        call!(gemm_wide);
    } else {
        call!(gemm);
    }
}

/// Products of at least this many rows go to `gemm_wide` (gemm 0.19 with its AVX-512 kernels),
/// fewer to gemm 0.18 (AVX2 at most). Measured by `rmld bench --backend cpu` at 784 × 3136 on an
/// AVX-512 Xeon (docs/benchmarks.md): the AVX-512 kernels are 1.08x at 128 rows, 1.37x at 256 and
/// 1.57x at 1024-2048, but 0.76x at 64 and 0.46x at 16, where their 48-row register tile is mostly
/// empty. On a CPU without AVX-512 both crates run the same AVX2 kernels.
pub const WIDE_MIN_ROWS: usize = 128;

/// out (C × d) = Z (C × p) · Aᵀ − Y (C × d), i.e. per chain A z − y.
pub fn residual_product(a: &[f32], d: usize, p: usize, z: &[f32], y: &[f32], out: &mut [f32]) {
    // Aᵀ[k][n] = A[n][k]: row stride 1, column stride p.
    let transposed = Strided {
        values: a,
        row_stride: 1,
        col_stride: p,
    };
    residual_with(transposed, d, p, z, y, out);
}

/// out = Z · Aᵀ − Y with Aᵀ (p × d) given by its strides.
fn residual_with(transposed: Strided, d: usize, p: usize, z: &[f32], y: &[f32], out: &mut [f32]) {
    let chains = z.len() / p;
    assert!(
        transposed.values.len() == d * p
            && z.len() == chains * p
            && y.len() == chains * d
            && out.len() == chains * d
    );
    out.copy_from_slice(y);
    let lhs = Strided {
        values: z,
        row_stride: p,
        col_stride: 1,
    };
    product(chains, d, p, out, -1.0, lhs, transposed);
}

/// A matrix row by row and, where the caller keeps them, column by column too (`columns[k·d +
/// n]` = A\[n\]\[k\], see [`columns_of`]) for [`residual_product_columns`].
#[derive(Clone, Copy)]
pub struct Layouts<'a> {
    /// Row-major.
    pub rows: &'a [f32],
    /// Column-major, if kept.
    pub columns: Option<&'a [f32]>,
}

impl<'a> Layouts<'a> {
    /// A held row by row only.
    pub fn rows(rows: &'a [f32]) -> Self {
        Self {
            rows,
            columns: None,
        }
    }

    /// A held both ways.
    pub fn both(rows: &'a [f32], columns: &'a [f32]) -> Self {
        Self {
            rows,
            columns: Some(columns),
        }
    }
}

/// [`residual_product`], reading A column by column where that gives the same bits: gemm then
/// reads A in place instead of packing all of it on one thread at every call. Its one-row gemv
/// and its small horizontal kernel (m·d ≤ 256) sum in another order by layout, so those
/// products keep the rows.
pub fn residual_product_columns(
    a: Layouts,
    d: usize,
    p: usize,
    z: &[f32],
    y: &[f32],
    out: &mut [f32],
) {
    let chains = z.len() / p.max(1);
    let columns = match a.columns {
        Some(columns) if chains > 1 && chains * d > 256 => columns,
        _ => return residual_product(a.rows, d, p, z, y, out),
    };
    // Aᵀ[k][n] = columns[k·d + n]: row stride d, column stride 1.
    let transposed = Strided {
        values: columns,
        row_stride: d,
        col_stride: 1,
    };
    residual_with(transposed, d, p, z, y, out);
}

/// A (d × p, row-major) column by column: `columns[k·d + n]` = A\[n\]\[k\] (Aᵀ row-major).
pub fn columns_of(a: &[f32], d: usize, p: usize) -> Vec<f32> {
    let mut columns = vec![0f32; d * p];
    columns
        .par_chunks_mut(d)
        .enumerate()
        .for_each(|(k, column)| {
            for (n, value) in column.iter_mut().enumerate() {
                *value = a[n * p + k];
            }
        });
    columns
}

/// out (C × p) = R (C × d) · A, i.e. per chain Aᵀ r.
pub fn transpose_product(a: &[f32], d: usize, p: usize, r: &[f32], out: &mut [f32]) {
    let chains = r.len() / d;
    assert!(a.len() == d * p && r.len() == chains * d && out.len() == chains * p);
    let lhs = Strided {
        values: r,
        row_stride: d,
        col_stride: 1,
    };
    let rhs = Strided {
        values: a,
        row_stride: p,
        col_stride: 1,
    };
    product(chains, p, d, out, 0.0, lhs, rhs);
}

/// A plain square product C = A·B (n × n), the CPU ceiling that benchmarks compare against.
pub fn square_product(a: &[f32], b: &[f32], out: &mut [f32], n: usize) {
    assert!(a.len() == n * n && b.len() == n * n && out.len() == n * n);
    let lhs = Strided {
        values: a,
        row_stride: n,
        col_stride: 1,
    };
    let rhs = Strided {
        values: b,
        row_stride: n,
        col_stride: 1,
    };
    product(n, n, n, out, 0.0, lhs, rhs);
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Deterministic values in [−1, 1) (a 32-bit LCG), enough for product tests.
    pub(in crate::backend::cpu) fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (s >> 8) as f32 / (1u32 << 23) as f32 - 1.0
            })
            .collect()
    }

    /// Every bit-level mismatch of `got` (rows of n) against `want`, with its (row, column)
    /// and both values.
    pub(in crate::backend::cpu) fn mismatches(got: &[f32], want: &[f32], n: usize) -> Vec<String> {
        got.iter()
            .zip(want)
            .enumerate()
            .filter(|(_, (g, w))| g.to_bits() != w.to_bits())
            .map(|(i, (g, w))| format!("({}, {}): got {g:e}, want {w:e}", i / n, i % n))
            .collect()
    }

    /// Both gemm versions (row counts on each side of `WIDE_MIN_ROWS`) against an f64 product,
    /// every mismatch listed with its index and both values.
    #[test]
    fn products_on_both_sides_of_the_wide_switch_match_f64() {
        let (d, p) = (37, 133);
        let a = values(d * p, 1);
        for m in [1, 5, WIDE_MIN_ROWS - 1, WIDE_MIN_ROWS, 301] {
            let r = values(m * d, 2 + m as u32);
            let mut out = vec![0f32; m * p];
            transpose_product(&a, d, p, &r, &mut out);
            let mut bad = Vec::new();
            for i in 0..m {
                for j in 0..p {
                    let (mut exact, mut scale) = (0f64, 0f64);
                    for k in 0..d {
                        let t = r[i * d + k] as f64 * a[k * p + j] as f64;
                        exact += t;
                        scale += t.abs();
                    }
                    let got = out[i * p + j] as f64;
                    if (got - exact).abs() > 1e-5 * scale.max(1.0) {
                        bad.push(format!("m {m} [{i}, {j}]: {got} vs {exact}"));
                    }
                }
            }
            assert!(
                bad.is_empty(),
                "{} mismatches:\n{}",
                bad.len(),
                bad.join("\n")
            );
        }
    }

    /// The residual product from A's columns equals the one from its rows bit for bit (gemm
    /// reads A in place instead of packing it; the sums are the same), on both gemm versions,
    /// at shapes that are not multiples of the register tile.
    #[test]
    fn residual_product_from_columns_equals_it_from_rows() {
        let mut bad = Vec::new();
        for (d, p) in [(37, 133), (64, 256), (5, 3)] {
            let a = values(d * p, 5 + d as u32);
            let columns = columns_of(&a, d, p);
            assert_eq!(columns[7 % p * d + 3 % d], a[3 % d * p + 7 % p]);
            for m in [1, 7, WIDE_MIN_ROWS - 1, WIDE_MIN_ROWS, 301] {
                let z = values(m * p, 6 + m as u32);
                let y = values(m * d, 7 + m as u32);
                let (mut rows, mut cols) = (vec![0f32; m * d], vec![0f32; m * d]);
                residual_product(&a, d, p, &z, &y, &mut rows);
                let both = Layouts::both(&a, &columns);
                residual_product_columns(both, d, p, &z, &y, &mut cols);
                for (i, (r, c)) in rows.iter().zip(&cols).enumerate() {
                    if r.to_bits() != c.to_bits() {
                        bad.push(format!(
                            "d {d} p {p} m {m} [{}, {}]: rows {r}, columns {c}",
                            i / d,
                            i % d
                        ));
                    }
                }
            }
        }
        assert!(bad.is_empty(), "{} differ:\n{}", bad.len(), bad.join("\n"));
    }
}
