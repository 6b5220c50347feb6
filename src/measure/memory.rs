//! Sizes that cannot fit are refused before anything is allocated: a run's host memory estimated, part by part, from its settings and what each backend keeps.
//!
//! The estimates count every copy a backend keeps (docs/benchmarks.md, "Memory: the estimate
//! against peak RSS", compares them with the peak resident set of real runs): the CPU backend
//! holds the dictionary four times (A, its columns, and packed both ways), the ADMM encoder two
//! more (its whitened B, packed both ways), and each chain its state and read-backs. What is
//! left after the estimate is caught by `crate::alloc`: a refused allocation is an error, never
//! an abort.

pub use crate::alloc::human;
use crate::io::{Dataset, Pixels};
use crate::{Error, Result};

pub use crate::alloc::available_bytes;

/// Fails (`Error::Usage` on `setting`) when `needed` bytes (what `what` describes) exceed what
/// the machine has available; nothing when that is unknown.
pub fn check_fits(setting: &'static str, what: &str, needed: f64) -> Result<()> {
    Footprint::new().add(what, needed).check(setting)
}

/// What a run will hold in host memory at its peak, part by part: the estimate it is checked
/// against before it allocates, and what the refusal lists.
#[derive(Clone, Debug, Default)]
pub struct Footprint {
    parts: Vec<(String, f64, bool)>,
}

impl Footprint {
    /// An empty estimate.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `bytes` still to be allocated, for `what`.
    pub fn add(mut self, what: impl Into<String>, bytes: f64) -> Self {
        self.parts.push((what.into(), bytes, false));
        self
    }

    /// Adds `bytes` the process holds already (the data and the dictionary loaded): counted in
    /// the total, not in what is asked of the machine.
    pub fn held(mut self, what: impl Into<String>, bytes: f64) -> Self {
        self.parts.push((what.into(), bytes, true));
        self
    }

    /// These parts and `other`'s.
    pub fn and(mut self, other: Footprint) -> Self {
        self.parts.extend(other.parts);
        self
    }

    /// Every part's bytes: the estimated peak resident set of the run (what report.json's
    /// `peak_rss_estimate_bytes` says, beside the measured `peak_rss_bytes`).
    pub fn total(&self) -> f64 {
        self.parts.iter().map(|p| p.1).sum()
    }

    /// The bytes still to be allocated.
    pub fn to_allocate(&self) -> f64 {
        self.parts.iter().filter(|p| !p.2).map(|p| p.1).sum()
    }

    /// The parts, largest first, with their sizes.
    pub fn describe(&self) -> String {
        crate::alloc::largest_first(self.parts.iter().map(|p| (p.0.as_str(), p.1)))
    }

    /// Fails (`Error::Usage` on `setting`, the setting that sizes the run) when what is still to
    /// be allocated exceeds what the machine has available ([`available_bytes`]); nothing when
    /// that is unknown or [`crate::alloc::SKIP_CHECK_ENV`] is set to 1.
    pub fn check(&self, setting: &'static str) -> Result<()> {
        let Some(available) = crate::alloc::checked_available() else {
            return Ok(());
        };
        let needed = self.to_allocate();
        if needed.is_finite() && needed <= available as f64 {
            return Ok(());
        }
        Err(Error::usage(
            setting,
            format!(
                "the run needs about {} more memory ({}), more than the {} this process can \
                 still allocate (the machine's available memory, or its address-space limit): \
                 lower `{setting}`",
                human(needed),
                self.describe(),
                human(available as f64)
            ),
        ))
    }
}

/// Values padded to whole 64-column panels, as `backend::cpu::packed` stores a matrix.
fn panels(n: usize) -> f64 {
    n.div_ceil(64) as f64 * 64.0
}

/// Bytes of the dictionary A (d × p, f32).
pub fn dictionary_bytes(d: usize, p: usize) -> f64 {
    4.0 * d as f64 * p as f64
}

/// The CPU backend's copies of the d × p dictionary besides A itself: its columns (for the
/// leapfrog carry) and A packed both ways for the products, each panel padded to 64 columns.
pub fn cpu_dictionary_copies(d: usize, p: usize) -> f64 {
    4.0 * (d as f64 * p as f64 + panels(p) * d as f64 + panels(d) * p as f64)
}

/// Per chain, the CPU backend's state: X, Z, both gradients and the momentum (p each); both
/// residuals, the minibatch mean, the step residual and the chain's offset twice (d each).
pub fn chain_bytes(d: usize, p: usize) -> f64 {
    4.0 * (5.0 * p as f64 + 6.0 * d as f64)
}

/// Per chain, what the orchestrator reads back and keeps while the chains run: the positions,
/// the images, the start and last images, and the first kept draw the degenerate-run watch
/// compares with.
pub fn readback_bytes(d: usize, p: usize) -> f64 {
    4.0 * (3.0 * p as f64 + 3.0 * d as f64)
}

/// Per row, FISTA's workspace (five vectors of p, six of d) with the row's image and its code.
pub fn fista_row_bytes(d: usize, p: usize) -> f64 {
    4.0 * (6.0 * p as f64 + 7.0 * d as f64)
}

/// The ADMM encoder's factor at its peak (the CPU backend builds it where d ≤ 2,048 and a
/// tolerance is set): B = L⁻¹A packed both ways and unpacked while it is packed, A packed once
/// more to compute it, and the d × d Gram matrix, its f64 copies and L⁻¹.
pub fn admm_factor_bytes(d: usize, p: usize) -> f64 {
    let dp = d as f64 * p as f64;
    let dd = d as f64 * d as f64;
    4.0 * (panels(p) * d as f64 + panels(d) * p as f64 + dp + dp) + dd * (4.0 + 8.0 + 16.0 + 4.0)
}

/// Per row, the ADMM encoder's workspace (Aᵀx, v, u and the code: p each; the image and two
/// residuals: d each).
pub fn admm_row_bytes(d: usize, p: usize) -> f64 {
    4.0 * (4.0 * p as f64 + 3.0 * d as f64)
}

/// The host memory of `chains` chains on the CPU backend over a d × p dictionary already
/// loaded: the backend's copies of A and every chain's state, then the larger of the LASSO
/// starts' workspace (FISTA over every chain at once, when `lasso_starts`; freed before the
/// chains run) and the read-backs of the running chains.
pub fn cpu_sampler(chains: usize, d: usize, p: usize, lasso_starts: bool) -> Footprint {
    let c = chains as f64;
    let starts = if lasso_starts {
        fista_row_bytes(d, p)
    } else {
        0.0
    };
    Footprint::new()
        .held("the dictionary A", dictionary_bytes(d, p))
        .add(
            "the CPU backend's 3 copies of A",
            cpu_dictionary_copies(d, p),
        )
        .add(format!("{chains} chains' state"), c * chain_bytes(d, p))
        .add(
            "their LASSO starts or read-backs",
            c * starts.max(readback_bytes(d, p)),
        )
}

/// The host memory of `chains` chains on the GPU backend: A and its upload's staging copy, and
/// every chain's read-backs (the chains' state lives on the device).
pub fn gpu_sampler(chains: usize, d: usize, p: usize) -> Footprint {
    Footprint::new()
        .held("the dictionary A", dictionary_bytes(d, p))
        .add("its upload to the GPU", dictionary_bytes(d, p))
        .add(
            format!("{chains} chains' read-backs"),
            chains as f64 * readback_bytes(d, p),
        )
}

/// Host bytes of `chains` chains at dimension d with p atoms on the CPU backend (without the
/// LASSO starts): the dictionary, its copies and the chains.
pub fn sampler_bytes(chains: usize, d: usize, p: usize) -> f64 {
    cpu_sampler(chains, d, p, false).total()
}

/// The program itself (code, libraries, thread stacks), resident before a run allocates
/// anything; a GPU driver adds its own heap (lavapipe's 100 MiB here).
pub fn program(gpu: bool) -> Footprint {
    let mib = if gpu { 128.0 } else { 16.0 };
    Footprint::new().held("the program", mib * 1024.0 * 1024.0)
}

/// The data as loaded: the dataset's values and the posterior's copy of them
/// (`model::Observations`), both held for the whole run.
pub fn data(dataset: &Dataset) -> Footprint {
    let bytes = match &dataset.pixels {
        Pixels::U8(v) => v.len() as f64,
        Pixels::F32(v) => 4.0 * v.len() as f64,
    };
    Footprint::new().held("the data and its copy", 2.0 * bytes)
}

/// A sampling run's chains on the CPU or (`gpu`) the GPU backend, with HMC's carried
/// trajectory on the CPU (its AAᵀ packed, and four images per chain) when `hmc`.
pub fn sampler(
    shape: (usize, usize, usize),
    gpu: bool,
    lasso_starts: bool,
    hmc: bool,
) -> Footprint {
    let (chains, d, p) = shape;
    if gpu {
        return gpu_sampler(chains, d, p);
    }
    let carry = match hmc {
        true => 4.0 * (d as f64 * d as f64 + panels(d) * d as f64) + 16.0 * (chains * d) as f64,
        false => 0.0,
    };
    cpu_sampler(chains, d, p, lasso_starts).add("HMC's carried trajectory", carry)
}

/// A backend that LASSO-encodes `batch` rows at a time over the d × p dictionary: on the GPU,
/// A's upload; on the CPU, its 3 copies of A, the ADMM factor where it builds one (`admm`: a
/// tolerance, and d ≤ 2,048) and a batch's workspace. A itself is counted once, by the caller.
pub fn encoding_backend(batch: usize, (d, p): (usize, usize), gpu: bool, admm: bool) -> Footprint {
    if gpu {
        return Footprint::new().add("A's upload to the GPU", dictionary_bytes(d, p));
    }
    let factor = if admm { admm_factor_bytes(d, p) } else { 0.0 };
    Footprint::new()
        .add(
            "the CPU backend's 3 copies of A",
            cpu_dictionary_copies(d, p),
        )
        .add("the ADMM factor", factor)
        .add(
            "a batch's workspace",
            batch as f64 * fista_row_bytes(d, p).max(admm_row_bytes(d, p)),
        )
}

/// `rows` rows' codes (p each), reconstructions and originals (d each), all kept until they are
/// written, and A packed once more for the reconstructions.
pub fn encoded_rows(rows: usize, (d, p): (usize, usize)) -> Footprint {
    Footprint::new()
        .add(
            format!("{rows} codes, reconstructions and originals"),
            rows as f64 * 4.0 * (p as f64 + 2.0 * d as f64),
        )
        .add(
            "A packed for the reconstructions",
            4.0 * panels(d) * p as f64,
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impossible_size_is_refused_by_name() {
        if available_bytes().is_none() {
            return;
        }
        let e = check_fits("chains", "1e18 chains", 1e30)
            .unwrap_err()
            .to_string();
        assert!(e.contains("chains") && e.contains("available"), "{e}");
        assert!(check_fits("chains", "nothing", 1.0).is_ok());
    }

    #[test]
    fn held_parts_count_in_the_total_not_in_the_request() {
        let f = Footprint::new().held("data", 1e30).add("chains", 10.0);
        assert_eq!(f.to_allocate(), 10.0);
        assert!(f.total() > 1e29);
        assert!(f.check("chains").is_ok());
        assert!(f.describe().starts_with("data "), "{}", f.describe());
    }

    #[test]
    fn the_cpu_backend_is_counted_with_every_copy_of_the_dictionary() {
        // d = 65,536 and 2,048 atoms (issue 43): A is 512 MiB, the backend holds it 4 times.
        let f = cpu_sampler(1, 65_536, 2_048, false);
        let a = dictionary_bytes(65_536, 2_048);
        assert!(
            f.total() >= 4.0 * a && f.total() < 4.01 * a,
            "{}",
            f.total()
        );
        // Panels pad to 64 columns: 65 atoms are packed as 128.
        assert_eq!(
            cpu_dictionary_copies(1, 65),
            4.0 * (65.0 + 128.0 + 64.0 * 65.0)
        );
    }
}
