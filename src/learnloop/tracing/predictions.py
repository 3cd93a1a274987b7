"""P(correct) of every item for one learner state, kept up to date by what changed.

An item's predicted success depends only on its own parameters and on the
belief (mean, sd) about the ability on its topic. :class:`Predictions` holds
the beliefs, the predictions and, on demand, per-topic sums of the
predictions; made from the predictions of an earlier state of the same
learner (:meth:`Predictions.advance`), it recomputes only the items of the
topics whose belief changed (an answer moves its topic, the nodes the model
propagates it to, and the topics that borrow a changed belief) and the sums
of those topics. The result is the same, bit for bit, as computing everything
again: the same arithmetic runs on the same numbers, element by element, and
every per-topic sum is taken over the same run of items in the same order
(:func:`topic_sums`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ._types import BoolArray, FloatArray, IntArray
from .irt import PI_OVER_8, expected_p_correct
from .structure import ItemParams

__all__ = ["Predictions", "TopicRuns", "topic_sums"]

#: beyond this share of the items changed, everything is computed again
_FULL_SHARE = 0.5


@dataclass(frozen=True, eq=False)
class TopicRuns:
    """The items of each topic as one run: ``order`` lists the item positions topic
    by topic (catalog order within a topic), topic ``t`` owning ``order[ptr[t]:ptr[t + 1]]``."""

    order: IntArray
    ptr: IntArray
    identity: bool
    counts: IntArray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "counts", np.diff(self.ptr))

    @classmethod
    def of(cls, item_topic: np.ndarray, n_topics: int) -> TopicRuns:
        """The runs of items whose topics are ``item_topic`` (one per item)."""
        topic = np.asarray(item_topic, dtype=np.intp)
        order = np.argsort(topic, kind="stable").astype(np.intp)
        ptr = np.zeros(n_topics + 1, dtype=np.intp)
        np.cumsum(np.bincount(topic, minlength=n_topics), out=ptr[1:])
        return cls(order, ptr, bool(np.array_equal(order, np.arange(order.size))))

    def positions(self, topics: IntArray, lengths: IntArray | None = None) -> IntArray:
        """The positions owned by ``topics``, run after run (in the order given; ``lengths``:
        their numbers of items, when known)."""
        starts = self.ptr[topics]
        if lengths is None:
            lengths = self.ptr[topics + 1] - starts
        ends = lengths.cumsum()  # (the methods: the functions' wrappers cost more than the work)
        total = int(ends[-1]) if ends.size else 0
        if total == 0:
            return np.zeros(0, dtype=np.intp)
        flat: IntArray = (starts - ends + lengths).repeat(lengths)
        flat += np.arange(total)
        return flat if self.identity else self.order[flat]


def topic_sums(
    runs: TopicRuns,
    values: FloatArray,
    weights: np.ndarray | None = None,
    topics: IntArray | None = None,
    where: IntArray | None = None,
) -> FloatArray:
    """Per topic, the sum of ``values`` (times ``weights``) over the items it owns (0 for a topic without items).

    With ``topics``, only those topics' sums (in that order; ``where`` their positions
    when known). Each sum is one
    ``np.add.reduceat`` segment over the topic's run, so a topic's sum does not
    depend on which other topics are summed with it.
    """
    n_topics = runs.ptr.size - 1
    chosen = np.arange(n_topics, dtype=np.intp) if topics is None else np.asarray(topics, dtype=np.intp)
    out = np.zeros(chosen.size)
    lengths = runs.counts[chosen]
    filled = lengths > 0
    if not filled.any():
        return out
    if topics is None and runs.identity and filled.all():
        # every topic, the items already topic after topic: the runs are the items in order
        out[:] = np.add.reduceat(values if weights is None else values * weights, runs.ptr[:-1])
        return out
    which = chosen[filled]
    if where is None:  # (given: ``runs.positions(topics)``, which skips topics without items anyway)
        where = runs.positions(which)
    gathered = values[where] if weights is None else values[where] * weights[where]
    starts = np.zeros(which.size, dtype=np.intp)
    np.cumsum(lengths[filled][:-1], out=starts[1:])
    out[filled] = np.add.reduceat(gathered, starts)
    return out


@dataclass(frozen=True, eq=False)
class Predictions:
    """Beliefs per topic (``mean``, ``sd``) and P(correct) per item (``p``, read-only) of one state.

    ``base``/``changed``: the per-topic sums of the predictions this one was
    advanced from (by weights object) and the topics whose belief differs from
    them (sums over weights are then carried over from ``base`` for the other topics).
    """

    items: ItemParams
    runs: TopicRuns
    mean: FloatArray
    sd: FloatArray
    p: FloatArray
    base: dict[int, tuple[np.ndarray, FloatArray]] | None = None
    changed: IntArray | None = None
    where: IntArray | None = None
    rasch: bool = False
    #: ``p[where]``, and where each changed topic with items starts in it (those topics, the starts)
    fresh: FloatArray | None = None
    segments: tuple[IntArray, IntArray] | None = None
    lengths: IntArray | None = None  # the items of each changed topic
    #: the parameters of the items at ``where`` (``b``, ``a``; read-only)
    gathered: tuple[FloatArray, FloatArray] | None = None
    #: the Fisher information of the predictions advanced from, when it was read (a one-item list)
    base_information: list[FloatArray] | None = None
    #: the predictions these overlay (:meth:`overlay`): their sums and information, ``where`` excepted
    beneath: Predictions | None = None
    _sums: dict[int, tuple[np.ndarray, FloatArray]] = field(default_factory=dict, repr=False)
    _information: list[FloatArray] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def compute(
        cls, items: ItemParams, runs: TopicRuns, mean: FloatArray, sd: FloatArray, *, rasch: bool | None = None
    ) -> Predictions:
        """Everything from the beliefs (``rasch``: whether every discrimination is 1, when known)."""
        if rasch is None:
            rasch = bool((items.a == 1.0).all())
        if rasch:
            p = _rasch_p(items.b if runs.identity else items.b[runs.order], runs.counts, mean, sd)  # topic after topic
            if not runs.identity:
                in_order, p = p, np.empty_like(p)
                p[runs.order] = in_order
        else:
            p = expected_p_correct(mean[items.topic], sd[items.topic] ** 2, items.b, items.a)
        p.setflags(write=False)
        return cls(items, runs, mean, sd, p, rasch=rasch)

    def overlay(self, topics: IntArray, make: Callable[[IntArray], FloatArray]) -> Predictions:
        """These predictions with the items of ``topics`` given other values (e.g. a prediction-only
        term): ``make(where)`` returns them for the item positions ``where`` (the topics' runs, topic
        after topic). Sums over weights and the information are those of these predictions for the
        other topics, computed again for ``topics`` only (the same doubles as computing all again)."""
        topics = np.asarray(topics, dtype=np.intp)
        lengths = self.runs.counts[topics]
        where = self.runs.positions(topics, lengths)
        if where.size == 0:
            return self
        fresh = np.array(make(where), dtype=np.float64)
        p = self.p.copy()
        p[where] = fresh
        for shared in (p, fresh, where, lengths):
            shared.setflags(write=False)
        segments = _segments(topics.copy(), lengths)
        gathered = (self.items.b[where], self.items.a[where])
        return Predictions(
            self.items, self.runs, self.mean, self.sd, p, None, segments[0], where, self.rasch, fresh,
            segments, lengths, gathered, None, beneath=self,
        )  # fmt: skip

    def advance(self, mean: FloatArray, sd: FloatArray) -> Predictions:
        """The predictions for new beliefs, recomputing only the topics whose belief changed."""
        if self.beneath is not None:  # (an overlay is advanced as what it overlays)
            return self.beneath.advance(mean, sd)
        if mean.shape != self.mean.shape:
            return Predictions.compute(self.items, self.runs, mean, sd, rasch=self.rasch)
        changed = ((mean != self.mean) | (sd != self.sd)).nonzero()[0]  # (np.flatnonzero, without its wrappers)
        if changed.size == 0:
            return self
        previous = self.changed
        if previous is not None and previous.size == changed.size and previous.tobytes() == changed.tobytes():
            # the same topics as last time (an answer moves the same nodes): the same runs
            assert self.where is not None and self.segments is not None and self.lengths is not None
            assert self.gathered is not None
            changed, where, lengths, segments = previous, self.where, self.lengths, self.segments
            gathered = self.gathered
        else:
            lengths = self.runs.counts[changed]
            if lengths.sum() > _FULL_SHARE * self.p.size:  # (an answer that moves most topics)
                return Predictions.compute(self.items, self.runs, mean, sd, rasch=self.rasch)
            where = self.runs.positions(changed, lengths)
            segments = _segments(changed, lengths)
            gathered = (self.items.b[where], self.items.a[where])
            for shared in (changed, where, lengths, *gathered):  # (read by every thread that reads these predictions)
                shared.setflags(write=False)
        if self.rasch:
            fresh = _rasch_p(gathered[0], lengths, mean[changed], sd[changed])
        else:
            # ``where`` runs topic after topic: each item's belief is its topic's, repeated over the run
            # (what ``mean[items.topic[where]]`` gathers, at a fraction of the cost)
            var = (sd[changed] ** 2).repeat(lengths)
            fresh = expected_p_correct(mean[changed].repeat(lengths), var, gathered[0], gathered[1])
        fresh.setflags(write=False)
        p = self.p.copy()
        p[where] = fresh
        p.setflags(write=False)
        # the sums of this state are carried, not this state itself (no chain of states is held)
        sums, information = self._sums, self._information
        return Predictions(
            self.items,
            self.runs,
            mean,
            sd,
            p,
            sums,
            changed,
            where,
            self.rasch,
            fresh,
            segments,
            lengths,
            gathered,
            information,
        )

    def information(self) -> FloatArray:
        """Fisher information ``a**2 p (1 - p)`` of every item (read-only): from the information of
        the predictions advanced from when it was read, the changed items computed again (the same doubles)."""
        found = self._information
        if found:
            return found[0]
        carried = self.base_information if self.beneath is None else [self.beneath.information()]
        if carried and self.fresh is not None:
            assert self.gathered is not None and self.where is not None
            a, fresh = self.gathered[1], self.fresh
            out = carried[0].copy()
            out[self.where] = a * a * fresh * (1.0 - fresh)
        else:
            a, p = self.items.a, self.p
            out = a * a * p * (1.0 - p)
        out.setflags(write=False)
        with self._lock:
            if not found:
                found.append(out)
        return found[0]

    def sums(self, weights: BoolArray) -> FloatArray:
        """Per topic, the sum of ``p`` over the items of ``weights`` it owns.

        Kept per weights object (pass the same read-only array each time to
        have the sums carried over from one state to the next).
        """
        key = id(weights)
        found = self._sums.get(key)
        if found is not None and found[0] is weights:
            return found[1]
        base = self.base
        carried = None if base is None else base.get(key)
        if self.beneath is not None:
            carried = (weights, self.beneath.sums(weights))
        if carried is not None and carried[0] is weights and self.changed is not None:
            # the changed topics' sums, as :func:`topic_sums` takes them (a topic without items keeps its 0)
            out = carried[1].copy()
            assert self.fresh is not None and self.where is not None and self.segments is not None
            topics, starts = self.segments
            if topics.size:
                out[topics] = np.add.reduceat(self.fresh * weights[self.where], starts)
        else:
            out = topic_sums(self.runs, self.p, weights)
        out.setflags(write=False)
        with self._lock:
            self._sums[key] = (weights, out)
            while len(self._sums) > 8:  # a few filters per learner at most
                self._sums.pop(next(iter(self._sums)))
        return out


def _segments(changed: IntArray, lengths: IntArray) -> tuple[IntArray, IntArray]:
    """The changed topics with items, and where each one's run starts among the changed items."""
    filled = lengths > 0
    if not filled.all():
        changed, lengths = changed[filled], lengths[filled]
    starts = np.zeros(lengths.size, dtype=np.intp)
    np.cumsum(lengths[:-1], out=starts[1:])
    changed.setflags(write=False)
    starts.setflags(write=False)
    return changed, starts


def _rasch_p(b: FloatArray, lengths: IntArray, mean: FloatArray, sd: FloatArray) -> FloatArray:
    """:func:`~learnloop.tracing.irt.expected_p_correct` of items of difficulties ``b`` when every
    discrimination is 1: runs of ``lengths`` items of the topics whose beliefs are ``mean``,
    ``sd``. The same doubles: with ``a = 1`` the scale ``sqrt(1 + pi/8 * a^2 * var)`` is
    the topic's, and ``exp(-(m - b) / scale)`` is ``exp((b - m) / scale)`` (rounding is symmetric)."""
    scale = np.sqrt(1.0 + PI_OVER_8 * sd**2)
    z = mean.repeat(lengths)  # (the methods: np.repeat's wrappers cost more than the repeat)
    np.subtract(b, z, out=z)
    z /= scale.repeat(lengths)
    with np.errstate(over="ignore"):
        np.exp(z, out=z)
    z += 1.0
    return np.divide(1.0, z, out=z)
