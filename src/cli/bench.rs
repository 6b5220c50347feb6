//! `rmld bench`: the chain list, the printed table and the plot around `rmld::session::Bench`.
//!
//! The library measures and writes bench.json and bench.csv; the plot bench.png (plotters) is
//! the command line's.

use std::fmt::Write as _;

use rmld::session::{Bench, BenchOutcome, BenchSettings, Row};
use rmld::{Error, Result};

use super::args::BenchArgs;
use super::terminal::Terminal;

/// Runs the bench; true when a signal stopped it (the rows finished are written).
pub fn bench(args: &BenchArgs, terminal: &Terminal) -> Result<bool> {
    let settings = BenchSettings {
        backend: args.backend,
        chains: parse_chains(&args.chains)?,
        dim: args.dim,
        atoms: args.atoms,
        batch: args.batch,
        steps: args.steps,
        outer: args.outer,
        data: args.data.clone(),
        images: args.images,
        ceiling_size: args.ceiling_size,
        seed: args.seed,
        out: args.out.clone(),
        force: args.force,
        ssgl: args.bench_prior.has_state(),
        peer_python: peer_python(args),
        f16: args.f16,
        gemm_tiles: args.gemm_tile.clone(),
    };
    let outcome: BenchOutcome = Bench::new(settings).run(terminal)?;
    let options = super::options_named("bench");
    for note in &outcome.notes {
        println!("note: {}", super::with_flags(note, &options));
    }
    print!("{}", table(&outcome.rows));
    for (c, r) in &outcome.ratios {
        println!("gpu/cpu chain-steps/s at C = {c}: {r:.3}× (same run)");
    }
    for r in &outcome.rooflines {
        let blas = match (r.blas_chain_steps_per_second, r.fraction_of_blas) {
            (Some(rate), Some(f)) => format!(
                "OpenBLAS products {rate:.0} chain-steps/s ({:.1} GFLOP/s), rmld at {:.1}% of it",
                r.blas_gflops.unwrap_or_default(),
                100.0 * f
            ),
            _ => "OpenBLAS roofline not measured (build with --features blas)".into(),
        };
        println!(
            "cpu roofline at C = {}: {blas}; gemm products alone {:.0} chain-steps/s (rmld at \
             {:.1}%)",
            r.chains,
            r.gemm_chain_steps_per_second,
            100.0 * r.fraction_of_gemm
        );
        println!(
            "cpu roofline at C = {}: rmld's packed products alone ({} path) {:.0} chain-steps/s \
             (rmld at {:.1}%)",
            r.chains,
            r.packed_path,
            r.packed_chain_steps_per_second,
            100.0 * r.fraction_of_packed
        );
        if let (Some(rate), Some(f)) = (
            r.rmld_blas_products_chain_steps_per_second,
            r.fraction_of_blas_with_blas_products,
        ) {
            println!(
                "cpu roofline at C = {}: rmld with its products on OpenBLAS {rate:.0} \
                 chain-steps/s, {:.1}% of the OpenBLAS roofline",
                r.chains,
                100.0 * f
            );
        }
    }
    for r in &outcome.peers {
        println!(
            "numpy peer at C = {}: {:.0} chain-steps/s ({}); rmld {:.0}, {:.2}× numpy (same run)",
            r.chains,
            r.numpy_chain_steps_per_second,
            r.numpy,
            r.rmld_chain_steps_per_second,
            r.rmld_over_numpy
        );
    }
    let out = &args.out;
    let plotted = plot::write(&out.join("bench.png"), &outcome.rows, outcome.d, outcome.p)?;
    if !plotted {
        println!(
            "note: no system font found (set RMLD_FONT to a .ttf file); bench.png has no labels"
        );
    }
    println!("wrote {}", out.display());
    Ok(outcome.interrupted)
}

/// The peer's Python: --peer-python, else with --peers $RMLD_PEER_PYTHON, else python3.
fn peer_python(args: &BenchArgs) -> Option<std::path::PathBuf> {
    if let Some(p) = &args.peer_python {
        return Some(p.clone());
    }
    args.peers
        .then(|| match std::env::var_os("RMLD_PEER_PYTHON") {
            Some(p) if !p.is_empty() => p.into(),
            _ => "python3".into(),
        })
}

fn parse_chains(list: &str) -> Result<Vec<usize>> {
    let mut chains = Vec::new();
    for item in list.split(',').map(str::trim) {
        match item.parse::<usize>() {
            Ok(c) if c > 0 && c <= u32::MAX as usize => chains.push(c),
            _ => {
                return Err(Error::usage(
                    "--chains",
                    format!("expected a comma-separated list of positive integers (e.g. 1,16,256), got {list:?}"),
                ))
            }
        }
    }
    Ok(chains)
}

fn table(rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<10} {:>6} {:>14} {:>11} {:>9} {:>9} {:>10} {:>9} {:>9}  timing",
        "backend",
        "chains",
        "chain-steps/s",
        "samples/s",
        "GFLOP/s",
        "% ceil",
        "% ceil dev",
        "KB/chain",
        "% host"
    );
    for r in rows {
        if r.status != "ok" {
            let _ = writeln!(s, "{:<10} {:>6}  skipped: {}", r.backend, r.chains, r.note);
            continue;
        }
        let _ = writeln!(
            s,
            "{:<10} {:>6} {:>14.0} {:>11.1} {:>9.2} {:>9.1} {:>10} {:>9.1} {:>9.1}  {}",
            r.backend,
            r.chains,
            r.chain_steps_per_second,
            r.samples_per_second,
            r.gflops_counted,
            100.0 * r.ceiling_fraction,
            r.device_ceiling_fraction
                .map_or("-".into(), |f| format!("{:.1}", 100.0 * f)),
            r.bytes_per_chain as f64 / 1024.0,
            100.0 * r.outside_device_share,
            r.timing.split([',', ':']).next().unwrap_or_default()
        );
    }
    s
}

/// Draws fig3.png (relative RMS error against OMP iterations, initial and learned dictionaries)
/// from an `eda-experiment` report into `out`.
pub fn plot_fig3(out: &std::path::Path, report: &serde_json::Value) -> Result<()> {
    let curve = |key: &str| -> Vec<f64> {
        report[key]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_f64()).collect())
            .unwrap_or_default()
    };
    plot::write_fig3(
        &out.join("fig3.png"),
        &curve("relative_rms_initial"),
        &curve("relative_rms_learned"),
    )
    .map(|_| ())
}

mod plot {
    //! The throughput plot: chain-steps/s against chains, log-log, one line per backend.

    use std::path::Path;
    use std::sync::OnceLock;

    use plotters::prelude::*;

    use rmld::session::Row;
    use rmld::{io, Error, Result};

    const SIZE: (u32, u32) = (800, 500);

    /// Registers the first font found (RMLD_FONT, then common system paths); false when none.
    fn font() -> bool {
        static FONT: OnceLock<bool> = OnceLock::new();
        *FONT.get_or_init(|| {
            let candidates = std::env::var("RMLD_FONT").into_iter().chain(
                [
                    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                    "/usr/share/fonts/TTF/DejaVuSans.ttf",
                    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
                    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
                    "/System/Library/Fonts/Supplemental/Arial.ttf",
                    "C:\\Windows\\Fonts\\arial.ttf",
                ]
                .map(String::from),
            );
            candidates.into_iter().any(|path| {
                let Ok(bytes) = std::fs::read(&path) else {
                    return false;
                };
                // plotters keeps fonts for the process's lifetime; this happens once.
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok()
            })
        })
    }

    /// Draws the plot into `path` (atomically); returns whether it has text.
    pub fn write(path: &Path, rows: &[Row], d: usize, p: usize) -> Result<bool> {
        let labelled = font();
        let mut pixels = vec![0u8; (SIZE.0 * SIZE.1 * 3) as usize];
        draw(&mut pixels, rows, d, p, labelled)
            .map_err(|e| Error::Internal(format!("drawing the plot: {e}")))?;
        let mut png = Vec::new();
        image::ImageEncoder::write_image(
            image::codecs::png::PngEncoder::new(&mut png),
            &pixels,
            SIZE.0,
            SIZE.1,
            image::ExtendedColorType::Rgb8,
        )
        .map_err(|e| Error::Internal(format!("PNG encoding failed: {e}")))?;
        io::write_atomic(path, |w| w.write_all(&png))?;
        Ok(labelled)
    }

    /// Draws Fig. 3's synthetic panel: the two error curves against OMP iterations.
    pub fn write_fig3(path: &Path, initial: &[f64], learned: &[f64]) -> Result<bool> {
        let labelled = font();
        let mut pixels = vec![0u8; (SIZE.0 * SIZE.1 * 3) as usize];
        draw_fig3(&mut pixels, initial, learned, labelled)
            .map_err(|e| Error::Internal(format!("drawing the plot: {e}")))?;
        let mut png = Vec::new();
        image::ImageEncoder::write_image(
            image::codecs::png::PngEncoder::new(&mut png),
            &pixels,
            SIZE.0,
            SIZE.1,
            image::ExtendedColorType::Rgb8,
        )
        .map_err(|e| Error::Internal(format!("PNG encoding failed: {e}")))?;
        io::write_atomic(path, |w| w.write_all(&png))?;
        Ok(labelled)
    }

    fn draw_fig3<'a>(
        pixels: &'a mut [u8],
        initial: &[f64],
        learned: &[f64],
        labelled: bool,
    ) -> std::result::Result<(), Box<dyn std::error::Error + 'a>> {
        let n = initial.len().max(learned.len()).max(2) as f64;
        let top = initial.iter().chain(learned).cloned().fold(1e-3, f64::max) * 1.1;
        let root = BitMapBackend::with_buffer(pixels, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let mut builder = ChartBuilder::on(&root);
        builder.margin(15);
        if labelled {
            builder
                .caption(
                    "synthetic EDA: relative RMS error vs OMP iterations",
                    ("sans-serif", 22),
                )
                .x_label_area_size(45)
                .y_label_area_size(70);
        }
        let mut chart = builder.build_cartesian_2d(1.0..n, 0.0..top)?;
        if labelled {
            chart
                .configure_mesh()
                .x_desc("OMP iterations")
                .y_desc("relative RMS error")
                .draw()?;
        } else {
            chart.configure_mesh().x_labels(0).y_labels(0).draw()?;
        }
        for (i, (name, curve)) in [("initial (Table III)", initial), ("MCMC w- rplcm", learned)]
            .into_iter()
            .enumerate()
        {
            let colour = Palette99::pick(i).to_rgba();
            let points: Vec<(f64, f64)> = curve
                .iter()
                .enumerate()
                .map(|(k, &v)| ((k + 1) as f64, v))
                .collect();
            let series =
                chart.draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))?;
            if labelled {
                series.label(name).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                });
            }
            chart.draw_series(
                points
                    .into_iter()
                    .map(|xy| Circle::new(xy, 4, colour.filled())),
            )?;
        }
        if labelled {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperRight)
                .draw()?;
        }
        root.present()?;
        Ok(())
    }

    fn draw<'a>(
        pixels: &'a mut [u8],
        rows: &[Row],
        d: usize,
        p: usize,
        labelled: bool,
    ) -> std::result::Result<(), Box<dyn std::error::Error + 'a>> {
        let ok: Vec<&Row> = rows.iter().filter(|r| r.status == "ok").collect();
        let range = |f: &dyn Fn(&Row) -> f64| {
            let lo = ok.iter().map(|r| f(r)).fold(f64::INFINITY, f64::min);
            let hi = ok.iter().map(|r| f(r)).fold(0.0, f64::max);
            if lo.is_finite() && hi > 0.0 {
                (lo / 2.0, hi * 2.0)
            } else {
                (1.0, 10.0)
            }
        };
        let (x0, x1) = range(&|r| r.chains as f64);
        let (y0, y1) = range(&|r| r.chain_steps_per_second);
        let root = BitMapBackend::with_buffer(pixels, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let mut builder = ChartBuilder::on(&root);
        builder.margin(15);
        if labelled {
            builder
                .caption(
                    format!("rmld bench: chain-steps/s, d = {d}, p = {p}"),
                    ("sans-serif", 22),
                )
                .x_label_area_size(45)
                .y_label_area_size(70);
        }
        let mut chart = builder.build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())?;
        if labelled {
            chart
                .configure_mesh()
                .x_desc("chains C")
                .y_desc("chain-steps per second")
                .draw()?;
        } else {
            chart.configure_mesh().x_labels(0).y_labels(0).draw()?;
        }
        let mut kinds: Vec<&str> = ok.iter().map(|r| r.backend.as_str()).collect();
        kinds.dedup();
        for (i, kind) in kinds.iter().enumerate() {
            let colour = Palette99::pick(i).to_rgba();
            let points: Vec<(f64, f64)> = ok
                .iter()
                .filter(|r| r.backend == *kind)
                .map(|r| (r.chains as f64, r.chain_steps_per_second))
                .collect();
            let series =
                chart.draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))?;
            if labelled {
                let device = ok
                    .iter()
                    .find(|r| r.backend == *kind)
                    .map(|r| r.device.clone())
                    .unwrap_or_default();
                series
                    .label(format!("{kind}: {device}"))
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                    });
            }
            chart.draw_series(
                points
                    .into_iter()
                    .map(|xy| Circle::new(xy, 4, colour.filled())),
            )?;
        }
        if labelled {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .position(SeriesLabelPosition::LowerRight)
                .draw()?;
        }
        root.present()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::parse_chains;

    #[test]
    fn chain_lists_parse_or_fail_cleanly() {
        assert_eq!(parse_chains("1,16, 256").unwrap(), vec![1, 16, 256]);
        for bad in ["", "1,,2", "0", "-1", "x", "1.5"] {
            assert!(parse_chains(bad).is_err(), "{bad:?}");
        }
    }
}
