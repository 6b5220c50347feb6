//! Large buffers allocated fallibly: an allocation the machine refuses is an error naming the setting that sized it, never an abort.
//!
//! `vec![0; n]` aborts the process when the allocator says no (an address-space limit, a
//! container's memory limit, a size beyond any machine). The CPU backend's buffers whose size a
//! user's setting decides (the dictionary's copies, the chains' state) go through these helpers
//! instead, so such a run exits with a usage error naming the setting to lower. `measure::memory` estimates the same buffers beforehand and refuses a run
//! that cannot fit before anything is allocated; this is the net under that estimate.

use crate::{Error, Result};

/// The environment variable that, set to 1, skips the memory checks (here and `measure::memory`) (the allocations are still
/// fallible): for a machine whose swap or overcommit the estimate does not know about.
pub const SKIP_CHECK_ENV: &str = "RMLD_SKIP_MEMORY_CHECK";

/// Address space kept aside, per thread, from an address-space limit: glibc reserves up to
/// 64 MiB of it for each thread's malloc arena before the thread touches a byte of it.
const ARENA_RESERVE: f64 = 64.0 * 1024.0 * 1024.0;

/// Bytes this process can still allocate: the least of the kernel's `MemAvailable` (Linux) and,
/// under an address-space limit (`ulimit -v`, `RLIMIT_AS`), the limit less the address space
/// already mapped and the threads' arena reserve; None where neither is known (then nothing is
/// refused here).
pub fn available_bytes() -> Option<u64> {
    let limits = [mem_available(), address_space_left()];
    limits.into_iter().flatten().min()
}

/// The kernel's `MemAvailable`: what can be allocated without swapping.
fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    kib_field(&text, "MemAvailable:")
}

/// The address-space limit (`RLIMIT_AS`) less this process's mapped address space (`VmSize`)
/// and an arena's reserve per thread; None without a limit.
fn address_space_left() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    let limit: f64 = line
        .trim_start_matches("Max address space")
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let mapped = kib_field(&status, "VmSize:")? as f64;
    let threads = rayon::current_num_threads() as f64 + 1.0;
    Some((limit - mapped - threads * ARENA_RESERVE).max(0.0) as u64)
}

/// The value of a `NAME:  123 kB` line of a /proc file, in bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// What [`available_bytes`] says, unless [`SKIP_CHECK_ENV`] is set to 1 (then None: nothing is
/// refused by an estimate, allocations stay fallible).
pub fn checked_available() -> Option<u64> {
    if std::env::var(SKIP_CHECK_ENV).is_ok_and(|v| v == "1") {
        return None;
    }
    available_bytes()
}

/// An empty vector with room for exactly `len` values, or [`refused`] when the allocation fails
/// (or `len` values overflow the address space).
pub fn try_with_capacity<T>(len: usize, setting: &'static str, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| refused(setting, what, len as f64 * std::mem::size_of::<T>() as f64))?;
    Ok(v)
}

/// `len` zeros (`T::default()`), or [`refused`] when the allocation fails.
pub fn try_zeroed<T: Clone + Default>(
    len: usize,
    setting: &'static str,
    what: &str,
) -> Result<Vec<T>> {
    let mut v = try_with_capacity(len, setting, what)?;
    v.resize(len, T::default());
    Ok(v)
}

/// A copy of `values`, or [`refused`] when the allocation fails.
pub fn try_copy<T: Clone>(values: &[T], setting: &'static str, what: &str) -> Result<Vec<T>> {
    let mut v = try_with_capacity(values.len(), setting, what)?;
    v.extend_from_slice(values);
    Ok(v)
}

/// The usage error of an allocation of `bytes` for `what` that the machine refused.
pub fn refused(setting: &'static str, what: &str, bytes: f64) -> Error {
    Error::usage(
        setting,
        format!(
            "cannot allocate {} for {what}: the machine (or a memory limit on this process) \
             refused it; lower `{setting}`",
            human(bytes)
        ),
    )
}

/// `bytes` in the largest unit that keeps a number ≥ 1 (KiB … EiB).
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

/// `parts` (what, bytes) of more than 0 bytes, largest first, as "what 1.2 GiB, …": how the
/// memory and the disk refusals list what they add up.
pub fn largest_first<'a>(parts: impl Iterator<Item = (&'a str, f64)>) -> String {
    let mut parts: Vec<(&str, f64)> = parts.filter(|p| p.1 > 0.0).collect();
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    parts
        .iter()
        .map(|(what, bytes)| format!("{what} {}", human(*bytes)))
        .collect::<Vec<_>>()
        .join(", ")
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
    fn a_size_no_machine_has_is_an_error_naming_the_setting() {
        let e = try_zeroed::<f32>(usize::MAX / 8, "chains", "the chains' positions")
            .unwrap_err()
            .to_string();
        assert!(e.contains("chains") && e.contains("positions"), "{e}");
        let e = try_with_capacity::<u64>(usize::MAX / 2, "atoms", "A").unwrap_err();
        assert!(e.is_user_error(), "{e}");
    }

    #[test]
    fn an_address_space_limit_is_read_from_proc() {
        let text = "Name:\trmld\nVmSize:\t  123456 kB\nVmRSS:\t 10 kB\n";
        assert_eq!(kib_field(text, "VmSize:"), Some(123_456 * 1024));
        assert_eq!(kib_field(text, "VmPeak:"), None);
    }

    #[test]
    fn what_fits_is_allocated_as_asked() {
        assert_eq!(try_zeroed::<f32>(3, "chains", "x").unwrap(), vec![0.0; 3]);
        assert_eq!(try_copy(&[1u8, 2], "chains", "x").unwrap(), vec![1, 2]);
        let v = try_with_capacity::<f32>(10, "chains", "x").unwrap();
        assert!(v.is_empty() && v.capacity() >= 10);
    }
}
