//! The learned sampler's network on the GPU (`backend::gpu::dense`, `shaders/dense.wgsl`) against its CPU twin `Mlp::infer`, element by element, and the generated codes of both paths.

#[cfg(feature = "gpu")]
mod amortize_common;
#[cfg(feature = "gpu")]
mod gpu_common;

#[cfg(feature = "gpu")]
mod on_gpu {
    use super::gpu_common::{assert_none, context, fixed_rng, uniform};
    use rmld::amortize::Mlp;

    /// Every output where GPU and CPU differ by more than `tol` relative (floor 1, as the
    /// outputs are O(1)), with its row, column and both values.
    fn mismatches(what: &str, gpu: &[f32], cpu: &[f32], width: usize, tol: f32) -> Vec<String> {
        let mut bad: Vec<String> = gpu
            .iter()
            .zip(cpu)
            .enumerate()
            .filter(|(_, (g, c))| {
                let close = (*g - *c).abs() <= tol * g.abs().max(c.abs()).max(1.0);
                !close // NaN on either side is a mismatch too
            })
            .map(|(i, (g, c))| {
                format!("{what}[{}, {}]: gpu {g:e}, cpu {c:e}", i / width, i % width)
            })
            .collect();
        if gpu.len() != cpu.len() {
            bad.push(format!(
                "{what}: {} values on the GPU, {} on the CPU",
                gpu.len(),
                cpu.len()
            ));
        }
        bad
    }

    /// Odd layer widths (none a multiple of the 16-wide tiles) and 1, 17 and 300 rows.
    #[test]
    fn dense_network_matches_the_cpu_twin() {
        let label = "dense_network_matches_the_cpu_twin";
        let Some(ctx) = context(label) else {
            return;
        };
        let mut rng = fixed_rng(label, 25);
        let net = Mlp::new(&[37, 50, 33, 74], &mut rng);
        let gpu = net.on_gpu(ctx).unwrap();
        let mut bad = Vec::new();
        for rows in [1, 17, 300] {
            let x: Vec<f32> = uniform(&mut rng, rows * 37)
                .iter()
                .map(|v| 2.0 * v - 1.0)
                .collect();
            let on_gpu = gpu.infer(&x, rows).unwrap();
            let on_cpu = net.infer(&x, rows);
            bad.extend(mismatches(
                &format!("{rows} rows"),
                &on_gpu,
                &on_cpu,
                74,
                1e-4,
            ));
        }
        assert_none(bad);
    }

    /// `CodeModel::sample_on_gpu` draws the same anchors and noise as `sample`: the codes agree
    /// to the network's rounding.
    #[test]
    fn generated_codes_match_the_cpu_path() {
        let label = "generated_codes_match_the_cpu_path";
        let Some(ctx) = context(label) else {
            return;
        };
        let (p, model) = (6, crate::amortize_common::trained_tiny_model(21));
        let mut bad = Vec::new();
        for k in 0..2 {
            let on_cpu = model.sample(k, 300, 9);
            let on_gpu = model.sample_on_gpu(ctx.clone(), k, 300, 9).unwrap();
            bad.extend(mismatches(
                &format!("class {k} codes"),
                &on_gpu,
                &on_cpu,
                p,
                1e-4,
            ));
        }
        assert_none(bad);
    }
}
