"""Events and learner states of one engine: the event log is the source of truth.

Events are stored once per key ``(user, catalog, item, timestamp)``; a learner
state is derived from them. States are kept in an in-process cache and
updated online (O(1) per event); a small revision document per learner in the
store tells whether the cached state is current (another process may have
written). On a miss, after an overwrite of an earlier event, an event older
than the learner's latest, or a change of the catalog, the state is rebuilt by
replaying the learner's events in time order.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from learnloop.content import CatalogIndex
from learnloop.events import Interaction
from learnloop.store import Store
from learnloop.tracing import Event, ItemParams, LearnerModel, LearnerState, TopicStructure

__all__ = ["CatalogModel", "Tracker"]


@dataclass(frozen=True, eq=False)
class CatalogModel:
    """A compiled catalog with its learner model and a fingerprint of both."""

    index: CatalogIndex
    model: LearnerModel
    fingerprint: str

    @classmethod
    def build(
        cls,
        index: CatalogIndex,
        *,
        calibration: Mapping[str, Mapping[str, float]] | None = None,
        **model_options: Any,
    ) -> CatalogModel:
        """``calibration`` maps item ids to calibrated ``{"b": ..., "a": ...}``;
        items without one keep their cold-start difficulty."""
        topics = TopicStructure.from_arrays(index.topic_parent, index.prerequisite_edges)
        items = ItemParams.from_catalog(
            item_topic=index.item_topic,
            difficulty=index.difficulty,
            scorable=index.scorable,
            is_theory=index.is_theory,
        )
        if calibration:
            b = items.b.copy()
            a = items.a.copy()
            for item_id, params in calibration.items():
                positions = index.item_positions.get(item_id)
                if positions is not None:
                    b[positions] = params["b"]
                    a[positions] = params.get("a", 1.0)
            items = items.with_calibration(b, a)
        digest = hashlib.blake2b(digest_size=12)
        digest.update("\x1f".join(index.topic_ids).encode())
        digest.update("\x1f".join(index.item_ids).encode())
        for arr in (index.topic_parent, index.prerequisite_edges, index.item_topic, items.b, items.a):
            digest.update(np.ascontiguousarray(arr).tobytes())
        digest.update(repr(sorted(model_options.items())).encode())
        return cls(index, LearnerModel(topics, items, **model_options), digest.hexdigest())

    def to_event(self, interaction: Interaction) -> Event | None:
        """The tracing event of a stored interaction (None when its item left the catalog)."""
        position = self.index.position(interaction.item_id, interaction.topic_id)
        if position is None:
            position = self.index.position(interaction.item_id)
            if position is None:
                return None
        return Event(
            item=position,
            kind=interaction.kind,
            timestamp=interaction.epoch,
            score=interaction.score,
            time_spent_ms=interaction.time_spent_ms or 0,
            fraction_completed=interaction.fraction_completed,
            practice=interaction.practice,
        )


@dataclass(frozen=True, slots=True)
class _Cached:
    """A learner state as of ``revision``: ``state`` with ``pending`` events not yet applied.

    ``state`` is None when the state must be rebuilt from the stored history
    (an overwrite, or nothing known in this process).
    """

    revision: int
    fingerprint: str
    state: LearnerState | None
    latest: float  # epoch seconds of the latest applied event (-inf: none)
    last_attempt: tuple[int, float] | None  # (position, score) of the latest event when an attempt
    pending: list[Interaction] = field(default_factory=list)


class Tracker:
    """Event ingestion and learner-state access over a store.

    Ingestion stores events and bumps the learner's revision; the learner
    state catches up when it is next read (applying the new events online, or
    replaying the history when they arrived out of order or overwrote others).
    """

    def __init__(self, store: Store, *, cache_size: int = 4096) -> None:
        self.store = store
        self._cache: OrderedDict[tuple[str, str, str], _Cached] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.RLock()

    # -- revision documents -------------------------------------------------------
    def _revisions(self, app: str, learners: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
        found = self.store.get_many("learners", app, list(learners))
        return {(k[0], k[1]): int(doc["rev"]) for k, doc in found.items()}  # type: ignore[index]

    def _remember(self, key: tuple[str, str, str], entry: _Cached) -> None:
        self._cache[key] = entry
        self._cache.move_to_end(key)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    # -- reading -------------------------------------------------------------------
    def history(self, app: str, user: str, catalog: str) -> list[Interaction]:
        """Every stored interaction of a learner in a catalog, in time order."""
        rows = [Interaction.from_doc(doc) for _, doc in self.store.scan("events", app, (user, catalog))]
        rows.sort(key=lambda i: (i.epoch, i.item_id))
        return rows

    def state(self, app: str, user: str, catalog: CatalogModel) -> _Cached:
        """The current learner state (from the cache, caught up, or replayed)."""
        catalog_id = catalog.index.catalog_id
        key = (app, user, catalog_id)
        with self._lock:
            revision = self._revisions(app, [(user, catalog_id)]).get((user, catalog_id), 0)
            cached = self._cache.get(key)
            if cached is None or cached.revision != revision or cached.fingerprint != catalog.fingerprint:
                entry = self._replay(catalog, self.history(app, user, catalog_id), revision)
            elif cached.state is None:
                entry = self._replay(catalog, self.history(app, user, catalog_id), revision)
            elif cached.pending:
                entry = self._catch_up(app, user, catalog, cached)
            else:
                return cached
            self._remember(key, entry)
            return entry

    def _catch_up(self, app: str, user: str, catalog: CatalogModel, cached: _Cached) -> _Cached:
        assert cached.state is not None
        group = sorted(cached.pending, key=lambda i: (i.epoch, i.item_id))
        if group[0].epoch < cached.latest:
            return self._replay(catalog, self.history(app, user, catalog.index.catalog_id), cached.revision)
        events = [e for e in (catalog.to_event(i) for i in group) if e is not None]
        state = catalog.model.update_many(cached.state, events)
        last_attempt = cached.last_attempt
        if events:
            last = events[-1]
            last_attempt = (last.item, last.score) if last.kind == "attempt" and last.score is not None else None
        return _Cached(cached.revision, cached.fingerprint, state, max(cached.latest, group[-1].epoch), last_attempt)

    @staticmethod
    def _replay(catalog: CatalogModel, history: Sequence[Interaction], revision: int) -> _Cached:
        events = [e for e in (catalog.to_event(i) for i in history) if e is not None]
        state = catalog.model.update_many(catalog.model.new_state(), events)
        latest = max((float(e.timestamp) for e in events), default=-math.inf)
        last = events[-1] if events else None
        last_attempt = (
            (last.item, last.score) if last is not None and last.kind == "attempt" and last.score is not None else None
        )
        return _Cached(revision, catalog.fingerprint, state, latest, last_attempt)

    # -- writing -------------------------------------------------------------------
    def ingest(
        self,
        app: str,
        interactions: Iterable[Interaction],
        catalogs: Callable[[str], CatalogModel],
    ) -> tuple[list[Interaction], int]:
        """Store interactions and advance the learners' revisions.

        Returns the interactions that changed anything (new keys and overwrites
        with other content) and how many of them were new keys. Must be called
        inside ``store.atomic()``: the caller's transaction covers the events,
        the revision documents and its own writes. Within one call, the last
        version of a key wins.
        """
        latest_version: dict[tuple[str, str, str, str], Interaction] = {}
        for interaction in interactions:
            latest_version[interaction.key] = interaction
        if not latest_version:
            return [], 0
        existing = self.store.get_many("events", app, list(latest_version))
        changed: list[Interaction] = []
        rewrites: set[tuple[str, str]] = set()
        for key, interaction in latest_version.items():
            before = existing.get(key)
            if before is not None:
                if _same_event(before, interaction.to_doc()):
                    continue
                rewrites.add((interaction.user_id, interaction.catalog_id))
            changed.append(interaction)
        if not changed:
            return [], 0
        new = sum(1 for i in changed if i.key not in existing)

        by_learner: dict[tuple[str, str], list[Interaction]] = {}
        for interaction in changed:
            by_learner.setdefault((interaction.user_id, interaction.catalog_id), []).append(interaction)
        with self._lock:
            self.store.put_many("events", app, [(i.key, i.to_doc()) for i in changed])
            revisions = self._revisions(app, by_learner)
            updates = []
            for (user, catalog_id), group in by_learner.items():
                revision = revisions.get((user, catalog_id), 0)
                cache_key = (app, user, catalog_id)
                cached = self._cache.get(cache_key)
                if cached is not None and cached.revision == revision and (user, catalog_id) not in rewrites:
                    cached.pending.extend(group)
                    entry = _Cached(
                        revision + 1,
                        cached.fingerprint,
                        cached.state,
                        cached.latest,
                        cached.last_attempt,
                        cached.pending,
                    )
                else:
                    # rebuilt from the stored history when next read
                    fingerprint = catalogs(catalog_id).fingerprint
                    entry = _Cached(revision + 1, fingerprint, None, -math.inf, None)
                self._remember(cache_key, entry)
                updates.append(((user, catalog_id), {"rev": revision + 1}))
            self.store.put_many("learners", app, updates)
        return changed, new

    def forget(self) -> None:
        """Drop the in-process cache (after a rolled-back transaction)."""
        with self._lock:
            self._cache.clear()


def _same_event(before: Any, after: dict[str, Any]) -> bool:
    """Two stored versions of one event key with the same content (the session tag aside)."""
    if not isinstance(before, dict):
        return False
    strip = {"session_id"}
    return {k: v for k, v in before.items() if k not in strip} == {
        k: v for k, v in after.items() if k not in strip
    }


