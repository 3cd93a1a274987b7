"""A learner's cached entry: its state, the events posted since, its checkpoints and kept events,
and how events in time order are applied to it (cutting a checkpoint every
:data:`CHECKPOINT_EVERY` events, at most :data:`MAX_CHECKPOINTS` kept). See
:mod:`learnloop.engine.learners.tracker` for how entries are read, cached and caught up.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from learnloop.engine.learners.history import History, of_interactions
from learnloop.engine.learners.kept import Kept
from learnloop.engine.repository.catalog_model import CatalogModel
from learnloop.events import Interaction
from learnloop.tracing import LearnerState
from learnloop.tracing.learner import COLUMNS_RUN, EventColumns

__all__ = [
    "CHECKPOINT_EVERY",
    "DEFAULT_CACHE_BYTES",
    "MAX_CHECKPOINTS",
    "Checkpoint",
    "LearnerEntry",
    "apply_events",
    "empty_entry",
]

#: a checkpoint of a learner's state every this many events (learners with fewer keep none)
CHECKPOINT_EVERY = 2048
#: checkpoints kept per learner (spread over the history when there are more)
MAX_CHECKPOINTS = 8
#: bytes of a numpy array object beside its data, and of a cache entry beside its states
_ARRAY_OVERHEAD = 112
_ENTRY_OVERHEAD = 600
#: default bound of the learner-state cache, in bytes
DEFAULT_CACHE_BYTES = 256 * 2**20


def _state_nbytes(state: LearnerState) -> int:
    """The bytes of a learner state: its arrays' data plus their objects (~112 bytes each), and
    the state object itself."""
    arrays = state.arrays
    return sum(a.nbytes for a in arrays) + _ARRAY_OVERHEAD * len(arrays) + 100


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A learner state holding every event with a timestamp up to ``latest`` (and none later)."""

    latest: float
    state: LearnerState
    last_attempt: tuple[int, float] | None


@dataclass(frozen=True, slots=True)
class LearnerEntry:
    """A learner state as of ``revision``: ``state`` with ``pending`` events not yet applied.

    ``dirty_from`` (epoch seconds) marks that events at or after it changed
    out of order: the state must be rebuilt from a checkpoint older than it.
    """

    revision: int
    fingerprint: str
    state: LearnerState
    latest: float  # epoch seconds of the latest applied event (-inf: none)
    last_attempt: tuple[int, float] | None  # (position, score) of the latest event when an attempt
    pending: tuple[Interaction, ...] = ()
    dirty_from: float | None = None
    checkpoints: tuple[Checkpoint, ...] = ()
    kept: Kept | None = None  # the events ``state`` holds (a long history: see ``kept.py``)

    @property
    def current(self) -> bool:
        return not self.pending and self.dirty_from is None

    @property
    def nbytes(self) -> int:
        state = self.state
        total = _state_nbytes(state)
        if self.checkpoints:
            seen = {id(state)}
            for checkpoint in self.checkpoints:
                if id(checkpoint.state) not in seen:
                    seen.add(id(checkpoint.state))
                    total += _state_nbytes(checkpoint.state)
        # the entry, its key and its place in the cache
        kept = 0 if self.kept is None else self.kept.nbytes
        return total + kept + 200 * len(self.pending) + _ENTRY_OVERHEAD


def empty_entry(catalog: CatalogModel) -> LearnerEntry:
    """The (shared, immutable) entry of a learner without any event, one per catalog model."""
    return catalog.derived("learners.empty_entry", _empty_entry)


def _empty_entry(catalog: CatalogModel) -> LearnerEntry:
    return LearnerEntry(0, catalog.fingerprint, catalog.model.new_state(), -math.inf, None)


def apply_events(
    catalog: CatalogModel,
    entry: LearnerEntry,
    ordered: Sequence[Interaction] | History,
    checkpoints: tuple[Checkpoint, ...],
    revision: int | None = None,
) -> LearnerEntry:
    """Apply interactions (in order, none earlier than ``entry.latest``), cutting checkpoints;
    the entry made is at ``revision`` (default: ``entry``'s). Many go as columns."""
    if not isinstance(ordered, History):
        if len(ordered) < COLUMNS_RUN:
            return _apply_each(catalog, entry, ordered, checkpoints, revision)
        ordered = of_interactions(catalog, ordered)
    return _apply_columns(catalog, entry, ordered.columns, checkpoints, revision)


def _apply_columns(
    catalog: CatalogModel,
    entry: LearnerEntry,
    ordered: EventColumns,
    checkpoints: tuple[Checkpoint, ...],
    revision: int | None,
) -> LearnerEntry:
    """:func:`apply_events` of events as columns (``item`` -1: left the catalog, not applied)."""
    model = catalog.model
    state = entry.state
    latest = entry.latest
    last_attempt = entry.last_attempt
    since = state.n_events - (checkpoints[-1].state.n_events if checkpoints else 0)
    ts = ordered.ts
    at = 0
    n = len(ordered)
    # a long run cuts checkpoints as far apart as thinning would leave them: fewer, longer chunks
    every = max(CHECKPOINT_EVERY, n // MAX_CHECKPOINTS)
    if n >= COLUMNS_RUN:
        made = _at_once(catalog, entry, ordered, checkpoints, revision, every)
        if made is not None:
            return made
    while at < n:
        stop = _chunk_end(ts, at, since, every)
        chunk = ordered.take(slice(at, stop))
        if (chunk.item < 0).any():
            chunk = chunk.take(chunk.item >= 0)
        before = state.n_events
        state = model.update_columns(state, chunk)
        since += state.n_events - before
        latest = max(latest, float(ts[stop - 1]))
        if len(chunk):
            last_attempt = _attempt(chunk, -1)
        at = stop
        if since >= every and (at == n or ts[at] > latest):
            checkpoints = _thin((*checkpoints, Checkpoint(latest, state, last_attempt)))
            since = 0
    if revision is None:
        revision = entry.revision
    return LearnerEntry(revision, entry.fingerprint, state, latest, last_attempt, checkpoints=checkpoints)


def _attempt(cols: EventColumns, k: int) -> tuple[int, float] | None:
    """Event ``k`` as a learner's last attempt ``(item, score)`` when it is a scored attempt, else None."""
    score = float(cols.score[k])
    return (int(cols.item[k]), score) if cols.kind[k] == 1 and score == score else None


def _chunk_end(ts: np.ndarray, at: int, since: int, every: int) -> int:
    """Where the chunk of a run starting at ``at`` ends: the run's end, or the next checkpoint's place
    (``every`` events after the last, ``since`` applied since it), moved past the events at the same
    time (a checkpoint lies between two distinct timestamps)."""
    n = ts.size
    if since + (n - at) < every:
        return n
    stop = at + max(1, every - since)
    return stop if stop >= n else int(np.searchsorted(ts, ts[stop - 1], side="right"))


def _at_once(
    catalog: CatalogModel,
    entry: LearnerEntry,
    ordered: EventColumns,
    checkpoints: tuple[Checkpoint, ...],
    revision: int | None,
    every: int,
) -> LearnerEntry | None:
    """:func:`_apply_columns` in one call of the compiled loop (see :meth:`LearnerModel.update_stops`):
    the chunks' ends are found first (as the chunks would be applied there, none needing the per-event
    path), then the states at the checkpoints' are made at once; None when the run needs the chunks."""
    latest = entry.latest
    last_attempt = entry.last_attempt
    since = entry.state.n_events - (checkpoints[-1].state.n_events if checkpoints else 0)
    ts, item = ordered.ts, ordered.item
    gone = np.flatnonzero(item < 0)  # (items that left the catalog: not applied)
    at = 0
    n = len(ordered)
    cuts: list[tuple[int, float, tuple[int, float] | None]] = []
    while at < n:
        stop = _chunk_end(ts, at, since, every)
        lo, hi = np.searchsorted(gone, (at, stop)).tolist()
        since += stop - at - (hi - lo)
        latest = max(latest, float(ts[stop - 1]))
        if hi - lo < stop - at:  # the chunk's last event applied
            last = stop - 1
            while item[last] < 0:
                last -= 1
            last_attempt = _attempt(ordered, last)
        at = stop
        if since >= every and (at == n or ts[at] > latest):
            cuts.append((at, latest, last_attempt))
            since = 0
    stops = [cut[0] for cut in cuts]
    states = catalog.model.update_stops(entry.state, ordered, stops if stops and stops[-1] == n else [*stops, n])
    if states is None:
        return None
    for (_, at_latest, at_last), state in zip(cuts, states, strict=False):
        checkpoints = _thin((*checkpoints, Checkpoint(at_latest, state, at_last)))
    if revision is None:
        revision = entry.revision
    return LearnerEntry(revision, entry.fingerprint, states[-1], latest, last_attempt, checkpoints=checkpoints)


def _apply_each(
    catalog: CatalogModel,
    entry: LearnerEntry,
    ordered: Sequence[Interaction],
    checkpoints: tuple[Checkpoint, ...],
    revision: int | None,
) -> LearnerEntry:
    """:func:`apply_events` of a few interactions, event by event."""
    model = catalog.model
    state = entry.state
    latest = entry.latest
    last_attempt = entry.last_attempt
    since = state.n_events - (checkpoints[-1].state.n_events if checkpoints else 0)
    at = 0
    n = len(ordered)
    while at < n:
        # the next chunk ends at a checkpoint boundary (between two distinct timestamps)
        stop = n
        if since + (n - at) >= CHECKPOINT_EVERY:
            stop = at + max(1, CHECKPOINT_EVERY - since)
            while stop < n and ordered[stop].epoch == ordered[stop - 1].epoch:
                stop += 1
        chunk = ordered[at:stop]
        events = [e for i in chunk if (e := catalog.to_event(i)) is not None]
        before = state.n_events
        state = model.update_many(state, events)
        since += state.n_events - before
        latest = max(latest, chunk[-1].epoch)
        if events:
            last = events[-1]
            last_attempt = (last.item, last.score) if last.kind == "attempt" and last.score is not None else None
        at = stop
        if since >= CHECKPOINT_EVERY and (at == n or ordered[at].epoch > latest):
            checkpoints = _thin((*checkpoints, Checkpoint(latest, state, last_attempt)))
            since = 0
    if revision is None:
        revision = entry.revision
    return LearnerEntry(revision, entry.fingerprint, state, latest, last_attempt, checkpoints=checkpoints)


def _thin(checkpoints: tuple[Checkpoint, ...]) -> tuple[Checkpoint, ...]:
    """At most :data:`MAX_CHECKPOINTS`, dropping the one whose neighbours are closest."""
    cps = list(checkpoints)
    while len(cps) > MAX_CHECKPOINTS:
        gaps = [cps[k + 1].state.n_events - cps[k - 1].state.n_events for k in range(1, len(cps) - 1)]
        del cps[1 + int(np.argmin(gaps))]
    return tuple(cps)
