"""Review means review (issue 30): only items met, the most overdue first, and ``Engine.due`` agrees."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from learnloop import Engine
from learnloop.errors import ValidationError
from learnloop.events import format_timestamp
from learnloop.recommend import ReviewPolicy
from learnloop.recommend.due import nothing_due
from learnloop.sim import SimClock, learner_for, run_session, sample_course


def _engine(seed: int = 5, **course: Any) -> tuple[Engine, SimClock, str]:
    clock = SimClock()
    engine = Engine(seed=seed, clock=clock)
    items, catalog = sample_course(**course)
    engine.upsert_items(items)
    engine.upsert_catalog(catalog)
    return engine, clock, catalog.catalog_id


def _review(engine: Engine, cid: str, user: str, flt: dict[str, Any] | None = None) -> str:
    spec = {"user_id": user, "catalog_id": cid, "mode": {"type": "review"}, "filter": flt or {}}
    return engine.create_session(spec)


def test_a_new_learner_gets_no_unseen_item_on_the_sample_course() -> None:
    engine, _, cid = _engine()  # the demo's course
    step = engine.adaptive_step(_review(engine, cid, "new"))
    assert step.recommendation is None
    assert step.nothing_due is not None and step.nothing_due.next_item_id is None
    assert engine.due("new", cid) == []
    assert engine.next_items("new", cid, mode="review", limit=5) == []


def test_a_learner_who_studied_chapter_1_a_week_ago_reviews_chapter_1_by_predicted_recall() -> None:
    engine, clock, cid = _engine()
    index = engine.catalog_index(cid)
    learner = learner_for(index, seed=11)
    learned = run_session(
        engine,
        catalog_id=cid,
        user_id="ada",
        learner=learner,
        mode="learn",
        steps=40,
        clock=clock,
        filter={"include_topic_ids": ["ch1"]},
    )
    answered = {i for i, s in zip(learned.item_ids, learned.scores, strict=True) if s is not None}
    clock.advance(7 * 86400)
    due = engine.due("ada", cid)
    overdue = [d for d in due if d.overdue]
    assert overdue and {d.item_id for d in due} == answered  # the items met: chapter 1's answered exercises
    context = _review(engine, cid, "ada")
    events: list[dict[str, Any]] = []
    recalls = []
    for _ in range(20):
        step = engine.adaptive_step(context, events)
        head = next((d for d in engine.due("ada", cid) if d.overdue), None)  # (after the step's events)
        rec = step.recommendation
        if rec is None:
            assert head is None and step.nothing_due is not None
            assert step.nothing_due.next_item_id == engine.due("ada", cid)[0].item_id
            break
        assert head is not None and (rec.item_id, rec.topic_id) == (head.item_id, head.topic_id)
        assert rec.item_id in answered and rec.topic_id.startswith("ch1-")
        assert f"(predicted recall {head.recall:.2f} < 0.90)" in rec.reason.description
        recalls.append(head.recall)
        now = clock.advance(60)
        score = learner.respond(index.position(rec.item_id, rec.topic_id), now)
        events = [
            {
                "type": "attempt",
                "timestamp": format_timestamp(now),
                "score": score,
                "recommendation_context": rec.recommendation_context,
            }
        ]
    else:
        pytest.fail("review did not run out of due items")
    # one answer reviews its topic's memory: each chapter-1 topic that was due once, lowest recall first
    assert len(recalls) >= 2 and recalls == sorted(recalls)
    assert len(recalls) == len({d.topic_id for d in overdue})


def test_the_desired_retention_is_the_catalogs_and_settable() -> None:
    engine, clock, cid = _engine(n_chapters=1, topics_per_chapter=2, items_per_topic=3)
    start = clock()
    engine.upsert_events(
        "u",
        [
            {
                "type": "attempt",
                "item_id": "ch1-t1-q1",
                "catalog_id": cid,
                "timestamp": format_timestamp(start),
                "score": 1,
            }
        ],
    )
    clock.advance(2 * 86400)  # recall about 0.94 after 2 days (stability 3.7 days)
    (record,) = engine.due("u", cid)
    assert 0.9 < record.recall < 0.95 and not record.overdue
    assert record.due_at == start + timedelta(days=3.7145)
    assert engine.adaptive_step(_review(engine, cid, "u")).recommendation is None
    engine.set_learner_options(cid, {"desired_retention": 0.95})
    (record,) = engine.due("u", cid)
    assert record.overdue and record.due_at < clock()
    rec = engine.adaptive_step(_review(engine, cid, "u")).recommendation
    assert rec is not None and rec.item_id == "ch1-t1-q1" and "< 0.95)" in rec.reason.description
    with pytest.raises(ValidationError, match="desired_retention"):
        engine.set_learner_options(cid, {"desired_retention": 1.0})
    with pytest.raises(ValueError, match="desired_retention"):
        ReviewPolicy(desired_retention=0.0)


def test_due_reads_any_time_and_refuses_a_naive_one() -> None:
    engine, clock, cid = _engine(n_chapters=1, topics_per_chapter=1, items_per_topic=2)
    start = clock()
    engine.upsert_events(
        "u",
        [
            {
                "type": "attempt",
                "item_id": "ch1-t1-q1",
                "catalog_id": cid,
                "timestamp": format_timestamp(start),
                "score": 1,
            }
        ],
    )
    assert engine.due("u", cid, at=start + timedelta(days=1))[0].overdue is False
    assert engine.due("u", cid, at=start + timedelta(days=30))[0].overdue is True
    assert engine.due("u", cid, at="2025-02-06T00:00:00Z")[0].overdue is True
    with pytest.raises(ValidationError, match="timezone"):
        engine.due("u", cid, at=datetime(2025, 1, 1))


_COURSE = {"n_chapters": 2, "topics_per_chapter": 2, "items_per_topic": 3}
_ENGINES: dict[float, tuple[Engine, SimClock, str]] = {}
_USERS = itertools.count()


def _engine_with(retention: float) -> tuple[Engine, SimClock, str]:
    """An engine per desired retention (set once: setting it compiles the catalog again)."""
    if retention not in _ENGINES:
        engine, clock, cid = _engine(seed=2, **_COURSE)
        engine.set_learner_options(cid, {"desired_retention": retention})
        _ENGINES[retention] = (engine, clock, cid)
    return _ENGINES[retention]


_INDEX = _engine_with(0.9)[0].catalog_index(_engine_with(0.9)[2])


_Q1 = _INDEX.item_ids.index("ch1-t1-q1")


@example(history=[(_Q1, 1.0, 0.0, "attempt"), (_Q1, 0.0, 0.0, "skip")], later=30.0, retention=0.9)  # (replaced)
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    history=st.lists(
        st.tuples(
            st.integers(0, _INDEX.n_items - 1),
            st.sampled_from([0.0, 0.5, 1.0]),
            st.floats(0.0, 10.0),  # days after the previous event
            st.sampled_from(["attempt", "attempt", "view_theory", "skip"]),
        ),
        max_size=15,
    ),
    later=st.floats(0.0, 40.0),
    retention=st.sampled_from([0.7, 0.9, 0.97]),
)
def test_the_review_recommendation_is_the_head_of_the_due_list(
    history: list[tuple[int, float, float, str]], later: float, retention: float
) -> None:
    user_id = f"u{next(_USERS)}"
    engine, clock, cid = _engine_with(retention)
    moment = clock()
    events = []
    for position, score, gap, kind in history:
        moment = moment + timedelta(days=gap)
        event = {
            "type": kind,
            "item_id": _INDEX.item_ids[position],
            "topic_id": _INDEX.topic_ids[_INDEX.item_topic[position]],
            "catalog_id": cid,
            "timestamp": format_timestamp(moment),
        }
        if kind == "attempt" and _INDEX.scorable[position]:
            event["score"] = score
        events.append(event)
    engine.upsert_events(user_id, events)
    now = moment + timedelta(days=later)
    engine.clock = lambda: now
    # an event's key is its item and timestamp: a later event at the same millisecond replaces it
    kept = {(e["item_id"], e["timestamp"]): e for e in events}.values()
    answered = {(e["item_id"], e["topic_id"]) for e in kept if e["type"] == "attempt" and "score" in e}
    due = engine.due(user_id, cid)
    # Engine.due: the items answered, due ones first by recall, then by due time
    assert {(d.item_id, d.topic_id) for d in due} == answered
    n_due = sum(d.overdue for d in due)
    assert all(d.overdue for d in due[:n_due]) and all(d.recall < retention for d in due[:n_due])
    assert all(d.recall >= retention for d in due[n_due:])
    assert [d.recall for d in due[:n_due]] == sorted(d.recall for d in due[:n_due])
    assert [d.due_at for d in due[n_due:]] == sorted(d.due_at for d in due[n_due:])
    assert all(d.due_at <= now for d in due[:n_due])
    # review recommends its head, never an item not answered
    step = engine.adaptive_step(_review(engine, cid, user_id))
    rec = step.recommendation
    if n_due:
        assert rec is not None and (rec.item_id, rec.topic_id) == (due[0].item_id, due[0].topic_id)
        assert step.nothing_due is None
    else:
        assert rec is None and step.nothing_due is not None
        assert step.nothing_due.next_item_id == (due[0].item_id if due else None)
        # the step reads only the head of the order: the same answer as from every record
        assert step.nothing_due == nothing_due(due, retention)
    suggestions = engine.next_items(user_id, cid, mode="review", limit=4)
    assert [(s.item_id, s.topic_id) for s in suggestions] == [(d.item_id, d.topic_id) for d in due[: min(4, n_due)]]


def test_the_order_ties_go_to_the_item_answered_longest_ago() -> None:
    engine, clock, cid = _engine(n_chapters=1, topics_per_chapter=1, items_per_topic=4)
    start = clock()
    engine.upsert_events(
        "u",
        [
            {"type": "attempt", "item_id": f"ch1-t1-q{k}", "catalog_id": cid, "score": 1,
             "timestamp": format_timestamp(start + timedelta(minutes=m))}
            for k, m in ((3, 0), (1, 1), (2, 2))
        ],
    )  # fmt: skip
    clock.advance(30 * 86400)
    due = engine.due("u", cid)
    assert [d.item_id for d in due] == ["ch1-t1-q3", "ch1-t1-q1", "ch1-t1-q2"]
    assert len({d.recall for d in due}) == 1 and np.isclose(due[0].recall, due[-1].recall)
    assert due[0].due_at.tzinfo is UTC


def test_a_review_sequence_gives_each_item_due_once_even_when_every_item_is_due() -> None:
    engine, clock, cid = _engine(n_chapters=1, topics_per_chapter=2, items_per_topic=2, with_theory=False)
    start = clock()
    items = ["ch1-t1-q1", "ch1-t1-q2", "ch1-t2-q1", "ch1-t2-q2"]
    engine.upsert_events(
        "u",
        [
            {"type": "attempt", "item_id": item, "catalog_id": cid, "score": 1,
             "timestamp": format_timestamp(start + timedelta(minutes=k))}
            for k, item in enumerate(items)
        ],
    )  # fmt: skip
    clock.advance(60 * 86400)
    assert all(d.overdue for d in engine.due("u", cid))
    sequence = [s.item_id for s in engine.next_items("u", cid, mode="review", limit=10)]
    assert sequence == [d.item_id for d in engine.due("u", cid)] and sorted(sequence) == items


def test_a_review_policys_own_retention_dates_its_reasons() -> None:
    clock = SimClock()
    engine = Engine(seed=5, clock=clock, policies={"review": ReviewPolicy(desired_retention=0.95)})
    items, catalog = sample_course(n_chapters=1, topics_per_chapter=1, items_per_topic=2)
    engine.upsert_items(items)
    engine.upsert_catalog(catalog)
    cid = catalog.catalog_id
    start = clock()
    engine.upsert_events(
        "u",
        [
            {
                "type": "attempt",
                "item_id": "ch1-t1-q1",
                "catalog_id": cid,
                "timestamp": format_timestamp(start),
                "score": 1,
            }
        ],
    )
    clock.advance(2 * 86400)  # recall about 0.94: due under 0.95, not under the catalog's 0.9
    assert not engine.due("u", cid)[0].overdue
    rec = engine.adaptive_step(_review(engine, cid, "u")).recommendation
    assert rec is not None and "< 0.95)" in rec.reason.description
    fell = start + timedelta(days=3.7145 * (0.95**-2 - 1) / (19 / 81))  # about 1.84 days after the answer
    assert f"due since {fell:%Y-%m-%dT%H:%M}" in rec.reason.description


def test_constraints_that_leave_nothing_to_recommend_are_not_called_nothing_due() -> None:
    engine, _, cid = _engine()
    spec = {
        "user_id": "new",
        "catalog_id": cid,
        "mode": {"type": "review"},
        "filter": {},
        "constraints": [{"type": "max_recommendations", "value": 0.5, "filter": {}}],
    }
    step = engine.adaptive_step(engine.create_session(spec))
    assert step.recommendation is None
    assert step.nothing_due is None  # the session's constraints, not the learner's memory, leave nothing
    free = engine.adaptive_step(_review(engine, cid, "new"))
    assert free.recommendation is None and free.nothing_due is not None
