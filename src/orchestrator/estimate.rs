//! How long an augmentation will take, estimated from its settings before it starts: flops per phase over a conservative rate per backend.
//!
//! The flops are the dense products that dominate every phase, counted as the bench counts them
//! (`rmld bench`): 4·d·p per LASSO iteration and image (A z and Aᵀ r), 4·d·p per momentum or
//! leapfrog step and chain (the two products of a gradient), 4·d·p per chain and outer iteration
//! for the full residual and gradient at the proposal, and for Kernel HMC 4·m·d per step (the
//! minibatch of the class's images) and 4·n·d per outer iteration (the class's n images).
//!
//! The rate is conservative, so that the estimate errs long: on the CPU 20 GFLOP/s per thread
//! (measured: 43–57 GFLOP/s on 2 threads of an x86 machine for the LASSO starts, HMC sampling and
//! the encodings of `augment --data mnist --limit 3000`, i.e. 22–28 per thread); on a software
//! renderer (lavapipe, llvmpipe, SwiftShader) 1 GFLOP/s; on a hardware GPU 100 GFLOP/s.
//!
//! The CPU's LASSO with a tolerance (ADMM, the default) is not counted so: it stops each row
//! at its duality gap (about 50 of 200 iterations on MNIST) and its batched products run near
//! the machine's peak, so counting it at its cap and the rate above erred long 30× (57 min
//! announced for `augment --data mnist`'s 113 s). A run announced as long times a pilot of the
//! originals first ([`lasso_pilot`]), counts its LASSO rows at the pilot's pace, and its chains'
//! flops at the rate the pilot's products ran (the chains' products are batched like the
//! LASSO's: on a 2-core AVX-512 VM the chains ran at 350–460 GFLOP/s, the pilot at 390).

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::backend::cpu::CpuBackend;
use crate::backend::{Backend, BackendInfo};
use crate::model::Target;
use crate::Result;

use crate::methods::{AugmentMethod, DynamicsSettings};

/// A run is announced with its estimate when it is expected to take longer than this.
pub const ANNOUNCE_SECONDS: f64 = 60.0;

/// The work of an augmentation, from its settings and the data's sizes.
#[derive(Clone, Debug, Default)]
pub struct AugmentWork {
    /// The method.
    pub method: AugmentMethod,
    /// Pixels d.
    pub d: usize,
    /// Atoms p (d for Kernel HMC, whose codes are the images).
    pub p: usize,
    /// Chains C.
    pub chains: usize,
    /// Outer iterations, burn-in included (0 for Compression).
    pub outer: u32,
    /// T, momentum steps per outer iteration.
    pub steps: u32,
    /// m, the minibatch.
    pub batch: u32,
    /// L, leapfrog steps per HMC proposal.
    pub leapfrog_steps: u32,
    /// FISTA iterations per LASSO encoding.
    pub lasso_iterations: u32,
    /// Mean images per chosen class (Kernel HMC's density).
    pub class_images: usize,
    /// Generated samples.
    pub generated: usize,
    /// Whether the generated images are LASSO-encoded again.
    pub reencode: bool,
    /// Originals LASSO-encoded for codes.npy (0 without them).
    pub original_codes: usize,
    /// Test images LASSO-encoded (0 without `encode_test`).
    pub test_codes: usize,
    /// Rows whose codes are read from the code cache (counted in neither of the above).
    pub cached_codes: usize,
}

/// The estimate: seconds per phase, their sum and how they were reckoned.
#[derive(Clone, Debug, Serialize)]
pub struct Estimate {
    /// Seconds of every phase the estimate counts, in run order.
    pub phases: Vec<(&'static str, f64)>,
    /// Their sum.
    pub seconds: f64,
    /// The chains' rate, GFLOP/s: assumed, or a LASSO pilot's.
    pub gflops: f64,
    /// How the estimate was made, in a sentence.
    pub how: String,
}

impl Estimate {
    /// True when the run should be announced before it starts (longer than a minute).
    pub fn worth_announcing(&self) -> bool {
        self.seconds > ANNOUNCE_SECONDS
    }
}

/// Rows of the originals a LASSO pilot encodes, evenly spaced through them: one batch, a
/// fraction of a second on a CPU.
pub const PILOT_ROWS: usize = 128;

/// The CPU LASSO's pace, measured on a pilot of the originals.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct LassoPilot {
    /// Rows encoded.
    pub rows: usize,
    /// Their wall time, in seconds (the ADMM factor's once-per-dictionary set-up excluded).
    pub seconds: f64,
    /// Iterations per row, on average.
    pub mean_iterations: f64,
    /// The rate its dense products ran at, GFLOP/s (FISTA's iteration 4·d·p flops, ADMM's
    /// 4·d·p + 2·d² for its d × d product).
    pub gflops: f64,
}

impl LassoPilot {
    /// Seconds per row.
    fn seconds_per_row(&self) -> f64 {
        self.seconds / self.rows.max(1) as f64
    }
}

/// Times the LASSO encoding of up to [`PILOT_ROWS`] of `target`'s observations on a CPU backend
/// of its own (so the run's backend and its counts are untouched), with the run's tolerance and
/// iteration cap. One row is encoded first, untimed, so that the ADMM factor, made once per
/// dictionary, is not counted per row.
pub fn lasso_pilot(target: &Arc<Target>, tolerance: f32, iterations: u32) -> Result<LassoPilot> {
    let observations = &target.observations;
    let rows = observations.n.min(PILOT_ROWS);
    if rows == 0 {
        return Err(crate::Error::Internal("a LASSO pilot without rows".into()));
    }
    let images: Vec<f32> = (0..rows)
        .flat_map(|k| observations.row(k * observations.n / rows))
        .collect();
    let dynamics = DynamicsSettings::encoding_only(0);
    let mut backend = CpuBackend::try_new(target.clone(), dynamics, rows)?;
    let encoder: &mut dyn Backend = &mut backend;
    encoder.set_lasso_tolerance(tolerance);
    encoder.encode(&images[..target.d()], target.lam, iterations)?;
    let before = encoder.encode_stats().unwrap_or_default();
    let started = Instant::now();
    encoder.encode(&images, target.lam, iterations)?;
    let seconds = started.elapsed().as_secs_f64();
    let after = encoder.encode_stats().unwrap_or_default();
    let iterations = after.iterations.saturating_sub(before.iterations) as f64;
    let (d, p) = (target.d() as f64, target.p() as f64);
    let admm = after.admm_rows > before.admm_rows;
    let per_iteration = 4.0 * d * p + if admm { 2.0 * d * d } else { 0.0 };
    Ok(LassoPilot {
        rows,
        seconds,
        mean_iterations: iterations / rows as f64,
        gflops: iterations * per_iteration / seconds.max(1e-9) / 1e9,
    })
}

/// The conservative rate (GFLOP/s) assumed for a backend, and its name for the sentence.
pub fn assumed_rate(backend: &BackendInfo) -> (f64, String) {
    if backend.kind == "cpu" {
        let threads = rayon::current_num_threads().max(1);
        (
            20.0 * threads as f64,
            format!("20 GFLOP/s per CPU thread × {threads}"),
        )
    } else {
        let device = backend.device.to_lowercase();
        if ["llvmpipe", "lavapipe", "swiftshader", "software"]
            .iter()
            .any(|s| device.contains(s))
        {
            (1.0, "1 GFLOP/s for a software renderer".into())
        } else {
            (100.0, "100 GFLOP/s for a GPU".into())
        }
    }
}

/// Estimates `work` on `backend` (see the module's documentation for the counts and rates);
/// with a `pilot`, the LASSO rows at its pace.
pub fn estimate_augment(
    work: &AugmentWork,
    backend: &BackendInfo,
    pilot: Option<&LassoPilot>,
) -> Estimate {
    let (d, p) = (work.d as f64, work.p as f64);
    let product = 4.0 * d * p;
    let (gflops, rate) = match pilot {
        Some(pilot) => (
            pilot.gflops,
            format!("the pilot's {:.0} GFLOP/s", pilot.gflops),
        ),
        None => assumed_rate(backend),
    };
    // Seconds of LASSO for `images` rows.
    let lasso = |images: usize| match pilot {
        Some(pilot) => images as f64 * pilot.seconds_per_row(),
        None => images as f64 * work.lasso_iterations as f64 * product / (gflops * 1e9),
    };
    let chains = work.chains as f64;
    let outer = work.outer as f64;
    let per_outer = match work.method {
        AugmentMethod::Chains(method) => {
            let dynamics = DynamicsSettings {
                steps: work.steps,
                leapfrog_steps: work.leapfrog_steps,
                ..DynamicsSettings::default()
            };
            method.products_per_proposal(&dynamics) * product
        }
        AugmentMethod::Compression | AugmentMethod::Deform => 0.0,
        AugmentMethod::KernelHmc => {
            4.0 * d * (work.steps as f64 * work.batch as f64 + work.class_images as f64)
        }
    };
    // Kernel HMC starts at the class's images, Deform draws around them; the others start at
    // LASSO codes.
    let starts = match work.method {
        AugmentMethod::KernelHmc | AugmentMethod::Deform => 0,
        AugmentMethod::Chains(_) | AugmentMethod::Compression => work.chains,
    };
    let sampling_flops = chains * outer * per_outer;
    let reencoded = if work.reencode { work.generated } else { 0 };
    let phases = vec![
        ("LASSO starts", lasso(starts)),
        ("sampling", sampling_flops / (gflops * 1e9)),
        ("re-encoding", lasso(reencoded)),
        ("original codes", lasso(work.original_codes)),
        ("test codes", lasso(work.test_codes)),
    ];
    let seconds = phases.iter().map(|(_, s)| s).sum();
    let lasso_rows = starts + reencoded + work.original_codes + work.test_codes;
    let cached = match work.cached_codes {
        0 => String::new(),
        rows => format!("; {rows} codes read from the code cache"),
    };
    let how = match pilot {
        None => format!(
            "{:.2e} flops in the dense products of the LASSO encodings and the chains' steps, \
             at {rate}{cached}",
            sampling_flops + lasso_rows as f64 * work.lasso_iterations as f64 * product
        ),
        Some(pilot) => {
            let chains = match sampling_flops > 0.0 {
                true => format!(", and {sampling_flops:.2e} flops in the chains' steps at {rate}"),
                false => String::new(),
            };
            format!(
                "{lasso_rows} LASSO rows at {:.2} ms each, timed on {} of the originals (mean \
                 {:.0} iterations){chains}{cached}",
                pilot.seconds_per_row() * 1e3,
                pilot.rows,
                pilot.mean_iterations,
            )
        }
    };
    Estimate {
        phases,
        seconds,
        gflops,
        how,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(threads: &str) -> BackendInfo {
        BackendInfo {
            kind: "cpu".into(),
            device: format!("CPU, {threads} threads"),
            bytes_per_chain: 0,
        }
    }

    #[test]
    fn full_mnist_is_announced_and_a_small_run_is_not() {
        // `rmld augment --data mnist` with the quality preset: 60,000 originals, 10,000
        // generated in 2,500 chains of 24 HMC outer iterations of 60 leapfrog steps.
        let mnist = AugmentWork {
            method: AugmentMethod::Chains(crate::methods::Method::Hmc),
            d: 784,
            p: 3136,
            chains: 2500,
            outer: 24,
            steps: 20,
            batch: 64,
            leapfrog_steps: 60,
            lasso_iterations: 200,
            class_images: 6000,
            generated: 10_000,
            reencode: true,
            original_codes: 60_000,
            test_codes: 0,
            cached_codes: 0,
        };
        let e = estimate_augment(&mnist, &cpu("2"), None);
        assert!(e.worth_announcing(), "{e:?}");
        assert!(e.phases.iter().all(|(_, s)| *s >= 0.0 && s.is_finite()));
        assert!((e.seconds - e.phases.iter().map(|p| p.1).sum::<f64>()).abs() < 1e-9);
        assert!(e.how.contains("GFLOP/s"), "{}", e.how);
        // The embedded digits' small run: well under a minute.
        let small = AugmentWork {
            method: AugmentMethod::Chains(crate::methods::Method::Rmld),
            d: 64,
            p: 256,
            chains: 80,
            outer: 4,
            steps: 20,
            batch: 8,
            leapfrog_steps: 10,
            lasso_iterations: 200,
            class_images: 15,
            generated: 300,
            reencode: false,
            original_codes: 0,
            test_codes: 0,
            cached_codes: 0,
        };
        assert!(!estimate_augment(&small, &cpu("2"), None).worth_announcing());
    }

    #[test]
    fn a_pilot_sets_the_lasso_phases_and_the_chains_rate() {
        let work = AugmentWork {
            method: AugmentMethod::Chains(crate::methods::Method::Hmc),
            d: 784,
            p: 3136,
            chains: 100,
            outer: 10,
            steps: 20,
            batch: 64,
            leapfrog_steps: 10,
            lasso_iterations: 200,
            class_images: 600,
            generated: 1000,
            reencode: true,
            original_codes: 6000,
            test_codes: 500,
            cached_codes: 0,
        };
        let pilot = LassoPilot {
            rows: 100,
            seconds: 0.2,
            mean_iterations: 50.0,
            gflops: 300.0,
        };
        let counted = estimate_augment(&work, &cpu("2"), None);
        let piloted = estimate_augment(&work, &cpu("2"), Some(&pilot));
        let phase = |e: &Estimate, name: &str| e.phases.iter().find(|p| p.0 == name).unwrap().1;
        // 2 ms per row, for every LASSO phase's rows.
        for (name, rows) in [
            ("LASSO starts", 100.0),
            ("re-encoding", 1000.0),
            ("original codes", 6000.0),
            ("test codes", 500.0),
        ] {
            assert!((phase(&piloted, name) - rows * 2e-3).abs() < 1e-9, "{name}");
        }
        // The chains' flops at the pilot's rate instead of the assumed 40 GFLOP/s.
        let ratio = phase(&counted, "sampling") / phase(&piloted, "sampling");
        assert!((ratio - 300.0 / 40.0).abs() < 1e-9, "{ratio}");
        assert!(
            piloted.how.contains("7600 LASSO rows at 2.00 ms each"),
            "{}",
            piloted.how
        );
        assert!(
            piloted.how.contains("100 of the originals (mean 50"),
            "{}",
            piloted.how
        );
        assert!(
            piloted
                .how
                .contains("flops in the chains' steps at the pilot's 300 GFLOP/s"),
            "{}",
            piloted.how
        );
        let deform = AugmentWork {
            method: AugmentMethod::Deform,
            ..work
        };
        let piloted = estimate_augment(&deform, &cpu("2"), Some(&pilot));
        assert!(!piloted.how.contains("chains"), "{}", piloted.how);
    }

    #[test]
    fn the_pilot_times_the_lasso_at_the_runs_tolerance() {
        let dataset = crate::io::Dataset::embedded();
        let observations = crate::model::Observations::from_dataset(&dataset, 1.0);
        let target = Arc::new(Target::new(
            Arc::new(crate::model::Dictionary::gaussian(64, 256, 3)),
            Arc::new(observations),
            0.05,
        ));
        let stopped = lasso_pilot(&target, 5e-3, 200).unwrap();
        assert_eq!(stopped.rows, PILOT_ROWS);
        assert!(stopped.seconds > 0.0 && stopped.seconds.is_finite());
        assert!(
            stopped.mean_iterations >= 1.0 && stopped.mean_iterations < 200.0,
            "{stopped:?}"
        );
        assert!(
            stopped.gflops > 0.0 && stopped.gflops.is_finite(),
            "{stopped:?}"
        );
        // Without a tolerance every row runs the cap.
        let capped = lasso_pilot(&target, 0.0, 30).unwrap();
        assert_eq!(capped.mean_iterations, 30.0, "{capped:?}");
    }

    #[test]
    fn a_software_renderer_is_assumed_slow() {
        let gpu = |device: &str| BackendInfo {
            kind: "gpu".into(),
            device: device.into(),
            bytes_per_chain: 0,
        };
        assert_eq!(
            assumed_rate(&gpu("llvmpipe (LLVM 19.1.7, 256 bits)")).0,
            1.0
        );
        assert!(assumed_rate(&gpu("NVIDIA H100 80GB HBM3")).0 > 1.0);
    }
}
