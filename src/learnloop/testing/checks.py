"""Ready-made invariant checks of adaptive sessions, for property-based tests.

:func:`play_session` drives one session through an engine's typed API, as a
service would: it creates the session, then alternates adaptive steps with
the events of a scripted learner (a list of :class:`~learnloop.testing.Answer`)
or of a simulated one. It records every step in a :class:`SessionRun`.
:func:`session_violations` lists what the run did wrong, and
:func:`assert_session_invariants` fails with all of it at once. The
invariants, which hold for every mode, filter, constraint set and answer
sequence:

- every recommendation names an item of its topic that matches the session filter;
- a recommendation is missing exactly when no eligible item is left (the
  filter, less the items of constraints already used up), or, in review, when
  nothing is due (then ``nothing_due`` says so, and it is set in no other case);
- no ``max_recommendations`` constraint is ever exceeded;
- ``interaction_count`` counts the events posted, ``duration_ms`` never
  decreases;
- ``stop_session`` is true exactly when a stopping condition holds, and
  ``satisfied_stopping_condition_keys`` names those conditions;
- ``progress`` lies in [0, 1] and ``proficiency`` lies in [0, 1], ``None``
  exactly when the filter has no scorable item;
- every reason keyword is one the contract defines.

>>> from learnloop import Engine
>>> from learnloop.sim import sample_course
>>> from learnloop.testing import Answer
>>> engine = Engine(seed=1)
>>> items, catalog = sample_course(n_chapters=1, topics_per_chapter=2, items_per_topic=3)
>>> engine.upsert_items(items); engine.upsert_catalog(catalog)
>>> spec = {"user_id": "u1", "catalog_id": catalog.catalog_id, "mode": {"type": "learn"},
...         "filter": {"include_topic_ids": ["ch1-t1"]},
...         "stopping_conditions": {"max_interaction_count": 2},
...         "constraints": [{"type": "max_recommendations", "value": 1, "filter": {"include_tags": ["core"]}}]}
>>> run = play_session(engine, spec, [Answer("attempt", score=0.0), Answer("view_theory")])
>>> assert_session_invariants(run)
>>> [s.session_status.stop_session for s in run.steps]
[False, False, True]
>>> core = {"ch1-t1-q1", "ch1-t1-q2", "ch1-t1-q3"}   # the exercises tagged 'core'
>>> sum(s.recommendation.item_id in core for s in run.steps) <= 1   # the constraint allows one
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from learnloop.content import CatalogIndex
from learnloop.recommend import AdaptiveStep, SessionSpec
from learnloop.sim import SimClock, SimulatedLearner
from learnloop.testing.events import Answer
from learnloop.testing.learners import LearnerSpec

if TYPE_CHECKING:
    from learnloop.engine import Engine

__all__ = ["REASON_KEYWORDS", "SessionRun", "assert_session_invariants", "play_session", "session_violations"]

#: The reason keywords the v2 contract defines.
REASON_KEYWORDS: frozenset[str] = frozenset(
    {
        "knowledge_retention",
        "observed_knowledge_gap",
        "predicted_knowledge_gap",
        "content_progression",
        "assessment",
        "exploration",
    }
)


@dataclass
class SessionRun:
    """One played session: the spec, each step's answer and the events posted before it.

    ``events[k]`` were posted with the call that returned ``steps[k]`` (so
    ``events[0]`` is empty); ``masks`` are the session filter's and each
    constraint's masks over ``index``'s item order.
    """

    spec: SessionSpec
    index: CatalogIndex
    session_context: str
    filter_mask: np.ndarray
    constraint_masks: list[np.ndarray]
    steps: list[AdaptiveStep] = field(default_factory=list)
    events: list[list[dict[str, Any]]] = field(default_factory=list)

    @property
    def recommended_positions(self) -> list[int | None]:
        """The catalog position of each step's recommendation (``None``: none, or not in the catalog)."""
        out: list[int | None] = []
        for step in self.steps:
            rec = step.recommendation
            out.append(None if rec is None else self.index.position(rec.item_id, rec.topic_id))
        return out


def play_session(
    engine: Engine,
    spec: SessionSpec | Mapping[str, Any],
    answers: Sequence[Answer] | None = None,
    *,
    learner: SimulatedLearner | LearnerSpec | None = None,
    steps: int | None = None,
    start: datetime | None = None,
    app: str = "default",
) -> SessionRun:
    """Create a session and play it; returns every step.

    Give either ``answers`` (one per recommendation, in order: the session is
    played until they run out or no item is recommended) or ``learner`` and
    ``steps`` (a simulated learner reads theory items and answers exercises).
    Events are stamped from ``start`` (default: the engine's clock now) plus
    each answer's delay; when the engine's clock is a
    :class:`~learnloop.sim.SimClock` it is moved along with them, so that
    durations are those of the events.
    """
    parsed = spec if isinstance(spec, SessionSpec) else SessionSpec.model_validate(spec)
    if (answers is None) == (learner is None):
        raise ValueError("play_session needs either answers or a learner (with steps)")
    if learner is not None and steps is None:
        raise ValueError("play_session with a learner needs steps")
    index = engine.catalog_index(parsed.catalog_id, app=app)
    if isinstance(learner, LearnerSpec):
        learner = learner.build(index)
    clock = engine.clock if isinstance(engine.clock, SimClock) else None
    moment = start if start is not None else engine.clock()
    context = engine.create_session(parsed, app=app)
    run = SessionRun(
        spec=parsed,
        index=index,
        session_context=context,
        filter_mask=engine.filter_mask(parsed.catalog_id, parsed.filter, app=app),
        constraint_masks=[engine.filter_mask(parsed.catalog_id, c.filter, app=app) for c in parsed.constraints or ()],
    )
    script = list(answers) if answers is not None else None
    n_steps = len(script) if script is not None else int(steps or 0)
    posted: list[dict[str, Any]] = []
    for k in range(n_steps + 1):
        step = engine.adaptive_step(context, posted, app=app)
        run.steps.append(step)
        run.events.append(posted)
        rec = step.recommendation
        if rec is None or k == n_steps:
            break
        if script is not None:
            answer = script[k]
        else:
            position = index.position(rec.item_id, rec.topic_id)
            answer = _simulated(learner, index, position, moment)  # type: ignore[arg-type]
        moment = moment + timedelta(milliseconds=answer.delay_ms)
        if clock is not None and clock() < moment:
            clock.now = moment
        posted = [answer.event(rec.recommendation_context, at=moment)]
    return run


def _simulated(learner: SimulatedLearner, index: CatalogIndex, position: int | None, now: datetime) -> Answer:
    if position is None:  # not in the catalog: the invariants will say so; skip it
        return Answer("skip")
    at = now + timedelta(milliseconds=30_000)
    if index.is_theory[position]:
        learner.view_theory(position, at)
        return Answer("view_theory", fraction_completed=1.0, time_spent_ms=30_000)
    return Answer("attempt", score=learner.respond(position, at), time_spent_ms=30_000)


def session_violations(run: SessionRun) -> list[str]:
    """Every invariant the run breaks, one message each (empty when all hold)."""
    problems: list[str] = []
    index = run.index
    spec = run.spec
    conditions = spec.stopping_conditions
    limits = [math.floor(c.value) for c in spec.constraints or ()]
    used = [0] * len(limits)
    has_scorable = bool((run.filter_mask & index.scorable).any())
    posted = 0
    previous_duration = -1
    for k, (step, position) in enumerate(zip(run.steps, run.recommended_positions, strict=True)):
        where = f"step {k}"
        posted += len(run.events[k])
        eligible = run.filter_mask.copy()
        for mask, limit, count in zip(run.constraint_masks, limits, used, strict=True):
            if count + 1 > limit:
                eligible &= ~mask
        rec = step.recommendation
        if (step.nothing_due is not None) != (rec is None and run.spec.mode.type == "review" and eligible.any()):
            problems.append(f"{where}: nothing_due is {step.nothing_due!r} with recommendation {rec!r}")
        if rec is None:
            if eligible.any() and step.nothing_due is None:
                problems.append(f"{where}: no recommendation although {int(eligible.sum())} items are eligible")
        else:
            if position is None:
                problems.append(f"{where}: item '{rec.item_id}' is not in topic '{rec.topic_id}' of the catalog")
            elif not run.filter_mask[position]:
                problems.append(
                    f"{where}: item '{rec.item_id}' in topic '{rec.topic_id}' does not match the session filter"
                )
            if rec.reason.keyword not in REASON_KEYWORDS:
                problems.append(f"{where}: reason keyword {rec.reason.keyword!r} is not one of the contract's")
            if position is not None:
                for j, mask in enumerate(run.constraint_masks):
                    if mask[position]:
                        used[j] += 1
                        if used[j] > limits[j]:
                            problems.append(
                                f"{where}: constraint {j} allows {limits[j]} recommendations, this is number {used[j]}"
                            )
        status = step.session_status
        if status.interaction_count != posted:
            problems.append(f"{where}: interaction_count is {status.interaction_count}, {posted} events were posted")
        if status.duration_ms < previous_duration:
            problems.append(f"{where}: duration_ms went down from {previous_duration} to {status.duration_ms}")
        previous_duration = status.duration_ms
        proficiency = step.user_status.proficiency
        expected: list[str] = []
        if conditions is not None:
            if (
                conditions.max_proficiency is not None
                and proficiency is not None
                and proficiency >= conditions.max_proficiency
            ):
                expected.append("max_proficiency")
            if (
                conditions.max_interaction_count is not None
                and status.interaction_count >= conditions.max_interaction_count
            ):
                expected.append("max_interaction_count")
            if conditions.max_duration_ms is not None and status.duration_ms >= conditions.max_duration_ms:
                expected.append("max_duration_ms")
        if sorted(status.satisfied_stopping_condition_keys) != sorted(expected):
            problems.append(
                f"{where}: satisfied_stopping_condition_keys are {status.satisfied_stopping_condition_keys}, "
                f"the conditions that hold are {expected}"
            )
        if status.stop_session != bool(expected):
            problems.append(f"{where}: stop_session is {status.stop_session} while holding conditions are {expected}")
        progress = step.user_status.progress
        if not 0.0 <= progress <= 1.0:
            problems.append(f"{where}: progress {progress} is outside [0, 1]")
        if proficiency is None and has_scorable:
            problems.append(f"{where}: proficiency is None although the filter has scorable items")
        if proficiency is not None and not has_scorable:
            problems.append(f"{where}: proficiency is {proficiency} although the filter has no scorable item")
        if proficiency is not None and not 0.0 <= proficiency <= 1.0:
            problems.append(f"{where}: proficiency {proficiency} is outside [0, 1]")
    return problems


def assert_session_invariants(run: SessionRun) -> None:
    """Raise :class:`AssertionError` listing every invariant the run breaks."""
    problems = session_violations(run)
    if problems:
        raise AssertionError(f"{len(problems)} session invariant(s) broken:\n" + "\n".join(problems))
