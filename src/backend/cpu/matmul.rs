//! Dense products on chain-major blocks through the `gemm` crate (the CPU's GEMM ceiling).
//!
//! Chain states are stored C × p (positions) and C × d (residuals), row-major; A is d × p.

use gemm::{gemm, Parallelism};

fn parallelism() -> Parallelism {
    Parallelism::Rayon(rayon::current_num_threads())
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
    if chains == 0 {
        return;
    }
    // SAFETY: the asserts above bound every index the strides reach.
    unsafe {
        gemm(
            chains,
            d,
            p,
            out.as_mut_ptr(),
            1,
            d as isize,
            true,
            z.as_ptr(),
            1,
            p as isize,
            a.as_ptr(),
            p as isize, // Aᵀ[k][n] = A[n][k]: column stride p, row stride 1
            1,
            -1.0,
            1.0,
            false,
            false,
            false,
            parallelism(),
        );
    }
}

/// out (C × p) = R (C × d) · A, i.e. per chain Aᵀ r.
pub fn transpose_product(a: &[f32], d: usize, p: usize, r: &[f32], out: &mut [f32]) {
    let chains = r.len() / d;
    assert!(a.len() == d * p && r.len() == chains * d && out.len() == chains * p);
    if chains == 0 {
        return;
    }
    // SAFETY: the asserts above bound every index the strides reach.
    unsafe {
        gemm(
            chains,
            p,
            d,
            out.as_mut_ptr(),
            1,
            p as isize,
            false,
            r.as_ptr(),
            1,
            d as isize,
            a.as_ptr(),
            1,
            p as isize,
            0.0,
            1.0,
            false,
            false,
            false,
            parallelism(),
        );
    }
}

/// A plain square product C = A·B (n × n), the CPU ceiling that benchmarks compare against.
pub fn square_product(a: &[f32], b: &[f32], out: &mut [f32], n: usize) {
    assert!(a.len() == n * n && b.len() == n * n && out.len() == n * n);
    // SAFETY: all three are n × n row-major.
    unsafe {
        gemm(
            n,
            n,
            n,
            out.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            1,
            n as isize,
            b.as_ptr(),
            1,
            n as isize,
            0.0,
            1.0,
            false,
            false,
            false,
            parallelism(),
        );
    }
}
