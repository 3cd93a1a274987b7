"""What a policy sees of a learner: arrays over the catalog's item order and topics."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from learnloop._types import BoolArray, FloatArray, IntArray
from learnloop.content import CatalogIndex
from learnloop.tracing import LearnerState, TopicStructure
from learnloop.tracing.predictions import Predictions, TopicRuns, topic_sums

__all__ = [
    "LearnerView",
    "TopicExercises",
    "catalog_topics",
    "exercise_positions",
    "in_topic_of",
    "per_position",
    "ready_topics",
    "required_prerequisites",
    "subtree_sums",
    "subtree_totals",
    "topic_exercises",
    "topic_runs",
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


def topic_runs(index: CatalogIndex) -> TopicRuns:
    """The positions each topic owns (not its sub-topics'), as runs (made once, kept on the index)."""
    return index.derived("recommend.runs", lambda ix: TopicRuns.of(ix.item_topic, ix.n_topics))


def per_position(index: CatalogIndex, values: np.ndarray) -> np.ndarray:
    """``values[index.item_topic]``: one value per topic spread over the topic's own positions."""
    runs = topic_runs(index)
    if runs.identity:  # positions run topic by topic: repeating is a fraction of the cost of a gather
        return np.repeat(values, runs.counts)
    return values[index.item_topic]


def exercise_positions(index: CatalogIndex) -> BoolArray:
    """``~index.is_theory``, made once and kept on the index (read-only)."""
    return index.derived("recommend.exercises", _exercises)


def _exercises(index: CatalogIndex) -> BoolArray:
    out = ~index.is_theory
    out.setflags(write=False)
    return out


def in_topic_of(index: CatalogIndex, topic: int, mask: BoolArray) -> BoolArray:
    """``mask & (index.item_topic == topic)``: the positions of ``mask`` that ``topic`` owns."""
    runs = topic_runs(index)
    if not runs.identity:
        return mask & (index.item_topic == topic)  # type: ignore[no-any-return]
    out = np.zeros_like(mask)
    lo, hi = runs.ptr[topic], runs.ptr[topic + 1]
    out[lo:hi] = mask[lo:hi]
    return out


def subtree_totals(index: CatalogIndex, own: FloatArray) -> FloatArray:
    """From per-topic values of each topic's own positions (last axis), the totals over each subtree.

    Topics are in pre-order, so a subtree is the range of topics from its root
    to :func:`_subtree_end`; a catalog without sub-topics returns ``own`` itself.
    """
    (end,) = index.derived("recommend.subtree_end", lambda ix: (_subtree_end(ix),))  # (None is kept too)
    if end is None:
        return own
    prefix = np.zeros((*own.shape[:-1], own.shape[-1] + 1))
    np.cumsum(own, axis=-1, out=prefix[..., 1:])
    return prefix[..., end] - prefix[..., : own.shape[-1]]


def _subtree_end(index: CatalogIndex) -> IntArray | None:
    """Per topic, the topic after its subtree (None when no topic has sub-topics)."""
    parent = index.topic_parent
    if not (parent >= 0).any():
        return None
    chains = catalog_topics(index).chains[:, 1:]
    size = 1 + np.bincount(chains[chains < index.n_topics], minlength=index.n_topics)
    return (np.arange(index.n_topics) + size).astype(np.intp)


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
    return unmet == 0  # type: ignore[no-any-return]


class LearnerView:
    """One learner's predictions and history, aligned with a catalog.

    ``p_correct`` is the predicted probability of success (from the ability
    beliefs; forgetting is kept apart in ``recall``, the predicted recall of
    each topic, NaN for a topic never practised); ``discrimination`` the IRT
    ``a`` of each item, from which :attr:`information` (the Fisher information
    at the current ability estimate) follows. ``attempts``, ``last_score``,
    ``viewed`` (largest theory fraction) and ``last_seen`` are per position;
    given the learner ``state`` instead, they are made from it when first read
    (a policy that does not read them does not pay for them), and topic
    figures are read off the items met. ``predictions``: the carried
    predictions ``p_correct`` belongs to, whose per-topic sums are reused.
    ``recall_of`` may stand for ``recall``: it makes the array when first read. The catalog's
    ``desired_retention`` (review serves what fell below it) and fitted ``prerequisite_gating``
    (None: not fitted; learn mode reads it); ``due_at_of`` gives each topic's due time under a
    retention (epoch seconds, NaN: never practised); ``now``: when the recall was read."""

    def __init__(
        self,
        index: CatalogIndex,
        p_correct: FloatArray,
        discrimination: FloatArray | float,
        attempts: IntArray | None = None,
        last_score: FloatArray | None = None,
        viewed: FloatArray | None = None,
        recall: FloatArray | None = None,
        last_seen: FloatArray | None = None,
        last_failed: int | None = None,
        *,
        state: LearnerState | None = None,
        predictions: Predictions | None = None,
        recall_of: Callable[[], FloatArray] | None = None,
        desired_retention: float = 0.9,
        due_at_of: Callable[[float], FloatArray] | None = None,
        now: float | None = None,
        prerequisite_gating: float | None = None,
    ) -> None:
        if state is None and (attempts is None or last_score is None or viewed is None):
            raise TypeError("a learner view needs attempts, last_score and viewed, or the learner state")
        if recall is None and recall_of is None:
            raise TypeError("a learner view needs the recall of each topic")
        self.index = index
        self.p_correct = p_correct
        self.discrimination = discrimination
        self._recall = recall
        self._recall_of = recall_of
        self.last_failed = last_failed
        self.state = state
        self.predictions = predictions
        self.prerequisite_gating = prerequisite_gating
        self._given = {"attempts": attempts, "last_score": last_score, "viewed": viewed, "last_seen": last_seen}
        self.desired_retention = desired_retention
        self._due_at_of = due_at_of
        self._due: dict[float, FloatArray] = {}
        self.now = now

    def due_at(self, retention: float) -> FloatArray | None:
        """When each topic's predicted recall falls below ``retention`` (epoch seconds, NaN: never
        practised; None: not known), made once per retention."""
        if self._due_at_of is not None and retention not in self._due:
            self._due[retention] = self._due_at_of(retention)
        return self._due.get(retention)

    @property
    def recall(self) -> FloatArray:
        """Predicted recall per topic (NaN: never practised)."""
        found = self._recall
        if found is None:
            assert self._recall_of is not None
            found = self._recall = self._recall_of()
        return found

    #: the learner state's name of each per-position array
    _FROM_STATE = {
        "attempts": "attempts",
        "last_score": "last_score",
        "viewed": "max_fraction",
        "last_seen": "last_timestamp",
    }

    def _array(self, name: str) -> np.ndarray | None:
        found = self._given[name]
        if found is None and self.state is not None:
            found = getattr(self.state, self._FROM_STATE[name])
            if name == "attempts":
                found = found.astype(np.int64)
            self._given[name] = found
        return found

    @property
    def attempts(self) -> IntArray:
        """Attempts per position."""
        found = self._array("attempts")
        assert found is not None
        return found

    @property
    def last_score(self) -> FloatArray:
        """Last score per position (NaN: none)."""
        found = self._array("last_score")
        assert found is not None
        return found

    @property
    def viewed(self) -> FloatArray:
        """Largest theory fraction viewed per position."""
        found = self._array("viewed")
        assert found is not None
        return found

    @property
    def last_seen(self) -> FloatArray | None:
        """Last interaction per position (epoch seconds, NaN: none; None: not known)."""
        return self._array("last_seen")

    def attempts_at(self, positions: IntArray) -> IntArray:
        """``attempts[positions]``; read off the items met while the dense array is not made."""
        return self._at("attempts", positions)

    def viewed_at(self, positions: IntArray) -> FloatArray:
        """``viewed[positions]``; read off the items met while the dense array is not made."""
        return self._at("viewed", positions)

    def _at(self, name: str, positions: IntArray) -> np.ndarray:
        state = self.state
        where = np.asarray(positions, dtype=np.intp)
        if self._given[name] is not None or state is None or 16 * where.size > self.index.n_items:
            found = self._array(name)  # (many positions: the dense array is made, and kept for the step)
            assert found is not None
            return found[positions]
        # the dense array's values at ``positions``: the row of each item met, else a blank row's (0)
        out = np.zeros(where.shape)
        touched = state.touched
        if touched.size and where.size:
            slot = np.minimum(np.searchsorted(touched, where), touched.size - 1)
            hit = touched[slot] == where
            out[hit] = (state.met_attempts if name == "attempts" else state.met_fraction)[slot[hit]]
        return out.astype(np.int64) if name == "attempts" else out

    def attempted_at(self, positions: IntArray) -> tuple[IntArray, IntArray]:
        """Where ``attempts_at(positions)`` may be non-zero, and the attempts there: indices into
        ``positions`` (increasing) and the attempts at those. With the learner state, only the items
        met; else every index (so that ``x + w * attempts`` there is ``x + w * attempts_at(positions)``
        everywhere: ``x + w * 0`` is ``x``)."""
        state = self.state
        if state is None or self._given["attempts"] is not None or not positions.size:
            return np.arange(positions.size), self.attempts_at(positions)
        touched = state.touched
        slot = np.minimum(np.searchsorted(positions, touched), positions.size - 1)
        hit = positions[slot] == touched
        return slot[hit], state.met_attempts[hit].astype(np.int64)

    def attempted_count(self, mask: BoolArray) -> int:
        """How many positions of ``mask`` were attempted at least once."""
        state = self.state
        if self._given["attempts"] is not None or state is None:
            return int(np.count_nonzero((self.attempts > 0) & mask))
        return int(np.count_nonzero((state.met_attempts > 0) & mask[state.touched]))

    @cached_property
    def information(self) -> FloatArray:
        """Fisher information of each item, ``a**2 p (1 - p)``: carried by the predictions
        ``p_correct`` belongs to when given (the same doubles)."""
        predictions = self.predictions
        if predictions is not None and predictions.p is self.p_correct and predictions.items.a is self.discrimination:
            return predictions.information()
        a = np.asarray(self.discrimination, dtype=np.float64)
        return a * a * self.p_correct * (1.0 - self.p_correct)

    def information_at(self, positions: IntArray | int) -> FloatArray:
        """:attr:`information` at some positions only."""
        if np.ndim(positions) == 1 and 4 * len(positions) > self.p_correct.size:  # type: ignore[arg-type]
            # many positions (an assessment's pool): the whole array once, then gathered (same values)
            return self.information[positions]
        p = self.p_correct[positions]
        a = self.discrimination if np.ndim(self.discrimination) == 0 else np.asarray(self.discrimination)[positions]
        a = np.asarray(a, dtype=np.float64)
        return a * a * p * (1.0 - p)

    @cached_property
    def _met(self) -> tuple[IntArray, FloatArray, BoolArray]:
        """The topic, attempts and whether done (attempted or fully viewed) of each item met
        (of every item when the learner state is not known)."""
        index = self.index
        state = self.state
        if state is not None:
            attempts = state.met_attempts
            return index.item_topic[state.touched], attempts, (attempts > 0) | (state.met_fraction >= 1.0)
        return index.item_topic, self.attempts.astype(np.float64), (self.attempts > 0) | (self.viewed >= 1.0)

    @cached_property
    def topic_attempts(self) -> FloatArray:
        """Attempts over each topic's subtree."""
        index = self.index
        state = self.state
        if state is not None and "_met" not in self.__dict__:  # (the items met without what is done)
            topic, attempts = index.item_topic[state.touched], state.met_attempts
        else:
            topic, attempts, _ = self._met
        own = np.bincount(topic, weights=attempts, minlength=index.n_topics).astype(np.float64, copy=False)
        return subtree_totals(index, own)

    @cached_property
    def _remaining(self) -> FloatArray:
        """Items not yet done over each topic's subtree."""
        topic, _, done = self._met
        own = np.empty(self.index.n_topics)
        own[:] = topic_runs(self.index).counts - np.bincount(topic, weights=done, minlength=own.size)
        return subtree_totals(self.index, own)

    @cached_property
    def _skill_sums(self) -> FloatArray:
        """Predicted success summed over each topic's subtree's scorable items: from the
        :class:`~learnloop.tracing.predictions.Predictions` carried from the learner's
        previous state when given (the figures are the same)."""
        index = self.index
        predictions = self.predictions
        if predictions is not None and predictions.p is self.p_correct:
            own = predictions.sums(predictions.items.scorable)  # (the catalog's, as the model holds it)
        else:
            own = topic_sums(topic_runs(index), self.p_correct, index.scorable)
        return subtree_totals(index, own)

    @cached_property
    def topic_skill(self) -> FloatArray:
        """Mean predicted success over each topic's scorable items (NaN when it has none)."""
        scorable = _scorable_topics(self.index)
        return np.where(scorable.any, self._skill_sums / scorable.count, np.nan)

    def streaks(self, *, length: int, success: float = 0.8) -> BoolArray:
        """Leaf topics whose ``length`` most recently attempted items were all answered well."""
        index = self.index
        out = np.zeros(index.n_topics, dtype=bool)
        if (self.state is None and self.last_seen is None) or length <= 0:
            return out
        state = self.state
        if state is not None:
            met = state.touched
            keep = (state.met_attempts > 0) & index.scorable[met] & ~np.isnan(state.met_timestamp)
            tried, seen, scored = met[keep], state.met_timestamp[keep], state.met_score[keep]
        else:
            last_seen = self.last_seen
            assert last_seen is not None
            tried = np.flatnonzero((self.attempts > 0) & index.scorable & ~np.isnan(last_seen))
            seen, scored = last_seen[tried], self.last_score[tried]
        if tried.size < length:
            return out
        topic = index.item_topic[tried]
        order = np.lexsort((-seen, topic))
        topic, scores = topic[order], scored[order]
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
        scorable = _scorable_topics(index)
        # (a topic without scorable items compares 0 here, and takes its other figure below)
        by_skill = (self._skill_sums / scorable.count >= threshold) & (self.topic_attempts >= min_attempts)
        if streak > 0:
            by_skill |= self.streaks(length=streak)
        # (a topic without scorable items is mastered once each of its items is done)
        mastered = by_skill if scorable.every else np.where(scorable.any, by_skill, self._remaining == 0)
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


@dataclass(frozen=True, eq=False)
class _ScorableTopics:
    """Per topic: whether its subtree holds scorable items (``any``), and their count, at least 1
    (``count``); ``every``: every topic's subtree holds some."""

    any: BoolArray
    count: FloatArray
    every: bool


def _scorable_topics(index: CatalogIndex) -> _ScorableTopics:
    def make(ix: CatalogIndex) -> _ScorableTopics:
        count = topic_exercises(ix).scorable_count
        return _ScorableTopics(any=count > 0, count=np.maximum(count, 1.0), every=bool((count > 0).all()))

    return index.derived("recommend.scorable_topics", make)
