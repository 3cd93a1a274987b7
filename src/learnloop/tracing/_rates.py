"""Settings of the learner model that may be one value for every topic or one value per topic."""

from __future__ import annotations

import numpy as np

from ._types import ArrayLike, FloatArray

__all__ = ["per_topic"]


def per_topic(value: ArrayLike, n_topics: int, name: str) -> tuple[float | FloatArray, list[float]]:
    """A setting as the model shows it (a float, or a read-only array of one value per
    topic) and as one float per topic."""
    if np.ndim(value) == 0:
        scalar = float(value)  # type: ignore[arg-type]
        if not np.isfinite(scalar):
            raise ValueError(f"{name} must be finite, got {scalar}")
        return scalar, [scalar] * n_topics
    array = np.array(value, dtype=np.float64).ravel()
    if array.size != n_topics:
        raise ValueError(f"{name} must be one value or {n_topics} values (one per topic), got {array.size}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite")
    array.setflags(write=False)
    return array, array.tolist()
