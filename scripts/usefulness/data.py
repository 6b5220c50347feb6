"""The benchmark's datasets and their cuts: few labels per class, imbalanced classes, a test set.

Every image is float32 in [0, 1], shape (h, w). A cut is a pure function of (dataset, regime,
seed): the test set is drawn once per dataset (numpy seed 12345, disjoint from every training
cut) so the seeds vary only the training images, the augmenters and the classifiers.
"""

from __future__ import annotations

import gzip
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional, Sequence

import numpy as np

DATASETS = ("mnist", "fashion-mnist", "quickdraw", "digits-8x8")
TEST_SEED = 12345


def default_root() -> Path:
    """Where the datasets are read from: `$RMLD_DATASETS`, else `../shared/datasets` beside
    the repository."""
    return Path(os.environ.get("RMLD_DATASETS",
                               Path(__file__).resolve().parents[3] / "shared" / "datasets"))


def read_idx(path: Path) -> np.ndarray:
    raw = gzip.open(path).read()
    dims = raw[3]
    shape = struct.unpack(">" + "I" * dims, raw[4 : 4 + 4 * dims])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


@dataclass
class Pools:
    """A dataset split into the images training cuts come from and a fixed test set."""

    name: str
    train_x: np.ndarray  # (n, h, w) float32 in [0, 1]
    train_y: np.ndarray  # (n,) int64
    test_x: np.ndarray
    test_y: np.ndarray


def _load_raw(name: str, root: Path):
    """(train images, train labels, test images or None, test labels or None), uint8 0..255."""
    if name in ("mnist", "fashion-mnist"):
        d = root / name
        return (read_idx(d / "train-images-idx3-ubyte.gz"), read_idx(d / "train-labels-idx1-ubyte.gz"),
                read_idx(d / "t10k-images-idx3-ubyte.gz"), read_idx(d / "t10k-labels-idx1-ubyte.gz"))
    if name == "quickdraw":
        files = sorted((root / "quickdraw").glob("*.npy"))
        if not files:
            raise FileNotFoundError(f"no Quick Draw .npy files under {root / 'quickdraw'}")
        images = [np.load(f).reshape(-1, 28, 28) for f in files]
        labels = [np.full(len(x), k, dtype=np.uint8) for k, x in enumerate(images)]
        return np.concatenate(images), np.concatenate(labels), None, None
    if name == "digits-8x8":
        rows = np.loadtxt(gzip.open(root / "optdigits/digits.csv.gz"), delimiter=",")
        images = np.round(rows[:, :-1] * (255.0 / 16.0)).astype(np.uint8).reshape(-1, 8, 8)
        return images, rows[:, -1].astype(np.uint8), None, None
    raise ValueError(f"unknown dataset {name!r}; the datasets are {', '.join(DATASETS)}")


def load_pools(name: str, root: Path, test_per_class: int) -> Pools:
    """The dataset's pools with a balanced test set of `test_per_class` images per class (from the
    official test split where there is one, else held out of the one split, then at most half of
    its smallest class)."""
    train_x, train_y, test_x, test_y = _load_raw(name, root)
    rng = np.random.default_rng(TEST_SEED)
    if test_x is None:
        # At most half of the smallest class (the 8x8 digits have about 180 per class).
        per_class = min(test_per_class, int(np.bincount(train_y).min()) // 2)
        picked = balanced_pick(train_y, {c: per_class for c in np.unique(train_y)}, rng)
        keep = np.ones(len(train_y), bool)
        keep[picked] = False
        test_x, test_y = train_x[picked], train_y[picked]
        train_x, train_y = train_x[keep], train_y[keep]
    else:
        picked = balanced_pick(test_y, {c: test_per_class for c in np.unique(test_y)}, rng)
        test_x, test_y = test_x[picked], test_y[picked]
    scale = np.float32(1.0 / 255.0)
    return Pools(name, train_x.astype(np.float32) * scale, train_y.astype(np.int64),
                 test_x.astype(np.float32) * scale, test_y.astype(np.int64))


def resized(pools: Pools, side: int) -> Pools:
    """The pools with every image, training and test, resampled to side × side (bilinear,
    `scipy.ndimage.zoom`), named `<name>@<side>`: the benchmark at other image sizes."""
    from scipy import ndimage

    if side < 3:
        raise ValueError(f"--side {side}: expected images of at least 3 x 3 pixels")

    def zoom(x):
        factors = (1, side / x.shape[1], side / x.shape[2])
        return np.clip(ndimage.zoom(x, factors, order=1, grid_mode=True, mode="nearest"), 0, 1)

    return Pools(f"{pools.name}@{side}", zoom(pools.train_x), pools.train_y,
                 zoom(pools.test_x), pools.test_y)


def balanced_pick(labels: np.ndarray, counts: Dict[int, int], rng) -> np.ndarray:
    """Indices of `counts[c]` images of each class c, drawn without replacement."""
    out = []
    for c, n in sorted(counts.items()):
        rows = np.flatnonzero(labels == c)
        if n > len(rows):
            raise ValueError(f"class {c} has {len(rows)} images, fewer than the {n} asked")
        out.append(rng.choice(rows, size=n, replace=False))
    return np.sort(np.concatenate(out))


def class_counts(pools: Pools, per_class: Optional[int], minority: Sequence[int] = (),
                 minority_count: int = 0) -> Dict[int, int]:
    """Per-class training counts: `per_class` each (capped at what the pool holds), the classes
    in `minority` at `minority_count`."""
    counts = {}
    for c in np.unique(pools.train_y):
        available = int(np.sum(pools.train_y == c))
        n = min(per_class, available)
        counts[int(c)] = min(minority_count, available) if int(c) in minority else n
    return counts


def training_cut(pools: Pools, counts: Dict[int, int], seed: int):
    """(x, y) of a training cut with `counts` images per class, a function of the seed."""
    rng = np.random.default_rng(seed)
    picked = balanced_pick(pools.train_y, counts, rng)
    return pools.train_x[picked], pools.train_y[picked]


def minority_classes(pools: Pools) -> list:
    """The classes made rare in the imbalanced regime: the upper half of the labels (5..9 of
    ten; the last of three)."""
    classes = sorted(int(c) for c in np.unique(pools.train_y))
    return classes[len(classes) - max(1, len(classes) // 2):] if len(classes) > 3 else classes[-1:]
