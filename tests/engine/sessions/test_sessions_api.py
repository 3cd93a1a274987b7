"""Contract tests of the v2 session endpoints: create-adaptive-session, adaptive-engine,
user-status and upsert-events, on every store."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from learnloop import Engine, Limits
from learnloop.api import V2Api
from learnloop.sim import SimClock

KEY = {"X-API-KEY": "key-1"}
OTHER = {"X-API-KEY": "key-2"}
T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def ts(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")


ITEMS = [
    {
        "item_id": "a1",
        "display_name": "A1",
        "scorable": True,
        "difficulty": 0.3,
        "theory_item_refs": [{"item_id": "ta"}],
    },
    {"item_id": "a2", "display_name": "A2", "scorable": True, "difficulty": 0.5},
    {"item_id": "a3", "display_name": "A3", "scorable": True, "difficulty": 0.6, "tags": ["hard"]},
    {"item_id": "ta", "display_name": "Theory A", "scorable": False, "content_type": "theory"},
    {"item_id": "b1", "display_name": "B1", "scorable": True, "difficulty": 0.4},
    {"item_id": "b2", "display_name": "B2", "scorable": True, "difficulty": 0.7, "tags": ["hard"]},
]
CATALOG = {
    "catalog_id": "course",
    "display_name": "Course",
    "topics": [
        {"topic_id": "root", "display_name": "Root", "child_topic_refs": [{"topic_id": "A"}, {"topic_id": "B"}]},
        {"topic_id": "A", "display_name": "A", "item_refs": [{"item_id": i} for i in ("a1", "a2", "a3", "ta")]},
        {
            "topic_id": "B",
            "display_name": "B",
            "item_refs": [{"item_id": "b1"}, {"item_id": "b2"}],
            "prerequisite_topic_refs": [{"topic_id": "A"}],
        },
    ],
}


@pytest.fixture
def clock() -> SimClock:
    return SimClock(T0)


@pytest.fixture
def api(make_engine: Callable[..., Engine], clock: SimClock) -> V2Api:
    engine = make_engine(seed=11, clock=clock)
    v2 = V2Api(engine, api_keys={"key-1": "app-1", "key-2": "app-2"})
    for headers in (KEY, OTHER):
        assert v2.handle("POST", "/v2/upsert-items", body={"items": ITEMS}, headers=headers).status == 200
        assert v2.handle("POST", "/v2/upsert-catalog", body=CATALOG, headers=headers).status == 200
    return v2


def post(api: V2Api, path: str, body: Any, headers: dict[str, str] = KEY) -> tuple[int, Any]:
    r = api.handle("POST", path, body=body, headers=headers)
    return r.status, r.body


def create(api: V2Api, headers: dict[str, str] = KEY, **spec: Any) -> str:
    body = {"user_id": "u1", "catalog_id": "course", "mode": {"type": "learn"}, "filter": {}, **spec}
    status, out = post(api, "/v2/create-adaptive-session", body, headers)
    assert status == 200, out
    assert set(out) == {"data"} and set(out["data"]) == {"session_context"}
    assert isinstance(out["data"]["session_context"], str)
    return out["data"]["session_context"]


def step(api: V2Api, context: str, events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"session_context": context}
    if events is not None:
        body["events"] = events
    status, out = post(api, "/v2/adaptive-engine", body)
    assert status == 200, out
    return out["data"]


def answer(rec: dict[str, Any], minute: float, score: float = 1.0, **extra: Any) -> dict[str, Any]:
    return {
        "type": "attempt",
        "timestamp": ts(minute),
        "recommendation_context": rec["recommendation_context"],
        "score": score,
        **extra,
    }


# -- create-adaptive-session ----------------------------------------------------------
def test_create_session_returns_an_opaque_context(api: V2Api) -> None:
    """What docs/sessions.md promises: a compact signed token (payload, then its MAC) that names
    the session only. The MAC is random bytes in base64, so the test looks at the payload, decoded:
    searching the whole token for "u1" fails now and then by chance."""
    first, second = create(api), create(api)
    assert first != second
    for context in (first, second):
        payload, mac = context.split(".")
        assert re.fullmatch(r"[A-Za-z0-9_-]+", payload) and re.fullmatch(r"[A-Za-z0-9_-]+", mac)
        decoded = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode("utf-8")
        # neither the user nor the catalog is in it (nor anything else of the session spec)
        assert "u1" not in decoded and "course" not in decoded and "learn" not in decoded
        assert set(json.loads(decoded)["p"]) == {"id"}


@pytest.mark.parametrize(
    ("spec", "status", "fragment"),
    [
        ({"catalog_id": "nope"}, 404, "catalog 'nope' not found"),
        ({"mode": {"type": "teach"}}, 400, "mode.type"),
        ({"filter": {"include_topic_ids": []}}, 400, "filter.include_topic_ids"),
        ({"filter": {"include_topic_ids": ["Z"]}}, 400, "unknown topic 'Z'"),
        ({"user_id": "bad id"}, 400, "user_id"),
        ({"stopping_conditions": {"max_proficiency": 1.5}}, 400, "stopping_conditions.max_proficiency"),
        ({"stopping_conditions": {"max_steps": 3}}, 400, "stopping_conditions.max_steps"),
        (
            {"constraints": [{"type": "max_recommendations", "value": 1, "filter": {}}] * 6},
            400,
            "at most 5 constraints",
        ),
        ({"constraints": [{"type": "max_repeats", "value": 1, "filter": {}}]}, 400, "constraints[0].type"),
    ],
)
def test_create_session_rejects_bad_specs(api: V2Api, spec: dict[str, Any], status: int, fragment: str) -> None:
    body = {"user_id": "u1", "catalog_id": "course", "mode": {"type": "learn"}, "filter": {}, **spec}
    got, out = post(api, "/v2/create-adaptive-session", body)
    assert got == status
    assert set(out) == {"error"} and out["error"]["status"] == status
    assert fragment in out["error"]["message"]


def test_session_filter_over_the_limit_is_rejected(make_engine: Callable[..., Engine]) -> None:
    engine = make_engine(seed=1, limits=Limits(max_session_filter_items=3))
    v2 = V2Api(engine, api_keys=None)
    v2.handle("POST", "/v2/upsert-items", body={"items": ITEMS})
    v2.handle("POST", "/v2/upsert-catalog", body=CATALOG)
    body = {"user_id": "u1", "catalog_id": "course", "mode": {"type": "learn"}, "filter": {}}
    r = v2.handle("POST", "/v2/create-adaptive-session", body=body)
    assert r.status == 400
    assert r.body == {
        "error": {
            "status": 400,
            "message": "the session filter matches 6 items; the limit 'items matched by a session filter' is 3",
        }
    }
    body["filter"] = {"include_topic_ids": ["B"]}
    assert v2.handle("POST", "/v2/create-adaptive-session", body=body).status == 200


# -- adaptive-engine -----------------------------------------------------------------------
def test_adaptive_engine_response_shape(api: V2Api) -> None:
    data = step(api, create(api))
    assert set(data) == {"recommendation", "user_status", "session_status"}
    rec = data["recommendation"]
    assert set(rec) == {"item_id", "topic_id", "recommendation_context", "reason"}
    assert set(rec["reason"]) == {"keyword", "description"}
    assert rec["reason"]["keyword"] in {
        "knowledge_retention",
        "observed_knowledge_gap",
        "predicted_knowledge_gap",
        "content_progression",
        "assessment",
        "exploration",
    }
    assert rec["reason"]["description"]
    assert data["user_status"] == {
        "progress": 0.0,
        "proficiency": data["user_status"]["proficiency"],
        "time_spent_ms": 0,
        "last_interaction_timestamp": None,
    }
    assert 0.0 < data["user_status"]["proficiency"] < 1.0
    assert data["session_status"] == {
        "stop_session": False,
        "satisfied_stopping_condition_keys": [],
        "interaction_count": 0,
        "duration_ms": 0,
    }


@pytest.mark.parametrize("store_kind", ["memory", "sqlite", "postgres"])  # PostgreSQL too
def test_events_update_status_and_session(api: V2Api, clock: SimClock) -> None:
    context = create(api, stopping_conditions={"max_interaction_count": 2})
    rec = step(api, context)["recommendation"]
    clock.advance(60)
    data = step(api, context, [answer(rec, 1, 1.0, time_spent_ms=1500)])
    assert data["session_status"] == {
        "stop_session": False,
        "satisfied_stopping_condition_keys": [],
        "interaction_count": 1,
        "duration_ms": 60_000,
    }
    assert data["user_status"]["time_spent_ms"] == 1500
    assert data["user_status"]["last_interaction_timestamp"] == "2025-03-01T09:01:00.000Z"
    assert data["user_status"]["progress"] == pytest.approx(1 / 6)
    rec2 = data["recommendation"]
    assert rec2["item_id"] != rec["item_id"]
    data = step(api, context, [answer(rec2, 2, 0.0)])
    assert data["session_status"]["stop_session"] is True
    assert data["session_status"]["satisfied_stopping_condition_keys"] == ["max_interaction_count"]
    assert data["session_status"]["interaction_count"] == 2
    assert data["recommendation"] is not None  # the engine keeps answering after a stop


def test_the_same_event_twice_changes_nothing(api: V2Api) -> None:
    context = create(api)
    rec = step(api, context)["recommendation"]
    event = answer(rec, 1, 1.0, time_spent_ms=700)
    once = step(api, context, [event])
    twice = step(api, context, [event])
    assert twice["session_status"]["interaction_count"] == once["session_status"]["interaction_count"] == 1
    assert twice["user_status"] == once["user_status"]


@pytest.mark.parametrize("store_kind", ["memory", "sqlite", "postgres"])  # PostgreSQL too
def test_the_most_recent_version_of_an_event_wins(api: V2Api) -> None:
    context = create(api)
    rec = step(api, context)["recommendation"]
    wrong = step(api, context, [answer(rec, 1, 0.0, time_spent_ms=100)])
    right = step(api, context, [answer(rec, 1, 1.0, time_spent_ms=100)])
    assert right["session_status"]["interaction_count"] == 1
    assert right["user_status"]["time_spent_ms"] == 100
    assert right["user_status"]["proficiency"] > wrong["user_status"]["proficiency"]


def test_forged_context_is_rejected(api: V2Api) -> None:
    context = create(api)
    payload, mac = context.split(".")
    forged = payload[:-2] + ("AA" if payload[-2:] != "AA" else "BB") + "." + mac
    status, out = post(api, "/v2/adaptive-engine", {"session_context": forged})
    assert status == 400
    assert out == {
        "error": {"status": 400, "message": "session_context: context signature does not verify (forged or altered)"}
    }
    status, out = post(api, "/v2/adaptive-engine", {"session_context": "garbage"})
    assert (status, out["error"]["message"]) == (400, "session_context: malformed context")


def test_context_of_another_application_is_rejected(api: V2Api) -> None:
    context = create(api, headers=OTHER)
    status, out = post(api, "/v2/adaptive-engine", {"session_context": context}, KEY)
    assert status == 400
    assert out["error"]["message"] == "session_context: context belongs to another application"


@pytest.mark.parametrize("store_kind", ["memory", "sqlite", "postgres"])  # PostgreSQL too
def test_stale_session_context(api: V2Api) -> None:
    context = create(api)
    assert post(api, "/v2/delete-catalog", {"catalog_id": "course"})[0] == 200
    status, out = post(api, "/v2/adaptive-engine", {"session_context": context})
    assert status == 404 and out["error"]["message"] == "catalog 'course' not found"


def test_recommendation_context_of_another_session_is_rejected_and_nothing_changes(api: V2Api) -> None:
    first, second = create(api), create(api)
    rec_other = step(api, second)["recommendation"]
    before = step(api, first)
    status, out = post(api, "/v2/adaptive-engine", {"session_context": first, "events": [answer(rec_other, 1)]})
    assert status == 400
    assert out["error"]["message"] == "events[0].recommendation_context: it belongs to another session"
    after = step(api, first)
    assert after["user_status"] == before["user_status"]
    assert after["session_status"]["interaction_count"] == 0


def test_a_session_context_is_not_a_recommendation_context(api: V2Api) -> None:
    context = create(api)
    event = {"type": "skip", "timestamp": ts(1), "recommendation_context": context}
    status, out = post(api, "/v2/adaptive-engine", {"session_context": context, "events": [event]})
    assert status == 400
    assert out["error"]["message"] == "events[0].recommendation_context: not a recommendation context"


@pytest.mark.parametrize("store_kind", ["memory", "sqlite", "postgres"])  # PostgreSQL too
def test_event_batch_is_atomic(api: V2Api) -> None:
    context = create(api)
    rec = step(api, context)["recommendation"]
    good = answer(rec, 1)
    missing_score = {"type": "attempt", "timestamp": ts(2), "recommendation_context": rec["recommendation_context"]}
    status, out = post(api, "/v2/adaptive-engine", {"session_context": context, "events": [good, missing_score]})
    assert status == 400
    assert out["error"]["message"] == f"events[1]: attempt on scorable item '{rec['item_id']}' needs a score"
    assert step(api, context)["session_status"]["interaction_count"] == 0


@pytest.mark.parametrize(
    ("event", "fragment"),
    [
        ({"type": "attempt", "timestamp": "yesterday", "score": 1}, "events[0].attempt.timestamp"),
        ({"type": "attempt", "timestamp": "2025-03-01T09:00:00Z", "score": 2}, "events[0].attempt.score"),
        ({"type": "jump", "timestamp": "2025-03-01T09:00:00Z"}, "events[0]"),
        ({"type": "skip", "timestamp": "2025-03-01T09:00:00Z", "score": 1}, "events[0].skip.score"),
        (
            {"type": "view_theory", "timestamp": "2025-03-01T09:00:00Z", "fraction_completed": -1},
            "events[0].view_theory.fraction_completed",
        ),
    ],
)
def test_malformed_events_name_the_field(api: V2Api, event: dict[str, Any], fragment: str) -> None:
    context = create(api)
    event = {**event, "recommendation_context": "x.y"}
    status, out = post(api, "/v2/adaptive-engine", {"session_context": context, "events": [event]})
    assert status == 400
    assert fragment in out["error"]["message"]


def test_no_eligible_item_gives_a_null_recommendation(api: V2Api) -> None:
    context = create(api, filter={"include_tags": ["nothing-has-this-tag"]})
    data = step(api, context)
    assert data["recommendation"] is None
    assert data["user_status"] == {
        "progress": 0.0,
        "proficiency": None,
        "time_spent_ms": 0,
        "last_interaction_timestamp": None,
    }
    assert data["session_status"]["stop_session"] is False


def test_constraint_is_never_violated_then_recommendation_is_null(api: V2Api) -> None:
    constraint = {"type": "max_recommendations", "value": 2, "filter": {}}
    context = create(api, constraints=[constraint])
    seen = [step(api, context)["recommendation"], step(api, context)["recommendation"]]
    assert all(r is not None for r in seen)
    assert step(api, context)["recommendation"] is None


def test_constraint_over_a_sub_filter(api: V2Api) -> None:
    constraint = {"type": "max_recommendations", "value": 0, "filter": {"include_topic_ids": ["A"]}}
    context = create(api, constraints=[constraint])
    items = {step(api, context)["recommendation"]["item_id"] for _ in range(6)}
    assert items <= {"b1", "b2"}


def test_max_proficiency_and_duration_conditions(api: V2Api, clock: SimClock) -> None:
    context = create(api, stopping_conditions={"max_proficiency": 0.01, "max_duration_ms": 120_000})
    data = step(api, context)
    assert data["session_status"]["satisfied_stopping_condition_keys"] == ["max_proficiency"]
    clock.advance(121)
    data = step(api, context)
    assert data["session_status"]["stop_session"] is True
    assert data["session_status"]["satisfied_stopping_condition_keys"] == ["max_proficiency", "max_duration_ms"]
    assert data["session_status"]["duration_ms"] == 121_000


def test_session_filter_bounds_recommendations_and_status(api: V2Api) -> None:
    context = create(api, filter={"include_topic_ids": ["B"]})
    for _ in range(4):
        data = step(api, context)
        assert data["recommendation"]["topic_id"] == "B"
        assert data["recommendation"]["item_id"] in {"b1", "b2"}


# -- user-status and upsert-events -----------------------------------------------------------
@pytest.mark.parametrize("store_kind", ["memory", "sqlite", "postgres"])  # PostgreSQL too
def test_upsert_events_and_user_status(api: V2Api) -> None:
    events = [
        {
            "type": "attempt",
            "item_id": "a1",
            "catalog_id": "course",
            "timestamp": ts(1),
            "score": 1,
            "time_spent_ms": 1000,
        },
        {
            "type": "view_theory",
            "item_id": "ta",
            "catalog_id": "course",
            "timestamp": ts(2),
            "fraction_completed": 0.5,
            "time_spent_ms": 3000,
        },
        {"type": "skip", "item_id": "b1", "topic_id": "B", "catalog_id": "course", "timestamp": ts(3)},
    ]
    assert post(api, "/v2/upsert-events", {"user_id": "u9", "events": events}) == (200, {"data": {}})
    filters = [{}, {"include_topic_ids": ["A"]}, {"include_content_types": ["theory"]}, {"include_item_ids": ["b2"]}]
    status, out = post(api, "/v2/user-status", {"user_id": "u9", "catalog_id": "course", "filter_list": filters})
    assert status == 200
    assert set(out) == {"data"} and set(out["data"]) == {"user_status_list"}
    whole, topic_a, theory, untouched = out["data"]["user_status_list"]
    assert whole["progress"] == pytest.approx((1 + 0.5 + 0) / 6)
    assert whole["time_spent_ms"] == 4000
    assert whole["last_interaction_timestamp"] == "2025-03-01T09:03:00.000Z"
    assert topic_a["progress"] == pytest.approx(1.5 / 4)
    assert topic_a["last_interaction_timestamp"] == "2025-03-01T09:02:00.000Z"
    assert theory == {
        "progress": 0.5,
        "proficiency": None,
        "time_spent_ms": 3000,
        "last_interaction_timestamp": "2025-03-01T09:02:00.000Z",
    }
    assert untouched["progress"] == 0.0 and untouched["time_spent_ms"] == 0
    assert untouched["last_interaction_timestamp"] is None
    # the same events again change nothing
    assert post(api, "/v2/upsert-events", {"user_id": "u9", "events": events})[0] == 200
    again = post(api, "/v2/user-status", {"user_id": "u9", "catalog_id": "course", "filter_list": filters})[1]
    assert again == out


def test_user_status_of_a_new_learner_and_per_application(api: V2Api) -> None:
    event = {"type": "attempt", "item_id": "a1", "catalog_id": "course", "timestamp": ts(1), "score": 1}
    post(api, "/v2/upsert-events", {"user_id": "u1", "events": [event]})
    mine = post(api, "/v2/user-status", {"user_id": "u1", "catalog_id": "course", "filter_list": [{}]})[1]
    theirs = post(api, "/v2/user-status", {"user_id": "u1", "catalog_id": "course", "filter_list": [{}]}, OTHER)[1]
    assert mine["data"]["user_status_list"][0]["progress"] > 0
    assert theirs["data"]["user_status_list"][0]["progress"] == 0.0


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ({"item_id": "zz", "catalog_id": "course"}, "events[0]: item 'zz' is not in catalog 'course'"),
        ({"item_id": "a1", "catalog_id": "nope"}, "events[0]: unknown catalog 'nope'"),
        ({"item_id": "a1", "catalog_id": "course", "topic_id": "B"}, "events[0]: item 'a1' is not in topic 'B'"),
        (
            {"item_id": "a1", "catalog_id": "course", "topic_id": "Q"},
            "events[0]: unknown topic 'Q' in catalog 'course'",
        ),
    ],
)
def test_upsert_events_rejects_unknown_references(api: V2Api, event: dict[str, Any], message: str) -> None:
    body = {"user_id": "u1", "events": [{"type": "attempt", "timestamp": ts(1), "score": 1, **event}]}
    assert post(api, "/v2/upsert-events", body) == (400, {"error": {"status": 400, "message": message}})


def test_upsert_events_is_atomic(api: V2Api) -> None:
    good = {"type": "attempt", "item_id": "a1", "catalog_id": "course", "timestamp": ts(1), "score": 1}
    bad = {"type": "attempt", "item_id": "a2", "catalog_id": "course", "timestamp": ts(2)}
    status, out = post(api, "/v2/upsert-events", {"user_id": "u1", "events": [good, bad]})
    assert status == 400 and out["error"]["message"] == "events[1]: attempt on scorable item 'a2' needs a score"
    status, out = post(api, "/v2/user-status", {"user_id": "u1", "catalog_id": "course", "filter_list": [{}]})
    assert out["data"]["user_status_list"][0]["progress"] == 0.0


def test_upsert_events_limit(make_engine: Callable[..., Engine]) -> None:
    engine = make_engine(seed=1, limits=Limits(max_events_per_call=2))
    v2 = V2Api(engine)
    v2.handle("POST", "/v2/upsert-items", body={"items": ITEMS})
    v2.handle("POST", "/v2/upsert-catalog", body=CATALOG)
    event = {"type": "skip", "item_id": "a1", "catalog_id": "course"}
    events = [{**event, "timestamp": ts(i)} for i in range(3)]
    r = v2.handle("POST", "/v2/upsert-events", body={"user_id": "u", "events": events})
    assert r.status == 413
    assert r.body == {"error": {"status": 413, "message": "limit 'events per call' exceeded: 3 > 2"}}


def test_user_status_requires_its_fields(api: V2Api) -> None:
    status, out = post(api, "/v2/user-status", {"user_id": "u1", "catalog_id": "course"})
    assert status == 400 and "'filter_list' is required" in out["error"]["message"]
    status, out = post(api, "/v2/user-status", {"user_id": "u1", "catalog_id": "nope", "filter_list": [{}]})
    assert (status, out["error"]["message"]) == (404, "catalog 'nope' not found")


def test_sessions_survive_a_restart(tmp_path: Any, clock: SimClock) -> None:
    path = tmp_path / "state.db"
    engine = Engine.open(path, seed=3, clock=clock)
    v2 = V2Api(engine)
    v2.handle("POST", "/v2/upsert-items", body={"items": ITEMS})
    v2.handle("POST", "/v2/upsert-catalog", body=CATALOG)
    body = {"user_id": "u1", "catalog_id": "course", "mode": {"type": "learn"}, "filter": {}}
    context = v2.handle("POST", "/v2/create-adaptive-session", body=body).body["data"]["session_context"]
    rec = v2.handle("POST", "/v2/adaptive-engine", body={"session_context": context}).body["data"]["recommendation"]
    first = v2.handle("POST", "/v2/adaptive-engine", body={"session_context": context, "events": [answer(rec, 1)]})
    engine.close()
    reopened = V2Api(Engine.open(path, seed=3, clock=clock))
    again = reopened.handle("POST", "/v2/adaptive-engine", body={"session_context": context})
    assert again.status == 200
    assert again.body["data"]["session_status"]["interaction_count"] == 1
    assert again.body["data"]["user_status"] == first.body["data"]["user_status"]
    reopened.engine.close()
