"""A run of events as columns, applied to a learner state at once.

:class:`EventColumns` holds events as arrays (no object per event).
:func:`apply_columns` gives the state :meth:`LearnerModel.update_many` gives for
the same events, in two parts: the per-item bookkeeping (attempts, skips, last
score, largest theory fraction, time spent, last timestamp, the signature of
each item's last event) is grouped by item with numpy, and the answers go
through the compiled loop of :mod:`learnloop.tracing._kernel` (the model's
per-answer maths, in order). Without numba (extra ``fast``), or for a run the
grouping does not cover (two events of an item at one time, or one at the
time of the item's latest in the state, which could be an exact duplicate;
one that fails validation), it returns None and the caller
applies the events one by one, which is also the reference the tests compare
against (``tests/tracing/test_columns.py``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .state import _BLANK, ATT, FRAC, SCORE, SKIP, TIME, TS, LearnerState, with_blank_rows
from .structure import Event

#: the :class:`~learnloop.tracing.LearnerModel` whose settings apply (not imported: it imports this module)
LearnerModel = Any

__all__ = ["KIND_CODES", "EventColumns", "apply_columns", "apply_run", "kernel"]

#: the event kinds' codes in :attr:`EventColumns.kind`
KIND_CODES = {"attempt": 1, "skip": 2, "view_theory": 3}
_KINDS = {code: kind for kind, code in KIND_CODES.items()}


@dataclass(frozen=True, slots=True)
class EventColumns:
    """Events as columns: ``item`` positions, ``kind`` codes (:data:`KIND_CODES`), ``ts`` epoch
    seconds, ``score`` (NaN: none), ``topic`` (-1: the item's own), ``time_ms``, ``fraction``
    (NaN: none), ``practice``."""

    item: np.ndarray
    kind: np.ndarray
    ts: np.ndarray
    score: np.ndarray
    topic: np.ndarray
    time_ms: np.ndarray
    fraction: np.ndarray
    practice: np.ndarray

    def __len__(self) -> int:
        return int(self.item.shape[0])

    def _parts(self) -> tuple[np.ndarray, ...]:
        return (self.item, self.kind, self.ts, self.score, self.topic, self.time_ms, self.fraction, self.practice)

    def take(self, rows: np.ndarray | slice) -> EventColumns:
        """The events at ``rows`` (indices, a boolean mask or a slice)."""
        return EventColumns(*(part[rows] for part in self._parts()))

    def inserted(self, at: np.ndarray, other: EventColumns) -> EventColumns:
        """These events with ``other``'s put before those at the positions ``at`` (``np.insert``'s)."""
        return EventColumns(*(np.insert(a, at, b) for a, b in zip(self._parts(), other._parts(), strict=True)))

    def joined(self, other: EventColumns) -> EventColumns:
        """These events, then ``other``'s."""
        return EventColumns(*(np.concatenate((a, b)) for a, b in zip(self._parts(), other._parts(), strict=True)))

    @classmethod
    def of(
        cls,
        item: Any,
        kind: Any,
        ts: Any,
        score: Any,
        *,
        topic: Any = None,
        time_ms: Any = None,
        fraction: Any = None,
        practice: Any = None,
    ) -> EventColumns:
        """Columns from sequences (``score`` and ``fraction`` may hold None)."""
        items = np.asarray(item, dtype=np.intp).reshape(-1)
        n = items.shape[0]

        def floats(values: Any) -> np.ndarray:
            if values is None:
                return np.full(n, np.nan)
            return np.array([np.nan if v is None else v for v in values], dtype=np.float64).reshape(n)

        return cls(
            items,
            np.asarray(kind, dtype=np.int8).reshape(n),
            np.asarray(ts, dtype=np.float64).reshape(n),
            floats(score),
            np.full(n, -1, dtype=np.intp) if topic is None else np.asarray(topic, dtype=np.intp).reshape(n),
            np.zeros(n, dtype=np.int64) if time_ms is None else np.asarray(time_ms, dtype=np.int64).reshape(n),
            floats(fraction),
            np.ones(n, dtype=bool) if practice is None else np.asarray(practice, dtype=bool).reshape(n),
        )

    @classmethod
    def from_events(cls, events: Sequence[Event]) -> EventColumns:
        """The columns of tracing events (timestamps as epoch seconds)."""
        from .forgetting import as_epoch_seconds

        return cls.of(
            [e.item for e in events],
            [KIND_CODES.get(e.kind, 0) for e in events],
            [as_epoch_seconds(e.timestamp) for e in events],
            [e.score for e in events],
            topic=[-1 if e.topic is None else e.topic for e in events],
            time_ms=[int(e.time_spent_ms or 0) for e in events],
            fraction=[e.fraction_completed for e in events],
            practice=[e.practice for e in events],
        )

    def events(self) -> list[Event]:
        """The events one by one (what the per-event path applies)."""
        out = []
        for i, k, t, s, tp, ms, f, p in zip(
            self.item.tolist(),
            self.kind.tolist(),
            self.ts.tolist(),
            self.score.tolist(),
            self.topic.tolist(),
            self.time_ms.tolist(),
            self.fraction.tolist(),
            self.practice.tolist(),
            strict=True,
        ):
            out.append(
                Event(
                    item=i,
                    kind=_KINDS.get(k, "unknown"),  # type: ignore[arg-type]
                    timestamp=t,
                    score=None if s != s else s,
                    topic=None if tp < 0 else tp,
                    time_spent_ms=ms,
                    fraction_completed=None if f != f else f,
                    practice=p,
                )
            )
        return out


_KERNEL: Any = None
#: events applied by one call of the compiled loop of :func:`apply_run` (about a millisecond of work; a
#: thread beside a long replay waits about that long for the interpreter lock, and each of its waits
#: costs the replay a switch interval at most)
RUN_SLICE = 2048


def kernel() -> Any:
    """The compiled per-answer loop, or None when numba is not installed."""
    global _KERNEL
    if _KERNEL is None:
        try:
            from ._kernel import answers
        except ImportError:
            _KERNEL = False
        else:
            _KERNEL = answers
    return _KERNEL or None


def _signature(cols: EventColumns, e: int) -> int:
    """:meth:`LearnerModel.signature` of event ``e`` of ``cols``."""
    given, fraction = float(cols.score[e]), float(cols.fraction[e])
    return hash(
        (
            int(cols.kind[e]),
            -1.0 if math.isnan(given) else given,
            int(cols.time_ms[e]),
            -1.0 if math.isnan(fraction) else fraction,
        )
    )


def _grouped(model: LearnerModel, state: LearnerState, cols: EventColumns) -> bool:
    """Whether the run passes the per-event path's validation and no event of it can be an exact
    duplicate of its item's latest."""
    n_items, n_topics = model.items.n_items, model.topics.n_topics
    item, kind, score, fraction = cols.item, cols.kind, cols.score, cols.fraction
    if item.size and (item.min() < 0 or item.max() >= n_items):
        return False
    if not np.isin(kind, (1, 2, 3)).all() or not np.isfinite(cols.ts).all():
        return False
    if ((score < 0.0) | (score > 1.0)).any() or ((fraction < 0.0) | (fraction > 1.0)).any():
        return False
    if cols.topic.size and (cols.topic.min() < -1 or cols.topic.max() >= n_topics):
        return False
    if (np.isnan(score) & (kind == 1) & model.items.scorable[item]).any():
        return False
    # an event is an exact duplicate only when its timestamp is its item's latest: none is when each
    # item's timestamps differ from one another and from the one the state holds
    order = np.lexsort((cols.ts, item))
    by_item, ts = item[order], cols.ts[order]
    same = by_item[1:] == by_item[:-1]
    if (ts[1:][same] == ts[:-1][same]).any():
        return False
    if state.touched.size:
        at = np.minimum(np.searchsorted(state.touched, item), state.touched.size - 1)
        met = state.touched[at] == item
        if (cols.ts[met] == state.rows[at[met], TS]).any():
            return False
    return True


def _last_of(slot: np.ndarray, n_slots: int) -> np.ndarray:
    """For each slot, the index of its last entry in ``slot`` (-1: none)."""
    last = np.full(n_slots, -1, dtype=np.intp)
    np.maximum.at(last, slot, np.arange(slot.size))
    return last


def apply_columns(model: LearnerModel, state: LearnerState, cols: EventColumns) -> LearnerState | None:
    """``model.update_many(state, cols.events())`` at once, or None when the run needs the
    per-event path (see the module docstring)."""
    answer = kernel()
    if answer is None or model._gating_tables is not None or not _grouped(model, state, cols):
        return None  # (the compiled loop leaves out the prerequisite gating: such a model goes event by event)
    item, kind, ts = cols.item, cols.kind, cols.ts
    touched, rows, sig, _ = with_blank_rows(state, item.tolist() if item.size == 1 else list(np.unique(item)))
    slot = np.searchsorted(touched, item)
    k = touched.size
    attempt, skip, theory = kind == 1, kind == 2, kind == 3
    rows[:, ATT] += np.bincount(slot[attempt], minlength=k)
    rows[:, SKIP] += np.bincount(slot[skip], minlength=k)
    np.add.at(rows[:, TIME], slot, np.maximum(cols.time_ms, 0).astype(np.float64))
    np.fmax.at(rows[:, TS], slot, ts)
    if theory.any():
        frac = np.where(np.isnan(cols.fraction), 1.0, cols.fraction)[theory]
        np.maximum.at(rows[:, FRAC], slot[theory], frac)
    scorable = model.items.scorable[item]
    scored = attempt & scorable
    if scored.any():
        last = _last_of(slot[scored], k)
        has = last >= 0
        rows[has, SCORE] = cols.score[scored][last[has]]
    last_event = _last_of(slot, k)
    for s, e in zip(np.flatnonzero(last_event >= 0).tolist(), last_event[last_event >= 0].tolist(), strict=True):
        sig[s] = _signature(cols, e)  # (the item's last event's)
    # the answers: an attempt on a scorable item, a skip when skips are scored
    score = cols.score.copy()
    score[attempt & ~scorable] = np.nan
    score[theory] = np.nan
    score[skip] = np.nan if model.skip_score is None else model.skip_score
    answered = np.flatnonzero(~np.isnan(score))
    ability = state._ability_table()
    memory = state._memory_table()
    momentum = state.momentum.copy()
    if answered.size:
        topic = cols.topic[answered]
        topic = np.where(topic < 0, model.items.topic[item[answered]], topic)
        answer(
            topic,
            model.items.b[item[answered]],
            model.items.a[item[answered]],
            score[answered],
            cols.practice[answered],
            ts[answered],
            ability,
            memory,
            momentum,
            *model.kernel_tables,
        )
    for array in (touched, rows, sig):
        array.flags.writeable = False
    return LearnerState.make(
        ability,
        memory,
        touched,
        rows,
        sig,
        n_items=state.n_items,
        n_events=state.n_events + len(cols),
        momentum=momentum,
        ability_blank=state.ability_blank,
    )


def apply_run(
    model: LearnerModel, state: LearnerState, cols: EventColumns, stops: Sequence[int]
) -> list[LearnerState] | None:
    """The states after the events of ``cols`` (in time order; item -1: not applied) up to each of
    ``stops`` (increasing), as :func:`apply_columns` gives them run by run, made by the compiled
    loop in calls of at most :data:`RUN_SLICE` events that keep the interpreter lock throughout
    (where numpy's operations on long arrays each let it go, and a thread beside then keeps it for
    its switch interval); between two calls the lock is let go, so that a thread waiting for it
    gets it then, not after its switch interval. None as
    :func:`apply_columns` (also when a part of the run needs the per-event path)."""
    if kernel() is None or model._gating_tables is not None:
        return None
    from ._kernel import run

    n_items, n_topics = state.n_items, state.n_topics
    item = cols.item
    # the rows of the items met before or in the run (none of those out of range: the loop refuses them)
    touched = np.union1d(state.touched, item[(item >= 0) & (item < n_items)])
    slot = np.minimum(np.searchsorted(touched, item), max(touched.size - 1, 0))
    rows = np.empty((touched.size, 6))
    rows[:] = _BLANK
    before = np.searchsorted(touched, state.touched)
    rows[before] = state.rows
    ability, memory, momentum = state._ability_table(), state._memory_table(), state.momentum.copy()
    last = np.full(touched.size, -1, dtype=np.intp)
    size, k = len(stops), touched.size
    out = (np.empty((size, n_topics + 1, 3)), np.empty((size, n_topics, 5)), np.empty((size, 2)))
    out_rows, out_last, out_events = np.empty((size, k, 6)), np.empty((size, k), np.intp), np.empty(size, np.intp)
    items = model.items
    skip = math.nan if model.skip_score is None else float(model.skip_score)
    run_items = (np.asarray(items.topic, dtype=np.intp), np.asarray(items.b, dtype=np.float64),
                 np.asarray(items.a, dtype=np.float64), np.asarray(items.scorable, dtype=bool))  # fmt: skip
    carry = np.array([0.0, -np.inf])
    wanted = dict(zip(stops, range(size), strict=True))
    lo = 0
    for hi in sorted({*stops, *range(RUN_SLICE, len(cols), RUN_SLICE)}):
        if not run(
            cols.item, cols.kind, cols.ts, cols.score, cols.topic, cols.time_ms, cols.fraction, cols.practice,
            *run_items, skip, ability, memory, momentum, slot, rows, last, lo, hi, carry, wanted.get(hi, -1), *out,
            out_rows, out_last, out_events, *model.kernel_tables,
        ):  # fmt: skip
            return None
        lo = hi
        if hi < len(cols):
            time.sleep(0)  # (a thread waiting for the lock gets it now, not at the end of its switch interval)
    met = np.zeros(k, dtype=bool)
    met[before] = True
    old = np.zeros(k, dtype=np.int64)
    old[before] = state.sig
    signatures: dict[int, int] = {}
    states = []
    for s in range(size):
        latest = out_last[s]
        rows_met = np.flatnonzero(met | (latest >= 0))
        sig = old[rows_met]
        events = latest[rows_met]
        for at, e in zip(np.flatnonzero(events >= 0).tolist(), events[events >= 0].tolist(), strict=True):
            found = signatures.get(e)
            sig[at] = signatures[e] = _signature(cols, e) if found is None else found
        made = (touched[rows_met], out_rows[s][rows_met], sig)
        for array in made:
            array.flags.writeable = False
        states.append(
            LearnerState.make(
                out[0][s],
                out[1][s],
                *made,
                n_items=n_items,
                n_events=state.n_events + int(out_events[s]),
                momentum=out[2][s],
                ability_blank=state.ability_blank,
            )
        )
    return states
