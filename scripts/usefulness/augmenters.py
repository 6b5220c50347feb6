"""The augmentations the benchmark compares: none, imbalanced-learn's oversamplers, classical
virtual examples (1-pixel shifts, small rotations, elastic distortions) and rmld.

Every augmenter is `f(x, y, counts, seed) -> (x_new, y_new)`: it returns only the NEW images,
`counts[c]` of class c, from the training images `x` (n, h, w) float32 in [0, 1] with labels
`y`. A composite ("rmld+shifts") is the union of its parts' outputs, drawn once and reused.
"""

from __future__ import annotations

import os
import tempfile
from typing import Callable, Dict, Tuple

import numpy as np
from scipy import ndimage

Generated = Tuple[np.ndarray, np.ndarray]
Augmenter = Callable[[np.ndarray, np.ndarray, Dict[int, int], int], Generated]


def _empty(x: np.ndarray) -> Generated:
    return np.zeros((0,) + x.shape[1:], np.float32), np.zeros(0, np.int64)


def _pairs(n_images: int, n_transforms: int, n_new: int, rng) -> Tuple[np.ndarray, np.ndarray]:
    """(image index, transform index) for n_new outputs: every (image, transform) pair once, in a
    random order, before any repeats; so n_new = n_images * n_transforms is each pair once."""
    grid = np.arange(n_images * n_transforms)
    picks = []
    while sum(len(p) for p in picks) < n_new:
        picks.append(rng.permutation(grid))
    order = np.concatenate(picks)[:n_new] if picks else np.zeros(0, int)
    return order // n_transforms, order % n_transforms


def shift(image: np.ndarray, dy: int, dx: int) -> np.ndarray:
    """The image moved by (dy, dx) pixels, zeros shifted in."""
    out = np.zeros_like(image)
    h, w = image.shape
    out[max(dy, 0):h + min(dy, 0), max(dx, 0):w + min(dx, 0)] = \
        image[max(-dy, 0):h - max(dy, 0), max(-dx, 0):w - max(dx, 0)]
    return out


SHIFTS = ((0, 1), (0, -1), (1, 0), (-1, 0))


def shifts(x, y, counts, seed) -> Generated:
    """1-pixel shifts (right, left, down, up): each (image, shift) pair once before repeats."""
    rng = np.random.default_rng(seed)
    out_x, out_y = [], []
    for c, n in sorted(counts.items()):
        if n <= 0:
            continue
        rows = np.flatnonzero(y == c)
        images, which = _pairs(len(rows), len(SHIFTS), n, rng)
        out_x += [shift(x[rows[i]], *SHIFTS[t]) for i, t in zip(images, which)]
        out_y += [c] * n
    return (np.stack(out_x).astype(np.float32), np.array(out_y, np.int64)) if out_x else _empty(x)


def _per_image(transform: Callable) -> Augmenter:
    """An augmenter applying `transform(image, rng)` to images drawn in turn from each class."""

    def augment(x, y, counts, seed) -> Generated:
        rng = np.random.default_rng(seed)
        out_x, out_y = [], []
        for c, n in sorted(counts.items()):
            if n <= 0:
                continue
            rows = np.flatnonzero(y == c)
            images, _ = _pairs(len(rows), 1, n, rng)
            out_x += [np.clip(transform(x[rows[i]], rng), 0, 1) for i in images]
            out_y += [c] * n
        return (np.stack(out_x).astype(np.float32), np.array(out_y, np.int64)) if out_x else _empty(x)

    return augment


def _rotate(image, rng, degrees=15.0):
    return ndimage.rotate(image, rng.uniform(-degrees, degrees), reshape=False, order=1)


def _elastic(image, rng, alpha=34.0, sigma=4.0):
    """Simard et al. (2003): a random displacement field smoothed by a Gaussian of `sigma` px
    and scaled by `alpha`, both given for 28 px and scaled with the image side."""
    side = image.shape[0] / 28.0
    fields = [ndimage.gaussian_filter(rng.uniform(-1, 1, image.shape), sigma * side) * alpha * side
              for _ in range(2)]
    rows, cols = np.meshgrid(np.arange(image.shape[0]), np.arange(image.shape[1]), indexing="ij")
    return ndimage.map_coordinates(image, [rows + fields[0], cols + fields[1]], order=1)


rotations = _per_image(_rotate)
elastic = _per_image(_elastic)


def _imblearn(kind: str) -> Augmenter:
    def augment(x, y, counts, seed) -> Generated:
        from imblearn import over_sampling

        if not any(n > 0 for n in counts.values()):
            return _empty(x)
        present = {int(c): int(np.sum(y == c)) for c in np.unique(y)}
        target = {c: present[c] + counts.get(c, 0) for c in present}
        flat = x.reshape(len(x), -1)
        smallest = min(present.values())
        if kind == "ros":
            sampler = over_sampling.RandomOverSampler(sampling_strategy=target, random_state=seed)
        elif kind == "smote":
            sampler = over_sampling.SMOTE(sampling_strategy=target, random_state=seed,
                                          k_neighbors=min(5, smallest - 1))
        elif kind == "borderline":
            sampler = over_sampling.BorderlineSMOTE(sampling_strategy=target, random_state=seed,
                                                    k_neighbors=min(5, smallest - 1))
        elif kind == "adasyn":
            sampler = over_sampling.ADASYN(sampling_strategy=target, random_state=seed,
                                           n_neighbors=min(5, smallest - 1))
        else:
            raise ValueError(kind)
        xr, yr = sampler.fit_resample(flat, y)
        new_x, new_y = xr[len(x):], yr[len(x):]
        return new_x.reshape((-1,) + x.shape[1:]).astype(np.float32), new_y.astype(np.int64)

    return augment


def rmld_rust(**settings) -> Augmenter:
    """rmld's sampler through the Python package: `RMLDAugmenter` with the per-class counts."""

    def augment(x, y, counts, seed) -> Generated:
        import sys

        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
        from rmld.sklearn import generate_per_class

        backend = os.environ.get("RMLD_BACKEND", "cpu")
        images, labels = generate_per_class(x, y, counts, seed=seed, backend=backend,
                                            settings=settings)
        return images.astype(np.float32) / 255.0, labels.astype(np.int64)

    return augment


BASELINES: Dict[str, Augmenter] = {
    "ros": _imblearn("ros"),
    "smote": _imblearn("smote"),
    "borderline-smote": _imblearn("borderline"),
    "adasyn": _imblearn("adasyn"),
    "shifts": shifts,
    "rotations": rotations,
    "elastic": elastic,
}


def rmld_deform(eps: float = 0.05, deform_scale: float = 1.0, drop=(), anchor_shift=False,
                **settings) -> Augmenter:
    """rmld's sampler today (the quality preset's tangent target, HMC) with the neighbour span
    replaced by transformation tangents, built from the outside: every image a of a class comes
    with the points a ± eps·τ_t·T_t(a) (prototypes.transformation_tangents), so its k = 2·t
    nearest rows are those and its span is the tangents'; tangent_scale √(k/2)/eps gives each
    tangent coefficient the standard deviation τ_t. The data scaling is read from a probe run
    on the real images (η, σ², smoothing) and switched off for the run on the padded set.
    `anchor_shift`: the rows are each image's four one-pixel shifts (side/28 px), each with its
    own tangent points, instead of the image (the prototypes' `anchor_shift`)."""

    def augment(x, y, counts, seed) -> Generated:
        import sys

        import prototypes

        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
        import rmld

        backend = os.environ.get("RMLD_BACKEND", "cpu")
        wanted = [c for c, n in sorted(counts.items()) if n > 0]
        if not wanted:
            return _empty(x)
        codes, numbered = np.unique(y, return_inverse=True)
        probe = rmld.augment(x, numbered, backend=backend, seed=seed, ratio=float(len(x)),
                             no_quality=True, no_original_codes=True)
        eta = probe.report["settings"]["dynamics"]["eta"]
        sigma2 = probe.report["sigma2"]
        smooth = probe.report["postprocess"]["smooth"]
        side = x.shape[-1]
        stds = prototypes._tangent_stds(side, {k: v * deform_scale for k, v in prototypes.DEFORM.items()
                                                if k not in drop})
        out_x, out_y = [], []
        for c in wanted:
            images = x[y == c]
            if anchor_shift:
                images = np.stack([prototypes.shift_image(image, move)
                                   for image in images for move in SHIFTS])
            rows = [images]
            for image in images:
                fields = prototypes.transformation_tangents(image, max(0.5, 0.9 * side / 28.0))
                for name, std in stds.items():
                    step = eps * std * fields[name]
                    rows.append(np.stack([image + step, image - step]))
            padded = np.concatenate(rows).astype(np.float32)
            k = 2 * len(stds)
            result = rmld.augment(
                padded, np.zeros(len(padded), np.int64), backend=backend, seed=seed,
                ratio=len(padded) / counts[c], no_quality=True, no_original_codes=True,
                tangent_k=k, tangent_scale=float(np.sqrt(k / 2) / eps), eta=eta, sigma2=sigma2,
                smooth=smooth, fit_scale_to_data=dict(eta=False, sigma2=False, smooth=False,
                                                      tangent_scale=False, tangent_k=False),
                **settings)
            out_x.append(result.images.astype(np.float32) / 255.0)
            out_y.append(np.full(len(result.images), c, np.int64))
        return np.concatenate(out_x), np.concatenate(out_y)

    return augment
