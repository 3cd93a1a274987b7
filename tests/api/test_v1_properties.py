"""Properties of the v1 façade on every store.

- no request, however malformed, answers 5xx or raises;
- a request answered with an error changes no stored row.

The engine fixture is shared by the examples of one test on purpose: the
rejected requests must leave the shared state as it was.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from learnloop import Engine
from learnloop.api import V1Api
from learnloop.store import TABLES

KEYS = {"key-1": "app-1", "key-2": "app-2"}


def shared_engine(max_examples: int) -> settings:
    return settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )


ASSETS = [
    {
        "id": "q1",
        "type": "exercise",
        "tags": [{"name": "content_type", "value": "mcq"}],
        "metadata": {"variability": 3},
    },
    {"id": "q 2", "type": "exercise", "description": "two"},
    {"id": "t1", "type": "theory"},
]
VIEW = {
    "name": "V",
    "path": "/m",
    "ordered": True,
    "assets": [
        {"asset_id": "t1", "path": "/m/a"},
        {"asset_id": "q1", "path": "/m/a", "attributes": {"partner_difficulty": 0.3}},
        {"asset_id": "q 2", "path": "/m/b"},
    ],
}


def response(asset_id: str, minute: int, **extra: Any) -> dict[str, Any]:
    return {
        "user": {"id": "u1", "type": "learner"},
        "type": "response_submit",
        "timestamp": f"2024-05-01T10:{minute:02d}:00Z",
        "attributes": {"view_id": "v", "asset_id": asset_id, "result": "correct"},
        **extra,
    }


VALID: dict[tuple[str, str], Any] = {
    ("PUT", "/v1/assets/q9"): {
        "type": "exercise",
        "tags": [{"name": "a", "value": "b"}],
        "metadata": {"k": 1},
    },
    ("PUT", "/v1/assets"): {"assets": [{"id": "q8", "type": "theory", "description": "d"}, ASSETS[0]]},
    ("PUT", "/v1/views/v"): {
        **VIEW,
        "assets": [*VIEW["assets"], {"asset_id": "t1", "path": "/m/c"}][:3],
    },
    ("POST", "/v1/user-events"): {"user_events": [response("q1", 30), response("t1", 31, is_offline_event=True)]},
    ("POST", "/v1/next-assets"): {
        "user": {"id": "u1", "type": "learner"},
        "view_id": "v",
        "limit": 2,
        "filter": {"asset_types": ["exercise"], "paths": ["/m"]},
        "mode": {"type": "learn"},
        "user_events": [response("q1", 40)],
    },
    ("POST", "/v1/user-filter-status"): {
        "user_id": "u1",
        "view_id": "v",
        "filters": [{"paths": ["/m/a"]}],
    },
}


@pytest.fixture
def seeded(make_engine: Any) -> tuple[Engine, V1Api]:
    engine = make_engine(seed=3)
    api = V1Api(engine, api_keys=KEYS)
    for key in KEYS:
        headers = {"X-API-KEY": key}
        assert api.handle("PUT", "/v1/assets", body={"assets": ASSETS}, headers=headers).status == 200
        assert api.handle("PUT", "/v1/views/v", body=VIEW, headers=headers).status == 200
        body = {"user_events": [response("q1", 1), response("q 2", 2)]}
        assert api.handle("POST", "/v1/user-events", body=body, headers=headers).status == 200
    return engine, api


def snapshot(engine: Engine) -> dict[tuple[str, str], list[Any]]:
    return {(table, app): list(engine.store.scan(table, app)) for table in TABLES for app in KEYS.values()}


def check_envelope(status: int, body: Any) -> None:
    assert status in {200, 400, 401, 402, 404, 405}, (status, body)
    if status == 200:
        assert body is None or isinstance(body, dict)
        return
    assert isinstance(body, dict) and list(body) == ["errors"], body
    assert body["errors"], body
    for error in body["errors"]:
        assert error["status"] == status and isinstance(error["detail"], str) and error["detail"]
        assert error["link"].startswith("https://")
    json.dumps(body)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
FIELD_NAMES = [
    "assets",
    "id",
    "type",
    "tags",
    "metadata",
    "name",
    "path",
    "ordered",
    "user_events",
    "user",
    "view_id",
    "filter",
    "mode",
    "limit",
    "filters",
    "user_id",
    "description",
    "attributes",
]
random_bodies = st.one_of(
    st.none(),
    json_values,
    st.dictionaries(st.sampled_from(FIELD_NAMES), json_values, max_size=4),
    st.binary(max_size=40),
    st.text(max_size=40),
)
PATHS = [
    "/v1/assets",
    "/v1/assets/q1",
    "/v1/assets/q%202",
    "/v1/assets/nope",
    "/v1/views",
    "/v1/views/v",
    "/v1/views/w",
    "/v1/user-events",
    "/v1/next-assets",
    "/v1/user-filter-status",
    "/v1/user-status",
    "/v1/nope",
    "/v1/assets/a/b",
    "/v1/assets/%ff",
    "/v1/views?limit=x",
    "/",
]
QUERY_NAMES = ["asset_ids", "last_view_id", "limit", "user_id", "view_id", "view_paths", "other"]
queries = st.none() | st.dictionaries(
    st.sampled_from(QUERY_NAMES),
    st.text(max_size=12)
    | st.lists(st.text(max_size=8), max_size=3)
    | st.sampled_from(["q1", "v", "u1", "/m", "0", "3"]),
    max_size=4,
)


ALLOWED = {
    "/v1/assets": ["GET", "PUT", "DELETE"],
    "/v1/views": ["GET"],
    "/v1/user-events": ["POST"],
    "/v1/next-assets": ["POST"],
    "/v1/user-filter-status": ["POST"],
    "/v1/user-status": ["GET"],
}


@st.composite
def targets(draw: st.DrawFn) -> tuple[str, str]:
    path = draw(st.sampled_from(PATHS))
    allowed = ALLOWED.get(path.partition("?")[0], ["GET", "PUT", "DELETE"])
    method = draw(st.sampled_from(allowed) | st.sampled_from(["GET", "PUT", "POST", "DELETE", "PATCH"]))
    return method, path


@shared_engine(max_examples=150)
@given(
    target=targets(),
    key=st.sampled_from(["key-1", "key-1", "key-2", "wrong", None]),
    query=queries,
    body=random_bodies,
)
def test_a_random_request_never_fails_with_5xx_and_a_rejected_one_changes_nothing(
    seeded: tuple[Engine, V1Api], target: tuple[str, str], key: str | None, query: Any, body: Any
) -> None:
    engine, api = seeded
    method, path = target
    before = snapshot(engine)
    r = api.handle(method, path, query=query, body=body, headers={} if key is None else {"X-API-KEY": key})
    check_envelope(r.status, r.body)
    event(f"status {r.status}")
    if r.status != 200:
        assert snapshot(engine) == before


# requests made invalid on purpose: one mutation of a valid request


def dict_paths(doc: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(doc, dict):
        yield path
        for k, v in doc.items():
            yield from dict_paths(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from dict_paths(v, (*path, i))


def leaf_paths(doc: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from leaf_paths(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from leaf_paths(v, (*path, i))
    else:
        yield path


def at(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


BAD_VALUES = [
    None,
    "",
    "x",
    -1,
    0,
    1.5,
    1e309,
    float("nan"),
    True,
    [],
    {},
    "a" * 20_000,
    "/a//b",
    "2024-13-45",
    "\ud800",
    10**30,
    "é/ü",
]


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, str, Any]:
    (method, path), valid = draw(st.sampled_from(sorted(VALID.items())))
    body = copy.deepcopy(valid)
    kind = draw(st.sampled_from(["drop", "replace", "extra"]))
    if kind == "replace":
        where = draw(st.sampled_from(list(leaf_paths(body))))
        parent = at(body, where[:-1])
        parent[where[-1]] = draw(st.sampled_from(BAD_VALUES))
    else:
        holders = [p for p in dict_paths(body) if isinstance(at(body, p), dict) and at(body, p)]
        where = draw(st.sampled_from(holders))
        holder = at(body, where)
        if kind == "drop":
            del holder[draw(st.sampled_from(sorted(holder)))]
        else:
            holder[draw(st.sampled_from(["zz", "id", "score", "path"]))] = draw(st.sampled_from(BAD_VALUES))
    return method, path, body


@shared_engine(max_examples=200)
@given(request=mutated())
def test_a_mutated_request_answers_400_or_200_and_a_rejected_one_changes_nothing(
    seeded: tuple[Engine, V1Api], request: tuple[str, str, Any]
) -> None:
    engine, api = seeded
    method, path, body = request
    before = snapshot(engine)
    r = api.handle(method, path, body=body, headers={"X-API-KEY": "key-1"})
    check_envelope(r.status, r.body)
    event(f"{method} {path}: {r.status}")
    if r.status != 200:
        assert snapshot(engine) == before


@shared_engine(max_examples=25)
@given(request=st.sampled_from(sorted(VALID.items())))
def test_every_valid_request_is_accepted(seeded: tuple[Engine, V1Api], request: Any) -> None:
    _, api = seeded
    (method, path), body = request
    r = api.handle(method, path, body=json.dumps(body).encode(), headers={"X-API-KEY": "key-2"})
    assert r.status == 200, r.body
