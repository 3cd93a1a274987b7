"""A pytest plugin that sends every façade call of a test run through the HTTP server.

Loaded with ``-p http_transport`` (this folder on ``PYTHONPATH``) and
``LEARNLOOP_TEST_TRANSPORT=asgi`` (httpx's ASGI transport, in process) or
``uvicorn`` (a real uvicorn server on 127.0.0.1). ``V1Api.handle``,
``V2Api.handle`` and ``VoiceApi.handle`` are replaced by an adapter that turns
the call into an HTTP request to ``learnloop.server.create_app``, and the HTTP
response back into an ``ApiResponse``; the server hands the request to the
very façade object the test made (named in a header the adapter adds and the
server side removes), through its original ``handle``. The contract tests
therefore run unchanged, over HTTP.

A call that HTTP cannot carry as the test wrote it (a header value that is a
list, a body that is a Python list, a path with a space...) tests the Python
API, not the contract: the test is skipped with the reason, and the run's
report (``LEARNLOOP_TEST_REPORT``, JSON) lists every such skip and every test
that passed, and counts the requests sent.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import weakref
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

import httpx
import hypothesis
import pytest
from httpserve import InProcess, Uvicorn

from learnloop import Engine
from learnloop._http import ApiResponse
from learnloop.api import V1Api, V2Api
from learnloop.server import create_app
from learnloop.voice import VoiceApi

SKIP_PREFIX = "not expressible over HTTP: "
TARGET = "x-learnloop-test-facade"
CALL = "x-learnloop-test-call"
ORIGINAL = {V1Api: V1Api.handle, V2Api: V2Api.handle, VoiceApi: VoiceApi.handle}
PREFIXES = {V1Api.handle: "/v1", V2Api.handle: "/v2", VoiceApi.handle: "/api/v1"}
_TRANSPORT_HEADERS = {"content-length", "content-type", "date", "server", "connection", "keep-alive"}
_RESERVED_REQUEST_HEADERS = {"host", "content-length", "transfer-encoding", "connection", "expect", TARGET, CALL}
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_TARGET_CHARS = re.compile(r"^[\x21-\x7e]*$")

_facades: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
_state: dict[str, Any] = {"client": None, "requests": 0, "skipped": {}, "raised": {}, "rejected": 0, "passed": []}


class Inexpressible(Exception):
    """A call HTTP cannot carry as written."""


def _original(facade: Any) -> Any:
    for cls, handle in ORIGINAL.items():
        if isinstance(facade, cls):
            return handle
    raise TypeError(type(facade))


class _Dispatch:
    """The façade the server is given: forwards to the test's own façade, named by a header.

    What the façade raises is kept by call, for the adapter to raise again once
    the server has answered it with a 500.
    """

    def handle(self, method: str, path: str, *, headers: Mapping[str, str] | None = None, **kwargs: Any) -> Any:
        sent = dict(headers or {})
        facade = _facades[sent.pop(TARGET)]
        call = sent.pop(CALL)
        try:
            return _original(facade)(facade, method, path, headers=sent, **kwargs)
        except Exception as exc:
            _state["raised"][call] = exc
            raise


def _client() -> Any:
    if _state["client"] is None:
        app = create_app(Engine(), v1=_Dispatch(), v2=_Dispatch(), voice=_Dispatch())
        kind = os.environ.get("LEARNLOOP_TEST_TRANSPORT", "asgi")
        _state["client"] = {"asgi": InProcess, "uvicorn": Uvicorn}[kind](app)
    return _state["client"]


def _name(facade: Any) -> str:
    key = getattr(facade, "_http_test_name", None)
    if key is None or _facades.get(key) is not facade:
        key = secrets.token_hex(8)
        facade._http_test_name = key
        _facades[key] = facade
    return key


# -- the request -----------------------------------------------------------------------------
def _target(facade: Any, method: Any, path: Any, query: Any) -> tuple[str, str]:
    if not isinstance(method, str) or not _TOKEN.match(method):
        raise Inexpressible(f"method {method!r}")
    if not isinstance(path, str) or not path.startswith("/") or not _TARGET_CHARS.match(path) or "#" in path:
        raise Inexpressible(f"path {path!r:.80}")
    prefix = PREFIXES[_original(facade)]
    if path.partition("?")[0] != prefix and not path.startswith(prefix + "/"):
        raise Inexpressible(f"path {path!r:.80} is outside {prefix}, where the server mounts this façade")
    path_part, _, query_string = path.partition("?")
    if query is not None:
        if not isinstance(query, Mapping):
            raise Inexpressible(f"query of type {type(query).__name__}")
        pairs = []
        for name, value in query.items():
            values = [value] if isinstance(value, str) else value
            if not isinstance(name, str) or not isinstance(values, (list, tuple)) or not values:
                raise Inexpressible(f"query parameter {name!r:.40} = {value!r:.40}")
            for v in values:
                if not isinstance(v, str):
                    raise Inexpressible(f"query value {v!r:.40}")
                try:
                    pairs.append(quote(name, safe="") + "=" + quote(v, safe=""))
                except UnicodeEncodeError:
                    raise Inexpressible("a query value that is not Unicode text") from None
        query_string = "&".join([query_string] * bool(query_string) + pairs)
    return method, path_part + ("?" + query_string if query_string else "")


def _headers(facade: Any, headers: Any) -> dict[str, str]:
    if headers is None:
        headers = {}
    if not isinstance(headers, Mapping):
        raise Inexpressible(f"headers of type {type(headers).__name__}")
    out = {TARGET: _name(facade), CALL: secrets.token_hex(8)}
    seen = set()
    for name, value in headers.items():
        if not isinstance(name, str) or not _TOKEN.match(name) or name.lower() in _RESERVED_REQUEST_HEADERS:
            raise Inexpressible(f"header name {name!r:.40}")
        if name.lower() in seen:
            raise Inexpressible(f"header {name!r} given twice")
        seen.add(name.lower())
        if not isinstance(value, str) or value != value.strip() or re.search(r"[\x00-\x08\x0a-\x1f\x7f]", value):
            raise Inexpressible(f"header {name!r} = {value!r:.40}")
        try:
            value.encode("latin-1")
        except UnicodeEncodeError:
            raise Inexpressible(f"header {name!r} outside Latin-1") from None
        out[name] = value
    return out


def _json_body(body: Any) -> bytes | None:
    if body is None:
        return None
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    if isinstance(body, str):
        return body.encode("utf-8", errors="surrogatepass")
    if isinstance(body, Mapping):
        try:
            return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError, RecursionError):
            raise Inexpressible("a body that is not JSON-serialisable") from None
    raise Inexpressible(f"a body of type {type(body).__name__}")


def _multipart(form: Any, files: Any) -> tuple[bytes, str] | None:
    if form is not None and not isinstance(form, Mapping):
        raise Inexpressible(f"form of type {type(form).__name__}")
    if files is not None and not isinstance(files, Mapping):
        raise Inexpressible(f"files of type {type(files).__name__}")
    if not form and not files:
        return None
    boundary = "learnloop-" + secrets.token_hex(12)
    parts: list[bytes] = []

    def part(name: Any, disposition_extra: str, content_type: str, data: bytes) -> None:
        if not isinstance(name, str) or not re.match(r"^[\x20-\x7e]+$", name) or '"' in name or "\\" in name:
            raise Inexpressible(f"form field name {name!r:.40}")
        head = f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"{disposition_extra}\r\n'
        parts.append((head + f"Content-Type: {content_type}\r\n\r\n").encode() + data + b"\r\n")

    for name, value in (form or {}).items():
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
            raise Inexpressible(f"form field {name!r:.40} = {value!r:.40}")
        for v in values:
            try:
                data = v.encode("utf-8")
            except UnicodeEncodeError:
                raise Inexpressible("a form value that is not Unicode text") from None
            part(name, "", "text/plain; charset=utf-8", data)
    for name, value in (files or {}).items():
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise Inexpressible(f"file {name!r:.40} of type {type(value).__name__}")
        part(name, '; filename="upload"', "application/octet-stream", bytes(value))
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


# -- the response ----------------------------------------------------------------------------
def _answer(response: httpx.Response, call: str) -> ApiResponse:
    _state["requests"] += 1
    body = response.json() if response.content else None
    raised = _state["raised"].pop(call, None)
    if raised is not None:
        # the façade raised: the server answered 500 in the contract's error shape
        assert response.status_code == 500, response.status_code
        assert set(body) in ({"errors"}, {"error"}), body
        raise raised
    headers = httpx.Headers([(k, v) for k, v in response.headers.multi_items() if k not in _TRANSPORT_HEADERS])
    return ApiResponse(response.status_code, body, headers)


def _send(method: str, target: str, headers: dict[str, str], content: bytes | None) -> ApiResponse:
    client = _client()
    url = httpx.URL(client.base_url).copy_with(raw_path=target.encode("ascii"))
    request = client.build_request(method, url, headers=headers, content=content)
    return _answer(client.send(request), headers[CALL])


def _skip(exc: Inexpressible) -> Any:
    if hypothesis.currently_in_test_context():
        # one generated example HTTP cannot carry: hypothesis drops it and goes on with the others
        _state["rejected"] += 1
        hypothesis.reject()
    pytest.skip(SKIP_PREFIX + str(exc))


def json_handle(self: Any, method: Any, path: Any, *, query: Any = None, body: Any = None, headers: Any = None) -> Any:
    try:
        verb, target = _target(self, method, path, query)
        sent = _headers(self, headers)
        content = _json_body(body)
    except Inexpressible as exc:
        return _skip(exc)
    return _send(verb, target, sent, content)


def _send_typed(verb: str, target: str, sent: dict[str, str], given: str, form: Any, files: Any) -> ApiResponse:
    """A voice call naming its own Content-Type: the request a client would send with that type."""
    media = sent[given].split(";")[0].strip().lower()
    if not form and not files:  # a body of another kind than a form: JSON as ``{}``, anything else empty
        return _send(verb, target, sent, b"{}" if media == "application/json" else b"")
    if media == "multipart/form-data":  # the same form, with the boundary the encoding chose
        encoded = _multipart(form, files)
        assert encoded is not None
        rest = {k: v for k, v in sent.items() if k != given}
        return _send(verb, target, {**rest, "Content-Type": encoded[1]}, encoded[0])
    if media == "application/x-www-form-urlencoded" and not files and isinstance(form, Mapping):
        pairs = [(k, v) for k, vs in form.items() for v in ([vs] if isinstance(vs, str) else vs)]
        return _send(verb, target, sent, urlencode(pairs).encode("ascii"))
    raise Inexpressible("a form sent with a Content-Type that is not a form's")


def form_handle(self: Any, method: Any, path: Any, *, form: Any = None, files: Any = None, headers: Any = None) -> Any:
    try:
        verb, target = _target(self, method, path, None)
        sent = _headers(self, headers)
        given = next((name for name in sent if name.lower() == "content-type"), None)
        if given is not None:
            return _send_typed(verb, target, sent, given, form, files)
        encoded = _multipart(form, files)
    except Inexpressible as exc:
        return _skip(exc)
    if encoded is None:
        return _send(verb, target, sent, None)
    content, content_type = encoded
    return _send(verb, target, {**sent, "Content-Type": content_type}, content)


# -- the plugin hooks --------------------------------------------------------------------------
def pytest_configure(config: pytest.Config) -> None:
    V1Api.handle = json_handle  # type: ignore[method-assign]
    V2Api.handle = json_handle  # type: ignore[method-assign]
    VoiceApi.handle = form_handle  # type: ignore[method-assign]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and report.passed:
        _state["passed"].append(report.nodeid)
    if report.skipped and isinstance(report.longrepr, tuple) and SKIP_PREFIX in str(report.longrepr[2]):
        _state["skipped"][report.nodeid] = str(report.longrepr[2]).split(SKIP_PREFIX, 1)[1]


def pytest_unconfigure(config: pytest.Config) -> None:
    for cls, handle in ORIGINAL.items():
        cls.handle = handle  # type: ignore[method-assign]
    if _state["client"] is not None:
        _state["client"].close()
    out = os.environ.get("LEARNLOOP_TEST_REPORT")
    if out:
        with open(out, "w") as f:
            report = {key: _state[key] for key in ("requests", "skipped", "rejected", "passed")}
            json.dump(report, f, indent=1)
