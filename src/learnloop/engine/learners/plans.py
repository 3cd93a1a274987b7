"""What an ingestion writes: which events are new or rewrite stored ones, and the write itself.

A plan reads only: the learners' revision documents, and the stored versions of
the event keys that may exist (a key later than every stored event of its
learner is new without asking). Within one call the last version of a key wins;
the order of first appearance is the posting order. :class:`Plan` holds the
changed events as interactions (sessions, and the per-event path);
:class:`BatchPlan` holds them as rows of an :class:`~learnloop.engine.learners.batch.EventBatch`,
written as columns. :func:`write` stores either in the same way.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import numpy as np

from learnloop._types import IntArray
from learnloop.engine import records
from learnloop.engine.learners.batch import EventBatch
from learnloop.engine.learners.history import History, of_batch
from learnloop.engine.learners.revisions import Revision, RevisionMemo
from learnloop.engine.repository.catalog_model import CatalogModel
from learnloop.events import Interaction
from learnloop.store import Store
from learnloop.store.base import Columns, Doc, Key

__all__ = ["BatchPlan", "Plan", "StaleError", "plan_batch", "plan_interactions", "write"]

Learner = tuple[str, str]
_NONE = Revision()


class StaleError(Exception):
    """The store changed between planning and writing (another process wrote)."""


@dataclass(frozen=True, slots=True)
class Plan:
    """What an ingestion will write: the changed interactions, grouped by learner."""

    changed: list[Interaction]
    new: int
    by_learner: dict[Learner, list[Interaction]]
    rewrites: set[Learner]
    revisions: dict[Learner, Revision]
    #: the revisions were read from the store (not given by the caller)
    read: bool = True

    def rows(self) -> Iterable[tuple[Key, Doc]]:
        return [(i.key, i.to_doc()) for i in self.changed]

    def groups(self) -> dict[Learner, list[Interaction]]:
        """The changed interactions of each learner (as :meth:`BatchPlan.groups` gives rows)."""
        return self.by_learner

    def spans(self) -> dict[Learner, tuple[float, float]]:
        """The earliest and latest time of each learner's changed events."""
        out = {}
        for learner, group in self.by_learner.items():
            epochs = [i.epoch for i in group]
            out[learner] = (min(epochs), max(epochs))
        return out


@dataclass(frozen=True, slots=True)
class BatchPlan:
    """What a batch's ingestion will write: the rows ``changed`` of ``batch`` (in the order
    of their keys' first appearance, each its key's last version), for ``user_id``."""

    user_id: str
    batch: EventBatch
    topics: list[str]
    changed: IntArray
    new: int
    spans_: dict[Learner, tuple[float, float]]
    rewrites: set[Learner]
    revisions: dict[Learner, Revision]
    read: bool = True

    def rows(self) -> Columns:
        b, at = self.batch, self.changed.tolist()
        if len(at) == len(b) and at == list(range(len(b))):
            take: Any = lambda column: column  # noqa: E731
        else:
            take = lambda column: [column[k] for k in at]  # noqa: E731
        catalogs, items, stamps = take(b.catalogs), take(b.items), take(b.stamps)
        users = list(repeat(self.user_id, len(at)))
        fields = {
            "kind": take(b.kinds),
            "user_id": users,
            "catalog_id": catalogs,
            "item_id": items,
            "topic_id": take(self.topics),
            "timestamp": stamps,
            "score": take(b.scores),
            "time_spent_ms": take(b.times),
            "fraction_completed": take(b.fractions),
        }
        return Columns((users, catalogs, items, stamps), fields)

    def spans(self) -> dict[Learner, tuple[float, float]]:
        return self.spans_

    def groups(self) -> dict[Learner, IntArray]:
        """The rows of ``changed`` of each learner (in the order of ``changed``)."""
        catalogs = self.batch.catalogs
        if not len(self.changed):
            return {}
        if catalogs.count(catalogs[0]) == len(catalogs):
            return {(self.user_id, catalogs[0]): self.changed}
        codes = np.array([catalogs[r] for r in self.changed.tolist()], dtype=object)
        names = dict.fromkeys(codes.tolist())
        return {(self.user_id, name): self.changed[codes == name] for name in names}

    def interactions(self, rows: IntArray) -> list[Interaction]:
        """The events at ``rows`` of the batch as interactions, in that order."""
        batch, topics, user = self.batch, self.topics, self.user_id
        return [batch.interaction(row, user_id=user, topic_id=topics[row]) for row in rows.tolist()]

    def history(self, catalog: CatalogModel, rows: IntArray) -> History:
        """The events at ``rows`` of the batch (one learner's, in posting order) as a history in
        time order, made from the batch's columns (no interaction per event)."""
        return of_batch(catalog, self.batch, self.topics, rows)


def _revisions(
    store: Store, app: str, learners: list[Learner], memo: RevisionMemo | None = None
) -> dict[Learner, Revision]:
    if len(learners) == 1:  # (a session's step) one read
        learner = learners[0]
        doc = records.revision(store, app, learner)
        return {learner: Revision.from_doc(doc) if memo is None else memo.decode((app, *learner), doc)}
    found = records.revisions(store, app, learners)
    return {(k[0], k[1]): Revision.from_doc(doc) for k, doc in found.items()}


def plan_interactions(
    store: Store,
    app: str,
    interactions: Iterable[Interaction],
    *,
    revisions: Mapping[Learner, int] | None = None,
    latest: Mapping[Learner, float] | None = None,
) -> Plan:
    """Which interactions would change anything (see :meth:`Tracker.plan <learnloop.engine.learners.tracker.Tracker.plan>`)."""
    if revisions is not None and latest is not None and interactions.__class__ is list and len(interactions) == 1:
        # (a step) one event later than every stored one of its learner: new, nothing to read
        only: Interaction = interactions[0]
        learner = (only.user_id, only.catalog_id)
        rev, until = revisions.get(learner), latest.get(learner)
        if rev is not None and until is not None and only.epoch > until:
            return Plan([only], 1, {learner: [only]}, set(), {learner: Revision(rev, floor=rev)}, read=False)
    latest_version: dict[tuple[str, str, str, str], Interaction] = {}
    for interaction in interactions:
        latest_version[interaction.key] = interaction
    if not latest_version:
        return Plan([], 0, {}, set(), {})
    learners = list(dict.fromkeys((i.user_id, i.catalog_id) for i in latest_version.values()))
    read = revisions is None or not all(learner in revisions for learner in learners)
    if revisions is not None and not read:  # only the numbers are known: not what came before (floor)
        known = {learner: Revision(revisions[learner], floor=revisions[learner]) for learner in learners}
        bound = dict(latest or {})
    else:
        known = _revisions(store, app, learners)
        bound = {learner: known.get(learner, _NONE).stored_until for learner in learners}
    # a key later than every stored event of its learner is new: the store is not asked about it
    ask = [k for k, i in latest_version.items() if not i.epoch > bound.get((i.user_id, i.catalog_id), math.inf)]
    existing = records.event_docs(store, app, ask) if ask else {}
    changed: list[Interaction] = []
    rewrites: set[Learner] = set()
    for key, interaction in latest_version.items():
        before = existing.get(key)
        if before is not None:
            if _same_event(before, interaction.to_doc()):
                continue
            rewrites.add((interaction.user_id, interaction.catalog_id))
        changed.append(interaction)
    new = sum(1 for i in changed if i.key not in existing)
    by_learner: dict[Learner, list[Interaction]] = {}
    for interaction in changed:
        by_learner.setdefault((interaction.user_id, interaction.catalog_id), []).append(interaction)
    return Plan(changed, new, by_learner, rewrites, known, read=read)


def plan_batch(store: Store, app: str, user_id: str, batch: EventBatch, topics: Sequence[str]) -> BatchPlan:
    """:func:`plan_interactions` for a batch of ``user_id``'s events (``topics``: each one's topic),
    reading the learners' revisions, with the keys kept as columns."""
    n = len(batch)
    catalogs, items, stamps = batch.catalogs, batch.items, batch.stamps
    names = list(dict.fromkeys(catalogs))
    # the key without its user (and catalog, when there is one) -> the row of its last version, in
    # the order of first appearance
    last = dict(zip(zip(items, stamps) if len(names) == 1 else zip(catalogs, items, stamps), range(n), strict=True))
    rows = np.arange(n) if len(last) == n else np.fromiter(last.values(), dtype=np.intp, count=len(last))
    known = _revisions(store, app, [(user_id, c) for c in names])
    epochs = batch.epochs()[rows]
    if len(names) == 1:
        code = np.zeros(len(rows), dtype=np.intp)
    else:
        codes = {c: k for k, c in enumerate(names)}
        code = np.fromiter((codes[catalogs[r]] for r in rows.tolist()), dtype=np.intp, count=len(rows))
    bound = np.array([known.get((user_id, c), _NONE).stored_until for c in names])
    # a key later than every stored event of its learner is new: the store is not asked about it
    ask = np.flatnonzero(~(epochs > bound[code])).tolist()
    at = rows.tolist()
    keys = {k: (user_id, catalogs[at[k]], items[at[k]], stamps[at[k]]) for k in ask}
    existing = records.event_docs(store, app, list(keys.values())) if ask else {}
    keep = np.ones(len(rows), dtype=bool)
    rewrites: set[Learner] = set()
    found = 0
    for k in ask:
        before = existing.get(keys[k])
        if before is not None:
            row = int(rows[k])
            if _same_event(before, batch.doc(row, user_id=user_id, topic_id=topics[row])):
                keep[k] = False
                continue
            found += 1
            rewrites.add((user_id, catalogs[row]))
    changed = rows[keep]
    spans: dict[Learner, tuple[float, float]] = {}
    kept_code, kept_epochs = code[keep], epochs[keep]
    for c in dict.fromkeys(kept_code.tolist()) if len(names) > 1 else range(int(keep.any())):
        mine = kept_epochs[kept_code == c] if len(names) > 1 else kept_epochs
        spans[(user_id, names[c])] = (float(mine.min()), float(mine.max()))
    return BatchPlan(user_id, batch, list(topics), changed, len(changed) - found, spans, rewrites, known)


def write(
    store: Store, app: str, plan: Plan | BatchPlan, *, check: bool = False, memo: RevisionMemo | None = None
) -> None:
    """Store the plan's events and advance the learners' revisions (see
    :meth:`Tracker.write <learnloop.engine.learners.tracker.Tracker.write>`); ``memo`` keeps the
    revision documents read and written."""
    spans = plan.spans()
    if not spans:
        return
    now = plan.revisions
    if check or not plan.read:
        now = _revisions(store, app, list(spans), memo)
        if check and any(now.get(k, _NONE).rev != plan.revisions.get(k, _NONE).rev for k in spans):
            raise StaleError("a learner's events changed since the plan was made")
    records.put_events(store, app, plan.rows())
    updates = []
    for learner, (low, high) in spans.items():
        after = now.get(learner, _NONE).after_write(low, high, rewrite=learner in plan.rewrites)
        doc = after.to_doc()
        updates.append((learner, doc))
        if memo is not None and low.__class__ is float and high.__class__ is float:
            # (times as they read back, so the document read next is decoded to ``after`` itself)
            memo.remember((app, *learner), doc, after)
    records.put_revisions(store, app, updates)


def _same_event(before: Any, after: dict[str, Any]) -> bool:
    """Two stored versions of one event key with the same content (the session tag aside)."""
    if not isinstance(before, dict):
        return False
    strip = {"session_id"}
    return {k: v for k, v in before.items() if k not in strip} == {k: v for k, v in after.items() if k not in strip}
