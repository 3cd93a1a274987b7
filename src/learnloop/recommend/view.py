"""What a policy sees of a learner: arrays over the catalog's item order and topics."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from learnloop._types import BoolArray, FloatArray, IntArray
from learnloop.content import CatalogIndex

__all__ = [
    "LearnerView",
    "TopicRequirements",
    "ready_topics",
    "required_prerequisites",
    "subtree_sums",
    "topic_structure",
    "topic_subtree_end",
]


def subtree_sums(index: CatalogIndex, values: FloatArray) -> FloatArray:
    """Sum of ``values`` (one per position) over each topic's subtree, by prefix sums."""
    prefix = np.concatenate(([0.0], np.cumsum(values, dtype=np.float64)))
    return prefix[index.topic_end] - prefix[index.topic_start]


@dataclass(frozen=True, eq=False)
class TopicRequirements:
    """What the policies need of a catalog's topic graph, as flat arrays (built once per catalog).

    ``requirements``: for each topic, the topics it needs mastered first (its own
    prerequisites and its ancestors'), flattened as ``(req_owner, req_topic)``
    pairs; ``leaf_owner``/``leaf_topic`` pair each topic with the leaf topics
    holding exercises in its subtree; ``scorable_count`` counts each subtree's
    scorable items.
    """

    requirements: tuple[IntArray, ...]
    req_owner: IntArray
    req_topic: IntArray
    leaf_owner: IntArray
    leaf_topic: IntArray
    subtree_end: IntArray
    scorable_count: FloatArray


def topic_structure(index: CatalogIndex) -> TopicRequirements:
    """The :class:`TopicRequirements` of a compiled catalog (made once, kept on the index)."""
    return index.derived("recommend.topic_requirements", _topic_requirements)


def _topic_requirements(index: CatalogIndex) -> TopicRequirements:
    n = index.n_topics
    direct: list[list[int]] = [[] for _ in range(n)]
    for pre, post in index.prerequisite_edges.tolist():
        direct[post].append(pre)
    requirements: list[IntArray] = []
    for t in range(n):
        needed = set(direct[t])
        for ancestor in index.topic_ancestors(t):
            needed.update(direct[ancestor])
        requirements.append(np.asarray(sorted(needed), dtype=np.int64))
    end = np.arange(1, n + 1, dtype=np.int64)
    for t in range(n - 1, -1, -1):
        parent = int(index.topic_parent[t])
        if parent >= 0 and end[t] > end[parent]:
            end[parent] = end[t]
    scorable_count = subtree_sums(index, index.scorable.astype(np.float64))
    is_leaf = end - np.arange(n) == 1
    owners: list[int] = []
    leaves: list[int] = []
    for t in range(n):
        if not is_leaf[t]:
            for c in range(t + 1, int(end[t])):
                if is_leaf[c] and scorable_count[c] > 0:
                    owners.append(t)
                    leaves.append(c)
    structure = TopicRequirements(
        requirements=tuple(requirements),
        req_owner=np.repeat(np.arange(n, dtype=np.int64), [r.size for r in requirements]),
        req_topic=np.concatenate(requirements) if requirements else np.zeros(0, dtype=np.int64),
        leaf_owner=np.asarray(owners, dtype=np.int64),
        leaf_topic=np.asarray(leaves, dtype=np.int64),
        subtree_end=end,
        scorable_count=scorable_count,
    )
    return structure


def required_prerequisites(index: CatalogIndex) -> tuple[IntArray, ...]:
    """For each topic, the topics it needs mastered first: its own prerequisites and its ancestors'."""
    return topic_structure(index).requirements


def topic_subtree_end(index: CatalogIndex) -> IntArray:
    """Topics are in pre-order, so topic ``t``'s subtree is topics ``t .. end[t]-1``."""
    return topic_structure(index).subtree_end


def ready_topics(index: CatalogIndex, mastered: BoolArray) -> BoolArray:
    """Topics whose every requirement is mastered."""
    structure = topic_structure(index)
    unmet = np.bincount(
        structure.req_owner, weights=(~mastered[structure.req_topic]).astype(np.float64), minlength=index.n_topics
    )
    return unmet == 0


@dataclass(frozen=True, eq=False)
class LearnerView:
    """One learner's predictions and history, aligned with a catalog.

    ``p_correct`` is the predicted probability of success (from the ability
    beliefs; forgetting is kept apart in ``recall``, the predicted recall of
    each topic, NaN for a topic never practised); ``discrimination`` the IRT
    ``a`` of each item, from which :attr:`information` (the Fisher information
    at the current ability estimate) follows.
    """

    index: CatalogIndex
    p_correct: FloatArray
    discrimination: FloatArray | float
    attempts: IntArray
    last_score: FloatArray
    viewed: FloatArray
    recall: FloatArray
    last_seen: FloatArray | None = None
    last_failed: int | None = None

    @cached_property
    def information(self) -> FloatArray:
        """Fisher information of each item, ``a**2 p (1 - p)``."""
        a = np.asarray(self.discrimination, dtype=np.float64)
        return a * a * self.p_correct * (1.0 - self.p_correct)

    @cached_property
    def _sums(self) -> FloatArray:
        """Subtree sums of attempts, of scorable predicted success and of items not yet done."""
        index = self.index
        done = (self.attempts > 0) | (self.viewed >= 1.0)
        stacked = np.empty((3, index.n_items + 1))
        stacked[:, 0] = 0.0
        stacked[0, 1:] = self.attempts
        np.multiply(self.p_correct, index.scorable, out=stacked[1, 1:])
        stacked[2, 1:] = ~done
        np.cumsum(stacked, axis=1, out=stacked)
        return stacked[:, index.topic_end] - stacked[:, index.topic_start]

    @property
    def topic_attempts(self) -> FloatArray:
        return self._sums[0]

    @cached_property
    def topic_skill(self) -> FloatArray:
        """Mean predicted success over each topic's scorable items (NaN when it has none)."""
        count = topic_structure(self.index).scorable_count
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, self._sums[1] / np.maximum(count, 1.0), np.nan)

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
        all_done = self._sums[2] == 0
        with np.errstate(invalid="ignore"):
            by_skill = (skill >= threshold) & (self.topic_attempts >= min_attempts)
        mastered = np.where(np.isnan(skill), all_done, by_skill | self.streaks(length=streak))
        # a topic with sub-topics is mastered when every leaf below it that holds exercises is
        structure = topic_structure(index)
        if structure.leaf_owner.size:
            unmet = np.bincount(
                structure.leaf_owner,
                weights=(~mastered[structure.leaf_topic]).astype(np.float64),
                minlength=index.n_topics,
            )
            has_leaves = np.bincount(structure.leaf_owner, minlength=index.n_topics) > 0
            mastered |= has_leaves & (unmet == 0)
        return mastered
