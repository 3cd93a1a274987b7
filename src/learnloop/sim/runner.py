"""Run simulated learners through an engine's adaptive sessions.

The engine is driven through its typed Python API, exactly as a service
would drive it: create a session, then alternate adaptive steps and the
learner's answers. Time is simulated by a :class:`SimClock` shared by the
engine and the learner, so forgetting and session durations are meaningful.

>>> from learnloop import Engine
>>> from learnloop.sim import SimClock, learner_for, run_session, sample_course
>>> clock = SimClock()
>>> engine = Engine(seed=1, clock=clock)
>>> items, catalog = sample_course(n_chapters=1, topics_per_chapter=2, items_per_topic=4)
>>> engine.upsert_items(items); engine.upsert_catalog(catalog)
>>> learner = learner_for(engine.catalog_index(catalog.catalog_id), seed=3)
>>> trace = run_session(engine, catalog_id=catalog.catalog_id, user_id="u1", learner=learner,
...                     mode="learn", steps=5, clock=clock)
>>> len(trace.item_ids), trace.reasons[0]
(5, 'content_progression')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from learnloop.content import CatalogIndex
from learnloop.events import format_timestamp
from learnloop.sim.learners import SimulatedLearner
from learnloop.tracing.irt import difficulty_to_b

if TYPE_CHECKING:
    from learnloop.engine import Engine

__all__ = ["SessionTrace", "SimClock", "learner_for", "run_session", "true_proficiency"]

EPOCH = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)


class SimClock:
    """A settable clock: call it for the current simulated time; :meth:`advance` moves it on."""

    def __init__(self, start: datetime = EPOCH) -> None:
        if start.tzinfo is None:
            raise ValueError("the simulated clock needs an aware datetime")
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now = self.now + timedelta(seconds=seconds)
        return self.now


def learner_for(
    index: CatalogIndex, *, seed: int, mastery_margin: float | None = None, **options: Any
) -> SimulatedLearner:
    """A simulated learner whose item difficulties are the catalog's cold-start values.

    With ``mastery_margin``, a topic counts as mastered (for the prerequisite
    effects) when the learner's ability exceeds the mean difficulty of the
    topic's exercises by that many logits, instead of one fixed ``mastery_level``.
    """
    b = difficulty_to_b(index.difficulty)
    if mastery_margin is not None:
        scorable = index.scorable.astype(np.float64)
        prefix_b = np.concatenate(([0.0], np.cumsum(np.where(index.scorable, b, 0.0))))
        prefix_n = np.concatenate(([0.0], np.cumsum(scorable)))
        total = prefix_b[index.topic_end] - prefix_b[index.topic_start]
        count = prefix_n[index.topic_end] - prefix_n[index.topic_start]
        options["mastery_level"] = np.where(count > 0, total / np.maximum(count, 1.0), 0.0) + mastery_margin
    return SimulatedLearner(
        topic_parent=index.topic_parent,
        item_topic=index.item_topic,
        b=b,
        prerequisites=index.prerequisite_edges,
        seed=seed,
        **options,
    )


def true_proficiency(learner: SimulatedLearner, index: CatalogIndex, mask: np.ndarray, at: datetime) -> float:
    """The learner's true mean P(correct) over the masked scorable items at ``at``."""
    positions = np.flatnonzero(mask & index.scorable)
    if positions.size == 0:
        return float("nan")
    return float(np.mean([learner.p_correct(int(p), at) for p in positions]))


@dataclass
class SessionTrace:
    """What happened in one simulated session, step by step."""

    item_ids: list[str] = field(default_factory=list)
    topic_ids: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    scores: list[float | None] = field(default_factory=list)
    true_proficiency: list[float] = field(default_factory=list)
    estimated_proficiency: list[float | None] = field(default_factory=list)
    stopped_at: int | None = None

    @property
    def gain(self) -> float:
        """True proficiency after the session minus before it."""
        return self.true_proficiency[-1] - self.true_proficiency[0]


def run_session(
    engine: Engine,
    *,
    catalog_id: str,
    user_id: str,
    learner: SimulatedLearner,
    mode: str,
    steps: int,
    clock: SimClock,
    filter: Mapping[str, Any] | None = None,
    stopping_conditions: Mapping[str, Any] | None = None,
    constraints: Sequence[Mapping[str, Any]] | None = None,
    seconds_per_step: float = 60.0,
    app: str = "default",
    stop_when_told: bool = False,
) -> SessionTrace:
    """Run ``steps`` adaptive steps; the learner answers each recommendation.

    ``true_proficiency`` holds ``steps + 1`` values: before the first step and
    after each answer. Theory items are read in full; exercises are answered.
    In assess mode the learner gets no feedback and so does not learn from the
    test items (as the engine assumes for assessment answers).
    """
    index = engine.catalog_index(catalog_id, app=app)
    flt = dict(filter or {})
    mask = engine.filter_mask(catalog_id, flt, app=app)
    spec: dict[str, Any] = {"user_id": user_id, "catalog_id": catalog_id, "mode": {"type": mode}, "filter": flt}
    if stopping_conditions:
        spec["stopping_conditions"] = dict(stopping_conditions)
    if constraints:
        spec["constraints"] = [dict(c) for c in constraints]
    context = engine.create_session(spec, app=app)
    trace = SessionTrace()
    trace.true_proficiency.append(true_proficiency(learner, index, mask, clock()))
    events: list[dict[str, Any]] = []
    for step in range(steps):
        result = engine.adaptive_step(context, events, app=app)
        trace.estimated_proficiency.append(result.user_status.proficiency)
        if result.session_status.stop_session and trace.stopped_at is None:
            trace.stopped_at = step
            if stop_when_told:
                break
        rec = result.recommendation
        if rec is None:
            break
        now = clock.advance(seconds_per_step)
        position = index.position(rec.item_id, rec.topic_id)
        assert position is not None
        stamp = format_timestamp(now)
        if index.is_theory[position]:
            learner.view_theory(position, now)
            events = [
                {
                    "type": "view_theory",
                    "timestamp": stamp,
                    "recommendation_context": rec.recommendation_context,
                    "fraction_completed": 1.0,
                    "time_spent_ms": int(seconds_per_step * 1000),
                }
            ]
            score = None
        else:
            score = learner.respond(position, now, feedback=mode != "assess")
            events = [
                {
                    "type": "attempt",
                    "timestamp": stamp,
                    "recommendation_context": rec.recommendation_context,
                    "score": score,
                    "time_spent_ms": int(seconds_per_step * 1000),
                }
            ]
        trace.item_ids.append(rec.item_id)
        trace.topic_ids.append(rec.topic_id)
        trace.reasons.append(rec.reason.keyword)
        trace.scores.append(score)
        trace.true_proficiency.append(true_proficiency(learner, index, mask, now))
    if events:
        final = engine.adaptive_step(context, events, app=app)
        trace.estimated_proficiency.append(final.user_status.proficiency)
    return trace
