"""Learners: event validation and ingestion, learner states, predictions and status.

Part of the :class:`~learnloop.engine.Engine`. Work on one learner holds that
learner's lock (see :mod:`learnloop.engine.locks`); states are brought up to date
outside store transactions, so a long replay holds up no other learner.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from learnloop._lru import LRUCache
from learnloop._types import BoolArray, Clock
from learnloop._validation import parse
from learnloop.content import CatalogIndex, Filter
from learnloop.engine import records
from learnloop.engine.learners.batch import EventBatch, PlainEvents, kind_problem, plain_events
from learnloop.engine.learners.plans import BatchPlan, Plan, StaleError
from learnloop.engine.learners.tracker import LearnerEntry, Tracker
from learnloop.engine.locks import LearnerLocks
from learnloop.engine.repository.catalog_model import CatalogModel
from learnloop.engine.repository.repository import ContentRepository
from learnloop.errors import LimitExceededError, NotFoundError, ValidationError
from learnloop.events import Interaction, format_timestamp, parse_timestamp
from learnloop.limits import Limits
from learnloop.recommend import DueItem, LearnerView, UserStatus
from learnloop.recommend.due import due_items, due_order
from learnloop.store import Store
from learnloop.tracing import Status
from learnloop.tracing.predictions import Predictions

__all__ = ["BatchEvents", "Ingestion", "Learners"]


@dataclass(frozen=True, slots=True)
class BatchEvents:
    """One user's posted events as columns, with each one's topic (what :meth:`Learners.ingest` takes
    beside interactions)."""

    user_id: str
    batch: EventBatch
    topics: list[str]


@dataclass(frozen=True, slots=True)
class Ingestion:
    """What :meth:`Learners.ingest` wrote: the plan (the events that changed anything, how many
    were new), and the learners' states after it."""

    app: str
    plan: Plan | BatchPlan
    entries: Mapping[tuple[str, str, str], LearnerEntry]
    #: the step's learner before the events (None without a step)
    current: LearnerEntry | None

    def entry(self, user_id: str, catalog_id: str) -> LearnerEntry:
        """A step's learner state after the events (the state brought up to date when nothing changed)."""
        found = self.entries.get((self.app, user_id, catalog_id), self.current)
        assert found is not None, "the state after the events is made for a step's learner only"
        return found


#: a learner with at least this many events in one write outside a step gets them applied at once
#: (when that needs no read of the store, see :meth:`Tracker.advance`), not at its next read: a bulk
#: import. Fewer wait for the next read, whose replay of them (a few ms) costs less than applying
#: them inside the write, which holds up the caller (ingestion in calls of 1,000: ~190k events/s
#: deferred, ~80k applied in the write)
EAGER_EVENTS = 4096

#: bytes of the cache of the learners' latest predictions
PREDICTIONS_CACHE_BYTES = 32 * 2**20


class Learners:
    """Events and learner states over one store (the engine owns one)."""

    def __init__(
        self, store: Store, content: ContentRepository, limits: Limits, clock: Clock, *, cache_bytes: int
    ) -> None:
        self.store = store
        self.content = content
        self.limits = limits
        self.clock = clock
        self.tracker = Tracker(store, cache_bytes=cache_bytes)
        self._locks = LearnerLocks()
        # each learner's latest predictions: the next ones recompute only the topics that changed
        self._predictions: LRUCache[tuple[str, str, str], Predictions] = LRUCache(
            max_bytes=PREDICTIONS_CACHE_BYTES, sizeof=lambda p: 4 * p.p.nbytes + 16 * p.mean.size + 800
        )

    def lock(self, app: str, pairs: Iterable[tuple[str, str]]) -> Any:
        """The locks of the learners ``(user_id, catalog_id)`` of ``app`` (see :mod:`learnloop.engine.locks`)."""
        return self._locks.hold((app, user, catalog) for user, catalog in pairs)

    def learner_cache_nbytes(self) -> int:
        """Bytes held by the in-process cache of learner states (bounded by ``learner_cache_bytes``)."""
        return self.tracker.nbytes

    def forget(self) -> None:
        """Drop the cached learner states (after a rolled-back transaction)."""
        self.tracker.forget()

    # -- the one ingestion protocol ---------------------------------------------------------
    @contextmanager
    def ingest(
        self,
        app: str,
        events: Sequence[Interaction] | BatchEvents,
        catalogs: Callable[[str], CatalogModel],
        *,
        step: tuple[str, CatalogModel] | None = None,
        reads: Sequence[records.Row] = (),
        before: Callable[[Ingestion], None] | None = None,
    ) -> Iterator[Ingestion]:
        """Store ``events`` and bring the learners' states along: the body of the ``with`` block
        runs inside the transaction that writes them, after the write, for the caller's own
        writes (a step's session document); the states are installed once it has committed.

        Holds the learners' locks throughout. Without ``step``, the events are planned and
        written inside the transaction, and the cached states of their learners get them
        after the commit. With ``step`` (``(user_id, model)``: a session's learner), the
        learner's state is brought up to date and the events applied *before* the
        transaction (a late event replays from a checkpoint there, holding up nobody else),
        and the write checks that no other process wrote the learner meanwhile (if one did,
        it is planned again inside): a state cached in this process is trusted until that
        check. ``catalogs`` gives each catalog's model; ``reads`` are rows the body will read
        (``store.atomic(reads=...)``). ``before`` (with ``step``) is called with the ingestion
        planned before the transaction, outside it; the body gets that same object unless the
        write found it stale.
        """
        if step is not None:
            learners = [(step[0], step[1].index.catalog_id)]
        elif isinstance(events, BatchEvents):
            learners = [(events.user_id, c) for c in dict.fromkeys(events.batch.catalogs)]
        else:
            learners = list({(i.user_id, i.catalog_id) for i in events})
        with self.lock(app, learners):
            current: LearnerEntry | None = None
            entries: dict[tuple[str, str, str], LearnerEntry] | None = None
            ahead: Ingestion | None = None
            if step is not None:
                current = self.tracker.state(app, step[0], step[1], trust=True)
                learner = learners[0]
                latest = {learner: current.latest} if current.current else None
                plan = self._plan(app, events, revisions={learner: current.revision}, latest=latest)
                entries = self.tracker.advance(app, plan, catalogs, compute=learners)
                if plan.spans():  # (the write reads the learner's revision to check it)
                    reads = [records.revision_row(app, learner), *reads]
                ahead = Ingestion(app, plan, entries, current)
                if before is not None:
                    before(ahead)
            # (a store with writers in parallel runs this beside other learners' transactions)
            with self.store.atomic(learners={(app, user) for user, _ in learners}, reads=reads):
                if step is None:
                    plan = self._plan(app, events)
                    self.tracker.write(app, plan)
                else:
                    try:
                        self.tracker.write(app, plan, check=True)
                    except StaleError:  # another process wrote this learner meanwhile: again, inside
                        current = self.tracker.state(app, step[0], step[1])
                        plan = self._plan(app, events)
                        self.tracker.write(app, plan)
                        entries = self.tracker.advance(app, plan, catalogs, compute=learners)
                        ahead = None
                ingestion = ahead or Ingestion(app, plan, {} if entries is None else entries, current)
                yield ingestion
            # after the commit: the cached states of these learners get the new events (a bulk import
            # of a learner is applied now when that needs no read of the store)
            if entries is None:
                entries = self.tracker.advance(app, plan, catalogs, eager=EAGER_EVENTS)
            self.tracker.install(entries)

    def _plan(
        self,
        app: str,
        events: Sequence[Interaction] | BatchEvents,
        *,
        revisions: Mapping[tuple[str, str], int] | None = None,
        latest: Mapping[tuple[str, str], float] | None = None,
    ) -> Plan | BatchPlan:
        if isinstance(events, BatchEvents):
            return self.tracker.plan_batch(app, events.user_id, events.batch, events.topics)
        return self.tracker.plan(app, events, revisions=revisions, latest=latest)

    def predictions(
        self,
        app: str,
        user_id: str,
        model: CatalogModel,
        entry: LearnerEntry,
        *,
        keep: bool = True,
        at: float | None = None,
    ) -> Predictions:
        """P(correct) of every item for ``entry`` at ``at`` (epoch seconds; None: the clock's now),
        carried over from the learner's latest predictions where the beliefs did not change; with
        ``keep``, remembered for the learner's next step (status reads use what a session left but
        keep nothing). With a forgetting term stored for the catalog, each item's prediction carries
        its topic's recall at ``at`` (:meth:`recalled`, as :meth:`predict` does); what is remembered
        is the prediction before the term, which does not depend on the time."""
        # learners without events share the predictions of the empty state
        key = (app, user_id if entry.revision else "", model.index.catalog_id)
        previous = self._predictions.get(key)
        predictions = model.model.predictions(entry.state, previous)
        if keep and predictions is not previous:
            self._predictions.put(key, predictions)
        if model.forgetting is None:
            return predictions
        met = entry.state.memory_topics  # (a topic without a memory has no term)
        if met.size == 0:
            return predictions
        now = self.clock().timestamp() if at is None else at
        p, item_topic = predictions.p, model.index.item_topic
        return predictions.overlay(met, lambda where: self.recalled(model, entry, p[where], item_topic[where], now))

    def recalled(
        self, model: CatalogModel, entry: LearnerEntry, p: np.ndarray, topics: np.ndarray, at: float
    ) -> np.ndarray:
        """``p`` (items of the ``topics`` given) with the catalog's forgetting term at ``at`` (epoch
        seconds): β_t log R of each topic's memory then (:class:`~learnloop.tracing.retention.Forgetting`);
        ``p`` itself without a stored term. The one place the engine applies it: :meth:`predict`,
        the status figures and the policies' view all read it from here."""
        term = model.forgetting
        if term is None:
            return p
        with np.errstate(divide="ignore"):
            log_recall = np.log(model.model.recall(entry.state, at))
        return term.predict_by_topic(p, topics, term.odds_by_topic(log_recall))

    def status(self, model: CatalogModel, entry: LearnerEntry, mask: BoolArray, predictions: Predictions) -> UserStatus:
        """The v2 status over ``mask``: the one status computation, :meth:`LearnerModel.status`."""
        status = model.model.status(entry.state, mask, predictions=predictions)
        last = status.last_interaction_timestamp
        # (the figures are of the model's types already; validating them costs less than model_construct)
        return UserStatus(
            progress=status.progress,
            proficiency=status.proficiency,
            time_spent_ms=status.time_spent_ms,
            last_interaction_timestamp=None if last is None else format_timestamp(datetime.fromtimestamp(last, UTC)),
        )

    def view(
        self, model: CatalogModel, entry: LearnerEntry, predictions: Predictions, *, at: float | None = None
    ) -> LearnerView:
        """What the policies see of the learner at ``at`` (epoch seconds; None: the clock's now)."""
        state = entry.state
        failed = None
        if entry.last_attempt is not None and entry.last_attempt[1] < 0.5:
            failed = entry.last_attempt[0]
        now = self.clock().timestamp() if at is None else at
        learner_model = model.model
        retention = model.desired_retention
        return LearnerView(
            index=model.index,
            p_correct=predictions.p,
            discrimination=learner_model.items.a,
            last_failed=failed,
            state=state,
            predictions=predictions,
            recall_of=lambda: learner_model.recall(state, now),  # (made when a policy reads it)
            desired_retention=retention,
            due_at_of=lambda r: learner_model.due_at(state, r),
            now=now,
            prerequisite_gating=learner_model.prerequisite_gating,
        )

    def check_events_count(self, n: int) -> None:
        if n > self.limits.max_events_per_call:
            raise LimitExceededError("events per call", n, self.limits.max_events_per_call)

    # -- events outside sessions ------------------------------------------------------
    def upsert_events(
        self, user_id: str, events: PlainEvents, *, app: str = "default", strict_kinds: bool = False
    ) -> int:
        given = list(events)
        batch = EventBatch.read(given)
        if batch is None:
            return self._upsert_each(user_id, given, app, strict_kinds)
        self.check_events_count(len(batch))
        models: dict[str, CatalogModel] = {}

        def index_of(catalog_id: str) -> CatalogIndex | None:
            try:
                models[catalog_id] = self.content.catalog_model(catalog_id, app=app)
            except NotFoundError:
                return None
            return models[catalog_id].index

        topics = batch.locate(index_of, strict_kinds=strict_kinds)
        if topics is None:  # the per-event path says what is wrong
            return self._upsert_each(user_id, given, app, strict_kinds)
        with self.ingest(app, BatchEvents(user_id, batch, topics), models.__getitem__) as ingestion:
            pass
        return ingestion.plan.new

    def _upsert_each(self, user_id: str, events: list[Any], app: str, strict_kinds: bool = False) -> int:
        """:meth:`upsert_events` event by event (the reference for what is accepted, and its errors)."""
        parsed = plain_events(events)
        self.check_events_count(len(parsed))
        problems: list[str] = []
        interactions: list[Interaction] = []
        models: dict[str, CatalogModel] = {}
        for i, event in enumerate(parsed):
            where = f"events[{i}]"
            model = models.get(event.catalog_id)
            if model is None:
                try:
                    model = models[event.catalog_id] = self.content.catalog_model(event.catalog_id, app=app)
                except NotFoundError:
                    problems.append(f"{where}: unknown catalog '{event.catalog_id}'")
                    continue
            index = model.index
            position = index.position(event.item_id, event.topic_id)
            if position is None:
                if event.topic_id is not None and event.topic_id in index.topic_index:
                    problems.append(f"{where}: item '{event.item_id}' is not in topic '{event.topic_id}'")
                elif event.topic_id is not None:
                    problems.append(f"{where}: unknown topic '{event.topic_id}' in catalog '{event.catalog_id}'")
                else:
                    problems.append(f"{where}: item '{event.item_id}' is not in catalog '{event.catalog_id}'")
                continue
            topic_id = index.topic_ids[index.item_topic[position]]
            misfit = kind_problem(event.type, index, position, event.item_id) if strict_kinds else None
            if misfit is not None:
                problems.append(f"{where}: {misfit}")
                continue
            if event.type == "attempt" and index.scorable[position] and event.score is None:
                problems.append(f"{where}: attempt on scorable item '{event.item_id}' needs a score")
                continue
            interactions.append(
                Interaction.from_event(
                    event, user_id=user_id, catalog_id=event.catalog_id, item_id=event.item_id, topic_id=topic_id
                )
            )
        if problems:
            raise ValidationError(problems)
        with self.ingest(app, interactions, models.__getitem__) as ingestion:
            pass
        return ingestion.plan.new

    # -- status ------------------------------------------------------------------------
    def user_status(
        self,
        user_id: str,
        catalog_id: str,
        filters: Sequence[Filter | Mapping[str, Any] | None],
        *,
        app: str = "default",
    ) -> list[UserStatus]:
        model = self.content.catalog_model(catalog_id, app=app)
        parsed = [None if f is None else parse(Filter, f, where=f"filter_list[{k}]") for k, f in enumerate(filters)]
        masks = [self.content.mask(app, model, f) for f in parsed]
        entry = self.state(app, user_id, model)
        predictions = self.predictions(app, user_id, model, entry, keep=False)
        return [self.status(model, entry, mask, predictions) for mask in masks]

    def state(self, app: str, user_id: str, model: CatalogModel) -> LearnerEntry:
        with self.lock(app, [(user_id, model.index.catalog_id)]):
            return self.tracker.state(app, user_id, model)

    def status_v1(
        self, user_id: str, catalog_id: str, masks: Sequence[BoolArray], *, app: str = "default"
    ) -> list[Status]:
        model = self.content.catalog_model(catalog_id, app=app)
        n = model.index.n_items
        for mask in masks:
            if np.shape(mask) != (n,):
                raise ValidationError(f"mask must have {n} entries, got {np.shape(mask)}")
        entry = self.state(app, user_id, model)
        predictions = self.predictions(app, user_id, model, entry, keep=False)
        return [model.model.status(entry.state, mask, predictions=predictions) for mask in masks]

    def known_events(
        self, keys: Iterable[tuple[str, str, str, str]], *, app: str = "default"
    ) -> set[tuple[str, str, str, str]]:
        canonical = [(u, c, i, format_timestamp(parse_timestamp(t))) for u, c, i, t in keys]
        return {tuple(k) for k in records.event_docs(self.store, app, canonical)}  # type: ignore[misc]

    def ability(
        self, user_id: str, catalog_id: str, topic_id: str | None = None, *, app: str = "default"
    ) -> tuple[float, float]:
        model = self.content.catalog_model(catalog_id, app=app)
        state = self.state(app, user_id, model).state
        if topic_id is None:
            return model.model.overall(state)
        topic = model.index.topic_index.get(topic_id)
        if topic is None:
            raise NotFoundError("topic", topic_id)
        mean, sd = model.model.topic_beliefs(state)
        return float(mean[topic]), float(sd[topic])

    def predict(
        self,
        user_id: str,
        catalog_id: str,
        item_ids: Sequence[str],
        *,
        topic_id: str | None = None,
        app: str = "default",
    ) -> dict[str, float]:
        if isinstance(item_ids, str):
            raise ValidationError("item_ids must be a list of item ids, not one string")
        model = self.content.catalog_model(catalog_id, app=app)
        index = model.index
        if topic_id is not None and topic_id not in index.topic_index:
            raise NotFoundError("topic", topic_id)
        wanted = list(dict.fromkeys(item_ids))
        positions = [index.position(i, topic_id) for i in wanted]
        missing = [i for i, p in zip(wanted, positions, strict=True) if p is None]
        if missing:
            where = f"topic '{topic_id}'" if topic_id is not None else f"catalog '{catalog_id}'"
            raise ValidationError([f"item '{i}' is not in {where}" for i in missing])
        unscorable = [i for i, p in zip(wanted, positions, strict=True) if not index.scorable[p]]
        if unscorable:
            raise ValidationError([f"item '{i}' is not scorable: it has no P(correct)" for i in unscorable])
        entry = self.state(app, user_id, model)
        p = model.model.predict(entry.state, np.asarray(positions, dtype=np.intp))
        model_now, echo, _ = self.content.terms_for(catalog_id, app=app)
        topics = index.item_topic[np.asarray(positions, dtype=np.intp)]
        if echo is not None and model_now is model:  # from the learner's last answer, if the latest event
            last = (-1, 0.0) if entry.last_attempt is None else entry.last_attempt
            prev = int(index.item_topic[last[0]]) if last[0] >= 0 else -1
            p = echo.predict(p, topics, prev, last[1])
        p = self.recalled(model, entry, p, topics, self.clock().timestamp())  # beta log R now (Engine.fit)
        return dict(zip(wanted, p.tolist(), strict=True))

    def due(
        self, user_id: str, catalog_id: str, *, at: datetime | str | None = None, app: str = "default"
    ) -> list[DueItem]:
        """The items the learner has met in review order at ``at`` (see :mod:`learnloop.recommend.due`)."""
        moment = None if at is None else parse_timestamp(at) if isinstance(at, str) else at
        if moment is not None and moment.tzinfo is None:
            raise ValidationError(f"at must be timezone-aware, got {moment.isoformat()}")
        model = self.content.catalog_model(catalog_id, app=app)
        entry = self.state(app, user_id, model)
        when = None if moment is None else moment.timestamp()
        predictions = self.predictions(app, user_id, model, entry, keep=False, at=when)
        view = self.view(model, entry, predictions, at=when)
        everything = np.ones(model.index.n_items, dtype=bool)
        return due_items(view, due_order(view, everything))

    def learner_view(self, user_id: str, catalog_id: str, *, app: str = "default") -> LearnerView:
        model = self.content.catalog_model(catalog_id, app=app)
        entry = self.state(app, user_id, model)
        return self.view(model, entry, self.predictions(app, user_id, model, entry, keep=False))
