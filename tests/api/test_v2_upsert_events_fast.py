"""``/v2/upsert-events`` without a model per event: the same answers, messages and stored events as the models' path.

A body valid on its face goes to the engine as plain dicts (its columnar
reading); anything else, or anything the engine refuses, is read by the request
models as before. Two engines get the same calls, one through each path.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from learnloop import Engine
from learnloop.api import V2Api, v2
from learnloop.sim import sample_course

KEY = {"X-API-KEY": "k", "Content-Type": "application/json"}
ITEMS, CATALOG = sample_course(n_chapters=1, topics_per_chapter=2, items_per_topic=3)
ITEM_IDS = [item.item_id for item in ITEMS]


def loaded(fast: bool) -> V2Api:
    api = V2Api(Engine(seed=3), api_keys={"k": "app"})
    api.plain_events_fast = fast
    body = {"items": [i.model_dump(mode="json", exclude_none=True) for i in ITEMS]}
    assert api.handle("POST", "/v2/upsert-items", body=body, headers=KEY).status == 200
    body = CATALOG.model_dump(mode="json", exclude_none=True)
    assert api.handle("POST", "/v2/upsert-catalog", body=body, headers=KEY).status == 200
    return api


stamps = st.one_of(
    st.integers(0, 400).map(lambda k: f"2024-05-01T10:{k // 60:02d}:{k % 60:02d}.000Z"),  # the canonical form
    st.integers(0, 400).map(lambda k: f"2024-05-01T12:{k // 60:02d}:{k % 60:02d}+02:00"),  # another spelling
    st.sampled_from(["2024-05-01 08:00:00", "not a time", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z"]),
    st.sampled_from([12345, 1.5, None, True, ["2024-05-01T10:00:00Z"]]),
)
units = st.one_of(
    st.floats(0, 1, allow_nan=False),
    st.integers(-1, 2),
    st.sampled_from(["0.5", True, None, 1.5, -0.0, [0.5]]),
)
spent = st.one_of(st.integers(-5, 10**6), st.sampled_from([2**53, 2**53 - 1, 1.0, 2.5, "10", None, False]))
texts = st.sampled_from([*ITEM_IDS, "nope", "", "bad id!", 7, None])
event = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["attempt", "attempt", "view_theory", "skip", "other", 3]),
        "item_id": texts,
        "catalog_id": st.sampled_from(["sample-course", "sample-course", "sample-course", "elsewhere", None]),
        "timestamp": stamps,
    },
    optional={
        "topic_id": st.sampled_from(["ch1-t1", "ch1-t2", "nope", None, 5]),
        "score": units,
        "time_spent_ms": spent,
        "fraction_completed": units,
        "extra": st.just(1),
    },
)
EXERCISES = [i for i in ITEM_IDS if not i.endswith("-theory")]
THEORY = [i for i in ITEM_IDS if i.endswith("-theory")]
valid = st.one_of(
    st.fixed_dictionaries(
        {
            "type": st.just("attempt"),
            "item_id": st.sampled_from(EXERCISES),
            "catalog_id": st.just("sample-course"),
            "timestamp": stamps.filter(lambda t: isinstance(t, str) and t[:2] == "20"),
        },
        optional={"score": st.floats(0, 1), "time_spent_ms": st.integers(0, 10**6)},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("view_theory"),
            "item_id": st.sampled_from(THEORY),
            "catalog_id": st.just("sample-course"),
            "timestamp": stamps.filter(lambda t: isinstance(t, str) and t[:2] == "20"),
        },
        optional={"fraction_completed": st.floats(0, 1), "topic_id": st.sampled_from(["ch1-t1", "ch1-t2"])},
    ),
)
bodies = st.fixed_dictionaries(
    {
        "user_id": st.sampled_from(["u1", "u1", "u1", "u2", "u2", "", "bad user", 9]),
        "events": st.one_of(st.lists(valid, max_size=6), st.lists(st.one_of(valid, valid, event), max_size=5)),
    },
    optional={"also": st.just(True)},
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=st.lists(bodies, min_size=1, max_size=4))
def test_the_fast_path_answers_and_stores_as_the_models_path(calls: list[dict[str, Any]]) -> None:
    fast, slow = loaded(True), loaded(False)
    for body in calls:
        raw = json.dumps(body).encode()
        got, want = (
            fast.handle("POST", "/v2/upsert-events", body=raw, headers=KEY),
            slow.handle("POST", "/v2/upsert-events", body=raw, headers=KEY),
        )
        assert (got.status, got.body) == (want.status, want.body), body
    for user in ("u1", "u2"):
        status = {"user_id": user, "catalog_id": "sample-course", "filter_list": [{}]}
        got, want = (api.handle("POST", "/v2/user-status", body=status, headers=KEY) for api in (fast, slow))
        assert (got.status, got.body) == (want.status, want.body)
    stamps_sent = {
        (str(b["user_id"]), "sample-course", str(e["item_id"]), e["timestamp"])
        for b in calls
        for e in b["events"]
        if isinstance(e["timestamp"], str) and isinstance(e["item_id"], str)
    }
    keys = [k for k in stamps_sent if k[3][:1].isdigit()]
    assert fast.engine.known_events(keys, app="app") == slow.engine.known_events(keys, app="app")


@pytest.fixture
def spied(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []
    real = v2.validate_json_body
    monkeypatch.setattr(v2, "validate_json_body", lambda *a: calls.append(a) or real(*a))
    return calls


def test_a_body_valid_on_its_face_makes_no_request_model(spied: list[Any]) -> None:
    api = loaded(True)
    spied.clear()
    events = [
        {"type": "attempt", "item_id": i, "catalog_id": "sample-course", "timestamp": f"2024-05-01T10:00:0{k}Z"}
        for k, i in enumerate(ITEM_IDS)
        if not i.endswith("-theory")
    ]
    events = [{**e, "score": 1.0} for e in events]
    r = api.handle("POST", "/v2/upsert-events", body=json.dumps({"user_id": "u1", "events": events}), headers=KEY)
    assert (r.status, r.body) == (200, {"data": {}})
    assert spied == []
    keys = [("u1", "sample-course", e["item_id"], e["timestamp"]) for e in events]
    assert len(api.engine.known_events(keys, app="app")) == len(events)


@pytest.mark.parametrize(
    "change",
    [
        {"score": "0.5"},  # text for a number: the engine's lax reading would take it, the contract does not
        {"time_spent_ms": 1.0},  # a float for an integer
        {"timestamp": 1714557600},  # a number for a timestamp
        {"type": "attempt", "item_id": "ch1-t1-theory"},  # an attempt on a theory item: refused by the engine
    ],
)
def test_what_is_not_valid_on_its_face_is_read_by_the_models(spied: list[Any], change: dict[str, Any]) -> None:
    api, reference = loaded(True), loaded(False)
    spied.clear()
    item = next(i for i in ITEM_IDS if not i.endswith("-theory"))
    event = {"type": "attempt", "item_id": item, "catalog_id": "sample-course", "timestamp": "2024-05-01T10:00:00Z"}
    event["score"] = 1.0
    body = json.dumps({"user_id": "u1", "events": [event, {**event, **change}]})
    got = api.handle("POST", "/v2/upsert-events", body=body, headers=KEY)
    want = reference.handle("POST", "/v2/upsert-events", body=body, headers=KEY)
    assert got.status == 400 and (got.status, got.body) == (want.status, want.body)
    assert len(spied) == 2  # the models read it, in both
    assert api.engine.known_events([("u1", "sample-course", item, "2024-05-01T10:00:00Z")], app="app") == set()
