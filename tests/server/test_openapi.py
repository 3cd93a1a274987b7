"""The OpenAPI documents of v1, v2 and the voice API: valid OpenAPI 3.1, served, complete, and kept.

schemathesis generates requests from each document (valid ones and invalid
ones, a few per operation, derandomized) and sends them with a valid API key
to the ASGI application in process: no answer may be a 5xx, and every answer
must conform to the document (a documented status code, its content type and
its schema). Known-good scenarios check the success bodies the fuzzing rarely
reaches (an existing asset, a recommendation, a real recording's scores).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from httpserve import InProcess
from hypothesis import HealthCheck, Phase, given, settings
from openapi_spec_validator import OpenAPIV31SpecValidator, validate
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from starlette.applications import Starlette
from starlette.routing import Mount

from learnloop import Engine
from learnloop.api import V2Api
from learnloop.api import v1 as v1_module
from learnloop.server import Keys, create_app
from learnloop.server.openapi import NAMES, PREFIXES, document
from learnloop.voice import api as voice_module

KEY = "k-1"
HEADERS = {"X-API-KEY": KEY}
# seconds a request may take, as InProcess gives: schemathesis's own 10 s cancels a first voice scoring on a
# loaded machine (a scoring process started, the model loaded), which the server answers as a shutdown (503)
TIMEOUT = 60
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
METHODS = ("get", "put", "post", "delete", "patch")
EXAMPLES = 25


def _operations() -> list[tuple[str, str, str]]:
    return [
        (name, path, method)
        for name in NAMES
        for path, item in document(name)["paths"].items()
        for method in METHODS
        if method in item
    ]


OPERATIONS = _operations()


@pytest.fixture(scope="module")
def app() -> Starlette:
    return create_app(Engine(seed=5), keys=Keys(api_keys={KEY: "app-1"}))


@pytest.fixture(scope="module")
def client(app: Starlette) -> Iterator[InProcess]:
    client = InProcess(app)
    yield client
    client.close()


@pytest.fixture(scope="module")
def schemas(app: Starlette) -> dict[str, Any]:
    """Each document as schemathesis loads it from the server."""
    return {name: schemathesis.openapi.from_asgi(f"{PREFIXES[name]}/openapi.json", app) for name in NAMES}


# -- the documents ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_each_document_is_valid_openapi_3_1(name: str) -> None:
    doc = document(name)
    assert doc["openapi"].startswith("3.1.")
    validate(doc, cls=OpenAPIV31SpecValidator)


@pytest.mark.parametrize("name", NAMES)
def test_every_error_response_has_the_contracts_error_shape(name: str) -> None:
    doc = document(name)
    shape = {"v1": "ErrorResponse", "v2": "ErrorBody", "voice": "ErrorResponse"}[name]
    for path, item in doc["paths"].items():
        for method in METHODS:
            for status, response in item.get(method, {}).get("responses", {}).items():
                if status.startswith(("4", "5")):
                    target = doc["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
                    schema = target["content"]["application/json"]["schema"]
                    assert schema == {"$ref": f"#/components/schemas/{shape}"}, (path, method, status)


def test_the_documents_carry_the_contracts_limits() -> None:
    v1 = document("v1")["components"]["schemas"]
    assert v1["BulkAssets"]["properties"]["assets"]["maxItems"] == 1000
    assert v1["UserEventsRequest"]["properties"]["user_events"]["maxItems"] == 1000
    assert v1["ViewBody"]["properties"]["assets"]["maxItems"] == 1000
    assert v1["AssetBody"]["properties"]["description"]["maxLength"] == 10000
    assert v1["AssetMetadata"]["properties"]["variability"]["maximum"] == 1000
    assert document("v1")["info"]["x-max-request-bytes"] == 16384
    get_assets = document("v1")["paths"]["/v1/assets"]["get"]["parameters"][0]
    assert (get_assets["name"], get_assets["schema"]["maxItems"]) == ("asset_ids", 100)
    v2 = document("v2")["components"]["schemas"]
    assert v2["Identifier"]["pattern"] == "^[a-zA-Z0-9_\\-:]{1,128}$"
    assert v2["CreateSessionRequest"]["properties"]["constraints"]["maxItems"] == 5
    assert v2["Catalog"]["properties"]["topics"]["maxItems"] == 2500
    voice = document("voice")
    assert set(voice["components"]["securitySchemes"]) == {"ApiKeyAuth", "BearerAuth"}
    assert voice["components"]["securitySchemes"]["BearerAuth"]["bearerFormat"] == "JWT"


@pytest.mark.parametrize("name", NAMES)
def test_the_server_serves_each_document_without_credentials(client: InProcess, name: str) -> None:
    answer = client.request("GET", f"{PREFIXES[name]}/openapi.json")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    assert answer.json() == document(name)


def test_a_mounted_server_names_its_mount_point_as_the_server() -> None:
    outer = Starlette(routes=[Mount("/learning", app=create_app(Engine(), voice=False))])
    client = InProcess(outer)
    try:
        served = client.request("GET", "/learning/v2/openapi.json").json()
    finally:
        client.close()
    assert served["servers"][0]["url"] == "/learning"
    assert served["paths"] == document("v2")["paths"]


def test_other_methods_on_the_document_path_get_the_contracts_404(client: InProcess) -> None:
    answer = client.request("POST", "/v1/openapi.json", headers=HEADERS, json={})
    assert answer.status_code == 404
    assert answer.json()["errors"][0]["status"] == 404


# -- routes: the documents and the façades agree ----------------------------------------------------


def _facade_routes(name: str) -> set[tuple[str, str]]:
    """(path, method) of every route in a façade's own route table."""
    if name == "v1":
        paths = {"asset": "/v1/assets/{asset_id}", "view": "/v1/views/{view_id}"}
        return {
            (paths.get(route, f"/v1/{route}"), method.lower())
            for route, methods in v1_module._METHODS.items()
            for method in methods
        }
    if name == "v2":
        return {(path, "post") for path in V2Api(Engine())._routes}
    return {(f"/api/v1{path}", "post") for path in voice_module._ROUTES}


@pytest.mark.parametrize("name", NAMES)
def test_every_facade_route_is_documented_and_nothing_else(name: str) -> None:
    documented = {(path, method) for n, path, method in OPERATIONS if n == name}
    assert documented == _facade_routes(name)


@pytest.mark.parametrize("name", NAMES)
def test_documented_methods_are_answered_and_the_others_are_405(client: InProcess, name: str) -> None:
    for path, item in document(name)["paths"].items():
        url = path.replace("{asset_id}", "q-none").replace("{view_id}", "v-none")
        for method in METHODS:
            answer = client.request(method.upper(), url, headers=HEADERS)
            assert (answer.status_code == 405) == (method not in item), (method, url, answer.status_code)
            assert answer.status_code < 500
    assert client.request("GET", f"{PREFIXES[name]}/no-such-endpoint", headers=HEADERS).status_code == 404


# -- schemathesis ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["valid", "invalid"])
@pytest.mark.parametrize(("name", "path", "method"), OPERATIONS)
def test_generated_requests_get_documented_answers(
    schemas: dict[str, Any], name: str, path: str, method: str, mode: GenerationMode
) -> None:
    operation = schemas[name][path][method.upper()]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def check(case: Any) -> None:
        case.call_and_validate(headers=HEADERS, checks=CHECKS, timeout=TIMEOUT)

    check()


def test_an_id_holding_a_newline_reaches_the_facade(client: InProcess) -> None:
    put = client.request("PUT", "/v1/assets/%0Aw", headers=HEADERS, json={"type": "exercise"})
    assert put.status_code == 200
    assert client.request("GET", "/v1/assets/%0Aw", headers=HEADERS).json() == {"id": "\nw", "type": "exercise"}


# -- known-good scenarios: success bodies conform too ---------------------------------------------


def _call(schemas: dict[str, Any], name: str, path: str, method: str, **case: Any) -> Any:
    """Send one request through schemathesis, check the answer against the document, expect a 200."""
    operation = schemas[name][path][method.upper()]
    response = operation.Case(**case).call_and_validate(headers=HEADERS, checks=CHECKS, timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    return response.json() if response.content else None


def test_a_v1_course_gets_documented_answers(schemas: dict[str, Any]) -> None:
    def call(path: str, method: str, **case: Any) -> Any:
        return _call(schemas, "v1", path, method, **case)

    asset = {
        "type": "exercise",
        "tags": [{"name": "content_type", "value": "mcq"}],
        "description": "2 + 2?",
        "content_url": "https://example.org/q1",
        "metadata": {"variability": 3, "source": "book"},
    }
    call("/v1/assets/{asset_id}", "put", path_parameters={"asset_id": "q 1"}, body=asset)
    theory = {"id": "t1", "type": "theory"}
    call("/v1/assets", "put", body={"assets": [{"id": "q2", "type": "exercise"}, theory]})
    assert call("/v1/assets/{asset_id}", "get", path_parameters={"asset_id": "q 1"}) == {"id": "q 1", **asset}
    listed = call("/v1/assets", "get", query={"asset_ids": ["t1", "q 1", "absent"]})
    assert [a["id"] for a in listed["assets"]] == ["t1", "q 1"]
    view = {
        "name": "Course",
        "path": "/course",
        "description": "A course",
        "ordered": True,
        "assets": [
            {"asset_id": "t1", "path": "/course/unit-1"},
            {"asset_id": "q 1", "path": "/course/unit-1", "attributes": {"partner_difficulty": 0.4}},
            {"asset_id": "q2", "path": "/course/unit-2"},
        ],
    }
    call("/v1/views/{view_id}", "put", path_parameters={"view_id": "course"}, body=view)
    assert len(call("/v1/views/{view_id}", "get", path_parameters={"view_id": "course"})["assets"]) == 3
    # the app is shared with the fuzzing test, which may have stored views of its own
    assert "course" in [v["id"] for v in call("/v1/views", "get", query={"limit": 1000})["views"]]
    user = {"id": "ada", "type": "learner", "test_cell": "a"}
    events = [
        {
            "user": user,
            "type": "theory_viewed",
            "timestamp": "2026-03-01T09:00:00Z",
            "attributes": {"view_id": "course", "asset_id": "t1", "time_spent_ms": 4000, "fraction_completed": 1.0},
        },
        {
            "user": user,
            "type": "response_submit",
            "timestamp": "2026-03-01T09:01:00Z",
            "is_offline_event": True,
            "tags": [{"name": "school", "value": "s1"}],
            "metadata": {"attempt": 1},
            "attributes": {"view_id": "course", "asset_id": "q 1", "result": "partially_correct", "score": 0.5},
        },
        {
            "user": user,
            "type": "response_submit",
            "timestamp": "2026-03-01T09:01:00Z",
            "is_offline_event": True,
            "attributes": {"view_id": "course", "asset_id": "q 1", "result": "correct"},
        },
        {
            "user": user,
            "type": "response_submit",
            "timestamp": "2026-03-01T09:02:00Z",
            "is_offline_event": True,
            "attributes": {"view_id": "course", "asset_id": "absent", "result": "correct"},
        },
    ]
    answer = call("/v1/user-events", "post", body={"user_events": events})
    assert answer["duplicate_events"] == [{"asset_id": "q 1", "asset_type": "exercise"}] and answer["warnings"]
    flt = {"asset_types": ["exercise"], "paths": ["/course"]}
    nxt = call(
        "/v1/next-assets",
        "post",
        body={
            "user": user,
            "view_id": "course",
            "filter": flt,
            "mode": {"type": "review", "attributes": {}},
            "limit": 3,
        },
    )
    # review serves only what was answered and is due: the one exercise answered, months ago
    assert nxt["data"] == [{"asset_id": "q 1", "asset_type": "exercise"}]
    idle = call(
        "/v1/next-assets",
        "post",
        body={
            "user": {"id": "newcomer", "type": "learner"},
            "view_id": "course",
            "filter": flt,
            "mode": {"type": "review"},
            "limit": 3,
        },
    )
    assert idle["data"] == [] and idle["nothing_due"]["next_asset_id"] is None
    statuses = call(
        "/v1/user-filter-status",
        "post",
        body={
            "user_id": "ada",
            "view_id": "course",
            "filters": [flt, {"tags": [{"name": "content_type", "value": "mcq"}]}],
        },
    )
    assert len(statuses["data"]) == 2
    paths = call(
        "/v1/user-status",
        "get",
        query={"user_id": "ada", "view_id": "course", "view_paths": ["/course", "/course/unit-2"]},
    )
    assert [p["view_path"] for p in paths["data"]] == ["/course", "/course/unit-2"]
    assert call("/v1/assets", "delete", query={"asset_ids": ["q2", "absent"]}) == {"asset_ids": ["q2"]}
    call("/v1/views/{view_id}", "delete", path_parameters={"view_id": "course"})
    call("/v1/assets/{asset_id}", "delete", path_parameters={"asset_id": "q 1"})


def test_a_v2_session_gets_documented_answers(schemas: dict[str, Any]) -> None:
    def call(path: str, **case: Any) -> Any:
        return _call(schemas, "v2", path, "post", **case)["data"]

    items = [
        {
            "item_id": "e1",
            "display_name": "E1",
            "scorable": True,
            "difficulty": 0.5,
            "content_type": "mcq",
            "tags": ["easy"],
            "theory_item_refs": [{"item_id": "th1"}],
        },
        {"item_id": "e2", "display_name": "E2", "scorable": True},
        {"item_id": "th1", "display_name": "Th1", "scorable": False, "content_type": "theory"},
    ]
    call("/v2/upsert-items", body={"items": items})
    call(
        "/v2/upsert-item-database-annotation",
        body={"catalog_id": "cat1", "item_annotations": [{"item_id": "e1", "text_plain": "2 + 2?\n3\n4"}]},
    )
    catalog = {
        "catalog_id": "cat1",
        "display_name": "Course",
        "topics": [
            {"topic_id": "root", "display_name": "Root", "child_topic_refs": [{"topic_id": "a"}, {"topic_id": "b"}]},
            {"topic_id": "a", "display_name": "A", "item_refs": [{"item_id": "th1"}, {"item_id": "e1"}]},
            {
                "topic_id": "b",
                "display_name": "B",
                "item_refs": [{"item_id": "e2", "difficulty": 0.66}],
                "prerequisite_topic_refs": [{"topic_id": "a"}],
            },
        ],
    }
    call("/v2/upsert-catalog", body=catalog)
    assert call("/v2/query-catalog", body={"catalog_id": "cat1"}) == catalog
    assert "cat1" in call("/v2/query-catalog-ids", body={})["catalog_ids"]
    # the item database also holds what other tests of this module wrote (v1 assets are items)
    assert {"e1", "e2", "th1"} <= {i["item_id"] for i in call("/v2/query-item-database")["items"]}
    session = call(
        "/v2/create-adaptive-session",
        body={
            "user_id": "u1",
            "catalog_id": "cat1",
            "mode": {"type": "learn"},
            "filter": {"include_topic_ids": ["root"]},
            "stopping_conditions": {"max_interaction_count": 1, "max_proficiency": 0.99},
            "constraints": [{"type": "max_recommendations", "value": 1, "filter": {"include_item_ids": ["e2"]}}],
        },
    )
    context = session["session_context"]
    step = call("/v2/adaptive-engine", body={"session_context": context})
    recommendation = step["recommendation"]
    event = {
        "type": "attempt",
        "timestamp": "2026-03-01T09:00:00Z",
        "score": 1,
        "time_spent_ms": 1500,
        "recommendation_context": recommendation["recommendation_context"],
    }
    if recommendation["item_id"] == "th1":
        event = {
            "type": "view_theory",
            "timestamp": event["timestamp"],
            "fraction_completed": 1.0,
            "recommendation_context": recommendation["recommendation_context"],
        }
    step = call("/v2/adaptive-engine", body={"session_context": context, "events": [event]})
    assert step["session_status"]["stop_session"] is True
    call(
        "/v2/upsert-events",
        body={
            "user_id": "u1",
            "events": [
                {
                    "type": "skip",
                    "item_id": "e2",
                    "catalog_id": "cat1",
                    "topic_id": "b",
                    "timestamp": "2026-03-01T09:05:00Z",
                }
            ],
        },
    )
    statuses = call(
        "/v2/user-status",
        body={
            "user_id": "u1",
            "catalog_id": "cat1",
            "filter_list": [
                {"include_topic_ids": ["a"]},
                {"include_content_types": ["theory"]},
                {"exclude_item_ids": ["e1", "e2", "th1"]},
            ],
        },
    )
    assert [s["proficiency"] is None for s in statuses["user_status_list"]] == [False, True, True]
    # review: what u1 answered, months ago, is due; a newcomer has nothing due, and is told so
    due = call("/v2/query-due-items", body={"user_id": "u1", "catalog_id": "cat1"})
    assert due["due_now"] == len(due["items"]) == (recommendation["item_id"] == "e1")
    assert call("/v2/query-due-items", body={"user_id": "u1", "catalog_id": "cat1", "filter": {}}) == due
    review = {"user_id": "newcomer", "catalog_id": "cat1", "mode": {"type": "review"}, "filter": {}}
    context = call("/v2/create-adaptive-session", body=review)["session_context"]
    idle = call("/v2/adaptive-engine", body={"session_context": context})
    assert idle["recommendation"] is None and idle["nothing_due"]["reason"]["keyword"] == "nothing_due"
    call("/v2/delete-catalog", body={"catalog_id": "cat1"})
    call("/v2/delete-items", body={"item_ids": ["e2"]})
    call("/v2/upsert-item-database", body={"items": items[:1] + items[2:]})


def test_voice_requests_get_documented_answers(schemas: dict[str, Any]) -> None:
    from learnloop.voice.synthesis import synthesize

    phrase = "please call me tomorrow"
    audio = synthesize(phrase)
    form = {"dialect": "en-us", "user_id": "u1", "target_phrase": phrase, "audio": audio, "audio_format": "wav"}

    def call(path: str, body: dict[str, Any]) -> Any:
        return _call(schemas, "voice", path, "post", body=body, media_type="multipart/form-data")

    assert call("/api/v1/syllables", {"target_phrase": "hello world"})["target_phrase"] == "hello world"
    assert len(call("/api/v1/score", form)["word_scores"]) == 4
    best = call("/api/v1/multichoice/score", {**form, "target_phrase": ["the cat sat on the mat", phrase]})
    assert best["target_phrase"] == phrase
    assert "assessment" in call("/api/v1/fluency/score", form)
