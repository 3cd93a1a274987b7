"""A learner's stored events as columns, for a replay (no object per event).

:func:`read` takes a learner's events from the store as columns
(:func:`learnloop.engine.records.event_fields`), finds each one's item position
once per (item, topic) pair and reads the canonical timestamps with numpy; the
result, :class:`History`, is in time order (events sharing a timestamp in
posting order), as :meth:`Tracker.history` orders interactions, and holds what
:meth:`LearnerModel.update_columns` applies. An event whose item left the
catalog keeps its place with the position -1 (it counts for the time of the
latest event, and is not applied). :func:`of_batch` makes the same history of
a posted batch's rows straight from its columns (a bulk import applied in the write).
"""

from __future__ import annotations

import gc
import math
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import repeat
from typing import Any

import numpy as np

from learnloop._types import IntArray
from learnloop.engine import records
from learnloop.engine.learners.batch import EventBatch, canonical_ms
from learnloop.engine.repository.catalog_model import CatalogModel
from learnloop.events import Interaction, format_timestamp, parse_timestamp
from learnloop.store import Store
from learnloop.tracing.learner import EventColumns

__all__ = ["History", "of_batch", "of_interactions", "read"]

_KINDS = {"attempt": 1, "skip": 2, "view_theory": 3}


@dataclass(frozen=True, slots=True)
class History:
    """Events in time order: their keys' item ids and stamps, and the columns the model applies
    (``ts``: epoch seconds; ``item``: -1 for an item no longer in the catalog)."""

    item_ids: list[str]
    stamps: list[str]
    columns: EventColumns

    def __len__(self) -> int:
        return len(self.stamps)

    def take(self, rows: np.ndarray | slice) -> History:
        """The events at ``rows`` (indices or a slice), in that order."""
        if isinstance(rows, slice):
            return History(self.item_ids[rows], self.stamps[rows], self.columns.take(rows))
        at = rows.tolist()
        return History(
            list(map(self.item_ids.__getitem__, at)), list(map(self.stamps.__getitem__, at)), self.columns.take(rows)
        )

    def inserted(self, at: np.ndarray, other: History) -> History:
        """These events with ``other``'s put before those at the positions ``at`` (non-decreasing,
        one for each of ``other``'s: ``np.insert``'s), in a few operations on the columns."""
        if not len(other):
            return self
        places = at.tolist()
        item_ids: list[str] = []
        stamps: list[str] = []
        start = 0
        for place, item_id, stamp in zip(places, other.item_ids, other.stamps, strict=True):
            item_ids += self.item_ids[start:place]
            stamps += self.stamps[start:place]
            item_ids.append(item_id)
            stamps.append(stamp)
            start = place
        item_ids += self.item_ids[start:]
        stamps += self.stamps[start:]
        return History(item_ids, stamps, self.columns.inserted(at, other.columns))

    def after(self, epoch: float) -> History:
        """The events later than ``epoch`` (seconds)."""
        return self.split(epoch)[1]

    def split(self, epoch: float) -> tuple[History, History]:
        """The events up to ``epoch`` (seconds), and those later."""
        at = int(np.searchsorted(self.columns.ts, epoch, side="right"))
        return self.take(slice(0, at)), self.take(slice(at, None))


def read(store: Store, app: str, user: str, catalog: CatalogModel, after: float = -math.inf) -> History:
    """The learner's stored events later than ``after`` (epoch seconds), in time order."""
    since = None
    if after != -math.inf:
        # canonical stamps sort as the instants they name: only the tail is read
        since = format_timestamp(datetime.fromtimestamp(math.floor(after * 1000 - 1) / 1000, UTC))
    with _gc_paused():
        learner = (user, catalog.index.catalog_id)
        fields, seq = records.event_fields_by_key(store, app, learner, _FIELDS, last_after=since)
        return _made(catalog, fields, after, seq)


def of_interactions(catalog: CatalogModel, interactions: Sequence[Interaction]) -> History:
    """Interactions (in the order given, taken to be in time order) as a history."""
    fields: dict[str, list[Any]] = {
        name: [getattr(i, name) for i in interactions]
        for name in ("kind", "item_id", "topic_id", "score", "time_spent_ms", "fraction_completed", "practice")
    }
    epochs = np.array([i.epoch for i in interactions], dtype=np.float64)
    return History(fields["item_id"], [i.stamp for i in interactions], _columns(catalog, fields, epochs))


def of_batch(catalog: CatalogModel, batch: EventBatch, topics: Sequence[str], rows: IntArray) -> History:
    """The events at ``rows`` of a posted batch (``topics``: each row's topic; the rows in posting
    order) as a history in time order, read from the batch's columns: the same history as
    :func:`of_interactions` gives of the same events made interactions and put in time order."""
    at = rows.tolist()
    n = len(at)
    everything = n == len(batch) and at == list(range(n))

    def take(column: Sequence[Any]) -> list[Any]:
        return list(column) if everything else [column[k] for k in at]

    fields: dict[str, list[Any]] = {
        "kind": take(batch.kinds),
        "item_id": take(batch.items),
        "topic_id": take(topics),
        "score": take(batch.scores),
        "time_spent_ms": take(batch.times),
        "fraction_completed": take(batch.fractions),
        "practice": [True] * n,
    }
    history = History(fields["item_id"], take(batch.stamps), _columns(catalog, fields, batch.epochs()[rows]))
    ts = history.columns.ts
    if n < 2 or bool((ts[1:] >= ts[:-1]).all()):
        return history
    return history.take(np.argsort(ts, kind="stable"))


def merged(catalog: CatalogModel, history: History, group: Iterable[Interaction], after: float) -> History:
    """``history`` with ``group`` (about to be written; later than ``after``) in: an event of the
    group replaces the stored one of its key, and goes after the stored ones of its time."""
    group = list(group)
    replaced = {i.key[2:] for i in group}
    # (a stored event of a replaced key is at one of the group's times: only those are looked at)
    ts = history.columns.ts
    epochs = sorted({i.epoch for i in group})
    spans = zip(np.searchsorted(ts, epochs).tolist(), np.searchsorted(ts, epochs, side="right").tolist(), strict=True)
    gone = [k for lo, hi in spans for k in range(lo, hi) if (history.item_ids[k], history.stamps[k]) in replaced]
    stored = history.take(np.delete(np.arange(len(history)), gone)) if gone else history
    added = of_interactions(catalog, sorted((i for i in group if i.epoch > after), key=lambda i: i.epoch))
    return stored.inserted(np.searchsorted(stored.columns.ts, added.columns.ts, side="right"), added)


def _epochs(stamps: Sequence[str]) -> np.ndarray:
    """Epoch seconds of stored stamps, as :attr:`Interaction.epoch` gives them."""
    ms = canonical_ms(list(stamps)) if stamps else None  # canonical: '2025-01-01T00:00:00.000Z', read as a table
    if ms is not None:
        return ms / 1000.0
    if all(len(s) == 24 and s[-1] == "Z" for s in stamps):  # canonical, at the edges of the range
        try:
            ms = np.array([s[:-1] for s in stamps], dtype="datetime64[ms]").astype(np.int64)
        except ValueError:
            pass
        else:
            return ms / 1000.0
    canonical = [format_timestamp(parse_timestamp(s))[:-1] for s in stamps]  # (the instant to the millisecond)
    return np.array(canonical, dtype="datetime64[ms]").astype(np.int64) / 1000.0


def _made(catalog: CatalogModel, fields: dict[str, list[Any]], after: float, seq: np.ndarray | None) -> History:
    """The history of events read as ``fields`` (in write order, or in any order with their sequence
    numbers ``seq``, which give the write order): those later than ``after``, in time order."""
    stamps = fields.get("timestamp", [])
    n = len(stamps)
    epochs = _epochs(stamps)
    given = {name: fields.get(name, [None] * n) for name in _FIELDS}
    history = History(given["item_id"], stamps, _columns(catalog, given, epochs))
    later = epochs > after
    if n and bool(later.all()):
        if seq is None and bool((epochs[1:] >= epochs[:-1]).all()):
            return history  # (stored in time order, all later than ``after``: as it is)
        order = np.argsort(epochs, kind="stable") if seq is None else np.lexsort((seq, epochs))
    elif seq is None:
        at = np.flatnonzero(later)
        order = at[np.argsort(epochs[at], kind="stable")]
    else:
        at = np.flatnonzero(later)
        order = at[np.lexsort((seq[at], epochs[at]))]
    if order.size == n and bool((order[1:] > order[:-1]).all()):
        return history
    return history.take(order)


_GC = threading.Lock()
_paused = [0, False]  # readers decoding now, and whether the collector was on before the first


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while a long history is decoded: its many small
    objects (none in a cycle) would otherwise start collections that walk every live object."""
    with _GC:
        if _paused[0] == 0:
            _paused[1] = gc.isenabled()
            gc.disable()
        _paused[0] += 1
    try:
        yield
    finally:
        with _GC:
            _paused[0] -= 1
            if _paused[0] == 0 and _paused[1]:
                gc.enable()


_FIELDS = ("kind", "item_id", "topic_id", "score", "time_spent_ms", "fraction_completed", "practice")


def _columns(catalog: CatalogModel, fields: dict[str, list[Any]], epochs: np.ndarray) -> EventColumns:
    index = catalog.index
    where: dict[tuple[str, str], int] = {}
    for pair in set(zip(fields["item_id"], fields["topic_id"], strict=True)):
        position = index.position(pair[0], pair[1])
        if position is None:
            position = index.position(pair[0])
        where[pair] = -1 if position is None else position
    n = epochs.shape[0]
    practice = fields["practice"]
    return EventColumns(
        np.array(list(map(where.__getitem__, zip(fields["item_id"], fields["topic_id"], strict=True))), dtype=np.intp),
        np.array(list(map(_KINDS.get, fields["kind"], repeat(0))), dtype=np.int8),
        epochs,
        _floats(fields["score"]),
        np.full(n, -1, dtype=np.intp),
        np.array([t or 0 for t in fields["time_spent_ms"]], dtype=np.int64),
        _floats(fields["fraction_completed"]),
        np.ones(n, dtype=bool) if False not in practice else np.array([p is not False for p in practice], dtype=bool),
    )


def _floats(values: list[Any]) -> np.ndarray:
    """Numbers as float64, None as NaN (as numpy reads None in a float array)."""
    if values.count(None) == len(values):
        return np.full(len(values), np.nan)
    return np.array(values, dtype=np.float64)
