"""scikit-learn / imbalanced-learn integration: ``RMLDAugmenter.fit_resample(X, y)``."""

from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np

try:
    from sklearn.base import BaseEstimator
except ImportError:  # pragma: no cover - the class still works without scikit-learn
    BaseEstimator = object  # type: ignore[misc,assignment]

from . import augment

__all__ = ["RMLDAugmenter"]


class RMLDAugmenter(BaseEstimator):
    """Adds RMLD samples to a labelled image set, as an imbalanced-learn sampler does.

    ``fit_resample(X, y)`` returns the originals followed by the generated samples (one per
    ``ratio`` originals of each class), so it drops into ``imblearn.pipeline.Pipeline`` before
    any classifier. ``X`` is (N, d) or (N, h, w), uint8 or float; the generated rows come back
    in ``X``'s layout: (N, d) rows for (N, d) input, float32 in [0, 1] for float input within
    [0, 1]. ``image_shape`` gives (h, w) for (N, d) rows that are not square images.
    Other keyword settings go to :func:`rmld.augment` (``method``, ``samples``, ``seed``, ...).
    """

    def __init__(
        self,
        ratio: float = 1.0,
        preset: Optional[str] = None,
        backend: str = "auto",
        seed: int = 0,
        image_shape: Optional[tuple] = None,
        settings: Optional[Dict[str, Any]] = None,
    ):
        self.ratio = ratio
        self.preset = preset
        self.backend = backend
        self.seed = seed
        self.image_shape = image_shape
        self.settings = settings

    def fit(self, X, y):
        """Nothing to learn ahead: the sampler runs on the data given to ``fit_resample``."""
        self.fit_resample(X, y)
        return self

    def fit_resample(self, X, y):
        """(X_resampled, y_resampled): the originals, then the generated samples."""
        X = np.asarray(X)
        y = np.asarray(y)
        if X.ndim not in (2, 3):
            raise ValueError(f"X must be (N, d) or (N, h, w), got shape {X.shape}")
        classes, codes = np.unique(y, return_inverse=True)
        images = X
        if X.ndim == 2 and self.image_shape is not None:
            images = X.reshape(len(X), *self.image_shape)
        floats = not np.issubdtype(X.dtype, np.integer)
        scale = 1.0
        if floats:
            top = float(np.nanmax(X)) if X.size else 1.0
            scale = 1.0 if top <= 1.0 else top
        result = augment(
            images,
            codes,
            preset=self.preset,
            ratio=self.ratio,
            backend=self.backend,
            seed=self.seed,
            **(self.settings or {}),
        )
        generated = result.images.reshape(len(result.images), *X.shape[1:])
        if floats:
            generated = generated.astype(X.dtype) / 255.0 * scale
        else:
            generated = generated.astype(X.dtype)
        self.report_ = result.report
        self.classes_ = classes
        X_res = np.concatenate([X, generated])
        y_res = np.concatenate([y, classes[result.labels]])
        return X_res, y_res
