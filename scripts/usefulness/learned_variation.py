"""Variation taken from the data rather than fixed: registration morphs between class neighbours,
the set's own ink-box convention, and aspect stretches (issue 41's Quick Draw study).

Every function here is an augmenter `f(x, y, counts, seed) -> (x_new, y_new)` (augmenters.py)
or builds one. prototypes.py registers them as `p-morph`, `p-box`, `p-stretch…`.

- **Morphs** (Hauberg et al. 2016, "Dreaming more data"): each new image is an original warped a
  random fraction of the way onto one of its k nearest same-class images, the warp a smooth
  displacement on a coarse g × g grid fitted by Gauss-Newton on blurred images.
- **The box convention.** Quick Draw's bitmaps all have their ink box centred and its longer side
  26 px; MNIST's longer side is 20 px; Fashion-MNIST's items fill the frame. Where every training
  image shares the box's longer side (or centre) to within half a pixel, `normalise` rescales
  (recentres) each new image to it, as the set's own preprocessing would.
- **Stretches:** an original stretched along one axis and squeezed along the other by a
  log-uniform factor, optionally turned, then normalised to the box convention.
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np
from scipy import ndimage

INK = 0.1  # a pixel above this is ink when measuring an image's box
TOLERANCE_PX = 0.5  # a box quantity is the set's convention when its sd is below this


def ink_boxes(x: np.ndarray):
    """(top, bottom, left, right, has_ink) of each image's ink box, inclusive pixel indices."""
    ink = x > INK
    rows, cols = ink.any(2), ink.any(1)

    def ends(m):
        return m.argmax(1), m.shape[1] - 1 - m[:, ::-1].argmax(1)

    (top, bottom), (left, right) = ends(rows), ends(cols)
    return top, bottom, left, right, rows.any(1)


Convention = Tuple[Optional[float], Optional[float], Optional[float]]


def box_convention(x: np.ndarray) -> Convention:
    """(longer side, centre row, centre column) where the training images share it, else None."""
    top, bottom, left, right, ok = ink_boxes(x)
    longer = np.maximum(bottom - top + 1, right - left + 1)[ok]
    rows, cols = ((top + bottom) / 2)[ok], ((left + right) / 2)[ok]
    return tuple(float(np.median(v)) if len(v) and v.std() < TOLERANCE_PX else None
                 for v in (longer, rows, cols))


def normalise(images: np.ndarray, convention: Convention) -> np.ndarray:
    """Each image rescaled about its box centre to the convention's longer side and moved to its
    centre, where the convention has them (bilinear)."""
    longer, centre_row, centre_col = convention
    top, bottom, left, right, ok = ink_boxes(images)
    out = images.copy()
    for i in np.flatnonzero(ok):
        side = max(bottom[i] - top[i] + 1, right[i] - left[i] + 1)
        s = longer / side if longer is not None else 1.0
        src = np.array([(top[i] + bottom[i]) / 2, (left[i] + right[i]) / 2])
        dst = np.array([centre_row if centre_row is not None else src[0],
                        centre_col if centre_col is not None else src[1]])
        if s != 1.0 or not np.array_equal(src, dst):
            out[i] = ndimage.affine_transform(images[i], [1 / s, 1 / s], offset=src - dst / s,
                                              order=1, mode="constant")
    return np.clip(out, 0, 1).astype(np.float32)


def boxed(inner):
    """`inner`'s new images normalised to the training images' box convention."""

    def augment(x, y, counts, seed):
        gx, gy = inner(x, y, counts, seed)
        return normalise(gx, box_convention(x)), gy

    return augment


def _anchors(idx: np.ndarray, n: int, rng) -> np.ndarray:
    """n anchors from idx: every image once, in a random order, before any repeats."""
    rounds = n // max(len(idx), 1) + 1
    return np.concatenate([rng.permutation(idx) for _ in range(rounds)])[:n]


def stretch_image(image: np.ndarray, factor: float, turn: float = 0.0) -> np.ndarray:
    """The image stretched by `factor` along its rows' direction (down) and squeezed by
    1/factor across, then turned by `turn` radians, about its centre (bilinear, zeros outside)."""
    centre = np.full(2, (image.shape[0] - 1) / 2)
    rotation = np.array([[np.cos(turn), -np.sin(turn)], [np.sin(turn), np.cos(turn)]])
    inverse = np.linalg.inv(rotation @ np.diag([factor, 1 / factor]))
    return ndimage.affine_transform(image, inverse, offset=centre - inverse @ centre, order=1)


def stretched(inner, max_factor: float = 1.5):
    """`inner`'s new images each stretched as `stretches` does, then box-normalised."""

    def augment(x, y, counts, seed):
        gx, gy = inner(x, y, counts, seed)
        rng = np.random.default_rng(seed + 53)
        logs = rng.uniform(-np.log(max_factor), np.log(max_factor), len(gx))
        out = np.stack([stretch_image(g, np.exp(f)) for g, f in zip(gx, logs)]) if len(gx) else gx
        return normalise(np.clip(out, 0, 1).astype(np.float32), box_convention(x)), gy

    return augment


def stretches(max_factor: float = 1.5, turn_deg: float = 0.0, box: bool = True):
    """New images: originals stretched by f and squeezed by 1/f (log f uniform within
    ±log max_factor, rows against columns), turned by up to turn_deg, then (box) normalised."""

    def augment(x, y, counts, seed):
        rng = np.random.default_rng(seed + 31)
        out_x, out_y = [], []
        for label, n in counts.items():
            for a in _anchors(np.flatnonzero(y == label), n, rng):
                f = np.exp(rng.uniform(-np.log(max_factor), np.log(max_factor)))
                th = np.deg2rad(rng.uniform(-turn_deg, turn_deg))
                out_x.append(stretch_image(x[a], f, th))
                out_y.append(label)
        gx = np.clip(np.array(out_x, np.float32).reshape((-1,) + x.shape[1:]), 0, 1)
        return (normalise(gx, box_convention(x)) if box else gx), np.array(out_y, np.int64)

    return augment


def label_agreement(images: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    """The share of `images` (row i made from x[i]) whose nearest image of x, x[i] left out,
    has y[i]'s label: a 1-nearest-neighbour judge of whether a transformation keeps labels."""
    flat = x.reshape(len(x), -1).astype(np.float64)
    rows = images.reshape(len(images), -1).astype(np.float64)
    d = (rows ** 2).sum(1)[:, None] - 2 * rows @ flat.T + (flat ** 2).sum(1)[None]
    np.fill_diagonal(d, np.inf)
    return float((y[d.argmin(1)] == y).mean())


def stretch_agreement(x: np.ndarray, y: np.ndarray, seed: int, low: float = 1.2,
                      high: float = 1.5) -> float:
    """How well box-normalised aspect stretches (a factor log-uniform in [low, high], either
    way) keep labels, as a share of the originals' own: `label_agreement` of the stretched
    set over the originals' leave-one-out 1-NN accuracy. Near 1 where a class's drawings vary
    in aspect as the stretches do (Quick Draw), lower where a stretch makes another class."""
    rng = np.random.default_rng(seed)
    factors = np.exp(rng.uniform(np.log(low), np.log(high), len(x)) * rng.choice([-1, 1], len(x)))
    out = np.stack([stretch_image(image, f) for image, f in zip(x, factors)])
    out = normalise(np.clip(out, 0, 1).astype(np.float32), box_convention(x))
    return label_agreement(out, x, y) / max(label_agreement(x, x, y), 1e-12)


def _grid_basis(side: int, grid: int) -> np.ndarray:
    """(side², grid²): each coarse control point's bilinear footprint on the image."""
    cols = []
    for i in range(grid * grid):
        e = np.zeros((grid, grid))
        e.flat[i] = 1.0
        cols.append(ndimage.zoom(e, side / grid, order=1, mode="nearest", grid_mode=True).ravel())
    return np.stack(cols, 1)


def _warp(image, dy, dx):
    side = image.shape[0]
    rows, cols = np.mgrid[0:side, 0:side].astype(np.float64)
    return ndimage.map_coordinates(image, [rows + dy, cols + dx], order=1, mode="constant")


def register(a, b, basis, damping=0.02, blurs=(2.0, 1.0), steps=8, max_px=6.0):
    """Displacement (dy, dx) with a(p + d(p)) ≈ b(p): damped Gauss-Newton on blurred images,
    coarse blur first."""
    side, m = a.shape[0], basis.shape[1]
    p = np.zeros(2 * m)
    for blur in blurs:
        sa, sb = ndimage.gaussian_filter(a, blur), ndimage.gaussian_filter(b, blur)
        gy, gx = np.gradient(sa)
        for _ in range(steps):
            dy, dx = (basis @ p[:m]).reshape(side, side), (basis @ p[m:]).reshape(side, side)
            r = (_warp(sa, dy, dx) - sb).ravel()
            jac = np.concatenate([_warp(gy, dy, dx).ravel()[:, None] * basis,
                                  _warp(gx, dy, dx).ravel()[:, None] * basis], 1)
            step = np.linalg.solve(jac.T @ jac + damping * np.eye(2 * m), jac.T @ r + damping * p)
            p = np.clip(p - step, -max_px, max_px)
    return (basis @ p[:m]).reshape(side, side), (basis @ p[m:]).reshape(side, side)


def morphs(k: int = 5, grid: int = 4, fraction=(0.2, 0.8), damping: float = 0.02):
    """New images: each original warped a uniform `fraction` of the way onto one of its k nearest
    same-class images."""

    def augment(x, y, counts, seed):
        rng = np.random.default_rng(seed + 7919)
        basis = _grid_basis(x.shape[1], grid)
        out_x, out_y = [], []
        for label, n in counts.items():
            idx = np.flatnonzero(y == label)
            if n <= 0 or len(idx) < 2:
                continue
            flat = x[idx].reshape(len(idx), -1).astype(np.float64)
            d2 = ((flat[:, None] - flat[None]) ** 2).sum(-1)
            np.fill_diagonal(d2, np.inf)
            near = np.argsort(d2, 1)[:, :min(k, len(idx) - 1)]
            for a in _anchors(np.arange(len(idx)), n, rng):
                b = near[a, rng.integers(near.shape[1])]
                start = x[idx[a]].astype(np.float64)
                dy, dx = register(start, x[idx[b]].astype(np.float64), basis, damping)
                t = rng.uniform(*fraction)
                out_x.append(np.clip(_warp(start, t * dy, t * dx), 0, 1))
                out_y.append(label)
        return (np.array(out_x, np.float32).reshape((-1,) + x.shape[1:]),
                np.array(out_y, np.int64))

    return augment


def main(argv=None) -> None:
    """Per dataset and seed, `stretch_agreement` of a few-label cut, beside the same measure
    for the four 1-pixel shifts (image i moved as i % 4), the benchmark's classical peer."""
    import argparse

    import augmenters
    import data

    p = argparse.ArgumentParser(description=main.__doc__.split(",")[0])
    p.add_argument("--datasets", nargs="+", default=list(data.DATASETS), choices=data.DATASETS)
    p.add_argument("--per-class", type=int, default=50)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--first-seed", type=int, default=0)
    args = p.parse_args(argv)
    root = data.default_root()
    moves = [(0, 1), (0, -1), (1, 0), (-1, 0)]
    for name in args.datasets:
        pools = data.load_pools(name, root, 300)
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            x, y = data.training_cut(pools, data.class_counts(pools, args.per_class), seed)
            moved = np.stack([augmenters.shift(image, *moves[i % 4]) for i, image in enumerate(x)])
            shifted = label_agreement(moved, x, y) / max(label_agreement(x, x, y), 1e-12)
            print(f"{name:14s} seed {seed}: stretches keep {stretch_agreement(x, y, seed):.2f} "
                  f"of the originals' 1-NN labels, 1-pixel shifts {shifted:.2f}", flush=True)


if __name__ == "__main__":
    main()
