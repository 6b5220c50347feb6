//! The system OpenBLAS's `cblas_sgemm` (the `blas` feature) on the step's two products: the CPU roofline `rmld bench` reports.
//!
//! Only for measuring: sampling keeps its products on the `gemm` crate, so draws do not
//! depend on the feature. Needs `libopenblas` at link time (`apt-get install libopenblas-dev`).

use std::ffi::{c_char, CStr};

#[link(name = "openblas")]
extern "C" {
    #[allow(clippy::too_many_arguments)]
    fn cblas_sgemm(
        layout: i32,
        trans_a: i32,
        trans_b: i32,
        m: i32,
        n: i32,
        k: i32,
        alpha: f32,
        a: *const f32,
        lda: i32,
        b: *const f32,
        ldb: i32,
        beta: f32,
        c: *mut f32,
        ldc: i32,
    );
    fn openblas_set_num_threads(threads: i32);
    fn openblas_get_config() -> *const c_char;
}

const ROW_MAJOR: i32 = 101;
const NO_TRANS: i32 = 111;
const TRANS: i32 = 112;

/// OpenBLAS's build description (version, target core, threading).
pub fn config() -> String {
    // SAFETY: OpenBLAS returns a static NUL-terminated string.
    unsafe { CStr::from_ptr(openblas_get_config()) }
        .to_string_lossy()
        .into_owned()
}

/// Runs OpenBLAS on `threads` threads.
pub fn set_threads(threads: usize) {
    // SAFETY: a plain setter.
    unsafe { openblas_set_num_threads(threads.min(i32::MAX as usize) as i32) }
}

fn dim(v: usize) -> i32 {
    i32::try_from(v).expect("blas: dimension above i32::MAX")
}

/// out (C × d) = Z (C × p) · Aᵀ, A being d × p row-major: per chain A z.
pub fn residual_product(a: &[f32], d: usize, p: usize, z: &[f32], out: &mut [f32]) {
    let chains = z.len() / p;
    assert!(a.len() == d * p && z.len() == chains * p && out.len() == chains * d);
    // SAFETY: the lengths are checked above; row-major leading dimensions are the row widths.
    unsafe {
        cblas_sgemm(
            ROW_MAJOR,
            NO_TRANS,
            TRANS,
            dim(chains),
            dim(d),
            dim(p),
            1.0,
            z.as_ptr(),
            dim(p),
            a.as_ptr(),
            dim(p),
            0.0,
            out.as_mut_ptr(),
            dim(d),
        )
    }
}

/// out (C × p) = R (C × d) · A: per chain Aᵀ r.
pub fn transpose_product(a: &[f32], d: usize, p: usize, r: &[f32], out: &mut [f32]) {
    let chains = r.len() / d;
    assert!(a.len() == d * p && r.len() == chains * d && out.len() == chains * p);
    // SAFETY: as above.
    unsafe {
        cblas_sgemm(
            ROW_MAJOR,
            NO_TRANS,
            NO_TRANS,
            dim(chains),
            dim(p),
            dim(d),
            1.0,
            r.as_ptr(),
            dim(d),
            a.as_ptr(),
            dim(p),
            0.0,
            out.as_mut_ptr(),
            dim(p),
        )
    }
}
