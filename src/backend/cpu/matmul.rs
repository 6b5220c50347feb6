//! Dense products on chain-major blocks: against a packed constant matrix where `Layouts` has
//! one (`packed`), through the `gemm` crate otherwise.
//!
//! Chain states are stored C × p (positions) and C × d (residuals), row-major; A is d × p.

use rayon::prelude::*;

use super::packed::PackedMatrix;

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

/// The rows a product of `m` rows and `n` columns must be computed with so that each row's
/// values equal those it gets in a product of `like` rows (a shard's chains computing as the
/// single run's): `gemm` 0.18 picks its path by the row count (a gemv for one row, its
/// horizontal kernel when m·n ≤ 256, small-block parameters when m ≤ 64 and n ≤ 64; beyond
/// those a row's sums do not depend on m), so the rows are padded with zero rows up to the
/// first count on `like`'s side of every threshold it is past, [`WIDE_MIN_ROWS`] (the switch
/// between the two gemm versions) included. `m` when `like ≤ m`.
pub fn rows_like(m: usize, n: usize, like: usize) -> usize {
    if like <= m {
        return m;
    }
    let small = if n <= 64 { 64 } else { 0 };
    [1, 256 / n.max(1), small, WIDE_MIN_ROWS - 1]
        .into_iter()
        .filter(|&t| like > t)
        .map(|t| t + 1)
        .fold(m, usize::max)
}

/// Runs `f` (a product writing `width` values per row from `inputs` of the given widths) on
/// the rows padded to `rows_like(m, n, like)` with zero rows, keeping the first m rows' values.
fn padded(
    m: usize,
    n: usize,
    like: usize,
    inputs: [(&[f32], usize); 2],
    width: usize,
    out: &mut [f32],
    f: impl Fn(&[f32], &[f32], &mut [f32]),
) {
    let rows = rows_like(m, n, like);
    if rows == m {
        return f(inputs[0].0, inputs[1].0, out);
    }
    let pad = |(v, w): (&[f32], usize)| {
        let mut padded = v.to_vec();
        padded.resize(rows * w, 0.0);
        padded
    };
    let (x, y) = (pad(inputs[0]), pad(inputs[1]));
    let mut wide = vec![0f32; rows * width];
    f(&x, &y, &mut wide);
    out.copy_from_slice(&wide[..m * width]);
}

/// [`transpose_product`] from A's packed panels where `a` has them; otherwise through gemm,
/// with rows equal to those of a product over `like` rows (see [`rows_like`]).
pub fn transpose_product_like(
    a: Layouts,
    d: usize,
    p: usize,
    r: &[f32],
    out: &mut [f32],
    like: usize,
) {
    if let Some(packed) = a.packed {
        return packed.times.product(r, None, out);
    }
    let m = r.len() / d.max(1);
    padded(m, p, like, [(r, d), (&[], 0)], p, out, |r, _, out| {
        transpose_product(a.rows, d, p, r, out)
    });
}

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

/// AAᵀ (d × d, row-major) for A (d × p, row-major): row i is A aᵢ, aᵢ A's row i.
pub fn gram(a: &[f32], d: usize, p: usize) -> Vec<f32> {
    let mut gram = vec![0f32; d * d];
    residual_product(a, d, p, a, &vec![0f32; d * d], &mut gram);
    gram
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
/// n]` = A[n][k], see [`columns_of`]) for [`residual_product_columns`], and packed for the
/// packed kernel (`packed::PackedMatrix`), which then takes the products it was packed for.
#[derive(Clone, Copy)]
pub struct Layouts<'a> {
    /// Row-major.
    pub rows: &'a [f32],
    /// Column-major, if kept.
    pub columns: Option<&'a [f32]>,
    /// Packed, if kept.
    pub packed: Option<&'a PackedMatrix>,
}

impl<'a> Layouts<'a> {
    /// A held row by row only.
    pub fn rows(rows: &'a [f32]) -> Self {
        Self {
            rows,
            columns: None,
            packed: None,
        }
    }

    /// A held both ways.
    pub fn both(rows: &'a [f32], columns: &'a [f32]) -> Self {
        Self {
            rows,
            columns: Some(columns),
            packed: None,
        }
    }

    /// These layouts with the packed panels, if any.
    pub fn with_packed(self, packed: Option<&'a PackedMatrix>) -> Self {
        Self { packed, ..self }
    }
}

/// [`residual_product`], reading A column by column where that gives the same bits: gemm then
/// reads A in place instead of packing all of it on one thread at every call (about 5% of an
/// `augment` chain step at C = 129, docs/benchmarks.md). Its one-row gemv and its small
/// horizontal kernel (m·d ≤ 256) sum in another order by layout, so those products keep the
/// rows; the padding of [`residual_product_like`] keeps a row on its `like` side of both.
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

/// [`residual_product`] from Aᵀ's packed panels where `a` has them; otherwise
/// [`residual_product_columns`] with rows equal to those of a product over `like` rows (see
/// [`rows_like`]).
pub fn residual_product_like(
    a: Layouts,
    d: usize,
    p: usize,
    z: &[f32],
    y: &[f32],
    out: &mut [f32],
    like: usize,
) {
    if let Some(transposed) = a.packed.and_then(|m| m.times_transpose.as_ref()) {
        return transposed.product(z, Some(y), out);
    }
    let m = z.len() / p.max(1);
    padded(m, d, like, [(z, p), (y, d)], d, out, |z, y, out| {
        residual_product_columns(a, d, p, z, y, out)
    });
}

/// A (d × p, row-major) column by column: `columns[k·d + n]` = A[n][k] (Aᵀ row-major).
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

    /// Layouts with packed panels take both products through them: bit for bit the packed
    /// kernel's scalar twin, whatever `like` asks (a row's values do not depend on the rows).
    #[test]
    fn packed_layouts_take_both_products_as_the_kernel_sums() {
        let (d, p, m) = (70, 130, 9);
        let Some(packed) = PackedMatrix::both(&values(d * p, 11), d, p) else {
            eprintln!("packed products: AVX-512F not available here, nothing to check");
            return;
        };
        let a = values(d * p, 11);
        let (z, y, r) = (values(m * p, 12), values(m * d, 13), values(m * d, 14));
        let layouts = Layouts::rows(&a).with_packed(Some(&packed));
        let transposed = columns_of(&a, d, p);
        for like in [0, m, 1000] {
            let (mut got, mut want) = (vec![0f32; m * d], vec![0f32; m * d]);
            residual_product_like(layouts, d, p, &z, &y, &mut got, like);
            super::super::packed::reference_product(&transposed, p, d, &z, Some(&y), &mut want);
            let bad = mismatches(&got, &want, d);
            assert!(bad.is_empty(), "Z·Aᵀ − Y, like {like}: {bad:?}");
            let (mut got, mut want) = (vec![0f32; m * p], vec![0f32; m * p]);
            transpose_product_like(layouts, d, p, &r, &mut got, like);
            super::super::packed::reference_product(&a, d, p, &r, None, &mut want);
            let bad = mismatches(&got, &want, p);
            assert!(bad.is_empty(), "R·A, like {like}: {bad:?}");
        }
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
    /// at shapes that are not multiples of the register tile, and `like` a wider product.
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
                let mut like = vec![0f32; m * d];
                residual_product_like(both, d, p, &z, &y, &mut like, 400);
                let mut wide = vec![0f32; m * d];
                residual_product_like(Layouts::rows(&a), d, p, &z, &y, &mut wide, 400);
                for (i, (((r, c), l), w)) in
                    rows.iter().zip(&cols).zip(&like).zip(&wide).enumerate()
                {
                    if r.to_bits() != c.to_bits() || l.to_bits() != w.to_bits() {
                        bad.push(format!("d {d} p {p} m {m} [{}, {}]: rows {r}, columns {c}; like 400: rows {w}, columns {l}", i / d, i % d));
                    }
                }
            }
        }
        assert!(bad.is_empty(), "{} differ:\n{}", bad.len(), bad.join("\n"));
    }

    /// A few rows computed `like` a wide product equal those rows of the wide product bit for
    /// bit (a shard's chains as the single run's), and `rows_like` pads across the switch.
    #[test]
    fn rows_like_a_wide_product_are_bit_identical_to_it() {
        let (d, p, like) = (37, 133, 200);
        assert_eq!(rows_like(5, p, like), WIDE_MIN_ROWS);
        assert_eq!(rows_like(5, p, WIDE_MIN_ROWS - 1), 5.max(256 / p + 1));
        let a = values(d * p, 3);
        let r = values(like * d, 4);
        let mut full = vec![0f32; like * p];
        transpose_product(&a, d, p, &r, &mut full);
        let mut few = vec![0f32; 5 * p];
        transpose_product_like(Layouts::rows(&a), d, p, &r[..5 * d], &mut few, like);
        let bad: Vec<String> = few
            .iter()
            .zip(&full[..5 * p])
            .enumerate()
            .filter(|(_, (x, y))| x.to_bits() != y.to_bits())
            .map(|(i, (x, y))| format!("[{}, {}]: {x} vs {y}", i / p, i % p))
            .collect();
        assert!(bad.is_empty(), "{} differ:\n{}", bad.len(), bad.join("\n"));
    }
}
