"""Readers for the files `rmld augment` writes and the MNIST-style datasets it reads.

IDX (http://yann.lecun.com/exdb/mnist/, big-endian): two zero bytes, a type byte (0x08 = uint8),
a byte with the number of dimensions, one big-endian uint32 per dimension, then the data.
Files may be gzip-compressed (recognised by their content, not their name) or raw.
NPY files are read with numpy.load(allow_pickle=False).

Every error is an `RmldInputError` whose message starts with the offending file's path.
"""

from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path

import numpy as np

GZIP_MAGIC = b"\x1f\x8b"
IDX_UBYTE = 0x08


class RmldInputError(Exception):
    """A file is missing, unreadable or inconsistent; the message names the file."""


def _fail(path, message):
    raise RmldInputError(f"{path}: {message}")


def _read_bytes(path: Path) -> bytes:
    path = Path(path)
    if not path.is_file():
        _fail(path, "no such file")
    with open(path, "rb") as f:
        head = f.read(2)
    try:
        if head == GZIP_MAGIC:
            with gzip.open(path, "rb") as f:
                return f.read()
        return path.read_bytes()
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        _fail(path, f"cannot be read ({e})")


def read_idx(path, ndim: int | None = None) -> np.ndarray:
    """An IDX file of unsigned bytes as a uint8 array of its stored shape.

    `ndim`, when given, is the number of dimensions the file must have (1 labels, 3 images).
    """
    path = Path(path)
    data = _read_bytes(path)
    if len(data) < 4:
        _fail(path, f"is {len(data)} bytes long, too short for an IDX header")
    zero, dtype, nd = struct.unpack(">HBB", data[:4])
    if zero != 0:
        _fail(path, f"is not an IDX file (magic {data[:4].hex()}, expected 0000080N)")
    if dtype != IDX_UBYTE:
        _fail(path, f"holds IDX type 0x{dtype:02x}; only unsigned bytes (0x08) are supported")
    if nd == 0:
        _fail(path, "IDX header declares 0 dimensions")
    if ndim is not None and nd != ndim:
        what = {1: "labels (N)", 3: "images (N, rows, columns)"}.get(ndim, f"{ndim} dimensions")
        _fail(path, f"has {nd} dimensions (magic 0x{data[:4].hex()}), expected {what}")
    header = 4 + 4 * nd
    if len(data) < header:
        _fail(path, f"is truncated inside its header ({len(data)} bytes, header {header})")
    dims = struct.unpack(f">{nd}I", data[4:header])
    expected = int(np.prod(dims, dtype=np.int64))
    got = len(data) - header
    if got != expected:
        shape = " x ".join(str(d) for d in dims)
        more = "truncated" if got < expected else "has trailing bytes"
        _fail(path, f"{more}: header says {shape} = {expected} bytes of data, found {got}")
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(dims)


def read_idx_images(path) -> np.ndarray:
    """IDX images as uint8 (N, rows*columns)."""
    images = read_idx_pictures(path)
    return images.reshape(images.shape[0], -1)


def read_idx_pictures(path) -> np.ndarray:
    """IDX images as uint8 (N, rows, columns)."""
    images = read_idx(path, ndim=3)
    if images.shape[1] == 0 or images.shape[2] == 0:
        _fail(path, f"has images of {images.shape[1]} x {images.shape[2]} pixels")
    return images


def read_idx_labels(path) -> np.ndarray:
    """IDX labels as int64 (N,)."""
    return read_idx(path, ndim=1).astype(np.int64)


def read_npy(path, ndim: int | None = None) -> np.ndarray:
    """An NPY array (no pickles); `ndim`, when given, is required."""
    path = Path(path)
    if not path.is_file():
        _fail(path, "no such file")
    try:
        array = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        _fail(path, f"is not a readable NPY file ({e})")
    if not isinstance(array, np.ndarray):
        _fail(path, "is an NPZ archive, expected a single NPY array")
    if ndim is not None and array.ndim != ndim:
        _fail(path, f"has shape {array.shape}, expected {ndim} dimension(s)")
    return array


def read_npy_codes(path) -> np.ndarray:
    """Spectral codes: a finite float (N, p) array."""
    codes = read_npy(path, ndim=2)
    if codes.dtype.kind != "f":
        _fail(path, f"holds {codes.dtype}, expected float codes")
    if not np.isfinite(codes).all():
        bad = int(np.count_nonzero(~np.isfinite(codes).all(axis=1)))
        _fail(path, f"has {bad} row(s) with NaN or infinite values")
    return codes


def read_npy_labels(path) -> np.ndarray:
    """Integer labels (N,) as int64."""
    labels = read_npy(path, ndim=1)
    if labels.dtype.kind not in "iu":
        _fail(path, f"holds {labels.dtype}, expected integer labels")
    return labels.astype(np.int64)


def read_report(path) -> dict:
    path = Path(path)
    if not path.is_file():
        _fail(path, "no such file")
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        _fail(path, f"is not readable JSON ({e})")
    if not isinstance(report, dict):
        _fail(path, "is not a JSON object")
    return report


def report_int(report: dict, key: str, path, required: bool = True) -> int | None:
    value = report.get(key)
    if value is None:
        if required:
            _fail(path, f'has no "{key}"')
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        _fail(path, f'"{key}" is {value!r}, expected a non-negative integer')
    return value


def find_split(directory, split: str, kind: str) -> Path:
    """A dataset folder's IDX file for `split` ("train" or "test") and `kind` ("images" or
    "labels"): the standard MNIST names (train-…, t10k-…), raw or gzip'd, else one EMNIST-style
    `<name>-<split>-<kind>-idxN-ubyte[.gz]`."""
    directory = Path(directory)
    if not directory.is_dir():
        _fail(directory, "is not a folder")
    suffix = "idx3-ubyte" if kind == "images" else "idx1-ubyte"
    prefixes = ["train"] if split == "train" else ["t10k", "test"]
    tried = []
    for prefix in prefixes:
        for ext in (".gz", ""):
            candidate = directory / f"{prefix}-{kind}-{suffix}{ext}"
            tried.append(candidate.name)
            if candidate.is_file():
                return candidate
    for ext in (".gz", ""):
        matches = sorted(directory.glob(f"*-{split}-{kind}-{suffix}{ext}"))
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            names = ", ".join(m.name for m in matches)
            _fail(directory, f"has several {split} {kind} files ({names})")
    tried.append(f"*-{split}-{kind}-{suffix}[.gz]")
    _fail(directory, f"has no {split} {kind} file (looked for {', '.join(tried)})")
