//! Dense products on chain-major blocks through the `gemm` crate (the CPU's GEMM ceiling).
//!
//! Chain states are stored C × p (positions) and C × d (residuals), row-major; A is d × p.

use gemm::{gemm, Parallelism};

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
    // SAFETY: the asserts above bound every index the strides reach.
    unsafe {
        gemm(
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
            Parallelism::Rayon(rayon::current_num_threads()),
        );
    }
}

/// out (C × d) = Z (C × p) · Aᵀ − Y (C × d), i.e. per chain A z − y.
pub fn residual_product(a: &[f32], d: usize, p: usize, z: &[f32], y: &[f32], out: &mut [f32]) {
    let chains = z.len() / p;
    assert!(
        a.len() == d * p
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
    // Aᵀ[k][n] = A[n][k]: row stride 1, column stride p.
    let rhs = Strided {
        values: a,
        row_stride: 1,
        col_stride: p,
    };
    product(chains, d, p, out, -1.0, lhs, rhs);
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
