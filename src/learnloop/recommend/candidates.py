"""The positions a policy may pick from, read topic by topic.

A policy's choices are made per topic (is it ready, mastered, due for review)
and only then inside one topic's positions. :func:`mask_topics` counts a mask's
positions per topic once per mask object (the engine's filter masks are cached
read-only arrays, so their counts are kept with the catalog and reused from
step to step); :class:`Candidates` reads the eligible positions less the
previous recommendation through those counts, so that a step costs what the
policy looks at, not one pass over every position per figure.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from learnloop._types import BoolArray, IntArray
from learnloop.content import CatalogIndex
from learnloop.recommend.view import exercise_positions, topic_runs

__all__ = ["Candidates", "MaskTopics", "mask_topics", "without"]

#: per catalog, the figures of this many masks are kept (a few filters and constraints per session)
_KEPT = 32


def without(mask: BoolArray, position: int | None) -> BoolArray:
    """``mask`` without ``position``, unless that would leave nothing."""
    if position is None or not mask[position] or np.count_nonzero(mask) <= 1:
        return mask
    out = mask.copy()
    out[position] = False
    return out


@dataclass(frozen=True, eq=False)
class MaskTopics:
    """Per topic, of the positions of a mask it owns: how many (``count``), how many are
    exercises (``exercises``) and the first (``first``, ``n_items`` when none); ``total``
    counts the mask's positions; ``exercise_mask`` and ``scorable_mask`` are the mask's
    exercises and scorable items (read-only); ``runs`` keeps, per topic read, the mask's positions it
    owns (read-only, in catalog order)."""

    count: IntArray
    exercises: IntArray
    first: IntArray
    total: int
    exercise_mask: BoolArray
    scorable_mask: BoolArray
    runs: dict[int, IntArray] = field(default_factory=dict, repr=False)


class _Kept:
    """The figures of recent read-only masks of one catalog, by mask object."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.found: dict[int, tuple[BoolArray, MaskTopics]] = {}


def mask_topics(index: CatalogIndex, mask: BoolArray) -> MaskTopics:
    """The :class:`MaskTopics` of ``mask``; kept per mask object when the mask is read-only
    (a read-only mask is taken not to change)."""
    if mask.flags.writeable:
        return _count(index, mask)
    kept = index.derived("recommend.mask_topics", lambda _: _Kept())
    key = id(mask)
    found = kept.found.get(key)
    if found is not None and found[0] is mask:
        return found[1]
    figures = _count(index, mask)
    with kept.lock:
        kept.found[key] = (mask, figures)  # (the mask is held, so its id is not reused meanwhile)
        while len(kept.found) > _KEPT:
            kept.found.pop(next(iter(kept.found)))
    return figures


def _count(index: CatalogIndex, mask: BoolArray) -> MaskTopics:
    n_topics, n_items = index.n_topics, index.n_items
    positions = np.flatnonzero(mask)
    topic = index.item_topic[positions]
    count = np.bincount(topic, minlength=n_topics)
    exercises = np.bincount(topic, weights=exercise_positions(index)[positions], minlength=n_topics).astype(np.intp)
    first = np.full(n_topics, n_items, dtype=np.intp)
    np.minimum.at(first, topic, positions)
    exercise_mask = mask & exercise_positions(index)
    scorable_mask = mask & index.scorable
    for array in (count, exercises, first, exercise_mask, scorable_mask):
        array.setflags(write=False)
    return MaskTopics(
        count=count,
        exercises=exercises,
        first=first,
        total=int(positions.size),
        exercise_mask=exercise_mask,
        scorable_mask=scorable_mask,
    )


class Candidates:
    """The positions of ``eligible`` less ``previous`` (unless that would leave nothing):
    the positions a policy may pick from, read per topic."""

    def __init__(self, index: CatalogIndex, eligible: BoolArray, previous: int | None) -> None:
        self.index = index
        self.eligible = eligible
        self.figures = figures = mask_topics(index, eligible)
        self.total = figures.total
        self.count, self.exercises, self.first = figures.count, figures.exercises, figures.first
        self.previous = previous
        self.dropped: int | None = None
        self.dropped_topic = -1
        if previous is not None and figures.total > 1 and eligible[previous]:
            self.dropped = previous
            self.dropped_topic = topic = int(index.item_topic[previous])
            self.count = self.count.copy()
            self.count[topic] -= 1
            if not index.is_theory[previous]:
                self.exercises = self.exercises.copy()
                self.exercises[topic] -= 1
            if self.first[topic] == previous:
                self.first = self.first.copy()
                rest = self.in_topic(topic)
                self.first[topic] = rest[0] if rest.size else index.n_items

    def __contains__(self, position: int) -> bool:
        return bool(self.eligible[position]) and position != self.dropped

    def in_topic(self, topic: int) -> IntArray:
        """The candidate positions ``topic`` owns, in catalog order (read-only)."""
        kept = self.figures.runs
        positions = kept.get(topic)
        if positions is None:
            runs = topic_runs(self.index)
            lo, hi = int(runs.ptr[topic]), int(runs.ptr[topic + 1])
            if runs.identity:
                positions = np.flatnonzero(self.eligible[lo:hi]) + lo
            else:
                run = runs.order[lo:hi]
                positions = run[self.eligible[run]]
            positions.setflags(write=False)
            kept[topic] = positions
        if topic == self.dropped_topic:
            positions = positions[positions != self.dropped]
        return positions

    def in_topics(self, topics: IntArray) -> IntArray:
        """The candidate positions the ``topics`` own, in catalog order."""
        if topics.size <= 1:
            return self.in_topic(int(topics[0])) if topics.size else np.zeros(0, dtype=np.intp)
        found = np.concatenate([self.in_topic(int(t)) for t in topics])
        return found if topic_runs(self.index).identity else np.sort(found)

    def mask(self) -> BoolArray:
        """The candidates as a mask over every position (read-only, or a new array)."""
        return without(self.eligible, self.previous)
