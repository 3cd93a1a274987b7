"""The v2 content endpoints through ``V2Api.handle``, with the exact response bodies."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from learnloop import Engine, Limits
from learnloop._http import ApiResponse
from learnloop.api import V2Api

KEYS = {"key-1": "app-1", "key-2": "app-2"}
OK = {"data": {}}


def err(status: int, message: str) -> dict[str, Any]:
    return {"error": {"status": status, "message": message}}


_DEFAULT_KEY = "key-1"


class Client:
    """Posts to a V2Api with an API key (``key=None``: no X-API-KEY header)."""

    def __init__(self, api: V2Api) -> None:
        self.api = api

    def __call__(
        self, path: str, body: Any = None, *, method: str = "POST", key: str | None = _DEFAULT_KEY
    ) -> ApiResponse:
        headers = {} if key is None else {"X-API-KEY": key}
        return self.api.handle(method, path, body=body, headers=headers)


@pytest.fixture
def api(engine: Engine) -> V2Api:
    return V2Api(engine, api_keys=KEYS)


@pytest.fixture
def post(api: V2Api) -> Client:
    return Client(api)


def item(item_id: str, **fields: Any) -> dict[str, Any]:
    return {"item_id": item_id, "display_name": f"Item {item_id}", "scorable": True, **fields}


def topic(topic_id: str, **fields: Any) -> dict[str, Any]:
    return {"topic_id": topic_id, "display_name": topic_id.upper(), **fields}


def refs(*ids: str) -> list[dict[str, str]]:
    return [{"item_id": i} for i in ids]


def book(catalog_id: str = "book", *, display_name: str = "Book") -> dict[str, Any]:
    return {
        "catalog_id": catalog_id,
        "display_name": display_name,
        "topics": [
            topic("ch1", child_topic_refs=[{"topic_id": "s1"}, {"topic_id": "s2"}]),
            topic("s1", item_refs=[{"item_id": "q1", "difficulty": 0.25}, {"item_id": "t1"}]),
            topic("s2", item_refs=refs("q2"), prerequisite_topic_refs=[{"topic_id": "s1"}]),
        ],
    }


ITEMS = [
    item("q1", difficulty=0.5, tags=["easy"], content_type="mcq", theory_item_refs=[{"item_id": "t1"}]),
    item("q2"),
    item("t1", scorable=False, content_type="theory"),
]


@pytest.fixture
def loaded(post: Client) -> Client:
    """The client, with ITEMS and the catalog 'book' stored for app-1."""
    assert post("/v2/upsert-items", {"items": ITEMS}).body == OK
    assert post("/v2/upsert-catalog", book()).body == OK
    return post


def item_db(post: Client, key: str = "key-1") -> list[dict[str, Any]]:
    r = post("/v2/query-item-database", key=key)
    assert r.status == 200, r.body
    return r.body["data"]["items"]


def state(post: Client) -> dict[str, Any]:
    """Everything an application can query."""
    ids = post("/v2/query-catalog-ids").body["data"]["catalog_ids"]
    return {
        "items": item_db(post),
        "catalogs": {c: post("/v2/query-catalog", {"catalog_id": c}).body for c in ids},
    }


# -- upsert-items / query-item-database / delete-items / upsert-item-database -------------


@pytest.mark.parametrize("store_kind", ["memory", "sqlite", "postgres"])  # PostgreSQL too
def test_upsert_items_then_query_item_database(post: Client) -> None:
    r = post("/v2/upsert-items", {"items": [item("b"), *ITEMS]})
    assert r.status == 200 and r.body == {"data": {}}
    r = post("/v2/query-item-database")
    assert r.status == 200 and r.body == {
        "data": {
            "items": [
                {"item_id": "b", "display_name": "Item b", "scorable": True},
                {
                    "item_id": "q1",
                    "display_name": "Item q1",
                    "scorable": True,
                    "difficulty": 0.5,
                    "theory_item_refs": [{"item_id": "t1"}],
                    "content_type": "mcq",
                    "tags": ["easy"],
                },
                {"item_id": "q2", "display_name": "Item q2", "scorable": True},
                {"item_id": "t1", "display_name": "Item t1", "scorable": False, "content_type": "theory"},
            ]
        }
    }


def test_query_item_database_of_an_empty_application(post: Client) -> None:
    r = post("/v2/query-item-database")
    assert r.status == 200 and r.body == {"data": {"items": []}}


def test_upsert_items_replaces_an_item_whole(post: Client) -> None:
    post("/v2/upsert-items", {"items": [item("q1", tags=["a"], difficulty=0.3)]})
    r = post("/v2/upsert-items", {"items": [item("q1", display_name="New", content_type="text")]})
    assert r.status == 200 and r.body == OK
    assert item_db(post) == [{"item_id": "q1", "display_name": "New", "scorable": True, "content_type": "text"}]


def test_null_optional_fields_are_omitted(post: Client) -> None:
    r = post("/v2/upsert-items", {"items": [item("q1", difficulty=None, tags=None, content_type=None)]})
    assert r.status == 200 and r.body == OK
    assert item_db(post) == [{"item_id": "q1", "display_name": "Item q1", "scorable": True}]


def test_upsert_items_with_an_empty_list(post: Client) -> None:
    r = post("/v2/upsert-items", {"items": []})
    assert r.status == 200 and r.body == OK
    assert item_db(post) == []


def test_an_item_id_twice_in_one_upload_is_rejected(post: Client) -> None:
    r = post("/v2/upsert-items", {"items": [item("q1"), item("q2"), item("q1")]})
    assert r.status == 400 and r.body == err(400, "item 'q1' appears 2 times in one upload")
    assert item_db(post) == []


def test_delete_items(loaded: Client) -> None:
    r = loaded("/v2/delete-items", {"item_ids": ["q2", "absent", "q2"]})
    assert r.status == 200 and r.body == OK
    assert [i["item_id"] for i in item_db(loaded)] == ["q1", "t1"]


def test_delete_items_of_absent_ids_only(post: Client) -> None:
    r = post("/v2/delete-items", {"item_ids": ["nothing"]})
    assert r.status == 200 and r.body == OK


def test_upsert_item_database_replaces_the_whole_database(loaded: Client) -> None:
    r = loaded("/v2/upsert-item-database", {"items": [item("q2", display_name="Two"), item("z9")]})
    assert r.status == 200 and r.body == OK
    assert item_db(loaded) == [
        {"item_id": "q2", "display_name": "Two", "scorable": True},
        {"item_id": "z9", "display_name": "Item z9", "scorable": True},
    ]


def test_upsert_item_database_with_no_item_empties_it(loaded: Client) -> None:
    r = loaded("/v2/upsert-item-database", {"items": []})
    assert r.status == 200 and r.body == OK
    assert item_db(loaded) == []


def test_upsert_item_database_with_a_duplicate_changes_nothing(loaded: Client) -> None:
    before = state(loaded)
    r = loaded("/v2/upsert-item-database", {"items": [item("x"), item("x")]})
    assert r.status == 400 and r.body == err(400, "item 'x' appears 2 times in one upload")
    assert state(loaded) == before


# -- annotations ----------------------------------------------------------------------------


def test_upsert_item_database_annotation(loaded: Client, engine: Engine) -> None:
    body = {
        "catalog_id": "book",
        "item_annotations": [
            {"item_id": "q1", "text_plain": "What is 2+2?\n3\n4"},
            {"item_id": "t1", "catalog_id": "book"},
        ],
    }
    r = loaded("/v2/upsert-item-database-annotation", body)
    assert r.status == 200 and r.body == OK
    notes = engine.annotations(app="app-1")
    assert sorted(notes) == ["q1", "t1"]
    assert notes["q1"].text_plain == "What is 2+2?\n3\n4"
    assert notes["t1"].text_plain is None and notes["t1"].catalog_id == "book"
    assert engine.annotations(app="app-2") == {}
    # annotations stay out of the item database
    assert [sorted(i) for i in item_db(loaded)] == [
        ["content_type", "difficulty", "display_name", "item_id", "scorable", "tags", "theory_item_refs"],
        ["display_name", "item_id", "scorable"],
        ["content_type", "display_name", "item_id", "scorable"],
    ]


def test_annotations_are_replaced_per_item(loaded: Client, engine: Engine) -> None:
    loaded("/v2/upsert-item-database-annotation", {"item_annotations": [{"item_id": "q1", "text_plain": "old"}]})
    r = loaded("/v2/upsert-item-database-annotation", {"item_annotations": [{"item_id": "q1", "text_plain": "new"}]})
    assert r.status == 200 and r.body == OK
    assert {k: a.text_plain for k, a in engine.annotations(app="app-1").items()} == {"q1": "new"}


def test_annotation_fields_are_checked(post: Client) -> None:
    r = post("/v2/upsert-item-database-annotation", {"item_annotations": [{"item_id": "q1", "text": "x"}]})
    assert r.status == 400 and r.body == err(400, "invalid request: 'item_annotations[0].text' is not a known field")
    r = post("/v2/upsert-item-database-annotation", {})
    assert r.status == 400 and r.body == err(400, "invalid request: 'item_annotations' is required")


# -- catalogs --------------------------------------------------------------------------------


@pytest.mark.parametrize("store_kind", ["memory", "sqlite", "postgres"])  # PostgreSQL too
def test_upsert_catalog_then_query_it(loaded: Client) -> None:
    r = loaded("/v2/query-catalog", {"catalog_id": "book"})
    assert r.status == 200 and r.body == {
        "data": {
            "catalog_id": "book",
            "display_name": "Book",
            "topics": [
                {
                    "topic_id": "ch1",
                    "display_name": "CH1",
                    "child_topic_refs": [{"topic_id": "s1"}, {"topic_id": "s2"}],
                },
                {
                    "topic_id": "s1",
                    "display_name": "S1",
                    "item_refs": [{"item_id": "q1", "difficulty": 0.25}, {"item_id": "t1"}],
                },
                {
                    "topic_id": "s2",
                    "display_name": "S2",
                    "item_refs": [{"item_id": "q2"}],
                    "prerequisite_topic_refs": [{"topic_id": "s1"}],
                },
            ],
        }
    }


def test_upsert_catalog_replaces_it(loaded: Client) -> None:
    new = {"catalog_id": "book", "display_name": "Book 2", "topics": [topic("only", item_refs=refs("q2"))]}
    r = loaded("/v2/upsert-catalog", new)
    assert r.status == 200 and r.body == OK
    r = loaded("/v2/query-catalog", {"catalog_id": "book"})
    assert r.status == 200 and r.body == {"data": new}


def test_query_catalog_ids(loaded: Client) -> None:
    assert loaded("/v2/upsert-catalog", book("a-first")).body == OK
    assert loaded("/v2/upsert-catalog", book("Zeta")).body == OK
    r = loaded("/v2/query-catalog-ids")
    assert r.status == 200 and r.body == {"data": {"catalog_ids": ["Zeta", "a-first", "book"]}}


def test_query_catalog_ids_accepts_an_empty_object_and_nothing_else(post: Client) -> None:
    r = post("/v2/query-catalog-ids", {})
    assert r.status == 200 and r.body == {"data": {"catalog_ids": []}}
    r = post("/v2/query-catalog-ids", {"catalog_id": "x"})
    assert r.status == 400 and r.body == err(400, "invalid request: 'catalog_id' is not a known field")


def test_delete_catalog(loaded: Client) -> None:
    r = loaded("/v2/delete-catalog", {"catalog_id": "book"})
    assert r.status == 200 and r.body == OK
    assert loaded("/v2/query-catalog-ids").body == {"data": {"catalog_ids": []}}
    r = loaded("/v2/query-catalog", {"catalog_id": "book"})
    assert r.status == 404 and r.body == err(404, "catalog 'book' not found")
    # the items stay
    assert [i["item_id"] for i in item_db(loaded)] == ["q1", "q2", "t1"]


def test_delete_catalog_that_does_not_exist(post: Client) -> None:
    r = post("/v2/delete-catalog", {"catalog_id": "nope"})
    assert r.status == 404 and r.body == err(404, "catalog 'nope' not found")


def test_query_catalog_that_does_not_exist(post: Client) -> None:
    r = post("/v2/query-catalog", {"catalog_id": "nope"})
    assert r.status == 404 and r.body == err(404, "catalog 'nope' not found")


def test_query_catalog_needs_a_catalog_id(post: Client) -> None:
    r = post("/v2/query-catalog", {})
    assert r.status == 400 and r.body == err(400, "invalid request: 'catalog_id' is required")
    r = post("/v2/query-catalog")
    assert r.status == 400 and r.body == err(400, "invalid request: 'catalog_id' is required")


def test_catalog_with_unknown_items_is_rejected_with_every_problem(loaded: Client) -> None:
    bad = {
        "catalog_id": "bad",
        "display_name": "Bad",
        "topics": [
            topic(
                "a",
                item_refs=[{"item_id": "q1", "difficulty": 1.5}, {"item_id": "ghost"}],
                child_topic_refs=[{"topic_id": "b"}],
            ),
            topic("b", item_refs=refs("q2"), prerequisite_topic_refs=[{"topic_id": "b"}]),
            topic("b", item_refs=refs("q2")),
        ],
    }
    r = loaded("/v2/upsert-catalog", bad)
    assert r.status == 400 and r.body == err(
        400,
        "5 problems: catalog 'bad': duplicate topic id 'b' (2 times); "
        "catalog 'bad': topic 'a': difficulty of item 'q1' must be within 0..1, got 1.5; "
        "catalog 'bad': topic 'a': unknown item 'ghost'; "
        "catalog 'bad': topic 'a': holds both item_refs and child_topic_refs; "
        "catalog 'bad': prerequisite cycle through topics 'b'",
    )
    assert loaded("/v2/query-catalog-ids").body == {"data": {"catalog_ids": ["book"]}}


@pytest.mark.parametrize(
    ("topics", "message"),
    [
        (
            [],
            "2 problems: catalog 'c': catalog has no topic; "
            "catalog 'c': catalog has no item: at least one topic needs item_refs",
        ),
        ([topic("a")], "catalog 'c': catalog has no item: at least one topic needs item_refs"),
        (
            [
                topic("a", child_topic_refs=[{"topic_id": "x"}]),
                topic("b", child_topic_refs=[{"topic_id": "x"}]),
                topic("x", item_refs=refs("q1")),
            ],
            "catalog 'c': topic 'x' has 2 parents: 'a', 'b'",
        ),
        (
            [
                topic("a", child_topic_refs=[{"topic_id": "b"}]),
                topic("b", child_topic_refs=[{"topic_id": "a"}]),
                topic("x", item_refs=refs("q1")),
            ],
            "catalog 'c': hierarchy cycle through topics 'a', 'b'",
        ),
        (
            [topic("a", item_refs=refs("q1"), prerequisite_topic_refs=[{"topic_id": "gone"}])],
            "catalog 'c': topic 'a': unknown prerequisite topic 'gone'",
        ),
    ],
)
def test_catalog_rules_through_the_api(loaded: Client, topics: list[dict[str, Any]], message: str) -> None:
    r = loaded("/v2/upsert-catalog", {"catalog_id": "c", "display_name": "C", "topics": topics})
    assert r.status == 400 and r.body == err(400, message)


def test_difficulty_override_of_a_ref_is_checked_in_0_1(loaded: Client) -> None:
    cat = {
        "catalog_id": "c",
        "display_name": "C",
        "topics": [topic("a", item_refs=[{"item_id": "q1", "difficulty": -1}])],
    }
    r = loaded("/v2/upsert-catalog", cat)
    assert r.status == 400 and r.body == err(
        400, "catalog 'c': topic 'a': difficulty of item 'q1' must be within 0..1, got -1.0"
    )


@pytest.mark.parametrize("store_kind", ["memory", "sqlite", "postgres"])  # PostgreSQL too
def test_an_exercise_that_links_itself_as_its_theory_stays_an_exercise(post: Client, engine: Engine) -> None:
    selfish = item("q1", theory_item_refs=[{"item_id": "q1"}])
    assert post("/v2/upsert-items", {"items": [selfish, item("q2")]}).body == OK
    assert post("/v2/upsert-catalog", {**book(), "topics": [topic("a", item_refs=refs("q1", "q2"))]}).body == OK
    index = engine.catalog_index("book", app="app-1")
    assert index.is_theory.tolist() == [False, False] and index.theory_refs == {}
    event = {"type": "attempt", "item_id": "q1", "catalog_id": "book", "timestamp": "2025-01-06T09:00:00Z", "score": 1}
    assert post("/v2/upsert-events", {"user_id": "u1", "events": [event]}).body == OK
    status = post("/v2/user-status", {"user_id": "u1", "catalog_id": "book", "filter_list": [{}]})
    assert status.body["data"]["user_status_list"][0]["progress"] == 0.5  # the attempted exercise counts


def test_deleting_an_item_a_catalog_refers_to(loaded: Client, engine: Engine) -> None:
    assert engine.catalog_index("book", app="app-1").item_ids == ("q1", "t1", "q2")
    r = loaded("/v2/delete-items", {"item_ids": ["t1"]})
    assert r.status == 200 and r.body == OK
    # the catalog keeps the ref as stored, the item leaves the item order
    assert loaded("/v2/query-catalog", {"catalog_id": "book"}).body == {"data": book()}
    assert engine.catalog_index("book", app="app-1").item_ids == ("q1", "q2")
    # re-uploading the same catalog now names the missing item
    r = loaded("/v2/upsert-catalog", book())
    assert r.status == 400 and r.body == err(400, "catalog 'book': topic 's1': unknown item 't1'")


def test_engine_filter_over_a_stored_catalog(loaded: Client, engine: Engine) -> None:
    mask = engine.filter_mask("book", {"include_topic_ids": ["ch1"], "exclude_item_ids": ["t1"]}, app="app-1")
    assert mask.tolist() == [True, False, True]
    assert engine.filter_mask("book", None, app="app-1").tolist() == [True, True, True]
    # the compiled index follows content changes
    loaded("/v2/upsert-items", {"items": [item("q2", tags=["easy"])]})
    assert engine.filter_mask("book", {"include_tags": ["easy"]}, app="app-1").tolist() == [True, False, True]


# -- authentication, routing, decoding ----------------------------------------------------------

ENDPOINTS = [
    "/v2/upsert-items",
    "/v2/delete-items",
    "/v2/upsert-item-database",
    "/v2/upsert-item-database-annotation",
    "/v2/upsert-catalog",
    "/v2/query-catalog",
    "/v2/query-catalog-ids",
    "/v2/query-item-database",
    "/v2/delete-catalog",
]


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize("key", [None, "wrong", "", "KEY-1"])
def test_missing_or_wrong_key_is_401(post: Client, path: str, key: str | None) -> None:
    r = post(path, {"items": ITEMS}, key=key)
    assert r.status == 401 and r.body == err(401, "missing or wrong X-API-KEY header")


def test_header_name_is_case_insensitive(api: V2Api) -> None:
    r = api.handle("POST", "/v2/query-catalog-ids", headers={"x-api-key": "key-2"})
    assert r.status == 200 and r.body == {"data": {"catalog_ids": []}}


def test_authentication_can_be_disabled(engine: Engine) -> None:
    open_api = V2Api(engine)
    r = open_api.handle("POST", "/v2/upsert-items", body={"items": [item("q1")]})
    assert r.status == 200 and r.body == OK
    assert [i.item_id for i in engine.item_database(app="default")] == ["q1"]


@pytest.mark.parametrize("path", ["/v2/nope", "/v1/upsert-items", "/v2", "/", "", "/v2/upsert-items/extra"])
def test_unknown_path_is_404_before_the_key(post: Client, path: str) -> None:
    r = post(path, {}, key=None)
    assert r.status == 404 and r.body == err(404, f"no endpoint at path '{path}'")


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_wrong_method_is_405_before_the_key(post: Client, method: str) -> None:
    r = post("/v2/query-catalog-ids", method=method, key=None)
    assert r.status == 405 and r.body == err(
        405, f"method {method} is not allowed on '/v2/query-catalog-ids'; use POST"
    )
    assert r.headers == {"Allow": "POST"}


def test_a_trailing_slash_and_a_lower_case_method_are_accepted(post: Client) -> None:
    r = post("/v2/query-catalog-ids/", method="post")
    assert r.status == 200 and r.body == {"data": {"catalog_ids": []}}


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"])
def test_a_body_that_is_not_sent_as_json_is_400_and_changes_nothing(api: V2Api, content_type: str) -> None:
    headers = {"X-API-KEY": "key-1", "Content-Type": content_type}
    r = api.handle("POST", "/v2/upsert-items", body=json.dumps({"items": [item("q1")]}), headers=headers)
    assert r.status == 400 and r.body == {
        "error": {"status": 400, "message": f"Content-Type must be application/json, got {content_type!r}"}
    }
    assert item_db(Client(api)) == []
    # JSON with parameters, in any case, or no Content-Type at all: accepted
    for sent in ({"Content-Type": "Application/JSON; charset=utf-8"}, {}):
        r = api.handle("POST", "/v2/upsert-items", body={"items": [item("q1")]}, headers={"X-API-KEY": "key-1", **sent})
        assert r.body == OK


@pytest.mark.parametrize("encode", [lambda b: b, json.dumps, lambda b: json.dumps(b).encode()])
def test_bodies_as_dict_str_or_bytes(post: Client, encode: Callable[[Any], Any]) -> None:
    r = post("/v2/upsert-items", encode({"items": [item("q1")]}))
    assert r.status == 200 and r.body == OK
    assert [i["item_id"] for i in item_db(post)] == ["q1"]


def _deep(depth: int) -> list[Any]:
    outer: list[Any] = []
    inner = outer
    for _ in range(depth):
        inner.append([])
        inner = inner[0]
    return outer


DEEP = _deep(100_000)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"items": [', "malformed JSON: Expecting value at line 1 column 12"),
        (b"\xff\xfe", "body is not valid UTF-8"),
        (b"[]", "body must be a JSON object, not list"),
        ('"items"', "body must be a JSON object, not str"),
        (b"null", "body must be a JSON object, not NoneType"),
        ({"items": {1, 2}}, "body is not JSON-serialisable: Object of type set is not JSON serializable"),
        (42, "body must be JSON bytes, str or a dict, not int"),
        (
            b'{"items": [{"difficulty": ' + b"1" * 5000 + b"}]}",
            "malformed JSON: Exceeds the limit (4300 digits) for integer string conversion: value has 5000 digits; "
            "use sys.set_int_max_str_digits() to increase the limit",
        ),
        (
            {"items": [{"difficulty": 10**5000}]},
            "body is not JSON-serialisable: Exceeds the limit (4300 digits) for integer string conversion; "
            "use sys.set_int_max_str_digits() to increase the limit",
        ),
        (b'{"items": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "malformed JSON: nested too deeply"),
        # deeper than pydantic's parser goes, though not than Python's
        (b'{"items": ' + b"[" * 500 + b"]" * 500 + b"}", "malformed JSON: nested too deeply"),
        (
            b'{"items": [{"item_id": "q1", "display_name": "\\ud800", "scorable": true}]}',
            "the body holds a lone surrogate escape (e.g. \\ud800), which is not Unicode text",
        ),
        (
            b'{"items": [{"item_id": "q1", "display_name": "\\udc00", "scorable": true}]}',
            "the body holds a lone surrogate escape (e.g. \\ud800), which is not Unicode text",
        ),
        ({"items": DEEP}, "body is not JSON-serialisable: nested too deeply"),
    ],
)
def test_malformed_bodies_are_400(post: Client, body: Any, message: str) -> None:
    r = post("/v2/upsert-items", body)
    assert r.status == 400 and r.body == err(400, message)


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        ("/v2/upsert-items", {}, "'items' is required"),
        ("/v2/upsert-items", {"items": [item("q1", colour="red")]}, "'items[0].colour' is not a known field"),
        ("/v2/upsert-items", {"items": [item("q1")], "extra": 1}, "'extra' is not a known field"),
        ("/v2/upsert-items", {"items": {"q1": 1}}, "'items': input should be a valid array, got dict"),
        (
            "/v2/upsert-items",
            {"items": [item("q1", scorable="yes")]},
            "'items[0].scorable': input should be a valid boolean, got 'yes'",
        ),
        (
            "/v2/upsert-items",
            {"items": [item("q1", scorable=1)]},
            "'items[0].scorable': input should be a valid boolean, got 1",
        ),
        (
            "/v2/upsert-items",
            {"items": [item("q1", difficulty="0.5")]},
            "'items[0].difficulty': input should be a valid number, got '0.5'",
        ),
        (
            "/v2/upsert-items",
            {"items": [item("q1", difficulty=1.2)]},
            "'items[0].difficulty': input should be less than or equal to 1, got 1.2",
        ),
        (
            "/v2/upsert-items",
            {"items": [item("q1", display_name=7)]},
            "'items[0].display_name': input should be a valid string, got 7",
        ),
        (
            "/v2/upsert-items",
            {"items": [item("q1", tags="easy")]},
            "'items[0].tags': input should be a valid array, got 'easy'",
        ),
        ("/v2/upsert-items", {"items": [{"item_id": "q1", "scorable": True}]}, "'items[0].display_name' is required"),
        ("/v2/delete-items", {"item_ids": "q1"}, "'item_ids': input should be a valid array, got 'q1'"),
        (
            "/v2/user-status",
            {"user_id": "u1", "catalog_id": "c1", "filter_list": [{"include_tags": ["a b"]}]},
            "'filter_list[0].include_tags[0]' must match ^[a-zA-Z0-9_\\-:]{1,128}$, got 'a b'",
        ),
        ("/v2/query-catalog", {"catalog_id": 5}, "'catalog_id': input should be a valid string, got 5"),
        (
            "/v2/upsert-catalog",
            {**book(), "topics": [topic("a", item_refs=[{"id": "q1"}])]},
            "'topics[0].item_refs[0].item_id' is required; 'topics[0].item_refs[0].id' is not a known field",
        ),
        (
            "/v2/upsert-catalog",
            {**book(), "topics": [topic("a", item_refs=[{"item_id": "q1", "difficulty": "hard"}])]},
            "'topics[0].item_refs[0].difficulty': input should be a valid number, got 'hard'",
        ),
    ],
)
def test_wrong_fields_and_types_are_400_naming_the_field(post: Client, path: str, body: Any, message: str) -> None:
    r = post(path, body)
    assert r.status == 400 and set(r.body) == {"error"} and r.body["error"]["status"] == 400
    got = r.body["error"]["message"]
    assert got.startswith("invalid request: ")
    # one problem per wrong field, each naming its field; pydantic decides their order
    assert sorted(got.removeprefix("invalid request: ").split("; ")) == sorted(message.split("; "))


PATTERN = "^[a-zA-Z0-9_\\-:]{1,128}$"


@pytest.mark.parametrize(
    ("path", "body", "field", "value"),
    [
        ("/v2/upsert-items", {"items": [item("a b")]}, "items[0].item_id", "a b"),
        ("/v2/upsert-items", {"items": [item("q1"), item("x" * 129)]}, "items[1].item_id", "x" * 129),
        ("/v2/upsert-items", {"items": [item("")]}, "items[0].item_id", ""),
        ("/v2/upsert-items", {"items": [item("q1", tags=["ok", "not/ok"])]}, "items[0].tags[1]", "not/ok"),
        (
            "/v2/upsert-items",
            {"items": [item("q1", theory_item_refs=[{"item_id": "t.1"}])]},
            "items[0].theory_item_refs[0].item_id",
            "t.1",
        ),
        ("/v2/upsert-item-database", {"items": [item("ü")]}, "items[0].item_id", "ü"),
        ("/v2/delete-items", {"item_ids": ["q1", "q 2"]}, "item_ids[1]", "q 2"),
        (
            "/v2/upsert-item-database-annotation",
            {"item_annotations": [{"item_id": "#"}]},
            "item_annotations[0].item_id",
            "#",
        ),
        ("/v2/upsert-item-database-annotation", {"catalog_id": "a\n", "item_annotations": []}, "catalog_id", "a\n"),
        ("/v2/upsert-catalog", {**book(), "catalog_id": "c!"}, "catalog_id", "c!"),
        ("/v2/upsert-catalog", {**book(), "topics": [topic("t t", item_refs=refs("q1"))]}, "topics[0].topic_id", "t t"),
        ("/v2/query-catalog", {"catalog_id": "a,b"}, "catalog_id", "a,b"),
        ("/v2/delete-catalog", {"catalog_id": "*"}, "catalog_id", "*"),
    ],
)
def test_identifier_rule_on_ids_and_tags(post: Client, path: str, body: Any, field: str, value: str) -> None:
    r = post(path, body)
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    assert r.status == 400 and r.body == err(400, f"invalid request: '{field}' must match {PATTERN}, got {shown}")


def test_a_long_offending_value_is_shortened_in_the_message(post: Client) -> None:
    r = post("/v2/query-catalog", {"catalog_id": "é" * 10_000})
    assert r.status == 400 and r.body == err(
        400, f"invalid request: 'catalog_id' must match {PATTERN}, got '{'é' * 56}..."
    )


def test_identifier_rule_accepts_every_allowed_character(post: Client) -> None:
    odd = "aZ09_-:" + "x" * 121
    r = post("/v2/upsert-items", {"items": [item(odd, tags=[":", "-", "_"])]})
    assert r.status == 200 and r.body == OK
    assert item_db(post)[0]["item_id"] == odd


# -- limits ---------------------------------------------------------------------------------


@pytest.fixture
def small(make_engine: Callable[..., Engine]) -> Client:
    limits = Limits(max_items=5, max_catalogs=2, max_topics_per_catalog=3, max_topic_item_refs=4)
    return Client(V2Api(make_engine(limits=limits), api_keys=KEYS))


def _items(*ids: str) -> dict[str, Any]:
    return {"items": [item(i) for i in ids]}


def test_item_limit_on_upsert_items(small: Client) -> None:
    r = small("/v2/upsert-items", _items("a", "b", "c", "d", "e", "f"))
    assert r.status == 413 and r.body == err(413, "limit 'items in the item database' exceeded: 6 > 5")
    assert small("/v2/upsert-items", _items("a", "b", "c")).status == 200
    r = small("/v2/upsert-items", _items("a", "d", "e", "f"))
    assert r.status == 413 and r.body == err(413, "limit 'items in the item database' exceeded: 6 > 5")
    assert [i["item_id"] for i in item_db(small)] == ["a", "b", "c"]
    # updating existing items does not count twice; reaching the limit exactly is fine
    r = small("/v2/upsert-items", _items("a", "b", "c", "d", "e"))
    assert r.status == 200 and r.body == OK


def test_item_limit_is_per_application(small: Client) -> None:
    assert small("/v2/upsert-items", _items("a", "b", "c", "d", "e")).status == 200
    r = small("/v2/upsert-items", _items("a", "b", "c", "d", "e"), key="key-2")
    assert r.status == 200 and r.body == OK


def test_item_limit_on_upsert_item_database(small: Client) -> None:
    assert small("/v2/upsert-items", _items("a", "b", "c", "d", "e")).status == 200
    r = small("/v2/upsert-item-database", _items("v", "w", "x", "y", "z", "zz"))
    assert r.status == 413 and r.body == err(413, "limit 'items in the item database' exceeded: 6 > 5")
    assert [i["item_id"] for i in item_db(small)] == ["a", "b", "c", "d", "e"]
    r = small("/v2/upsert-item-database", _items("v", "w", "x", "y", "z"))
    assert r.status == 200 and r.body == OK


def _cat(catalog_id: str, n_topics: int = 1, n_refs: int = 1) -> dict[str, Any]:
    ids = ["a", "b", "c", "d", "e"]
    topics = [topic(f"t{k}") for k in range(n_topics)]
    topics[0]["item_refs"] = [{"item_id": ids[k]} for k in range(n_refs)]
    return {"catalog_id": catalog_id, "display_name": catalog_id, "topics": topics}


def test_catalog_limits(small: Client) -> None:
    assert small("/v2/upsert-items", _items("a", "b", "c", "d", "e")).status == 200
    r = small("/v2/upsert-catalog", _cat("big", n_topics=4))
    assert r.status == 413 and r.body == err(413, "limit 'topics per catalog' exceeded (big): 4 > 3")
    r = small("/v2/upsert-catalog", _cat("big", n_refs=5))
    assert r.status == 413 and r.body == err(413, "limit 'topic item refs per catalog' exceeded (big): 5 > 4")
    assert small("/v2/upsert-catalog", _cat("c1", n_topics=3, n_refs=4)).status == 200
    assert small("/v2/upsert-catalog", _cat("c2")).status == 200
    r = small("/v2/upsert-catalog", _cat("c3"))
    assert r.status == 413 and r.body == err(413, "limit 'catalogs' exceeded: 3 > 2")
    # replacing an existing catalog at the limit is fine, and so is another application's
    assert small("/v2/upsert-catalog", _cat("c2", n_refs=2)).body == OK
    assert small("/v2/upsert-items", _items("a"), key="key-2").body == OK
    assert small("/v2/upsert-catalog", _cat("c3"), key="key-2").body == OK
    assert small("/v2/query-catalog-ids").body == {"data": {"catalog_ids": ["c1", "c2"]}}


def test_catalog_limits_at_the_documented_maxima() -> None:
    post = Client(V2Api(Engine(), api_keys=KEYS))  # one store is enough for the size check
    limits = Limits()
    n_refs = limits.max_topic_item_refs
    per_topic = n_refs // limits.max_topics_per_catalog
    assert (
        post(
            "/v2/upsert-items",
            {"items": [{"item_id": f"i{k}", "display_name": "", "scorable": True} for k in range(n_refs + 1)]},
        ).body
        == OK
    )

    def catalog(n_topics: int, extra_ref: bool) -> dict[str, Any]:
        topics = [
            {
                "topic_id": f"t{t}",
                "display_name": "",
                "item_refs": [{"item_id": f"i{t * per_topic + k}"} for k in range(per_topic)],
            }
            for t in range(n_topics)
        ]
        if extra_ref:
            topics[0]["item_refs"].append({"item_id": f"i{n_refs}"})
        return {"catalog_id": "max", "display_name": "", "topics": topics}

    at_max = catalog(limits.max_topics_per_catalog, extra_ref=False)
    assert post("/v2/upsert-catalog", at_max).body == OK
    r = post("/v2/upsert-catalog", catalog(limits.max_topics_per_catalog, extra_ref=True))
    assert r.status == 413 and r.body == err(413, "limit 'topic item refs per catalog' exceeded (max): 20001 > 20000")
    over = catalog(limits.max_topics_per_catalog - 1, extra_ref=False)
    over["topics"] += [{"topic_id": "x1", "display_name": ""}, {"topic_id": "x2", "display_name": ""}]
    r = post("/v2/upsert-catalog", over)
    assert r.status == 413 and r.body == err(413, "limit 'topics per catalog' exceeded (max): 2501 > 2500")
    assert post("/v2/query-catalog", {"catalog_id": "max"}).body == {"data": at_max}


# -- applications and atomicity -----------------------------------------------------------------


@pytest.mark.parametrize("store_kind", ["memory", "sqlite", "postgres"])  # PostgreSQL too
def test_applications_never_see_each_other(loaded: Client) -> None:
    assert item_db(loaded, key="key-2") == []
    assert loaded("/v2/query-catalog-ids", key="key-2").body == {"data": {"catalog_ids": []}}
    r = loaded("/v2/query-catalog", {"catalog_id": "book"}, key="key-2")
    assert r.status == 404 and r.body == err(404, "catalog 'book' not found")
    r = loaded("/v2/delete-catalog", {"catalog_id": "book"}, key="key-2")
    assert r.status == 404
    # app-2 cannot build a catalog on app-1's items
    r = loaded("/v2/upsert-catalog", book(), key="key-2")
    assert r.status == 400 and r.body == err(
        400,
        "3 problems: catalog 'book': topic 's1': unknown item 'q1'; catalog 'book': topic 's1': unknown item 't1'; "
        "catalog 'book': topic 's2': unknown item 'q2'",
    )
    # the same ids in app-2 are its own
    assert loaded("/v2/upsert-items", {"items": [item("q1", display_name="Other")]}, key="key-2").body == OK
    assert loaded("/v2/delete-items", {"item_ids": ["q2"]}, key="key-2").body == OK
    assert loaded("/v2/upsert-item-database", {"items": []}, key="key-2").body == OK
    assert [i["display_name"] for i in item_db(loaded)] == ["Item q1", "Item q2", "Item t1"]
    assert loaded("/v2/query-catalog-ids").body == {"data": {"catalog_ids": ["book"]}}


@pytest.mark.parametrize("store_kind", ["memory", "sqlite", "postgres"])  # PostgreSQL too
def test_a_failing_bulk_call_changes_nothing(loaded: Client) -> None:
    before = state(loaded)
    failing = [
        ("/v2/upsert-items", {"items": [item("new1"), item("q1", display_name="changed"), item("bad id")]}),
        ("/v2/upsert-items", {"items": [item("new1"), item("new1")]}),
        ("/v2/upsert-item-database", {"items": [item("only"), {"item_id": "x"}]}),
        ("/v2/delete-items", {"item_ids": ["q1", "bad id"]}),
        ("/v2/upsert-catalog", {**book(), "display_name": "changed", "topics": [topic("a", item_refs=refs("nope"))]}),
        ("/v2/upsert-item-database-annotation", {"item_annotations": [{"item_id": "q1"}, {"item_id": ""}]}),
    ]
    for path, body in failing:
        r = loaded(path, body)
        assert r.status == 400, (path, r.body)
        assert state(loaded) == before, path


@pytest.mark.parametrize("call", ["upsert_items", "replace_item_database", "delete_items", "upsert_catalog"])
@pytest.mark.parametrize("store_kind", ["memory", "sqlite", "postgres"])  # PostgreSQL too
def test_a_store_failure_mid_call_rolls_back(
    loaded: Client, engine: Engine, call: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine applies a call in one transaction: a failure after some writes undoes them."""
    before = state(loaded)

    def explode(app: str, names: object = None) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(engine._content, "bump_version", explode)  # the last write of each call
    args: dict[str, Any] = {
        "upsert_items": [item("new"), item("q1", display_name="changed")],
        "replace_item_database": [item("only")],
        "delete_items": ["q1", "q2"],
        "upsert_catalog": {**book(), "display_name": "changed"},
    }
    with pytest.raises(RuntimeError, match="disk full"):
        getattr(engine, call)(args[call], app="app-1")
    monkeypatch.undo()
    assert state(loaded) == before
