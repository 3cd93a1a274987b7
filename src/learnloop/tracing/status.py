r"""The status figures of the v1 and v2 APIs, vectorised over item masks.

Every function takes per-item arrays (indexed by a catalog's item positions)
and a boolean ``mask`` selecting a filter's items. A 2-D mask ``(n_filters,
n_items)`` computes one figure per filter at once.

* ``proficiency`` (v2): mean predicted P(correct) over the filter's scorable
  items; None (NaN in the 2-D form) when there are none.
* ``progress`` (v1, v2): mean *credit* over the filter's items, where an
  exercise counts 1 once attempted (a skip is not an attempt) and a theory
  item counts the largest ``fraction_completed`` seen (a view without a
  fraction counts as fully viewed).
* ``skill_level`` (v1): the mean P(correct) over the filter's scorable items
  (over all its items when none is scorable; 0 for an empty filter). It can be
  high while progress is low.
* ``display_skill`` (v1): ``skill_level * sqrt(progress)``, optionally
  smoothed with the previously displayed value:
  ``previous + smoothing * (target - previous)``.
  It never exceeds ``skill_level``; a learner who has done a small part of
  the content is shown a modest figure however well the first answers went,
  and one answer moves it at most ``sqrt(progress)`` times as much as it moves
  ``skill_level`` (plus the small, always non-negative, gain in progress).

>>> import numpy as np
>>> p = np.array([0.9, 0.5, 0.7, 0.2])
>>> scorable = np.array([True, True, True, False])
>>> mask = np.array([True, True, False, True])
>>> proficiency(p, scorable, mask)
0.7
>>> progress(np.array([1, 0, 0, 0]), np.array([0.0, 0.0, 0.0, 0.5]), ~scorable, mask)
0.5
>>> round(display_skill(0.8, 0.25), 3)
0.4
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._types import ArrayLike, BoolArray, FloatArray

__all__ = ["Status", "display_skill", "item_credit", "progress", "proficiency", "skill_level"]


@dataclass(frozen=True, slots=True)
class Status:
    """Status over one filter (v2: proficiency, progress, time, last timestamp; v1: skill levels)."""

    proficiency: float | None
    progress: float
    time_spent_ms: int
    last_interaction_timestamp: float | None
    skill_level: float
    display_skill: float


def _masked_mean(values: FloatArray, mask: BoolArray) -> FloatArray:
    m = mask.astype(np.float64)
    count = m.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, (m @ values) / np.maximum(count, 1.0), np.nan)


def _scalar(x: FloatArray, mask: BoolArray) -> float | None | FloatArray:
    if mask.ndim == 1:
        v = float(x)
        return None if math.isnan(v) else v
    return x


def proficiency(p_correct: ArrayLike, scorable: ArrayLike, mask: ArrayLike) -> float | None | FloatArray:
    """Mean P(correct) over the masked scorable items; None when there are none."""
    p = np.asarray(p_correct, dtype=np.float64)
    m = np.asarray(mask, dtype=bool) & np.asarray(scorable, dtype=bool)
    return _scalar(_masked_mean(p, m), m)


def item_credit(attempts: ArrayLike, max_fraction: ArrayLike, is_theory: ArrayLike) -> FloatArray:
    """Per-item progress credit in [0, 1] (see the module docstring)."""
    att = np.asarray(attempts) > 0
    frac = np.clip(np.asarray(max_fraction, dtype=np.float64), 0.0, 1.0)
    return np.where(np.asarray(is_theory, dtype=bool), frac, att.astype(np.float64))


def progress(attempts: ArrayLike, max_fraction: ArrayLike, is_theory: ArrayLike, mask: ArrayLike) -> float | FloatArray:
    """Mean credit over the masked items (0 for an empty filter)."""
    m = np.asarray(mask, dtype=bool)
    out = np.nan_to_num(_masked_mean(item_credit(attempts, max_fraction, is_theory), m), nan=0.0)
    return float(out) if m.ndim == 1 else out


def skill_level(p_correct: ArrayLike, scorable: ArrayLike, mask: ArrayLike) -> float | FloatArray:
    """v1 skill level: mean P(correct) over masked scorable items (see the module docstring)."""
    p = np.asarray(p_correct, dtype=np.float64)
    m = np.asarray(mask, dtype=bool)
    sc = m & np.asarray(scorable, dtype=bool)
    use = np.where(sc.any(axis=-1, keepdims=True), sc, m)
    out = np.nan_to_num(_masked_mean(p, use), nan=0.0)
    return float(out) if m.ndim == 1 else out


def display_skill(
    skill: ArrayLike,
    progress: ArrayLike,
    *,
    previous: ArrayLike | None = None,
    smoothing: float = 0.3,
) -> float | FloatArray:
    """v1 display skill: ``skill * sqrt(progress)``, optionally smoothed with ``previous``.

    >>> display_skill(0.8, 1.0, previous=0.5, smoothing=0.5)
    0.65
    """
    if not 0.0 < smoothing <= 1.0:
        raise ValueError(f"smoothing must lie in (0, 1], got {smoothing}")
    s = np.clip(np.asarray(skill, dtype=np.float64), 0.0, 1.0)
    prog = np.clip(np.asarray(progress, dtype=np.float64), 0.0, 1.0)
    target = s * np.sqrt(prog)
    if previous is not None:
        prev = np.clip(np.asarray(previous, dtype=np.float64), 0.0, 1.0)
        target = prev + smoothing * (target - prev)
    return float(target) if target.ndim == 0 else target
