//! Sizes that cannot fit are refused before anything is allocated: a run's host memory estimated from its settings.

use crate::{Error, Result};

/// Bytes the kernel says can still be allocated without swapping (`MemAvailable`, Linux), or
/// None where that is not known (then nothing is refused here).
pub fn available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// `bytes` in the largest unit that keeps a number ≥ 1 (KiB … PiB).
pub fn human(bytes: f64) -> String {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < units.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{value:.0} {}", units[0])
    } else {
        format!("{value:.1} {}", units[unit])
    }
}

/// Fails (`Error::Usage` on `setting`) when `needed` bytes (what `what` describes) exceed what
/// the machine has available; nothing when that is unknown.
pub fn check_fits(setting: &'static str, what: &str, needed: f64) -> Result<()> {
    let Some(available) = available_bytes() else {
        return Ok(());
    };
    if needed.is_finite() && needed <= available as f64 {
        return Ok(());
    }
    Err(Error::usage(
        setting,
        format!(
            "the run needs about {} of memory ({what}), more than the {} this machine has \
             available: lower `{setting}`",
            human(needed),
            human(available as f64)
        ),
    ))
}

/// Host bytes of `chains` chains of the samplers at dimension d with p atoms: the CPU backend's
/// state (X, Z, both gradients and the momentum, p each; residuals, minibatch means and scratch,
/// d each) and one read-back of the positions and images per outer iteration, plus A and the
/// CPU backend's three more copies of it (column by column, and packed both ways for its
/// products, `backend::cpu::packed`).
pub fn sampler_bytes(chains: usize, d: usize, p: usize) -> f64 {
    let per_chain = 4.0 * (6.0 * p as f64 + 6.0 * d as f64);
    chains as f64 * per_chain + 4.0 * dictionary_bytes(d, p)
}

/// Bytes of the dictionary A (d × p, f32).
pub fn dictionary_bytes(d: usize, p: usize) -> f64 {
    4.0 * d as f64 * p as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human(512.0), "512 bytes");
        assert_eq!(human(1536.0), "1.5 KiB");
        assert_eq!(human(6.4e12), "5.8 TiB");
    }

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
}
