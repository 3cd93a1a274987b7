"""A hypothesis stateful machine for adaptive sessions: create, step, answer, skip, view theory, status.

:class:`SessionMachine` drives one engine through random interleavings of
several sessions (of one or more learners) and checks, after every call, what
the contract and the pure session step (:mod:`learnloop.recommend.step`)
promise:

- a recommendation is an item of its topic that the session filter matches
  and that the constraints still allow (:func:`~learnloop.recommend.step.eligible_positions`
  of the session before the step); it is missing exactly when nothing is eligible;
- the session after the step is what :func:`~learnloop.recommend.step.session_step`
  makes of it: one more recommendation, each constraint's count advanced by
  whether its filter matches the item, the item as the last one;
- ``interaction_count`` counts the events posted in the session, and
  ``duration_ms`` never decreases;
- ``stop_session`` holds exactly when a stopping condition holds;
- a status read equals the user status the latest step reported for that
  learner when nothing was posted since.

Run it as is (``TestSessions = SessionMachine.TestCase``), or subclass it to
use your own engine (override :meth:`SessionMachine.make_engine`) or content
(:meth:`SessionMachine.make_content`):

>>> from hypothesis import settings
>>> from learnloop.testing.machine import SessionMachine
>>> SessionMachine.TestCase.settings = settings(max_examples=3, stateful_step_count=6, deadline=None)
>>> SessionMachine.TestCase().runTest()
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule

from learnloop.content import Catalog, Item
from learnloop.recommend import AdaptiveStep, SessionSpec
from learnloop.recommend.step import eligible_positions
from learnloop.testing.checks import REASON_KEYWORDS
from learnloop.testing.events import DEFAULT_START, Answer, scores
from learnloop.testing.sessions import session_specs

if TYPE_CHECKING:
    from learnloop.engine import Engine

__all__ = ["SessionMachine"]


@dataclass
class _Session:
    context: str
    spec: SessionSpec
    filter_mask: np.ndarray
    constraint_masks: list[np.ndarray]
    posted: int = 0
    last: AdaptiveStep | None = None
    last_duration: int = -1
    stepped_at_events: int = -1  # the learner's event count when ``last`` was made
    history: list[str] = field(default_factory=list)


class SessionMachine(RuleBasedStateMachine):
    """Random interleavings of session calls on one engine, checked after every call."""

    #: learners the sessions are drawn for (several sessions may share one)
    users: tuple[str, ...] = ("ada", "grace")

    def make_engine(self) -> Engine:
        """The engine under test (override to test another store or engine)."""
        from learnloop.engine import Engine

        return Engine(seed=0)

    def make_content(self) -> tuple[list[Item], Catalog]:
        """The items and catalog the sessions run on (a small sample course by default)."""
        from learnloop.sim import sample_course

        return sample_course(n_chapters=2, topics_per_chapter=2, items_per_topic=3)

    sessions = Bundle("sessions")

    def __init__(self) -> None:
        super().__init__()
        self.engine = self.make_engine()
        self.items, self.catalog = self.make_content()
        self.engine.upsert_items(self.items)
        self.engine.upsert_catalog(self.catalog)
        self.index = self.engine.catalog_index(self.catalog.catalog_id)
        self.now: datetime = DEFAULT_START
        self.events: dict[str, int] = {u: 0 for u in self.users}
        self.open: list[_Session] = []

    # -- rules ------------------------------------------------------------------------------
    @initialize(target=sessions, data=st.data())
    def first_session(self, data: st.DataObject) -> _Session:
        return self._create(data)

    @rule(target=sessions, data=st.data())
    def create(self, data: st.DataObject) -> _Session:
        return self._create(data)

    @rule(session=sessions, score=scores(), delay=st.integers(1, 3_600_000))
    def answer(self, session: _Session, score: float, delay: int) -> None:
        self._step(session, Answer("attempt", score=score, delay_ms=delay))

    @rule(session=sessions, delay=st.integers(1, 600_000))
    def skip(self, session: _Session, delay: int) -> None:
        self._step(session, Answer("skip", delay_ms=delay))

    @rule(session=sessions, fraction=st.none() | st.floats(0.0, 1.0), delay=st.integers(1, 600_000))
    def view_theory(self, session: _Session, fraction: float | None, delay: int) -> None:
        self._step(session, Answer("view_theory", fraction_completed=fraction, delay_ms=delay))

    @rule(session=sessions)
    def step_without_events(self, session: _Session) -> None:
        self._step(session, None)

    @rule(session=sessions)
    def status(self, session: _Session) -> None:
        user = session.spec.user_id
        got = self.engine.user_status(user, session.spec.catalog_id, [session.spec.filter])[0]
        assert 0.0 <= got.progress <= 1.0
        if session.last is not None and session.stepped_at_events == self.events[user]:
            expected = session.last.user_status
            assert got.progress == expected.progress, (got, expected)
            assert got.proficiency == expected.proficiency, (got, expected)
            assert got.time_spent_ms == expected.time_spent_ms, (got, expected)
            assert got.last_interaction_timestamp == expected.last_interaction_timestamp, (got, expected)

    # -- checks ------------------------------------------------------------------------------
    @invariant()
    def sessions_remain_readable(self) -> None:
        for session in self.open:
            stored = self.engine.session(session.context)
            assert stored.spec == session.spec

    def _create(self, data: st.DataObject) -> _Session:
        spec = data.draw(session_specs(self.catalog, self.items, user_id=st.sampled_from(self.users)))
        context = self.engine.create_session(spec)
        cid = spec.catalog_id
        session = _Session(
            context=context,
            spec=spec,
            filter_mask=self.engine.filter_mask(cid, spec.filter),
            constraint_masks=[self.engine.filter_mask(cid, c.filter) for c in spec.constraints or ()],
        )
        self.open.append(session)
        return session

    def _step(self, session: _Session, answer: Answer | None) -> None:
        events: list[dict[str, Any]] = []
        if answer is not None and session.last is not None and session.last.recommendation is not None:
            self.now = self.now + timedelta(milliseconds=answer.delay_ms)
            events = [answer.event(session.last.recommendation.recommendation_context, at=self.now)]
        before = self.engine.session(session.context)
        step = self.engine.adaptive_step(session.context, events)
        after = self.engine.session(session.context)
        session.posted += len(events)
        self.events[session.spec.user_id] += len(events)
        where = f"session of {session.spec.user_id} ({session.spec.mode.type}), step {len(session.history)}"
        eligible = eligible_positions(before, session.filter_mask, session.constraint_masks)
        rec = step.recommendation
        if rec is None:
            assert step.nothing_due is not None or not eligible.any(), (
                f"{where}: no recommendation although {int(eligible.sum())} items are eligible"
            )
            assert after.recommendation_count == before.recommendation_count, where
        else:
            position = self.index.position(rec.item_id, rec.topic_id)
            assert position is not None, f"{where}: '{rec.item_id}' is not in topic '{rec.topic_id}'"
            assert eligible[position], f"{where}: '{rec.item_id}' is not eligible (filter or a used-up constraint)"
            assert rec.reason.keyword in REASON_KEYWORDS, f"{where}: reason {rec.reason.keyword!r}"
            counts = tuple(
                used + int(bool(mask[position]))
                for used, mask in zip(before.constraint_counts, session.constraint_masks, strict=True)
            )
            assert after.constraint_counts == counts, (
                f"{where}: constraint counts {after.constraint_counts} != {counts}"
            )
            assert after.recommendation_count == before.recommendation_count + 1, where
            assert (after.last_item, after.last_topic) == (rec.item_id, rec.topic_id), where
        status = step.session_status
        assert status.interaction_count == session.posted, (
            f"{where}: interaction_count {status.interaction_count}, {session.posted} events posted"
        )
        assert status.duration_ms >= session.last_duration, f"{where}: duration_ms went down"
        assert status.stop_session == bool(status.satisfied_stopping_condition_keys), where
        session.last_duration = status.duration_ms
        session.last = step
        session.stepped_at_events = self.events[session.spec.user_id]
        session.history.append(rec.item_id if rec is not None else "-")
