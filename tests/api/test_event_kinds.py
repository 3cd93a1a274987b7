"""An event's type must fit its item, the same way in v1, v2 and the engine called as the façades call it.

An ``attempt`` on a theory item that is not scorable, or a ``view_theory`` on a
scorable item that is not theory, changes neither progress nor proficiency: v1
refuses both (``response_submit`` needs an exercise, ``theory_viewed`` a theory
asset), and v2 refuses them too, in ``adaptive-engine`` and ``upsert-events``, with
a 400 naming the item and the event type it takes. A ``skip`` fits every item in
v2 (v1's skipped ``response_submit`` still needs an exercise: it is a response).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from learnloop import Engine
from learnloop.api import V1Api, V2Api
from learnloop.errors import ValidationError
from learnloop.store import TABLES

NOW = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
TS = "2025-03-01T09:01:00Z"
LEARNER = {"id": "u1", "type": "learner"}

THEORY_MESSAGE = "item '{}' is a theory item; attempt needs an exercise, post view_theory for it"
EXERCISE_MESSAGE = "item '{}' is an exercise; view_theory needs a theory item, post attempt for it"

ITEMS = [
    {"item_id": "q1", "display_name": "Q1", "scorable": True, "difficulty": 0.5},
    {"item_id": "t1", "display_name": "T1", "scorable": False, "content_type": "theory"},
    # a scorable item marked theory takes both, and so does an exercise that is not scorable
    {"item_id": "st", "display_name": "ST", "scorable": True, "content_type": "theory"},
    {"item_id": "tx", "display_name": "TX", "scorable": False, "content_type": "text"},
]
CATALOG = {
    "catalog_id": "course",
    "display_name": "Course",
    "topics": [
        {
            "topic_id": "A",
            "display_name": "A",
            "item_refs": [{"item_id": "t1"}, {"item_id": "q1"}, {"item_id": "st"}, {"item_id": "tx"}],
        }
    ],
}

#: (v2 event type, item) -> the problem (None: accepted)
V2_CASES: dict[tuple[str, str], str | None] = {
    ("attempt", "q1"): None,
    ("attempt", "t1"): THEORY_MESSAGE.format("t1"),
    ("attempt", "st"): None,
    ("attempt", "tx"): None,
    ("skip", "q1"): None,
    ("skip", "t1"): None,
    ("view_theory", "q1"): EXERCISE_MESSAGE.format("q1"),
    ("view_theory", "t1"): None,
    ("view_theory", "st"): None,
    ("view_theory", "tx"): None,
}


def snapshot(engine: Engine) -> dict[str, list[Any]]:
    return {t: list(engine.store.scan(t, "default")) for t in TABLES}


@pytest.fixture
def engine(make_engine: Callable[..., Engine]) -> Engine:
    return make_engine(seed=5, clock=lambda: NOW)


@pytest.fixture
def v2(engine: Engine) -> V2Api:
    api = V2Api(engine)
    assert api.handle("POST", "/v2/upsert-items", body={"items": ITEMS}).status == 200
    assert api.handle("POST", "/v2/upsert-catalog", body=CATALOG).status == 200
    return api


def recommended(v2: V2Api, item_id: str) -> tuple[str, dict[str, Any]]:
    """A session whose filter holds only ``item_id``, and its first recommendation."""
    body = {
        "user_id": "u1",
        "catalog_id": "course",
        "mode": {"type": "learn"},
        "filter": {"include_item_ids": [item_id]},
    }
    r = v2.handle("POST", "/v2/create-adaptive-session", body=body)
    assert r.status == 200, r.body
    context = r.body["data"]["session_context"]
    r = v2.handle("POST", "/v2/adaptive-engine", body={"session_context": context})
    assert r.status == 200 and r.body["data"]["recommendation"]["item_id"] == item_id, r.body
    return context, r.body["data"]


def context_event(kind: str, recommendation: dict[str, Any]) -> dict[str, Any]:
    event: dict[str, Any] = {"type": kind, "timestamp": TS, "recommendation_context": recommendation}
    if kind == "attempt":
        event["score"] = 1.0
    return event


def plain_event(kind: str, item_id: str, timestamp: str = TS, catalog_id: str = "course") -> dict[str, Any]:
    event: dict[str, Any] = {"type": kind, "item_id": item_id, "catalog_id": catalog_id, "timestamp": timestamp}
    if kind == "attempt":
        event["score"] = 1.0
    return event


@pytest.mark.parametrize(("kind", "item_id"), sorted(V2_CASES))
def test_adaptive_engine_refuses_an_event_whose_type_does_not_fit_its_item(
    v2: V2Api, engine: Engine, kind: str, item_id: str
) -> None:
    context, step = recommended(v2, item_id)
    before = snapshot(engine)
    event = context_event(kind, step["recommendation"]["recommendation_context"])
    r = v2.handle("POST", "/v2/adaptive-engine", body={"session_context": context, "events": [event]})
    problem = V2_CASES[(kind, item_id)]
    if problem is None:
        assert r.status == 200, r.body
        assert r.body["data"]["session_status"]["interaction_count"] == 1
        return
    assert (r.status, r.body) == (400, {"error": {"status": 400, "message": f"events[0]: {problem}"}})
    assert snapshot(engine) == before


def test_a_scored_attempt_on_recommended_theory_was_taken_and_changed_nothing(v2: V2Api, engine: Engine) -> None:
    """What v2 did: 200, no progress, no proficiency change. It is a 400 now, and a view of the theory counts."""
    context, step = recommended(v2, "t1")
    rec = step["recommendation"]["recommendation_context"]
    r = v2.handle(
        "POST", "/v2/adaptive-engine", body={"session_context": context, "events": [context_event("attempt", rec)]}
    )
    assert r.status == 400
    event = context_event("view_theory", rec)
    r = v2.handle("POST", "/v2/adaptive-engine", body={"session_context": context, "events": [event]})
    assert r.status == 200, r.body
    assert r.body["data"]["user_status"]["progress"] == 1.0


@pytest.mark.parametrize(("kind", "item_id"), sorted(V2_CASES))
def test_upsert_events_refuses_an_event_whose_type_does_not_fit_its_item(
    v2: V2Api, engine: Engine, kind: str, item_id: str
) -> None:
    before = snapshot(engine)
    # a valid event beside it: the whole call is refused
    events = [plain_event("attempt", "q1", "2025-03-01T09:00:00Z"), plain_event(kind, item_id)]
    r = v2.handle("POST", "/v2/upsert-events", body={"user_id": "u1", "events": events})
    problem = V2_CASES[(kind, item_id)]
    if problem is None:
        assert r.status == 200, r.body
        return
    assert (r.status, r.body) == (400, {"error": {"status": 400, "message": f"events[1]: {problem}"}})
    assert snapshot(engine) == before


def test_upsert_events_lists_every_misfit_with_the_other_problems(v2: V2Api, engine: Engine) -> None:
    before = snapshot(engine)
    events = [
        plain_event("attempt", "t1"),
        plain_event("view_theory", "q1"),
        plain_event("attempt", "nope"),
        {"type": "attempt", "item_id": "q1", "catalog_id": "course", "timestamp": TS},
    ]
    r = v2.handle("POST", "/v2/upsert-events", body={"user_id": "u1", "events": events})
    message = (
        "4 problems: events[0]: "
        + THEORY_MESSAGE.format("t1")
        + "; events[1]: "
        + EXERCISE_MESSAGE.format("q1")
        + "; events[2]: item 'nope' is not in catalog 'course'"
        + "; events[3]: attempt on scorable item 'q1' needs a score"
    )
    assert (r.status, r.body) == (400, {"error": {"status": 400, "message": message}})
    assert snapshot(engine) == before


def test_the_engine_refuses_misfits_when_asked_as_the_facades_ask(v2: V2Api, engine: Engine) -> None:
    """Called directly, the engine records any type on any item (simulations, imported logs):
    ``strict_kinds=True`` applies the façades' rule."""
    with pytest.raises(ValidationError) as raised:
        engine.upsert_events("u2", [plain_event("attempt", "t1")], strict_kinds=True)
    assert raised.value.problems == (f"events[0]: {THEORY_MESSAGE.format('t1')}",)
    context, step = recommended(v2, "q1")
    rec = step["recommendation"]["recommendation_context"]
    with pytest.raises(ValidationError) as raised:
        engine.adaptive_step(context, [context_event("view_theory", rec)], strict_kinds=True)
    assert raised.value.problems == (f"events[0]: {EXERCISE_MESSAGE.format('q1')}",)
    assert engine.upsert_events("u2", [plain_event("attempt", "t1")]) == 1
    assert engine.adaptive_step(context, [context_event("view_theory", rec)]).session_status.interaction_count == 1


# -- v1 on the same content: the same misfits refused, with v1's own messages -------------------------

V1_CASES: dict[tuple[str, str], str | None] = {
    ("correct", "q1"): None,
    ("correct", "t1"): "'user_events[0]': asset 't1' is a theory asset; response_submit needs an exercise",
    ("skipped", "q1"): None,
    ("skipped", "t1"): "'user_events[0]': asset 't1' is a theory asset; response_submit needs an exercise",
    ("theory_viewed", "q1"): "'user_events[0]': asset 'q1' is an exercise; theory_viewed needs a theory asset",
    ("theory_viewed", "t1"): None,
}


@pytest.fixture
def v1(engine: Engine) -> V1Api:
    api = V1Api(engine)
    assets = [{"id": "q1", "type": "exercise"}, {"id": "t1", "type": "theory"}]
    assert api.handle("PUT", "/v1/assets", body={"assets": assets}).status == 200
    view = {"name": "View", "assets": [{"asset_id": "t1", "path": "/a"}, {"asset_id": "q1", "path": "/a"}]}
    assert api.handle("PUT", "/v1/views/view", body=view).status == 200
    return api


@pytest.mark.parametrize(("what", "asset_id"), sorted(V1_CASES))
def test_v1_refuses_the_same_misfits(v1: V1Api, engine: Engine, what: str, asset_id: str) -> None:
    if what == "theory_viewed":
        event = {"type": "theory_viewed", "attributes": {"view_id": "view", "asset_id": asset_id}}
    else:
        event = {"type": "response_submit", "attributes": {"view_id": "view", "asset_id": asset_id, "result": what}}
    event.update(user=LEARNER, timestamp=TS)
    before = snapshot(engine)
    r = v1.handle("POST", "/v1/user-events", body={"user_events": [event]})
    problem = V1_CASES[(what, asset_id)]
    if problem is None:
        assert r.status == 200, r.body
        return
    assert r.status == 400 and [e["detail"] for e in r.body["errors"]] == [problem]
    assert snapshot(engine) == before
    # the v2 event this one becomes (the view is catalog 'view') is refused by v2 alike, but for a
    # skip, which fits any item in v2
    kind = {"correct": "attempt", "skipped": "skip", "theory_viewed": "view_theory"}[what]
    r = V2Api(engine).handle(
        "POST", "/v2/upsert-events", body={"user_id": "u1", "events": [plain_event(kind, asset_id, catalog_id="view")]}
    )
    expected = {"attempt": THEORY_MESSAGE, "view_theory": EXERCISE_MESSAGE}.get(kind)
    if expected is None:
        assert r.status == 200, r.body
    else:
        assert (r.status, r.body["error"]["message"]) == (400, "events[0]: " + expected.format(asset_id))
