"""The ASGI application: what reaches a façade, body limits, malformed forms, failures, health, mounting."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest
import uvicorn
from httpserve import InProcess, Uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from learnloop import Engine
from learnloop._http import ApiResponse
from learnloop.server import BodyLimits, Keys, create_app
from learnloop.voice import VoiceApi

KEY = {"X-API-KEY": "k-1"}
LINK = "https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/{}"


class Recorder:
    """A façade that answers 200 and keeps what it was handed."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def handle(self, method: str, path: str, **kwargs: Any) -> ApiResponse:
        self.calls.append({"method": method, "path": path, **kwargs})
        return ApiResponse(200, {"data": {}})


class Failing:
    def handle(self, method: str, path: str, **kwargs: Any) -> ApiResponse:
        raise RuntimeError("a bug with a secret inside")


@pytest.fixture(params=["asgi", "uvicorn"])
def serve(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Serve an application: in process, or with uvicorn on 127.0.0.1."""
    clients: list[Any] = []

    def start(app: Any) -> Any:
        client = (InProcess if request.param == "asgi" else Uvicorn)(app)
        clients.append(client)
        return client

    yield start
    for client in clients:
        client.close()


def test_a_json_request_reaches_the_facade_as_sent(serve: Any) -> None:
    v1, v2 = Recorder(), Recorder()
    client = serve(create_app(Engine(), v1=v1, v2=v2, voice=False))
    raw = b'{"b": 1,   "a": "\xc3\xa9"}'
    url = httpx.URL(client.base_url).copy_with(raw_path=b"/v1/assets/math%2Fq%203?asset_ids=a,b&asset_ids=c&x=%20y")
    request = client.build_request("PUT", url, content=raw, headers={**KEY, "Content-Type": "application/json"})
    assert client.send(request).status_code == 200
    (call,) = v1.calls
    assert call["method"] == "PUT"
    assert call["path"] == "/v1/assets/math%2Fq%203"  # still percent-encoded: the façade decodes the id
    assert call["query"] == {"asset_ids": ["a,b", "c"], "x": [" y"]}
    assert call["body"] == raw  # the bytes received, unchanged
    assert call["headers"]["x-api-key"] == "k-1" and call["headers"]["content-type"] == "application/json"
    client.request("POST", "/v2/upsert-items")
    assert v2.calls[0]["body"] == b"" and v2.calls[0]["path"] == "/v2/upsert-items"


def test_a_form_reaches_the_voice_facade_as_fields_and_file_bytes(serve: Any) -> None:
    voice = Recorder()
    client = serve(create_app(Engine(), v1=False, v2=False, voice=voice))
    audio = bytes(range(256)) * 40
    data = {"dialect": "en-us", "target_phrase": ["one", "two"]}
    r = client.request("POST", "/api/v1/multichoice/score", data=data, files={"audio": ("a.wav", audio)}, headers=KEY)
    assert r.status_code == 200
    (call,) = voice.calls
    assert call["path"] == "/api/v1/multichoice/score"
    assert call["form"] == {"dialect": ["en-us"], "target_phrase": ["one", "two"]}
    assert call["files"] == {"audio": audio}
    client.request("POST", "/api/v1/syllables", data={"target_phrase": "hi"})  # url-encoded works too
    assert voice.calls[1]["form"] == {"target_phrase": ["hi"]} and voice.calls[1]["files"] == {}


def test_the_v1_limit_is_measured_on_the_bytes_received(serve: Any) -> None:
    client = serve(create_app(Engine(), keys=Keys(api_keys={"k-1": "app"}), v2=False, voice=False))
    body = {"assets": [{"id": f"q{i}", "type": "exercise", "description": ""} for i in (1, 2)]}
    room = 16384 - len(json.dumps(body, separators=(",", ":")))
    body["assets"][0]["description"] = "x" * (room // 2)
    body["assets"][1]["description"] = "y" * (room - room // 2)
    exact = json.dumps(body, separators=(",", ":")).encode()
    assert len(exact) == 16384
    assert client.request("PUT", "/v1/assets", content=exact, headers=KEY).status_code == 200
    # the same JSON with spaces: one byte over
    spaced = exact.replace(b'"id":', b'"id": ', 1)
    r = client.request("PUT", "/v1/assets", content=spaced, headers=KEY)
    assert (r.status_code, r.json()) == (
        400,
        {
            "errors": [
                {
                    "status": 400,
                    "detail": "the request body is 16385 bytes; the limit is 16384 bytes (16 KB)",
                    "link": LINK.format(400),
                }
            ]
        },
    )


def test_bodies_beyond_what_the_server_reads_are_refused_in_the_contract_shape(serve: Any) -> None:
    limits = BodyLimits(v1=20_000, v2=1000, voice=1000)
    client = serve(create_app(Engine(), body_limits=limits))
    big = b"x" * 30_000

    def chunks() -> Iterator[bytes]:  # no Content-Length: read until the limit
        for _ in range(30):
            yield b"x" * 1000

    for content in (big, chunks()):
        r = client.request("PUT", "/v1/assets", content=content, headers=KEY)
        assert r.status_code == 400
        assert (
            r.json()["errors"][0]["detail"] == "the request body is larger than 20000 bytes, the most this server reads"
        )
        r = client.request("POST", "/v2/upsert-items", content=big, headers=KEY)
        assert r.json() == {
            "error": {
                "status": 413,
                "message": "the request body is larger than 1000 bytes, the most this server reads",
            }
        }
        assert r.status_code == 413
    r = client.request("POST", "/api/v1/score", files={"audio": ("a.wav", big)}, headers=KEY)
    assert r.status_code == 413 and set(r.json()["errors"][0]) == {"status", "detail"}


MALFORMED = {
    "no boundary": ("multipart/form-data", b"--x\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n--x--\r\n"),
    "garbage": ("multipart/form-data; boundary=x", b"\x00\xff garbage without any boundary"),
    "truncated": ("multipart/form-data; boundary=x", b'--x\r\nContent-Disposition: form-data; name="audio"; fil'),
    "bad header": ("multipart/form-data; boundary=x", b"--x\r\nno colon here\r\n\r\nvalue\r\n--x--\r\n"),
    "too many files": (
        "multipart/form-data; boundary=x",
        b"".join(b'--x\r\nContent-Disposition: form-data; name="f%d"; filename="f"\r\n\r\nz\r\n' % i for i in range(20))
        + b"--x--\r\n",
    ),
    "two audio files": (
        "multipart/form-data; boundary=x",
        b'--x\r\nContent-Disposition: form-data; name="audio"; filename="a"\r\n\r\n1\r\n'
        b'--x\r\nContent-Disposition: form-data; name="audio"; filename="b"\r\n\r\n2\r\n--x--\r\n',
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_form_is_400_in_the_voice_error_shape(serve: Any, case: str) -> None:
    # what the parser refuses is answered by the server; what it reads leniently (a truncated part
    # is dropped) reaches the façade, which finds the fields missing
    client = serve(create_app(Engine(), v1=False, v2=False, voice=VoiceApi()))
    content_type, content = MALFORMED[case]
    r = client.request("POST", "/api/v1/score", content=content, headers={**KEY, "Content-Type": content_type})
    assert r.status_code == 400, r.text
    errors = r.json()["errors"]
    assert errors and all(e.keys() == {"status", "detail"} and e["status"] == 400 for e in errors)


def test_a_facade_that_raises_is_a_500_in_its_contract_shape_without_a_traceback(serve: Any) -> None:
    client = serve(create_app(Engine(), v1=Failing(), v2=Failing(), voice=Failing()))
    r1 = client.request("GET", "/v1/views")
    r2 = client.request("POST", "/v2/query-catalog-ids", json={})
    r3 = client.request("POST", "/api/v1/syllables", data={"target_phrase": "hi"})
    problem = "internal server error; retry later"
    assert (r1.status_code, r1.json()) == (
        500,
        {"errors": [{"status": 500, "detail": problem, "link": LINK.format(500)}]},
    )
    assert (r2.status_code, r2.json()) == (500, {"error": {"status": 500, "message": problem}})
    assert (r3.status_code, r3.json()) == (500, {"errors": [{"status": 500, "detail": problem}]})
    assert "secret" not in r1.text + r2.text + r3.text


def test_health_and_readiness(serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = Engine()
    client = serve(create_app(engine, voice=False, readiness_timeout=60))  # (only a hang runs out of it)
    assert client.request("GET", "/healthz").json() == {"status": "ok"}
    assert client.request("GET", "/readyz").json() == {"status": "ready"}

    def broken(*args: Any) -> None:
        raise OSError("unable to open database file")

    monkeypatch.setattr(engine.store, "get", broken)
    r = client.request("GET", "/readyz")
    assert (r.status_code, r.json()) == (
        503,
        {"status": "unavailable", "detail": "the store is not reachable: OSError"},
    )
    assert client.request("GET", "/healthz").status_code == 200  # the process is still up
    # a store that does not answer until the test is over, behind a short readiness timeout
    answer = threading.Event()
    monkeypatch.setattr(engine.store, "get", lambda *args: answer.wait(60))
    impatient = serve(create_app(engine, voice=False, readiness_timeout=0.5))
    try:
        r = impatient.request("GET", "/readyz")
    finally:
        answer.set()
    assert (r.status_code, r.json()["detail"]) == (503, "the store did not answer within 0.5 s")


def test_the_application_mounts_inside_another(serve: Any) -> None:
    engine = Engine()
    learning = create_app(engine, keys=Keys(api_keys={"k-1": "app"}), voice=False)

    async def home(request: Any) -> PlainTextResponse:
        return PlainTextResponse("home")

    outer = Starlette(routes=[Route("/", home), Mount("/learning", app=learning)])
    client = serve(outer)
    assert client.request("GET", "/").text == "home"
    assert client.request("PUT", "/learning/v1/assets/a%2Fb", json={"type": "exercise"}, headers=KEY).status_code == 200
    r = client.request("GET", "/learning/v1/assets/a%2Fb", headers=KEY)
    assert r.json() == {"id": "a/b", "type": "exercise"}
    r = client.request("POST", "/learning/v2/query-catalog-ids", json={}, headers=KEY)
    assert r.json() == {"data": {"catalog_ids": []}}
    r = client.request("POST", "/learning/v2/nowhere", json={}, headers=KEY)
    assert r.json() == {"error": {"status": 404, "message": "no endpoint at path '/v2/nowhere'"}}
    assert client.request("GET", "/learning/healthz").json() == {"status": "ok"}


def test_keys_open_all_three_contracts(serve: Any) -> None:
    from datetime import UTC, datetime

    keys = Keys(api_keys={"k-1": "app-1", "k-old": "app-1"}, api_key_expiry={"k-old": datetime(2000, 1, 1, tzinfo=UTC)})
    client = serve(create_app(Engine(), keys=keys))
    for headers, v1, v2, voice in (({}, 401, 401, 401), (KEY, 200, 200, 200), ({"X-API-KEY": "k-old"}, 402, 200, 402)):
        assert client.request("GET", "/v1/views", headers=headers).status_code == v1
        assert client.request("POST", "/v2/query-catalog-ids", json={}, headers=headers).status_code == v2
        r = client.request("POST", "/api/v1/syllables", data={"target_phrase": "hi"}, headers=headers)
        assert r.status_code == voice
    # an expired key: the voice API's error body, as v1's (without v1's link)
    detail = "the API key expired at 2000-01-01T00:00:00+00:00"
    assert r.json() == {"errors": [{"status": 402, "detail": detail}]}
    assert client.request("GET", "/v1/views", headers=headers).json()["errors"][0]["detail"] == detail


def test_import_learnloop_does_not_import_the_server_dependencies() -> None:
    code = (
        "import sys, learnloop, learnloop.api, learnloop.voice, learnloop.engine\n"
        "print(sorted(m for m in ('starlette', 'uvicorn', 'multipart', 'python_multipart', 'httpx', 'anyio')"
        " if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"


def test_the_headers_are_handed_over_case_insensitively(serve: Any) -> None:
    v2 = Recorder()
    client = serve(create_app(Engine(), v1=False, v2=v2, voice=False))
    client.request("POST", "/v2/query-catalog-ids", headers=[("X-Api-Key", "a"), ("x-api-key", "b")])
    headers: Mapping[str, str] = v2.calls[0]["headers"]
    assert headers["x-api-key"] == "a, b"  # a repeated header is one value, as HTTP combines them


# -- a forced shutdown ----------------------------------------------------------------------------
class Blocking:
    """A façade whose calls wait until the test lets them go."""

    def __init__(self) -> None:
        self.entered = threading.Semaphore(0)
        self.release = threading.Event()

    def handle(self, method: str, path: str, **kwargs: Any) -> ApiResponse:
        self.entered.release()
        self.release.wait(30)
        return ApiResponse(200, {"data": {}})


SHUT_DOWN = {  # the contract's answer to a request cut short by the shutdown: its status and error body
    "/v1/user-status": (
        503,
        lambda body: body["errors"][0]["status"] == 503 and "shutting down" in body["errors"][0]["detail"],
    ),
    "/v2/query-catalog-ids": (
        500,
        lambda body: body["error"]["status"] == 500 and "shutting down" in body["error"]["message"],
    ),
    "/api/v1/score": (
        503,
        lambda body: body["errors"][0]["status"] == 503 and "shutting down" in body["errors"][0]["detail"],
    ),
}


def test_a_request_in_flight_at_a_forced_shutdown_gets_the_contracts_error_body() -> None:
    # uvicorn cancels what is still running once a second Ctrl-C forces the shutdown: here, three façade calls
    facade = Blocking()
    app = create_app(Engine(), v1=facade, v2=facade, voice=facade, page=False)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline
        time.sleep(0.01)
    answers: dict[str, httpx.Response] = {}

    def call(path: str) -> None:
        if path == "/api/v1/score":
            answers[path] = httpx.post(base + path, data={"target_phrase": "hi"}, files={"audio": b"x"}, timeout=30)
        else:
            answers[path] = httpx.post(base + path, json={}, timeout=30)

    clients = [threading.Thread(target=call, args=(path,)) for path in SHUT_DOWN]
    for client in clients:
        client.start()
    try:
        for _ in SHUT_DOWN:
            assert facade.entered.acquire(timeout=30)
        server.should_exit = True  # the first Ctrl-C
        server.force_exit = True  # the second
        for client in clients:
            client.join(30)
    finally:
        facade.release.set()
        thread.join(30)
        sock.close()
    for path, (status, shaped) in SHUT_DOWN.items():
        answer = answers[path]
        assert answer.status_code == status, (path, answer.text)
        assert answer.headers["content-type"] == "application/json", (path, answer.text)
        assert shaped(answer.json()), (path, answer.text)
