"""What a policy sees of a learner: arrays over the catalog's item order and topics."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from learnloop._types import BoolArray, FloatArray, IntArray
from learnloop.content import CatalogIndex
from learnloop.tracing import TopicStructure

__all__ = [
    "LearnerView",
    "TopicExercises",
    "catalog_topics",
    "ready_topics",
    "required_prerequisites",
    "subtree_sums",
    "topic_exercises",
]


def subtree_sums(index: CatalogIndex, values: FloatArray) -> FloatArray:
    """Sum of ``values`` (one per position, along the last axis) over each topic's subtree.

    Positions under a topic form a contiguous range, so the positions split into
    *segments* (runs between consecutive topic range boundaries): one
    ``np.add.reduceat`` sums the segments and each topic adds up its own
    segments, far fewer than its positions.

    >>> from learnloop.sim import sample_course
    >>> from learnloop.content import compile_catalog
    >>> items, catalog = sample_course(n_chapters=2, topics_per_chapter=2, items_per_topic=3)
    >>> index = compile_catalog(catalog, {i.item_id: i for i in items})
    >>> subtree_sums(index, np.ones(index.n_items)).tolist() == (index.topic_end - index.topic_start).tolist()
    True
    """
    segments = index.derived("recommend.segments", _segments)
    values = np.asarray(values, dtype=np.float64)
    shape = (*values.shape[:-1], segments.bounds.size + 1)
    prefix = np.zeros(shape)
    if segments.bounds.size:
        np.cumsum(np.add.reduceat(values, segments.bounds, axis=-1), axis=-1, out=prefix[..., 1:])
    return prefix[..., segments.end] - prefix[..., segments.start]


@dataclass(frozen=True, eq=False)
class _Segments:
    """``bounds``: first position of each segment; per topic, its first segment and the one past its last."""

    bounds: IntArray
    start: IntArray
    end: IntArray


def _segments(index: CatalogIndex) -> _Segments:
    n = index.n_items
    cuts = np.unique(np.concatenate(([0], index.topic_start, index.topic_end)).astype(np.intp))
    bounds = cuts[cuts < n]
    return _Segments(
        bounds=bounds,
        start=np.searchsorted(bounds, index.topic_start).astype(np.intp),
        end=np.searchsorted(bounds, index.topic_end).astype(np.intp),
    )


@dataclass(frozen=True, eq=False)
class TopicExercises:
    """What the policies need of a catalog beyond its topic graph (built once per catalog).

    The graph itself (requirements, ancestors, leaves) is the catalog's one
    :class:`~learnloop.tracing.TopicStructure` (:func:`catalog_topics`); this adds
    what depends on the items: ``scorable_count`` counts each subtree's scorable
    items, and ``leaf_owner``/``leaf_topic`` pair each topic with the leaf
    topics holding exercises below it.
    """

    leaf_owner: IntArray
    leaf_topic: IntArray
    scorable_count: FloatArray


def catalog_topics(index: CatalogIndex) -> TopicStructure:
    """The catalog's one :class:`~learnloop.tracing.TopicStructure` (made once, kept on the index)."""
    return index.derived("topics", _make_topics)


def _make_topics(index: CatalogIndex) -> TopicStructure:
    return TopicStructure.from_arrays(index.topic_parent, index.prerequisite_edges)


def topic_exercises(index: CatalogIndex) -> TopicExercises:
    """The :class:`TopicExercises` of a compiled catalog (made once, kept on the index)."""
    return index.derived("recommend.topic_exercises", _topic_exercises)


def _topic_exercises(index: CatalogIndex) -> TopicExercises:
    topics = catalog_topics(index)
    scorable_count = subtree_sums(index, index.scorable.astype(np.float64))
    leaves = np.flatnonzero(topics.is_leaf & (scorable_count > 0))
    depth = topics.depth[leaves]
    # each such leaf pairs with every one of its ancestors (the chain's columns 1..depth)
    owner_rows = np.repeat(leaves, depth)
    columns = np.concatenate([np.arange(1, d + 1) for d in depth.tolist()]) if leaves.size else leaves
    owners = topics.chains[owner_rows, columns]
    order = np.lexsort((owner_rows, owners))
    return TopicExercises(
        leaf_owner=owners[order].astype(np.intp),
        leaf_topic=owner_rows[order].astype(np.intp),
        scorable_count=scorable_count,
    )


def required_prerequisites(index: CatalogIndex) -> tuple[IntArray, ...]:
    """For each topic, the topics it needs mastered first: its own prerequisites and its ancestors'."""
    topics = catalog_topics(index)
    return tuple(topics.requires(t) for t in range(topics.n_topics))


def ready_topics(index: CatalogIndex, mastered: BoolArray) -> BoolArray:
    """Topics whose every requirement is mastered."""
    topics = catalog_topics(index)
    unmet = np.bincount(
        topics.req_owner, weights=(~mastered[topics.req_idx]).astype(np.float64), minlength=index.n_topics
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
        stacked = np.empty((3, index.n_items))
        stacked[0] = self.attempts
        np.multiply(self.p_correct, index.scorable, out=stacked[1])
        stacked[2] = ~done
        return subtree_sums(index, stacked)

    @property
    def topic_attempts(self) -> FloatArray:
        return self._sums[0]

    @cached_property
    def topic_skill(self) -> FloatArray:
        """Mean predicted success over each topic's scorable items (NaN when it has none)."""
        count = topic_exercises(self.index).scorable_count
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
        structure = topic_exercises(index)
        if structure.leaf_owner.size:
            unmet = np.bincount(
                structure.leaf_owner,
                weights=(~mastered[structure.leaf_topic]).astype(np.float64),
                minlength=index.n_topics,
            )
            has_leaves = np.bincount(structure.leaf_owner, minlength=index.n_topics) > 0
            mastered |= has_leaves & (unmet == 0)
        return mastered
