"""The invariant checks of ``learnloop.testing`` catch each kind of violation.

A real session is played, then one step is altered at a time; the check must
name exactly that problem (so a passing property test means something).
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from typing import Any

import pytest

from learnloop import Engine
from learnloop.sim import SimClock, sample_course
from learnloop.testing import (
    Answer,
    LearnerSpec,
    SessionRun,
    assert_session_invariants,
    play_session,
    session_violations,
)

ITEMS, CATALOG = sample_course(n_chapters=1, topics_per_chapter=2, items_per_topic=3)
SPEC: dict[str, Any] = {
    "user_id": "u1",
    "catalog_id": CATALOG.catalog_id,
    "mode": {"type": "learn"},
    "filter": {"include_topic_ids": ["ch1-t1"]},
    "stopping_conditions": {"max_interaction_count": 3},
    "constraints": [
        {"type": "max_recommendations", "value": 2.5, "filter": {"include_item_ids": ["ch1-t1-q1", "ch1-t1-q2"]}}
    ],
}


@pytest.fixture
def run() -> SessionRun:
    engine = Engine(seed=2, clock=SimClock())
    engine.upsert_items(ITEMS)
    engine.upsert_catalog(CATALOG)
    played = play_session(engine, SPEC, [Answer("attempt", score=1.0)] * 5)
    assert session_violations(played) == []
    assert len(played.steps) == 6
    return played


def altered(run: SessionRun, k: int, **changes: Any) -> SessionRun:
    """``run`` with step ``k`` changed: ``recommendation``, or fields of the two statuses."""
    step = run.steps[k]
    update: dict[str, Any] = {}
    if "recommendation" in changes:
        update["recommendation"] = changes.pop("recommendation")
    session = {k2: v for k2, v in changes.items() if k2 in type(step.session_status).model_fields}
    user = {k2: v for k2, v in changes.items() if k2 in type(step.user_status).model_fields}
    if session:
        update["session_status"] = step.session_status.model_copy(update=session)
    if user:
        update["user_status"] = step.user_status.model_copy(update=user)
    steps = list(run.steps)
    steps[k] = step.model_copy(update=update)
    return replace(run, steps=steps)


def recommending(run: SessionRun, k: int, item_id: str, topic_id: str, keyword: str | None = None) -> SessionRun:
    rec = run.steps[k].recommendation
    assert rec is not None
    reason = rec.reason if keyword is None else rec.reason.model_copy(update={"keyword": keyword})
    return altered(
        run, k, recommendation=rec.model_copy(update={"item_id": item_id, "topic_id": topic_id, "reason": reason})
    )


def test_a_recommendation_outside_the_filter_is_named(run: SessionRun) -> None:
    [problem] = session_violations(recommending(run, 1, "ch1-t2-q1", "ch1-t2"))
    assert problem == "step 1: item 'ch1-t2-q1' in topic 'ch1-t2' does not match the session filter"


def test_an_item_named_in_the_wrong_topic_is_named(run: SessionRun) -> None:
    [problem] = session_violations(recommending(run, 0, "ch1-t1-q3", "ch1-t2"))
    assert problem == "step 0: item 'ch1-t1-q3' is not in topic 'ch1-t2' of the catalog"


def test_an_exceeded_constraint_is_named(run: SessionRun) -> None:
    tampered = run
    for k in range(3):
        tampered = recommending(tampered, k, f"ch1-t1-q{1 + k % 2}", "ch1-t1")
    problems = session_violations(tampered)
    assert "step 2: constraint 0 allows 2 recommendations, this is number 3" in problems


def test_a_missing_recommendation_is_named_while_items_are_eligible(run: SessionRun) -> None:
    [problem] = session_violations(altered(run, 2, recommendation=None))
    assert problem.startswith("step 2: no recommendation although") and problem.endswith("items are eligible")


def test_an_unknown_reason_keyword_is_named(run: SessionRun) -> None:
    rec = run.steps[0].recommendation
    assert rec is not None
    [problem] = session_violations(recommending(run, 0, rec.item_id, rec.topic_id, keyword="because"))
    assert problem == "step 0: reason keyword 'because' is not one of the contract's"


def test_a_wrong_interaction_count_is_named(run: SessionRun) -> None:
    problems = session_violations(altered(run, 1, interaction_count=7))
    assert "step 1: interaction_count is 7, 1 events were posted" in problems


def test_a_decreasing_duration_is_named(run: SessionRun) -> None:
    before = run.steps[2].session_status.duration_ms
    assert before > 0
    [problem] = session_violations(altered(run, 3, duration_ms=before - 1))
    assert problem == f"step 3: duration_ms went down from {before} to {before - 1}"


def test_a_stop_flag_without_a_holding_condition_is_named(run: SessionRun) -> None:
    assert not run.steps[1].session_status.stop_session
    [problem] = session_violations(altered(run, 1, stop_session=True))
    assert problem == "step 1: stop_session is True while holding conditions are []"


def test_a_missing_stop_flag_and_key_are_named(run: SessionRun) -> None:
    last = run.steps[-1].session_status
    assert last.stop_session and last.satisfied_stopping_condition_keys == ["max_interaction_count"]
    problems = session_violations(altered(run, 5, stop_session=False, satisfied_stopping_condition_keys=[]))
    assert problems == [
        "step 5: satisfied_stopping_condition_keys are [], the conditions that hold are ['max_interaction_count']",
        "step 5: stop_session is False while holding conditions are ['max_interaction_count']",
    ]


def test_status_figures_out_of_range_are_named(run: SessionRun) -> None:
    problems = session_violations(altered(run, 0, progress=1.5, proficiency=None))
    assert problems == [
        "step 0: progress 1.5 is outside [0, 1]",
        "step 0: proficiency is None although the filter has scorable items",
    ]


def test_assert_session_invariants_lists_every_problem(run: SessionRun) -> None:
    tampered = altered(altered(run, 1, interaction_count=2), 0, stop_session=True)
    with pytest.raises(AssertionError) as info:
        assert_session_invariants(tampered)
    message = str(info.value)
    assert message.startswith("2 session invariant(s) broken:")
    assert "step 1: interaction_count is 2" in message and "step 0: stop_session is True" in message


def test_play_session_with_a_simulated_learner_moves_the_sim_clock() -> None:
    clock = SimClock()
    engine = Engine(seed=2, clock=clock)
    engine.upsert_items(ITEMS)
    engine.upsert_catalog(CATALOG)
    start = clock()
    spec = {**SPEC, "stopping_conditions": {"max_duration_ms": 90_000}}
    run = play_session(engine, spec, learner=LearnerSpec(seed=4), steps=4)
    assert_session_invariants(run)
    assert (clock() - start).total_seconds() == 4 * 30
    assert [s.session_status.duration_ms for s in run.steps] == [0, 30_000, 60_000, 90_000, 120_000]
    assert [s.session_status.stop_session for s in run.steps] == [False, False, False, True, True]
    kinds = [events[0]["type"] for events in run.events[1:]]
    assert set(kinds) <= {"attempt", "view_theory"} and len(kinds) == 4


def test_play_session_needs_answers_or_a_learner() -> None:
    engine = Engine(seed=2)
    with pytest.raises(ValueError, match="either answers or a learner"):
        play_session(engine, SPEC)
    with pytest.raises(ValueError, match="needs steps"):
        play_session(engine, SPEC, learner=LearnerSpec())


def test_an_answer_reports_every_bad_field_at_once() -> None:
    with pytest.raises(ValueError) as info:
        Answer("attempt", score=2.0, delay_ms=0)
    assert str(info.value) == "score must be in [0, 1], got 2.0; delay_ms must be at least 1, got 0"


def test_without_hypothesis_the_import_error_says_what_to_install() -> None:
    code = (
        "import sys\nsys.modules['hypothesis'] = None\n"
        "import learnloop\n"
        "try:\n    import learnloop.testing\nexcept ImportError as e:\n    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert "pip install hypothesis" in done.stdout
