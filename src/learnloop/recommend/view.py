"""What a policy sees of a learner: arrays over the catalog's item order and topics."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from learnloop._types import BoolArray, FloatArray, IntArray
from learnloop.content import CatalogIndex

__all__ = ["LearnerView", "required_prerequisites", "subtree_sums", "topic_subtree_end"]


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


_SUBTREE_CACHE: weakref.WeakKeyDictionary[CatalogIndex, IntArray] = weakref.WeakKeyDictionary()


def topic_subtree_end(index: CatalogIndex) -> IntArray:
    """Topics are in pre-order, so topic ``t``'s subtree is topics ``t .. end[t]-1``."""
    cached = _SUBTREE_CACHE.get(index)
    if cached is not None:
        return cached
    n = index.n_topics
    end = np.arange(1, n + 1, dtype=np.int64)
    for t in range(n - 1, -1, -1):
        parent = int(index.topic_parent[t])
        if parent >= 0 and end[t] > end[parent]:
            end[parent] = end[t]
    _SUBTREE_CACHE[index] = end
    return end


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
    last_seen: FloatArray | None = None
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

    def streaks(self, *, length: int, success: float = 0.8) -> BoolArray:
        """Leaf topics whose ``length`` most recently attempted items were all answered well."""
        index = self.index
        out = np.zeros(index.n_topics, dtype=bool)
        if self.last_seen is None or length <= 0:
            return out
        tried = np.flatnonzero((self.attempts > 0) & index.scorable & ~np.isnan(self.last_seen))
        if tried.size < length:
            return out
        topic = index.item_topic[tried]
        order = np.lexsort((-self.last_seen[tried], topic))
        topic, scores = topic[order], self.last_score[tried][order]
        starts = np.flatnonzero(np.r_[True, topic[1:] != topic[:-1]])
        counts = np.diff(np.r_[starts, topic.size])
        for start, count in zip(starts.tolist(), counts.tolist(), strict=True):
            if count >= length and bool(np.all(scores[start : start + length] >= success)):
                out[topic[start]] = True
        return out

    def mastered(self, *, threshold: float, min_attempts: int, streak: int = 0) -> BoolArray:
        """Topics mastered: predicted success reaches ``threshold`` on at least
        ``min_attempts`` attempts, or (leaf topics) the last ``streak`` attempted
        items were answered well; a topic with sub-topics is also mastered when
        all of its sub-topics with exercises are.

        A topic without scorable items is mastered once each of its items was
        attempted or fully viewed.
        """
        index = self.index
        skill = self.topic_skill
        done = (self.attempts > 0) | (self.viewed >= 1.0)
        all_done = subtree_sums(index, (~done).astype(np.float64)) == 0
        with np.errstate(invalid="ignore"):
            by_skill = (skill >= threshold) & (self.topic_attempts >= min_attempts)
        mastered = np.where(np.isnan(skill), all_done, by_skill | self.streaks(length=streak))
        # a parent is mastered when every sub-topic that holds exercises is
        end = topic_subtree_end(index)
        has_exercises = ~np.isnan(skill)
        for t in range(index.n_topics - 1, -1, -1):
            if end[t] - t > 1 and not mastered[t]:
                children = np.arange(t + 1, end[t])
                leaves = children[(end[children] - children == 1) & has_exercises[children]]
                if leaves.size and bool(mastered[leaves].all()):
                    mastered[t] = True
        return mastered
