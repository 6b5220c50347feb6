//! rmld's Python extension module (`rmld._rmld`): runs the library's sessions on numpy arrays.
//!
//! The Python package (`python/rmld/`) wraps this one function: it passes the settings as JSON
//! (the library's own setting names, merged onto the library's defaults or preset), the data as
//! a numpy array, and reads the outputs back from the run's folder. The settings, their defaults,
//! presets and validation are the library's: nothing here restates them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use numpy::{
    PyArray1, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadonlyArrayDyn,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyKeyboardInterrupt, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use rmld::amortize::CodeTrainSettings;
use rmld::io::{Dataset, Pixels, ARRAY_SOURCE};
use rmld::session::{
    AmortizeSettings, AmortizeTrainer, DrawStats, Notice, Observer, Outcome, Phase, Preset,
};
use rmld::{AugmentSettings, Augmenter, EncodeSettings, Encoder, Error, SampleSettings, Sampler};

/// A library error as the Python exception its kind calls for: settings and data →
/// `ValueError`, files → `OSError`, the rest → `RuntimeError`; the library's message either way.
fn to_py(error: Error) -> PyErr {
    let message = error.to_string();
    match &error {
        Error::Usage { .. } => PyValueError::new_err(message),
        Error::Input { path, .. } if path == Path::new(ARRAY_SOURCE) => {
            PyValueError::new_err(message)
        }
        Error::Input { .. } | Error::Output { .. } => PyOSError::new_err(message),
        _ => PyRuntimeError::new_err(message),
    }
}

/// Forwards phases and progress to an optional Python callable `progress(phase, done, total)`,
/// collects notices, and turns Ctrl-C (or an exception in the callable) into a stop request.
struct PyObserver {
    progress: Option<Py<PyAny>>,
    phase: Mutex<Option<Phase>>,
    notices: Mutex<Vec<String>>,
    keyboard_interrupt: AtomicBool,
    callback_error: Mutex<Option<PyErr>>,
    /// The thread that called `run`: Python runs signal handlers on its main thread only, so
    /// other threads' polls need not take the GIL.
    caller: std::thread::ThreadId,
    /// When signals were last checked: at most every `SIGNAL_POLL` (stop polls can be frequent).
    last_check: Mutex<Option<Instant>>,
}

/// How often a stop poll looks for Ctrl-C at most.
const SIGNAL_POLL: Duration = Duration::from_millis(20);

impl PyObserver {
    fn new(progress: Option<Py<PyAny>>) -> Self {
        PyObserver {
            progress,
            phase: Mutex::new(None),
            notices: Mutex::new(Vec::new()),
            keyboard_interrupt: AtomicBool::new(false),
            callback_error: Mutex::new(None),
            caller: std::thread::current().id(),
            last_check: Mutex::new(None),
        }
    }

    fn report(&self, done: u64) {
        let Some(callback) = &self.progress else {
            return;
        };
        let Some(phase) = *self.phase.lock().unwrap_or_else(|e| e.into_inner()) else {
            return;
        };
        Python::attach(|py| {
            if let Err(e) = callback.call1(py, (phase.name, done, phase.len)) {
                // Ctrl-C lands in whichever Python code runs: in the callback it is still Ctrl-C.
                if e.is_instance_of::<PyKeyboardInterrupt>(py) {
                    self.keyboard_interrupt.store(true, Ordering::Relaxed);
                    return;
                }
                let mut slot = self
                    .callback_error
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                slot.get_or_insert(e);
            }
        });
    }
}

impl Observer for PyObserver {
    fn phase_start(&self, phase: &Phase) {
        *self.phase.lock().unwrap_or_else(|e| e.into_inner()) = Some(*phase);
        self.report(0);
    }

    fn phase_advance(&self, position: u64) {
        self.report(position);
    }

    fn notice(&self, notice: &Notice) {
        let text = notice.to_string();
        self.notices
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(text);
    }

    fn stop_requested(&self) -> bool {
        if self.keyboard_interrupt.load(Ordering::Relaxed) {
            return true;
        }
        let failed = self
            .callback_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some();
        if std::thread::current().id() != self.caller {
            return failed;
        }
        {
            let mut last = self.last_check.lock().unwrap_or_else(|e| e.into_inner());
            if last.is_some_and(|at| at.elapsed() < SIGNAL_POLL) {
                return failed;
            }
            *last = Some(Instant::now());
        }
        let interrupted = Python::attach(|py| py.check_signals().is_err());
        if interrupted {
            self.keyboard_interrupt.store(true, Ordering::Relaxed);
        }
        interrupted || failed
    }
}

/// Problem settings that the defaults do not serialise while unset (`shard`, the warm-up's).
const OPTIONAL_PROBLEM_SETTINGS: &[&str] = &[
    "shard",
    "precision",
    "warm_up_only",
    "warm_up",
    "data_scale",
    "noise",
];

/// `defaults` with each of `overrides` put where the setting lives: at the top level or in one
/// nested group (`problem`, `dynamics`). An unknown name is an error that lists the known ones.
/// `burn_in="auto"` or `"auto:CAP"` (as the CLI's `--burn-in`): an automatic burn-in, at most
/// CAP iterations (half the samples without one).
fn auto_burn_in(mut overrides: Map<String, Value>) -> PyResult<Map<String, Value>> {
    let Some(Value::String(text)) = overrides.get("burn_in").cloned() else {
        return Ok(overrides);
    };
    let cap = match text.trim().to_ascii_lowercase().strip_prefix("auto") {
        Some("") => Some(0),
        Some(rest) => rest
            .strip_prefix(':')
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|&n| n > 0),
        None => None,
    };
    let Some(cap) = cap else {
        return Err(PyValueError::new_err(format!(
            "invalid setting burn_in: expected a count, \"auto\" or \"auto:CAP\", got {text:?}"
        )));
    };
    overrides.insert("burn_in".into(), cap.into());
    overrides.insert("auto_burn_in".into(), true.into());
    Ok(overrides)
}

/// Groups of switches named like the settings they switch (`fit_scale_to_data.eta`): a flat
/// name never resolves into them; they are given whole, by their own name.
const SWITCH_GROUPS: [&str; 1] = ["fit_scale_to_data"];

/// `defaults` with each override put where its name is: at the top level, or in the settings
/// group that holds it (`eta` in `dynamics`, `sigma2` in `problem`).
fn merge(mut defaults: Value, overrides: Map<String, Value>) -> PyResult<Value> {
    let Value::Object(top) = &mut defaults else {
        return Err(PyRuntimeError::new_err(
            "settings do not serialise to an object",
        ));
    };
    for (name, value) in overrides {
        if top.contains_key(&name) {
            top.insert(name, value);
            continue;
        }
        // Optional top-level settings left out of the serialised defaults while unset.
        if name == "balance" {
            top.insert(name, value);
            continue;
        }
        // Optional problem settings left out of the serialised defaults while unset.
        if OPTIONAL_PROBLEM_SETTINGS.contains(&name.as_str()) {
            if let Some(Value::Object(problem)) = top.get_mut("problem") {
                problem.insert(name, value);
                continue;
            }
        }
        let group = top
            .iter_mut()
            .filter(|(key, _)| !SWITCH_GROUPS.contains(&key.as_str()))
            .filter_map(|(_, group)| group.as_object_mut())
            .find(|group| group.contains_key(&name));
        match group {
            Some(group) => {
                group.insert(name, value);
            }
            None => {
                let mut known: Vec<&str> = Vec::new();
                for (key, value) in top.iter() {
                    match value.as_object() {
                        Some(group) => known.extend(group.keys().map(String::as_str)),
                        None => known.push(key),
                    }
                }
                known.sort_unstable();
                return Err(PyValueError::new_err(format!(
                    "unknown setting `{name}`; the settings are: {}",
                    known.join(", ")
                )));
            }
        }
    }
    Ok(defaults)
}

/// The overrides, a JSON object of setting names and values.
fn overrides(settings: &str) -> PyResult<Map<String, Value>> {
    serde_json::from_str(settings)
        .map_err(|e| PyValueError::new_err(format!("settings are not a JSON object: {e}")))
}

/// Settings of type `T`: `base` with `overrides`. A value of the wrong type is named by its
/// setting: serde's message says what was expected but not where.
fn settings<T: Serialize + DeserializeOwned>(
    base: &T,
    overrides: Map<String, Value>,
) -> PyResult<T> {
    let defaults =
        serde_json::to_value(base).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    let merged = merge(defaults.clone(), overrides.clone())?;
    serde_json::from_value(merged).map_err(|e| {
        // The first setting that fails on its own, over the defaults.
        let culprit = overrides.into_iter().find(|(name, value)| {
            let alone = Map::from_iter([(name.clone(), value.clone())]);
            merge(defaults.clone(), alone)
                .is_ok_and(|one| serde_json::from_value::<T>(one).is_err())
        });
        match culprit {
            Some((name, value)) => {
                PyValueError::new_err(format!("invalid setting {name} = {value}: {e}"))
            }
            None => PyValueError::new_err(format!("invalid settings: {e}")),
        }
    })
}

/// The data array's shape and values in the library's layout, converted in the one pass that
/// copies them (any strides): uint8 as is; other integers checked to lie in 0..255; floats
/// (and booleans as 0/1) as float32, checked finite.
fn pixels_of(array: &Bound<'_, PyAny>) -> PyResult<(Vec<usize>, Pixels)> {
    fn floats<T: numpy::Element + Copy>(
        array: &Bound<'_, PyAny>,
        cast: impl Fn(T) -> f32,
    ) -> Option<PyResult<(Vec<usize>, Pixels)>> {
        let array = array.extract::<PyReadonlyArrayDyn<'_, T>>().ok()?;
        let mut values = Vec::with_capacity(array.len());
        for (i, &v) in array.as_array().iter().enumerate() {
            let v = cast(v);
            if !v.is_finite() {
                let message = format!(
                    "the data hold a non-finite value ({v}) at flat index {i}: pixels must be finite"
                );
                return Some(Err(PyValueError::new_err(message)));
            }
            values.push(v);
        }
        Some(Ok((array.shape().to_vec(), Pixels::F32(values))))
    }
    fn bytes<T: numpy::Element + Copy + Into<i64>>(
        array: &Bound<'_, PyAny>,
    ) -> Option<PyResult<(Vec<usize>, Pixels)>> {
        let array = array.extract::<PyReadonlyArrayDyn<'_, T>>().ok()?;
        let mut values = Vec::with_capacity(array.len());
        for (i, &v) in array.as_array().iter().enumerate() {
            let v: i64 = v.into();
            match u8::try_from(v) {
                Ok(v) => values.push(v),
                Err(_) => {
                    let message = format!(
                        "the data hold {v} at flat index {i}: integer pixels must lie in 0..255"
                    );
                    return Some(Err(PyValueError::new_err(message)));
                }
            }
        }
        Some(Ok((array.shape().to_vec(), Pixels::U8(values))))
    }
    if let Ok(array) = array.extract::<PyReadonlyArrayDyn<'_, u8>>() {
        let values = array.as_array().iter().copied().collect();
        return Ok((array.shape().to_vec(), Pixels::U8(values)));
    }
    floats::<f32>(array, |v| v)
        .or_else(|| floats::<f64>(array, |v| v as f32))
        .or_else(|| floats::<bool>(array, |v| f32::from(u8::from(v))))
        .or_else(|| bytes::<i64>(array))
        .or_else(|| bytes::<i32>(array))
        .or_else(|| bytes::<i16>(array))
        .or_else(|| bytes::<i8>(array))
        .or_else(|| bytes::<u16>(array))
        .or_else(|| bytes::<u32>(array))
        .unwrap_or_else(|| {
            Err(PyValueError::new_err(
                "the data must be a numpy array of numbers (unsigned or signed integers in \
                 0..255, floats or booleans), shape (N, d) or (N, h, w)",
            ))
        })
}

/// The data array (shape (N, d) or (N, h, w)) and optional integer labels as a dataset.
fn dataset(
    pixels: &Bound<'_, PyAny>,
    labels: Option<PyReadonlyArray1<'_, i64>>,
) -> PyResult<Dataset> {
    let (shape, values) = pixels_of(pixels)?;
    let labels = match labels {
        None => None,
        Some(labels) => {
            let mut out = Vec::with_capacity(labels.len());
            for (i, &label) in labels.as_array().iter().enumerate() {
                let label = u32::try_from(label).map_err(|_| {
                    PyValueError::new_err(format!(
                        "labels[{i}] is {label}: labels are class numbers from 0"
                    ))
                })?;
                out.push(label);
            }
            Some(out)
        }
    };
    Dataset::from_array(Path::new(ARRAY_SOURCE), &shape, values, labels).map_err(to_py)
}

/// Per-iteration MH statistics as (iterations, chains) arrays.
fn stats_dict<'py>(py: Python<'py>, stats: &DrawStats, out: &Bound<'py, PyDict>) -> PyResult<()> {
    let chains = stats.chains.max(1);
    let rows = stats.energy.len() / chains;
    let log_alpha: Vec<Vec<f64>> = stats
        .log_alpha
        .chunks(chains)
        .map(<[f64]>::to_vec)
        .collect();
    let energy: Vec<Vec<f32>> = stats.energy.chunks(chains).map(<[f32]>::to_vec).collect();
    if rows > 0 {
        out.set_item("log_alpha", PyArray2::from_vec2(py, &log_alpha)?)?;
        out.set_item("energy", PyArray2::from_vec2(py, &energy)?)?;
    }
    out.set_item("stats_stride", stats.stride)?;
    Ok(())
}

/// The settings of the learned sampler's network that `amortize_train` takes (the rest are the
/// teacher augment's).
const CODE_TRAIN_SETTINGS: [&str; 7] = [
    "hidden",
    "fit_steps",
    "pairs",
    "lr",
    "sigma_min",
    "apply_steps",
    "neighbours",
];

/// Augment's settings from `preset` (None: as `rmld augment`, "quality", or "paper" when
/// `method` is given) and the caller's `overrides`, the ones given keeping their value.
fn teacher_settings(
    preset: Option<&str>,
    overrides: Map<String, Value>,
) -> PyResult<AugmentSettings> {
    let method_given = overrides.contains_key("method");
    let base = match preset {
        None => AugmentSettings::preset(Preset::default_for(method_given)),
        Some("quality") => AugmentSettings::quality(),
        Some("paper") => AugmentSettings::paper(),
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "unknown preset `{other}`: the presets are `quality` and `paper`"
            )))
        }
    };
    // As on the command line, the settings given keep their value; burn_in may be "auto".
    let overrides = auto_burn_in(overrides)?;
    let given: Vec<String> = overrides.keys().cloned().collect();
    let mut s: AugmentSettings = self::settings(&base, overrides)?;
    s.keep_given(|name| given.iter().any(|g| g == name));
    Ok(s)
}

/// Runs `command` ("sample", "augment", "encode" or "amortize_train") with the library's settings
/// (`preset`, then the JSON object `settings` of setting names and values) on `data` (a numpy
/// array; `None`: the settings' `data` path or the embedded digits), writing into the settings'
/// `out` folder (for "amortize_train": the model file).
/// Returns a dict: `report` (report.json's text), `summary`, `notices`, `interrupted`,
/// `keyboard_interrupt`, and for sampling `log_alpha`/`energy` per iteration and chain.
/// The GIL is released while the run works.
#[pyfunction]
#[pyo3(signature = (command, settings, preset=None, data=None, labels=None, progress=None))]
fn run<'py>(
    py: Python<'py>,
    command: &str,
    settings: &str,
    preset: Option<&str>,
    data: Option<&Bound<'py, PyAny>>,
    labels: Option<PyReadonlyArray1<'py, i64>>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let dataset = match data {
        Some(array) => Some(Arc::new(dataset(array, labels)?)),
        None => None,
    };
    let observer = PyObserver::new(progress);
    let overrides = self::overrides(settings)?;
    let outcome: rmld::Result<Outcome> = match command {
        "sample" => {
            let burn_in_given = overrides.contains_key("burn_in");
            let overrides = auto_burn_in(overrides)?;
            let mut s: SampleSettings = self::settings(&SampleSettings::default(), overrides)?;
            if !burn_in_given {
                s = s.with_default_warm_up();
            }
            s.problem.dataset = dataset;
            py.detach(|| Sampler::new(s).run(&observer))
        }
        "augment" => {
            let mut s = teacher_settings(preset, overrides)?;
            s.problem.dataset = dataset;
            py.detach(|| Augmenter::new(s).run(&observer))
        }
        "amortize_train" => {
            // The network's settings by their names in CodeTrainSettings; the rest are the
            // teacher augment's, as on the command line (`out`: the model file).
            let mut overrides = overrides;
            let train: Map<String, Value> = CODE_TRAIN_SETTINGS
                .iter()
                .filter_map(|k| overrides.remove(*k).map(|v| (k.to_string(), v)))
                .collect();
            let mut train: CodeTrainSettings =
                self::settings(&CodeTrainSettings::default(), train)?;
            let mut teacher = teacher_settings(preset, overrides)?;
            teacher.problem.dataset = dataset;
            train.seed = teacher.problem.seed;
            let s = AmortizeSettings {
                model: teacher.problem.out.clone(),
                force: teacher.problem.force,
                train,
                teacher,
            };
            py.detach(|| AmortizeTrainer::new(s).run(&observer))
        }
        "encode" => {
            let mut s: EncodeSettings = self::settings(&EncodeSettings::default(), overrides)?;
            s.problem.dataset = dataset;
            py.detach(|| Encoder::new(s).run(&observer))
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown command `{other}`: sample, augment, encode or amortize_train"
            )))
        }
    };
    if let Some(e) = observer
        .callback_error
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
    {
        return Err(e);
    }
    let outcome = outcome.map_err(to_py)?;
    let out = PyDict::new(py);
    out.set_item("report", outcome.report.to_string())?;
    out.set_item("summary", outcome.summary)?;
    let notices = std::mem::take(&mut *observer.notices.lock().unwrap_or_else(|e| e.into_inner()));
    out.set_item("notices", notices)?;
    out.set_item("interrupted", outcome.interrupted)?;
    out.set_item(
        "keyboard_interrupt",
        observer.keyboard_interrupt.load(Ordering::Relaxed),
    )?;
    if let Some(stats) = &outcome.draw_stats {
        stats_dict(py, stats, &out)?;
    }
    Ok(out)
}

/// Merges the output folders of the shards of one run (`shard="i/N"`) into `out`, as
/// `rmld merge OUT SHARD_DIR...` does; returns the merged run's report as JSON text. When a
/// shard is missing, duplicated, from another configuration or seed, or damaged: OSError (a
/// shard's files) or ValueError (no shards, a missing index), with the library's message naming
/// the shard; nothing is written then. Files of a merged run already in `out` are replaced only
/// with `force`. With `from_array` the merged report names the data as a single run on an
/// array does ("<numpy array>"): for shards that read it from a copy their caller removes.
#[pyfunction]
#[pyo3(signature = (out, shards, force = false, from_array = false))]
fn merge_shards(
    py: Python<'_>,
    out: PathBuf,
    shards: Vec<PathBuf>,
    force: bool,
    from_array: bool,
) -> PyResult<String> {
    let outcome = py
        .detach(|| match from_array {
            true => rmld::session::merge_naming_data(&out, &shards, force, ARRAY_SOURCE),
            false => rmld::session::merge(&out, &shards, force),
        })
        .map_err(to_py)?;
    Ok(outcome.report.to_string())
}

/// Images (N, h, w) and their labels, as numpy arrays.
type ImagesAndLabels<'py> = (Bound<'py, PyArray3<f32>>, Bound<'py, PyArray1<i64>>);

/// The embedded digits (the data of a run given none): images float32 (N, h, w) in [0, 1]
/// (the raw values over their full scale), labels int64 (N,).
#[pyfunction]
fn embedded_digits(py: Python<'_>) -> PyResult<ImagesAndLabels<'_>> {
    let dataset = Dataset::embedded();
    let scale = dataset.full_scale;
    let values: Vec<f32> = match dataset.pixels {
        Pixels::U8(values) => values.into_iter().map(|v| f32::from(v) / scale).collect(),
        Pixels::F32(values) => values.into_iter().map(|v| v / scale).collect(),
    };
    let shape = [dataset.n, dataset.height, dataset.width];
    let images = PyArray1::from_vec(py, values).reshape(shape)?;
    let labels: Vec<i64> = dataset
        .labels
        .unwrap_or_default()
        .into_iter()
        .map(i64::from)
        .collect();
    Ok((images, PyArray1::from_vec(py, labels)))
}

/// The native part of the `rmld` Python package.
#[pymodule]
fn _rmld(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(run, module)?)?;
    module.add_function(wrap_pyfunction!(embedded_digits, module)?)?;
    module.add_function(wrap_pyfunction!(merge_shards, module)?)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add("__build__", rmld::BUILD)?;
    Ok(())
}
