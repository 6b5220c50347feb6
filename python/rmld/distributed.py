"""Shards of one rmld run as Ray tasks on a cluster, merged into the single run's files.

>>> import rmld, rmld.distributed
>>> images, _ = rmld.load_digits()
>>> result = rmld.distributed.encode(images, shards=4, out="/shared/run", backend="cpu")

Each of the ``shards`` tasks runs shard ``i/N`` of the work (``shard`` setting of the library:
the same numbers as the single run) into ``OUT/shards/shard-i``, then the driver merges them
into ``OUT`` with the library's merge (which checks that every shard is there once, from one
configuration and seed, intact). ``OUT`` must be a folder every node and the driver can read
and write: a shared filesystem (NFS, Lustre, a mounted bucket such as s3fs/gcsfuse). A task
asks for one GPU (``num_gpus=1``) when the cluster has GPUs, else one CPU. A failed task (its
worker killed, its node lost, an ``OSError`` or ``RuntimeError``) is retried up to
``max_retries`` times: a shard is a pure function of its settings and writes its files
atomically, so a retry writes the same bytes. A ``ValueError`` (a setting or the data refused)
would recur on every attempt, so it fails the run at once. When a shard fails for good (or the
driver is interrupted), the driver cancels the other tasks (their workers killed) and waits for
them to end before it raises, so nothing writes into ``OUT/shards`` after the error.
``progress(phase, done, total)`` is called in the driver as shards report their rows ("shards"
phase: shards finished, and each shard's own phase as it advances).

``encode`` (originals split), ``sample`` (chains split: shard i runs chains
[C·i/N, C·(i+1)/N), drawing the numbers those chains draw in the single run) and ``augment``
(the augmentation's chains split, classes in order, with each shard's part of the originals'
and test split's codes; the merge makes the post-processed set, the quality metrics, the
picture and the report as the single run does) run as shards. ``sample`` and ``augment``
first run the whole run's warm-up as one task (``warm_up_only``, into ``OUT/shards/warm-up``:
every chain up to the end of the burn-in, where the step size adapts across the chains and an
automatic burn-in ends), then start every shard from it (``warm_up``), so adaptive settings
(MALA's and HMC's defaults, ``adapt``, ``burn_in="auto"``) merge into the single run's files
too (docs/scale-out.md); augment's ``method="compression"``, ``"deform"`` (the default) and the
amortized sampler run no chains and go without one. Each attempt of a shard appends
``index pid`` to ``OUT/shards/attempts.log`` and starts from an empty shard folder, so a retry
after a killed attempt never meets that attempt's partial files.

Data given as an array reaches ``encode``'s shards through Ray's object store. ``sample``'s and
``augment``'s merge loads the data again (to check the shards' hash of it; augment's to make
the post-processed set and the quality metrics), so their arrays are checked as the library
checks them, then saved as ``OUT/shards/data.npy`` (and ``labels.npy``), which the shards and
the merge read: the merged files equal the single run's on the array. The report's
``dataset.source`` says ``<numpy array>``, as the single run's does, or, with ``keep_shards``,
names the kept file.

Why Ray and not Dask: Ray schedules GPUs as a first-class resource (``num_gpus``), retries a
task whose worker process or node died (not only one that raised), and is what GPU ML users
already run (Ray Train/Tune/Serve clusters, KubeRay, Anyscale); Dask's GPU support goes through
worker resources set by hand and dask-cuda, and rmld needs none of Dask's array or dataframe
collections: a shard is one opaque task writing files.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from . import (
    EncodeResult,
    PathLike,
    Progress,
    SampleResult,
    _read_draws,
    _read_sample_stats,
    _read_encoding,
    _as_labels,
    _as_pixels,
    _rmld,
    _settings_json,
    _split_data,
)

__all__ = ["augment", "encode", "run", "sample"]


def _warm_up_task(
    command: str,
    settings_json: str,
    preset: Optional[str],
    data: Optional[np.ndarray],
    labels: Optional[np.ndarray],
    warm_up_dir: str,
) -> str:
    """Runs the whole run's warm-up into ``warm_up_dir`` (inside a Ray worker)."""
    shutil.rmtree(warm_up_dir, ignore_errors=True)
    settings = json.loads(settings_json)
    settings["warm_up_only"] = True
    settings["out"] = warm_up_dir
    settings.pop("force", None)
    raw = _rmld.run(command, json.dumps(settings), preset, data, labels, None)
    if raw["interrupted"]:
        raise RuntimeError(f"rmld {command}'s warm-up was interrupted")
    return warm_up_dir


def _needs_warm_up(command: str, settings: Dict[str, Any]) -> bool:
    """Whether the shards of ``command`` start from a shared warm-up: those that run chains."""
    if command == "sample":
        return True
    if command == "augment":
        # Without a method, the preset's: deform (quality, the default) or rmld (paper).
        method = settings.get("method") or (
            "rmld" if settings.get("preset") == "paper" else "deform"
        )
        one_draw = method in ("compression", "deform")
        return not one_draw and settings.get("sampler") != "amortized"
    return False


#: The library's errors a shard's task retries (a file or node that may be back, a lost GPU);
#: its ValueError says a setting or the data is refused, which no attempt changes.
RETRIED_ERRORS = [OSError, RuntimeError]


def _shard_task(
    command: str,
    settings_json: str,
    preset: Optional[str],
    data: Optional[np.ndarray],
    labels: Optional[np.ndarray],
    index: int,
    count: int,
    shard_dir: str,
    reporter: Any,
    warm_up_dir: Optional[str] = None,
) -> int:
    """Runs shard ``index``/``count`` into ``shard_dir`` (inside a Ray worker), from the
    warm-up in ``warm_up_dir`` when given."""
    # A retried shard starts afresh: what a killed attempt left is removed.
    shutil.rmtree(shard_dir, ignore_errors=True)
    with open(Path(shard_dir).parent / "attempts.log", "a") as log:
        log.write(f"{index} {os.getpid()}\n")
    # The tests' hook: each attempt waits this long once logged, so the test that kills a
    # running shard's worker finds one running however fast the shards are.
    time.sleep(float(os.environ.get("RMLD_TEST_SHARD_PAUSE") or 0))
    settings = json.loads(settings_json)
    settings["shard"] = f"{index}/{count}"
    settings["out"] = shard_dir
    if warm_up_dir is not None:
        settings["warm_up"] = warm_up_dir
    callback = None
    if reporter is not None:
        last = [0.0]

        def callback(phase: str, done: int, total: Optional[int]) -> None:
            now = time.monotonic()
            if now - last[0] > 0.2 or (total is not None and done >= total):
                last[0] = now
                reporter.update.remote(index, phase, done, total)

    raw = _rmld.run(command, json.dumps(settings), preset, data, labels, callback)
    if raw["interrupted"]:
        raise RuntimeError(f"rmld shard {index}/{count} was interrupted")
    return index


def _stored_pixels(pixels: np.ndarray) -> np.ndarray:
    """The data array as the native module converts it (uint8 as is, other integers checked to
    lie in 0..255 and stored as uint8, floats and booleans as float32, checked finite), so that
    an NPY file of it loads as the same dataset as the array given in memory."""
    if pixels.dtype == np.uint8:
        return np.ascontiguousarray(pixels)
    flat = pixels.reshape(-1)
    if pixels.dtype.kind in "iu":
        bad = np.flatnonzero((flat < 0) | (flat > 255))
        if len(bad):
            i = int(bad[0])
            raise ValueError(
                f"the data hold {flat[i]} at flat index {i}: integer pixels must lie in 0..255"
            )
        return np.ascontiguousarray(pixels, dtype=np.uint8)
    with np.errstate(over="ignore"):  # float64 beyond float32's range: inf, refused below
        values = np.ascontiguousarray(pixels, dtype=np.float32)
    bad = np.flatnonzero(~np.isfinite(values.reshape(-1)))
    if len(bad):
        i = int(bad[0])
        raise ValueError(
            f"the data hold a non-finite value ({values.reshape(-1)[i]}) at flat index {i}: "
            "pixels must be finite"
        )
    return values


def _stored_labels(labels: np.ndarray) -> np.ndarray:
    """The labels (int64) as the native module takes them: class numbers from 0, checked."""
    bad = np.flatnonzero((labels < 0) | (labels > np.iinfo(np.uint32).max))
    if len(bad):
        i = int(bad[0])
        raise ValueError(f"labels[{i}] is {labels[i]}: labels are class numbers from 0")
    return labels


def _save_npy(path: Path, array: np.ndarray) -> str:
    """Writes ``array`` to the NPY file ``path`` at once (a temporary file renamed onto it)."""
    path = Path(os.path.abspath(path))  # the same file from every node's working folder
    part = path.with_name(path.name + ".part")
    with open(part, "wb") as f:
        np.save(f, array)
    os.replace(part, path)
    return os.fspath(path)


class _Reporter:
    """A Ray actor collecting the shards' progress for the driver."""

    def __init__(self) -> None:
        self.latest: Dict[int, Any] = {}

    def update(self, index: int, phase: str, done: int, total: Optional[int]) -> None:
        self.latest[index] = (phase, done, total)

    def snapshot(self) -> Dict[int, Any]:
        return dict(self.latest)


def _cancel(ray: Any, refs: List[Any], timeout: float = 60.0) -> None:
    """Cancels the tasks of ``refs`` and waits (up to ``timeout`` seconds) until they have
    ended. ``force``: a shard works in native code with the GIL released, which the
    KeyboardInterrupt of a plain cancel does not stop, so its worker process is killed (a
    cancelled task is not retried; one not started yet never starts)."""
    for ref in refs:
        try:
            ray.cancel(ref, force=True)
        except Exception:  # already finished, or its owner gone: nothing left to stop
            pass
    if refs:
        try:
            ray.wait(refs, num_returns=len(refs), timeout=timeout, fetch_local=False)
        except Exception:
            pass


def run(
    command: str,
    settings: Dict[str, Any],
    *,
    shards: int,
    out: PathLike,
    data: Optional[np.ndarray] = None,
    labels: Optional[np.ndarray] = None,
    preset: Optional[str] = None,
    address: Optional[str] = None,
    max_retries: int = 3,
    progress: Optional[Progress] = None,
    keep_shards: bool = False,
) -> Dict[str, Any]:
    """Runs ``command`` as ``shards`` Ray tasks into ``OUT/shards/shard-i`` and merges them into
    ``out``; returns the merged report. ``address``: the Ray cluster (``"auto"``, ``"ray://…"``,
    ``"host:port"``); None starts or joins a local one. The shards' folders are removed after
    the merge unless ``keep_shards``. ``data``/``labels``: arrays (sample's and augment's are
    saved into ``OUT/shards``, where their merge reads them); None: the settings' ``data``
    path, or the embedded digits."""
    import ray

    if not isinstance(shards, int) or shards < 1:
        raise ValueError(f"shards must be an integer of at least 1, got {shards!r}")
    out = Path(out)
    shard_root = out / "shards"
    stored_array = data is not None and command in ("sample", "augment")
    if stored_array:
        # Their merge loads the data again (to check the shards' hash of it, and augment's to
        # make the post-processed set and the quality metrics) from the settings' `data`: an
        # array reaches the shards and the merge as an NPY file in OUT/shards, which every node
        # reads, instead of in memory (where the merge would read the embedded digits).
        # An array the library refuses is refused here, before any file or task.
        pixels = _stored_pixels(_as_pixels(data))
        if labels is not None:
            labels = _stored_labels(_as_labels(labels, len(pixels)))
        shard_root.mkdir(parents=True, exist_ok=True)
        settings = dict(settings)
        settings["data"] = _save_npy(shard_root / "data.npy", pixels)
        if labels is not None:
            settings["labels"] = _save_npy(shard_root / "labels.npy", labels)
        data = labels = None
    shard_root.mkdir(parents=True, exist_ok=True)
    if not ray.is_initialized():
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
    gpus = 1 if ray.cluster_resources().get("GPU", 0) >= 1 else 0
    options = dict(
        num_cpus=1, num_gpus=gpus, max_retries=max_retries, retry_exceptions=RETRIED_ERRORS
    )
    task = ray.remote(**options)(_shard_task)
    reporter = ray.remote(num_cpus=0)(_Reporter).remote() if progress is not None else None
    data_ref = ray.put(data) if data is not None else None
    labels_ref = ray.put(labels) if labels is not None else None
    settings_json = _settings_json(settings)
    dirs = [os.fspath(shard_root / f"shard-{i}") for i in range(shards)]
    warm_up_dir = None
    if _needs_warm_up(command, settings):
        # The warm-up couples the chains: one task runs it on all of them, before the shards.
        warm_up = ray.remote(**options)(_warm_up_task)
        if progress is not None:
            progress("warm-up", 0, 1)
        warm_up_ref = warm_up.remote(
            command,
            settings_json,
            preset,
            data_ref,
            labels_ref,
            os.fspath(shard_root / "warm-up"),
        )
        try:
            warm_up_dir = ray.get(warm_up_ref)
        except BaseException:
            _cancel(ray, [warm_up_ref])
            raise
        if progress is not None:
            progress("warm-up", 1, 1)
    pending = [
        task.remote(
            command,
            settings_json,
            preset,
            data_ref,
            labels_ref,
            i,
            shards,
            dirs[i],
            reporter,
            warm_up_dir,
        )
        for i in range(shards)
    ]
    finished = 0
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1, timeout=0.5)
            for ref in done:
                ray.get(ref)  # raises the shard's error once its retries are spent
                finished += 1
            if progress is not None:
                snapshot = ray.get(reporter.snapshot.remote())
                for index, (phase, rows, total) in sorted(snapshot.items()):
                    progress(f"shard {index}/{shards}: {phase}", rows, total)
                progress("shards", finished, shards)
    except BaseException:
        # A shard failed for good (or the driver was interrupted, or progress raised): the
        # others are stopped before the error reaches the caller, so none keeps working and
        # writing into OUT/shards after it.
        _cancel(ray, pending)
        raise
    # Like a single run, the merge replaces an earlier run's files in ``out`` only with force.
    force = bool(settings.get("force", False))
    # Where the shards read an array from OUT/shards/data.npy and that copy is removed, the
    # report names the data as a single run on the array does.
    from_array = stored_array and not keep_shards
    report = json.loads(_rmld.merge_shards(os.fspath(out), dirs, force, from_array))
    if not keep_shards:
        shutil.rmtree(shard_root, ignore_errors=True)
    return report


def encode(
    images: Any = None,
    *,
    shards: int,
    out: PathLike,
    address: Optional[str] = None,
    max_retries: int = 3,
    progress: Optional[Progress] = None,
    keep_shards: bool = False,
    **settings: Any,
) -> EncodeResult:
    """``rmld.encode`` split into ``shards`` Ray tasks and merged into ``out`` (a folder every
    node can read); the result equals ``rmld.encode`` with the same settings."""
    pixels, _ = _split_data(images, None, settings)
    report = run(
        "encode",
        settings,
        shards=shards,
        out=out,
        data=pixels,
        address=address,
        max_retries=max_retries,
        progress=progress,
        keep_shards=keep_shards,
    )
    codes, reconstructions, dictionary = _read_encoding(Path(out))
    return EncodeResult(
        codes=codes, reconstructions=reconstructions, dictionary=dictionary, report=report
    )


def sample(
    data: Any = None,
    *,
    shards: int,
    out: PathLike,
    preset: Optional[str] = None,
    address: Optional[str] = None,
    max_retries: int = 3,
    progress: Optional[Progress] = None,
    keep_shards: bool = False,
    **settings: Any,
) -> SampleResult:
    """``rmld.sample`` split into ``shards`` Ray tasks (each a contiguous part of the chains) and
    merged into ``out`` (a folder every node can read): codes, images and report equal
    ``rmld.sample``'s with the same settings (the report but for timings and memory).
    ``log_alpha`` and ``energy`` are None: the per-draw trace stays in the shards' files. An
    array ``data`` is saved into ``OUT/shards`` for the shards and the merge to read (the
    report's ``dataset.source`` then says ``<numpy array>``, or with ``keep_shards`` names
    that file)."""
    pixels, _ = _split_data(data, None, settings)
    report = run(
        "sample",
        settings,
        shards=shards,
        out=out,
        data=pixels,
        preset=preset,
        address=address,
        max_retries=max_retries,
        progress=progress,
        keep_shards=keep_shards,
    )
    codes, images = _read_draws(Path(out), report)
    stats = _read_sample_stats(Path(out), codes.shape[:2])
    return SampleResult(codes=codes, images=images, report=report, sample_stats=stats)


def augment(
    images: Any = None,
    labels: Any = None,
    *,
    shards: int,
    out: PathLike,
    preset: Optional[str] = None,
    address: Optional[str] = None,
    max_retries: int = 3,
    progress: Optional[Progress] = None,
    keep_shards: bool = False,
    arrays: bool = True,
    **settings: Any,
) -> Any:
    """``rmld.augment`` split into ``shards`` Ray tasks (each a contiguous part of the chains,
    classes in order, and of the originals' codes) and merged into ``out``: every file equals
    the single run's (``rmld augment`` with the same settings), the report but for timings.

    ``images``/``labels``: None (the embedded digits), paths every node can read (a dataset
    folder or file, as ``rmld augment --data``/``--labels`` take), or arrays (as
    ``rmld.augment`` takes them), saved into ``OUT/shards`` for the shards and the merge to
    read (the report's ``dataset.source`` then says ``<numpy array>``, or with ``keep_shards``
    names that file). Returns an ``rmld.AugmentResult``
    read from ``out`` (``arrays=True``, for runs that fit in memory) or the ``out`` path."""
    if not isinstance(images, (str, os.PathLike)) and (images is None) != (labels is None):
        raise ValueError("give both images and labels, or neither (the embedded digits)")
    pixels, label_values = _split_data(images, labels, settings)
    report = run(
        "augment",
        settings,
        shards=shards,
        out=out,
        data=pixels,
        labels=label_values,
        preset=preset,
        address=address,
        max_retries=max_retries,
        progress=progress,
        keep_shards=keep_shards,
    )
    out = Path(out)
    if not arrays:
        return out
    from . import AugmentResult, _read_idx, _read_idx_if

    codes = out / "generated-codes.npy"
    return AugmentResult(
        images=_read_idx(out / "generated-images-idx3-ubyte.gz"),
        labels=np.load(out / "generated-labels.npy").astype(np.int64),
        codes=np.load(codes) if codes.exists() else np.empty(0, dtype=np.float32),
        augmented_images=_read_idx_if(out / "train-images-idx3-ubyte.gz"),
        augmented_labels=_read_idx_if(out / "train-labels-idx1-ubyte.gz").astype(np.int64),
        report=report,
        notices=[],
        interrupted=False,
        summary=[],
    )
