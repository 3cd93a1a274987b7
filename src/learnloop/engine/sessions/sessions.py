"""Sessions: creation, signed contexts, the adaptive step and sequences outside sessions.

Part of the :class:`~learnloop.engine.Engine`. The choice itself is the pure
:func:`~learnloop.recommend.step.session_step`; this class reads and writes
around it: the session document, the learner's events and state, the signed
recommendation context.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from learnloop._lru import LRUCache
from learnloop._types import BoolArray, Clock
from learnloop._validation import parse
from learnloop.content import CatalogIndex, Filter
from learnloop.engine import records
from learnloop.engine.learners.batch import ContextEvents, kind_problem
from learnloop.engine.learners.learners import Ingestion, Learners
from learnloop.engine.learners.tracker import LearnerEntry
from learnloop.engine.repository.catalog_model import CatalogModel
from learnloop.engine.repository.repository import ContentRepository
from learnloop.engine.sessions.documents import joined_doc, split_doc, stored_blocks
from learnloop.engine.sessions.seeding import learner_key, seeded_rng
from learnloop.engine.sessions.step_events import StepEvent, step_events
from learnloop.errors import ContextError, NotFoundError, ValidationError
from learnloop.events import Interaction
from learnloop.limits import Limits
from learnloop.recommend import (
    AdaptiveStep,
    ContextSigner,
    Policy,
    Reason,
    Recommendation,
    SessionSpec,
    SessionState,
    Suggestion,
    policy_for,
)
from learnloop.recommend.due import due_items, due_order, nothing_due
from learnloop.recommend.step import eligible_positions, session_step
from learnloop.store import Store
from learnloop.store.base import Key, json_doc

__all__ = ["Sessions", "seeded_rng"]


#: a step computed: its answer, the session's document and block rows to write, the session after it
_Advanced = tuple[AdaptiveStep, dict[str, Any], list[tuple[Key, dict[str, Any]]], SessionState]


class _ContentMoved(Exception):
    """A step's trusted catalog model is older than the stored content (another process wrote it)."""


class Sessions:
    """Adaptive sessions over one store (the engine owns one)."""

    def __init__(
        self,
        store: Store,
        content: ContentRepository,
        learners: Learners,
        limits: Limits,
        clock: Clock,
        *,
        seed: int | None,
        secret: bytes | None,
        policies: dict[str, Policy],
    ) -> None:
        self.store = store
        self.content = content
        self.learners = learners
        self.limits = limits
        self.clock = clock
        self.seed = seed
        self.policies = policies
        self._specs: LRUCache[tuple[str, str], SessionSpec] = LRUCache(max_items=4096)
        # per session: the document this engine last wrote and the state it holds, used while the
        # stored document is equal to it (another engine's write, or a rollback, makes them differ)
        self._states: LRUCache[tuple[str, str], tuple[SessionState, Mapping[str, Any]]] = LRUCache(max_items=4096)
        # per assessment session: the positions administered so far, for (index, items assessed)
        self._administered: LRUCache[tuple[str, str], tuple[CatalogIndex, int, BoolArray]] = LRUCache(max_items=1024)
        # per assessment session: its assessed items with their set, for the next step's additions
        self._assessed_sets: LRUCache[tuple[str, str], tuple[tuple[str, ...], set[str]]] = LRUCache(max_items=1024)
        self._signer = ContextSigner(secret if secret is not None else records.context_secret(self.store))

    def next_items(
        self,
        user_id: str,
        catalog_id: str,
        *,
        mode: str = "learn",
        filter: Filter | Mapping[str, Any] | None = None,
        mask: BoolArray | None = None,
        limit: int = 1,
        app: str = "default",
    ) -> list[Suggestion]:
        if limit < 0:
            raise ValidationError(f"limit must be non-negative, got {limit}")
        model = self.content.catalog_model(catalog_id, app=app)
        index = model.index
        if mask is None:
            parsed = None if filter is None else parse(Filter, filter, where="filter")
            mask = self.content.mask(app, model, parsed)
        elif mask.shape != (index.n_items,):
            raise ValidationError(f"mask must have {index.n_items} entries, got {mask.shape}")
        policy = self.policies[mode] if mode in self.policies else policy_for(mode)
        entry = self.learners.state(app, user_id, model)
        view = self.learners.view(model, entry, self.learners.predictions(app, user_id, model, entry))
        seed = self.seed if self.seed is not None else 0
        user_key = learner_key(app, user_id, catalog_id)
        rng = seeded_rng(seed, user_key, entry.state.n_events)
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
                if policy.passes:  # (review: the items due, once each)
                    break
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

    # -- sessions -------------------------------------------------------------------------
    def create_session(self, spec: SessionSpec | Mapping[str, Any], *, app: str = "default") -> str:
        parsed = parse(SessionSpec, spec)
        constraints = parsed.constraints or ()
        if len(constraints) > self.limits.max_constraints:
            raise ValidationError(
                f"a session takes at most {self.limits.max_constraints} constraints, got {len(constraints)}"
            )
        model = self.content.catalog_model(parsed.catalog_id, app=app)
        mask = self.content.mask(app, model, parsed.filter)
        for constraint in constraints:
            self.content.mask(app, model, constraint.filter)
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
        doc = state.to_doc()
        with self.store.atomic(learners=[(app, parsed.user_id)]):  # the learner's data only
            records.put_session(self.store, app, parsed.user_id, session_id, doc, new=True)
        self._specs.put((app, session_id), parsed)
        self._states.put((app, session_id), (state.as_stored(), doc))
        return self._signer.sign(app, "s", {"id": session_id})

    def session(self, session_context: str, *, app: str = "default") -> SessionState:
        return self._session_by_id(app, *self._session_id(session_context, app))

    def _session_id(self, session_context: str, app: str) -> tuple[str, str]:
        """The user and the id of the session a context names (the context names the session only:
        its user comes with its spec, cached, or from the row naming it)."""
        payload = self._signer.verify(session_context, app=app, kind="s")
        session_id = payload.get("id")
        if not isinstance(session_id, str) or not session_id:
            raise ContextError("malformed context")
        spec = self._specs.get((app, session_id))
        user_id = spec.user_id if spec is not None else records.session_user(self.store, app, session_id)
        if user_id is None:  # (a context of this store's secret whose session is gone)
            raise NotFoundError("session", session_id)
        return user_id, session_id

    def _spec(self, app: str, user_id: str, session_id: str) -> SessionSpec:
        """A session's spec (it never changes): from the cache, else from the stored session."""
        spec = self._specs.get((app, session_id))
        return spec if spec is not None else self._session_by_id(app, user_id, session_id).spec

    def _session_by_id(self, app: str, user_id: str, session_id: str) -> SessionState:
        return self._stored_session(app, user_id, session_id)[0]

    def _stored_session(
        self, app: str, user_id: str, session_id: str
    ) -> tuple[SessionState, tuple[SessionState, Mapping[str, Any]] | None, int]:
        """The session as stored now, (when it is the one this engine last wrote) that state
        with its document, for :meth:`SessionState.to_doc` to reuse, and the number of
        blocks of assessed items stored for it (see :mod:`learnloop.engine.sessions.documents`)."""
        key = (app, session_id)
        doc = records.session(self.store, app, user_id, session_id)
        if doc is None:  # (a context of this store's secret whose session is gone): what it names is not found
            raise NotFoundError("session", session_id)
        written = self._states.get(key)
        if written is not None and written[1] == doc:
            return written[0], written, stored_blocks(written[1])
        spec = self._specs.get(key)
        stored = json_doc(doc)
        # (another engine stepped the session since this one wrote it: the items this one knew stay)
        known = written[0].assessed if written is not None else ()
        state = SessionState.from_doc(joined_doc(self.store, app, stored, known), spec=spec)
        if spec is None:
            self._specs.put(key, state.spec)
        return state, None, stored_blocks(stored)

    def _session_rng(self, app: str, session: SessionState, n_events: int) -> np.random.Generator:
        """The session's random stream: with a seed, a function of the seed and the
        learner's position (user, catalog, events so far, recommendations so far)."""
        if self.seed is None:
            return seeded_rng(int(session.session_id, 16), session.recommendation_count)
        spec = session.spec
        return seeded_rng(
            self.seed, learner_key(app, spec.user_id, spec.catalog_id), n_events, session.recommendation_count
        )

    def adaptive_step(
        self, session_context: str, events: ContextEvents = (), *, app: str = "default", strict_kinds: bool = False
    ) -> AdaptiveStep:
        parsed = step_events(events)
        self.learners.check_events_count(len(parsed))
        user_id, session_id = self._session_id(session_context, app)
        spec = self._spec(app, user_id, session_id)
        # the catalog's model compiled here is trusted, its content version checked inside the step's
        # transaction (read with its locks); one that moved meanwhile makes the step again on the new
        trusted = self.content.trusted_model(spec.catalog_id, app=app)
        if trusted is not None:
            try:
                return self._step(app, user_id, session_id, spec, parsed, strict_kinds, trusted)
            except _ContentMoved:
                pass
            except (ContextError, ValidationError):
                # (an event naming an item the trusted model does not know: refused only on the current content)
                if self.content.version(app) == trusted[1]:
                    raise
        return self._step(app, user_id, session_id, spec, parsed, strict_kinds, None)

    def _step(
        self,
        app: str,
        user_id: str,
        session_id: str,
        spec: SessionSpec,
        parsed: Sequence[StepEvent],
        strict_kinds: bool,
        trusted: tuple[CatalogModel, int] | None,
    ) -> AdaptiveStep:
        """:meth:`adaptive_step` on the catalog model ``trusted`` (with the content version it
        stands for: :class:`_ContentMoved` when the stored one differs), else the current one."""
        model = self.content.catalog_model(spec.catalog_id, app=app) if trusted is None else trusted[0]
        interactions = self._interactions(app, session_id, spec, parsed, model.index, strict_kinds=strict_kinds)
        # the learner's state is brought up to date (and the new events applied, replaying from a
        # checkpoint when they are late) before the transaction, and the step computed there on the
        # session as this engine last wrote it, so that the store is held only for the writes
        key = (app, session_id)
        early: list[tuple[Ingestion, Any, _Advanced]] = []

        def before(ingestion: Ingestion) -> None:
            written = self._states.get(key)
            if written is not None and spec.mode.type != "assess":
                advanced = self._advance(app, ingestion, written[0], written, stored_blocks(written[1]), model)
                early.append((ingestion, written, advanced))

        reads = [records.session_row(app, user_id, session_id)]
        if trusted is not None:
            reads.append(records.content_version_row(app))
        with self.learners.ingest(
            app, interactions, lambda c: model, step=(spec.user_id, model), reads=reads, before=before
        ) as ingestion:
            if trusted is not None and records.content_version(self.store, app) != trusted[1]:
                raise _ContentMoved  # (nothing written: the transaction is rolled back)
            session, written, blocks = self._stored_session(app, user_id, session_id)
            if early and early[0][0] is ingestion and early[0][1] is written:  # (nobody wrote either since)
                step, doc, block_rows, after = early[0][2]
            else:
                step, doc, block_rows, after = self._advance(app, ingestion, session, written, blocks, model)
            records.put_session(self.store, app, user_id, session_id, doc, block_rows)
        self._states.put(key, (after.as_stored(), doc))
        return step

    def _interactions(
        self,
        app: str,
        session_id: str,
        spec: SessionSpec,
        parsed: Sequence[StepEvent],
        index: CatalogIndex,
        *,
        strict_kinds: bool,
    ) -> list[Interaction]:
        """The interactions of a step's events, each read from the recommendation it answers.

        Every problem is listed at once: :class:`ContextError` when all of them are
        about the recommendation contexts, else :class:`ValidationError`.
        """
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
            if rec["s"] != session_id:
                problems.append(f"{where}.recommendation_context: it belongs to another session")
                continue
            position = index.position(rec["i"], rec["t"])
            if position is None:
                problems.append(
                    f"{where}.recommendation_context: stale, item '{rec['i']}' is no longer in topic '{rec['t']}'"
                )
                continue
            misfit = kind_problem(event.type, index, position, rec["i"]) if strict_kinds else None
            if misfit is not None:
                problems.append(f"{where}: {misfit}")
                continue
            if event.type == "attempt" and index.scorable[position] and event.score is None:
                problems.append(f"{where}: attempt on scorable item '{rec['i']}' needs a score")
                continue
            interactions.append(
                event.interaction(
                    user_id=spec.user_id,
                    catalog_id=spec.catalog_id,
                    item_id=rec["i"],
                    topic_id=rec["t"],
                    session_id=session_id,
                    practice=spec.mode.type != "assess",
                )
            )
        if problems:
            if all("recommendation_context" in p for p in problems):
                raise ContextError("; ".join(problems))
            raise ValidationError(problems)
        return interactions

    def _advance(
        self,
        app: str,
        ingestion: Ingestion,
        session: SessionState,
        written: tuple[SessionState, Mapping[str, Any]] | None,
        blocks: int,
        model: CatalogModel,
    ) -> _Advanced:
        """The session after the ingested events and its next recommendation: the step, the
        session's document and block rows to write, and its state."""
        spec = session.spec
        plan = ingestion.plan
        entry = ingestion.entry(spec.user_id, spec.catalog_id)
        latest = max((i.timestamp for i in plan.changed), default=None)
        session = session.with_interactions(plan.new, latest)
        if spec.mode.type == "assess":
            tested = [i.item_id for i in plan.changed if i.kind == "attempt"]
            session = self._with_assessed(app, session, tested)
        step, after = self._recommend(app, session, model, entry)
        doc, block_rows = split_doc(after.to_doc(like=written), after.assessed, blocks)
        return step, doc, block_rows, after

    def _with_assessed(self, app: str, session: SessionState, item_ids: Sequence[str]) -> SessionState:
        """``session`` with ``item_ids`` added to its assessed items (each item once, in order of first
        assessment). The set of the items assessed is kept from step to step with the tuple it
        holds (the steps of a session run one at a time, under its learner's lock)."""
        if not item_ids:
            return session
        key = (app, session.session_id)
        assessed = session.assessed
        found = self._assessed_sets.get(key)
        if found is not None and found[0] is assessed:
            seen = found[1]
        elif found is not None and len(found[0]) <= len(assessed) and assessed[: len(found[0])] == found[0]:
            seen = found[1]  # (another engine's steps added to the items this one knew)
            seen.update(assessed[len(found[0]) :])
            self._assessed_sets.put(key, (assessed, seen))
        else:
            seen = set(assessed)
        added = tuple(dict.fromkeys(item for item in item_ids if item not in seen))
        if not added:
            return session
        seen.update(added)
        after = session.with_assessed(assessed + added)
        self._assessed_sets.put(key, (after.assessed, seen))
        return after

    def _administered_positions(self, app: str, session: SessionState, index: CatalogIndex) -> BoolArray:
        """The positions of the items this session has assessed: the list only grows, so the
        mask of the previous step is extended with the items added since."""
        key = (app, session.session_id)
        assessed = session.assessed
        if not assessed:  # (every learn and review step) one read-only mask of nothing per catalog
            return index.derived("sessions.none_administered", _nothing_administered)
        found = self._administered.get(key)
        if found is not None and found[0] is index and found[1] <= len(assessed):
            done, mask = found[1], found[2]
            if done < len(assessed):  # the positions of the items added (as item_mask finds them)
                mask = mask.copy()
                for item_id in assessed[done:]:
                    positions = index.item_positions.get(item_id)
                    if positions is not None:
                        mask[positions] = True
        else:
            mask = index.item_mask(assessed)
        mask.flags.writeable = False  # shared with later steps
        self._administered.put(key, (index, len(assessed), mask))
        return mask

    def _recommend(
        self, app: str, session: SessionState, model: CatalogModel, entry: LearnerEntry
    ) -> tuple[AdaptiveStep, SessionState]:
        spec = session.spec
        predictions = self.learners.predictions(app, spec.user_id, model, entry)
        mask = self.content.mask(app, model, spec.filter)
        constraint_masks = [self.content.mask(app, model, c.filter) for c in spec.constraints or ()]
        view = self.learners.view(model, entry, predictions)
        rng = self._session_rng(app, session, entry.state.n_events)
        policy = self.policies[spec.mode.type]
        administered = self._administered_positions(app, session, model.index)
        pick, session = session_step(session, view, mask, constraint_masks, policy, rng, administered=administered)
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
        user_status = self.learners.status(model, entry, mask, predictions)
        session_status = session.status(self.clock(), user_status.proficiency)
        idle = None
        # nothing due: say why, and when (not when the constraints leave nothing to recommend)
        if (
            pick is None
            and spec.mode.type == "review"
            and (eligible := eligible_positions(session, mask, constraint_masks)).any()
        ):
            retention = getattr(policy, "desired_retention", None) or model.desired_retention
            order = due_order(view, eligible, retention)
            idle = nothing_due(due_items(view, order, 1), retention, met=order.positions.size, n_due=order.n_due)
        return AdaptiveStep(
            recommendation=recommendation, user_status=user_status, session_status=session_status, nothing_due=idle
        ), session


def _nothing_administered(index: CatalogIndex) -> BoolArray:
    mask = np.zeros(index.n_items, dtype=bool)
    mask.flags.writeable = False
    return mask
