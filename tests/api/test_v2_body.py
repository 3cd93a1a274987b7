"""A v2 request body is decoded and validated in one pass; the diagnosis runs only on failure."""

from __future__ import annotations

import json
from typing import Any

import pytest

from learnloop import Engine, _validation
from learnloop.api import V2Api
from learnloop.sim import sample_course

KEY = {"X-API-KEY": "k"}


@pytest.fixture
def api() -> V2Api:
    api = V2Api(Engine.open(":memory:"), api_keys={"k": "app"})
    items, catalog = sample_course(n_chapters=1, topics_per_chapter=2, items_per_topic=3)
    body = {"items": [i.model_dump(mode="json", exclude_none=True) for i in items]}
    assert api.handle("POST", "/v2/upsert-items", body=body, headers=KEY).status == 200
    catalog_body = catalog.model_dump(mode="json", exclude_none=True)
    assert api.handle("POST", "/v2/upsert-catalog", body=catalog_body, headers=KEY).status == 200
    return api


def test_a_valid_body_is_parsed_once(api: V2Api, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    real = _validation.decode_json_body
    monkeypatch.setattr(_validation, "decode_json_body", lambda *a: calls.append(a) or real(*a))
    spec = {"user_id": "u1", "catalog_id": "sample-course", "mode": {"type": "learn"}, "filter": {}}
    created = api.handle("POST", "/v2/create-adaptive-session", body=json.dumps(spec).encode(), headers=KEY)
    assert created.status == 200, created.body
    context = created.body["data"]["session_context"]
    step = api.handle("POST", "/v2/adaptive-engine", body=json.dumps({"session_context": context}), headers=KEY)
    assert step.status == 200, step.body
    assert calls == []
    bad = api.handle("POST", "/v2/adaptive-engine", body=b'{"session_context": ', headers=KEY)
    assert bad.status == 400 and bad.body["error"]["message"].startswith("malformed JSON: ")
    assert len(calls) == 1  # the diagnosis of the failure


def test_an_integer_longer_than_python_converts_is_malformed_even_where_the_model_takes_it(api: V2Api) -> None:
    digits = "9" * 5000
    body = '{"user_id": "u1", "catalog_id": "sample-course", "mode": {"type": "learn"}, "filter": {}, '
    body += '"stopping_conditions": {"max_interaction_count": ' + digits + "}}"
    r = api.handle("POST", "/v2/create-adaptive-session", body=body, headers=KEY)
    assert r.status == 400
    assert r.body["error"]["message"].startswith("malformed JSON: Exceeds the limit (4300 digits)")
    # the same digits inside a string are text, not an integer literal: the model decides
    named = '{"catalog_id": "' + digits + '"}'
    r = api.handle("POST", "/v2/query-catalog", body=named, headers=KEY)
    assert r.status == 400 and "catalog_id" in r.body["error"]["message"]
