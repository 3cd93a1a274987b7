"""Events and learner states of one engine: the event log is the source of truth.

Events are stored once per key ``(user, catalog, item, timestamp)``; a learner
state is derived from them by applying them in time order, events sharing a
timestamp in the order they were posted. States are kept in an in-process cache,
bounded by bytes, and updated online (O(1) per event). A small revision document per
learner in the store tells whether the cached state is current (another process may
have written) and, for the latest writes, the earliest timestamp each one touched.

When events arrive out of order (or overwrite earlier ones, or another process
wrote), the state is rebuilt from the nearest *checkpoint* older than the
earliest changed event: learners with long histories keep a few snapshots of
their state, so a late event costs a replay of the events after it, not of the
whole history. Learners without any event are never cached: they share one
empty state per catalog.

Concurrency: the tracker's own lock guards its cache only and is never held
while the store is called or a state is computed. Callers serialise the work on
one learner (the engine's per-learner locks), and bring states up to date
outside store transactions, so a long replay holds up nobody but its learner.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from learnloop._lru import LRUCache
from learnloop.engine import records
from learnloop.engine.learners.batch import EventBatch
from learnloop.engine.learners.entries import (
    DEFAULT_CACHE_BYTES,
    Checkpoint,
    LearnerEntry,
    apply_events,
    empty_entry,
)
from learnloop.engine.learners.history import History, merged
from learnloop.engine.learners.history import read as read_history
from learnloop.engine.learners.kept import Kept, kept_of
from learnloop.engine.learners.plans import BatchPlan, Plan, StaleError, plan_batch, plan_interactions
from learnloop.engine.learners.plans import write as write_plan
from learnloop.engine.learners.revisions import Revision, RevisionMemo
from learnloop.engine.repository.catalog_model import CatalogModel
from learnloop.events import Interaction
from learnloop.store import Store
from learnloop.tracing.learner import COLUMNS_RUN

__all__ = ["DEFAULT_CACHE_BYTES", "LearnerEntry", "Plan", "StaleError", "Tracker", "empty_entry"]

_NONE = Revision()


def _order(rows: Iterable[Interaction]) -> list[Interaction]:
    """Time order; events sharing a timestamp keep the order given (posting order)."""
    return sorted(rows, key=lambda i: i.epoch)


def _with_pending(base: LearnerEntry, group: Sequence[Interaction], revision: int, *, rewrite: bool) -> LearnerEntry:
    """``base`` at ``revision`` with ``group``'s events pending; a rewrite (events overwritten with
    other content) marks the state dirty from the earliest of them."""
    dirty = base.dirty_from
    if rewrite:
        low = min(i.epoch for i in group)
        dirty = low if dirty is None else min(dirty, low)
    return replace(base, revision=revision, pending=(*base.pending, *group), dirty_from=dirty)


class Tracker:
    """Event ingestion and learner-state access over a store.

    Ingestion stores events and bumps the learner's revision; the learner
    state catches up when it is next read (applying the new events online, or
    replaying from a checkpoint when they arrived out of order or overwrote others).
    """

    def __init__(self, store: Store, *, cache_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        if cache_bytes < 0:
            raise ValueError(f"cache_bytes must be non-negative, got {cache_bytes}")
        self.store = store
        self._cache: LRUCache[tuple[str, str, str], LearnerEntry] = LRUCache(
            max_bytes=cache_bytes, sizeof=lambda entry: entry.nbytes
        )
        self._memo = RevisionMemo()

    # -- the cache ------------------------------------------------------------------
    def _get(self, key: tuple[str, str, str]) -> LearnerEntry | None:
        return self._cache.get(key)

    def _remember(self, key: tuple[str, str, str], entry: LearnerEntry) -> None:
        if entry.revision != 0:  # learners without events share one empty entry, never cached
            entry.state.compact()  # the cache keeps the items met, not dense arrays made on demand
            self._cache.put(key, entry)

    @property
    def nbytes(self) -> int:
        """Bytes held by the cached learner states (their arrays and checkpoints)."""
        return self._cache.nbytes

    def forget(self) -> None:
        """Drop the in-process cache (after a rolled-back transaction)."""
        self._cache.clear()

    # -- reading ----------------------------------------------------------------------
    def state(self, app: str, user: str, catalog: CatalogModel, *, trust: bool = False) -> LearnerEntry:
        """The current learner state (from the cache, caught up, or rebuilt).

        The caller holds the learner's lock; call it outside a store transaction
        when possible, so that a rebuild holds up no other learner. With ``trust``, a
        cached entry is returned without reading the stored revision: the caller's
        write checks it (``write(check=True)``).
        """
        catalog_id = catalog.index.catalog_id
        key = (app, user, catalog_id)
        cached = self._get(key)
        clean = None if cached is None or cached.pending or cached.dirty_from is not None else cached
        if clean is not None and clean.fingerprint == catalog.fingerprint:
            if trust:
                return clean
        else:
            clean = None
        doc = records.revision(self.store, app, (user, catalog_id))
        if clean is not None and doc.__class__ is dict and doc.get("rev") == clean.revision:
            return clean  # (the revision number alone says the entry is current)
        revision = self._memo.decode(key, doc)
        if revision.rev == 0:
            return empty_entry(catalog)
        entry = self._base(catalog, cached, revision)
        if not entry.current:
            entry = self._catch_up(app, user, catalog, entry)
        if entry is not cached:
            self._remember(key, entry)
        return entry

    @staticmethod
    def _base(catalog: CatalogModel, cached: LearnerEntry | None, revision: Revision) -> LearnerEntry:
        """The cached entry relabelled to the stored ``revision`` (marked dirty where others wrote)."""
        if cached is None or cached.fingerprint != catalog.fingerprint or cached.revision > revision.rev:
            # to be rebuilt from the whole history: the (shared, unused) empty state stands in
            return replace(empty_entry(catalog), revision=revision.rev, dirty_from=-math.inf)
        if cached.revision == revision.rev:
            return cached
        # another process wrote: the revision document says from which time on (+inf: it only
        # appended events later than any stored, -inf: unknown, rebuild from the start)
        low = revision.changed_since(cached.revision)
        if low is None:
            low = math.inf
        if cached.pending:
            low = min(low, min(i.epoch for i in cached.pending))
        if cached.dirty_from is not None:
            low = min(low, cached.dirty_from)
        return replace(cached, revision=revision.rev, pending=(), dirty_from=low)

    def _catch_up(
        self,
        app: str,
        user: str,
        catalog: CatalogModel,
        entry: LearnerEntry,
        history: History | None = None,
    ) -> LearnerEntry:
        """``entry`` with its pending events applied, or rebuilt from a checkpoint.

        ``history`` is the learner's full history when the caller has it (the
        store's, with events about to be written merged in).
        """
        kept = entry.kept
        if entry.dirty_from is None:
            group = _order(entry.pending)
            if group[0].epoch >= entry.latest:
                low = group[0].epoch
                checkpoints = tuple(c for c in entry.checkpoints if c.latest < low)
                applied = self._apply(catalog, entry, group, checkpoints)
                return applied if kept is None else replace(applied, kept=kept.extended(catalog, group))
            dirty_from = group[0].epoch
        else:
            dirty_from = entry.dirty_from
            if entry.pending:
                dirty_from = min(dirty_from, min(i.epoch for i in entry.pending))
        if dirty_from > entry.latest:
            # every change is later than the cached state: continue from it
            start = replace(entry, pending=(), dirty_from=None)
            valid = entry.checkpoints
        else:
            valid = tuple(c for c in entry.checkpoints if c.latest < dirty_from)
            start = self._start(catalog, entry, valid)
        if kept is not None:  # (the events up to ``start`` are those kept: only later ones changed)
            upto, later = kept.full(catalog).split(start.latest)
        if kept is not None and history is None and entry.dirty_from is None:  # (its own events only: no read)
            tail = merged(catalog, later, entry.pending, start.latest)
        elif history is None:
            tail = read_history(self.store, app, user, catalog, after=start.latest)
        else:
            tail = history.after(start.latest)
        if kept is not None:
            kept = Kept(upto).extended(catalog, tail)
        elif start.latest == -math.inf:
            kept = kept_of(catalog, tail)
        rebuilt = self._apply(catalog, start, tail, valid)
        return rebuilt if kept is None else replace(rebuilt, kept=kept)

    @staticmethod
    def _start(catalog: CatalogModel, entry: LearnerEntry, valid: tuple[Checkpoint, ...]) -> LearnerEntry:
        """The state to replay from: the latest of the ``valid`` checkpoints, else the empty state."""
        if valid:
            base = valid[-1]
            start = LearnerEntry(entry.revision, entry.fingerprint, base.state, base.latest, base.last_attempt)
        else:
            start = replace(empty_entry(catalog), revision=entry.revision)
        return start

    #: :func:`~learnloop.engine.learners.entries.apply_events` (an attribute, to be watched in tests)
    _apply = staticmethod(apply_events)

    # -- writing --------------------------------------------------------------------------
    def plan(
        self,
        app: str,
        interactions: Iterable[Interaction],
        *,
        revisions: Mapping[tuple[str, str], int] | None = None,
        latest: Mapping[tuple[str, str], float] | None = None,
    ) -> Plan:
        """Which interactions would change anything (new keys, overwrites with other content).

        Reads only. Within one call, the last version of a key wins; the order
        of first appearance is the posting order. ``revisions`` gives the
        learners' revisions when the caller has just read them (under the
        learners' locks), so that they are not read again, and ``latest`` the time of
        each one's latest stored event as of that revision.
        """
        return plan_interactions(self.store, app, interactions, revisions=revisions, latest=latest)

    def plan_batch(self, app: str, user_id: str, batch: EventBatch, topics: Sequence[str]) -> BatchPlan:
        """:meth:`plan` for a batch of ``user_id``'s events as columns (``topics``: each one's topic)."""
        return plan_batch(self.store, app, user_id, batch, topics)

    def write(self, app: str, plan: Plan | BatchPlan, *, check: bool = False) -> None:
        """Store the plan's events and advance the learners' revisions.

        Must be called inside ``store.atomic()``. With ``check``, the revisions
        are read again and :class:`StaleError` is raised (writing nothing) when
        one moved since the plan was made; without it, the plan must have been
        made inside the same transaction (its revisions are then current).
        """
        write_plan(self.store, app, plan, check=check, memo=self._memo)

    def advance(
        self,
        app: str,
        plan: Plan | BatchPlan,
        catalogs: Callable[[str], CatalogModel],
        *,
        compute: Iterable[tuple[str, str]] = (),
        eager: int = 0,
    ) -> dict[tuple[str, str, str], LearnerEntry]:
        """The cache entries after the plan is written: pending events appended.

        Learners in ``compute`` are brought fully up to date (may replay from a
        checkpoint: call it outside a store transaction). With ``eager``, a learner
        with at least that many events in the plan gets them applied now when that
        needs no read of the store: a learner without stored events, or one whose
        cached state is current and older than all of them (a bulk import). The
        entries are installed with :meth:`install` once the write has committed.
        """
        wanted = set(compute)
        # a batch's events stay rows of its columns until a learner needs them (most need nothing now)
        batch = plan if isinstance(plan, BatchPlan) else None
        groups: Mapping[tuple[str, str], Any] = plan.groups()
        out: dict[tuple[str, str, str], LearnerEntry] = {}
        for (user, catalog_id), group in groups.items():
            catalog = catalogs(catalog_id)
            key = (app, user, catalog_id)
            stored = plan.revisions.get((user, catalog_id), _NONE)
            revision = stored.rev
            cached = self._get(key)
            stale = cached is None or cached.revision != revision or cached.fingerprint != catalog.fingerprint
            now = (user, catalog_id) in wanted or (
                0 < eager <= len(group) and (revision == 0 or (not stale and cached is not None and cached.current))
            )
            if not now and stale:
                continue  # rebuilt from the store when next read
            base = empty_entry(catalog) if revision == 0 else self._base(catalog, cached, stored)
            rewrite = (user, catalog_id) in plan.rewrites
            if now and not rewrite and base.current:
                applied = self._applied_at_once(catalog, base, group, batch)
                if applied is not None:
                    out[key] = applied
                    continue
            if batch is not None:
                group = batch.interactions(group)
            entry = _with_pending(base, group, revision + 1, rewrite=rewrite)
            if (user, catalog_id) in wanted:
                entry = self._caught_up(app, user, catalog, entry, group)
            out[key] = entry
        return out

    def _applied_at_once(
        self, catalog: CatalogModel, base: LearnerEntry, group: Any, batch: BatchPlan | None
    ) -> LearnerEntry | None:
        """``base`` (current) at the next revision with the events of ``group`` applied, when all of
        them are as late as its state's latest (a step, a bulk import); else None.

        ``group``: the learner's interactions, or its rows of ``batch``.
        """
        ordered: Sequence[Interaction] | History
        if batch is not None and len(group) >= COLUMNS_RUN:  # as columns, made from the batch's
            ordered = batch.history(catalog, group)
            low = float(ordered.columns.ts[0])
        else:
            if batch is not None:
                group = batch.interactions(group)
            ordered = _order(group) if len(group) > 1 else group
            low = ordered[0].epoch
        if low < base.latest:
            return None
        checkpoints = base.checkpoints
        if checkpoints and checkpoints[-1].latest >= low:
            checkpoints = tuple(c for c in checkpoints if c.latest < low)
        first = base.revision == 0  # (the learner's first events: what it keeps starts with them)
        kept = kept_of(catalog, ordered) if first else base.kept
        if kept is not None and not first:
            kept = kept.extended(catalog, ordered)
        applied = self._apply(catalog, base, ordered, checkpoints, base.revision + 1)
        return applied if kept is None else replace(applied, kept=kept)

    def _caught_up(
        self, app: str, user: str, catalog: CatalogModel, entry: LearnerEntry, group: Sequence[Interaction]
    ) -> LearnerEntry:
        """``entry`` (``group``'s events among its pending ones, not yet written) brought up to date.

        The store's history is read (and ``group`` merged into it) only when the
        entry is dirty, or an event is late and the entry keeps no events of its own.
        """
        history = None  # (with the events kept and no other writer, they are merged with those posted)
        late = entry.pending and _order(entry.pending)[0].epoch < entry.latest
        if entry.dirty_from is not None or (late and entry.kept is None):
            low = min((i.epoch for i in entry.pending), default=math.inf)
            if entry.dirty_from is not None:
                low = min(low, entry.dirty_from)
            valid = [c.latest for c in entry.checkpoints if c.latest < low]
            after = valid[-1] if valid else -math.inf
            history = merged(catalog, read_history(self.store, app, user, catalog, after), group, after)
        return self._catch_up(app, user, catalog, entry, history)

    def install(self, entries: Mapping[tuple[str, str, str], LearnerEntry]) -> None:
        """Put entries made by :meth:`advance` in the cache (after their write committed)."""
        for key, entry in entries.items():
            self._remember(key, entry)
