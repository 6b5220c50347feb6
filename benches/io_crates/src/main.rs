//! Side-by-side timing, in one process, of rmld's own NPY/CSV code and npyz, ndarray-npy and csv:
//! each case runs RMLD_BENCH_REPS (11) times interleaved with the others; median and minimum are printed. Data
//! files go to the folder given as the first argument (default: a fresh one in the temp dir).
mod checkpoint_v1;

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::Path;
use std::time::Instant;

use ndarray::{Array2, ArrayView2};
use ndarray_npy::{ReadNpyExt, WriteNpyExt};
use npyz::WriterBuilder;
use rmld::io::{self, Pixels};
use rmld::orchestrator::{Checkpoint, SampleRun, Timings, PROJECTIONS};

/// Runs per case: `RMLD_BENCH_REPS`, default 11.
fn reps() -> usize {
    std::env::var("RMLD_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(11)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Runs the cases interleaved REPS times; prints median and min (ms).
fn race(title: &str, cases: &mut [(&str, Box<dyn FnMut() -> usize + '_>)]) {
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    let mut checks = vec![0usize; cases.len()];
    for _ in 0..reps() {
        for (i, (_, f)) in cases.iter_mut().enumerate() {
            let t = Instant::now();
            checks[i] = std::hint::black_box(f());
            times[i].push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    println!("== {title}");
    for (i, (name, _)) in cases.iter().enumerate() {
        let min = times[i].iter().cloned().fold(f64::INFINITY, f64::min);
        println!(
            "  {name:<34} median {:8.2} ms  min {:8.2} ms  (check {})",
            median(times[i].clone()),
            min,
            checks[i]
        );
    }
}

/// The csv crate doing the same job as rmld's parse_csv (same checks, same result).
fn csv_crate(path: &Path) -> Result<io::CsvData, String> {
    let mut bytes = Vec::new();
    flate2::read::MultiGzDecoder::new(File::open(path).unwrap())
        .read_to_end(&mut bytes)
        .ok();
    let data: &[u8] = if bytes.is_empty() {
        bytes = std::fs::read(path).unwrap();
        &bytes
    } else {
        &bytes
    };
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(false)
        .from_reader(data);
    let mut values: Vec<f32> = Vec::new();
    let mut labels = Vec::new();
    let mut width = 0;
    let mut rec = csv::StringRecord::new();
    loop {
        match rdr.read_record(&mut rec) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(e.to_string()),
        }
        width = rec.len();
        for f in rec.iter().take(width - 1) {
            let v: f32 = f
                .trim()
                .parse()
                .map_err(|_| format!("not a number {f:?}"))?;
            if !v.is_finite() {
                return Err("not finite".into());
            }
            values.push(v);
        }
        let l = rec[width - 1].trim();
        labels.push(l.parse::<u32>().map_err(|_| "label")?);
    }
    let max_value = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let ok = values
        .iter()
        .all(|&v| v.fract() == 0.0 && (0.0..=255.0).contains(&v));
    let pixels = if ok {
        Pixels::U8(values.into_iter().map(|v| v as u8).collect())
    } else {
        Pixels::F32(values)
    };
    Ok(io::CsvData {
        n: labels.len(),
        d: width - 1,
        pixels,
        labels,
        max_value,
    })
}

fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| {
        let d = std::env::temp_dir().join(format!("rmld-io-crates-{}", std::process::id()));
        d.to_string_lossy().into_owned()
    });
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir).unwrap();
    let limit = 4u64 << 30;

    let u8s: Vec<u8> = (0..60000 * 784u64)
        .map(|i| (i.wrapping_mul(2654435761) >> 7) as u8)
        .collect();
    let f32s: Vec<f32> = (0..10000 * 3136u64)
        .map(|i| ((i.wrapping_mul(2654435761) >> 9) % 100000) as f32 / 7919.0)
        .collect();
    let pu8 = dir.join("u8.npy");
    let pf32 = dir.join("f32.npy");
    io::write_npy_u8(&pu8, &[60000, 784], &u8s).unwrap();
    io::write_npy_f32(&pf32, &[10000, 3136], &f32s).unwrap();

    // Sanity: every reader returns the same data.
    let ours = io::read_npy_with_limit(&pu8, limit).unwrap();
    let npyz_v: Vec<u8> = npyz::NpyFile::new(BufReader::new(File::open(&pu8).unwrap()))
        .unwrap()
        .into_vec()
        .unwrap();
    let nd = Array2::<u8>::read_npy(File::open(&pu8).unwrap()).unwrap();
    assert_eq!(ours.data, Pixels::U8(npyz_v.clone()));
    assert_eq!(nd.as_slice().unwrap(), &npyz_v[..]);

    race(
        "read 60000x784 u8 NPY (47 MB)",
        &mut [
            (
                "rmld read_npy_with_limit",
                Box::new(
                    || match io::read_npy_with_limit(&pu8, limit).unwrap().data {
                        Pixels::U8(v) => v.len(),
                        Pixels::F32(v) => v.len(),
                    },
                ),
            ),
            (
                "npyz 0.9.1 NpyFile::into_vec",
                Box::new(|| {
                    npyz::NpyFile::new(BufReader::new(File::open(&pu8).unwrap()))
                        .unwrap()
                        .into_vec::<u8>()
                        .unwrap()
                        .len()
                }),
            ),
            (
                "ndarray-npy 0.10.0 read_npy",
                Box::new(|| {
                    Array2::<u8>::read_npy(File::open(&pu8).unwrap())
                        .unwrap()
                        .into_raw_vec_and_offset()
                        .0
                        .len()
                }),
            ),
        ],
    );
    race(
        "read 10000x3136 f32 NPY (125 MB)",
        &mut [
            (
                "rmld read_npy_with_limit",
                Box::new(
                    || match io::read_npy_with_limit(&pf32, limit).unwrap().data {
                        Pixels::U8(v) => v.len(),
                        Pixels::F32(v) => v.len(),
                    },
                ),
            ),
            (
                "npyz 0.9.1 NpyFile::into_vec",
                Box::new(|| {
                    npyz::NpyFile::new(BufReader::new(File::open(&pf32).unwrap()))
                        .unwrap()
                        .into_vec::<f32>()
                        .unwrap()
                        .len()
                }),
            ),
            (
                "ndarray-npy 0.10.0 read_npy",
                Box::new(|| {
                    Array2::<f32>::read_npy(File::open(&pf32).unwrap())
                        .unwrap()
                        .into_raw_vec_and_offset()
                        .0
                        .len()
                }),
            ),
            (
                "ndarray-npy + finiteness check",
                Box::new(|| {
                    let v = Array2::<f32>::read_npy(File::open(&pf32).unwrap())
                        .unwrap()
                        .into_raw_vec_and_offset()
                        .0;
                    assert!(v.iter().fold(true, |ok, x| ok & x.is_finite()));
                    v.len()
                }),
            ),
        ],
    );

    // Writers: all through rmld's atomic writer (same temp file, fsync, rename), so only the
    // encoding differs.
    let out = dir.join("out.npy");
    race(
        "write 60000x784 u8 NPY (atomic, fsync)",
        &mut [
            (
                "rmld write_npy_u8",
                Box::new(|| {
                    io::write_npy_u8(&out, &[60000, 784], &u8s).unwrap();
                    1
                }),
            ),
            (
                "npyz 0.9.1 WriteOptions",
                Box::new(|| {
                    io::write_atomic(&out, |w| {
                        let mut wr = npyz::WriteOptions::<u8>::new()
                            .default_dtype()
                            .shape(&[60000, 784])
                            .writer(w)
                            .begin_nd()?;
                        wr.extend(u8s.iter().copied())?;
                        wr.finish()
                    })
                    .unwrap();
                    2
                }),
            ),
            (
                "ndarray-npy 0.10.0 write_npy",
                Box::new(|| {
                    let view = ArrayView2::from_shape((60000, 784), &u8s).unwrap();
                    io::write_atomic(&out, |w| view.write_npy(w).map_err(std::io::Error::other))
                        .unwrap();
                    3
                }),
            ),
        ],
    );
    race(
        "write 10000x3136 f32 NPY (atomic, fsync)",
        &mut [
            (
                "rmld write_npy_f32",
                Box::new(|| {
                    io::write_npy_f32(&out, &[10000, 3136], &f32s).unwrap();
                    1
                }),
            ),
            (
                "npyz 0.9.1 WriteOptions",
                Box::new(|| {
                    io::write_atomic(&out, |w| {
                        let mut wr = npyz::WriteOptions::<f32>::new()
                            .default_dtype()
                            .shape(&[10000, 3136])
                            .writer(w)
                            .begin_nd()?;
                        wr.extend(f32s.iter().copied())?;
                        wr.finish()
                    })
                    .unwrap();
                    2
                }),
            ),
            (
                "ndarray-npy 0.10.0 write_npy",
                Box::new(|| {
                    let view = ArrayView2::from_shape((10000, 3136), &f32s).unwrap();
                    io::write_atomic(&out, |w| view.write_npy(w).map_err(std::io::Error::other))
                        .unwrap();
                    3
                }),
            ),
        ],
    );

    // CSV: the embedded optdigits (1797 rows of 65 fields), plain and gzip'd.
    let gz = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../assets/digits.csv.gz"
    ));
    let plain = dir.join("digits.csv");
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(File::open(gz).unwrap())
        .read_to_end(&mut text)
        .unwrap();
    File::create(&plain).unwrap().write_all(&text).unwrap();
    assert_eq!(
        io::read_csv_with_limit(&plain, limit).unwrap(),
        csv_crate(&plain).unwrap()
    );
    for (name, path) in [("plain", &plain), ("gzip", &gz.to_path_buf())] {
        let mut cases: Vec<(&str, Box<dyn FnMut() -> usize>)> = vec![
            (
                "rmld read_csv_with_limit",
                Box::new(move || io::read_csv_with_limit(path, limit).unwrap().n),
            ),
            (
                "csv 1.4.0 StringRecord",
                Box::new(move || csv_crate(path).unwrap().n),
            ),
        ];
        race(&format!("CSV optdigits 1797x65 ({name})"), &mut cases);
    }
    // Checkpoints: 1024 chains, p = 1024, d = 784, a full trace of 1024 iterations (about 40 MB).
    let (chains, p, d, traced) = (1024usize, 1024usize, 784usize, 1024usize);
    let ramp = |n: usize, k: f32| {
        (0..n)
            .map(|i| (i % 9973) as f32 * k - 3.0)
            .collect::<Vec<_>>()
    };
    let c = Checkpoint {
        config: serde_json::json!({"chains": chains, "eta": 0.005, "target": "paper"}),
        data_hash: 1,
        dictionary_hash: 2,
        d,
        p,
        positions: ramp(chains * p, 0.001),
        run: SampleRun {
            completed: 2048,
            interrupted: false,
            trace_stride: 2,
            final_images: ramp(chains * d, 0.01),
            projections: ramp(traced * chains * PROJECTIONS, 0.5),
            start_images: ramp(chains * d, 0.02),
            start_indices: Some((0..chains).collect()),
            log_alpha: (0..traced * chains).map(|i| -(i as f64) * 1e-3).collect(),
            energies: ramp(traced * chains, 0.25),
            accepted: vec![7; chains],
            divergent: vec![0; chains],
            timings: Timings::default(),
        },
    };
    let v1 = checkpoint_v1::V1::to_bytes(&c);
    let v2 = c.to_bytes();
    println!(
        "checkpoint sizes: v1 {} bytes, v2 {} bytes",
        v1.len(),
        v2.len()
    );
    race(
        "checkpoint encode (to_bytes)",
        &mut [
            (
                "v1 JSON header + raw sections",
                Box::new(|| checkpoint_v1::V1::to_bytes(&c).len()),
            ),
            ("v2 postcard", Box::new(|| c.to_bytes().len())),
        ],
    );
    race(
        "checkpoint decode (from_bytes)",
        &mut [
            (
                "v1 JSON header + raw sections",
                Box::new(|| checkpoint_v1::V1::from_bytes(&v1).unwrap().positions.len()),
            ),
            (
                "v2 postcard",
                Box::new(|| Checkpoint::from_bytes(&v2).unwrap().positions.len()),
            ),
        ],
    );

    for f in [pu8, pf32, out, plain] {
        let _ = std::fs::remove_file(f);
    }
}
