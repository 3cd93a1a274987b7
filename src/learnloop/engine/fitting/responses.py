"""A catalog's scored attempts as flat columns, and what the fits read of a log of responses.

:class:`Responses` is what the learner-model fits (:mod:`learnloop.engine.fitting.model`,
:mod:`learnloop.engine.fitting.search`) read of a log: ``learnloop.datasets.ResponseLog`` has
it, and so has :class:`EventColumns`, the engine's own event log read into arrays (one row per
scored attempt, a learner's rows contiguous and in time order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Protocol, Self

import numpy as np

from learnloop._types import BoolArray, FloatArray, IntArray

__all__ = ["EventColumns", "Responses", "learner_folds"]


class Responses(Protocol):
    """Responses of learners to items as flat arrays, a learner's rows contiguous and in order."""

    @property
    def learner(self) -> IntArray: ...
    @property
    def item(self) -> IntArray: ...
    @property
    def correct(self) -> FloatArray: ...
    @property
    def time(self) -> FloatArray: ...
    @property
    def item_ids(self) -> tuple[str, ...]: ...
    @property
    def timed(self) -> bool: ...
    @property
    def n_responses(self) -> int: ...
    @property
    def n_learners(self) -> int: ...
    @property
    def n_items(self) -> int: ...
    @property
    def first(self) -> BoolArray: ...

    def folds(self, k: int = 5, *, seed: int = 0) -> list[tuple[Self, Self]]: ...


def learner_folds(present: IntArray, k: int, seed: int) -> list[IntArray]:
    """The learners of each of ``k`` folds: ``present`` shuffled with ``seed``, cut in ``k`` parts
    (``ResponseLog.folds`` and :meth:`EventColumns.folds` cut alike)."""
    if k < 2:
        raise ValueError(f"k must be at least 2, got {k}")
    return list(np.array_split(np.random.default_rng(seed).permutation(present), k))


@dataclass(frozen=True, eq=False)
class EventColumns:
    """A catalog's scored attempts (``Engine.event_log`` as arrays): ``learner`` and ``item`` index
    ``learner_ids`` and ``item_ids`` (the catalog's item ids), ``correct`` the score, ``time`` epoch
    seconds; a learner's rows are contiguous, in time order. ``position``: each answer's catalog
    position, for answers given in a topic other than their item's first (None: the item's first)."""

    learner: IntArray
    item: IntArray
    correct: FloatArray
    time: FloatArray
    learner_ids: tuple[str, ...]
    item_ids: tuple[str, ...]
    timed: bool = True
    position: IntArray | None = None

    @property
    def n_responses(self) -> int:
        return int(self.learner.size)

    @property
    def n_learners(self) -> int:
        return len(self.learner_ids)

    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    @cached_property
    def first(self) -> BoolArray:
        """True on each learner's first response."""
        out = np.ones(self.n_responses, dtype=bool)
        out[1:] = self.learner[1:] != self.learner[:-1]
        return out

    def select(self, learners: Sequence[int] | IntArray) -> EventColumns:
        """The rows of the given learner indices (vocabularies kept)."""
        keep = np.isin(self.learner, np.asarray(learners, dtype=np.intp))
        return replace(
            self,
            learner=self.learner[keep],
            item=self.item[keep],
            correct=self.correct[keep],
            time=self.time[keep],
            position=None if self.position is None else self.position[keep],
        )

    def present_learners(self) -> IntArray:
        return np.unique(self.learner)

    def split(self, test_size: float, *, seed: int = 0) -> tuple[EventColumns, EventColumns]:
        """``(fit, held_out)`` by learner, as ``ResponseLog.split`` cuts."""
        learners = np.random.default_rng(seed).permutation(self.present_learners())
        cut = int(round(test_size * learners.size))
        return self.select(learners[cut:]), self.select(learners[:cut])

    def folds(self, k: int = 5, *, seed: int = 0) -> list[tuple[EventColumns, EventColumns]]:
        """``k`` ``(train, validation)`` pairs by learner, each learner validated once."""
        parts = learner_folds(self.present_learners(), k, seed)
        return [(self.select(np.concatenate(parts[:j] + parts[j + 1 :])), self.select(parts[j])) for j in range(k)]
