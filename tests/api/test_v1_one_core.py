"""One core, two dialects: a learner driven through v1 and through v2 is the same learner.

Two engines with the same seed and clock receive the same course, one through
``V1Api`` (assets and a view), one through ``V2Api`` (items and a catalog
written by hand, with topic ids of its own); the same answers are posted to
both; the recommended sequences and the status figures must be identical.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from learnloop import Engine
from learnloop.api import V1Api, V2Api

NOW = datetime(2024, 5, 1, 12, tzinfo=UTC)
H = {"X-API-KEY": "k"}
USER = {"id": "ada", "type": "learner"}

# the course: unit 1 (a theory section and three exercises) then unit 2 (three exercises)
UNITS = {
    "u1": [("t1", None), ("q1", 0.2), ("q2", 0.5), ("q3", 0.7)],
    "u2": [("q4", 0.3), ("q5", 0.5), ("q6", None)],
}


def v1_course(api: V1Api) -> None:
    assets = [{"id": a, "type": "theory" if a.startswith("t") else "exercise"} for u in UNITS.values() for a, _ in u]
    assert api.handle("PUT", "/v1/assets", body={"assets": assets}, headers=H).status == 200
    view_items = [
        {
            "asset_id": a,
            "path": f"/algebra/{unit}",
            **({"attributes": {"partner_difficulty": d}} if d is not None else {}),
        }
        for unit, entries in UNITS.items()
        for a, d in entries
    ]
    view = {"name": "Algebra", "path": "/algebra", "ordered": True, "assets": view_items}
    assert api.handle("PUT", "/v1/views/algebra", body=view, headers=H).status == 200


def v2_course(api: V2Api) -> None:
    items = [
        {
            "item_id": a,
            "display_name": a,
            "scorable": not a.startswith("t"),
            "content_type": "theory" if a.startswith("t") else "exercise",
        }
        for u in UNITS.values()
        for a, _ in u
    ]
    assert api.handle("POST", "/v2/upsert-items", body={"items": items}, headers=H).status == 200
    refs = lambda unit: [{"item_id": a, **({"difficulty": d} if d is not None else {})} for a, d in UNITS[unit]]
    catalog = {
        "catalog_id": "algebra",
        "display_name": "Algebra",
        "topics": [
            {
                "topic_id": "course",
                "display_name": "Course",
                "child_topic_refs": [{"topic_id": "algebra"}],
            },
            {
                "topic_id": "algebra",
                "display_name": "Algebra",
                "child_topic_refs": [{"topic_id": "unit-1"}, {"topic_id": "unit-2"}],
            },
            {"topic_id": "unit-1", "display_name": "Unit 1", "item_refs": refs("u1")},
            {"topic_id": "unit-2", "display_name": "Unit 2", "item_refs": refs("u2")},
        ],
    }
    assert api.handle("POST", "/v2/upsert-catalog", body=catalog, headers=H).status == 200


def knows(asset_id: str, attempt: int) -> bool:
    """The simulated learner: fails the harder exercises at first, then learns them."""
    return asset_id in {"q1", "q4"} or attempt >= 3


@pytest.mark.parametrize("mode", ["learn", "review"])
def test_the_same_learner_through_v1_and_v2_gets_the_same_recommendations_and_status(
    mode: str,
) -> None:
    one = Engine(seed=5, clock=lambda: NOW)
    two = Engine(seed=5, clock=lambda: NOW)
    v1 = V1Api(one, api_keys={"k": "school"})
    v2 = V2Api(two, api_keys={"k": "school"})
    v1_course(v1)
    v2_course(v2)
    flt = {"asset_types": ["exercise", "theory"], "paths": ["/algebra"]}
    pending: list[dict[str, Any]] = []
    if mode == "review":  # review serves what was answered: every exercise, a month before
        pending = [
            {
                "user": USER,
                "type": "response_submit",
                "timestamp": f"2024-04-01T10:0{k}:00Z",
                "attributes": {"view_id": "algebra", "asset_id": a, "result": "correct"},
            }
            for k, a in enumerate(["q1", "q2", "q3", "q4", "q5", "q6"])
        ]
    seen: list[str] = []
    for step in range(12):
        body = {
            "user": USER,
            "view_id": "algebra",
            "filter": flt,
            "mode": {"type": mode},
            "limit": 3,
            "user_events": pending,
        }
        r = v1.handle("POST", "/v1/next-assets", body=body, headers=H)
        assert r.status == 200 and r.body["warnings"] == [] and r.body["duplicate_events"] == []
        v2_events = [
            {
                "type": "view_theory" if e["type"] == "theory_viewed" else "attempt",
                "item_id": e["attributes"]["asset_id"],
                "catalog_id": "algebra",
                "timestamp": e["timestamp"],
                **(
                    {"score": 1.0 if e["attributes"]["result"] == "correct" else 0.0}
                    if e["type"] == "response_submit"
                    else {}
                ),
            }
            for e in pending
        ]
        if v2_events:
            assert v2.handle("POST", "/v2/upsert-events", body={"user_id": "ada", "events": v2_events}, headers=H).ok
        expected = two.next_items("ada", "algebra", mode=mode, limit=3, app="school")
        got = [a["asset_id"] for a in r.body["data"]]
        assert got == [s.item_id for s in expected], f"step {step}"
        if not got:  # review: nothing due any more (one answer reviews its unit's memory)
            assert mode == "review" and step > 0
            break
        # the learner works on the first recommended asset
        asset_id = got[0]
        seen.append(asset_id)
        timestamp = f"2024-05-01T10:{step:02d}:00Z"
        if asset_id.startswith("t"):
            event = {
                "user": USER,
                "type": "theory_viewed",
                "timestamp": timestamp,
                "attributes": {"view_id": "algebra", "asset_id": asset_id},
            }
        else:
            result = "correct" if knows(asset_id, seen.count(asset_id)) else "incorrect"
            event = {
                "user": USER,
                "type": "response_submit",
                "timestamp": timestamp,
                "attributes": {"view_id": "algebra", "asset_id": asset_id, "result": result},
            }
        pending = [event]

        # the status of both dialects, over the same selections
        status_v1 = v1.handle(
            "POST",
            "/v1/user-filter-status",
            headers=H,
            body={
                "user_id": "ada",
                "view_id": "algebra",
                "filters": [
                    {},
                    {"paths": ["/algebra/u1"]},
                    {"paths": ["/algebra/u2"], "asset_types": ["exercise"]},
                ],
            },
        )
        status_v2 = v2.handle(
            "POST",
            "/v2/user-status",
            headers=H,
            body={
                "user_id": "ada",
                "catalog_id": "algebra",
                "filter_list": [
                    {},
                    {"include_topic_ids": ["unit-1"]},
                    {"include_topic_ids": ["unit-2"], "include_content_types": ["exercise"]},
                ],
            },
        )
        for a, b in zip(status_v1.body["data"], status_v2.body["data"]["user_status_list"], strict=True):
            assert a["progress"] == b["progress"]
            assert a["skill_level"] == b["proficiency"]
    assert len(set(seen)) >= 2  # the learner moved on from its first asset


def test_one_engine_written_through_v1_is_read_through_v2() -> None:
    engine = Engine(seed=2, clock=lambda: NOW)
    v1 = V1Api(engine, api_keys={"k": "school"})
    v2 = V2Api(engine, api_keys={"k": "school"})
    v1_course(v1)
    events = [
        {
            "user": USER,
            "type": "response_submit",
            "timestamp": f"2024-05-01T10:0{i}:00Z",
            "attributes": {"view_id": "algebra", "asset_id": a, "result": r, "time_spent_ms": 1000},
        }
        for i, (a, r) in enumerate([("q1", "correct"), ("q2", "incorrect"), ("q4", "partially_correct")])
    ]
    assert v1.handle("POST", "/v1/user-events", body={"user_events": events}, headers=H).status == 200
    catalog = v2.handle("POST", "/v2/query-catalog", body={"catalog_id": "algebra"}, headers=H).body["data"]
    assert [t["topic_id"] for t in catalog["topics"]] == [
        "t:",
        "t:algebra",
        "t:algebra:u1",
        "t:algebra:u2",
    ]
    status = v2.handle(
        "POST",
        "/v2/user-status",
        headers=H,
        body={
            "user_id": "ada",
            "catalog_id": "algebra",
            "filter_list": [{"include_topic_ids": ["t:algebra:u1"]}],
        },
    )
    (v2_status,) = status.body["data"]["user_status_list"]
    r = v1.handle(
        "GET",
        "/v1/user-status",
        query={"user_id": "ada", "view_id": "algebra", "view_paths": "/algebra/u1"},
        headers=H,
    )
    (v1_status,) = r.body["data"]
    assert v1_status["status"]["progress"] == v2_status["progress"] == 0.5
    assert v1_status["status"]["skill_level"] == v2_status["proficiency"]
    assert v2_status["time_spent_ms"] == 2000 and v2_status["last_interaction_timestamp"] == "2024-05-01T10:01:00.000Z"
    # a v2 session over the view's catalog serves the same learner
    session = v2.handle(
        "POST",
        "/v2/create-adaptive-session",
        headers=H,
        body={"user_id": "ada", "catalog_id": "algebra", "mode": {"type": "learn"}, "filter": {}},
    ).body["data"]
    step = v2.handle("POST", "/v2/adaptive-engine", headers=H, body=session).body["data"]
    assert step["user_status"]["progress"] == pytest.approx(3 / 7)
    assert step["recommendation"]["item_id"] in {"t1", "q1", "q2", "q3", "q4", "q5", "q6"}
