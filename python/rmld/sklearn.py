"""scikit-learn / imbalanced-learn integration: ``RMLDAugmenter(...).fit_resample(X, y)``."""

from __future__ import annotations

import numbers
import warnings
from collections import Counter, OrderedDict
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union

import numpy as np

try:
    from imblearn.over_sampling.base import BaseOverSampler as _Base

    _IMBLEARN = True
except ImportError:  # pragma: no cover - exercised by test_sklearn_fallback.py
    _IMBLEARN = False
    try:
        from sklearn.base import BaseEstimator as _Base
    except ImportError:
        _Base = object  # type: ignore[misc,assignment]

from . import augment

__all__ = ["RMLDAugmenter", "generate_per_class", "resolve_sampling_strategy"]

SamplingStrategy = Union[str, float, Mapping[Any, int], Callable[[np.ndarray], Mapping[Any, int]]]
_STRATEGIES = ("auto", "minority", "not minority", "not majority", "all")
# Said when a strategy asks for nothing (balanced classes): the originals come back, as
# imbalanced-learn's samplers return them, but a user who wanted more images for few labels
# should not take them for an augmented set.
_NOTHING_ASKED = (
    "RMLDAugmenter generated no image: sampling_strategy={strategy!r} asks for none, each class "
    "it targets already having its count, so the originals come back unchanged. To add images "
    "to classes that are already balanced, pass ratio (ratio=0.25: four new images per "
    "original, what helps classifiers with few labels; docs/usefulness.md)")


class RMLDAugmenter(_Base):
    """An oversampler whose new images are rmld's samples, imbalanced-learn's way.

    ``fit_resample(X, y)`` returns ``(X_resampled, y_resampled)``: the originals first, then
    the generated images, ``sampling_strategy_[c]`` of each class c. ``X`` is (N, d) rows or
    (N, h, w) images of any numeric or boolean dtype, or a SciPy sparse matrix of rows (the
    result is sparse, of its format); the generated rows come back in ``X``'s layout and dtype.
    uint8 is 8-bit pixels, 0..255. Anything else keeps its own range: input within [0, 1] gets
    values in [0, 1], input from 0 to a larger top (pixels 0..16, 12-bit scans) values from 0
    to that top, and input with negative values (images normalised to [-1, 1]) is mapped from
    its least to its largest value onto rmld's pixel range and back; integers are rounded,
    booleans thresholded at one half. ``image_shape`` gives (h, w) for (N, d) rows that are not
    square images.

    Parameters (stored as given, checked in ``fit_resample``, so ``get_params``, ``set_params``,
    ``clone`` and ``GridSearchCV`` work):

    - ``sampling_strategy``: imbalanced-learn's meanings: ``"auto"`` (= ``"not majority"``),
      ``"minority"``, ``"not minority"``, ``"not majority"``, ``"all"`` (each targeted class
      raised to the majority's count), a float (binary only: minority / majority after
      resampling), a dict {class: count after resampling}, or a callable ``y -> dict``.
    - ``ratio``: when given, ignore ``sampling_strategy`` and generate round(n_c / ratio) new
      images for every class c (``rmld augment --ratio``: originals per generated image, a
      positive finite number or the command line's text, "6:1" or "1:4").
    - ``random_state``: an int (the sampler's seed), a ``numpy.random.RandomState`` (the seed is
      drawn from it), or None: numpy's global random state, so each call draws anew, as
      imbalanced-learn's samplers do (``numpy.random.seed`` fixes it). ``seed`` is the older
      name of an int, used when ``random_state`` is None.
    - ``preset``, ``backend``, ``settings``: passed to :func:`rmld.augment` (``settings`` a dict
      of its keyword settings: ``method``, ``samples``, ``tangent_scale``, ...).

    A strategy that asks for no image (classes already balanced) returns the originals, as
    imbalanced-learn's samplers do, with a ``UserWarning`` that names ``ratio`` for adding images
    to balanced classes.

    Bad input raises ``ValueError`` naming the class (a targeted class with fewer than two
    images, a count below the images a class has, a class not in ``y``) before anything runs.
    Subclasses imbalanced-learn's ``BaseOverSampler`` when it is installed (the ``sklearn``
    extra); without it the same strategies are resolved here.
    """

    _sampling_type = "over-sampling"
    if _IMBLEARN:
        _parameter_constraints: dict = {
            **_Base._parameter_constraints,
            "ratio": [numbers.Real, str, None],
            "preset": [str, None],
            "backend": [str],
            "seed": [numbers.Integral, None],
            "image_shape": [tuple, list, None],
            "settings": [dict, None],
        }

    def __init__(
        self,
        sampling_strategy: SamplingStrategy = "auto",
        random_state: Any = None,
        ratio: Optional[Union[float, str]] = None,
        preset: Optional[str] = None,
        backend: str = "auto",
        seed: Optional[int] = None,
        image_shape: Optional[Tuple[int, int]] = None,
        settings: Optional[Dict[str, Any]] = None,
    ):
        self.sampling_strategy = sampling_strategy
        self.random_state = random_state
        self.ratio = ratio
        self.preset = preset
        self.backend = backend
        self.seed = seed
        self.image_shape = image_shape
        self.settings = settings

    # --- the imbalanced-learn entry points -------------------------------------------------

    def fit(self, X, y, **params):
        """Checks ``X``, ``y`` and resolves ``sampling_strategy_``; generates nothing."""
        rows, y = self._rows_and_labels(X, y)
        if _IMBLEARN:
            return super().fit(rows, y, **params)
        self.sampling_strategy_ = self._counts(y)
        return self

    def fit_resample(self, X, y, **params):
        """(X_resampled, y_resampled): the originals, then the generated samples, in the
        containers given (a SciPy sparse X gets a sparse result of its format, a pandas
        DataFrame or Series one with its columns, dtypes or name, as imbalanced-learn's
        samplers give)."""
        y_given = y
        rows, y = self._rows_and_labels(X, y)
        if _IMBLEARN:
            X_res, y_res = super().fit_resample(rows, y, **params)
        else:
            self.sampling_strategy_ = self._counts(y)
            X_res, y_res = self._fit_resample(rows, y)
        if self.ratio is None and not any(dict(self.sampling_strategy_).values()):
            warnings.warn(_NOTHING_ASKED.format(strategy=self.sampling_strategy), UserWarning,
                          stacklevel=2)
        shape = np.shape(X)
        X_res = np.asarray(X_res).reshape((-1,) + tuple(shape[1:]))
        if _sparse_format(X) is not None:
            from scipy import sparse

            X_res = sparse.csr_matrix(X_res).asformat(_sparse_format(X))
        return _as_given(X_res, X), _as_given(y_res, y_given)

    def _fit_resample(self, X, y, **params):
        if self.ratio is not None:  # the counts `ratio` asks for, not the strategy's
            self.sampling_strategy_ = self._counts(y)
        counts = dict(self.sampling_strategy_)
        images = X.reshape((len(X),) + self._image_shape_)
        # uint8 rows are rmld's own 8-bit pixels. Anything else (floats, but also integers such
        # as pixels 0..16 or 12-bit scans, and booleans) runs from `low` to `low + span`: 0 to
        # max(1, the largest value), or, where some are negative (images normalised to [-1, 1],
        # or standardised), the least value to the largest. rmld's 8-bit images map back onto
        # that range (rounded for integers), so no new value lies outside the range given.
        low, span = 0.0, 1.0
        floats = images.dtype != np.uint8
        if floats and not np.issubdtype(images.dtype, np.floating):
            images = images.astype(np.float64)
        if floats and images.size:
            least, most = float(np.nanmin(images)), float(np.nanmax(images))
            if least < 0:
                low, span = least, (most - least) or 1.0
                images = (images.astype(np.float64) - low) / span
            else:
                span = max(1.0, most)
        generated, labels, report = generate_per_class(
            images, y, counts, seed=self._seed(), preset=self.preset, backend=self.backend,
            settings=self.settings, with_report=True,
        )
        generated = generated.reshape(len(generated), X.shape[1])  # also when none was asked for
        if floats:
            scaled = generated.astype(np.float64) * (span / 255.0) + low
            if X.dtype == np.bool_:
                generated = scaled >= 0.5
            elif np.issubdtype(X.dtype, np.integer):
                generated = np.clip(np.rint(scaled), low, low + span).astype(X.dtype)
            else:
                generated = scaled.astype(X.dtype)
        self.report_ = report
        self.classes_ = np.unique(y)
        return np.concatenate([X, generated]), np.concatenate([y, labels.astype(y.dtype)])

    # --- checks -------------------------------------------------------------------------

    def _rows_and_labels(self, X, y):
        """X as (N, d) rows (``_image_shape_`` remembers the images' shape) and y, after the
        checks that name a class: done before imbalanced-learn's own checks."""
        X = X.toarray() if _sparse_format(X) is not None else np.asarray(X)
        y = np.asarray(y)
        one_channel = X.ndim == 4 and 1 in (X.shape[1], X.shape[3])  # (N, h, w, 1), (N, 1, h, w)
        if X.ndim not in (2, 3) and not one_channel:
            raise ValueError("X must be (N, d) rows, (N, h, w) images or one channel (N, h, w, 1) "
                             f"or (N, 1, h, w), got shape {X.shape}")
        if y.ndim != 1 or len(y) != len(X):
            raise ValueError(f"y must be one label per row of X: shape ({len(X)},), got {y.shape}")
        if len(X) == 0:
            raise ValueError("X holds no rows: there is nothing to resample")
        if X.ndim == 3:
            self._image_shape_ = tuple(X.shape[1:])
        elif one_channel:
            self._image_shape_ = tuple(X.shape[1:3] if X.shape[3] == 1 else X.shape[2:])
        elif self.image_shape is not None:
            shape = tuple(int(s) for s in self.image_shape)
            if len(shape) != 2 or min(shape) < 1:
                raise ValueError(f"image_shape must be (h, w), two positive sizes, got "
                                 f"{self.image_shape}")
            if shape[0] * shape[1] != X.shape[1]:
                raise ValueError(
                    f"image_shape {self.image_shape} does not hold {X.shape[1]} pixels")
            self._image_shape_ = shape
        else:
            side = int(round(X.shape[1] ** 0.5))
            self._image_shape_ = (side, side) if side * side == X.shape[1] else (1, X.shape[1])
        self._counts(y)  # the class-naming checks, before anything else runs
        return X.reshape(len(X), -1), y

    def _counts(self, y) -> "OrderedDict[Any, int]":
        """{class: images to generate}, with the checks that name the class."""
        present = Counter(y.tolist())
        if self.ratio is not None:
            ratio = _ratio_value(self.ratio)
            if not np.isfinite(max(present.values(), default=0) / ratio):  # ratio=1e-320
                raise ValueError(f"ratio={self.ratio!r} asks for more images than a count holds: "
                                 "ratio is originals per generated image (0.25: four new images "
                                 "per original)")
            counts = OrderedDict((c, int(round(present[c] / ratio))) for c in sorted(present))
        else:
            counts = resolve_sampling_strategy(self.sampling_strategy, y)
        for c, n in counts.items():
            if n > 0 and present[c] < 2:
                raise ValueError(
                    f"class {c!r} has {present[c]} image: rmld needs at least 2 images of a "
                    f"class to generate {n} more from (one image has nothing to vary against); "
                    "drop the class from sampling_strategy or give more images")
        return counts

    def _seed(self) -> int:
        if self.random_state is None and self.seed is not None:
            return int(self.seed)
        if self.random_state is None:  # numpy's global state, as check_random_state(None)
            return int(np.random.randint(np.iinfo(np.int32).max))
        if isinstance(self.random_state, numbers.Integral):
            return int(self.random_state)
        if isinstance(self.random_state, np.random.RandomState):
            return int(self.random_state.randint(np.iinfo(np.int32).max))
        raise ValueError("random_state must be None, an int or a numpy RandomState, "
                         f"got {self.random_state!r}")


def _ratio_value(ratio: Any) -> float:
    """``ratio`` as originals per generated image: a positive finite number, or the command
    line's text "O:G" ("6:1", "1:4") or "O", as ``rmld.augment`` reads it. Anything else raises
    ValueError naming ``ratio``: an infinite one asked for no image at all, without a word."""

    def positive(value: Any) -> Optional[float]:
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                return None
        elif isinstance(value, bool) or not isinstance(value, numbers.Real):
            return None
        value = float(value)
        return value if np.isfinite(value) and value > 0 else None

    if isinstance(ratio, str) and ":" in ratio:
        originals, generated = (positive(part) for part in ratio.split(":", 1))
        parsed = None if originals is None or generated is None else originals / generated
    else:
        parsed = positive(ratio)
    if parsed is None or not np.isfinite(parsed) or parsed == 0:  # "1e308:1e-10", "1e-320:1e10"
        raise ValueError(
            "ratio must be originals per generated image: a positive, finite number (0.25: four "
            f'new images per original) or its text "O:G" like "1:4", got {ratio!r}')
    return parsed


def _as_given(resampled: np.ndarray, given: Any) -> Any:
    """`resampled` in `given`'s pandas container (DataFrame: its columns and dtypes; Series: its
    dtype and name), as imbalanced-learn returns it; anything else as it is."""
    kind = type(given).__name__
    if type(given).__module__.startswith("pandas") and kind in ("DataFrame", "Series"):
        import pandas as pd

        if kind == "DataFrame":
            return pd.DataFrame(resampled, columns=given.columns).astype(given.dtypes.to_dict())
        return pd.Series(resampled, dtype=given.dtype, name=given.name)
    return resampled


def _sparse_format(X) -> Optional[str]:
    """The format ("csr", "csc", ...) of a SciPy sparse X; None for anything else."""
    try:
        from scipy import sparse
    except ImportError:
        return None
    return X.format if sparse.issparse(X) else None


def resolve_sampling_strategy(strategy: SamplingStrategy, y) -> "OrderedDict[Any, int]":
    """{class: number of images to generate} for an oversampler, as imbalanced-learn's
    ``check_sampling_strategy(strategy, y, "over-sampling")`` gives it, but every error names
    the class. Classes not targeted are absent (a dict strategy) or 0 (a string)."""
    y = np.asarray(y)
    present = Counter(y.tolist())
    if len(present) < 2:
        raise ValueError(f"y needs at least 2 classes to resample, got {len(present)}")
    # One majority and one minority class, the first in sorted order on a tie (as imbalanced-learn).
    classes = sorted(present, key=_order)
    majority_class = max(classes, key=lambda c: present[c])
    minority_class = min(classes, key=lambda c: present[c])
    majority = present[majority_class]
    if isinstance(strategy, str):
        if strategy not in _STRATEGIES:
            raise ValueError(
                f"sampling_strategy {strategy!r} is not one of {', '.join(_STRATEGIES)}")
        targeted = {
            "auto": lambda c: c != majority_class,
            "not majority": lambda c: c != majority_class,
            "all": lambda c: True,
            "minority": lambda c: c == minority_class,
            "not minority": lambda c: c != minority_class,
        }[strategy]
        return OrderedDict((c, majority - present[c] if targeted(c) else 0) for c in classes)
    if isinstance(strategy, numbers.Real) and not isinstance(strategy, bool):
        if len(present) != 2:
            raise ValueError("sampling_strategy as a float is for two classes only; "
                             f"y has {len(present)}: give a dict of counts per class")
        if not 0 < strategy <= 1:
            raise ValueError(f"sampling_strategy as a float must be in (0, 1], got {strategy}")
        target = int(strategy * majority)
        c = minority_class
        if target < present[c]:
            raise ValueError(f"sampling_strategy {strategy} asks class {c!r} for {target} images, "
                             f"fewer than the {present[c]} it has")
        return OrderedDict((k, target - present[k] if k == c else 0) for k in classes)
    if callable(strategy) and not isinstance(strategy, Mapping):
        strategy = strategy(y)
    if isinstance(strategy, Mapping):
        unknown = [c for c in strategy if c not in present]
        if unknown:
            raise ValueError(f"sampling_strategy names class {unknown[0]!r}, which is not in y "
                             f"(classes: {sorted(present, key=_order)})")
        out = OrderedDict()
        for c in sorted(strategy, key=_order):
            n = strategy[c]
            if not isinstance(n, numbers.Integral) or n < 0:
                raise ValueError(
                    f"sampling_strategy asks class {c!r} for {n!r} images: give a whole number >= 0")
            if n < present[c]:
                raise ValueError(
                    f"sampling_strategy asks class {c!r} for {n} images, fewer than the "
                    f"{present[c]} it has (an oversampler only adds images)")
            out[c] = int(n) - present[c]
        return out
    raise ValueError("sampling_strategy must be a string, a float, a dict or a callable, "
                     f"got {strategy!r}")


def _order(c):
    return (str(type(c)), c)


def generate_per_class(images, labels, counts, *, seed=0, preset=None, backend="auto",
                       settings=None, with_report=False):
    """``counts[c]`` new images of every class c, from ``images`` (N, h, w) and ``labels``:
    (images uint8 (G, h, w), labels (G,)) and, with ``with_report``, the run's report (a list
    of one, or none when no class gets any).

    One ``rmld.augment`` run with the library's per-class counts (``balance``: each class's
    count after augmenting, imbalanced-learn's dict form), classes numbered 0..K-1 in sorted
    order as the library wants them.
    """
    labels = np.asarray(labels)
    present = Counter(labels.tolist())
    codes, numbers_of = np.unique(labels, return_inverse=True)
    number = {c: i for i, c in enumerate(codes.tolist())}
    wanted = {str(number[c]): present[c] + int(n) for c, n in counts.items() if n > 0}
    if not wanted:
        shape = (0,) + tuple(np.shape(images)[1:])
        empty = (np.zeros(shape, np.uint8), labels[:0])
        return (*empty, []) if with_report else empty
    # Only the images come back: no quality metrics, no codes of the originals, and no LASSO
    # re-encoding of the generated images (`reencode` changes the codes, not the images).
    runs = dict(no_quality=True, no_original_codes=True, reencode=False)
    runs.update(settings or {})
    result = augment(images, numbers_of, preset=preset, backend=backend, seed=seed,
                     balance={"counts": wanted}, **runs)
    generated = (result.images, codes[result.labels])
    return (*generated, [result.report]) if with_report else generated
