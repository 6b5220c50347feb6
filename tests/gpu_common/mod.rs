//! Shared by the GPU tests: the device (or a loud skip), random inputs and mismatch reports.
#![allow(dead_code)]

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rmld::backend::gpu::{adapter_available, GpuBackend, GpuContext, GpuOptions};
use rmld::backend::DynamicsSettings;
use rmld::model::Target;

/// True when a missing adapter must fail the test rather than skip it: CI is "true" or
/// RMLD_REQUIRE_GPU is "1".
pub fn gpu_required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
        || std::env::var("RMLD_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// The shared context, or None with a notice when no adapter exists. Fails instead of skipping
/// when `gpu_required()`. With an adapter, any device error fails the test.
pub fn context(test: &str) -> Option<Arc<GpuContext>> {
    if !adapter_available() {
        assert!(
            !gpu_required(),
            "no GPU adapter, but CI/RMLD_REQUIRE_GPU requires one: {test}"
        );
        eprintln!("no GPU adapter: skipping {test}");
        return None;
    }
    let context = GpuContext::shared().unwrap_or_else(|e| panic!("{test}: {e}"));
    eprintln!("{test}: on {}", context.describe());
    Some(context)
}

/// A generator for `test`: from RMLD_TEST_SEED when it is a number, from a fresh seed when it is
/// "random" (to explore), else from a seed fixed by the test's name, so that CI runs the same
/// numbers every time (a fresh seed once failed a rehearsal on a last-ulp cancellation the
/// tolerance now allows for). The seed is printed so a failure can be replayed.
pub fn rng(test: &str) -> rand::rngs::StdRng {
    let asked = std::env::var("RMLD_TEST_SEED").ok();
    let seed = match asked.as_deref() {
        Some("random") => rand::rng().random::<u64>(),
        Some(text) => text.parse().unwrap_or_else(|_| {
            panic!("RMLD_TEST_SEED must be a number or \"random\", got {text:?}")
        }),
        // FNV-1a of the name: a fixed, distinct seed per test.
        None => test.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        }),
    };
    eprintln!("{test}: RMLD_TEST_SEED={seed}");
    rand::rngs::StdRng::seed_from_u64(seed)
}

/// A generator from `seed` (or RMLD_TEST_SEED when set), printed like `rng`'s, for tests that
/// must run the same numbers every time.
pub fn fixed_rng(test: &str, seed: u64) -> rand::rngs::StdRng {
    let seed = std::env::var("RMLD_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(seed);
    eprintln!("{test}: RMLD_TEST_SEED={seed}");
    rand::rngs::StdRng::seed_from_u64(seed)
}

/// Uniform values on [-1, 1).
pub fn uniform(rng: &mut impl Rng, len: usize) -> Vec<f32> {
    (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// Every index where |got − want| > tol·scale (or either is not finite), as one message each.
pub fn mismatches(what: &str, got: &[f32], want: &[f64], scale: &[f64], tol: f64) -> Vec<String> {
    let mut bad = Vec::new();
    if got.len() != want.len() {
        bad.push(format!(
            "{what}: {} values, expected {}",
            got.len(),
            want.len()
        ));
    }
    for (i, ((&g, &w), &s)) in got.iter().zip(want).zip(scale).enumerate() {
        let ok = g.is_finite() && ((g as f64) - w).abs() <= tol * s;
        if !ok {
            bad.push(format!(
                "{what}[{i}]: gpu {g:e}, reference {w:e} (tolerance {:e})",
                tol * s
            ));
        }
    }
    bad
}

/// Panics listing every mismatch.
pub fn assert_none(bad: Vec<String>) {
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// A GPU backend of `chains` chains on `context` with the default options but for
/// `max_binding_bytes` (small values split the chains into several groups).
pub fn backend(
    context: &Arc<GpuContext>,
    target: &Arc<Target>,
    dynamics: &DynamicsSettings,
    chains: usize,
    max_binding_bytes: Option<u64>,
) -> GpuBackend {
    GpuBackend::with_context(
        context.clone(),
        target.clone(),
        dynamics.clone(),
        chains,
        GpuOptions {
            max_binding_bytes,
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("GPU backend: {e}"))
}

/// The Table 2 harness's Python (with NumPy): `RMLD_TABLE2_PYTHON` (scripts/test.sh sets it),
/// else the venv that scripts/table2/setup_env.sh makes; `None` when neither exists.
pub fn harness_python() -> Option<std::path::PathBuf> {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let candidate = match std::env::var_os("RMLD_TABLE2_PYTHON") {
        Some(p) if !p.is_empty() => std::path::PathBuf::from(p),
        _ => root.join("target/table2-venv/bin/python"),
    };
    candidate.is_file().then_some(candidate)
}
