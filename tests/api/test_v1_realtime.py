"""The v1 real-time endpoints: user events, next assets and user status, with exact bodies."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import pytest

from learnloop import Engine
from learnloop._http import ApiResponse
from learnloop.api import V1Api, V1Limits
from learnloop.store import TABLES

LINK = "https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/{}"
NOW = datetime(2024, 5, 1, 12, tzinfo=UTC)
LEARNER = {"id": "u1", "type": "learner"}


def errors(status: int, *details: str) -> dict[str, Any]:
    return {"errors": [{"status": status, "detail": d, "link": LINK.format(status)} for d in details]}


@pytest.fixture
def engine(make_engine: Any) -> Engine:
    return make_engine(seed=11, clock=lambda: NOW)


@pytest.fixture
def api(engine: Engine) -> V1Api:
    api = V1Api(engine)
    assets = [{"id": f"q{i}", "type": "exercise"} for i in range(1, 7)] + [{"id": "t1", "type": "theory"}]
    assert api.handle("PUT", "/v1/assets", body={"assets": assets}).status == 200
    view = {
        "name": "Course",
        "path": "/c",
        "ordered": True,
        "assets": [
            {"asset_id": "t1", "path": "/c/u1"},
            {"asset_id": "q1", "path": "/c/u1", "attributes": {"partner_difficulty": 0.2}},
            {"asset_id": "q2", "path": "/c/u1", "attributes": {"partner_difficulty": 0.4}},
            {"asset_id": "q3", "path": "/c/u2"},
            {"asset_id": "q4", "path": "/c/u2"},
        ],
    }
    assert api.handle("PUT", "/v1/views/course", body=view).status == 200
    return api


def post(api: V1Api, path: str, body: Any) -> ApiResponse:
    return api.handle("POST", path, body=body)


def answer(asset_id: str, result: str, minute: int, *, user: dict[str, str] = LEARNER, **extra: Any) -> dict[str, Any]:
    attributes = {
        "view_id": "course",
        "asset_id": asset_id,
        "result": result,
        **extra.pop("attributes", {}),
    }
    return {
        "user": user,
        "type": "response_submit",
        "timestamp": f"2024-05-01T10:{minute:02d}:00Z",
        "attributes": attributes,
        **extra,
    }


def snapshot(engine: Engine) -> dict[str, list[Any]]:
    return {t: list(engine.store.scan(t, "default")) for t in TABLES}


def stored_events(engine: Engine) -> list[tuple[tuple[str, ...], Any]]:
    return list(engine.store.scan("events", "default"))


OK_EVENTS = {"duplicate_events": [], "warnings": []}


# -- user events ----------------------------------------------------------------------------------


@pytest.mark.parametrize("store_kind", ["memory", "sqlite", "postgres"])  # PostgreSQL too
def test_events_become_core_interactions(api: V1Api, engine: Engine) -> None:
    events = [
        answer("q1", "correct", 1, attributes={"time_spent_ms": 900}),
        answer("q2", "incorrect", 2),
        answer("q3", "partially_correct", 3, attributes={"score": 0.3}),
        answer("q4", "partially_correct", 4),
        answer("q1", "skipped", 5),
        {
            "user": LEARNER,
            "type": "theory_viewed",
            "timestamp": "2024-05-01T10:06:00Z",
            "attributes": {
                "view_id": "course",
                "asset_id": "t1",
                "fraction_completed": 0.5,
                "time_spent_ms": 20,
            },
        },
    ]
    r = post(api, "/v1/user-events", {"user_events": events})
    assert (r.status, r.body) == (200, OK_EVENTS)
    got = [
        (k[2], d["kind"], d.get("score"), d.get("time_spent_ms"), d.get("fraction_completed"))
        for k, d in stored_events(engine)
    ]
    assert sorted(got) == sorted(
        [
            ("q1", "attempt", 1.0, 900, None),
            ("q2", "attempt", 0.0, None, None),
            ("q3", "attempt", 0.3, None, None),
            ("q4", "attempt", 0.5, None, None),
            ("q1", "skip", None, None, None),
            ("t1", "view_theory", None, 20, 0.5),
        ]
    )
    assert engine.documents("v1.users", ["u1"]).get("u1") == {"id": "u1", "type": "learner"}


def test_an_invalid_online_event_fails_the_whole_batch(api: V1Api, engine: Engine) -> None:
    before = snapshot(engine)
    events = [
        answer("q1", "correct", 1),
        answer("q5", "correct", 2),
        answer("q1", "correct", 3, attributes={"view_id": "nope"}),
        {
            "user": LEARNER,
            "type": "theory_viewed",
            "timestamp": "2024-05-01T10:04:00Z",
            "attributes": {"view_id": "course", "asset_id": "q1"},
        },
        answer("t1", "correct", 5),
        answer("q1", "great", 6),
        answer("q1", "correct", 7, timestamp="yesterday"),
        answer("q1", "correct", 8, attributes={"score": 1.5}),
        answer("q1", "correct", 9, metadata={"a": [1]}),
    ]
    events[6]["timestamp"] = "yesterday"
    r = post(api, "/v1/user-events", {"user_events": events})
    assert r.body == errors(
        400,
        "'user_events[1].attributes.asset_id': asset 'q5' is not in view 'course'",
        "'user_events[2].attributes.view_id': view 'nope' not found",
        "'user_events[3]': asset 'q1' is an exercise; theory_viewed needs a theory asset",
        "'user_events[4]': asset 't1' is a theory asset; response_submit needs an exercise",
        "'user_events[5].attributes.result': input should be 'correct', 'incorrect', 'partially_correct' or "
        "'skipped', got 'great'",
        "'user_events[6].timestamp' not an ISO 8601 timestamp: 'yesterday'",
        "'user_events[7].attributes.score': input should be less than or equal to 1, got 1.5",
        "'user_events[8].metadata.a' must be a String or a Number, got list",
    )
    assert snapshot(engine) == before


def test_an_invalid_offline_event_is_a_warning_and_not_consumed(api: V1Api, engine: Engine) -> None:
    events = [
        answer("q1", "correct", 1),
        answer("q5", "correct", 2, is_offline_event=True),
        answer("q2", "bad", 3, is_offline_event=True),
    ]
    r = post(api, "/v1/user-events", {"user_events": events})
    assert (r.status, r.body) == (
        200,
        {
            "duplicate_events": [],
            "warnings": [
                "'user_events[1].attributes.asset_id': asset 'q5' is not in view 'course'",
                (
                    "'user_events[2].attributes.result': input should be 'correct', 'incorrect', "
                    "'partially_correct' or 'skipped', got 'bad'"
                ),
            ],
        },
    )
    assert [k[2] for k, _ in stored_events(engine)] == ["q1"]


def test_offline_duplicates_are_reported_and_not_consumed(api: V1Api, engine: Engine) -> None:
    post(api, "/v1/user-events", {"user_events": [answer("q1", "correct", 1)]})
    events = [
        answer("q1", "incorrect", 1, is_offline_event=True),  # same key as a stored event
        answer("q2", "correct", 2, is_offline_event=True),
        answer("q2", "incorrect", 2, is_offline_event=True),  # same key earlier in this call
        {
            **answer("q3", "correct", 3),
            "timestamp": "2024-05-01T12:03:00+02:00",
            "is_offline_event": False,
        },
        {
            **answer("q3", "incorrect", 3),
            "timestamp": "2024-05-01T10:03:00.000Z",
            "is_offline_event": True,
        },
    ]
    r = post(api, "/v1/user-events", {"user_events": events})
    dup = [
        {"asset_id": "q1", "asset_type": "exercise"},
        {"asset_id": "q2", "asset_type": "exercise"},
        {"asset_id": "q3", "asset_type": "exercise"},
    ]
    assert (r.status, r.body) == (200, {"duplicate_events": dup, "warnings": []})
    scores = {k[2]: d["score"] for k, d in stored_events(engine)}
    assert scores == {"q1": 1.0, "q2": 1.0, "q3": 1.0}
    # online events are not checked for duplicates: the same key overwrites
    r = post(api, "/v1/user-events", {"user_events": [answer("q1", "incorrect", 1)]})
    assert r.body == OK_EVENTS
    assert {k[2]: d["score"] for k, d in stored_events(engine)}["q1"] == 0.0


@pytest.mark.parametrize("store_kind", ["memory", "sqlite", "postgres"])  # PostgreSQL too
def test_an_event_batch_is_atomic_when_the_store_fails(
    api: V1Api, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(engine)
    real = engine.upsert_events
    calls = []

    def second_user_fails(user_id: str, events: Any, *, app: str) -> int:
        calls.append(user_id)
        if len(calls) == 2:
            raise OSError("disk full")
        return real(user_id, events, app=app)

    monkeypatch.setattr(engine, "upsert_events", second_user_fails)
    two_users = [
        answer("q1", "correct", 1),
        answer("q1", "correct", 1, user={"id": "u2", "type": "tester"}),
    ]
    with pytest.raises(OSError):
        post(api, "/v1/user-events", {"user_events": two_users})
    assert calls == ["u1", "u2"]
    assert snapshot(engine) == before


def test_events_per_call_limit(engine: Engine, api: V1Api) -> None:
    big = V1Api(engine, limits=V1Limits(request_bytes=1 << 22))
    events = [
        answer("q1", "correct", 0) | {"timestamp": f"2024-05-01T10:00:{i // 100:02d}.{i % 100:03d}Z"}
        for i in range(1001)
    ]
    assert post(big, "/v1/user-events", {"user_events": events}).body == errors(
        400, "'user_events' holds 1001 events; at most 1000 per call"
    )
    assert post(big, "/v1/user-events", {"user_events": events[:1000]}).body == OK_EVENTS
    assert len(stored_events(engine)) == 1000


# -- next assets ----------------------------------------------------------------------------------


def next_body(**fields: Any) -> dict[str, Any]:
    body = {
        "user": LEARNER,
        "view_id": "course",
        "filter": {"asset_types": ["exercise", "theory"], "paths": ["/c"]},
        "mode": {"type": "learn"},
        "limit": 3,
    }
    return {**body, **fields}


def test_next_assets_is_the_core_sequence_in_v1_terms(api: V1Api, engine: Engine) -> None:
    r = post(api, "/v1/next-assets", next_body(limit=5))
    assert r.status == 200 and r.body["duplicate_events"] == [] and r.body["warnings"] == []
    expected = engine.next_items("u1", "course", mode="learn", limit=5)
    kinds = {"t1": "theory"}
    assert r.body["data"] == [{"asset_id": s.item_id, "asset_type": kinds.get(s.item_id, "exercise")} for s in expected]
    # no repeats while content remains: 5 distinct assets, then it starts over
    ids = [a["asset_id"] for a in post(api, "/v1/next-assets", next_body(limit=7)).body["data"]]
    assert len(set(ids[:5])) == 5 and set(ids) == {"t1", "q1", "q2", "q3", "q4"}
    assert engine.documents("v1.users", ["u1"]).get("u1") == LEARNER


def test_an_ordered_view_is_served_in_its_order(api: V1Api) -> None:
    body = next_body(filter={"asset_types": ["exercise"], "paths": ["/c"]}, limit=4)
    ids = [a["asset_id"] for a in post(api, "/v1/next-assets", body).body["data"]]
    assert ids == ["q1", "q2", "q3", "q4"]


def test_the_filter_selects_by_type_path_and_tag(api: V1Api) -> None:
    api.handle(
        "PUT",
        "/v1/assets/q3",
        body={"type": "exercise", "tags": [{"name": "level", "value": "hard"}]},
    )
    pick = lambda flt: sorted(
        a["asset_id"] for a in post(api, "/v1/next-assets", next_body(filter=flt, limit=5)).body["data"]
    )
    assert pick({"asset_types": ["theory"], "paths": ["/"]}) == ["t1"] * 5
    assert pick({"asset_types": ["exercise"], "paths": ["/c/u2/"]}) == [
        "q3",
        "q3",
        "q3",
        "q4",
        "q4",
    ]
    assert (
        pick(
            {
                "asset_types": ["exercise"],
                "paths": ["/c"],
                "tags": [{"name": "level", "value": "hard"}],
            }
        )
        == ["q3"] * 5
    )
    assert pick({"asset_types": ["exercise"], "paths": ["/c/u3"]}) == []


def test_embedded_events_are_ingested_first(api: V1Api, engine: Engine) -> None:
    events = [answer("q1", "correct", 1), answer("q9", "correct", 2, is_offline_event=True)]
    r = post(api, "/v1/next-assets", next_body(user_events=events, limit=1))
    assert r.body["warnings"] == ["'user_events[1].attributes.asset_id': asset 'q9' is not in view 'course'"]
    assert [k[2] for k, _ in stored_events(engine)] == ["q1"]
    assert r.body["data"] == [
        {"asset_id": s.item_id, "asset_type": "exercise"}
        for s in engine.next_items("u1", "course", mode="learn", limit=1)
    ]
    again = post(
        api,
        "/v1/next-assets",
        next_body(user_events=[answer("q1", "correct", 1, is_offline_event=True)]),
    )
    assert again.body["duplicate_events"] == [{"asset_id": "q1", "asset_type": "exercise"}]


def test_next_assets_errors(api: V1Api, engine: Engine) -> None:
    before = snapshot(engine)
    assert post(api, "/v1/next-assets", next_body(view_id="nope")).body == errors(404, "view 'nope' not found")
    assert post(api, "/v1/next-assets", next_body(limit=0)).body == errors(400, "'limit' must be from 1 to 1000, got 0")
    assert post(api, "/v1/next-assets", next_body(limit=1001)).status == 400
    assert post(api, "/v1/next-assets", next_body(mode={"type": "assess"})).body == errors(
        400, "invalid request: 'mode.type': input should be 'learn' or 'review', got 'assess'"
    )
    assert post(api, "/v1/next-assets", next_body(filter={"asset_types": [], "paths": ["/c"]})).body == errors(
        400,
        "invalid request: 'filter.asset_types': tuple should have at least 1 item after validation, not 0, got list",
    )
    assert post(api, "/v1/next-assets", next_body(filter={"asset_types": ["exercise"]})).body == errors(
        400, "invalid request: 'filter.paths' is required"
    )
    # a list whose only element is wrong is reported by that element, not as an empty list too
    assert post(api, "/v1/next-assets", next_body(filter={"asset_types": ["video"], "paths": ["c"]})).body == errors(
        400,
        "invalid request: 'filter.asset_types[0]': input should be 'exercise' or 'theory', got 'video'",
        "invalid request: 'filter.paths[0]' a path must start with '/', got 'c'",
    )
    bad_event = post(
        api,
        "/v1/next-assets",
        next_body(user_events=[answer("q1", "correct", 1), answer("q9", "correct", 2)]),
    )
    assert bad_event.body == errors(400, "'user_events[1].attributes.asset_id': asset 'q9' is not in view 'course'")
    # nothing was consumed, not even the valid event nor the user
    assert snapshot(engine) == before


def test_review_mode_serves_what_is_due_most_overdue_first(api: V1Api) -> None:
    month_ago = [answer("q1", "incorrect", 1), answer("q3", "correct", 2)]
    for event in month_ago:
        event["timestamp"] = event["timestamp"].replace("2024-05-01", "2024-04-01")
    post(api, "/v1/user-events", {"user_events": month_ago})
    r = post(
        api,
        "/v1/next-assets",
        next_body(mode={"type": "review", "attributes": {"anything": 1}}, limit=3),
    )
    # only the two exercises answered, the lapse (lower stability, lower recall) first; nothing unseen
    assert r.status == 200 and r.body["data"] == [
        {"asset_id": "q1", "asset_type": "exercise"},
        {"asset_id": "q3", "asset_type": "exercise"},
    ]
    assert "nothing_due" not in r.body


def test_review_mode_with_nothing_due_says_so_and_when(api: V1Api) -> None:
    new = post(api, "/v1/next-assets", next_body(mode={"type": "review"}))
    assert new.status == 200 and new.body["data"] == []
    assert new.body["nothing_due"]["reason"]["keyword"] == "nothing_due"
    assert new.body["nothing_due"]["next_due_at"] is None and new.body["nothing_due"]["next_asset_id"] is None
    post(api, "/v1/user-events", {"user_events": [answer("q3", "correct", 1)]})  # two hours before NOW
    r = post(api, "/v1/next-assets", next_body(mode={"type": "review"}))
    assert r.status == 200 and r.body["data"] == []
    idle = r.body["nothing_due"]
    # a first right answer: stability 3.7145 days, recall 0.9 after exactly that
    assert idle["next_asset_id"] == "q3" and idle["next_due_at"] == "2024-05-05T03:09:52.800Z"  # 10:01 + 3.7145 d
    assert "nothing due: the 1 items met are recalled at 0.90 or above" in idle["reason"]["description"]


# -- status ----------------------------------------------------------------------------------------


def test_user_filter_status_is_the_core_status_over_the_filter(api: V1Api, engine: Engine) -> None:
    post(
        api,
        "/v1/user-events",
        {"user_events": [answer("q1", "correct", 1), answer("q3", "incorrect", 2)]},
    )
    filters = [{"paths": ["/c/u1"]}, {"asset_types": ["exercise"]}, {}, {"paths": ["/elsewhere"]}]
    r = post(api, "/v1/user-filter-status", {"user_id": "u1", "view_id": "course", "filters": filters})
    assert r.status == 200
    index = engine.catalog_index("course")
    masks = [
        [index.topic_ids[t].startswith("t:c:u1") for t in index.item_topic],
        list(index.scorable),
        [True] * index.n_items,
        [False] * index.n_items,
    ]
    import numpy as np

    core = engine.status_v1("u1", "course", [np.array(m) for m in masks])
    assert r.body == {
        "data": [{"skill_level": s.skill_level, "display_skill": s.display_skill, "progress": s.progress} for s in core]
    }
    u1, exercises, everything, nothing = r.body["data"]
    assert u1["progress"] == pytest.approx(1 / 3) and exercises["progress"] == pytest.approx(2 / 4)
    assert everything["display_skill"] == pytest.approx(everything["skill_level"] * math.sqrt(everything["progress"]))
    assert nothing == {"skill_level": 0.0, "display_skill": 0.0, "progress": 0.0}
    assert post(api, "/v1/user-filter-status", {"user_id": "u1", "view_id": "course", "filters": []}).body == {
        "data": []
    }


def test_user_status_by_view_paths(api: V1Api) -> None:
    post(api, "/v1/user-events", {"user_events": [answer("q3", "correct", 1)]})
    r = api.handle(
        "GET",
        "/v1/user-status",
        query={"user_id": "u1", "view_id": "course", "view_paths": ["/c/u2,/c", "/c/u1"]},
    )
    assert r.status == 200
    statuses = {d["view_path"]: d["status"] for d in r.body["data"]}
    assert [d["view_path"] for d in r.body["data"]] == ["/c/u2", "/c", "/c/u1"]
    assert all(d["user_id"] == "u1" for d in r.body["data"])
    assert (
        statuses["/c/u2"]["progress"],
        statuses["/c"]["progress"],
        statuses["/c/u1"]["progress"],
    ) == (0.5, 0.2, 0.0)
    filtered = post(
        api,
        "/v1/user-filter-status",
        {"user_id": "u1", "view_id": "course", "filters": [{"paths": ["/c/u2"]}]},
    )
    assert filtered.body["data"][0] == statuses["/c/u2"]


def test_status_errors(api: V1Api) -> None:
    get = lambda **q: api.handle("GET", "/v1/user-status", query=q).body
    assert get(user_id="u1", view_id="course") == errors(400, "query parameter 'view_paths' is required")
    assert get(user_id="u1", view_id="nope", view_paths="/") == errors(404, "view 'nope' not found")
    assert get(user_id="u1", view_id="course", view_paths="c") == errors(400, "'view_paths': 'c' must start with '/'")
    assert get(user_id=["u1", "u2"], view_id="course", view_paths="/") == errors(
        400, "query parameter 'user_id' must be given once, got 2 values"
    )
    r = post(
        api,
        "/v1/user-filter-status",
        {"user_id": "u1", "view_id": "course", "filters": [{"tags": []}]},
    )
    assert r.status == 400


# -- testers ---------------------------------------------------------------------------------------


def test_testers_are_served_but_kept_out_of_calibration(api: V1Api, engine: Engine) -> None:
    tester = {"id": "qa", "type": "tester", "test_cell": "B"}
    events = [answer("q1", "incorrect", m, user=tester) for m in range(1, 2)]
    events += [answer(q, "incorrect", 10 + i, user=tester) for i, q in enumerate(["q2", "q3", "q4"])]
    events += [answer(q, "correct", 20 + i) for i, q in enumerate(["q1", "q2"])]
    assert post(api, "/v1/user-events", {"user_events": events}).body == OK_EVENTS
    assert engine.documents("v1.users", ["qa"]).get("qa") == tester
    assert post(api, "/v1/next-assets", next_body(user=tester)).status == 200
    assert api.testers() == ["qa"]
    fit = api.calibrate("course")
    # only the learner's answers enter the fit: q3 and q4 were answered by the tester alone
    assert sorted(fit) == ["q1", "q2"] and all(v["n"] == 1 for v in fit.values())
