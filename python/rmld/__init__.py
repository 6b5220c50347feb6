"""rmld: Randomized Measurement Langevin Dynamics (RMLD / SpHMC) from Python.

Sparse codes of images sampled by thousands of Markov chains on the GPU (wgpu) or the CPU,
through the same library the ``rmld`` command line runs: the same settings, defaults, presets
and validation.

>>> import numpy as np, rmld
>>> images, labels = rmld.load_digits()          # the embedded 8x8 digits, in [0, 1]
>>> result = rmld.sample(images[:200], chains=8, samples=20, backend="cpu")
>>> result.codes.shape                           # (chain, draw, atom), ArviZ's order
(8, 20, 256)
>>> idata = result.to_inference_data()           # needs arviz

Settings are keyword arguments named as the library names them (``chains``, ``samples``,
``method``, ``eta``, ``batch``, ``pixel_max``, ``lam`` for the prior's lambda, ...); an unknown
name raises ``ValueError`` listing the known ones. Runs release the GIL; Ctrl-C stops a run
after its current iteration and raises ``KeyboardInterrupt`` whose ``result`` attribute holds
the partial result.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np

from . import _rmld

__version__: str = _rmld.__version__
#: The build of the native library (`rmld --version`'s hash of its sources): checkpoints, shard
#: manifests and warm-ups record it, and a resume, merge or shard refuses another build's files.
__build__: str = _rmld.__build__

__all__ = [
    "AmortizeResult",
    "AugmentResult",
    "EncodeResult",
    "SampleResult",
    "amortize_train",
    "augment",
    "augment_dataset",
    "encode",
    "load_digits",
    "read_idx",
    "sample",
]

Progress = Callable[[str, int, Optional[int]], None]
PathLike = Union[str, "os.PathLike[str]"]


def _as_pixels(images: Any, name: str = "images") -> np.ndarray:
    """The array as given (no copy): the native module converts it to the library's layout in
    the one pass that copies it (uint8 as is, integers checked to lie in 0..255, floats and
    booleans to float32, checked finite). Only float16, long double and a byte order not this
    machine's are copied here first, into what the native module reads."""
    array = np.asarray(images)
    if array.ndim == 4 and array.shape[3] == 1:  # one channel, last (Keras): (N, h, w)
        array = array.reshape(array.shape[:3])
    elif array.ndim == 4 and array.shape[1] == 1:  # one channel, first (PyTorch)
        array = array.reshape((array.shape[0],) + array.shape[2:])
    if array.ndim not in (2, 3):
        raise ValueError(f"{name} must have shape (N, d), (N, h, w) or one channel (N, h, w, 1) "
                         f"or (N, 1, h, w), got {array.shape}")
    if array.dtype.kind not in "uifb":
        raise ValueError(f"{name} must hold numbers, got dtype {array.dtype}")
    if not array.dtype.isnative:  # big-endian data: the native module reads this machine's order
        array = array.astype(array.dtype.newbyteorder("="))
    if array.dtype.kind == "f" and array.dtype not in (np.float32, np.float64):
        array = array.astype(np.float32)  # float16 or long double: the library's float32
    return array


def _as_labels(labels: Any, n: int) -> np.ndarray:
    array = np.asarray(labels)
    if array.ndim != 1 or len(array) != n:
        raise ValueError(f"labels must be one per image: shape ({n},), got {array.shape}")
    if array.dtype.kind not in "uifb":
        raise ValueError(
            f"labels must be integers (class numbers from 0), got dtype {array.dtype}"
        )
    if not np.issubdtype(array.dtype, np.integer):
        rounded = np.round(array)
        if not np.all(rounded == array):
            raise ValueError("labels must be integers (class numbers from 0)")
        array = rounded
    # Past int64 a label would wrap to a negative number (and the message show that instead).
    too_large = array > np.iinfo(np.int64).max
    if np.any(too_large):
        i = int(np.argmax(too_large))
        raise ValueError(f"labels[{i}] is {array[i]}: labels are class numbers from 0 (at most "
                         "255 classes)")
    return np.ascontiguousarray(array, dtype=np.int64)


def _plain(value: Any) -> Any:
    """`value` with numpy scalars (keys of dicts too: a `balance` of counts per class) and
    paths made JSON's numbers and strings."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _finite(name: str, value: Any) -> None:
    """Raises ValueError naming setting ``name`` when ``value`` holds NaN or an infinity, which
    JSON cannot carry to the library (its own message would name no setting)."""
    if isinstance(value, float) and not np.isfinite(value):
        raise ValueError(f"invalid setting {name}: must be a finite number, got {value}")
    if isinstance(value, dict):
        for k, v in value.items():
            _finite(f"{name}[{k!r}]", v)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _finite(f"{name}[{i}]", v)


def _settings_json(settings: Dict[str, Any]) -> str:
    renamed = {}
    for key, value in settings.items():
        plain = _plain(value)
        _finite(key, plain)
        renamed["lambda" if key == "lam" else key] = plain
    return json.dumps(renamed)


def read_idx(path: PathLike) -> np.ndarray:
    """An IDX file (MNIST's format, gzip-compressed or not) as a uint8 array: the files
    ``rmld augment`` writes, and the MNIST-style datasets it reads."""
    return _read_idx(Path(path))


def _read_idx(path: Path) -> np.ndarray:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (EOFError, gzip.BadGzipFile) as e:  # a cut or damaged gzip stream
        raise ValueError(f"{path}: not a readable gzip'd IDX file: {e}") from None
    # uint8 IDX: two zero bytes, type 0x08, the number of dimensions, then each as a u32.
    if len(raw) < 4 or raw[:3] != b"\0\0\x08" or raw[3] == 0:
        raise ValueError(f"{path}: not a uint8 IDX file (its first 4 bytes are {raw[:4]!r}, "
                         "expected 00 00 08 and a number of dimensions)")
    dims = raw[3]
    header = 4 + 4 * dims
    if len(raw) < header:
        raise ValueError(f"{path}: truncated IDX header ({len(raw)} bytes of {header})")
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(dims))
    size = int(np.prod(shape, dtype=object))
    if len(raw) - header != size:
        raise ValueError(f"{path}: the IDX header promises {size} bytes of shape {shape}, "
                         f"but {len(raw) - header} follow")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(shape).copy()


class _Run:
    """Runs one command into `out` (a temporary folder when None) and keeps its outputs."""

    def __init__(self, out: Optional[PathLike]):
        self._temporary = None if out is not None else tempfile.TemporaryDirectory(prefix="rmld-")
        self.out = Path(out) if out is not None else Path(self._temporary.name) / "run"

    def __call__(self, command, settings, preset=None, data=None, labels=None, progress=None):
        settings = dict(settings)
        settings.setdefault("out", os.fspath(self.out))
        raw = _rmld.run(
            command, _settings_json(settings), preset, data, labels, progress
        )
        raw["report"] = json.loads(raw["report"]) if raw["report"] else {}
        return raw

    def close(self) -> None:
        if self._temporary is not None:
            self._temporary.cleanup()


def _finish(run: _Run, raw: Dict[str, Any], result: Any) -> Any:
    run.close()
    if raw["keyboard_interrupt"]:
        error = KeyboardInterrupt("rmld: stopped by Ctrl-C; the partial result is in .result")
        error.result = result  # type: ignore[attr-defined]
        raise error
    return result


@dataclass
class SampleResult:
    """Draws of a sampling run, in ArviZ's (chain, draw, ...) order.

    ``codes``: (chain, draw, p) sparse codes; ``images``: (chain, draw, h, w) images A x in the
    model's units; ``report``: report.json as a dict (settings, acceptance, R-hat, ESS, timings);
    ``log_alpha``/``energy``: (chain, draw) MH log-ratio of the proposal that produced each draw
    and U(x) entering that iteration, where the run traced every iteration (else None);
    ``sample_stats``: the run folder's ``sample_stats/*.npy`` by ArviZ name (acceptance_rate,
    energy, step_size, diverging, n_steps), each (chain, draw), where the run wrote them.
    """

    codes: np.ndarray
    images: np.ndarray
    report: Dict[str, Any]
    log_alpha: Optional[np.ndarray] = None
    energy: Optional[np.ndarray] = None
    notices: List[str] = field(default_factory=list)
    interrupted: bool = False
    summary: List[str] = field(default_factory=list)
    sample_stats: Optional[Dict[str, np.ndarray]] = None

    def to_inference_data(self, images: bool = False):
        """An ``arviz.InferenceData``: ``posterior`` with ``codes`` (chain, draw, coefficient)
        (and ``images`` when asked), ``sample_stats`` (acceptance_rate, energy, lp, step_size,
        diverging, n_steps: the files the run wrote into its folder's ``sample_stats/``, else
        computed from the traced log α and energy) where the per-draw statistics exist, and the
        run's settings as attributes."""
        import arviz as az

        posterior = {"codes": self.codes}
        dims = {"codes": ["coefficient"]}
        if images:
            posterior["images"] = self.images
            dims["images"] = ["row", "column"]
        sample_stats = None
        if self.sample_stats is not None:
            sample_stats = {name: np.asarray(value) for name, value in self.sample_stats.items()}
            sample_stats["diverging"] = sample_stats["diverging"].astype(bool)
            sample_stats["lp"] = -sample_stats["energy"].astype(np.float64)
        elif self.log_alpha is not None and self.energy is not None:
            settings = self.report.get("settings", {})
            step = settings.get("dynamics", {}).get("eta", float("nan"))
            with np.errstate(over="ignore", invalid="ignore"):
                acceptance = np.minimum(1.0, np.exp(self.log_alpha))
            sample_stats = {
                "acceptance_rate": acceptance,
                "energy": self.energy.astype(np.float64),
                "lp": -self.energy.astype(np.float64),
                "step_size": np.full(self.energy.shape, step, dtype=np.float64),
                "diverging": ~np.isfinite(self.log_alpha) | ~np.isfinite(self.energy),
            }
        attrs = {
            "inference_library": "rmld",
            "inference_library_version": __version__,
            "rmld_build": __build__,
            "settings": json.dumps(self.report.get("settings", {})),
        }
        return az.from_dict(posterior=posterior, sample_stats=sample_stats, dims=dims, attrs=attrs)


@dataclass
class AugmentResult:
    """A class-conditional augmentation: ``images``/``labels``/``codes`` of the generated samples,
    ``augmented_images``/``augmented_labels`` the originals and the generated ones together (the
    set written as IDX), ``report`` the run's report.json (quality metrics included)."""

    images: np.ndarray
    labels: np.ndarray
    codes: np.ndarray
    augmented_images: np.ndarray
    augmented_labels: np.ndarray
    report: Dict[str, Any]
    notices: List[str] = field(default_factory=list)
    interrupted: bool = False
    summary: List[str] = field(default_factory=list)


@dataclass
class EncodeResult:
    """LASSO codes (N, p), their reconstructions A z (N, d), the dictionary (d, p) and the report."""

    codes: np.ndarray
    reconstructions: np.ndarray
    dictionary: np.ndarray
    report: Dict[str, Any]
    notices: List[str] = field(default_factory=list)
    summary: List[str] = field(default_factory=list)


def _split_data(data, labels, settings=None):
    """The arrays to hand over; a path (str or PathLike) is passed as the `data` setting."""
    if data is None:
        return None, None
    if isinstance(data, (str, os.PathLike)):
        settings["data"] = os.fspath(data)
        if labels is not None:
            if not isinstance(labels, (str, os.PathLike)):
                raise ValueError("with the data given as a path, give the labels as a path too")
            settings["labels"] = os.fspath(labels)
        return None, None
    pixels = _as_pixels(data)
    return pixels, (None if labels is None else _as_labels(labels, len(pixels)))


def sample(
    data: Any = None,
    *,
    out: Optional[PathLike] = None,
    progress: Optional[Progress] = None,
    **settings: Any,
) -> SampleResult:
    """Samples sparse codes of ``data`` (images (N, h, w) or rows (N, d), uint8 or float; a path
    to a dataset file or folder, as ``rmld sample --data`` reads; None: the embedded 8x8 digits).

    Keyword settings are the library's (``rmld sample``'s, with underscores): ``chains``,
    ``samples``, ``method`` ("rmld", "mala", "hmc"), ``eta``, ``steps``, ``batch``, ``burn_in``
    (a count, or "auto" / "auto:CAP" to end the warm-up where it settles; when not given,
    "auto" for MALA and HMC, 0 for RMLD, as ``rmld sample``; ``samples`` counts the outer
    iterations with the burn-in among them, so the result holds ``samples`` less the burn-in's
    draws, ``report["burn_in"]``), ``precision`` ("f32",
    "f16": the dictionary stored as half precision),
    ``keep``, ``init``, ``pixel_max``, ``sigma2``, ``lam``, ``target``, ``seed``, ``backend``
    ("auto", "cpu", "gpu"), ... ``out`` keeps the run's folder (codes.npy, report.json, ...);
    ``progress(phase, done, total)`` is called as the run advances.
    """
    pixels, _ = _split_data(data, None, settings)
    run = _Run(out)
    try:
        raw = run("sample", settings, data=pixels, progress=progress)
        codes, images = _read_draws(run.out, raw["report"])
    except BaseException:
        run.close()
        raise
    report = raw["report"]
    log_alpha, energy = _per_draw_stats(raw, report, codes.shape[1])
    stats = _read_sample_stats(run.out, codes.shape[:2])
    result = SampleResult(
        codes=codes,
        images=images,
        report=report,
        log_alpha=log_alpha,
        energy=energy,
        notices=raw["notices"],
        interrupted=raw["interrupted"],
        summary=raw["summary"],
        sample_stats=stats,
    )
    return _finish(run, raw, result)


SAMPLE_STATS = ("acceptance_rate", "energy", "step_size", "diverging", "n_steps")


def _read_sample_stats(out: Path, shape: Tuple[int, int]) -> Optional[Dict[str, np.ndarray]]:
    """The (chain, draw) per-draw statistics a sample run wrote into ``out/sample_stats/``, by
    ArviZ name; None where the run wrote none (or they do not match the draws' ``shape``)."""
    folder = Path(out) / "sample_stats"
    if not all((folder / f"{name}.npy").is_file() for name in SAMPLE_STATS):
        return None
    stats = {name: np.load(folder / f"{name}.npy") for name in SAMPLE_STATS}
    if any(value.shape != tuple(shape) for value in stats.values()):
        return None
    return stats


def _read_draws(out: Path, report: Dict[str, Any]) -> Tuple[np.ndarray, np.ndarray]:
    """A sample run's codes (chain, draw, p) and images (chain, draw, h, w) from its folder,
    whose files are (draw, chain, ...)."""
    codes = np.load(out / "codes.npy")
    images = np.load(out / "images.npy")
    height, width = _geometry(report, images.shape[-1])
    draws, chains = images.shape[0], images.shape[1]
    return (
        np.ascontiguousarray(codes.transpose(1, 0, 2)),
        np.ascontiguousarray(images.transpose(1, 0, 2)).reshape(chains, draws, height, width),
    )


def _read_encoding(out: Path) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An encode run's codes, reconstructions and dictionary from its folder."""
    return tuple(np.load(out / name) for name in ("codes.npy", "reconstructions.npy", "dictionary.npy"))


def _geometry(report: Dict[str, Any], d: int) -> Tuple[int, int]:
    dataset = report.get("dataset", {})
    height, width = dataset.get("height"), dataset.get("width")
    if isinstance(height, int) and isinstance(width, int) and height * width == d:
        return height, width
    return 1, d


def _per_draw_stats(raw, report, draws):
    """(chain, draw) statistics of the kept draws, where every iteration was traced and every
    iteration after burn-in was kept (``keep="all"``); else (None, None)."""
    if "log_alpha" not in raw or raw.get("stats_stride") != 1 or report.get("keep") != "all":
        return None, None
    burn_in = int(report.get("burn_in", 0))
    log_alpha = raw["log_alpha"][burn_in : burn_in + draws]
    energy = raw["energy"][burn_in : burn_in + draws]
    if log_alpha.shape[0] != draws:
        return None, None
    return np.ascontiguousarray(log_alpha.T), np.ascontiguousarray(energy.T)


def augment(
    images: Any = None,
    labels: Any = None,
    *,
    preset: Optional[str] = None,
    out: Optional[PathLike] = None,
    progress: Optional[Progress] = None,
    **settings: Any,
) -> AugmentResult:
    """Generates new images per class (one per ``ratio`` originals) from ``images`` (N, h, w)
    and their integer ``labels`` (None: the embedded 8x8 digits), with the library's presets
    ("quality" or "paper"; when None, as ``rmld augment``: "quality", or "paper" when ``method``
    is given) and settings (``ratio``: originals per new image, a number or the command
    line's text, "6:1" or "1:4"; or ``balance``: imbalanced-learn's ``sampling_strategy``,
    "auto", "minority", ..., a ratio for two classes, or each class's count after augmenting
    as a dict ``{5: 300}``; ``augmented_images`` then hold every original, the classes given
    no new image too; ``method``, ``samples``,
    ``burn_in`` (a count, or "auto"), ``adapt`` (per-class step sizes for "mala" and "hmc"),
    ``limit``, ``classes``, ``no_quality``, ``backend``, ``seed``, ...)."""
    if not isinstance(images, (str, os.PathLike)) and (images is None) != (labels is None):
        raise ValueError("give both images and labels, or neither (the embedded digits)")
    pixels, label_array = _split_data(images, labels, settings)
    run = _Run(out)
    try:
        raw = run("augment", settings, preset=preset, data=pixels, labels=label_array, progress=progress)
        if raw["interrupted"] and not (run.out / "generated-codes.npy").exists():
            result = AugmentResult(*(np.empty(0),) * 5, report=raw["report"], notices=raw["notices"],
                                   interrupted=True, summary=raw["summary"])
            return _finish(run, raw, result)
        result = AugmentResult(
            images=_read_idx(run.out / "generated-images-idx3-ubyte.gz"),
            labels=np.load(run.out / "generated-labels.npy").astype(np.int64),
            # None written where the run has no codes (kernel-hmc; deform without reencode).
            codes=_load_if(run.out / "generated-codes.npy"),
            augmented_images=_read_idx_if(run.out / "train-images-idx3-ubyte.gz"),
            augmented_labels=_read_idx_if(run.out / "train-labels-idx1-ubyte.gz").astype(np.int64),
            report=raw["report"],
            notices=raw["notices"],
            interrupted=raw["interrupted"],
            summary=raw["summary"],
        )
    except BaseException:
        run.close()
        raise
    return _finish(run, raw, result)


def _read_idx_if(path: Path) -> np.ndarray:
    return _read_idx(path) if path.exists() else np.empty(0, dtype=np.uint8)


def _load_if(path: Path) -> np.ndarray:
    return np.load(path) if path.exists() else np.empty((0, 0), dtype=np.float32)


def encode(
    images: Any = None,
    *,
    out: Optional[PathLike] = None,
    progress: Optional[Progress] = None,
    **settings: Any,
) -> EncodeResult:
    """LASSO codes of ``images`` under the run's dictionary (``dictionary`` names a (d, p) float
    NPY file; default: Gaussian from ``seed``), with ``lam``, ``lasso_iterations`` (the cap),
    ``lasso_tolerance`` (each row's relative duality gap, default 5e-3: ADMM on the CPU; 0: every
    FISTA iteration), ``limit``, ``backend``, ..."""
    pixels, _ = _split_data(images, None, settings)
    run = _Run(out)
    try:
        raw = run("encode", settings, data=pixels, progress=progress)
        codes, reconstructions, dictionary = _read_encoding(run.out)
        result = EncodeResult(
            codes=codes,
            reconstructions=reconstructions,
            dictionary=dictionary,
            report=raw["report"],
            notices=raw["notices"],
            summary=raw["summary"],
        )
    except BaseException:
        run.close()
        raise
    return _finish(run, raw, result)


def augment_dataset(
    images: Any,
    labels: Any,
    out: PathLike,
    *,
    preset: Optional[str] = None,
    progress: Optional[Progress] = None,
    **settings: Any,
) -> AugmentResult:
    """Augments and writes the augmented set (originals, then generated samples) to ``out``:
    the MNIST IDX files and the rest of ``rmld augment``'s outputs, and ``out/imagefolder/``
    with one folder per class of PNGs (``original-00000.png``, ``generated-00000.png``, ...),
    the layout ``torchvision.datasets.ImageFolder`` reads. Needs Pillow. An ``imagefolder/``
    already in ``out`` is refused before any work (``force=True`` replaces it whole, so no
    earlier run's images stay among the new ones); the PNGs are written beside it and put in
    its place once all are written."""
    import shutil

    from PIL import Image

    out = Path(out)
    folder = out / "imagefolder"
    if folder.exists() and not settings.get("force", False):
        raise FileExistsError(
            f"{folder} exists already (an earlier run's images, or yours): give force=True to "
            "replace it whole, or choose another out")
    result = augment(images, labels, preset=preset, out=out, progress=progress, **settings)
    staged = Path(tempfile.mkdtemp(prefix=".imagefolder-", dir=out))
    try:
        generated_from = len(result.augmented_images) - len(result.images)
        counters: Dict[Tuple[int, str], int] = {}
        pairs = zip(result.augmented_images, result.augmented_labels)
        for index, (image, label) in enumerate(pairs):
            kind = "original" if index < generated_from else "generated"
            key = (int(label), kind)
            number = counters.get(key, 0)
            counters[key] = number + 1
            target = staged / str(int(label)) / f"{kind}-{number:05d}.png"
            target.parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(np.ascontiguousarray(image, dtype=np.uint8)).save(target)
        if folder.exists():  # force: the earlier folder goes once the new one is complete
            earlier = Path(tempfile.mkdtemp(prefix=".imagefolder-replaced-", dir=out))
            os.replace(folder, earlier / "imagefolder")
            os.replace(staged, folder)
            shutil.rmtree(earlier)
        else:
            os.replace(staged, folder)
    finally:
        if staged.exists():
            shutil.rmtree(staged)
    return result


@dataclass
class AmortizeResult:
    """A trained learned sampler: ``model``, the model file that ``augment(...,
    sampler="amortized", model=...)`` generates with, and ``report``, its training report (the
    ``MODEL.json`` beside it)."""

    model: Path
    report: Dict[str, Any]
    notices: List[str] = field(default_factory=list)
    interrupted: bool = False
    summary: List[str] = field(default_factory=list)


def amortize_train(
    images: Any = None,
    labels: Any = None,
    *,
    model: PathLike,
    preset: Optional[str] = None,
    progress: Optional[Progress] = None,
    **settings: Any,
) -> AmortizeResult:
    """Trains the learned (amortised) sampler of paper 004 into the file ``model``, as ``rmld
    amortize train`` does (experimental; docs/amortized.md): augment's MCMC sampler runs once
    as the teacher on ``images``/``labels`` (None: the embedded 8x8 digits) with augment's
    ``preset`` and settings, then a per-class network is fitted to its samples (``hidden``,
    ``fit_steps``, ``pairs``, ``lr``, ``sigma_min``, ``apply_steps``, ``neighbours``). An
    interrupted training (Ctrl-C) continues when called again with the same arguments."""
    if not isinstance(images, (str, os.PathLike)) and (images is None) != (labels is None):
        raise ValueError("give both images and labels, or neither (the embedded digits)")
    pixels, label_array = _split_data(images, labels, settings)
    settings = dict(settings)
    settings["out"] = os.fspath(model)
    raw = _rmld.run(
        "amortize_train", _settings_json(settings), preset, pixels, label_array, progress
    )
    report = json.loads(raw["report"]) if raw["report"] else {}
    result = AmortizeResult(
        model=Path(model),
        report=report,
        notices=raw["notices"],
        interrupted=raw["interrupted"],
        summary=raw["summary"],
    )
    if raw["keyboard_interrupt"]:
        error = KeyboardInterrupt("rmld: stopped by Ctrl-C; run the same call to continue")
        error.result = result  # type: ignore[attr-defined]
        raise error
    return result


def load_digits() -> Tuple[np.ndarray, np.ndarray]:
    """The embedded dataset, the one rmld runs on when given no data (optdigits: 1797 images of
    8x8, labels 0..9): (images float32 (N, 8, 8) in [0, 1], labels int64 (N,))."""
    return _rmld.embedded_digits()
