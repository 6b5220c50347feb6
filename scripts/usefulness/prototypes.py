"""numpy prototypes of changes to rmld's sampler, measured in the benchmark before any Rust.

The quality preset's target is, in image space, a Gaussian around each chain's start image a
(src/model/likelihood/tangent.rs): covariance (s²/k)·B Bᵀ + σ²·I with B = [n_j − a] the k
nearest images of a's class. The prototypes draw from that Gaussian exactly (no chain, no
sparse code), post-process as `rmld augment` does (Gaussian smoothing, clip) and vary one thing
at a time:

- the span: neighbour directions (today), transformation tangents of a (Simard's tangent
  distance: x/y shift, rotation, scale, two hyperbolic shears, thickness), or both;
- how far: the scale s of the neighbour span, the standard deviations τ of the tangents;
- the noise σ off the span;
- a label filter: a draw is kept only if a classifier of the real training images gives its
  class at least a probability p (else it is drawn again, at most `tries` times);
- warps: the start image moved by a random small affine map before the Gaussian draw.
"""

from __future__ import annotations

from typing import Dict, Optional

import numpy as np
from scipy import ndimage

import learned_variation

# Standard deviations of the transformation tangents' coefficients, in natural units: pixels
# (shifts, thickness, at 28 px: scaled with the side) and relative (rotation in radians, scale,
# shears).
DEFORM = dict(shift=1.0, rotation=0.15, scale=0.12, shear=0.12, thickness=0.4)


def transformation_tangents(image: np.ndarray, smooth_px: float) -> Dict[str, np.ndarray]:
    """Simard's tangent vectors of `image` (h, w): the derivative of the image under each
    transformation at the identity, computed on the image smoothed by `smooth_px` (so that the
    derivative exists). Units: per pixel (shifts, thickness) or per unit parameter."""
    g = ndimage.gaussian_filter(image.astype(np.float64), smooth_px)
    gy, gx = np.gradient(g)
    h, w = image.shape
    rows, cols = np.meshgrid(np.arange(h) - (h - 1) / 2, np.arange(w) - (w - 1) / 2, indexing="ij")
    return {
        "shift_x": -gx,
        "shift_y": -gy,
        "rotation": rows * gx - cols * gy,
        "scale": -(cols * gx + rows * gy),
        "shear_parallel": cols * gx - rows * gy,
        "shear_diagonal": rows * gx + cols * gy,
        "thickness": np.hypot(gx, gy),
        # Smooth non-affine displacement fields u = (u_x, u_y), quadratic in the coordinates
        # normalised to [-1, 1]: the image changes by -(g_x u_x + g_y u_y), per pixel of
        # displacement at the corners.
        **{f"bend_{axis}_{name}": -(gx if axis == "x" else gy) * field
           for axis in ("x", "y")
           for name, field in (("xx", (cols / (w / 2)) ** 2), ("xy", cols * rows / (w * h / 4)),
                               ("yy", (rows / (h / 2)) ** 2))},
    }


def _tangent_stds(side: int, deform: Dict[str, float]) -> Dict[str, float]:
    """Each tangent's coefficient std: the pixel ones scaled to the image side."""
    pixels = side / 28.0
    out = {}
    for name in ("shift_x", "shift_y"):
        if deform.get("shift"):
            out[name] = deform["shift"] * pixels
    for name, key in (("rotation", "rotation"), ("scale", "scale"),
                      ("shear_parallel", "shear"), ("shear_diagonal", "shear")):
        if deform.get(key):
            out[name] = deform[key]
    if deform.get("thickness"):
        out["thickness"] = deform["thickness"] * pixels
    if deform.get("bend"):
        for axis in ("x", "y"):
            for name in ("xx", "xy", "yy"):
                out[f"bend_{axis}_{name}"] = deform["bend"] * pixels
    return out


def _warp(image: np.ndarray, rng, deform: Dict[str, float]) -> np.ndarray:
    """The image under a random affine map with the same stds as the tangents (exact, not
    linearised)."""
    h, w = image.shape
    pixels = w / 28.0
    angle = rng.normal(0, deform.get("rotation", 0))
    zoom = np.exp(rng.normal(0, deform.get("scale", 0)))
    s1, s2 = rng.normal(0, deform.get("shear", 0), 2)
    rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    matrix = rot @ np.array([[1 + s1, s2], [s2, 1 - s1]]) / zoom
    shift = rng.normal(0, deform.get("shift", 0) * pixels, 2)
    centre = np.array([(h - 1) / 2, (w - 1) / 2])
    offset = centre - matrix @ centre - shift
    return ndimage.affine_transform(image, matrix, offset=offset, order=1)


class LabelFilter:
    """Keeps a draw when a multinomial logistic regression of the real training images gives
    its class a probability of at least `p`."""

    def __init__(self, x, y, p: float):
        from sklearn.linear_model import LogisticRegression

        self.model = LogisticRegression(C=0.05, max_iter=2000).fit(x.reshape(len(x), -1), y)
        self.column = {c: i for i, c in enumerate(self.model.classes_)}
        self.p = p

    def keep(self, draws: np.ndarray, c) -> np.ndarray:
        probs = self.model.predict_proba(draws.reshape(len(draws), -1))[:, self.column[c]]
        return probs >= self.p


def tangent_augmenter(k: int = 16, scale: float = 3.0, deform: Optional[Dict[str, float]] = None,
                      noise: float = 0.1, smooth: float = 0.5, filter_p: Optional[float] = None,
                      warp: bool = False, tries: int = 10, per_anchor: int = 0,
                      anchor_shift: bool = False, nudge: float = 0.0, moves=None,
                      hard: float = 0.0, learned: float = 0.0, pick: int = 0,
                      pick_mode: str = "hard", smooth_delta: bool = False):
    """An augmenter drawing from the image-space tangent target (options in the module doc).
    `noise` is σ on the 0..1 scale at 28 px (the preset's σ² = 0.01: σ = 0.1); `smooth` the
    post-processing's σ in pixels at 28 px; both scale with the image side as the preset's do.
    Anchors: every image in turn (a permutation, repeated), or with `per_anchor` = K as
    `rmld augment` picks chain starts today: ceil(n / K) chains, each start drawn uniformly
    with replacement from the class, K draws per chain. `anchor_shift`: the draw is centred on
    the anchor moved by one pixel (right, left, down or up, each image's four in turn) instead
    of the anchor itself. `nudge`: the draw also moves a uniform fraction within [0, nudge] of
    the way to one of the anchor's 5 nearest same-class images (moved alike), as SMOTE's
    interpolants do all the way. `learned` = f > 0: each tangent's std is f times the spread the
    class itself shows along it (`learned_tangent_stds`) instead of `deform`'s. `pick` = K > 1:
    K candidate draws per anchor visit, and a logistic regression of the real images picks one:
    `pick_mode` "hard" keeps the candidate whose own-class probability is lowest among those
    it still labels as the class (the one nearest the boundary: worst-of-K augmentation), "easy"
    the highest. `smooth_delta`: smooth only what a draw adds to its (moved) anchor, the anchor
    staying as sharp as a real image."""

    def augment(x, y, counts, seed):
        rng = np.random.default_rng(seed)
        side = x.shape[-1]
        pixels = side / 28.0
        hardness = _hardness(x, y) if hard > 0 else None
        label_filter = LabelFilter(x, y, filter_p) if filter_p else None
        judge = LabelFilter(x, y, 0.0) if pick > 1 else None
        out_x, out_y = [], []
        for c, n in sorted(counts.items()):
            if n <= 0:
                continue
            images = x[y == c].astype(np.float64)
            flat = images.reshape(len(images), -1)
            kk = min(k, len(images) - 1)
            squared = (flat ** 2).sum(1)
            dist = squared[:, None] + squared[None, :] - 2 * flat @ flat.T
            np.fill_diagonal(dist, np.inf)
            neighbours = np.argsort(dist, axis=1)[:, :kk]
            stds = _tangent_stds(side, deform or {})
            if learned > 0:
                spread = learned_tangent_stds(images, neighbours[:, 0], max(0.5, 0.9 * pixels))
                stds = {name: learned * spread[name] for name in stds}
            if per_anchor:
                chains = rng.integers(0, len(images), int(np.ceil(n / per_anchor)))
                starts = np.repeat(chains, per_anchor)[:n]
            elif hardness is not None:
                weights = hardness[y == c] ** hard
                starts = rng.permutation(_allocate(weights, n))
            else:
                starts = np.concatenate([rng.permutation(len(images))
                                         for _ in range(int(np.ceil(n / len(images))))])[:n]
            kept = []
            tangents = {}
            turns = np.zeros(len(images), int)
            for start in starts:
                move = None
                if anchor_shift:
                    from augmenters import SHIFTS

                    ring = SHIFTS if moves is None else moves
                    move = ring[(turns[start] + start) % len(ring)]
                    turns[start] += 1
                if deform and not warp and (start, move) not in tangents:
                    base = images[start] if move is None else shift_image(images[start], move)
                    fields = transformation_tangents(base, max(0.5, 0.9 * pixels))
                    tangents[(start, move)] = [(std, fields[name].reshape(-1))
                                               for name, std in stds.items()]
                if judge is not None:
                    candidates = np.stack([
                        _draw(images, flat, neighbours, start, kk, scale, deform, noise * pixels,
                              smooth * pixels, warp, rng, tangents.get((start, move), ()), move,
                              nudge, smooth_delta) for _ in range(pick)])
                    probs = judge.model.predict_proba(candidates.reshape(pick, -1))
                    own = probs[:, judge.column[c]]
                    labelled = probs.argmax(1) == judge.column[c]
                    score = np.where(labelled, own, 2.0 + own) if pick_mode == "hard" else -own
                    kept.append(candidates[int(np.argmin(score))])
                    continue
                for attempt in range(tries):
                    draw = _draw(images, flat, neighbours, start, kk, scale, deform, noise * pixels,
                                 smooth * pixels, warp, rng, tangents.get((start, move), ()), move,
                                 nudge, smooth_delta)
                    if label_filter is None or label_filter.keep(draw[None], c)[0] or attempt == tries - 1:
                        break
                kept.append(draw)
            out_x += kept
            out_y += [c] * n
        if not out_x:
            return np.zeros((0,) + x.shape[1:], np.float32), np.zeros(0, np.int64)
        return np.stack(out_x).astype(np.float32), np.array(out_y, np.int64)

    return augment


LEARNED_TANGENTS = ("rotation", "scale", "shear_parallel", "shear_diagonal", "thickness",
                    "shift_x", "shift_y")


def learned_tangent_stds(images: np.ndarray, nearest: np.ndarray, smooth_px: float) -> Dict[str, float]:
    """How far a class varies along each transformation tangent: every image's difference to
    its nearest image of the class (`nearest`), least-squares fitted by the image's tangents, and
    each coefficient's robust spread (1.4826 × median |c|) over the class. The fit absorbs
    whatever the tangents can explain of a neighbour difference, so it over-states the
    deformation; its proportions between the tangents are what a class shows."""
    flat = images.reshape(len(images), -1)
    coefs = []
    for i, image in enumerate(images):
        fields = transformation_tangents(image, smooth_px)
        basis = np.stack([fields[name].reshape(-1) for name in LEARNED_TANGENTS], 1)
        coefs.append(np.linalg.lstsq(basis, flat[nearest[i]] - flat[i], rcond=None)[0])
    spread = 1.4826 * np.median(np.abs(np.array(coefs)), axis=0)
    return dict(zip(LEARNED_TANGENTS, spread))


def _hardness(x, y) -> np.ndarray:
    """Per image: the distance to its nearest same-class image over the distance to its nearest
    image of another class (above 1: closer to another class than to its own)."""
    flat = x.reshape(len(x), -1).astype(np.float64)
    sq = (flat ** 2).sum(1)
    dist = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2 * flat @ flat.T, 0))
    np.fill_diagonal(dist, np.inf)
    same = y[:, None] == y[None, :]
    near_same = np.where(same, dist, np.inf).min(1)
    near_other = np.where(~same, dist, np.inf).min(1)
    ratio = near_same / np.maximum(near_other, 1e-12)
    return np.where(np.isfinite(ratio), ratio, 1.0)


def _allocate(weights: np.ndarray, n: int) -> np.ndarray:
    """n anchors over the images in proportion to `weights` (largest remainders), each image's
    index repeated its count of times."""
    share = n * weights / weights.sum()
    counts = np.floor(share).astype(int)
    rest = n - counts.sum()
    counts[np.argsort(-(share - counts), kind="stable")[:rest]] += 1
    return np.repeat(np.arange(len(weights)), counts)


def shift_image(image, move):
    """The image moved by `move` (rows, columns) times side/28 pixels: one pixel at 28 px, a
    linearly interpolated fraction of one on smaller images."""
    from augmenters import shift

    step = image.shape[-1] / 28.0
    if step >= 1.0 and all(float(m).is_integer() for m in move):
        return shift(image, *(int(m) for m in move))
    return ndimage.shift(image, (move[0] * step, move[1] * step), order=1, mode="constant")


def proposal(factor: float = 0.5, nudge: float = 0.0, smooth: float = 0.5, moves=None,
             hard: float = 0.0, learned: float = 0.0, pick: int = 0, pick_mode: str = "hard",
             smooth_delta: bool = False):
    """The change proposed for rmld's default (docs/usefulness.md, "Proposed change"): exact
    draws of a Gaussian around the anchor whose span is the transformation tangents (rotation,
    scale, two shears, thickness at `factor` × DEFORM), no noise off the span, every image
    anchoring in turn; the translation comes from the anchor, moved by one whole pixel (each
    image's four directions in turn) on images of 28 px or more, and from the shift tangents
    (τ = DEFORM's 1 px · side/28) on smaller ones, where one whole pixel is too far (the 8×8
    digits: 1-pixel shifts cost logistic regression 2.2 points)."""
    large = tangent_augmenter(scale=0.0, deform=_scaled(factor, ("shift",)), noise=0.0,
                              anchor_shift=True, nudge=nudge, smooth=smooth, moves=moves,
                              hard=hard, learned=learned, pick=pick, pick_mode=pick_mode,
                              smooth_delta=smooth_delta)
    small = tangent_augmenter(scale=0.0, deform=dict(_scaled(factor, ("shift",)), shift=1.0),
                              noise=0.0, nudge=nudge, smooth=smooth, hard=hard, learned=learned,
                              pick=pick, pick_mode=pick_mode, smooth_delta=smooth_delta)

    def augment(x, y, counts, seed):
        return (large if x.shape[-1] >= 28 else small)(x, y, counts, seed)

    return augment


def _draw(images, flat, neighbours, start, k, scale, deform, noise, smooth, warp, rng, tangents,
          move=None, nudge=0.0, smooth_delta=False):
    anchor = images[start] if move is None else shift_image(images[start], move)
    if warp and deform:
        anchor = _warp(anchor, rng, deform)
    x = anchor.reshape(-1).copy()
    if nudge > 0 and k > 0:
        other = images[neighbours[start][rng.integers(min(5, k))]]
        other = other if move is None else shift_image(other, move)
        x += rng.uniform(0, nudge) * (other - anchor).reshape(-1)
    if scale > 0 and k > 0:
        span = flat[neighbours[start]] - flat[start]
        x += (scale / np.sqrt(k)) * rng.standard_normal(k) @ span
    for std, tangent in tangents:
        x += rng.normal(0, std) * tangent
    if noise > 0:
        x += noise * rng.standard_normal(x.shape)
    image = x.reshape(anchor.shape)
    if smooth > 0 and smooth_delta:
        image = anchor + ndimage.gaussian_filter(image - anchor, smooth)
    elif smooth > 0:
        image = ndimage.gaussian_filter(image, smooth)
    return np.clip(image, 0.0, 1.0)


def _scaled(factor: float, drop=()) -> Dict[str, float]:
    return {k: v * factor for k, v in DEFORM.items() if k not in drop}


PROTOTYPES = {
    # The quality preset's target, drawn exactly: neighbour span s = 3, k = 16, σ = 0.1.
    "p-tangent": tangent_augmenter(),
    "p-tangent-s1": tangent_augmenter(scale=1.0),
    "p-tangent-nonoise": tangent_augmenter(noise=0.0),
    # Transformation tangents only (Simard), linearised, no neighbour span.
    "p-deform": tangent_augmenter(scale=0.0, deform=DEFORM, noise=0.0),
    "p-deform-shift": tangent_augmenter(scale=0.0, deform=dict(shift=1.0), noise=0.0),
    "p-deform-x0.5": tangent_augmenter(scale=0.0, deform=_scaled(0.5), noise=0.0),
    "p-deform-x1.5": tangent_augmenter(scale=0.0, deform=_scaled(1.5), noise=0.0),
    "p-deform-x2": tangent_augmenter(scale=0.0, deform=_scaled(2.0), noise=0.0),
    "p-deform-shift1.5": tangent_augmenter(scale=0.0, deform=dict(DEFORM, shift=1.5), noise=0.0),
    "p-deform-noshift": tangent_augmenter(scale=0.0, deform=_scaled(1.0, ("shift",)), noise=0.0),
    "p-deform-nothick": tangent_augmenter(scale=0.0, deform=_scaled(1.0, ("thickness",)), noise=0.0),
    "p-deform-noise": tangent_augmenter(scale=0.0, deform=DEFORM, noise=0.1),
    # Both spans.
    "p-tangent-deform": tangent_augmenter(scale=1.0, deform=DEFORM, noise=0.0),
    "p-tangent3-deform": tangent_augmenter(scale=3.0, deform=DEFORM, noise=0.1),
    # Exact warps instead of linear tangents.
    "p-warp": tangent_augmenter(scale=0.0, deform=DEFORM, noise=0.0, warp=True),
    "p-warp-tangent": tangent_augmenter(scale=1.0, deform=DEFORM, noise=0.0, warp=True),
    # Non-affine (quadratic) displacement fields beside the affine ones and thickness.
    "p-deform-bend": tangent_augmenter(scale=0.0, deform=dict(DEFORM, bend=1.0), noise=0.0),
    "p-deform-bend2": tangent_augmenter(scale=0.0, deform=dict(DEFORM, bend=2.0), noise=0.0),
    # The anchor moved by one pixel (each image's four shifts in turn), then the tangents.
    "p-shift-deform": tangent_augmenter(scale=0.0, deform=DEFORM, noise=0.0, anchor_shift=True),
    "p-shift-deform-noshift": tangent_augmenter(scale=0.0, deform=_scaled(1.0, ("shift",)),
                                                noise=0.0, anchor_shift=True),
    "p-shift-deform-x1.5": tangent_augmenter(scale=0.0, deform=_scaled(1.5), noise=0.0,
                                             anchor_shift=True),
    "p-shift-deform-noshift-x0.5": tangent_augmenter(scale=0.0, deform=_scaled(0.5, ("shift",)),
                                                     noise=0.0, anchor_shift=True),
    "p-shift-deform-noshift-x0.75": tangent_augmenter(scale=0.0, deform=_scaled(0.75, ("shift",)),
                                                      noise=0.0, anchor_shift=True),
    # ... with the target's off-span noise σ (0.1 = the preset's σ² 0.01) kept in the draw.
    "p-shift-deform-noshift-noise": tangent_augmenter(scale=0.0, deform=_scaled(1.0, ("shift",)),
                                                      noise=0.1, anchor_shift=True),
    "p-shift-deform-noshift-noise2": tangent_augmenter(scale=0.0, deform=_scaled(1.0, ("shift",)),
                                                       noise=0.2, anchor_shift=True),
    # Chain starts as rmld picks them today: uniform with replacement, 4 draws per chain.
    "p-deform-rand4": tangent_augmenter(scale=0.0, deform=DEFORM, noise=0.0, per_anchor=4),
    "p-tangent-rand4": tangent_augmenter(per_anchor=4),
    # The preset's target with a label filter.
    "p-tangent-filter": tangent_augmenter(filter_p=0.5),
}


def through_dictionary(inner, lam: float = 0.05):
    """`inner`'s draws replaced by their LASSO reconstructions A z under rmld's random Gaussian
    dictionary (`rmld.encode`, pixel-max 1, λ as the quality preset), then smoothed and clipped
    as `rmld augment` post-processes: what the sparse-code representation does to a sample."""

    def augment(x, y, counts, seed):
        import os
        import sys

        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
        import rmld

        gx, gy = inner(x, y, counts, seed)
        if not len(gx):
            return gx, gy
        encoded = rmld.encode(gx, lam=lam, pixel_max=1.0, seed=seed,
                              backend=os.environ.get("RMLD_BACKEND", "cpu"))
        side = x.shape[-1]
        images = encoded.reconstructions.reshape(gx.shape)
        images = np.stack([ndimage.gaussian_filter(i, 0.5 * side / 28.0) for i in images])
        return np.clip(images, 0, 1).astype(np.float32), gy

    return augment


PROTOTYPES["p-deform-lasso"] = through_dictionary(PROTOTYPES["p-deform"])
PROTOTYPES["proposal"] = proposal()


def mirrored(inner):
    """`inner` anchored on the images and their left-right mirrors, as if the classes were
    mirror-invariant (Quick Draw's bow ties, lollipops and rainbows look so)."""

    def augment(x, y, counts, seed):
        return inner(np.concatenate([x, x[..., ::-1]]), np.concatenate([y, y]), counts, seed)

    return augment


def mirror_ratio(images: np.ndarray) -> float:
    """How far a class's left-right mirrors lie from the class: the mean distance from each
    image's mirror to its nearest other image of the class, over the mean distance from each
    image to its nearest other image. About 1 for a mirror-invariant class (a mirror is as
    close as a real member), above for a handed one (digits, shoes)."""
    flat = images.reshape(len(images), -1).astype(np.float64)
    mirror = images[..., ::-1].reshape(len(images), -1).astype(np.float64)

    def nearest(rows):
        d = (rows ** 2).sum(1)[:, None] - 2 * rows @ flat.T + (flat ** 2).sum(1)[None]
        np.fill_diagonal(d, np.inf)
        return np.sqrt(np.maximum(d.min(1), 0)).mean()

    return float(nearest(mirror) / max(nearest(flat), 1e-12))


def mirror_symmetric(inner, threshold: float = 1.1):
    """`inner` anchored also on the left-right mirrors of the classes whose mirrors are as
    close to the class as its own images are (`mirror_ratio` at most `threshold`): a rule
    read off the training images, so handed classes (digits, shoes) are never mirrored."""

    def augment(x, y, counts, seed):
        extra = [c for c in np.unique(y) if (y == c).sum() >= 2
                 and mirror_ratio(x[y == c]) <= threshold]
        if not extra:
            return inner(x, y, counts, seed)
        pick = np.isin(y, extra)
        return inner(np.concatenate([x, x[pick][..., ::-1]]), np.concatenate([y, y[pick]]),
                     counts, seed)

    return augment


def halves(first, second):
    """Half of each class's new images from `first`, the other half from `second`."""

    def augment(x, y, counts, seed):
        ax, ay = first(x, y, {c: n // 2 for c, n in counts.items()}, seed)
        bx, by = second(x, y, {c: n - n // 2 for c, n in counts.items()}, seed)
        return np.concatenate([ax, bx]).astype(np.float32), np.concatenate([ay, by])

    return augment


def baseline(name: str):
    """augmenters.BASELINES[name], looked up when called: augmenters imports this module."""

    def augment(*args):
        from augmenters import BASELINES

        return BASELINES[name](*args)

    return augment


def half_smote(inner):
    """Half of each class's new images from SMOTE's interpolation, half from `inner`: an
    interpolant between class neighbours and a deformation of one image, side by side."""
    return halves(baseline("smote"), inner)


def brightness(inner, spread: float = 0.25, gamma: bool = False):
    """`inner`'s new images with their intensities scaled by a log-uniform factor within
    ±spread (gamma: raised to that power instead), then clipped: ink and fabric of another
    strength."""

    def augment(x, y, counts, seed):
        gx, gy = inner(x, y, counts, seed)
        rng = np.random.default_rng(seed + 101)
        f = np.exp(rng.uniform(-spread, spread, len(gx)))[:, None, None]
        return np.clip(gx ** f if gamma else gx * f, 0, 1).astype(np.float32), gy

    return augment


def elastic_after(inner, alpha: float, sigma: float = 4.0):
    """`inner`'s new images each distorted by Simard's elastic field (augmenters.py), α and σ
    given at 28 px."""

    def augment(x, y, counts, seed):
        from augmenters import _elastic  # here: augmenters imports this module

        gx, gy = inner(x, y, counts, seed)
        rng = np.random.default_rng(seed + 211)
        out = [np.clip(_elastic(g, rng, alpha, sigma), 0, 1) for g in gx]
        return (np.stack(out).astype(np.float32) if out else gx), gy

    return augment


PROTOTYPES["p-mirror-proposal"] = mirrored(proposal())
PROTOTYPES["p-half-smote"] = half_smote(proposal())
PROTOTYPES["p-mirror-sym"] = mirror_symmetric(proposal())
PROTOTYPES["p-mirror-sym1.05"] = mirror_symmetric(proposal(), 1.05)
PROTOTYPES["p-bright"] = brightness(proposal())
PROTOTYPES["p-elastic17"] = elastic_after(proposal(), 17.0)
PROTOTYPES["p-elastic34"] = elastic_after(proposal(), 34.0)
PROTOTYPES["p-half-elastic"] = halves(proposal(), baseline("elastic"))
# Anchors in proportion to hardness^γ (closer to another class than to its own: more draws).
for _hard in (1.0, 2.0, 4.0):
    PROTOTYPES[f"p-hard{_hard:g}"] = proposal(hard=_hard)
PROTOTYPES["p-smooth0"] = proposal(smooth=0.0)
PROTOTYPES["p-smooth0.8"] = proposal(smooth=0.8)
# The anchor moved in 8 directions in turn (the diagonals too), or by 1 or 2 pixels.
PROTOTYPES["p-moves8"] = proposal(moves=[(0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1),
                                         (-1, 0), (-1, 1)])
# The anchor moved along the diagonals only: the four moves the shifts peer does not make.
PROTOTYPES["p-moves-diag"] = proposal(moves=[(1, 1), (1, -1), (-1, -1), (-1, 1)])
# The tangent spreads 0.7 and 1.4 times the proposal's, for cuts larger than 50 per class.
PROTOTYPES["p-spread0.7"] = proposal(0.35)
PROTOTYPES["p-spread1.4"] = proposal(0.7)
PROTOTYPES["p-moves-still"] = proposal(moves=[(0, 1), (0, -1), (1, 0), (-1, 0), (0, 0)])
PROTOTYPES["p-moves2px"] = proposal(moves=[(0, 1), (0, -2), (1, 0), (-2, 0), (0, -1), (0, 2),
                                           (-1, 0), (2, 0)])
for _nudge in (0.3, 0.5):
    PROTOTYPES[f"p-nudge{_nudge:g}"] = proposal(nudge=_nudge)
PROTOTYPES["p-gamma"] = brightness(proposal(), 0.4, gamma=True)
for _factor in (1.0, 2.0, 3.0):
    PROTOTYPES[f"proposal-x{_factor:g}"] = proposal(0.5 * _factor)

# Variation learned from the data (learned_variation.py): the Quick Draw study.
PROTOTYPES["p-morph"] = learned_variation.morphs()
PROTOTYPES["p-box"] = learned_variation.boxed(proposal())
for _f in (1.3, 1.5):
    PROTOTYPES[f"p-stretch{_f:g}"] = learned_variation.stretches(_f)
PROTOTYPES["p-stretch1.5-free"] = learned_variation.stretches(1.5, box=False)
PROTOTYPES["p-stretch1.5-turn5"] = learned_variation.stretches(1.5, turn_deg=5.0)
PROTOTYPES["p-half-stretch"] = halves(proposal(), learned_variation.stretches(1.5))
PROTOTYPES["p-deform-stretch1.5"] = learned_variation.stretched(proposal(), 1.5)
PROTOTYPES["p-deform-stretch1.3"] = learned_variation.stretched(proposal(), 1.3)
# The class's own spread along each tangent (`learned_tangent_stds`), times 0.5 as the proposal
# takes half of DEFORM (on MNIST the learned spreads are close to DEFORM), or 0.35 or 1 times.
PROTOTYPES["p-learned"] = proposal(learned=0.5)
PROTOTYPES["p-learned0.35"] = proposal(learned=0.35)
PROTOTYPES["p-learned1"] = proposal(learned=1.0)
# K candidates per anchor visit, a logistic regression of the real images picks the one nearest
# the boundary it still labels right ("hard", worst-of-K) or the most confident ("easy").
for _k in (2, 4, 8):
    PROTOTYPES[f"p-pick-hard{_k}"] = proposal(pick=_k)
PROTOTYPES["p-pick-easy4"] = proposal(pick=4, pick_mode="easy")
PROTOTYPES["p-pick-hard4-x2"] = proposal(1.0, pick=4)


def smote_beyond(inner, per_image: int = 4, share: float = 0.5, interpolants=None):
    """Each class's first `per_image` new images per original from `inner`; of the rest, a `share`
    from SMOTE's interpolation (`interpolants`: SMOTE itself by default) and the others from
    `inner` (a rare class brought up many times its size gets interpolants between its images
    besides its images' deformations). rmld's deform does this since session 27 (src/model/
    interpolation.rs), leaving its interpolants unsmoothed."""
    between = interpolants or baseline("smote")

    def augment(x, y, counts, seed):
        present = {c: int(np.sum(y == c)) for c in counts}
        first = {c: int(round(max(0, n - per_image * present[c]) * share)) for c, n in counts.items()}
        ax, ay = between(x, y, first, seed)
        bx, by = inner(x, y, {c: n - first[c] for c, n in counts.items()}, seed)
        return np.concatenate([ax, bx]).astype(np.float32), np.concatenate([ay, by])

    return augment


def elastic_of(alpha: float):
    """Simard's elastic distortion (augmenters.py) of a class's images in turn, α at 28 px."""

    def augment(x, y, counts, seed):
        from augmenters import _elastic, _per_image  # here: augmenters imports this module

        return _per_image(lambda image, rng: _elastic(image, rng, alpha))(x, y, counts, seed)

    return augment


# Past four new images per original (session 35): elastic distortions where the default took
# SMOTE's interpolants (half the rest, or all of it), at α 34 (augmenters.py's), 25 or 17.
# `p-beyond4-elastic17-all` is rmld's default on strokes since (src/model/elastic.rs), unshaded.
PROTOTYPES["p-beyond4-elastic"] = smote_beyond(proposal(), interpolants=elastic_of(34.0))
PROTOTYPES["p-beyond4-elastic-all"] = smote_beyond(proposal(), share=1.0,
                                                   interpolants=elastic_of(34.0))
PROTOTYPES["p-beyond4-elastic17"] = smote_beyond(proposal(), interpolants=elastic_of(17.0))
for _alpha in (17.0, 25.0):
    PROTOTYPES[f"p-beyond4-elastic{_alpha:g}-all"] = smote_beyond(proposal(), share=1.0,
                                                                 interpolants=elastic_of(_alpha))


# A fixed share of every class's new images by SMOTE (per_image 0), whatever the count.
for _share in (0.25, 0.5, 0.75):
    PROTOTYPES[f"p-smote{_share:g}"] = smote_beyond(proposal(), per_image=0, share=_share)
PROTOTYPES["p-beyond4"] = smote_beyond(proposal())
PROTOTYPES["p-beyond4-all"] = smote_beyond(proposal(), share=1.0)


def smoothed(inner, sigma: float = 0.5):
    """`inner`'s new images smoothed by a Gaussian of `sigma` × side/28 px, then clipped (the
    post-processing rmld applies to every draw)."""

    def augment(x, y, counts, seed):
        gx, gy = inner(x, y, counts, seed)
        s = sigma * x.shape[-1] / 28.0
        out = np.stack([ndimage.gaussian_filter(g, s) for g in gx]) if len(gx) else gx
        return np.clip(out, 0, 1).astype(np.float32), gy

    return augment


# ... with the interpolants smoothed as rmld's post-processing smooths every other draw.
PROTOTYPES["p-beyond4-smooth"] = smote_beyond(proposal(), interpolants=smoothed(baseline("smote")))


def cut_mixed(inner, share: float = 1.0, low: float = 0.25, high: float = 0.5, k: int = 5):
    """`inner`'s new images, a `share` of them with a band of rows or of columns (a random
    fraction within [low, high] of the side, at a random place) taken from one of the draw's
    `k` nearest real images of its class: new combinations of a class's parts (a sleeve of
    one shirt, the body of another), after within-class CutMix."""

    def augment(x, y, counts, seed):
        gx, gy = inner(x, y, counts, seed)
        if len(gx) == 0:
            return gx, gy
        rng = np.random.default_rng(seed + 307)
        out = gx.copy()
        side = x.shape[-1]
        for c in np.unique(gy):
            real = x[y == c].reshape(int(np.sum(y == c)), -1)
            rows = np.flatnonzero(gy == c)
            if len(real) < 2:
                continue
            flat = out[rows].reshape(len(rows), -1)
            d = (flat ** 2).sum(1)[:, None] - 2 * flat @ real.T + (real ** 2).sum(1)[None, :]
            near = np.argsort(d, axis=1)[:, :min(k, len(real))]
            for i, r in enumerate(rows):
                if rng.random() >= share:
                    continue
                other = real[near[i][rng.integers(near.shape[1])]].reshape(side, side)
                width = max(1, int(round(rng.uniform(low, high) * side)))
                at = rng.integers(0, side - width + 1)
                if rng.random() < 0.5:
                    out[r, at:at + width, :] = other[at:at + width, :]
                else:
                    out[r, :, at:at + width] = other[:, at:at + width]
        return out.astype(np.float32), gy

    return augment


PROTOTYPES["p-cutmix"] = cut_mixed(proposal())
PROTOTYPES["p-cutmix0.5"] = cut_mixed(proposal(), share=0.5)
PROTOTYPES["p-cutmix-small"] = cut_mixed(proposal(), low=0.1, high=0.25)


# The anchor moved by half a pixel (linear interpolation) instead of a whole one.
PROTOTYPES["p-moves-half"] = proposal(moves=[(0, 0.5), (0, -0.5), (0.5, 0), (-0.5, 0)])
PROTOTYPES["p-moves-mixed"] = proposal(moves=[(0, 1), (0, -0.5), (1, 0), (-0.5, 0), (0, -1),
                                              (0, 0.5), (-1, 0), (0.5, 0)])
PROTOTYPES["p-beyond4-smooth0"] = smote_beyond(proposal(smooth=0.0))


# The draws' smoothing applied to what a draw adds to its moved anchor only: the anchor stays as
# sharp as a real image, so sharpness tells no draw from a real one (docs/usefulness.md, "Sharp
# anchors").
PROTOTYPES["p-delta-smooth"] = proposal(smooth_delta=True)
PROTOTYPES["p-beyond4-delta-smooth"] = smote_beyond(proposal(smooth_delta=True))


def sharp_past_four(per_image: int = 4):
    """Session 27's default (`p-beyond4`) with the deformations past `per_image` new images per
    original smoothed only in what they add to their moved anchor (`smooth_delta`); the first
    `per_image` per original stay as they were."""
    first_part = proposal()
    rest_part = proposal(smooth_delta=True)

    def deformations(x, y, counts, seed):
        present = {c: int(np.sum(y == c)) for c in counts}
        first = {c: min(n, per_image * present[c]) for c, n in counts.items()}
        ax, ay = first_part(x, y, first, seed)
        bx, by = rest_part(x, y, {c: n - first[c] for c, n in counts.items()}, seed + 1)
        return np.concatenate([ax, bx]).astype(np.float32), np.concatenate([ay, by])

    return smote_beyond(deformations)


PROTOTYPES["p-beyond4-sharp-past4"] = sharp_past_four()


def within_class_noise(inner, alpha: float, k: int = 30):
    """`inner`'s new images plus Gaussian noise along the top `k` principal directions of the
    pooled within-class scatter (every image minus its class mean, all classes together, as in
    Fisher's discriminant), each at `alpha` times its spread: variation the whole set shows
    inside its classes, lent to every class (session 30)."""

    def augment(x, y, counts, seed):
        gx, gy = inner(x, y, counts, seed)
        if len(gx) == 0:
            return gx, gy
        flat = x.reshape(len(x), -1).astype(np.float64)
        resid = flat.copy()
        classes = np.unique(y)
        for c in classes:
            resid[y == c] -= flat[y == c].mean(0)
        _, s, vt = np.linalg.svd(resid, full_matrices=False)
        k_used = min(k, len(s))
        sd = s[:k_used] / np.sqrt(max(1, len(x) - len(classes)))
        rng = np.random.default_rng(seed + 401)
        z = rng.standard_normal((len(gx), k_used)) * sd * alpha
        out = gx.reshape(len(gx), -1) + z @ vt[:k_used]
        return np.clip(out, 0, 1).reshape(gx.shape).astype(np.float32), gy

    return augment


def extrapolated(inner, lam: float, k: int = 5):
    """`inner`'s new images moved away from one of the draw's `k` nearest real images of its
    class by a uniform fraction within [0, lam] of the difference, then clipped: DeVries and
    Taylor's extrapolation (2017), in pixel space, where SMOTE interpolates (session 30)."""

    def augment(x, y, counts, seed):
        gx, gy = inner(x, y, counts, seed)
        if len(gx) == 0:
            return gx, gy
        rng = np.random.default_rng(seed + 409)
        out = gx.reshape(len(gx), -1).astype(np.float64).copy()
        for c in np.unique(gy):
            real = x[y == c].reshape(int(np.sum(y == c)), -1).astype(np.float64)
            rows = np.flatnonzero(gy == c)
            if len(real) < 3:
                continue
            flat = out[rows]
            d = (flat ** 2).sum(1)[:, None] - 2 * flat @ real.T + (real ** 2).sum(1)[None, :]
            # The nearest real image is the draw's own anchor: take the next k.
            near = np.argsort(d, axis=1)[:, 1:1 + min(k, len(real) - 1)]
            pick = near[np.arange(len(rows)), rng.integers(near.shape[1], size=len(rows))]
            step = rng.uniform(0, lam, len(rows))[:, None]
            out[rows] = flat + step * (flat - real[pick])
        return np.clip(out, 0, 1).reshape(gx.shape).astype(np.float32), gy

    return augment


for _alpha in (0.5, 1.0):
    PROTOTYPES[f"p-within{_alpha:g}"] = within_class_noise(proposal(), _alpha)
for _lam in (0.25, 0.5):
    PROTOTYPES[f"p-extrap{_lam:g}"] = extrapolated(proposal(), _lam)


def shaded(inner, amplitude: float, sigma_px: float = 6.0):
    """`inner`'s new images times exp(amplitude · f), f a smooth random field (white noise
    Gaussian-filtered at `sigma_px` · side/28 px, scaled to unit spread): light and shade that
    vary across the item, where `p-bright` scaled it whole (session 33)."""
    from scipy.ndimage import gaussian_filter

    def augment(x, y, counts, seed):
        gx, gy = inner(x, y, counts, seed)
        if len(gx) == 0:
            return gx, gy
        rng = np.random.default_rng(seed + 503)
        side = gx.shape[1]
        out = np.empty_like(gx)
        for i, g in enumerate(gx):
            f = gaussian_filter(rng.standard_normal(g.shape), sigma_px * side / 28, mode="wrap")
            f /= f.std() + 1e-12
            out[i] = np.clip(g * np.exp(amplitude * f), 0, 1)
        return out.astype(np.float32), gy

    return augment


def erased(inner, low: float = 0.04, high: float = 0.12):
    """`inner`'s new images with one rectangle, a uniform share within [low, high] of the area
    and an aspect ratio within [1/2, 2], set to 0: Zhong et al.'s random erasing (2017), which
    they report helps on Fashion-MNIST (session 33)."""

    def augment(x, y, counts, seed):
        gx, gy = inner(x, y, counts, seed)
        rng = np.random.default_rng(seed + 509)
        out = gx.copy()
        h, w = gx.shape[1:3] if gx.ndim == 3 else (0, 0)
        for g in out:
            area = rng.uniform(low, high) * h * w
            aspect = np.exp(rng.uniform(np.log(0.5), np.log(2.0)))
            eh = int(min(h, max(1, round(np.sqrt(area * aspect)))))
            ew = int(min(w, max(1, round(np.sqrt(area / aspect)))))
            top, left = rng.integers(0, h - eh + 1), rng.integers(0, w - ew + 1)
            g[top:top + eh, left:left + ew] = 0
        return out, gy

    return augment


for _amp in (0.2, 0.4):
    PROTOTYPES[f"p-shade{_amp:g}"] = shaded(proposal(), _amp)
PROTOTYPES["p-erase"] = erased(proposal())
PROTOTYPES["p-shade0.1"] = shaded(proposal(), 0.1)
PROTOTYPES["p-shade0.3"] = shaded(proposal(), 0.3)
for _s in (3.0, 10.0):
    PROTOTYPES[f"p-shade0.2-s{_s:g}"] = shaded(proposal(), 0.2, _s)
# In the imbalanced cuts: the deformations shaded and the interpolants not, or every new image.
for _amp in (0.1, 0.2):
    PROTOTYPES[f"p-beyond4-shade{_amp:g}"] = smote_beyond(shaded(proposal(), _amp))
    PROTOTYPES[f"p-shade{_amp:g}-all-beyond4"] = shaded(smote_beyond(proposal()), _amp)
PROTOTYPES["p-shade0.15"] = shaded(proposal(), 0.15)
