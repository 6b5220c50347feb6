//! One summation order on every CPU path: fixed-seed `sample`, `augment`, `encode` and the amortised sampler (`amortize train`, `augment --sampler amortized`) write the same bytes, and `rmld quality` the same metrics, with the products forced to each path this CPU has (`RMLD_CPU_PATH`), shards run on different paths merge into the single run's bytes, and a path the CPU lacks, or an unknown name, is refused naming the variable.
//!
//! The data are 10 × 10 images (d = 100, p = 400), so the products cross the kernels' edges (d
//! is a panel of 64 and 36 columns, p six and a quarter). The cases take every product of the
//! chains and the encoders: FISTA's starts and RMLD's steps (`sample`), HMC's carried
//! trajectory (AAᵀ), ADMM's factor and gap checks with its re-encodings (`augment`), and
//! `encode` by ADMM and by FISTA with its reconstructions.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use rmld::backend::cpu::packed::{CpuPath, CPU_PATH_VARIABLE};

/// Images, labels, side.
const IMAGES: usize = 240;
const CLASSES: usize = 3;
const SIDE: usize = 10;

/// Writes `images.npy` (IMAGES × SIDE × SIDE, u8: a bright bar per class, placed by the image,
/// over LCG noise) and `labels.npy` into `dir`.
fn write_dataset(dir: &Path) {
    write_bars(dir, "", 12_345);
}

/// [`write_dataset`]'s images and labels with the noise of `seed`, as `{prefix}images.npy` and
/// `{prefix}labels.npy`.
fn write_bars(dir: &Path, prefix: &str, seed: u32) {
    let mut state = seed;
    let mut pixels = Vec::with_capacity(IMAGES * SIDE * SIDE);
    let mut labels = Vec::with_capacity(IMAGES);
    for i in 0..IMAGES {
        let class = i % CLASSES;
        let bar = (i / CLASSES) % (SIDE - 2) + 1;
        for y in 0..SIDE {
            for x in 0..SIDE {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let noise = (state >> 27) as u8;
                let on = match class {
                    0 => x == bar,
                    1 => y == bar,
                    _ => x == y || x == bar,
                };
                pixels.push(if on { 200 + noise } else { noise * 2 });
            }
        }
        labels.push(class as i64);
    }
    let images = dir.join(format!("{prefix}images.npy"));
    rmld::io::write_npy_u8(&images, &[IMAGES, SIDE, SIDE], &pixels).expect("writing images");
    let labels_file = dir.join(format!("{prefix}labels.npy"));
    rmld::io::write_npy_i64(&labels_file, &[IMAGES], &labels).expect("writing labels");
}

/// `rmld ARGS --backend cpu --out OUT` with the products on `path` ("" leaves the variable
/// unset) and an empty code cache.
fn run(args: &[&str], path: &str, out: &Path) -> Output {
    let cache = tempfile::tempdir().expect("a temporary folder");
    let mut command = Command::new(env!("CARGO_BIN_EXE_rmld"));
    command
        .args(args)
        .args(["--backend", "cpu", "--out"])
        .arg(out)
        .env("RMLD_CACHE_DIR", cache.path())
        .env_remove(CPU_PATH_VARIABLE);
    if !path.is_empty() {
        command.env(CPU_PATH_VARIABLE, path);
    }
    command.output().expect("the rmld binary runs")
}

/// Every file under `dir` but the report (timings) and hidden files, by its path under `dir`.
fn outputs(dir: &Path, prefix: &str, files: &mut BTreeMap<String, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).expect("reading the output folder") {
        let path = entry.expect("an entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name == "report.json" || name.starts_with('.') {
            continue;
        }
        let name = format!("{prefix}{name}");
        if path.is_dir() {
            outputs(&path, &format!("{name}/"), files);
        } else {
            files.insert(name, std::fs::read(&path).expect("reading an output"));
        }
    }
}

/// The paths this CPU runs, widest first; the others are named on stderr as not checked.
fn runnable_paths() -> Vec<CpuPath> {
    for path in CpuPath::ALL.into_iter().filter(|p| !p.supported()) {
        eprintln!(
            "cpu paths: this CPU cannot run the {} path, so it is not compared here",
            path.name()
        );
    }
    CpuPath::ALL.into_iter().filter(|p| p.supported()).collect()
}

/// The dataset (`write_dataset`) in its temporary folder: the images' and labels' paths.
struct Dataset {
    _dir: tempfile::TempDir,
    images: String,
    labels: String,
}

/// The paths this CPU runs and the dataset; None, said on stderr, where only the scalar path
/// runs.
fn paths_and_dataset() -> Option<(Vec<CpuPath>, Dataset)> {
    let paths = runnable_paths();
    if paths.len() < 2 {
        eprintln!("cpu paths: only the scalar path runs here, nothing to compare");
        return None;
    }
    let dir = tempfile::tempdir().expect("a temporary folder");
    write_dataset(dir.path());
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (images, labels) = (path("images.npy"), path("labels.npy"));
    Some((
        paths,
        Dataset {
            _dir: dir,
            images,
            labels,
        },
    ))
}

/// The files of case `name` that differ between the widest path's outputs and `path`'s (one
/// missing on either side counts), each in words.
fn differences(
    name: &str,
    (widest, want): &(CpuPath, BTreeMap<String, Vec<u8>>),
    (path, files): (CpuPath, &BTreeMap<String, Vec<u8>>),
) -> Vec<String> {
    let names: std::collections::BTreeSet<_> = want.keys().chain(files.keys()).collect();
    names
        .into_iter()
        .filter(|file| want.get(*file) != files.get(*file))
        .map(|file| {
            format!(
                "{name}/{file}: the {} path's differs from the {} path's",
                path.name(),
                widest.name()
            )
        })
        .collect()
}

/// Runs every case on every path this CPU has and lists every output that differs from the
/// widest path's, byte for byte.
#[test]
fn fixed_seed_outputs_are_byte_identical_on_every_cpu_path() {
    let Some((paths, set)) = paths_and_dataset() else {
        return;
    };
    let (data, labels) = (set.images.as_str(), set.labels.as_str());
    // Every case reads the 10 × 10 images (`--data` is appended).
    let cases = [
        (
            "sample-rmld",
            "sample --chains 7 --samples 3 --seed 11".to_string(),
        ),
        (
            "sample-hmc-carried",
            "sample --method hmc --chains 5 --samples 3 --seed 5 --eta 0.002 --burn-in 0".into(),
        ),
        (
            "augment",
            format!(
                "augment --preset quality --method hmc --labels {labels} --limit 120 --batch 8 --samples 2 --burn-in 2 \
                 --no-quality --seed 1"
            ),
        ),
        ("encode-admm", "encode --limit 30".into()),
        (
            "encode-fista",
            "encode --limit 20 --lasso-iterations 40 --lasso-tolerance 0".into(),
        ),
    ];
    let mut bad = Vec::new();
    for (name, args) in &cases {
        let args: Vec<&str> = args.split_whitespace().chain(["--data", data]).collect();
        let mut first: Option<(CpuPath, BTreeMap<String, Vec<u8>>)> = None;
        for &path in &paths {
            let out = tempfile::tempdir().expect("a temporary folder");
            let result = run(&args, path.name(), out.path());
            assert!(
                result.status.success(),
                "{name} on the {} path failed: {}",
                path.name(),
                String::from_utf8_lossy(&result.stderr)
            );
            let report: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(out.path().join("report.json")).expect("the report"),
            )
            .expect("the report is JSON");
            let device = report["backend"]["device"].as_str().unwrap_or_default();
            assert!(
                device.contains(&format!("{} products", path.name())),
                "{name}: the report's backend names the {} path: {device:?}",
                path.name()
            );
            let mut files = BTreeMap::new();
            outputs(out.path(), "", &mut files);
            assert!(!files.is_empty(), "{name}: no outputs");
            match &first {
                None => first = Some((path, files)),
                Some(widest) => bad.extend(differences(name, widest, (path, &files))),
            }
        }
    }
    assert!(bad.is_empty(), "{} differ:\n{}", bad.len(), bad.join("\n"));
}

/// The amortised sampler's network (trained by `amortize train`) and the images it generates
/// (`augment --sampler amortized`) are the same bytes on every path: its products are the
/// packed kernels' too.
#[test]
fn the_amortised_sampler_trains_and_generates_the_same_bytes_on_every_cpu_path() {
    let Some((paths, set)) = paths_and_dataset() else {
        return;
    };
    let (data, labels) = (set.images.as_str(), set.labels.as_str());
    let common = "--limit 60 --seed 5 --no-quality";
    let train = format!("amortize train {common} --samples 2 --fit-steps 12 --hidden 8");
    let mut first: Option<(CpuPath, BTreeMap<String, Vec<u8>>)> = None;
    let mut bad = Vec::new();
    for &path in &paths {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let (model, out) = (dir.path().join("m.amz"), dir.path().join("aug"));
        let model_name = model.to_str().unwrap();
        let augment = format!("augment {common} --sampler amortized --model {model_name}");
        for (what, args, at) in [("train", &train, &model), ("augment", &augment, &out)] {
            let args: Vec<&str> = args
                .split_whitespace()
                .chain(["--labels", labels, "--data", data])
                .collect();
            let result = run(&args, path.name(), at);
            assert!(
                result.status.success(),
                "{what} on the {} path: {}",
                path.name(),
                String::from_utf8_lossy(&result.stderr)
            );
        }
        let mut files = BTreeMap::new();
        outputs(&out, "aug/", &mut files);
        files.insert("m.amz".into(), std::fs::read(&model).expect("the model"));
        match &first {
            None => first = Some((path, files)),
            Some(widest) => bad.extend(differences("amortized", widest, (path, &files))),
        }
    }
    assert!(bad.is_empty(), "{} differ:\n{}", bad.len(), bad.join("\n"));
}

/// glibc picks an FMA or a plain build of f64 exp, log, pow, sin and cos by the CPU; rmld takes
/// them from the libm crate (`rmld::math`), so hiding FMA from glibc (as a CPU without it would)
/// changes no output. With glibc's exp, this HMC run on the embedded digits wrote another
/// `acceptance_rate.npy` (on this project's AMD EPYC, glibc 2.36). (Elsewhere than glibc the variable is ignored, and the two runs are the same run.)
#[test]
fn outputs_do_not_depend_on_which_build_of_libm_glibc_picks() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut runs = Vec::new();
    for tunables in ["", "glibc.cpu.hwcaps=-AVX2,-FMA"] {
        let out = dir.path().join(format!("run-{}", runs.len()));
        let result = Command::new(env!("CARGO_BIN_EXE_rmld"))
            .args(["sample", "--method", "hmc", "--seed", "5", "--chains", "8"])
            .args(["--samples", "500", "--burn-in", "300"])
            .args(["--backend", "cpu", "--out"])
            .arg(&out)
            .env("GLIBC_TUNABLES", tunables)
            .output()
            .expect("the rmld binary runs");
        assert!(
            result.status.success(),
            "GLIBC_TUNABLES={tunables}: {}",
            String::from_utf8_lossy(&result.stderr)
        );
        let mut files = BTreeMap::new();
        outputs(&out, "", &mut files);
        runs.push(files);
    }
    assert!(runs[0].contains_key("sample_stats/acceptance_rate.npy"));
    let differ: Vec<_> = runs[0]
        .keys()
        .chain(runs[1].keys())
        .filter(|name| runs[0].get(*name) != runs[1].get(*name))
        .collect();
    assert!(
        differ.is_empty(),
        "differ with FMA hidden from glibc: {differ:?}"
    );
}

/// `value` without its "seconds" fields, at any depth (the only numbers of a quality report that
/// a seed does not fix).
fn without_seconds(value: &serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => map
            .iter()
            .filter(|(key, _)| key.as_str() != "seconds")
            .map(|(key, v)| (key.clone(), without_seconds(v)))
            .collect(),
        serde_json::Value::Array(items) => items.iter().map(without_seconds).collect(),
        other => other.clone(),
    }
}

/// The quality metrics (a classifier trained by L-BFGS, nearest-neighbour and pairwise
/// distances: `rmld quality`, and every `augment` report) score a set with the same bits on
/// every path: on `gemm`, a classifier's weights followed the CPU's kernels, and with them
/// every later L-BFGS step.
#[test]
fn the_quality_metrics_are_the_same_bits_on_every_cpu_path() {
    let Some((paths, set)) = paths_and_dataset() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary folder");
    write_bars(dir.path(), "generated-", 777);
    let generated = dir.path().join("generated-images.npy");
    let generated_labels = dir.path().join("generated-labels.npy");
    let mut first: Option<(CpuPath, serde_json::Value)> = None;
    let mut bad = Vec::new();
    for &path in &paths {
        let out = dir.path().join(format!("quality-{}.json", path.name()));
        let result = Command::new(env!("CARGO_BIN_EXE_rmld"))
            .args(["quality", "--seed", "2", "--data", &set.images])
            .args(["--labels", &set.labels, "--generated"])
            .arg(&generated)
            .arg("--generated-labels")
            .arg(&generated_labels)
            .arg("--out")
            .arg(&out)
            .env(CPU_PATH_VARIABLE, path.name())
            .output()
            .expect("the rmld binary runs");
        assert!(
            result.status.success(),
            "quality on the {} path: {}",
            path.name(),
            String::from_utf8_lossy(&result.stderr)
        );
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&out).expect("the quality report"))
                .expect("the report is JSON");
        let quality = without_seconds(&report["quality"]);
        assert!(
            quality["classifier"]["iterations"].as_u64() > Some(5),
            "the classifier hardly trained: {quality}"
        );
        match &first {
            None => first = Some((path, quality)),
            Some((widest, want)) if *want != quality => bad.push(format!(
                "the {} path's metrics differ from the {} path's:\n{quality}\n{want}",
                path.name(),
                widest.name()
            )),
            Some(_) => {}
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The cluster of mixed CPUs on one machine: `sample` and `augment` in three shards,
/// each on another path, merge into the widest path's single run byte for byte (augment without
/// the code cache: its folder, another per run here, is part of the shards' configuration).
#[test]
fn shards_on_different_paths_merge_into_the_single_runs_bytes() {
    let Some((paths, set)) = paths_and_dataset() else {
        return;
    };
    let (data, labels) = (set.images.as_str(), set.labels.as_str());
    let cases = [
        (
            "sample",
            "sample --chains 7 --samples 2 --seed 3".to_string(),
        ),
        (
            "augment",
            format!(
                "augment --preset quality --method hmc --labels {labels} --limit 90 --batch 6 --samples 2 --burn-in 1 \
                 --no-quality --seed 4 --no-code-cache"
            ),
        ),
    ];
    let mut bad = Vec::new();
    for (name, args) in &cases {
        let args: Vec<&str> = args.split_whitespace().chain(["--data", data]).collect();
        let dir = tempfile::tempdir().expect("a temporary folder");
        let single = dir.path().join("single");
        let run_ok = |args: &[&str], path: CpuPath, out: &Path| {
            let result = run(args, path.name(), out);
            assert!(
                result.status.success(),
                "{name} {args:?} on the {} path: {}",
                path.name(),
                String::from_utf8_lossy(&result.stderr)
            );
        };
        run_ok(&args, paths[0], &single);
        let mut shards = Vec::new();
        for i in 0..3 {
            let shard = format!("{i}/3");
            let out = dir.path().join(format!("shard-{i}"));
            let path = paths[(i + 1) % paths.len()];
            let with_shard: Vec<&str> = args.iter().copied().chain(["--shard", &shard]).collect();
            run_ok(&with_shard, path, &out);
            shards.push(out);
        }
        let merged = dir.path().join("merged");
        let result = Command::new(env!("CARGO_BIN_EXE_rmld"))
            .arg("merge")
            .arg(&merged)
            .args(&shards)
            .output()
            .expect("the rmld binary runs");
        assert!(
            result.status.success(),
            "{name}: merge: {}",
            String::from_utf8_lossy(&result.stderr)
        );
        let (mut want, mut got) = (BTreeMap::new(), BTreeMap::new());
        outputs(&single, "", &mut want);
        outputs(&merged, "", &mut got);
        for file in want
            .keys()
            .chain(got.keys())
            .collect::<std::collections::BTreeSet<_>>()
        {
            if want.get(file) != got.get(file) {
                bad.push(format!(
                    "{name}/{file}: merged shards differ from the single run"
                ));
            }
        }
    }
    assert!(bad.is_empty(), "{} differ:\n{}", bad.len(), bad.join("\n"));
}

/// An unknown path, and every path this CPU lacks, is refused naming the variable, before any
/// output is written; "auto" runs the widest.
#[test]
fn an_unknown_or_missing_path_is_refused_by_name() {
    let out = tempfile::tempdir().expect("a temporary folder");
    let args = ["sample", "--chains", "2", "--samples", "1", "--seed", "1"];
    let mut refused = vec!["avx1024".to_string()];
    refused.extend(
        CpuPath::ALL
            .into_iter()
            .filter(|p| !p.supported())
            .map(|p| p.name().to_string()),
    );
    for value in &refused {
        let dir = out.path().join(value);
        let result = run(&args, value, &dir);
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert_eq!(
            result.status.code(),
            Some(2),
            "RMLD_CPU_PATH={value}: exit status, stderr {stderr}"
        );
        assert!(
            stderr.contains(CPU_PATH_VARIABLE) && stderr.contains(value.as_str()),
            "RMLD_CPU_PATH={value}: {stderr}"
        );
        assert!(!dir.join("codes.npy").exists(), "{value}: wrote codes");
    }
    let dir = out.path().join("auto");
    let result = run(&args, "auto", &dir);
    assert!(result.status.success(), "auto: {:?}", result);
    let report = std::fs::read_to_string(dir.join("report.json")).expect("the report");
    let widest = format!("{} products", CpuPath::best().name());
    assert!(report.contains(&widest), "auto runs {widest}: {report}");
}

/// The files that may call gemm (the `gemm` crates, or `backend::cpu::matmul`'s products),
/// each outside the chains and the encoders, and why.
const GEMM_ALLOWED: &[(&str, &str)] = &[
    ("src/backend/cpu/matmul.rs", "the gemm products themselves"),
    ("src/measure/cpu.rs", "the bench's gemm ceilings"),
];

/// Every `.rs` file under `dir`, by its path from the crate's root.
fn sources(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("reading src/") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            sources(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// Forcing the paths on one machine cannot see a product left on gemm (its order is the same
/// on every path of one CPU, not on another CPU): no file of the CPU's chains or encoders
/// names gemm or `matmul`'s products; only those in [`GEMM_ALLOWED`] do (the GPU's own
/// `matmul` kernels are shaders, not scanned).
#[test]
fn only_files_outside_the_chains_and_encoders_call_gemm() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    let forbidden = [
        "gemm::",
        "gemm_wide::",
        "matmul::{",
        "matmul::residual_product",
        "matmul::transpose_product",
        "matmul::square_product",
    ];
    let mut bad = Vec::new();
    for file in &files {
        let name = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if name.starts_with("src/backend/gpu/") || GEMM_ALLOWED.iter().any(|(f, _)| *f == name) {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("reading a source");
        for (line, row) in text.lines().enumerate() {
            let code = row.split("//").next().unwrap_or_default();
            if let Some(what) = forbidden.iter().find(|f| code.contains(*f)) {
                bad.push(format!("{name}:{}: {what} in {:?}", line + 1, row.trim()));
            }
        }
    }
    assert!(files.len() > 50, "found only {} sources", files.len());
    assert!(
        bad.is_empty(),
        "gemm in the chains or encoders:\n{}",
        bad.join("\n")
    );
}
