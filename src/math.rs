//! f64's elementary functions from the libm crate, so that a seed's outputs do not depend on the CPU's FMA or on the C library.
//!
//! `f64::exp` and its kin call the C library, and glibc picks an FMA or a plain build of exp,
//! log, pow, sin and cos by the CPU: with FMA hidden (`GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA`,
//! as on a CPU without it) exp differs in the last bit for about 1 argument in 1,400, and
//! `rmld sample --method hmc` wrote another `acceptance_rate.npy`. The libm crate is Rust, with no
//! contraction into FMA, so it gives the same bits on every CPU and platform (it differs from
//! glibc by an ulp in about 10% of exp's values, so the switch moved adaptive runs' draws once;
//! docs/benchmarks.md). `clippy.toml`
//! refuses the `f64` methods in rmld's code. The f32 functions stay on the C library: glibc's
//! float builds gave the same bits with and without FMA on 4 million arguments each, and the
//! chains' Gaussians (one `ln`, `cos` and `sin` per pair) are about 10% faster there. Dictionary
//! learning's Normal, Gamma and χ² draws are `rng::portable_draws`' (`rand_distr`'s called the C
//! library inside).

/// f64's elementary functions, each the libm crate's, named after the method it replaces.
pub trait Portable: Sized {
    /// eˣ.
    fn exp_portable(self) -> Self;
    /// eˣ − 1.
    fn exp_m1_portable(self) -> Self;
    /// The natural logarithm.
    fn ln_portable(self) -> Self;
    /// ln(1 + x).
    fn ln_1p_portable(self) -> Self;
    /// The base-10 logarithm.
    fn log10_portable(self) -> Self;
    /// xʸ.
    fn powf_portable(self, y: Self) -> Self;
    /// The sine.
    fn sin_portable(self) -> Self;
    /// The cosine.
    fn cos_portable(self) -> Self;
    /// (sine, cosine).
    fn sin_cos_portable(self) -> (Self, Self);
    /// √(x² + y²) without overflow.
    fn hypot_portable(self, y: Self) -> Self;
}

impl Portable for f64 {
    fn exp_portable(self) -> f64 {
        libm::exp(self)
    }
    fn exp_m1_portable(self) -> f64 {
        libm::expm1(self)
    }
    fn ln_portable(self) -> f64 {
        libm::log(self)
    }
    fn ln_1p_portable(self) -> f64 {
        libm::log1p(self)
    }
    fn log10_portable(self) -> f64 {
        libm::log10(self)
    }
    fn powf_portable(self, y: f64) -> f64 {
        libm::pow(self, y)
    }
    fn sin_portable(self) -> f64 {
        libm::sin(self)
    }
    fn cos_portable(self) -> f64 {
        libm::cos(self)
    }
    fn sin_cos_portable(self) -> (f64, f64) {
        libm::sincos(self)
    }
    fn hypot_portable(self, y: f64) -> f64 {
        libm::hypot(self, y)
    }
}

#[cfg(test)]
mod tests {
    use super::Portable;

    /// Values known exactly, or to an ulp or two, and the functions each other's inverses.
    #[test]
    fn agrees_with_known_values() {
        assert_eq!(0f64.exp_portable(), 1.0);
        assert_eq!(1f64.ln_portable(), 0.0);
        assert_eq!(1000f64.log10_portable(), 3.0);
        assert_eq!(2f64.powf_portable(10.0), 1024.0);
        assert_eq!(3f64.hypot_portable(4.0), 5.0);
        assert_eq!(0f64.sin_cos_portable(), (0.0, 1.0));
        // libm is within an ulp or so, not correctly rounded: exp(1) is one ulp above e.
        let close = |a: f64, b: f64| (a - b).abs() <= 2.0 * f64::EPSILON * b.abs();
        assert!(close(1f64.exp_portable(), std::f64::consts::E));
        assert!(close(std::f64::consts::E.ln_portable(), 1.0));
        for x in [-700.0, -3.5, -1e-9, 0.25, 1.0, 7.0, 700.0f64] {
            let e = x.exp_portable();
            assert!(
                (e.ln_portable() - x).abs() <= 2e-16 * x.abs().max(1.0),
                "exp {x}"
            );
            let l = x.abs().ln_portable();
            assert!((l.exp_portable() / x.abs() - 1.0).abs() <= 4e-15, "ln {x}");
            assert!(
                (x.exp_m1_portable() - (e - 1.0)).abs() <= 1e-15 * (1.0 + e),
                "{x}"
            );
        }
        assert_eq!(f64::NEG_INFINITY.exp_portable(), 0.0);
        assert!((-1f64).ln_portable().is_nan());
        assert_eq!(0f64.ln_portable(), f64::NEG_INFINITY);
    }
}
