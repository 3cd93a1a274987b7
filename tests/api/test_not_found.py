"""One rule for a name of something that does not exist, in v1 and v2 (docs/v1.md, "What does not exist").

The subject of a call (named in the path, a query parameter or a top-level field) that does not
exist is a 404; a reference inside the body's content (an event's catalog or view, a view's assets,
a catalog's item refs, a filter's topics) is a 400 naming the field, with the body's other
problems. Every status answered is one the endpoint's OpenAPI document lists.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from learnloop import Engine
from learnloop.api import V1Api, V2Api
from learnloop.server.openapi import document

SECRET = b"not-found-secret"
NOW = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
TS = "2025-03-01T09:01:00Z"
LEARNER = {"id": "u1", "type": "learner"}

ITEMS = [{"item_id": "q1", "display_name": "Q1", "scorable": True, "difficulty": 0.5}]
CATALOG = {
    "catalog_id": "course",
    "display_name": "Course",
    "topics": [{"topic_id": "A", "display_name": "A", "item_refs": [{"item_id": "q1"}]}],
}


def listed(name: str, method: str, path: str) -> set[int]:
    """The statuses the shipped OpenAPI document lists for an operation."""
    paths = document(name)["paths"]
    for template, operations in paths.items():
        parts, wanted = template.split("/"), path.split("?")[0].split("/")
        if len(parts) == len(wanted) and all(p == w or p.startswith("{") for p, w in zip(parts, wanted)):
            return {int(s) for s in operations[method.lower()]["responses"]}
    raise AssertionError(f"no operation {method} {path} in {name}")


@pytest.fixture
def engine(make_engine: Callable[..., Engine]) -> Engine:
    return make_engine(seed=5, clock=lambda: NOW, secret=SECRET)


@pytest.fixture
def v2(engine: Engine) -> V2Api:
    api = V2Api(engine)
    assert api.handle("POST", "/v2/upsert-items", body={"items": ITEMS}).status == 200
    assert api.handle("POST", "/v2/upsert-catalog", body=CATALOG).status == 200
    return api


def plain(**fields: Any) -> dict[str, Any]:
    return {"type": "attempt", "item_id": "q1", "catalog_id": "course", "timestamp": TS, "score": 1.0, **fields}


SESSION = {"user_id": "u1", "catalog_id": "course", "mode": {"type": "learn"}, "filter": {}}

#: v2 path -> body -> (status, message)
V2_CASES: list[tuple[str, dict[str, Any], int, str]] = [
    # the subject of the call: 404
    ("/v2/query-catalog", {"catalog_id": "nope"}, 404, "catalog 'nope' not found"),
    ("/v2/delete-catalog", {"catalog_id": "nope"}, 404, "catalog 'nope' not found"),
    ("/v2/create-adaptive-session", {**SESSION, "catalog_id": "nope"}, 404, "catalog 'nope' not found"),
    (
        "/v2/user-status",
        {"user_id": "u1", "catalog_id": "nope", "filter_list": [{}]},
        404,
        "catalog 'nope' not found",
    ),
    # a reference inside the body: 400, naming the field
    (
        "/v2/upsert-events",
        {"user_id": "u1", "events": [plain(catalog_id="nope")]},
        400,
        "events[0]: unknown catalog 'nope'",
    ),
    (
        "/v2/upsert-events",
        {"user_id": "u1", "events": [plain(item_id="q9")]},
        400,
        "events[0]: item 'q9' is not in catalog 'course'",
    ),
    (
        "/v2/upsert-events",
        {"user_id": "u1", "events": [plain(topic_id="Z")]},
        400,
        "events[0]: unknown topic 'Z' in catalog 'course'",
    ),
    (
        "/v2/upsert-catalog",
        {**CATALOG, "topics": [{"topic_id": "A", "display_name": "A", "item_refs": [{"item_id": "q9"}]}]},
        400,
        "catalog 'course': topic 'A': unknown item 'q9'",
    ),
    (
        "/v2/create-adaptive-session",
        {**SESSION, "filter": {"include_topic_ids": ["Z"]}},
        400,
        "filter: unknown topic 'Z' in catalog 'course'",
    ),
    (
        "/v2/user-status",
        {"user_id": "u1", "catalog_id": "course", "filter_list": [{"exclude_topic_ids": ["Z"]}]},
        400,
        "filter: unknown topic 'Z' in catalog 'course'",
    ),
    # names that may point at nothing by design
    ("/v2/delete-items", {"item_ids": ["q9"]}, 200, ""),
    ("/v2/upsert-item-database-annotation", {"item_annotations": [{"item_id": "q9", "text_plain": "x"}]}, 200, ""),
    (
        "/v2/upsert-items",
        {"items": [{**ITEMS[0], "item_id": "q2", "theory_item_refs": [{"item_id": "t9"}]}]},
        200,
        "",
    ),
]


@pytest.mark.parametrize(("path", "body", "status", "message"), V2_CASES)
def test_v2_answers_a_missing_name_by_the_rule(
    v2: V2Api, path: str, body: dict[str, Any], status: int, message: str
) -> None:
    r = v2.handle("POST", path, body=body)
    assert r.status == status, r.body
    assert status in listed("v2", "POST", path)
    if status != 200:
        assert r.body == {"error": {"status": status, "message": message}}


def test_v2_a_session_that_no_longer_exists_is_a_404(v2: V2Api, make_engine: Callable[..., Engine]) -> None:
    """It was a 400 ("stale session context"): the session is what adaptive-engine is about."""
    context = v2.handle("POST", "/v2/create-adaptive-session", body=SESSION).body["data"]["session_context"]
    # an engine with the same secret on another store: the context verifies, its session is not there
    other = V2Api(make_engine(seed=5, clock=lambda: NOW, secret=SECRET))
    assert other.handle("POST", "/v2/upsert-items", body={"items": ITEMS}).status == 200
    assert other.handle("POST", "/v2/upsert-catalog", body=CATALOG).status == 200
    r = other.handle("POST", "/v2/adaptive-engine", body={"session_context": context})
    session_id = v2.engine.session(context).session_id
    assert (r.status, r.body) == (
        404,
        {"error": {"status": 404, "message": f"session_context: session '{session_id}' not found"}},
    )
    assert 404 in listed("v2", "POST", "/v2/adaptive-engine")


def test_v2_a_session_whose_catalog_was_deleted_is_a_404(v2: V2Api) -> None:
    context = v2.handle("POST", "/v2/create-adaptive-session", body=SESSION).body["data"]["session_context"]
    assert v2.handle("POST", "/v2/delete-catalog", body={"catalog_id": "course"}).status == 200
    r = v2.handle("POST", "/v2/adaptive-engine", body={"session_context": context})
    assert (r.status, r.body) == (404, {"error": {"status": 404, "message": "catalog 'course' not found"}})


# -- v1 ------------------------------------------------------------------------------------------


@pytest.fixture
def v1(engine: Engine) -> V1Api:
    api = V1Api(engine)
    assert api.handle("PUT", "/v1/assets/q1", body={"type": "exercise"}).status == 200
    view = {"name": "View", "assets": [{"asset_id": "q1", "path": "/a"}]}
    assert api.handle("PUT", "/v1/views/view", body=view).status == 200
    return api


def v1_event(view_id: str = "view", asset_id: str = "q1") -> dict[str, Any]:
    return {
        "type": "response_submit",
        "user": LEARNER,
        "timestamp": TS,
        "attributes": {"view_id": view_id, "asset_id": asset_id, "result": "correct"},
    }


def next_assets(view_id: str = "view", events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "user": LEARNER,
        "view_id": view_id,
        "filter": {"asset_types": ["exercise"], "paths": ["/"]},
        "mode": {"type": "learn"},
        "limit": 1,
        "user_events": events or [],
    }


#: (method, path, query, body) -> (status, details)
V1_CASES: list[tuple[str, str, dict[str, str] | None, dict[str, Any] | None, int, list[str]]] = [
    # the subject of the call: 404
    ("GET", "/v1/assets/nope", None, None, 404, ["asset 'nope' not found"]),
    ("DELETE", "/v1/assets/nope", None, None, 404, ["asset 'nope' not found"]),
    ("GET", "/v1/views/nope", None, None, 404, ["view 'nope' not found"]),
    ("DELETE", "/v1/views/nope", None, None, 404, ["view 'nope' not found"]),
    ("GET", "/v1/views", {"last_view_id": "nope"}, None, 404, ["view 'nope' not found"]),
    ("POST", "/v1/next-assets", None, next_assets("nope"), 404, ["view 'nope' not found"]),
    (
        "POST",
        "/v1/user-filter-status",
        None,
        {"user_id": "u1", "view_id": "nope", "filters": [{}]},
        404,
        ["view 'nope' not found"],
    ),
    (
        "GET",
        "/v1/user-status",
        {"user_id": "u1", "view_id": "nope", "view_paths": "/a"},
        None,
        404,
        ["view 'nope' not found"],
    ),
    # a reference inside the body: 400, naming the field
    (
        "PUT",
        "/v1/views/other",
        None,
        {"name": "Other", "assets": [{"asset_id": "q9", "path": "/a"}]},
        400,
        ["'assets[0].asset_id': asset 'q9' not found"],
    ),
    (
        "POST",
        "/v1/user-events",
        None,
        {"user_events": [v1_event(view_id="nope"), v1_event(asset_id="q9")]},
        400,
        [
            "'user_events[0].attributes.view_id': view 'nope' not found",
            "'user_events[1].attributes.asset_id': asset 'q9' is not in view 'view'",
        ],
    ),
    (
        "POST",
        "/v1/next-assets",
        None,
        next_assets(events=[v1_event(view_id="nope")]),
        400,
        ["'user_events[0].attributes.view_id': view 'nope' not found"],
    ),
    # names that may point at nothing by design
    ("DELETE", "/v1/assets", {"asset_ids": "nope"}, None, 200, []),
    ("GET", "/v1/assets", {"asset_ids": "nope"}, None, 200, []),
]


@pytest.mark.parametrize(("method", "path", "query", "body", "status", "details"), V1_CASES)
def test_v1_answers_a_missing_name_by_the_rule(
    v1: V1Api,
    method: str,
    path: str,
    query: dict[str, str] | None,
    body: dict[str, Any] | None,
    status: int,
    details: list[str],
) -> None:
    r = v1.handle(method, path, query=query, body=body)
    assert r.status == status, r.body
    assert status in listed("v1", method, path)
    if status != 200:
        assert [e["detail"] for e in r.body["errors"]] == details
        assert all(e["status"] == status for e in r.body["errors"])
