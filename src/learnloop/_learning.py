"""The engine's learning side: events, learner status and adaptive sessions.

:class:`LearningMixin` is part of :class:`~learnloop.engine.Engine`; it is kept
apart from the content methods for readability.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import pydantic
from pydantic import TypeAdapter

from learnloop._locks import shared
from learnloop._tracking import DEFAULT_CACHE_BYTES, CatalogModel, StaleError, Tracker, _Cached
from learnloop._types import BoolArray
from learnloop._validation import describe_validation_error, parse
from learnloop.content import Filter, compile_filter
from learnloop.errors import ContextError, LimitExceededError, NotFoundError, ValidationError
from learnloop.events import (
    AttemptEvent,
    ContextAttemptEvent,
    ContextEvent,
    PlainEvent,
    ContextSkipEvent,
    ContextViewTheoryEvent,
    Interaction,
    SkipEvent,
    ViewTheoryEvent,
    format_timestamp,
    parse_timestamp,
)
from learnloop.recommend.step import session_step
from learnloop.recommend import (
    AdaptiveStep,
    ContextSigner,
    LearnerView,
    Policy,
    Reason,
    Recommendation,
    SessionSpec,
    SessionState,
    Suggestion,
    UserStatus,
    policy_for,
)
from learnloop.tracing import Status
from learnloop.tracing import calibrate as calibrate_items
from learnloop.tracing import difficulty_to_b

if TYPE_CHECKING:
    from learnloop.engine import Engine

__all__ = ["LearningMixin"]

PlainEvents = Iterable[AttemptEvent | SkipEvent | ViewTheoryEvent | Mapping[str, Any]]
ContextEvents = Iterable[ContextAttemptEvent | ContextSkipEvent | ContextViewTheoryEvent | Mapping[str, Any]]


#: Learner model settings of the engine (see :class:`~learnloop.tracing.LearnerModel`):
#: learners improve with practice, so each answer outside an assessment moves the
#: topic's ability by ``practice_gain`` logits, and the belief widens by ``drift``
#: before each update. Answers in an assess session count as evidence only.
DEFAULT_LEARNER_OPTIONS: Mapping[str, Any] = {"practice_gain": 0.1, "drift": 0.02}


def _filter_key(flt: Filter | None) -> str:
    return "" if flt is None else json.dumps(flt.model_dump(exclude_none=True), sort_keys=True)


class LearningMixin:
    """Events, status and sessions (see :class:`~learnloop.engine.Engine`)."""

    def _init_learning(
        self: Engine,
        secret: bytes | None,
        policies: Mapping[str, Policy] | None,
        learner_options: Mapping[str, Any] | None,
        learner_cache_bytes: int | None = None,
    ) -> None:
        self.learner_options: dict[str, Any] = dict(DEFAULT_LEARNER_OPTIONS)
        if learner_options:
            self.learner_options.update(learner_options)
        self._tracker = Tracker(
            self.store, cache_bytes=DEFAULT_CACHE_BYTES if learner_cache_bytes is None else learner_cache_bytes
        )
        self._models: dict[tuple[str, str], tuple[Any, int, CatalogModel]] = {}
        self._masks: OrderedDict[tuple[str, str, str, str], BoolArray] = OrderedDict()
        self._specs: OrderedDict[tuple[str, str], SessionSpec] = OrderedDict()
        self._leaf_lock = threading.Lock()  # guards _masks and _specs; never held while calling out
        self._signer = ContextSigner(secret if secret is not None else self._stored_secret())
        self.policies: dict[str, Policy] = {m: policy_for(m) for m in ("learn", "review", "assess")}
        if policies:
            self.policies.update(policies)

    # -- plumbing -------------------------------------------------------------------
    def _stored_secret(self: Engine) -> bytes:
        """The store's context-signing secret, created once for every process on the store.

        Read, created when absent and read back in one transaction (an
        immediate one on SQLite), so two processes opening a fresh store at
        once end up with the same secret.
        """
        with self.store.atomic():
            doc = self.store.get("meta", "", ("context_secret",))
            if doc is None:
                self.store.put_many("meta", "", [(("context_secret",), {"hex": secrets.token_hex(32)})])
                doc = self.store.get("meta", "", ("context_secret",))
        return bytes.fromhex(doc["hex"])  # type: ignore[index]

    def _learner_lock(self: Engine, app: str, pairs: Iterable[tuple[str, str]]) -> Any:
        """The locks of the learners ``(user_id, catalog_id)`` of ``app`` (see :mod:`learnloop._locks`)."""
        return self._learner_locks.hold((app, user, catalog) for user, catalog in pairs)

    def learner_cache_nbytes(self: Engine) -> int:
        """Bytes held by the in-process cache of learner states (bounded by ``learner_cache_bytes``)."""
        return self._tracker.nbytes

    @shared
    def catalog_model(self: Engine, catalog_id: str, *, app: str = "default") -> CatalogModel:
        """The compiled catalog with its learner model (cached until content changes)."""
        version = self._content_version(app)
        index = self.catalog_index(catalog_id, app=app)
        with self._cache_lock:
            cached = self._models.get((app, catalog_id))
        if cached is not None and cached[0] is index and cached[1] == version:
            return cached[2]
        doc = self.store.get("meta", app, (f"calibration:{catalog_id}",))
        calibration = None if doc is None else doc["items"]  # type: ignore[index]
        model = CatalogModel.build(index, calibration=calibration, **self.learner_options)
        with self._cache_lock:
            self._models[(app, catalog_id)] = (index, version, model)
        return model

    def _mask(self: Engine, app: str, model: CatalogModel, flt: Filter | None) -> BoolArray:
        key = (app, model.index.catalog_id, model.fingerprint, _filter_key(flt))
        with self._leaf_lock:
            mask = self._masks.get(key)
            if mask is not None:
                self._masks.move_to_end(key)
                return mask
        mask = compile_filter(model.index, flt)
        mask.setflags(write=False)
        with self._leaf_lock:
            self._masks[key] = mask
            while len(self._masks) > 1024:
                self._masks.popitem(last=False)
        return mask

    def _status(self, model: CatalogModel, entry: _Cached, mask: BoolArray, p: np.ndarray) -> UserStatus:
        """The v2 status over ``mask`` (the figures of :meth:`LearnerModel.status`, by dot products)."""
        state = entry.state
        n = np.count_nonzero(mask)
        scorable = mask & model.index.scorable
        n_scorable = np.count_nonzero(scorable)
        proficiency = float(np.dot(p, scorable)) / n_scorable if n_scorable else None
        progress = float(np.dot(model.model.credit(state), mask)) / n if n else 0.0
        time_spent = int(np.dot(state.time_spent_ms, mask))
        stamps = state.last_timestamp
        last = float(np.max(stamps, where=mask & ~np.isnan(stamps), initial=-np.inf))
        return UserStatus(
            progress=progress,
            proficiency=proficiency,
            time_spent_ms=time_spent,
            last_interaction_timestamp=(
                None if last == -np.inf else format_timestamp(datetime.fromtimestamp(last, UTC))
            ),
        )

    def _view(self: Engine, model: CatalogModel, entry: _Cached, p: np.ndarray) -> LearnerView:
        state = entry.state
        failed = None
        if entry.last_attempt is not None and entry.last_attempt[1] < 0.5:
            failed = entry.last_attempt[0]
        return LearnerView(
            index=model.index,
            p_correct=p,
            discrimination=model.model.items.a,
            attempts=state.attempts.astype(np.int64),
            last_score=state.last_score,
            viewed=state.max_fraction,
            recall=model.model.recall(state, self.clock().timestamp()),
            last_seen=state.last_timestamp,
            last_failed=failed,
        )

    def _check_events_count(self: Engine, n: int) -> None:
        if n > self.limits.max_events_per_call:
            raise LimitExceededError("events per call", n, self.limits.max_events_per_call)

    # -- events outside sessions ------------------------------------------------------
    @shared
    def upsert_events(self: Engine, user_id: str, events: PlainEvents, *, app: str = "default") -> int:
        """Store events outside a session (all or none); returns how many were new."""
        parsed = _plain(events)
        self._check_events_count(len(parsed))
        problems: list[str] = []
        interactions: list[Interaction] = []
        models: dict[str, CatalogModel] = {}
        for i, event in enumerate(parsed):
            where = f"events[{i}]"
            model = models.get(event.catalog_id)
            if model is None:
                try:
                    model = models[event.catalog_id] = self.catalog_model(event.catalog_id, app=app)
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
        with self._learner_lock(app, {(i.user_id, i.catalog_id) for i in interactions}):
            with self.store.atomic():
                plan = self._tracker.plan(app, interactions)
                self._tracker.write(app, plan)
            # after the commit: the cached states of these learners get the new events
            self._tracker.install(self._tracker.advance(app, plan, models.__getitem__))
        return plan.new

    # -- status ------------------------------------------------------------------------
    @shared
    def user_status(
        self: Engine,
        user_id: str,
        catalog_id: str,
        filters: Sequence[Filter | Mapping[str, Any] | None],
        *,
        app: str = "default",
    ) -> list[UserStatus]:
        """The v2 status of a learner over each filter, in the order given."""
        model = self.catalog_model(catalog_id, app=app)
        parsed = [None if f is None else parse(Filter, f, where=f"filter_list[{k}]") for k, f in enumerate(filters)]
        masks = [self._mask(app, model, f) for f in parsed]
        entry = self._state(app, user_id, model)
        p = model.model.predict(entry.state)
        return [self._status(model, entry, mask, p) for mask in masks]

    def _state(self: Engine, app: str, user_id: str, model: CatalogModel) -> _Cached:
        with self._learner_lock(app, [(user_id, model.index.catalog_id)]):
            return self._tracker.state(app, user_id, model)

    @shared
    def status_v1(
        self: Engine, user_id: str, catalog_id: str, masks: Sequence[BoolArray], *, app: str = "default"
    ) -> list[Status]:
        """The learner's status over each boolean mask of the catalog's item order.

        Every figure of :class:`~learnloop.tracing.Status`, for the v1 dialect
        (``skill_level``, ``display_skill``, ``progress``). ``display_skill`` is
        not smoothed with an earlier value: it is ``skill_level * sqrt(progress)``,
        so that reading a status never changes it.
        """
        model = self.catalog_model(catalog_id, app=app)
        n = model.index.n_items
        for mask in masks:
            if np.shape(mask) != (n,):
                raise ValidationError(f"mask must have {n} entries, got {np.shape(mask)}")
        entry = self._state(app, user_id, model)
        p = model.model.predict(entry.state)
        return [model.model.status(entry.state, mask, p_correct=p) for mask in masks]

    @shared
    def known_events(
        self: Engine, keys: Iterable[tuple[str, str, str, str]], *, app: str = "default"
    ) -> set[tuple[str, str, str, str]]:
        """Which ``(user_id, catalog_id, item_id, timestamp)`` event keys are stored.

        Timestamps may be any ISO 8601 form; the keys returned carry the
        canonical one (:func:`~learnloop.events.format_timestamp`).
        """
        canonical = [(u, c, i, format_timestamp(parse_timestamp(t))) for u, c, i, t in keys]
        return {tuple(k) for k in self.store.get_many("events", app, canonical)}  # type: ignore[misc]

    @shared
    def ability(
        self: Engine, user_id: str, catalog_id: str, topic_id: str | None = None, *, app: str = "default"
    ) -> tuple[float, float]:
        """The posterior mean and standard deviation of a learner's ability (logits) on a
        topic, or overall when ``topic_id`` is None."""
        model = self.catalog_model(catalog_id, app=app)
        state = self._state(app, user_id, model).state
        if topic_id is None:
            return model.model.overall(state)
        topic = model.index.topic_index.get(topic_id)
        if topic is None:
            raise NotFoundError("topic", topic_id)
        mean, sd = model.model.topic_beliefs(state)
        return float(mean[topic]), float(sd[topic])

    @shared
    def learner_view(self: Engine, user_id: str, catalog_id: str, *, app: str = "default") -> LearnerView:
        """What the policies see of a learner now (for notebooks and tests)."""
        model = self.catalog_model(catalog_id, app=app)
        entry = self._state(app, user_id, model)
        return self._view(model, entry, model.model.predict(entry.state))

    @shared
    def next_items(
        self: Engine,
        user_id: str,
        catalog_id: str,
        *,
        mode: str = "learn",
        filter: Filter | Mapping[str, Any] | None = None,
        mask: BoolArray | None = None,
        limit: int = 1,
        app: str = "default",
    ) -> list[Suggestion]:
        """A sequence of ``limit`` items for a learner outside a session.

        No item repeats while the filter has items not yet in the sequence;
        after that the sequence starts over. ``mask`` (a boolean array over the
        catalog's item order) may replace ``filter``.
        """
        if limit < 0:
            raise ValidationError(f"limit must be non-negative, got {limit}")
        model = self.catalog_model(catalog_id, app=app)
        index = model.index
        if mask is None:
            parsed = None if filter is None else parse(Filter, filter, where="filter")
            mask = self._mask(app, model, parsed)
        elif mask.shape != (index.n_items,):
            raise ValidationError(f"mask must have {index.n_items} entries, got {mask.shape}")
        policy = self.policies[mode] if mode in self.policies else policy_for(mode)
        entry = self._state(app, user_id, model)
        view = self._view(model, entry, model.model.predict(entry.state))
        seed = self.seed if self.seed is not None else 0
        user_key = int.from_bytes(hashlib.sha256(f"{app}\x1f{user_id}\x1f{catalog_id}".encode()).digest()[:8], "big")
        rng = np.random.default_rng((seed, user_key, entry.state.n_events))
        # the pure session step, over a session that lives for this call only
        session = SessionState(
            session_id="",
            spec=SessionSpec.model_construct(user_id=user_id, catalog_id=catalog_id, filter=Filter(), constraints=None),
            started_at=datetime.fromtimestamp(0, UTC),
        )
        given = np.zeros(index.n_items, dtype=bool)
        administered = view.attempts > 0
        out: list[Suggestion] = []
        while len(out) < limit and mask.any():
            if not (mask & ~given).any():
                given = np.zeros(index.n_items, dtype=bool)  # every item given: start over
            pick, session = session_step(session, view, mask, (), policy, rng, exclude=given, administered=administered)
            if pick is None:
                break
            given[pick.position] = True
            administered = administered.copy()
            administered[pick.position] = True
            out.append(
                Suggestion(
                    item_id=index.item_ids[pick.position],
                    topic_id=index.topic_ids[index.item_topic[pick.position]],
                    reason=Reason(keyword=pick.keyword, description=pick.description),
                )
            )
        return out

    # -- calibration ------------------------------------------------------------------------
    @shared
    def calibrate(
        self: Engine,
        catalog_id: str,
        *,
        model: str = "rasch",
        exclude_users: Iterable[str] = (),
        min_responses: int = 1,
        progress: bool = False,
        app: str = "default",
    ) -> dict[str, dict[str, float]]:
        """Calibrate item difficulty (and discrimination, 2PL) from the event log.

        Every scored attempt on the catalog's scorable items by users not in
        ``exclude_users`` enters the fit; each item's prior is centred on its
        cold-start difficulty, so sparse items stay near it. The result is
        stored and used by the learner model from then on (learner states are
        rebuilt). Returns ``{item_id: {"b": ..., "a": ..., "n": responses}}``.
        """
        cm = self.catalog_model(catalog_id, app=app)
        index = cm.index
        excluded = set(exclude_users)
        item_codes: dict[str, int] = {}
        b0: list[float] = []
        base_b = difficulty_to_b(index.difficulty)
        for position, item_id in enumerate(index.item_ids):
            if index.scorable[position] and item_id not in item_codes:
                item_codes[item_id] = len(item_codes)
                b0.append(float(base_b[position]))
        person_codes: dict[str, int] = {}
        persons: list[int] = []
        items: list[int] = []
        scores: list[float] = []
        for key, doc in self.store.scan("events", app):
            if key[1] != catalog_id or key[0] in excluded:
                continue
            code = item_codes.get(key[2])
            if code is None or doc.get("kind") != "attempt" or doc.get("score") is None:  # type: ignore[union-attr]
                continue
            persons.append(person_codes.setdefault(key[0], len(person_codes)))
            items.append(code)
            scores.append(float(doc["score"]))  # type: ignore[index]
        if not scores:
            raise ValidationError(f"catalog '{catalog_id}' has no scored attempts to calibrate from")
        fit = calibrate_items(
            persons,
            items,
            scores,
            n_items=len(item_codes),
            n_persons=len(person_codes),
            model=model,  # type: ignore[arg-type]
            b_prior_mean=np.asarray(b0),
            progress=progress,
        )
        counts = np.bincount(np.asarray(items), minlength=len(item_codes))
        result = {
            item_id: {"b": float(fit.b[code]), "a": float(fit.a[code]), "n": int(counts[code])}
            for item_id, code in item_codes.items()
            if counts[code] >= min_responses
        }
        with self.store.atomic():
            self.store.put_many("meta", app, [((f"calibration:{catalog_id}",), {"items": result, "model": model})])
            self._bump_content_version(app)
        return result

    # -- sessions -------------------------------------------------------------------------
    @shared
    def create_session(self: Engine, spec: SessionSpec | Mapping[str, Any], *, app: str = "default") -> str:
        """Create an adaptive session; returns its opaque, signed ``session_context``."""
        parsed = parse(SessionSpec, spec)
        constraints = parsed.constraints or ()
        if len(constraints) > self.limits.max_constraints:
            raise ValidationError(
                f"a session takes at most {self.limits.max_constraints} constraints, got {len(constraints)}"
            )
        model = self.catalog_model(parsed.catalog_id, app=app)
        mask = self._mask(app, model, parsed.filter)
        for constraint in constraints:
            self._mask(app, model, constraint.filter)
        # distinct items (an item listed in several topics counts once)
        matched = int(np.unique(model.index.item_code[mask]).size) if mask.any() else 0
        if matched > self.limits.max_session_filter_items:
            raise ValidationError(
                f"the session filter matches {matched} items; the limit 'items matched by a session "
                f"filter' is {self.limits.max_session_filter_items}"
            )
        # identifiers come from the operating system's randomness, never from the modelling seed
        session_id = secrets.token_hex(12)
        state = SessionState(
            session_id=session_id,
            spec=parsed,
            started_at=self.clock(),
            constraint_counts=(0,) * len(constraints),
        )
        self.store.put_many("sessions", app, [((session_id,), state.to_doc())])
        return self._signer.sign(app, "s", {"id": session_id})

    @shared
    def session(self: Engine, session_context: str, *, app: str = "default") -> SessionState:
        """The stored state of the session a context names."""
        payload = self._signer.verify(session_context, app=app, kind="s")
        session_id = payload.get("id")
        if not isinstance(session_id, str) or not session_id:
            raise ContextError("malformed context")
        return self._session_by_id(app, session_id)

    def _session_by_id(self: Engine, app: str, session_id: str) -> SessionState:
        doc = self.store.get("sessions", app, (session_id,))
        if doc is None:
            raise ContextError("stale session context: the session no longer exists")
        with self._leaf_lock:
            spec = self._specs.get((app, session_id))
        state = SessionState.from_doc(dict(doc), spec=spec)  # type: ignore[arg-type]
        if spec is None:
            with self._leaf_lock:
                self._specs[(app, session_id)] = state.spec
                while len(self._specs) > 4096:
                    self._specs.popitem(last=False)
        return state

    def _session_rng(self: Engine, app: str, session: SessionState, n_events: int) -> np.random.Generator:
        """The session's random stream: with a seed, a function of the seed and the
        learner's position (user, catalog, events so far, recommendations so far)."""
        if self.seed is None:
            return np.random.default_rng((int(session.session_id, 16), session.recommendation_count))
        spec = session.spec
        user_key = hashlib.sha256(f"{app}\x1f{spec.user_id}\x1f{spec.catalog_id}".encode()).digest()[:8]
        return np.random.default_rng((self.seed, int.from_bytes(user_key, "big"), n_events, session.recommendation_count))

    @shared
    def adaptive_step(
        self: Engine, session_context: str, events: ContextEvents = (), *, app: str = "default"
    ) -> AdaptiveStep:
        """Ingest the events, update the learner, recommend the next item, report the status.

        When no eligible item is left (the filter matches nothing, or the
        constraints exclude everything) the recommendation is ``None``.
        """
        parsed = _contextual(events)
        self._check_events_count(len(parsed))
        session = self.session(session_context, app=app)
        spec = session.spec
        model = self.catalog_model(spec.catalog_id, app=app)
        index = model.index
        interactions: list[Interaction] = []
        problems: list[str] = []
        for i, event in enumerate(parsed):
            where = f"events[{i}]"
            try:
                rec = self._signer.verify(event.recommendation_context, app=app, kind="r")
            except ContextError as exc:
                problems.append(f"{where}.recommendation_context: {exc}")
                continue
            if not all(isinstance(rec.get(k), str) for k in ("s", "i", "t")):
                problems.append(f"{where}.recommendation_context: malformed context")
                continue
            if rec["s"] != session.session_id:
                problems.append(f"{where}.recommendation_context: it belongs to another session")
                continue
            position = index.position(rec["i"], rec["t"])
            if position is None:
                problems.append(
                    f"{where}.recommendation_context: stale, item '{rec['i']}' is no longer in topic '{rec['t']}'"
                )
                continue
            if event.type == "attempt" and index.scorable[position] and event.score is None:
                problems.append(f"{where}: attempt on scorable item '{rec['i']}' needs a score")
                continue
            interactions.append(
                Interaction.from_event(
                    event,
                    user_id=spec.user_id,
                    catalog_id=spec.catalog_id,
                    item_id=rec["i"],
                    topic_id=rec["t"],
                    session_id=session.session_id,
                    practice=spec.mode.type != "assess",
                )
            )
        if problems:
            if all("recommendation_context" in p for p in problems):
                raise ContextError("; ".join(problems))
            raise ValidationError(problems)
        learner = (spec.user_id, spec.catalog_id)
        with self._learner_lock(app, [learner]):
            # the learner's state is brought up to date (and the new events applied,
            # replaying from a checkpoint when they are late) before the transaction,
            # so that the store is held only for the writes and the recommendation
            self._tracker.state(app, spec.user_id, model)
            plan = self._tracker.plan(app, interactions)
            entries = self._tracker.advance(app, plan, lambda c: model, compute=[learner])
            with self.store.atomic():
                try:
                    self._tracker.write(app, plan, check=True)
                except StaleError:  # another process wrote this learner meanwhile: redo inside
                    plan = self._tracker.plan(app, interactions)
                    self._tracker.write(app, plan)
                    entries = self._tracker.advance(app, plan, lambda c: model, compute=[learner])
                entry = entries.get((app, *learner)) or self._tracker.state(app, spec.user_id, model)
                session = self._session_by_id(app, session.session_id)  # as stored now
                latest = max((i.timestamp for i in plan.changed), default=None)
                session = session.with_interactions(plan.new, latest)
                if spec.mode.type == "assess":
                    tested = [i.item_id for i in plan.changed if i.kind == "attempt"]
                    session = _with_assessed(session, tested)
                step, after = self._recommend(app, session, model, entry)
                self.store.put_many("sessions", app, [((session.session_id,), after.to_doc())])
            self._tracker.install(entries)
        return step

    def _recommend(
        self: Engine, app: str, session: SessionState, model: CatalogModel, entry: _Cached
    ) -> tuple[AdaptiveStep, SessionState]:
        spec = session.spec
        p = model.model.predict(entry.state)
        mask = self._mask(app, model, spec.filter)
        constraint_masks = [self._mask(app, model, c.filter) for c in spec.constraints or ()]
        view = self._view(model, entry, p)
        rng = self._session_rng(app, session, entry.state.n_events)
        pick, session = session_step(session, view, mask, constraint_masks, self.policies[spec.mode.type], rng)
        recommendation = None
        if pick is not None:
            item_id, topic_id = session.last_item, session.last_topic
            assert item_id is not None and topic_id is not None
            context = self._signer.sign(
                app, "r", {"s": session.session_id, "i": item_id, "t": topic_id, "n": session.recommendation_count - 1}
            )
            recommendation = Recommendation(
                item_id=item_id,
                topic_id=topic_id,
                recommendation_context=context,
                reason=Reason(keyword=pick.keyword, description=pick.description),
            )
        user_status = self._status(model, entry, mask, p)
        session_status = session.status(self.clock(), user_status.proficiency)
        return AdaptiveStep(recommendation=recommendation, user_status=user_status, session_status=session_status), session


def _with_assessed(session: SessionState, item_ids: Sequence[str]) -> SessionState:
    if not item_ids:
        return session
    merged = tuple(dict.fromkeys((*session.assessed, *item_ids)))
    return replace(session, assessed=merged)


_PLAIN_EVENTS: TypeAdapter[list[Any]] = TypeAdapter(list[PlainEvent])
_CONTEXT_EVENTS: TypeAdapter[list[Any]] = TypeAdapter(list[ContextEvent])


def _validated(adapter: TypeAdapter[list[Any]], kinds: tuple[type, ...], events: Iterable[Any]) -> list[Any]:
    """Events as models: models pass through, the rest is validated in one go."""
    given = list(events)
    if all(isinstance(e, kinds) for e in given):
        return given
    try:
        return adapter.validate_python([e.model_dump() if isinstance(e, kinds) else e for e in given])
    except pydantic.ValidationError as exc:
        raise ValidationError(
            [p.replace("'", "'events", 1) for p in describe_validation_error(exc)]
        ) from None


def _plain(events: Iterable[Any]) -> list[AttemptEvent | SkipEvent | ViewTheoryEvent]:
    return _validated(_PLAIN_EVENTS, (AttemptEvent, SkipEvent, ViewTheoryEvent), events)


def _contextual(events: Iterable[Any]) -> list[ContextAttemptEvent | ContextSkipEvent | ContextViewTheoryEvent]:
    return _validated(_CONTEXT_EVENTS, (ContextAttemptEvent, ContextSkipEvent, ContextViewTheoryEvent), events)
