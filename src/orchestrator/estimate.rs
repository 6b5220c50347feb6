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

use serde::Serialize;

use crate::backend::BackendInfo;

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
}

/// The estimate: seconds per phase, their sum and how they were reckoned.
#[derive(Clone, Debug, Serialize)]
pub struct Estimate {
    /// Seconds of every phase the estimate counts, in run order.
    pub phases: Vec<(&'static str, f64)>,
    /// Their sum.
    pub seconds: f64,
    /// The rate assumed, GFLOP/s.
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

/// Estimates `work` on `backend` (see the module's documentation for the counts and rates).
pub fn estimate_augment(work: &AugmentWork, backend: &BackendInfo) -> Estimate {
    let (d, p) = (work.d as f64, work.p as f64);
    let product = 4.0 * d * p;
    let lasso = |images: usize| images as f64 * work.lasso_iterations as f64 * product;
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
        AugmentMethod::KernelHmc | AugmentMethod::Deform => 0.0,
        AugmentMethod::Chains(_) | AugmentMethod::Compression => lasso(work.chains),
    };
    let flops = [
        ("LASSO starts", starts),
        ("sampling", chains * outer * per_outer),
        (
            "re-encoding",
            if work.reencode {
                lasso(work.generated)
            } else {
                0.0
            },
        ),
        ("original codes", lasso(work.original_codes)),
        ("test codes", lasso(work.test_codes)),
    ];
    let (gflops, rate) = assumed_rate(backend);
    let phases: Vec<(&'static str, f64)> = flops
        .iter()
        .map(|&(name, f)| (name, f / (gflops * 1e9)))
        .collect();
    let seconds = phases.iter().map(|(_, s)| s).sum();
    let total: f64 = flops.iter().map(|(_, f)| f).sum();
    Estimate {
        phases,
        seconds,
        gflops,
        how: format!(
            "{:.2e} flops in the dense products of the LASSO encodings and the chains' steps, at \
             {rate}",
            total
        ),
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
        };
        let e = estimate_augment(&mnist, &cpu("2"));
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
        };
        assert!(!estimate_augment(&small, &cpu("2")).worth_announcing());
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
