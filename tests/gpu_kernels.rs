//! Each WGSL kernel against its Rust twin: Philox streams, the two products, the gather.
#![cfg(feature = "gpu")]

mod gpu_common;

use gpu_common::{assert_none, context, mismatches, rng, uniform};
use rand::Rng;
use rmld::backend::gpu::testing as probe;
use rmld::backend::gpu::GemmTile;
use rmld::io::Pixels;
use rmld::model::Observations;
use rmld::rng::{index_from_word, normals_from_block, philox4x32_10};

#[test]
fn philox_stream_matches_rust_bit_for_bit() {
    let Some(ctx) = context("philox_stream_matches_rust_bit_for_bit") else {
        return;
    };
    let mut r = rng("philox");
    let extremes = [
        0u32,
        1,
        0xFFFF,
        0x1_0000,
        0x8000_0000,
        u32::MAX - 1,
        u32::MAX,
    ];
    let mut cases = Vec::new();
    for &a in &extremes {
        for &b in &extremes {
            cases.push(([a, b, a, b], [b, a], a.max(1)));
            cases.push(([a; 4], [b; 2], b.max(1)));
        }
    }
    for _ in 0..20_000 {
        let n = if r.random_bool(0.5) {
            r.random_range(1..100)
        } else {
            r.random()
        };
        cases.push((r.random(), r.random(), n.max(1)));
    }
    let got = probe::philox(&ctx, &cases).unwrap();
    let mut bad = Vec::new();
    for (i, ((counter, key, n), g)) in cases.iter().zip(&got).enumerate() {
        let w = philox4x32_10(*counter, *key);
        let normals = normals_from_block(w);
        for q in 0..4 {
            if g[q] != w[q] {
                bad.push(format!(
                    "case {i} word {q}: gpu {:08x}, rust {:08x}",
                    g[q], w[q]
                ));
            }
            if g[4 + q] != index_from_word(w[q], *n) {
                bad.push(format!(
                    "case {i} index {q} (n {n}): gpu {}, rust {}",
                    g[4 + q],
                    index_from_word(w[q], *n)
                ));
            }
            // Box-Muller through log/sqrt/cos: agreement to rounding, |normal| < 6.
            let normal = f32::from_bits(g[8 + q]);
            let error = (normal - normals[q]).abs();
            if error.is_nan() || error > 1e-5 * normals[q].abs().max(1.0) {
                bad.push(format!(
                    "case {i} normal {q}: gpu {normal}, rust {}",
                    normals[q]
                ));
            }
        }
    }
    assert_none(bad);
}

/// Every index where two tiles' outputs differ in bits, with both values.
fn bit_differences(what: &str, narrow: &[f32], wide: &[f32]) -> Vec<String> {
    narrow
        .iter()
        .zip(wide)
        .enumerate()
        .filter(|(_, (n, w))| n.to_bits() != w.to_bits())
        .map(|(i, (n, w))| format!("{what}[{i}]: narrow tile {n:e}, wide tile {w:e}"))
        .collect()
}

/// Both products by each tile against f64 references (the Σ|a||b| scales the tolerance is
/// relative to), and the two tiles against each other bit for bit.
fn check_products(d: usize, p: usize, chains: usize, label: &str) {
    let Some(ctx) = context(label) else {
        return;
    };
    let mut r = rng(label);
    let a = uniform(&mut r, d * p);
    let z = uniform(&mut r, chains * p);
    let y = uniform(&mut r, chains * d);
    let residual = uniform(&mut r, chains * d);
    let (mut want_r, mut scale_r) = (vec![0f64; chains * d], vec![0f64; chains * d]);
    for c in 0..chains {
        for i in 0..d {
            for k in 0..p {
                let term = a[i * p + k] as f64 * z[c * p + k] as f64;
                want_r[c * d + i] += term;
                scale_r[c * d + i] += term.abs();
            }
            want_r[c * d + i] -= y[c * d + i] as f64;
            scale_r[c * d + i] += (y[c * d + i] as f64).abs();
        }
    }
    let (mut want_t, mut scale_t) = (vec![0f64; chains * p], vec![0f64; chains * p]);
    for c in 0..chains {
        for i in 0..d {
            let ri = residual[c * d + i] as f64;
            for j in 0..p {
                let term = a[i * p + j] as f64 * ri;
                want_t[c * p + j] += term;
                scale_t[c * p + j] += term.abs();
            }
        }
    }
    let xbar = uniform(&mut r, d);
    let rows: Vec<f32> = xbar.repeat(chains);
    let mut bad = Vec::new();
    let mut outputs = Vec::new();
    for tile in [GemmTile::Narrow, GemmTile::Wide] {
        let got_r = probe::residual_product(&ctx, tile, &a, d, p, &z, &y).unwrap();
        let what = format!("residual_product ({tile:?} tile)");
        bad.extend(mismatches(&what, &got_r, &want_r, &scale_r, 1e-5));
        let got_t = probe::transpose_product(&ctx, tile, &a, d, p, &residual).unwrap();
        let what = format!("transpose_product ({tile:?} tile)");
        bad.extend(mismatches(&what, &got_t, &want_t, &scale_t, 1e-5));
        // The broadcast form (one row of y for every chain) used with xbar.
        let got = probe::residual_product(&ctx, tile, &a, d, p, &z, &xbar).unwrap();
        let full = probe::residual_product(&ctx, tile, &a, d, p, &z, &rows).unwrap();
        if got != full {
            bad.push(format!(
                "residual_product ({tile:?} tile): broadcast y differs from repeated rows"
            ));
        }
        outputs.push((got_r, got_t));
    }
    bad.extend(bit_differences(
        "residual_product",
        &outputs[0].0,
        &outputs[1].0,
    ));
    bad.extend(bit_differences(
        "transpose_product",
        &outputs[0].1,
        &outputs[1].1,
    ));
    assert_none(bad);
}

#[test]
fn products_match_f64_small_odd_shapes() {
    check_products(37, 129, 5, "products_match_f64_small_odd_shapes");
}

/// d and p multiples of 4 (the vec4-load kernels) but not of the 64 x 64 tile, and more chains
/// than one tile row, uneven: the double-buffered K loop's last slice and the edge tiles.
#[test]
fn products_match_f64_vec4_odd_tiles() {
    check_products(36, 132, 67, "products_match_f64_vec4_odd_tiles");
}

/// The scalar-load kernels over more than one tile in every direction, no shape a multiple of 4.
#[test]
fn products_match_f64_scalar_odd_tiles() {
    check_products(67, 133, 65, "products_match_f64_scalar_odd_tiles");
}

/// More than one wide (128 × 128) block in every direction: chains, d and p past 128, uneven;
/// d and p multiples of 4 (vec4 loads) and not (scalar loads).
#[test]
fn products_match_f64_past_the_wide_block() {
    check_products(
        132,
        260,
        131,
        "products_match_f64_past_the_wide_block (vec4)",
    );
    check_products(
        133,
        259,
        129,
        "products_match_f64_past_the_wide_block (scalar)",
    );
}

#[test]
fn products_match_f64_mnist_shape() {
    check_products(784, 3136, 3, "products_match_f64_mnist_shape");
}

fn check_gather(pixels: Pixels, n: usize, d: usize, label: &str) {
    let Some(ctx) = context(label) else {
        return;
    };
    let observations = Observations {
        n,
        d,
        pixels,
        scale: 1.0 / 255.0,
    };
    let (seed, outer, step, chains, offset) = (0x1234_5678_9abc_def0u64, 3, 2, 7, 11u32);
    // Every row for some chains, a class's slice of rows for others (class-conditional chains).
    let slices = [[0, n as u32], [17, 50], [n as u32 - 53, 53], [5, 1]];
    let rows: Vec<[u32; 2]> = (0..offset as usize + chains)
        .map(|g| slices[g % slices.len()])
        .collect();
    let mut bad = Vec::new();
    for batch in [1u32, 5, 64, 300] {
        let got = probe::gather(
            &ctx,
            &observations,
            &rows,
            seed,
            outer,
            step,
            batch,
            offset,
            chains,
        )
        .unwrap();
        let mut want = vec![0f32; chains * d];
        for (c, row) in want.chunks_mut(d).enumerate() {
            let mut idx = vec![0u32; batch as usize];
            let [first, count] = rows[offset as usize + c];
            rmld::rng::Stream::new(
                seed,
                offset + c as u32,
                outer,
                step,
                rmld::rng::Purpose::Minibatch,
            )
            .fill_index(count, &mut idx);
            idx.iter_mut().for_each(|i| *i += first);
            observations.batch_mean(&idx, row);
        }
        // Same indices and the same summation order: equal up to the last rounding.
        let want64: Vec<f64> = want.iter().map(|&v| v as f64).collect();
        let scale: Vec<f64> = want.iter().map(|v| v.abs().max(1e-3) as f64).collect();
        bad.extend(mismatches(
            &format!("gather m={batch}"),
            &got,
            &want64,
            &scale,
            1e-6,
        ));
    }
    assert_none(bad);
}

#[test]
fn gather_matches_batch_mean_u8() {
    let mut r = rng("gather_u8");
    let (n, d) = (203, 37);
    let pixels = Pixels::U8((0..n * d).map(|_| r.random()).collect());
    check_gather(pixels, n, d, "gather_matches_batch_mean_u8");
}

#[test]
fn gather_matches_batch_mean_f32() {
    let mut r = rng("gather_f32");
    let (n, d) = (203, 37);
    let pixels = Pixels::F32((0..n * d).map(|_| r.random_range(0.0..255.0)).collect());
    check_gather(pixels, n, d, "gather_matches_batch_mean_f32");
}

/// Throughput of the two products at MNIST scale (ignored: a measurement, not a check).
/// `cargo test --release --test gpu_kernels product_throughput -- --ignored --nocapture`
#[test]
#[ignore]
fn product_throughput() {
    let Some(ctx) = context("product_throughput") else {
        return;
    };
    let mut r = rng("product_throughput");
    let (d, p, chains) = (784, 3136, 256);
    let a = uniform(&mut r, d * p);
    let z = uniform(&mut r, chains * p);
    let y = uniform(&mut r, d);
    let residual = uniform(&mut r, chains * d);
    let flops = 2.0 * (chains * d * p) as f64;
    for _ in 0..2 {
        for tile in [GemmTile::Narrow, GemmTile::Wide] {
            let t = std::time::Instant::now();
            probe::residual_product(&ctx, tile, &a, d, p, &z, &y).unwrap();
            let s = t.elapsed().as_secs_f64();
            eprintln!(
                "residual_product ({tile:?} tile): {s:.3} s, {:.2} GFLOP/s (with transfers)",
                flops / s / 1e9
            );
            let t = std::time::Instant::now();
            probe::transpose_product(&ctx, tile, &a, d, p, &residual).unwrap();
            let s = t.elapsed().as_secs_f64();
            eprintln!(
                "transpose_product ({tile:?} tile): {s:.3} s, {:.2} GFLOP/s (with transfers)",
                flops / s / 1e9
            );
        }
    }
}
