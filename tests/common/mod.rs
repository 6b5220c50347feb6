//! Shared test fixtures: small random problems built from a fixed seed, and small image sets.
#![allow(dead_code)]

use std::sync::Arc;

use rmld::backend::DynamicsSettings;
use rmld::io::Pixels;
use rmld::model::{Dictionary, Observations, Target};
use rmld::rng::{Purpose, Stream};

/// n random 8-bit observations of dimension d (scaled to [0, 1]).
pub fn random_observations(n: usize, d: usize, seed: u64) -> Observations {
    let mut words = vec![0u32; n * d];
    Stream::new(seed, 99, 0, 0, Purpose::InitPick).fill_u32(&mut words);
    Observations {
        n,
        d,
        pixels: Pixels::U8(words.iter().map(|w| (w >> 24) as u8).collect()),
        scale: 1.0 / 255.0,
    }
}

/// A target with a Gaussian dictionary d × p over n random observations.
pub fn small_target(n: usize, d: usize, p: usize, lam: f32, seed: u64) -> Arc<Target> {
    let dictionary = Dictionary::gaussian(d, p, seed);
    Arc::new(Target::new(
        Arc::new(dictionary),
        Arc::new(random_observations(n, d, seed)),
        lam,
    ))
}

/// Standard normal positions for `chains` chains of p atoms.
pub fn random_positions(chains: usize, p: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut v = vec![0f32; chains * p];
    Stream::new(seed, 12345, 0, 0, Purpose::InitNoise).fill_normal(&mut v);
    v.iter_mut().for_each(|x| *x *= scale);
    v
}

pub fn dynamics(eta: f32, steps: u32, batch: u32, seed: u64) -> DynamicsSettings {
    DynamicsSettings {
        eta,
        steps,
        batch,
        seed,
        ..Default::default()
    }
}

/// `n` 28 × 28 images of a saturated bar two pixels wide with grey edges on black (strokes:
/// half their ink saturated), in two classes (even i vertical, odd i horizontal), moved about.
pub fn stroke_images(n: usize) -> Vec<u8> {
    let mut pixels = vec![0u8; n * 28 * 28];
    for (i, image) in pixels.chunks_mut(28 * 28).enumerate() {
        let (at, from) = (8 + i % 9, 6 + (i * 3) % 5);
        for k in from..from + 14 {
            for (offset, v) in [(0, 128u8), (1, 255), (2, 255), (3, 128)] {
                let (r, c) = match i % 2 {
                    0 => (k, at + offset),
                    _ => (at + offset, k),
                };
                image[r * 28 + c] = v;
            }
        }
    }
    pixels
}
