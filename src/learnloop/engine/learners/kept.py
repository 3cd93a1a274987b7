"""A long history kept beside its learner's cached state, so that a late event replays without
reading the store.

A learner whose state holds :data:`KEEP_EVENTS` events or more keeps, in its
cache entry, the events that state was built from (:class:`Kept`): the columns
of a full read of the store or of a bulk import, then the events applied after
them (each later than all before it: appended in posting order, folded into the
columns every :data:`FOLD` of them). An event dated before the state's latest,
written by this process, then replays from those events with it merged in (as
the store holds them after the write), instead of from a read of the whole
history; anything else (another process wrote, an event rewritten) reads the
store as before, and keeps what it read. The entry is installed only once its
write has committed, so what it keeps is what the store holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

from learnloop.engine.learners.history import History, of_interactions
from learnloop.engine.repository.catalog_model import CatalogModel
from learnloop.events import Interaction
from learnloop.tracing.learner import EventColumns

__all__ = ["FOLD", "KEEP_EVENTS", "Kept", "kept_of"]

#: a learner starts keeping its events from a full read or a bulk import of at least this many
KEEP_EVENTS = 4_096
#: events appended one call at a time are folded into the columns every this many
FOLD = 512
#: bytes a kept event takes beside its columns: the references to its item id and stamp, the stamp
_ROW_BYTES = 150
_COLUMNS = tuple(field.name for field in fields(EventColumns))


@dataclass(frozen=True, slots=True)
class Kept:
    """A learner's events in time order (events sharing a time: in posting order): ``history``,
    then ``tail`` (each no earlier than every event before it)."""

    history: History
    tail: tuple[Interaction, ...] = ()

    def __len__(self) -> int:
        return len(self.history) + len(self.tail)

    @property
    def nbytes(self) -> int:
        columns = self.history.columns
        data = sum(getattr(columns, name).nbytes for name in _COLUMNS)
        return int(data) + _ROW_BYTES * len(self.history) + 300 * len(self.tail)

    def full(self, catalog: CatalogModel) -> History:
        """Every kept event as one history."""
        if not self.tail:
            return self.history
        return _joined(self.history, of_interactions(catalog, self.tail))

    def extended(self, catalog: CatalogModel, later: Sequence[Interaction] | History) -> Kept:
        """These events, then ``later`` (in time order, none earlier than the latest kept)."""
        if isinstance(later, History):
            return Kept(_joined(self.full(catalog), later))
        tail = (*self.tail, *later)
        if len(tail) >= FOLD:
            return Kept(_joined(self.history, of_interactions(catalog, tail)))
        return Kept(self.history, tail)


def kept_of(catalog: CatalogModel, events: Sequence[Interaction] | History | None) -> Kept | None:
    """``events`` (a learner's every event, in time order) to keep, when they are enough to be worth it."""
    if events is None or len(events) < KEEP_EVENTS:
        return None
    return Kept(events if isinstance(events, History) else of_interactions(catalog, events))


def _joined(first: History, then: History) -> History:
    if not len(first) or not len(then):  # (a long history is not copied for nothing)
        return then if not len(first) else first
    return History(first.item_ids + then.item_ids, first.stamps + then.stamps, first.columns.joined(then.columns))
