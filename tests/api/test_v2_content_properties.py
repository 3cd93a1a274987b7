"""Properties of the v2 content endpoints on every store.

- upsert then query round-trips any valid catalog and item database;
- a request the API rejects never answers 5xx and never changes stored state.

The engine fixture is shared by the examples of one test on purpose: each
round-trip example works in an application of its own, and the invalid
requests must leave the shared state as it was.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from learnloop import Engine, Limits
from learnloop.api import V2Api
from learnloop.content import Item, compile_catalog, compile_filter
from learnloop.store import TABLES
from learnloop.testing import content, filters, item_databases


def shared_engine(max_examples: int) -> settings:
    return settings(
        max_examples=max_examples,
        deadline=None,
        # the engine is shared across examples on purpose (see the module docstring)
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )


CONTENT_PATHS = [
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


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", exclude_none=True)


_apps = itertools.count()


# -- round trip --------------------------------------------------------------------------------


@shared_engine(max_examples=40)
@given(drawn=content(max_items=10, max_topics=8), data=st.data())
def test_upsert_then_query_round_trips_any_valid_catalog(engine: Engine, drawn: Any, data: st.DataObject) -> None:
    items, catalog = drawn
    app = f"round-trip-{next(_apps)}"
    api = V2Api(engine, api_keys={"k": app})
    headers = {"X-API-KEY": "k"}

    def post(path: str, body: Any) -> Any:
        r = api.handle("POST", path, body=json.dumps(body).encode(), headers=headers)
        assert r.status == 200, r.body
        return r.body

    assert post("/v2/upsert-items", {"items": [dump(i) for i in items]}) == {"data": {}}
    assert post("/v2/upsert-catalog", dump(catalog)) == {"data": {}}
    assert post("/v2/query-catalog", {"catalog_id": catalog.catalog_id}) == {"data": dump(catalog)}
    assert post("/v2/query-catalog-ids", {}) == {"data": {"catalog_ids": [catalog.catalog_id]}}
    by_id = sorted(items, key=lambda i: i.item_id)
    assert post("/v2/query-item-database", {}) == {"data": {"items": [dump(i) for i in by_id]}}
    # the stored catalog compiles to the same item order and filter masks as the drawn one
    flt = data.draw(filters(catalog, items))
    expected = compile_catalog(catalog, {i.item_id: i for i in items})
    assert engine.catalog_index(catalog.catalog_id, app=app).item_ids == expected.item_ids
    assert engine.filter_mask(catalog.catalog_id, flt, app=app).tolist() == compile_filter(expected, flt).tolist()


# -- rejected requests change nothing --------------------------------------------------------------

LIMITS = Limits(max_items=12, max_catalogs=3, max_topics_per_catalog=6, max_topic_item_refs=10)
KEYS = {"key-1": "app-1", "key-2": "app-2"}
SEED_ITEMS = [
    {"item_id": "q1", "display_name": "Q1", "scorable": True, "tags": ["easy"], "content_type": "mcq"},
    {"item_id": "q2", "display_name": "Q2", "scorable": True, "difficulty": 0.5},
    {"item_id": "t1", "display_name": "T1", "scorable": False, "content_type": "theory"},
]
SEED_CATALOG = {
    "catalog_id": "book",
    "display_name": "Book",
    "topics": [
        {"topic_id": "ch", "display_name": "Ch", "child_topic_refs": [{"topic_id": "a"}, {"topic_id": "b"}]},
        {"topic_id": "a", "display_name": "A", "item_refs": [{"item_id": "q1"}, {"item_id": "t1"}]},
        {
            "topic_id": "b",
            "display_name": "B",
            "item_refs": [{"item_id": "q2", "difficulty": 0.7}],
            "prerequisite_topic_refs": [{"topic_id": "a"}],
        },
    ],
}


@pytest.fixture
def seeded(make_engine: Any) -> tuple[Engine, V2Api]:
    engine = make_engine(limits=LIMITS)
    api = V2Api(engine, api_keys=KEYS)
    for key in KEYS:
        headers = {"X-API-KEY": key}
        assert api.handle("POST", "/v2/upsert-items", body={"items": SEED_ITEMS}, headers=headers).ok
        assert api.handle("POST", "/v2/upsert-catalog", body=SEED_CATALOG, headers=headers).ok
        notes = {"item_annotations": [{"item_id": "q1", "text_plain": "note"}]}
        assert api.handle("POST", "/v2/upsert-item-database-annotation", body=notes, headers=headers).ok
    return engine, api


def snapshot(engine: Engine) -> dict[tuple[str, str], list[Any]]:
    """Every stored row of both applications."""
    return {(table, app): list(engine.store.scan(table, app)) for table in TABLES for app in KEYS.values()}


def check_envelope(status: int, body: Any) -> None:
    assert status in {200, 400, 401, 404, 405, 413}, (status, body)
    assert isinstance(body, dict) and len(body) == 1, body
    if status == 200:
        assert isinstance(body["data"], dict)
    else:
        assert body["error"]["status"] == status and isinstance(body["error"]["message"], str)
        assert body["error"]["message"]


# random JSON, bytes and text bodies
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
FIELD_NAMES = [
    "items",
    "item_ids",
    "item_annotations",
    "catalog_id",
    "display_name",
    "topics",
    "text_plain",
    "item_id",
    "scorable",
    "difficulty",
    "tags",
]
random_bodies = st.one_of(
    st.none(),
    json_values,
    st.dictionaries(st.sampled_from(FIELD_NAMES), json_values, max_size=3),
    st.binary(max_size=40),
    st.text(max_size=40),
    json_values.map(lambda v: json.dumps(v).encode()),
)


@shared_engine(max_examples=120)
@given(
    method=st.sampled_from(["POST", "POST", "POST", "GET", "PUT"]),
    path=st.sampled_from([*CONTENT_PATHS, "/v2/nope", "/v2/upsert-items/x"]),
    key=st.sampled_from(["key-1", "key-1", "key-2", "wrong", None]),
    body=random_bodies,
)
def test_a_random_request_never_fails_with_5xx_and_a_rejected_one_changes_nothing(
    seeded: tuple[Engine, V2Api], method: str, path: str, key: str | None, body: Any
) -> None:
    engine, api = seeded
    before = snapshot(engine)
    r = api.handle(method, path, body=body, headers={} if key is None else {"X-API-KEY": key})
    check_envelope(r.status, r.body)
    event(f"status {r.status}")
    if r.status != 200:
        assert snapshot(engine) == before


# requests made invalid on purpose: one mutation of a valid request
REQUIRED = {
    "item_id",
    "display_name",
    "scorable",
    "topic_id",
    "catalog_id",
    "topics",
    "items",
    "item_ids",
    "item_annotations",
}
ID_KEYS = {"item_id", "topic_id", "catalog_id"}
BAD_IDS = ["", "a b", "x" * 129, "é", "a/b", "a\n", "a.b", "#"]


def dict_paths(doc: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(doc, dict):
        yield path
        for k, v in doc.items():
            yield from dict_paths(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from dict_paths(v, (*path, i))


def at(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def wrong_type(value: Any) -> Any:
    if isinstance(value, bool):
        return "true"
    if isinstance(value, (int, float)):
        return "0.5"
    if isinstance(value, str):
        return 5
    if isinstance(value, list):
        return "a-string"
    return [1]


KINDS = ["items", "database", "delete", "annotation", "catalog", "catalog_id"]


@st.composite
def valid_requests(draw: st.DrawFn, kind: str) -> tuple[str, dict[str, Any]]:
    items, catalog = draw(content(max_items=6, max_topics=5))
    extra = draw(item_databases(max_size=3))
    known = {i.item_id for i in items} | {i["item_id"] for i in SEED_ITEMS}
    if kind in ("items", "database"):
        return f"/v2/upsert-{'items' if kind == 'items' else 'item-database'}", {"items": [dump(i) for i in items]}
    if kind == "delete":
        return "/v2/delete-items", {"item_ids": sorted(known)[: draw(st.integers(1, len(known)))]}
    if kind == "annotation":
        notes = [{"item_id": i.item_id, "text_plain": i.display_name} for i in extra]
        return "/v2/upsert-item-database-annotation", {"catalog_id": "book", "item_annotations": notes}
    if kind == "catalog":
        # refer only to items the application has
        topics = [dump(t) for t in catalog.topics]
        for t in topics:
            for ref in t.get("item_refs", []):
                ref["item_id"] = draw(st.sampled_from(sorted(i["item_id"] for i in SEED_ITEMS)))
            if "item_refs" in t:
                t["item_refs"] = list({r["item_id"]: r for r in t["item_refs"]}.values())
        return "/v2/upsert-catalog", {**dump(catalog), "topics": topics}
    return draw(st.sampled_from(["/v2/query-catalog", "/v2/delete-catalog"])), {"catalog_id": "book"}


@st.composite
def invalid_requests(draw: st.DrawFn, kind: str) -> tuple[str, dict[str, Any], str]:
    path, body = draw(valid_requests(kind))
    body = copy.deepcopy(body)
    mutations = ["unknown_field", "bad_id", "drop_required", "wrong_type"]
    if path == "/v2/upsert-catalog":
        mutations += ["unknown_item", "self_prerequisite", "duplicate_topic", "self_child"]
    if path in ("/v2/upsert-items", "/v2/upsert-item-database") and body["items"]:
        mutations.append("duplicate_item")
    mutation = draw(st.sampled_from(mutations))
    places = list(dict_paths(body))
    if mutation == "unknown_field":
        at(body, draw(st.sampled_from(places)))["unexpected_field"] = 1
    elif mutation == "bad_id":
        ids = [(p, k) for p in places for k, v in at(body, p).items() if k in ID_KEYS and isinstance(v, str)]
        lists = [(p, k) for p in places for k, v in at(body, p).items() if k in ("tags", "item_ids") and v]
        where, key = draw(st.sampled_from(ids + lists))
        bad = draw(st.sampled_from(BAD_IDS))
        if key in ID_KEYS:
            at(body, where)[key] = bad
        else:
            at(body, where)[key][draw(st.integers(0, len(at(body, where)[key]) - 1))] = bad
    elif mutation in ("drop_required", "wrong_type"):
        annotation = path.endswith("annotation")
        keys = [(p, k) for p in places for k in at(body, p) if k in REQUIRED and not (annotation and k == "catalog_id")]
        if mutation == "wrong_type":
            keys = [(p, k) for p in places for k in at(body, p)]
        where, key = draw(st.sampled_from(keys))
        if mutation == "drop_required":
            del at(body, where)[key]
        else:
            at(body, where)[key] = wrong_type(at(body, where)[key])
    elif mutation == "duplicate_item":
        body["items"].append(draw(st.sampled_from(body["items"])))
    else:
        topic = draw(st.sampled_from(body["topics"]))
        if mutation == "unknown_item":
            topic.setdefault("item_refs", []).append({"item_id": "not-in-the-database"})
        elif mutation == "self_prerequisite":
            topic.setdefault("prerequisite_topic_refs", []).append({"topic_id": topic["topic_id"]})
        elif mutation == "self_child":
            topic.setdefault("child_topic_refs", []).append({"topic_id": topic["topic_id"]})
        else:
            body["topics"].append(copy.deepcopy(topic))
    return path, body, mutation


@pytest.mark.parametrize("kind", KINDS)
@shared_engine(max_examples=40)
@given(data=st.data(), as_bytes=st.booleans(), key=st.sampled_from(["key-1", "key-2"]))
def test_an_invalid_request_is_4xx_and_changes_nothing(
    seeded: tuple[Engine, V2Api], kind: str, data: st.DataObject, as_bytes: bool, key: str
) -> None:
    engine, api = seeded
    path, body, mutation = data.draw(invalid_requests(kind))
    event(f"{mutation} on {path}")
    before = snapshot(engine)
    r = api.handle("POST", path, body=json.dumps(body).encode() if as_bytes else body, headers={"X-API-KEY": key})
    check_envelope(r.status, r.body)
    assert r.status in (400, 413), (mutation, path, body, r.body)
    assert snapshot(engine) == before


def test_a_valid_request_of_each_kind_is_accepted(seeded: tuple[Engine, V2Api]) -> None:
    """The invalid requests above are one mutation away from requests like these."""
    engine, api = seeded
    for path, body in [
        ("/v2/upsert-items", {"items": [dict(SEED_ITEMS[0], display_name="new")]}),
        ("/v2/upsert-catalog", SEED_CATALOG),
        ("/v2/upsert-item-database-annotation", {"catalog_id": "book", "item_annotations": [{"item_id": "q2"}]}),
        ("/v2/query-catalog", {"catalog_id": "book"}),
        ("/v2/delete-items", {"item_ids": ["q2"]}),
        ("/v2/delete-catalog", {"catalog_id": "book"}),
        ("/v2/upsert-item-database", {"items": SEED_ITEMS}),
    ]:
        r = api.handle("POST", path, body=body, headers={"X-API-KEY": "key-1"})
        assert r.status == 200, (path, r.body)
    assert [i.item_id for i in engine.item_database(app="app-1")] == ["q1", "q2", "t1"]
    assert engine.catalog_ids(app="app-1") == [] and engine.catalog_ids(app="app-2") == ["book"]
    assert isinstance(engine.item_database(app="app-2")[0], Item)
