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

    /// One training step on the GPU (`Mlp::trainer_on_gpu`: forward, backward, Adam) against
    /// the CPU's `Mlp::forward`, `Mlp::backward` and `Adam::step`, odd widths, 17 and 300 rows:
    /// the outputs; the gradients (Adam's first moment after one step is exactly half the
    /// gradient), within 1e-4 of each tensor's largest; and the stepped parameters, within 1e-5
    /// (relative, floor 1) wherever the gradient is above a thousandth of its tensor's largest
    /// (below that Adam's first step, lr · sign(g), takes its sign from rounding).
    #[test]
    fn training_step_matches_the_cpu_twin() {
        use rmld::amortize::Adam;
        let label = "training_step_matches_the_cpu_twin";
        let Some(ctx) = context(label) else {
            return;
        };
        let mut rng = fixed_rng(label, 26);
        let sizes = [37, 50, 33, 74];
        let net = Mlp::new(&sizes, &mut rng);
        let mut bad = Vec::new();
        for rows in [17, 300] {
            let x: Vec<f32> = uniform(&mut rng, rows * 37)
                .iter()
                .map(|v| 2.0 * v - 1.0)
                .collect();
            let grad_out: Vec<f32> = uniform(&mut rng, rows * 74)
                .iter()
                .map(|v| (v - 0.5) / rows as f32)
                .collect();
            // The CPU twin.
            let tape = net.forward(&x, rows);
            let mut grads = net.zero_grads();
            net.backward(&tape, &grad_out, &mut grads);
            let mut stepped = net.clone();
            let mut adam = Adam::new(&net, 1e-3);
            adam.step(&mut stepped, &grads);
            // The GPU.
            let mut trainer = net
                .trainer_on_gpu(&Adam::new(&net, 1e-3), ctx.clone())
                .unwrap();
            let out = trainer.forward(&x, rows).unwrap();
            bad.extend(mismatches(
                &format!("{rows} rows: output"),
                &out,
                tape.output(),
                74,
                1e-4,
            ));
            trainer.backward_and_step(&grad_out).unwrap();
            let (values, state) = trainer.download().unwrap();
            let cpu_values = stepped.params_mut();
            for (k, g) in grads.0.iter().enumerate() {
                let largest = g.iter().fold(0f32, |a, v| a.max(v.abs()));
                let what = format!("{rows} rows: tensor {k}");
                for (j, (&cpu, &half)) in g.iter().zip(&state.m[k]).enumerate() {
                    let gpu = 2.0 * half;
                    if (gpu - cpu).abs() > 1e-4 * largest || gpu.is_nan() {
                        bad.push(format!("{what} gradient [{j}]: gpu {gpu:e}, cpu {cpu:e}"));
                    }
                    let (w_gpu, w_cpu) = (values[k][j], cpu_values[k][j]);
                    let tol = 1e-5 * w_cpu.abs().max(1.0);
                    let close = (w_gpu - w_cpu).abs() <= tol; // false for NaN
                    if cpu.abs() > 1e-3 * largest && !close {
                        bad.push(format!(
                            "{what} stepped [{j}]: gpu {w_gpu:e}, cpu {w_cpu:e}"
                        ));
                    }
                }
            }
        }
        assert_none(bad);
    }

    /// `CodeModel::train_round_on_gpu` takes the CPU path's steps (same pairs, same loss): after
    /// the tiny model's 7 steps per class, every class's loss and every parameter agree with
    /// `train_round`'s to rounding.
    #[test]
    fn gpu_training_follows_the_cpu_training() {
        let label = "gpu_training_follows_the_cpu_training";
        let Some(ctx) = context(label) else {
            return;
        };
        let mut on_cpu = crate::amortize_common::tiny_model(9);
        let mut on_gpu = on_cpu.clone();
        on_cpu.train_round(7);
        on_gpu.train_round_on_gpu(7, &ctx).unwrap();
        let mut bad = Vec::new();
        let mut worst = 0f32;
        for (c, g) in on_cpu.classes.iter().zip(&on_gpu.classes) {
            assert_eq!((c.steps_done, g.steps_done), (7, 7));
            if (c.last_loss - g.last_loss).abs() > 1e-4 * c.last_loss.abs().max(1.0) {
                bad.push(format!(
                    "class {} loss: gpu {}, cpu {}",
                    c.label, g.last_loss, c.last_loss
                ));
            }
            for (j, (w_cpu, w_gpu)) in c.net.params().iter().zip(g.net.params()).enumerate() {
                worst = worst.max((w_cpu - w_gpu).abs());
                if (w_cpu - w_gpu).abs() > 1e-5 * w_cpu.abs().max(1.0) {
                    bad.push(format!(
                        "class {} parameter {j}: gpu {w_gpu:e}, cpu {w_cpu:e}",
                        c.label
                    ));
                }
            }
        }
        println!("largest parameter difference {worst:e}");
        assert_none(bad);
    }
}
