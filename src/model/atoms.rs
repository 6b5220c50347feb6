//! Parametric atoms (Chaspari et al. 2016): EDA tonic/phasic atoms for 1-D signals, 2-D Gabor atoms for images.
//!
//! An [`AtomFamily`] maps a parameter vector θ to a unit-norm atom φ(θ). The learnable atoms are
//! the EDA phasic (skin-conductance response) atoms, θ = (t0, Trise, Tdecay) in samples,
//!
//! φ(t) ∝ exp(−(t − t0)/Tdecay) · [1 + (Trise/(t − t0))²]⁻² for t > t0, 0 otherwise,
//!
//! and the Gabor atoms on a side × side image, θ = (x0, y0, orientation, frequency, width, phase),
//!
//! φ(x, y) ∝ exp(−(u² + v²)/(2·width²)) · cos(2π·frequency·u + phase),
//! u = (x − x0)cos(orientation) + (y − y0)sin(orientation), v = −(x − x0)sin(orientation) + (y − y0)cos(orientation).
//!
//! The EDA tonic atoms Δ0 + Δ·t (Table III of the paper) are fixed columns, not learned.

use crate::math::Portable;
use crate::{Error, Result};

/// A parameter → atom map with the ranges its parameters must lie in.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum AtomFamily {
    /// EDA phasic atoms of `len` samples: θ = (t0, Trise, Tdecay).
    Eda {
        /// Samples per signal.
        len: usize,
    },
    /// Gabor atoms on `side × side` images: θ = (x0, y0, orientation, frequency, width, phase).
    Gabor {
        /// Image side in pixels.
        side: usize,
    },
}

const EDA_NAMES: [&str; 3] = ["t0", "trise", "tdecay"];
const GABOR_NAMES: [&str; 6] = ["x0", "y0", "orientation", "frequency", "width", "phase"];

impl AtomFamily {
    /// Checks the family's own size: EDA signals need at least 4 samples, Gabor images a side of at least 2.
    pub fn validate(&self) -> Result<()> {
        match *self {
            AtomFamily::Eda { len } if len < 4 => Err(Error::usage(
                "family",
                format!("EDA atoms need signals of at least 4 samples, got {len}"),
            )),
            AtomFamily::Gabor { side } if side < 2 => Err(Error::usage(
                "family",
                format!("Gabor atoms need images of side at least 2, got {side}"),
            )),
            _ => Ok(()),
        }
    }

    /// The atom length d (signal samples or pixels).
    pub fn dim(&self) -> usize {
        match *self {
            AtomFamily::Eda { len } => len,
            AtomFamily::Gabor { side } => side * side,
        }
    }

    /// The number of parameters Q of a learnable atom.
    pub fn q(&self) -> usize {
        self.names().len()
    }

    /// The parameters' names, in θ's order.
    pub fn names(&self) -> &'static [&'static str] {
        match self {
            AtomFamily::Eda { .. } => &EDA_NAMES,
            AtomFamily::Gabor { .. } => &GABOR_NAMES,
        }
    }

    /// The closed range [lo, hi] of each parameter.
    pub fn ranges(&self) -> Vec<(f64, f64)> {
        match *self {
            AtomFamily::Eda { len } => {
                let n = len as f64;
                vec![(0.0, n - 2.0), (0.5, n), (0.5, 4.0 * n)]
            }
            AtomFamily::Gabor { side } => {
                let s = side as f64;
                vec![
                    (0.0, s - 1.0),
                    (0.0, s - 1.0),
                    (0.0, std::f64::consts::PI),
                    (0.0, 0.5),
                    (0.5, s),
                    (-std::f64::consts::PI, std::f64::consts::PI),
                ]
            }
        }
    }

    /// A natural step per parameter (the Nelder–Mead simplex size and the unit of the MH
    /// proposal's scale): 1 sample for EDA; pixels, radians and cycles/pixel for Gabor.
    pub fn units(&self) -> Vec<f64> {
        match self {
            AtomFamily::Eda { .. } => vec![1.0, 1.0, 1.0],
            AtomFamily::Gabor { .. } => vec![1.0, 1.0, 0.2, 0.02, 0.5, 0.5],
        }
    }

    /// True when every parameter of θ is finite and in its range.
    pub fn in_range(&self, theta: &[f64]) -> bool {
        theta.len() == self.q()
            && theta
                .iter()
                .zip(self.ranges())
                .all(|(&v, (lo, hi))| v.is_finite() && v >= lo && v <= hi)
    }

    /// Checks θ: an error names the first parameter outside its range and the range.
    pub fn check(&self, theta: &[f64]) -> Result<()> {
        if theta.len() != self.q() {
            return Err(Error::usage(
                "atom parameters",
                format!(
                    "{} parameters given, the {} family has {} ({})",
                    theta.len(),
                    self.label(),
                    self.q(),
                    self.names().join(", ")
                ),
            ));
        }
        for ((&v, (lo, hi)), name) in theta.iter().zip(self.ranges()).zip(self.names()) {
            if !(v.is_finite() && v >= lo && v <= hi) {
                return Err(Error::usage(
                    "atom parameters",
                    format!(
                        "{} atom parameter {name} = {v} is outside its range [{lo}, {hi}]",
                        self.label()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// "eda" or "gabor".
    pub fn label(&self) -> &'static str {
        match self {
            AtomFamily::Eda { .. } => "eda",
            AtomFamily::Gabor { .. } => "gabor",
        }
    }

    /// The raw (unnormalised) atom φ(θ) into `out` (length `dim()`); θ is not checked.
    pub fn raw_atom(&self, theta: &[f64], out: &mut [f64]) {
        match *self {
            AtomFamily::Eda { .. } => {
                let (t0, rise, decay) = (theta[0], theta[1], theta[2]);
                for (t, o) in out.iter_mut().enumerate() {
                    let tau = t as f64 - t0;
                    *o = if tau > 0.0 {
                        let ratio = tau * tau / (tau * tau + rise * rise);
                        (-tau / decay).exp_portable() * ratio * ratio
                    } else {
                        0.0
                    };
                }
            }
            AtomFamily::Gabor { side } => {
                let (x0, y0, angle, freq, width, phase) =
                    (theta[0], theta[1], theta[2], theta[3], theta[4], theta[5]);
                let (sin, cos) = angle.sin_cos_portable();
                let inv = 1.0 / (2.0 * width * width);
                for (i, o) in out.iter_mut().enumerate() {
                    let (y, x) = ((i / side) as f64 - y0, (i % side) as f64 - x0);
                    let u = x * cos + y * sin;
                    let v = -x * sin + y * cos;
                    *o = (-(u * u + v * v) * inv).exp_portable()
                        * (std::f64::consts::TAU * freq * u + phase).cos_portable();
                }
            }
        }
    }

    /// The unit-norm atom φ(θ)/‖φ(θ)‖ into `out`; false (and `out` unspecified) when θ is outside
    /// its ranges or the atom is (numerically) zero.
    pub fn atom(&self, theta: &[f64], out: &mut [f64]) -> bool {
        if !self.in_range(theta) {
            return false;
        }
        self.raw_atom(theta, out);
        normalize(out)
    }

    /// The unit-norm atom as a new vector, or an error naming the parameter outside its range
    /// or saying the atom is zero.
    pub fn atom_checked(&self, theta: &[f64]) -> Result<Vec<f64>> {
        self.check(theta)?;
        let mut out = vec![0.0; self.dim()];
        if !self.atom(theta, &mut out) {
            return Err(Error::usage(
                "atom parameters",
                format!(
                    "the {} atom with parameters {theta:?} is zero",
                    self.label()
                ),
            ));
        }
        Ok(out)
    }

    /// The initial learnable atoms: for EDA the paper's Table III phasic grid (Trise ∈ {8, 14, 18},
    /// Tdecay ∈ {10, 15, 20}, t0 ∈ {0, 10, ..., len − 10}: 144 atoms for 160 samples); for Gabor
    /// a grid of 4 × 4 positions, 4 orientations, 2 frequencies, 2 widths and 2 phases (512 atoms).
    pub fn initial_grid(&self) -> Vec<Vec<f64>> {
        match *self {
            AtomFamily::Eda { .. } => {
                let mut grid = Vec::new();
                for &rise in &[8.0, 14.0, 18.0] {
                    for &decay in &[10.0, 15.0, 20.0] {
                        for t0 in self.shifts() {
                            grid.push(vec![t0, rise, decay]);
                        }
                    }
                }
                grid
            }
            AtomFamily::Gabor { side } => {
                let s = side as f64;
                let mut grid = Vec::new();
                for iy in 0..4 {
                    for ix in 0..4 {
                        for io in 0..4 {
                            for &freq in &[0.1, 0.2] {
                                for &width in &[s / 14.0, s / 7.0] {
                                    for &phase in &[0.0, std::f64::consts::FRAC_PI_2] {
                                        grid.push(vec![
                                            (ix as f64 + 0.5) * s / 4.0 - 0.5,
                                            (iy as f64 + 0.5) * s / 4.0 - 0.5,
                                            io as f64 * std::f64::consts::FRAC_PI_4,
                                            freq,
                                            width.max(0.5),
                                            phase,
                                        ]);
                                    }
                                }
                            }
                        }
                    }
                }
                grid
            }
        }
    }

    /// For EDA, the onsets t0 ∈ {0, 10, ..., len − 10} over which the final dictionary replicates
    /// each learned (Trise, Tdecay) shape (the paper's Section VII-B1); empty for Gabor.
    pub fn shifts(&self) -> Vec<f64> {
        match *self {
            AtomFamily::Eda { len } => (0..len.saturating_sub(9))
                .step_by(10)
                .map(|t| t as f64)
                .filter(|&t| t <= len as f64 - 2.0)
                .collect(),
            AtomFamily::Gabor { .. } => Vec::new(),
        }
    }

    /// The fixed (not learned) atoms of the family, unit norm: for EDA the 63 tonic atoms of
    /// Table III, Δ0 + Δ·t with Δ0 ∈ {−20, −10, 1} and Δ ∈ {−0.01, −0.009, ..., 0, 0.01, ..., 0.1};
    /// none for Gabor.
    pub fn fixed_atoms(&self) -> Vec<Vec<f64>> {
        match *self {
            AtomFamily::Eda { len } => {
                let slopes: Vec<f64> = (0..=10)
                    .map(|i| -0.01 + 0.001 * i as f64)
                    .chain((1..=10).map(|i| 0.01 * i as f64))
                    .collect();
                let mut atoms = Vec::new();
                for &level in &[-20.0, -10.0, 1.0] {
                    for &slope in &slopes {
                        let mut a: Vec<f64> = (0..len).map(|t| level + slope * t as f64).collect();
                        if normalize(&mut a) {
                            atoms.push(a);
                        }
                    }
                }
                atoms
            }
            AtomFamily::Gabor { .. } => Vec::new(),
        }
    }
}

/// Scales `v` to unit norm; false when its norm is zero or not finite.
pub(crate) fn normalize(v: &mut [f64]) -> bool {
    let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    if !(norm.is_finite() && norm > 1e-12) {
        return false;
    }
    v.iter_mut().for_each(|x| *x /= norm);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eda_atom_matches_its_closed_form() {
        let family = AtomFamily::Eda { len: 160 };
        let theta = [30.0, 8.0, 15.0];
        let mut raw = vec![0.0; 160];
        family.raw_atom(&theta, &mut raw);
        for (t, &got) in raw.iter().enumerate() {
            let tau = t as f64 - 30.0;
            let want = if tau > 0.0 {
                (-tau / 15.0).exp_portable() / (1.0 + (8.0 / tau).powi(2)).powi(2)
            } else {
                0.0
            };
            assert!(
                (got - want).abs() <= 1e-12 * want.abs().max(1.0),
                "t = {t}: got {got}, closed form {want}"
            );
        }
        // At t − t0 = Trise the sigmoid factor is exactly 1/4.
        assert!((raw[38] - (-8.0f64 / 15.0).exp_portable() / 4.0).abs() < 1e-14);
        let unit = family.atom_checked(&theta).unwrap();
        let norm: f64 = unit.iter().map(|x| x * x).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() < 1e-12, "norm {norm}");
    }

    #[test]
    fn gabor_atom_matches_its_closed_form() {
        let family = AtomFamily::Gabor { side: 8 };
        let theta = [3.0, 4.0, 0.0, 0.25, 2.0, 0.0];
        let mut raw = vec![0.0; 64];
        family.raw_atom(&theta, &mut raw);
        for (i, &got) in raw.iter().enumerate() {
            let (x, y) = ((i % 8) as f64 - 3.0, (i / 8) as f64 - 4.0);
            let want = (-(x * x + y * y) / 8.0).exp_portable()
                * (std::f64::consts::TAU * 0.25 * x).cos_portable();
            assert!(
                (got - want).abs() < 1e-12,
                "pixel {i}: got {got}, closed form {want}"
            );
        }
        // Rotating by π/2 swaps the roles of x and y.
        let mut turned = vec![0.0; 64];
        family.raw_atom(
            &[3.0, 3.0, std::f64::consts::FRAC_PI_2, 0.25, 2.0, 0.0],
            &mut turned,
        );
        let mut straight = vec![0.0; 64];
        family.raw_atom(&[3.0, 3.0, 0.0, 0.25, 2.0, 0.0], &mut straight);
        for y in 0..8 {
            for x in 0..8 {
                let (a, b) = (turned[y * 8 + x], straight[x * 8 + y]);
                assert!((a - b).abs() < 1e-12, "({x}, {y}): {a} vs transposed {b}");
            }
        }
    }

    #[test]
    fn tables_have_the_papers_sizes() {
        let eda = AtomFamily::Eda { len: 160 };
        assert_eq!(eda.fixed_atoms().len(), 63);
        assert_eq!(eda.initial_grid().len(), 144);
        assert_eq!(eda.shifts().len(), 16);
        assert_eq!(AtomFamily::Gabor { side: 28 }.initial_grid().len(), 512);
        let gabor = AtomFamily::Gabor { side: 28 };
        for theta in gabor.initial_grid() {
            gabor.atom_checked(&theta).unwrap();
        }
    }

    #[test]
    fn parameters_outside_their_ranges_are_named() {
        let eda = AtomFamily::Eda { len: 160 };
        let e = eda.check(&[10.0, -1.0, 5.0]).unwrap_err().to_string();
        assert!(e.contains("trise") && e.contains("[0.5, 160]"), "{e}");
        let e = eda.check(&[200.0, 3.0, 5.0]).unwrap_err().to_string();
        assert!(e.contains("t0") && e.contains("158"), "{e}");
        let e = eda.check(&[1.0, 2.0]).unwrap_err().to_string();
        assert!(e.contains("3 (t0, trise, tdecay)"), "{e}");
        let gabor = AtomFamily::Gabor { side: 28 };
        let e = gabor
            .check(&[1.0, 1.0, 0.0, 0.7, 2.0, 0.0])
            .unwrap_err()
            .to_string();
        assert!(e.contains("frequency") && e.contains("0.5"), "{e}");
        let e = gabor
            .check(&[1.0, 1.0, 0.0, f64::NAN, 2.0, 0.0])
            .unwrap_err()
            .to_string();
        assert!(e.contains("frequency = NaN"), "{e}");
        // A zero atom: frequency 0 and phase π/2 gives cos(π/2) = 0 everywhere.
        let e = gabor
            .atom_checked(&[1.0, 1.0, 0.0, 0.0, 2.0, std::f64::consts::FRAC_PI_2])
            .unwrap_err()
            .to_string();
        assert!(e.contains("is zero"), "{e}");
    }
}
