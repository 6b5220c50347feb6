//! Normal, Gamma and χ² draws from any `rand::RngCore` with the same bits on every CPU: f64 arithmetic and `math::Portable`'s functions, where `rand_distr`'s call the C library's `exp`, `ln` and `pow`, whose last bit follows the CPU on glibc (dictionary learning draws with these).

use rand::RngCore;

use super::gamma::{marsaglia_tsang, GammaDraws};
use crate::math::Portable;

/// A uniform on (0, 1) from the top 53 bits of one `u64` (never 0 or 1).
#[inline]
fn open01(rng: &mut impl RngCore) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) * (1.0 / 9_007_199_254_740_992.0)
}

/// A standard normal by Box–Muller (the cosine branch) from two uniforms, radius first.
pub fn standard_normal(rng: &mut impl RngCore) -> f64 {
    let radius = (-2.0 * open01(rng).ln_portable()).sqrt();
    radius * (std::f64::consts::TAU * open01(rng)).cos_portable()
}

/// A Gamma(shape, 1) draw by Marsaglia & Tsang (2000), as `rng::standard_gamma` draws it from a
/// stream, here from `rng` (the boost's uniform first, then each attempt's normal and uniform);
/// None unless the shape is positive and finite.
pub fn standard_gamma(rng: &mut impl RngCore, shape: f64) -> Option<f64> {
    struct RngDraws<'a, R>(&'a mut R);
    impl<R: RngCore> GammaDraws for RngDraws<'_, R> {
        fn boost(&mut self) -> f64 {
            open01(self.0)
        }
        fn attempt(&mut self, _: u32) -> (f64, f64) {
            (standard_normal(self.0), open01(self.0))
        }
    }
    let g = marsaglia_tsang(shape, &mut RngDraws(rng));
    (!g.is_nan()).then_some(g)
}

/// A χ²(k) draw, 2 · Gamma(k/2); None unless k is positive and finite.
pub fn chi_squared(rng: &mut impl RngCore, k: f64) -> Option<f64> {
    standard_gamma(rng, 0.5 * k).map(|g| 2.0 * g)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{PhiloxRng, Purpose, Stream};

    fn rng(i: u32) -> PhiloxRng {
        PhiloxRng::new(Stream::new(11, 0, i, 0, Purpose::Dictionary))
    }

    /// Mean and variance of `n` draws.
    fn moments(n: u32, draw: impl Fn(&mut PhiloxRng) -> f64) -> (f64, f64) {
        let xs: Vec<f64> = (0..n).map(|i| draw(&mut rng(i))).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        (mean, var)
    }

    #[test]
    fn draws_have_their_distributions_moments() {
        // 20,000 draws: the mean's Monte Carlo error is sd/141; tolerances are 4 of them, and
        // 4 of the variance's (sd² · sqrt((κ − 1)/n), κ the kurtosis).
        let n = 20_000;
        let (m, v) = moments(n, standard_normal);
        assert!(m.abs() < 4.0 / 141.4 && (v - 1.0).abs() < 4.0 * (2.0f64 / n as f64).sqrt());
        for shape in [0.3, 1.0, 2.5, 40.0] {
            let (m, v) = moments(n, |r| standard_gamma(r, shape).unwrap());
            // Gamma(k): mean k, variance k, kurtosis 3 + 6/k.
            let mean_err = 4.0 * (shape / n as f64).sqrt();
            let var_err = 4.0 * shape * ((2.0 + 6.0 / shape) / n as f64).sqrt();
            assert!((m - shape).abs() < mean_err, "shape {shape}: mean {m}");
            assert!((v - shape).abs() < var_err, "shape {shape}: variance {v}");
        }
        let (m, v) = moments(n, |r| chi_squared(r, 3.0).unwrap());
        assert!(
            (m - 3.0).abs() < 4.0 * (6.0 / n as f64).sqrt(),
            "χ²(3) mean {m}"
        );
        assert!(
            (v - 6.0).abs() < 4.0 * 6.0 * (6.0 / n as f64).sqrt(),
            "χ²(3) variance {v}"
        );
        assert_eq!(standard_gamma(&mut rng(0), 0.0), None);
        assert_eq!(chi_squared(&mut rng(0), f64::NAN), None);
    }
}
