"""What a policy sees of a learner: arrays over the catalog's item order and topics."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from learnloop._types import BoolArray, FloatArray, IntArray
from learnloop.content import CatalogIndex

__all__ = ["LearnerView", "required_prerequisites", "subtree_sums"]


def subtree_sums(index: CatalogIndex, values: FloatArray) -> FloatArray:
    """Sum of ``values`` (one per position) over each topic's subtree, by prefix sums."""
    prefix = np.concatenate(([0.0], np.cumsum(values, dtype=np.float64)))
    return prefix[index.topic_end] - prefix[index.topic_start]


_PREREQ_CACHE: weakref.WeakKeyDictionary[CatalogIndex, tuple[IntArray, ...]] = weakref.WeakKeyDictionary()


def required_prerequisites(index: CatalogIndex) -> tuple[IntArray, ...]:
    """For each topic, the topics it needs mastered first: its own prerequisites and its ancestors'."""
    cached = _PREREQ_CACHE.get(index)
    if cached is not None:
        return cached
    direct: list[list[int]] = [[] for _ in range(index.n_topics)]
    for pre, post in index.prerequisite_edges.tolist():
        direct[post].append(pre)
    out: list[IntArray] = []
    for t in range(index.n_topics):
        needed = set(direct[t])
        for ancestor in index.topic_ancestors(t):
            needed.update(direct[ancestor])
        out.append(np.asarray(sorted(needed), dtype=np.int32))
    result = tuple(out)
    _PREREQ_CACHE[index] = result
    return result


@dataclass(frozen=True, eq=False)
class LearnerView:
    """One learner's predictions and history, aligned with a catalog.

    ``p_correct`` is the predicted probability of success now (forgetting
    included), ``information`` the Fisher information of each item at the
    current ability estimate, ``recall`` the predicted recall of each topic
    (NaN for a topic never practised).
    """

    index: CatalogIndex
    p_correct: FloatArray
    information: FloatArray
    attempts: IntArray
    last_score: FloatArray
    viewed: FloatArray
    recall: FloatArray
    last_failed: int | None = None

    @cached_property
    def topic_attempts(self) -> FloatArray:
        return subtree_sums(self.index, self.attempts.astype(np.float64))

    @cached_property
    def topic_skill(self) -> FloatArray:
        """Mean predicted success over each topic's scorable items (NaN when it has none)."""
        scorable = self.index.scorable.astype(np.float64)
        total = subtree_sums(self.index, np.where(self.index.scorable, self.p_correct, 0.0))
        count = subtree_sums(self.index, scorable)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, total / np.maximum(count, 1.0), np.nan)

    def mastered(self, *, threshold: float, min_attempts: int) -> BoolArray:
        """Topics whose predicted success reaches ``threshold`` on enough evidence.

        A topic without scorable items is mastered once each of its items was
        attempted or fully viewed.
        """
        skill = self.topic_skill
        done = (self.attempts > 0) | (self.viewed >= 1.0)
        all_done = subtree_sums(self.index, (~done).astype(np.float64)) == 0
        with np.errstate(invalid="ignore"):
            by_skill = (skill >= threshold) & (self.topic_attempts >= min_attempts)
        return np.where(np.isnan(skill), all_done, by_skill)
