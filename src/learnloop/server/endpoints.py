"""How a request reaches a façade: the JSON and the form endpoints, body limits, shutdown and refusals.

A request to ``/v1``, ``/v2`` or ``/api/v1`` is read straight from the ASGI scope (headers,
path, query, body) and handed to the façade's ``handle`` in the server's bounded thread pool;
the answer goes back as the façade's JSON. :mod:`learnloop.server.app` mounts these endpoints.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol
from urllib.parse import quote, unquote

import anyio
from starlette.datastructures import QueryParams, UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import request_response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from learnloop._http import ApiResponse, error_response
from learnloop.server.throttle import Full, Limits, Pool, ScoringProcesses, retry_after

__all__ = ["BodyLimits", "Errors", "FormFacade", "JsonEndpoint", "JsonFacade", "UntilShutdown", "VoiceEndpoint"]

log = logging.getLogger("learnloop.server")

_FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")
_PATH_SAFE = "/!$&'()*+,;=:@-._~"


class JsonFacade(Protocol):
    """What serves a JSON contract: :class:`~learnloop.api.V1Api` or :class:`~learnloop.api.V2Api`."""

    def handle(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | list[str]] | None = None,
        body: bytes | str | Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> ApiResponse: ...


class FormFacade(Protocol):
    """What serves the voice contract: :class:`~learnloop.voice.VoiceApi`."""

    def handle(
        self,
        method: str,
        path: str,
        *,
        form: Mapping[str, str | Sequence[str]] | None = None,
        files: Mapping[str, bytes] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> ApiResponse: ...


@dataclass(frozen=True)
class BodyLimits:
    """The most bytes of a request body the server reads, per contract.

    v1 refuses any body over 16 KB itself (with the size in its message); the
    server reads up to ``v1`` bytes so that it can say so, and answers 400
    beyond. Beyond ``v2`` or ``voice`` bytes the answer is 413. Every refusal
    has the contract's error body.
    """

    v1: int = 1 << 20
    v2: int = 64 << 20
    voice: int = 32 << 20


class _TooLarge(Exception):
    pass


def _capped(receive: Receive, limit: int) -> Receive:
    """``receive`` that raises :class:`_TooLarge` once the body passes ``limit`` bytes."""
    seen = 0

    async def wrapped() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise _TooLarge
        return message

    return wrapped


def _declared_too_large(request: Request, limit: int) -> bool:
    declared = request.headers.get("content-length", "")
    return declared.isdigit() and int(declared) > limit


def _facade_path(request: Request, prefix: str) -> str:
    """The path as sent (percent-encoding kept), relative to where the application is mounted.

    ``prefix`` is the mount point of the façade inside this application
    (``/v1``): Starlette's ``root_path`` ends with it.
    """
    scope = request.scope
    root: str = scope.get("root_path", "")
    root = root[: -len(prefix)] if root.endswith(prefix) else root
    path: str = scope["path"]
    path = path[len(root) :] if root and path.startswith(root) else path
    raw = scope.get("raw_path")
    if isinstance(raw, bytes):
        text = raw.decode("utf-8", "surrogateescape")
        if text.startswith(root) and unquote(text[len(root) :], errors="surrogateescape") == path:
            return text[len(root) :]
    return quote(path, safe=_PATH_SAFE)


def _headers(request: Request) -> dict[str, str]:
    """The request's headers by (lower-case) name; a repeated header's values joined by ", "."""
    out: dict[str, str] = {}
    for name, value in request.headers.items():
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


def _query(request: Request) -> dict[str, str | list[str]]:
    out: dict[str, list[str]] = {}
    for name, value in request.query_params.multi_items():
        out.setdefault(name, []).append(value)
    return dict(out)


def _response(answer: ApiResponse) -> Response:
    headers = dict(answer.headers)
    if answer.body is None:
        return Response(status_code=answer.status, headers=headers)
    return Response(answer.json().encode("utf-8"), answer.status, headers, media_type="application/json")


class Errors:
    """The error body of one contract, for what the server itself refuses."""

    def __init__(self, shape: Literal["error", "errors"], link: str | None) -> None:
        self.shape = shape
        self.link = link

    def __call__(self, status: int, problem: str, headers: Mapping[str, str] | None = None) -> Response:
        link = None if self.link is None else self.link.format(status=status)
        return _response(error_response(status, [problem], shape=self.shape, link=link, headers=headers))


#: the status of a request cut short by the server's shutdown, per contract: 503 where the contract lists it
#: (v1: "temporarily offline; retry later", voice); v2's document lists no 503, so its server-side error, 500
SHUTDOWN_STATUS = {"v1": 503, "v2": 500, "voice": 503}
SHUTDOWN_PROBLEM = "the server is shutting down; the request may not have been carried out, retry it later"


class UntilShutdown:
    """A contract's endpoint (an ASGI application) that answers in the contract's error shape when cancelled.

    A forced shutdown (a second Ctrl-C to ``learnloop serve``, or uvicorn's
    ``timeout_graceful_shutdown`` running out) cancels the requests still in
    flight; uvicorn would answer those with a plain-text 500. Cancelled before
    its answer started, a request gets ``status`` with the contract's error
    body and ``Connection: close`` instead. A façade call already running in its
    thread is not stopped by the cancellation: it may still be carried out.
    """

    def __init__(self, app: ASGIApp, errors: Errors, name: str) -> None:
        self.app = app
        self.errors = errors
        self.name = name

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except anyio.get_cancelled_exc_class():
            if started or scope["type"] != "http":
                raise
            status = SHUTDOWN_STATUS[self.name]
            log.warning("%s: a request was cancelled by the server's shutdown; answered %d", self.name, status)
            # the request is answered: the cancellation ends here, as the task's work is done
            await self.errors(status, SHUTDOWN_PROBLEM, {"Connection": "close"})(scope, receive, send)


async def _answer(errors: Errors, name: str, call: Callable[[], Awaitable[ApiResponse]]) -> Response:
    try:
        return _response(await call())
    except Exception:
        log.exception("%s: the façade failed on a request", name)
        return errors(500, "internal server error; retry later")


#: how long a v2 request over its key's rate may wait for its turn (v2's contract lists no 429)
V2_PACE_SECONDS = 2.0
#: a refusal for a key's rate is sent after this pause (at most its Retry-After, which is at least 1 s): a client
#: honouring Retry-After loses nothing; one that does not is held to one request a second per connection
REFUSAL_PAUSE_SECONDS = 1.0
#: the status of a request refused because the server's queue is full, per contract (v2 lists no 503)
BUSY_STATUS = {"v1": 503, "v2": 500, "voice": 503}
BUSY_PROBLEM = "the server is busy: {what} queued already; retry later"
_SCORING_ROUTES = ("/score", "/multichoice/score", "/fluency/score")


async def _refused(errors: Errors, status: int, problem: str, wait: float) -> Response:
    """A refusal for a key's rate, after a pause of up to :data:`REFUSAL_PAUSE_SECONDS` (on the event loop:
    no thread and no core is held meanwhile)."""
    await asyncio.sleep(min(REFUSAL_PAUSE_SECONDS, float(retry_after(wait))))
    return errors(status, problem, {"Retry-After": retry_after(wait)})


def _over_rate(limits: Limits, key: str | None, wait: float) -> str:
    rate = limits.rates[key]  # type: ignore[index]
    return (
        f"too many requests: the rate limit of this API key is {rate.requests_per_second:g} requests per second "
        f"(burst {rate.burst}); retry after {retry_after(wait)} s"
    )


def _scope_headers(scope: Scope) -> dict[str, str]:
    """The request's headers by (lower-case) name; a repeated header's values joined by ", "."""
    out: dict[str, str] = {}
    for raw_name, raw_value in scope["headers"]:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


def _scope_path(scope: Scope, root: str) -> str:
    """The path as sent (percent-encoding kept), relative to ``root``, where the application is mounted."""
    path: str = scope["path"]
    path = path[len(root) :] if root and path.startswith(root) else path
    raw = scope.get("raw_path")
    if isinstance(raw, bytes):
        text = raw.decode("utf-8", "surrogateescape")
        if text.startswith(root) and unquote(text[len(root) :], errors="surrogateescape") == path:
            return text[len(root) :]
    return quote(path, safe=_PATH_SAFE)


def _scope_query(scope: Scope) -> dict[str, str | list[str]]:
    raw = scope.get("query_string", b"")
    if not raw:
        return {}
    out: dict[str, list[str]] = {}
    for name, value in QueryParams(raw).multi_items():
        out.setdefault(name, []).append(value)
    return dict(out)


def _root(scope: Scope, prefix: str) -> str:
    """Where the application is mounted: the scope's ``root_path``, less ``prefix`` when a Mount added it."""
    root: str = scope.get("root_path", "")
    return root[: -len(prefix)] if root.endswith(prefix) else root


async def _read_body(receive: Receive, limit: int) -> bytes:
    """The whole request body; raises :class:`_TooLarge` past ``limit`` bytes, ClientDisconnect on a disconnect."""
    chunks: list[bytes] = []
    seen = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect
        if message["type"] == "http.request":
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > limit:
                raise _TooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)


class JsonEndpoint:
    """A JSON contract's endpoint (an ASGI application): rate, body, a place in the pool, the façade's answer.

    Nothing of Starlette's request machinery is on this path: the scope's
    headers, path and query are handed to the façade as they arrived, the
    body read up to the server's limit, and the call run in the process's pool.
    """

    def __init__(self, prefix: str, facade: JsonFacade, errors: Errors, limit: int, pool: Pool, limits: Limits) -> None:
        self.prefix, self.facade, self.errors, self.limit = prefix, facade, errors, limit
        self.pool, self.limits = pool, limits
        self.name = prefix.strip("/")
        self.over = 400 if self.name == "v1" else 413

    async def _gate(self, key: str | None) -> Response | None:
        """The refusal of a request over its key's rate (``None``: it goes on, after its turn on v2)."""
        if key is None or key not in self.limits.rates:
            return None
        if self.name != "v2":
            wait = self.limits.request(key)
            if wait <= 0:
                return None
            return await _refused(self.errors, 429, _over_rate(self.limits, key, wait), wait)
        wait = self.limits.pace(key, V2_PACE_SECONDS)
        if wait > V2_PACE_SECONDS:
            return await _refused(self.errors, 500, _over_rate(self.limits, key, wait), wait)
        if wait > 0:
            await asyncio.sleep(wait)
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = _scope_headers(scope)
        response = await self._respond(scope, receive, headers)
        await response(scope, receive, send)

    async def _respond(self, scope: Scope, receive: Receive, headers: dict[str, str]) -> Response:
        errors, limit = self.errors, self.limit
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            return errors(self.over, f"the request body is larger than {limit} bytes, the most this server reads")
        refused = await self._gate(headers.get("x-api-key"))
        if refused is not None:
            return refused
        try:  # a place in the pool first: a full queue is answered before the body is read
            self.pool.admit()
        except Full:
            problem = BUSY_PROBLEM.format(what=f"{self.pool.size + self.pool.waiting} requests")
            return errors(BUSY_STATUS[self.name], problem, {"Retry-After": "1"})
        try:
            body = await _read_body(receive, limit)
        except (_TooLarge, ClientDisconnect, asyncio.CancelledError) as exc:
            self.pool.release()
            if isinstance(exc, asyncio.CancelledError):
                raise
            if isinstance(exc, ClientDisconnect):
                return errors(400, "the client disconnected before the end of the body")
            return errors(self.over, f"the request body is larger than {limit} bytes, the most this server reads")
        method, path, query = scope["method"], _scope_path(scope, _root(scope, self.prefix)), _scope_query(scope)
        call = functools.partial(self.facade.handle, method, path, query=query, body=body, headers=headers)
        return await _answer(errors, self.name, functools.partial(self.pool.run, call))


class VoiceEndpoint:
    """The voice contract's endpoint: rate, form, then a scoring slot (scorings) or a place in the pool (the rest).

    A key's scoring budget (``scoring_seconds_per_minute``) is charged the CPU
    seconds each of its scorings took (an estimate is reserved when a scoring
    is let in, settled when it ends).
    """

    def __init__(
        self,
        prefix: str,
        facade: FormFacade,
        errors: Errors,
        limit: int,
        pool: Pool,
        scoring: Pool,
        limits: Limits,
        processes: ScoringProcesses | None = None,
    ) -> None:
        self.prefix, self.facade, self.errors, self.limit = prefix, facade, errors, limit
        self.pool, self.scoring, self.limits, self.processes = pool, scoring, limits, processes
        self.app = request_response(self.endpoint)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)

    def _call(self, *args: Any) -> tuple[ApiResponse, float]:
        started = time.thread_time()  # the CPU seconds of this thread: the scoring's own, whatever else runs
        answer = self.facade.handle(*args[:2], form=args[2], files=args[3], headers=args[4])
        return answer, time.thread_time() - started

    def _score(self, *args: Any) -> tuple[ApiResponse, float]:
        """A scoring: in the child processes when there are some, else in this thread."""
        if self.processes is None:
            return self._call(*args)
        return self.processes.call(*args)

    async def endpoint(self, request: Request) -> Response:
        errors, limit = self.errors, self.limit
        too_large = errors(413, f"the request body is larger than {limit} bytes, the most this server reads")
        if _declared_too_large(request, limit):
            return too_large
        key = request.headers.get("x-api-key")
        wait = self.limits.request(key)
        if wait > 0:
            return await _refused(errors, 429, _over_rate(self.limits, key, wait), wait)
        path = _facade_path(request, self.prefix)
        scoring = request.method == "POST" and path.split("?")[0].rstrip("/")[len(self.prefix) :] in _SCORING_ROUTES
        pool = self.scoring if scoring else self.pool
        reserved = 0.0
        if scoring:
            wait, reserved = self.limits.scoring(key)
            if wait > 0:
                rate = self.limits.rates[key]  # type: ignore[index]
                problem = (
                    f"too many requests: this API key's scoring budget of {rate.scoring_seconds_per_minute:g} "
                    f"seconds per minute is spent; retry after {retry_after(wait)} s"
                )
                return await _refused(errors, 429, problem, wait)
        try:  # a place in the pool before the form is read: a full queue is answered at once
            pool.admit()
        except Full:
            self.limits.scored(key, reserved, 0.0)  # not scored: the reservation is given back
            what = f"{pool.size + pool.waiting} scorings" if scoring else f"{pool.size + pool.waiting} requests"
            return errors(BUSY_STATUS["voice"], BUSY_PROBLEM.format(what=what), {"Retry-After": "1"})
        ran = False

        async def call(method: str, form: dict[str, list[str]], files: dict[str, bytes], headers: Any) -> ApiResponse:
            nonlocal ran
            ran = True
            run = self._score if scoring else self._call
            answer, seconds = await pool.run(run, method, path, form, files, headers)
            self.limits.scored(key, reserved, seconds)
            return answer

        try:
            return await self._form_and_call(request, too_large, call)
        finally:
            if not ran:
                pool.release()
                self.limits.scored(key, reserved, 0.0)

    async def _form_and_call(
        self, request: Request, too_large: Response, run: Callable[..., Awaitable[ApiResponse]]
    ) -> Response:
        errors, limit = self.errors, self.limit
        capped = Request(request.scope, _capped(request.receive, limit))
        form: dict[str, list[str]] = {}
        uploads: dict[str, list[bytes]] = {}
        media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if request.method == "POST" and media_type in _FORM_TYPES:
            try:
                async with capped.form(max_files=8, max_fields=64) as data:
                    for field, value in data.multi_items():
                        if isinstance(value, UploadFile):
                            uploads.setdefault(field, []).append(await value.read())
                        else:
                            form.setdefault(field, []).append(value)
            except _TooLarge:
                return too_large
            except (MultiPartException, HTTPException) as exc:
                detail = exc.message if isinstance(exc, MultiPartException) else exc.detail
                return errors(400, f"malformed {media_type} body: {detail}")
            except ClientDisconnect:
                return errors(400, "the client disconnected before the end of the body")
        repeated = [f"file '{f}' must be given once, not {len(v)} times" for f, v in uploads.items() if len(v) > 1]
        if repeated:
            return errors(400, "; ".join(repeated))
        files = {field: parts[0] for field, parts in uploads.items()}
        method, headers = request.method, _headers(request)
        return await _answer(errors, "voice", functools.partial(run, method, form, files, headers))
