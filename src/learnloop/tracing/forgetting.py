r"""Forgetting: a memory model per learner and topic, in the style of FSRS.

A memory has a *stability* :math:`S` (days) and a *difficulty* :math:`D \in
[1, 10]`. The probability of recalling it :math:`t` days after the last review
follows the power forgetting curve

.. math:: R(t, S) = \left(1 + \tfrac{19}{81}\,\tfrac{t}{S}\right)^{-1/2},

so that :math:`R(S, S) = 0.9`. Each review (an attempt on the topic) is graded
from its score: below ``lapse_below`` (0.5) it is a lapse (grade 1), below
``good_from`` (0.8) "hard" (grade 2), otherwise "good" (grade 3). With
:math:`R` the recall probability at the review and :math:`G` the grade::

    first review:  S = w[G-1];  D = w4 - (G - 3) w5
    success:       S' = S (1 + e^{w8} (11 - D) S^{-w9} (e^{w10 (1 - R)} - 1) h)
                   (h = w15 for a "hard" grade, 1 otherwise)
    lapse:         S' = min(S, w11 D^{-w12} ((S + 1)^{w13} - 1) e^{w14 (1 - R)})
    difficulty:    D' = w7 D0(3) + (1 - w7) (D - w6 (G - 3)),  clipped to [1, 10]

A success long after the last review (low R) raises stability most; a success
minutes after the previous one (R near 1) hardly changes it. The default
weights are the published FSRS-4.5 defaults fitted on a large review corpus.
Every update is O(1); :meth:`MemoryModel.recall` is vectorised over topics.

>>> model = MemoryModel()
>>> mem = model.review(None, score=1.0, timestamp=0.0)
>>> round(mem.stability, 4)
3.7145
>>> round(float(model.recall(mem, 3.7145 * 86400.0)), 3)
0.9
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from datetime import datetime

import numpy as np

from ._types import ArrayLike, FloatArray

__all__ = ["DAY_SECONDS", "FSRS_WEIGHTS", "Memory", "MemoryModel", "as_epoch_seconds", "recall_probability"]

DAY_SECONDS = 86400.0
FSRS_WEIGHTS: tuple[float, ...] = (
    0.4872, 1.4003, 3.7145, 13.8206, 5.1618, 1.2298, 0.8975, 0.031, 1.6474,
    0.1367, 1.0461, 2.1072, 0.0793, 0.3246, 1.587, 0.2272, 2.8755,
)  # fmt: skip
FSRS_FACTOR = 19.0 / 81.0


def as_epoch_seconds(timestamp: datetime | float | int) -> float:
    """Seconds since the Unix epoch of an aware datetime or a number (taken as is).

    >>> from datetime import timezone
    >>> as_epoch_seconds(datetime(1970, 1, 2, tzinfo=timezone.utc))
    86400.0
    """
    if isinstance(timestamp, datetime):
        if timestamp.tzinfo is None:
            raise ValueError(f"timestamp must be timezone-aware, got {timestamp.isoformat()}")
        return timestamp.timestamp()
    return float(timestamp)


def _recall(stability: float, elapsed_days: float) -> float:
    """The forgetting curve for one memory (the scalar form of :func:`recall_probability`)."""
    return float((1.0 + FSRS_FACTOR * max(elapsed_days, 0.0) / stability) ** -0.5)


def recall_probability(stability: ArrayLike, elapsed_days: ArrayLike) -> FloatArray:
    """R(t, S) element-wise; NaN stability (never reviewed) gives NaN.

    >>> recall_probability([1.0, 10.0], [1.0, 0.0]).round(3).tolist()
    [0.9, 1.0]
    """
    s = np.asarray(stability, dtype=np.float64)
    t = np.maximum(np.asarray(elapsed_days, dtype=np.float64), 0.0)
    with np.errstate(invalid="ignore"):
        return (1.0 + FSRS_FACTOR * t / s) ** -0.5


@dataclass(frozen=True, slots=True)
class Memory:
    """The memory of one topic: stability (days), difficulty, last review (epoch s)."""

    stability: float
    difficulty: float
    last_review: float
    reviews: int = 1
    lapses: int = 0

    def to_dict(self) -> dict[str, float | int]:
        """As a plain dict (JSON-ready)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, float | int]) -> Memory:
        """Inverse of :meth:`to_dict`."""
        return cls(
            stability=float(data["stability"]),
            difficulty=float(data["difficulty"]),
            last_review=float(data["last_review"]),
            reviews=int(data.get("reviews", 1)),
            lapses=int(data.get("lapses", 0)),
        )


class MemoryModel:
    """FSRS-style memory updates (see the module docstring for the equations).

    ``time_scale`` multiplies every elapsed time before the forgetting curve reads it: a
    memory decays ``time_scale`` times as fast as under FSRS's clock (1: the FSRS defaults;
    :func:`learnloop.tracing.retention.fit_forgetting` fits it to a log's gaps).
    """

    def __init__(
        self,
        *,
        weights: tuple[float, ...] = FSRS_WEIGHTS,
        lapse_below: float = 0.5,
        good_from: float = 0.8,
        time_scale: float = 1.0,
    ) -> None:
        problems = []
        if not (math.isfinite(time_scale) and time_scale > 0.0):
            problems.append(f"time_scale must be positive, got {time_scale}")
        if len(weights) != 17:
            problems.append(f"weights must have 17 values, got {len(weights)}")
        if not 0.0 <= lapse_below <= good_from <= 1.0:
            problems.append(f"need 0 <= lapse_below <= good_from <= 1, got {lapse_below}, {good_from}")
        if problems:
            raise ValueError("; ".join(problems))
        self.weights = tuple(float(w) for w in weights)
        self.lapse_below = lapse_below
        self.good_from = good_from
        self.time_scale = float(time_scale)

    def grade(self, score: float) -> int:
        """Grade 1 (lapse), 2 (hard) or 3 (good) of a score in [0, 1]."""
        if score < self.lapse_below:
            return 1
        if score < self.good_from:
            return 2
        return 3

    def _d0(self, grade: int) -> float:
        w = self.weights
        return min(10.0, max(1.0, w[4] - (grade - 3) * w[5]))

    def review(self, memory: Memory | None, *, score: float, timestamp: datetime | float) -> Memory:
        """The memory after one review at ``timestamp`` with ``score`` (new object)."""
        now = as_epoch_seconds(timestamp)
        if memory is None:
            return Memory(*self.first_review(score, now))
        return Memory(
            *self.next_review(
                memory.stability, memory.difficulty, memory.last_review, memory.reviews, memory.lapses, score, now
            )
        )

    def first_review(self, score: float, now: float) -> tuple[float, float, float, int, int]:
        """The fields of the :class:`Memory` after a first review at ``now`` (epoch seconds)."""
        g = self.grade(score)
        return self.weights[g - 1], self._d0(g), now, 1, int(g == 1)

    def next_review(
        self,
        s: float,
        d: float,
        last_review: float,
        reviews: int,
        lapses: int,
        score: float,
        now: float,
    ) -> tuple[float, float, float, int, int]:
        """The fields of the :class:`Memory` ``(s, d, last_review, reviews, lapses)`` after a
        review at ``now`` (epoch seconds)."""
        g = self.grade(score)
        w = self.weights
        elapsed = max(0.0, now - last_review) / DAY_SECONDS * self.time_scale
        r = _recall(s, elapsed)
        if g == 1:
            new_s = w[11] * d ** -w[12] * ((s + 1.0) ** w[13] - 1.0) * math.exp(w[14] * (1.0 - r))
            new_s = min(new_s, s)
        else:
            hard = w[15] if g == 2 else 1.0
            new_s = s * (1.0 + math.exp(w[8]) * (11.0 - d) * s ** -w[9] * (math.exp(w[10] * (1.0 - r)) - 1.0) * hard)
        new_d = w[7] * self._d0(3) + (1.0 - w[7]) * (d - w[6] * (g - 3))
        return (
            max(new_s, 0.01),
            min(10.0, max(1.0, new_d)),
            max(now, last_review),
            reviews + 1,
            lapses + int(g == 1),
        )

    def replay(self, timestamps: ArrayLike, scores: ArrayLike) -> Memory | None:
        """The memory after a history of reviews (sorted by time first); None if empty.

        >>> MemoryModel().replay([], []) is None
        True
        """
        ts = np.asarray(timestamps, dtype=np.float64).ravel()
        sc = np.asarray(scores, dtype=np.float64).ravel()
        memory: Memory | None = None
        for i in np.argsort(ts, kind="stable").tolist():
            memory = self.review(memory, score=float(sc[i]), timestamp=float(ts[i]))
        return memory

    def interval_days(self, stability: ArrayLike, retention: float) -> FloatArray:
        """Days after a review at which the predicted recall falls to ``retention`` (in (0, 1)):
        the forgetting curve solved for ``t``, ``t = S (R**-2 - 1) / F`` (``F`` = 19/81),
        divided by ``time_scale``; NaN stability (never reviewed) gives NaN.

        >>> MemoryModel().interval_days([1.0, 10.0], 0.9).round(6).tolist()
        [1.0, 10.0]
        """
        if not 0.0 < retention < 1.0:
            raise ValueError(f"retention must lie in (0, 1), got {retention}")
        s = np.asarray(stability, dtype=np.float64)
        return s * (retention**-2.0 - 1.0) / FSRS_FACTOR / self.time_scale  # type: ignore[no-any-return]

    def recall(self, memory: Memory, timestamp: datetime | float) -> float:
        """Predicted probability of recall at ``timestamp``."""
        elapsed = max(0.0, as_epoch_seconds(timestamp) - memory.last_review) / DAY_SECONDS
        return _recall(memory.stability, elapsed * self.time_scale)

    @staticmethod
    def recall_many(stability: ArrayLike, last_review: ArrayLike, timestamp: datetime | float) -> FloatArray:
        """Vectorised recall over topics from arrays of stability and last review (NaN = never),
        on FSRS's clock (``time_scale`` 1)."""
        now = as_epoch_seconds(timestamp)
        elapsed = (now - np.asarray(last_review, dtype=np.float64)) / DAY_SECONDS
        return recall_probability(stability, elapsed)
