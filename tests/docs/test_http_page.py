"""docs/http.md: every endpoint of the three contracts, with a request that is sent here as written.

The page is parsed, every request is sent in order through the façades over one engine, each
must succeed, and every JSON body must be valid against the request schema of the OpenAPI
document the package ships. A contract operation missing from the page fails too.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import jsonschema
import pytest

from learnloop import Engine
from learnloop.api import V1Api, V2Api
from learnloop.server.openapi import document

PAGE = Path(__file__).resolve().parents[2] / "docs" / "http.md"
KEYS = {"secret-key": "app-1"}
CONTRACTS = {"v1": "/v1/", "v2": "/v2/", "voice": "/api/v1/"}


def _sections(text: str) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(method, path template, [(language, code)]) for each `### METHOD /path` heading, in order."""
    out: list[tuple[str, str, list[tuple[str, str]]]] = []
    for part in re.split(r"^### ", text, flags=re.M)[1:]:
        heading, _, body = part.partition("\n")
        method, path = heading.split()
        blocks = re.findall(r"^```(\w+)\n(.*?)^```", body, flags=re.M | re.S)
        out.append((method, path, blocks))
    return out


SECTIONS = _sections(PAGE.read_text(encoding="utf-8"))


def _contract_of(path: str) -> str:
    return next(name for name, prefix in CONTRACTS.items() if path.startswith(prefix))


def _operations() -> set[tuple[str, str]]:
    ops = set()
    for name in CONTRACTS:
        for path, item in document(name)["paths"].items():
            ops |= {(m.upper(), path) for m in item if m in {"get", "put", "post", "delete", "patch"}}
    return ops


def _schema(contract: str, method: str, template: str, media: str) -> dict[str, Any]:
    doc = document(contract)
    body = doc["paths"][template][method.lower()]["requestBody"]["content"][media]["schema"]
    return {**body, "components": doc.get("components", {})}


def _parse_http(code: str) -> tuple[str, str, dict[str, str], Any]:
    head, _, body = code.partition("\n\n")
    request_line, *header_lines = head.strip().splitlines()
    method, target = request_line.split()
    headers = dict(line.split(": ", 1) for line in header_lines)
    return method, target, headers, json.loads(body) if body.strip() else None


def test_every_operation_of_the_three_contracts_has_a_section() -> None:
    documented = {(method, path) for method, path, _ in SECTIONS}
    assert documented == _operations()
    assert all(blocks for _, _, blocks in SECTIONS), "a section without a request"


def _shape(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return None


def _substitute(value: Any, contexts: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _substitute(v, contexts) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, contexts) for v in value]
    if isinstance(value, str) and value.startswith("<context from "):
        return contexts[value]
    return value


def test_the_learning_api_requests_succeed_in_order_and_match_their_schemas() -> None:
    engine = Engine(seed=7)
    facades = {"v1": V1Api(engine, api_keys=KEYS), "v2": V2Api(engine, api_keys=KEYS)}
    contexts: dict[str, str] = {}
    sent = 0
    for method, template, blocks in SECTIONS:
        contract = _contract_of(template)
        if contract == "voice":
            continue
        answer: Any = None
        for language, code in blocks:
            if language == "json":  # an answer shown in full: the keys of the one just received, at every level
                assert _shape(json.loads(code)) == _shape(answer)
                continue
            assert language == "http"
            verb, target, headers, body = _parse_http(code)
            assert (verb, urlsplit(target).path.split("/")[1]) == (method, template.split("/")[1])
            assert headers.get("X-API-KEY") in KEYS
            if body is not None:
                assert headers.get("Content-Type") == "application/json"
                jsonschema.validate(body, _schema(contract, method, template, "application/json"))
            url = urlsplit(target)
            query = dict(parse_qsl(url.query)) or None
            r = facades[contract].handle(verb, url.path, body=_substitute(body, contexts), headers=headers, query=query)
            assert r.status == 200, (verb, target, r.body)
            answer = r.body
            sent += 1
            data = r.body.get("data") if isinstance(r.body, dict) else None
            if isinstance(data, dict) and "session_context" in data:
                contexts["<context from create-adaptive-session>"] = data["session_context"]
            if isinstance(data, dict) and data.get("recommendation"):
                contexts["<context from the last recommendation>"] = data["recommendation"]["recommendation_context"]
    assert sent >= 27


def _parse_curl(code: str) -> tuple[str, dict[str, str], list[tuple[str, str]]]:
    words = shlex.split(code.replace("\\\n", " "))
    assert words[:3] == ["curl", "-X", "POST"]
    path = urlsplit(words[3]).path
    headers: dict[str, str] = {}
    fields: list[tuple[str, str]] = []
    for flag, value in zip(words[4::2], words[5::2]):
        if flag == "-H":
            name, _, text = value.partition(": ")
            headers[name] = text
        else:
            assert flag == "-F"
            name, _, text = value.partition("=")
            fields.append((name, text))
    return path, headers, fields


@pytest.mark.slow
def test_the_voice_requests_succeed_with_a_recording_of_the_phrase() -> None:
    from learnloop.voice import PronunciationScorer, VoiceApi
    from learnloop.voice.synthesis import synthesize

    api = VoiceApi(PronunciationScorer(), api_keys=KEYS)
    recording = synthesize("hello world")
    sent = 0
    for method, template, blocks in SECTIONS:
        if _contract_of(template) != "voice":
            continue
        for language, code in blocks:
            assert language == "bash"
            path, headers, fields = _parse_curl(code)
            assert path == template and headers.get("X-API-KEY") in KEYS
            form: dict[str, Any] = {}
            files: dict[str, bytes] = {}
            for name, value in fields:
                if value.startswith("@"):
                    assert value == "@hello.wav"
                    files[name] = recording
                elif name in form:
                    form[name] = [*([form[name]] if isinstance(form[name], str) else form[name]), value]
                else:
                    form[name] = value
            r = api.handle(method, path, form=form, files=files, headers=headers)
            assert r.status == 200, (path, r.body)
            assert r.body["target_phrase"] == "hello world"
            sent += 1
    assert sent == 4
