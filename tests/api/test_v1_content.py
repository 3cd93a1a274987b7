"""The v1 asset and view endpoints through ``V1Api.handle``, with the exact response bodies."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from learnloop import Engine
from learnloop._http import ApiResponse
from learnloop.api import V1Api, V1Limits
from learnloop.store import TABLES

KEYS = {"key-1": "app-1", "key-2": "app-2"}
LINK = "https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/{}"


def errors(status: int, *details: str) -> dict[str, Any]:
    return {"errors": [{"status": status, "detail": d, "link": LINK.format(status)} for d in details]}


class Client:
    """Calls a V1Api with an API key (``key=None``: no X-API-KEY header)."""

    def __init__(self, api: V1Api) -> None:
        self.api = api

    def __call__(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: Any = None,
        key: str | None = "key-1",
        **headers: str,
    ) -> ApiResponse:
        sent = dict(headers)
        if key is not None:
            sent["X-API-KEY"] = key
        return self.api.handle(method, path, query=query, body=body, headers=sent)


@pytest.fixture
def call(engine: Engine) -> Client:
    return Client(V1Api(engine, api_keys=KEYS))


def asset(asset_id: str, type_: str = "exercise", **fields: Any) -> dict[str, Any]:
    return {"id": asset_id, "type": type_, **fields}


ASSETS = [
    asset(
        "q1",
        tags=[{"name": "content_type", "value": "mcq"}, {"name": "level", "value": "A 1"}],
        description="2 + 2 = ?",
        content_url="https://example.org/q1",
        metadata={"variability": 4, "source": "book"},
    ),
    asset("q2"),
    asset("t1", "theory", description="Addition"),
    asset("math/q 3"),
]


def view_body(**fields: Any) -> dict[str, Any]:
    body = {
        "name": "Arithmetic",
        "path": "/math",
        "description": "Numbers",
        "ordered": True,
        "assets": [
            {"asset_id": "t1", "path": "/math/add"},
            {"asset_id": "q1", "path": "/math/add", "attributes": {"partner_difficulty": 0.25}},
            {"asset_id": "q2", "path": "/math/sub"},
        ],
    }
    return {**body, **fields}


@pytest.fixture
def seeded(call: Client) -> Client:
    assert call("PUT", "/v1/assets", {"assets": ASSETS}).status == 200
    assert call("PUT", "/v1/views/arith", view_body()).status == 200
    return call


def snapshot(engine: Engine) -> dict[tuple[str, str], list[Any]]:
    return {(t, a): list(engine.store.scan(t, a)) for t in TABLES for a in KEYS.values()}


# -- assets --------------------------------------------------------------------------------------


def test_put_one_asset_answers_an_empty_200_and_get_returns_the_definition(call: Client) -> None:
    body = {
        "type": "exercise",
        "tags": [{"name": "content_type", "value": "video"}],
        "metadata": {"x": 1.5},
    }
    r = call("PUT", "/v1/assets/q1", body)
    assert (r.status, r.body) == (200, None)
    assert call("GET", "/v1/assets/q1").body == {"id": "q1", **body}
    # an update replaces the asset with the body's values
    assert call("PUT", "/v1/assets/q1", {"type": "theory"}).body is None
    assert call("GET", "/v1/assets/q1").body == {"id": "q1", "type": "theory"}


def test_an_asset_is_an_item_of_the_same_application(call: Client, engine: Engine) -> None:
    call("PUT", "/v1/assets", {"assets": ASSETS})
    items = {i.item_id: i for i in engine.item_database(app="app-1")}
    q1 = items["q1"]
    assert (q1.scorable, q1.content_type, q1.display_name) == (True, "exercise", "q1")
    assert q1.tags[0] == "content_type:mcq" and q1.tags[1].startswith("h::")
    assert items["t1"].scorable is False and items["t1"].is_theory
    # an id that is not a v2 identifier is kept in the asset document and hashed for the item
    odd = [i for i in items.values() if i.display_name == "math/q 3"]
    assert len(odd) == 1 and odd[0].item_id.startswith("h::")
    assert call("GET", "/v1/assets/math%2Fq%203").body == {"id": "math/q 3", "type": "exercise"}
    assert engine.item_database(app="app-2") == []


def test_bulk_put_get_and_delete(call: Client) -> None:
    assert (
        call("PUT", "/v1/assets", {"assets": ASSETS}).status,
        call("PUT", "/v1/assets", {"assets": ASSETS}).body,
    ) == (200, None)
    got = call("GET", "/v1/assets", query={"asset_ids": ["q2", "t1,nope", "q2"]})
    assert got.body == {"assets": [ASSETS[1], ASSETS[2]]}
    deleted = call("DELETE", "/v1/assets", query={"asset_ids": "nope,q2,t1"})
    assert (deleted.status, deleted.body) == (200, {"asset_ids": ["q2", "t1"]})
    assert call("DELETE", "/v1/assets", query={"asset_ids": "q2"}).body == {"asset_ids": []}
    assert call("GET", "/v1/assets/q2").body == errors(404, "asset 'q2' not found")


def test_array_query_parameters_may_be_in_the_path(call: Client) -> None:
    call("PUT", "/v1/assets", {"assets": ASSETS})
    assert call("GET", "/v1/assets?asset_ids=q1&asset_ids=q2").body == {"assets": ASSETS[:2]}
    # the bracket forms of common clients name the same parameter
    assert call("GET", "/v1/assets?asset_ids[]=q1&asset_ids[]=q2").body == {"assets": ASSETS[:2]}
    assert call("GET", "/v1/assets", query={"asset_ids[0]": "q2", "asset_ids[1]": "q1"}).body == {
        "assets": [ASSETS[1], ASSETS[0]]
    }
    assert call("GET", "/v1/assets?ids[]=q1").body == errors(400, "unknown query parameter 'ids[]'")


def test_delete_one_asset(call: Client) -> None:
    call("PUT", "/v1/assets/q1", {"type": "exercise"})
    assert (call("DELETE", "/v1/assets/q1").status, call("GET", "/v1/assets/q1").status) == (
        200,
        404,
    )
    assert call("DELETE", "/v1/assets/q1").body == errors(404, "asset 'q1' not found")


@pytest.mark.parametrize(
    ("body", "details"),
    [
        ({}, ["invalid request: 'type' is required"]),
        (
            {"type": "video"},
            ["invalid request: 'type': input should be 'exercise' or 'theory', got 'video'"],
        ),
        ({"type": "theory", "extra": 1}, ["invalid request: 'extra' is not a known field"]),
        (
            {"type": "theory", "id": "other"},
            ["'id' must be the asset id of the path, 'q1', got 'other'"],
        ),
        (
            {"type": "theory", "description": "x" * 10_001},
            ["'description' has 10001 characters; at most 10000"],
        ),
        (
            {"type": "theory", "metadata": {"a": {"b": 1}, "c": True, "d": None}},
            [
                "'metadata.a' must be a String or a Number, got dict",
                "'metadata.c' must be a String or a Number, got bool",
                "'metadata.d' must be a String or a Number, got NoneType",
            ],
        ),
        (
            {"type": "exercise", "metadata": {"variability": 1001}},
            ["'metadata.variability' must be an integer from 1 to 1000, got 1001"],
        ),
        (
            {"type": "exercise", "metadata": {"variability": 2.0}},
            ["'metadata.variability' must be an integer from 1 to 1000, got 2.0"],
        ),
        (
            {"type": "exercise", "metadata": {"variability": 0}},
            ["'metadata.variability' must be an integer from 1 to 1000, got 0"],
        ),
        (
            {"type": "exercise", "tags": [{"name": "x"}]},
            ["invalid request: 'tags[0].value' is required"],
        ),
        (
            {"type": "exercise", "tags": [{"name": 1, "value": "x"}]},
            ["invalid request: 'tags[0].name': input should be a valid string, got 1"],
        ),
    ],
)
def test_an_invalid_asset_is_a_400_naming_every_problem(call: Client, body: Any, details: list[str]) -> None:
    r = call("PUT", "/v1/assets/q1", body)
    assert (r.status, r.body) == (400, errors(400, *details))
    assert call("GET", "/v1/assets/q1").status == 404


def test_variability_of_1000_and_a_10000_character_description_are_accepted(call: Client) -> None:
    body = {
        "type": "exercise",
        "description": "é" * 5000 + "x" * 5000,
        "metadata": {"variability": 1000},
    }
    assert call("PUT", "/v1/assets/q1", json.dumps(body, ensure_ascii=False)).status == 200


def test_a_bulk_put_is_atomic(call: Client, engine: Engine) -> None:
    call("PUT", "/v1/assets/q1", {"type": "exercise"})
    before = snapshot(engine)
    bad = {"assets": [asset("q1", "theory"), asset("q9"), asset("q8", metadata={"variability": -1})]}
    r = call("PUT", "/v1/assets", bad)
    assert r.body == errors(400, "'assets[2].metadata.variability' must be an integer from 1 to 1000, got -1")
    dup = call("PUT", "/v1/assets", {"assets": [asset("q5"), asset("q5", "theory")]})
    assert dup.body == errors(400, "asset 'q5' appears 2 times in one request")
    assert snapshot(engine) == before


@pytest.mark.parametrize("store_kind", ["memory", "sqlite", "postgres"])  # PostgreSQL too
def test_a_failing_store_write_rolls_the_bulk_put_back(
    call: Client, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(engine)
    real = engine.store.put_many

    def failing(table: str, app: str, rows: Any) -> None:
        if table == "documents":  # the asset documents, written after the items
            raise OSError("disk full")
        real(table, app, rows)

    monkeypatch.setattr(engine.store, "put_many", failing)
    with pytest.raises(OSError):
        call("PUT", "/v1/assets", {"assets": ASSETS})
    monkeypatch.undo()
    assert snapshot(engine) == before
    assert engine.item_database(app="app-1") == []


def test_a_bulk_delete_is_atomic(seeded: Client, engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    before = snapshot(engine)
    monkeypatch.setattr(engine, "delete_items", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        seeded("DELETE", "/v1/assets", query={"asset_ids": "q1,q2"})
    assert snapshot(engine) == before


def test_bulk_limits(engine: Engine) -> None:
    limits = V1Limits(request_bytes=1 << 20)
    call = Client(V1Api(engine, api_keys=KEYS, limits=limits))
    many = [asset(f"a{i}") for i in range(1001)]
    assert call("PUT", "/v1/assets", {"assets": many}).body == errors(
        400, "'assets' holds 1001 assets; at most 1000 per call"
    )
    assert call("PUT", "/v1/assets", {"assets": many[:1000]}).status == 200
    ids = ",".join(f"a{i}" for i in range(101))
    assert call("GET", "/v1/assets", query={"asset_ids": ids}).body == errors(
        400, "'asset_ids' names 101 assets; at most 100 per call"
    )
    got = call("GET", "/v1/assets", query={"asset_ids": ids.rsplit(",", 1)[0]})
    assert len(got.body["assets"]) == 100
    view = {"name": "Big", "assets": [{"asset_id": a["id"], "path": "/"} for a in many[:1000]]}
    assert call("PUT", "/v1/views/big", view).status == 200
    call("PUT", "/v1/assets/a1000", {"type": "exercise"})
    view["assets"].append({"asset_id": "a1000", "path": "/"})
    assert call("PUT", "/v1/views/big", view).body == errors(400, "'assets' holds 1001 assets; at most 1000 per view")


def test_a_request_over_16_kb_is_a_400(call: Client) -> None:
    big = {"assets": [asset(f"asset-{i:05d}", description="x" * 100) for i in range(140)]}
    raw = json.dumps(big).encode()
    assert len(raw) > 16384
    r = call("PUT", "/v1/assets", raw)
    assert r.body == errors(400, f"the request body is {len(raw)} bytes; the limit is 16384 bytes (16 KB)")
    compact = len(json.dumps(big, separators=(",", ":")).encode())
    assert call("PUT", "/v1/assets", big).body == errors(
        400, f"the request body is {compact} bytes; the limit is 16384 bytes (16 KB)"
    )
    # exactly 16384 bytes is within the limit
    body: dict[str, Any] = {"type": "exercise", "metadata": {"note": ""}}
    body["metadata"]["note"] = "x" * (16384 - len(json.dumps(body).encode()))
    assert call("PUT", "/v1/assets/q1", json.dumps(body).encode()).status == 200


# -- views ----------------------------------------------------------------------------------------


def test_get_view_returns_the_assets_with_their_definitions(seeded: Client) -> None:
    r = seeded("GET", "/v1/views/arith")
    assert (r.status, r.body) == (
        200,
        {
            "id": "arith",
            "name": "Arithmetic",
            "path": "/math",
            "description": "Numbers",
            "ordered": True,
            "assets": [
                {
                    "asset_id": "t1",
                    "type": "theory",
                    "description": "Addition",
                    "path": "/math/add",
                },
                {
                    "asset_id": "q1",
                    "type": "exercise",
                    "tags": ASSETS[0]["tags"],
                    "description": "2 + 2 = ?",
                    "content_url": "https://example.org/q1",
                    "path": "/math/add",
                    "attributes": {"partner_difficulty": 0.25},
                },
                {"asset_id": "q2", "type": "exercise", "path": "/math/sub"},
            ],
        },
    )


def test_a_view_is_a_catalog_whose_topics_are_its_paths(seeded: Client, engine: Engine) -> None:
    catalog = engine.catalog("arith", app="app-1")
    assert catalog.display_name == "Arithmetic"
    shape = [
        (
            t.topic_id,
            [r.item_id for r in t.item_refs or ()],
            [c.topic_id for c in t.child_topic_refs or ()],
        )
        for t in catalog.topics
    ]
    assert shape == [
        ("t:", [], ["t:math"]),
        ("t:math", [], ["t:math:add", "t:math:sub"]),
        ("t:math:add", ["t1", "q1"], []),
        ("t:math:sub", ["q2"], []),
    ]
    assert catalog.topics[2].item_refs[1].difficulty == 0.25


def test_an_ordered_view_keeps_its_asset_order_when_it_revisits_a_path(call: Client, engine: Engine) -> None:
    call("PUT", "/v1/assets", {"assets": ASSETS})
    order = [("q1", "/a/x"), ("q2", "/b"), ("t1", "/a/x"), ("math/q 3", "/a")]
    body = {"name": "V", "ordered": True, "assets": [{"asset_id": a, "path": p} for a, p in order]}
    assert call("PUT", "/v1/views/v", body).status == 200
    index = engine.catalog_index("v", app="app-1")
    odd = next(i.item_id for i in engine.item_database(app="app-1") if i.display_name == "math/q 3")
    assert index.item_ids == ("q1", "q2", "t1", odd)
    assert [index.topic_ids[t] for t in index.item_topic] == [
        "t:a:x",
        "t:b",
        "t:a:x::1",
        "t:a::1::i0",
    ]
    # not ordered: one topic per path, in order of first appearance
    call("PUT", "/v1/views/v", {**body, "ordered": False})
    index = engine.catalog_index("v", app="app-1")
    assert index.item_ids == ("q1", "t1", odd, "q2")


def test_a_view_path_thousands_of_segments_deep_is_served(call: Client, engine: Engine) -> None:
    call("PUT", "/v1/assets", {"assets": ASSETS})
    deep = "/" + "/".join(["a"] * 2498)  # the root, 2498 nested topics and a leaf for q2: the most a catalog holds
    body = {"name": "V", "assets": [{"asset_id": "q1", "path": deep}, {"asset_id": "q2", "path": "/a"}]}
    assert call("PUT", "/v1/views/v", body).status == 200
    index = engine.catalog_index("v", app="app-1")
    assert index.item_ids == ("q1", "q2") and len(engine.catalog("v", app="app-1").topics) == 2500
    assert [a["asset_id"] for a in call("GET", "/v1/views/v").body["assets"]] == ["q1", "q2"]
    # one segment more is over the topic limit: a 400, not a failure
    deeper = {"name": "V", "assets": [{"asset_id": "q1", "path": deep + "/a/a"}]}
    assert call("PUT", "/v1/views/w", deeper).body == errors(
        400, "limit 'topics per catalog' exceeded (w): 2501 > 2500"
    )


def test_view_rules_are_checked_together(seeded: Client, engine: Engine) -> None:
    before = snapshot(engine)
    body = {
        "name": "V",
        "path": "/math",
        "assets": [
            {"asset_id": "q1", "path": "/mathematics/x"},
            {"asset_id": "nope", "path": "/math"},
            {"asset_id": "q1", "path": "/math", "attributes": {"partner_difficulty": 0.5}},
        ],
    }
    r = seeded("PUT", "/v1/views/v2", body)
    assert r.body == errors(
        400,
        "asset 'q1' appears 2 times in the view",
        "'assets[0].path' '/mathematics/x' is not under the view path '/math'",
        "'assets[1].asset_id': asset 'nope' not found",
    )
    bad_shape = {
        "name": "V",
        "path": "math",
        "assets": [{"asset_id": "q1", "path": "/a//b", "attributes": {"partner_difficulty": 1.5}}],
    }
    assert seeded("PUT", "/v1/views/v2", bad_shape).body == errors(
        400,
        "invalid request: 'path' a path must start with '/', got 'math'",
        "invalid request: 'assets[0].path' a path must not contain an empty segment ('//'), got '/a//b'",
        "invalid request: 'assets[0].attributes.partner_difficulty': input should be less than or equal to 1, got 1.5",
    )
    assert seeded("PUT", "/v1/views/v2", {"name": "V", "assets": []}).body == errors(
        400, "'assets' is empty; a view holds at least one asset"
    )
    assert seeded("PUT", "/v1/views/v2", {"assets": []}).body == errors(400, "invalid request: 'name' is required")
    assert snapshot(engine) == before


def test_a_view_update_must_list_every_asset_of_the_view(seeded: Client) -> None:
    smaller = view_body(assets=view_body()["assets"][1:])
    assert seeded("PUT", "/v1/views/arith", smaller).body == errors(
        400, "an update must list every asset of the view; missing 't1'"
    )
    bigger = view_body(
        ordered=False,
        assets=[*view_body()["assets"], {"asset_id": "math/q 3", "path": "/math/add"}],
    )
    assert seeded("PUT", "/v1/views/arith", bigger).body is None
    assert [a["asset_id"] for a in seeded("GET", "/v1/views/arith").body["assets"]] == [
        "t1",
        "q1",
        "q2",
        "math/q 3",
    ]
    # a deleted asset leaves the view: the update need not list it, and get view leaves it out
    seeded("DELETE", "/v1/assets/t1")
    assert seeded("PUT", "/v1/views/arith", view_body(assets=bigger["assets"][1:])).body is None
    assert [a["asset_id"] for a in seeded("GET", "/v1/views/arith").body["assets"]] == [
        "q1",
        "q2",
        "math/q 3",
    ]


def test_delete_view(seeded: Client, engine: Engine) -> None:
    assert (
        seeded("DELETE", "/v1/views/arith").status,
        seeded("GET", "/v1/views/arith").status,
    ) == (200, 404)
    assert engine.catalog_ids(app="app-1") == []
    assert seeded("DELETE", "/v1/views/arith").body == errors(404, "view 'arith' not found")
    assert seeded("GET", "/v1/assets/q1").status == 200


@pytest.mark.parametrize("store_kind", ["memory", "sqlite", "postgres"])  # PostgreSQL too
def test_views_are_listed_from_least_to_most_recently_updated_with_paging(seeded: Client) -> None:
    for name in ["b", "c", "d"]:
        assert seeded(
            "PUT",
            f"/v1/views/{name}",
            {"name": name.upper(), "assets": [{"asset_id": "q2", "path": "/"}]},
        ).ok
    seeded("PUT", "/v1/views/arith", view_body(description="updated"))
    entry = lambda i: {"id": i, "name": i.upper(), "ordered": False}
    arith = {
        "id": "arith",
        "name": "Arithmetic",
        "path": "/math",
        "description": "updated",
        "ordered": True,
    }
    assert seeded("GET", "/v1/views").body == {"views": [entry("b"), entry("c"), entry("d"), arith]}
    assert seeded("GET", "/v1/views", query={"limit": "2"}).body == {"views": [entry("b"), entry("c")]}
    assert seeded("GET", "/v1/views", query={"last_view_id": "c", "limit": "1"}).body == {"views": [entry("d")]}
    assert seeded("GET", "/v1/views", query={"last_view_id": "arith"}).body == {"views": []}
    assert seeded("GET", "/v1/views", query={"last_view_id": "zz"}).body == errors(404, "view 'zz' not found")
    for bad in ["0", "1001", "x", "1.5", "-1"]:
        assert seeded("GET", "/v1/views", query={"limit": bad}).body == errors(
            400, f"query parameter 'limit' must be an integer from 1 to 1000, got {bad!r}"
        )
    assert seeded("GET", "/v1/views", key="key-2").body == {"views": []}


# -- the door -------------------------------------------------------------------------------------


def test_authentication_and_expiry(engine: Engine) -> None:
    now = datetime(2024, 5, 1, tzinfo=UTC)
    clock: Callable[[], datetime] = lambda: now
    api = V1Api(engine, api_keys=KEYS, key_expiry={"key-2": now + timedelta(days=1)}, clock=clock)
    call = Client(api)
    assert call("GET", "/v1/views", key=None).body == errors(401, "missing or wrong X-API-KEY header")
    assert call("GET", "/v1/views", key="wrong").status == 401
    assert call("GET", "/v1/views", key="key-2").status == 200
    now += timedelta(days=1)
    assert call("GET", "/v1/views", key="key-2").body == errors(402, "the API key expired at 2024-05-02T00:00:00+00:00")
    assert call("GET", "/v1/views", key="key-1").status == 200


def test_unknown_paths_and_methods(call: Client) -> None:
    assert call("GET", "/v1/nope").body == errors(404, "no endpoint at path '/v1/nope'")
    assert call("GET", "/v1/assets/a/b").status == 404
    assert call("GET", "/v2/assets").status == 404
    r = call("POST", "/v1/views")
    assert (r.status, r.headers) == (405, {"Allow": "GET"})
    assert r.body == errors(405, "method POST is not allowed on '/v1/views'; use GET")
    assert call("GET", "/v1/next-assets", key=None).status == 405
    assert call("get", "/v1/views/").status == 200


def test_request_format_errors(call: Client) -> None:
    assert call("PUT", "/v1/assets/q1", b"{bad").body == errors(
        400, "malformed JSON: Expecting property name enclosed in double quotes at line 1 column 2"
    )
    assert call("PUT", "/v1/assets/q1", b"[]").body == errors(400, "body must be a JSON object, not list")
    r = call("PUT", "/v1/assets/q1", {"type": "exercise"}, **{"Content-Type": "text/plain"})
    assert r.body == errors(400, "Content-Type must be application/json, got 'text/plain'")
    ok = call(
        "PUT",
        "/v1/assets/q1",
        {"type": "exercise"},
        **{"content-type": "application/json; charset=utf-8"},
    )
    assert ok.status == 200
    assert call("PUT", "/v1/assets/q1", b'{"type": "exercise", "description": "\\ud800"}').body == errors(
        400, "the body holds a lone surrogate escape (e.g. \\ud800), which is not Unicode text"
    )
    deep = b'{"type": "exercise", "metadata": {"x": ' + b"[" * 500 + b"]" * 500 + b"}}"
    assert call("PUT", "/v1/assets/q1", deep).body == errors(400, "malformed JSON: nested too deeply")
    assert call("GET", "/v1/assets", query={"asset_ids": "q1", "x": "1"}).body == errors(
        400, "unknown query parameter 'x'"
    )
    assert call("GET", "/v1/assets").body == errors(400, "query parameter 'asset_ids' is required")
    # a body sent with GET is not read
    assert call("GET", "/v1/assets/q1", b"not json").body == {"id": "q1", "type": "exercise"}


def test_v1_content_is_invisible_to_another_application(seeded: Client) -> None:
    assert seeded("GET", "/v1/assets/q1", key="key-2").status == 404
    assert seeded("GET", "/v1/views/arith", key="key-2").status == 404


def test_without_api_keys_every_request_belongs_to_default(engine: Engine) -> None:
    api = V1Api(engine)
    assert api.handle("PUT", "/v1/assets/q1", body={"type": "exercise"}).status == 200
    assert [i.item_id for i in engine.item_database()] == ["q1"]
