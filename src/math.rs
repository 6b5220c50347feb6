//! f64's and f32's elementary functions from the libm crate, so that a seed's outputs do not depend on the CPU's FMA or on the C library.
//!
//! `f64::exp` and its kin call the C library, and glibc picks an FMA or a plain build of exp,
//! log, pow, sin and cos by the CPU: with FMA hidden (`GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA`,
//! as on a CPU without it) exp differs in the last bit for about 1 argument in 1,400, and
//! `rmld sample --method hmc` wrote another `acceptance_rate.npy`. The libm crate is Rust, with no
//! contraction into FMA, so it gives the same bits on every CPU and platform (it differs from
//! glibc by an ulp in about 10% of exp's values, so the switch moved adaptive runs' draws once;
//! docs/benchmarks.md). `clippy.toml` refuses the `f64` and `f32` methods in rmld's code.
//!
//! glibc's float builds differ too, rarely: over every f32 argument (glibc 2.36), `expf` differs
//! between the two builds at 32.564632 and −63.09946 (a weight of a mixture or a Sinkhorn plan,
//! or SSGL's inclusion probability, can take such an exponent), `sinf` and `cosf` for some
//! arguments of magnitude 16 to 128; `logf`, `log1pf` and `expm1f` never. rmld's f32 functions
//! are libm's f64 ones rounded once to f32, 2 ns slower than glibc's `expf`. They differ from it
//! for about 1 argument of `exp` in 25,000, where glibc's is the one not correctly rounded (40
//! of 40 checked against 50-digit values). The chains' Gaussians (`rng::philox`'s Box–Muller: one
//! `ln` of (0, 1] and a `cos` and `sin` of [0, 2π) per pair, where both builds agree on every
//! argument) stay on the C library, about 10% faster there. Dictionary learning's Normal, Gamma
//! and χ² draws are `rng::portable_draws`' (`rand_distr`'s called the C library inside).

/// Elementary functions, each the libm crate's in f64, named after the method it replaces.
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

/// f32's, each computed in f64 by libm and rounded once, so a hard case of glibc's f32 builds
/// (above) is correctly rounded, whatever the CPU.
impl Portable for f32 {
    fn exp_portable(self) -> f32 {
        libm::exp(self as f64) as f32
    }
    fn exp_m1_portable(self) -> f32 {
        libm::expm1(self as f64) as f32
    }
    fn ln_portable(self) -> f32 {
        libm::log(self as f64) as f32
    }
    fn ln_1p_portable(self) -> f32 {
        libm::log1p(self as f64) as f32
    }
    fn log10_portable(self) -> f32 {
        libm::log10(self as f64) as f32
    }
    fn powf_portable(self, y: f32) -> f32 {
        libm::pow(self as f64, y as f64) as f32
    }
    fn sin_portable(self) -> f32 {
        libm::sin(self as f64) as f32
    }
    fn cos_portable(self) -> f32 {
        libm::cos(self as f64) as f32
    }
    fn sin_cos_portable(self) -> (f32, f32) {
        let (sin, cos) = libm::sincos(self as f64);
        (sin as f32, cos as f32)
    }
    fn hypot_portable(self, y: f32) -> f32 {
        libm::hypot(self as f64, y as f64) as f32
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

    /// The two f32 arguments at which glibc 2.36's FMA and plain `expf` differ (every f32 was
    /// tried): the FMA build gives the next float up. Ours is the correctly rounded value
    /// (exp(32.564632415771484) = 138880145675599.26, exp(−63.09946060180664) = 3.94686661e−28,
    /// to 60 digits with Python's decimal), on any CPU.
    #[test]
    fn f32_exp_is_correctly_rounded_where_glibc_builds_differ() {
        for (argument, rounded) in [
            (0x4202_422f_u32, 0x56fc_9f1b_u32),
            (0xc27c_65d9, 0x11fa_2992),
        ] {
            let got = f32::from_bits(argument).exp_portable();
            assert_eq!(
                got.to_bits(),
                rounded,
                "exp({}) = {got:e}, want {:e}",
                f32::from_bits(argument),
                f32::from_bits(rounded)
            );
        }
        assert_eq!(0f32.exp_portable(), 1.0);
        assert_eq!(1f32.ln_portable(), 0.0);
        assert_eq!(0f32.ln_1p_portable(), 0.0);
        assert_eq!(f32::NEG_INFINITY.exp_portable(), 0.0);
        assert_eq!(200f32.exp_portable(), f32::INFINITY);
        assert_eq!(0f32.ln_portable(), f32::NEG_INFINITY);
        let (sin, cos) = 0.5f32.sin_cos_portable();
        assert_eq!((sin, cos), (0.5f32.sin_portable(), 0.5f32.cos_portable()));
    }
}
