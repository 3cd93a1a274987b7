"""The ASGI application: learning API v1, v2 and the voice API over one engine.

Each request is handed to a façade's ``handle`` as it arrived: the method, the
path as sent (still percent-encoded, relative to where the application is
mounted), the query parameters, the headers and the body bytes (the voice
API's ``multipart/form-data`` parsed by Starlette into fields and file bytes).
The façade's :class:`~learnloop._http.ApiResponse` goes back as JSON. Façade
calls run in worker threads, never on the event loop.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route, request_response
from starlette.types import ASGIApp, Receive, Scope, Send

from learnloop.api import V1Api, V2Api
from learnloop.api.v1 import DEFAULT_ERROR_LINK
from learnloop.engine import Engine
from learnloop.server import openapi
from learnloop.server.endpoints import (
    BodyLimits,
    Errors,
    FormFacade,
    JsonEndpoint,
    JsonFacade,
    UntilShutdown,
    VoiceEndpoint,
)
from learnloop.server.keys import Keys
from learnloop.server.page import docs_routes, page_routes
from learnloop.server.throttle import Capacity, Limits, Pool, ScoringProcesses, voice_facade

__all__ = ["BodyLimits", "Capacity", "JsonFacade", "FormFacade", "create_app"]

log = logging.getLogger("learnloop.server")

_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]


def _unavailable(errors: Errors, problem: str) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        return errors(503, problem)

    return endpoint


def _health_routes(engine: Engine, readiness_timeout: float) -> list[BaseRoute]:
    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        try:
            with anyio.fail_after(readiness_timeout):
                # one read by primary key: the store answers, whatever it holds
                await anyio.to_thread.run_sync(engine.store.get, "meta", "default", ("readyz",), abandon_on_cancel=True)
        except TimeoutError:
            problem = f"the store did not answer within {readiness_timeout:g} s"
            return JSONResponse({"status": "unavailable", "detail": problem}, status_code=503)
        except Exception as exc:
            log.warning("readiness: the store is not reachable: %s", exc)
            detail = f"the store is not reachable: {type(exc).__name__}"
            return JSONResponse({"status": "unavailable", "detail": detail}, status_code=503)
        return JSONResponse({"status": "ready"})

    return [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"])]


def _openapi(prefix: str, name: str) -> BaseRoute:
    """``GET <prefix>/openapi.json``: the contract's OpenAPI document, its server where this application is mounted."""

    async def endpoint(request: Request) -> Response:
        doc = openapi.document(name)
        doc["servers"] = [{**doc["servers"][0], "url": request.scope.get("root_path") or "/"}]
        return JSONResponse(doc)

    # other methods on this path go on to the façade (a 404 in the contract's shape)
    return Route(f"{prefix}/openapi.json", endpoint, methods=["GET"])


def _mount(prefix: str, endpoint: ASGIApp, name: str, errors: Errors) -> list[BaseRoute]:
    # every method reaches the façade, which answers 405 itself, in its own error shape
    # (the prefix alone is a path too: the façade answers it with a 404)
    app = UntilShutdown(endpoint, errors, name)
    mount = Mount(prefix, app=app)
    # Starlette matches the rest of the path with ".", which stops at a newline: an id holding
    # one (sent as %0A) must still reach the façade
    mount.path_regex = re.compile(mount.path_regex.pattern, re.DOTALL)
    return [_openapi(prefix, name), mount, Route(prefix, app, methods=_METHODS)]


def _stopping(
    lifespan: Callable[[Starlette], AbstractAsyncContextManager[None]] | None, closers: list[Callable[[], None]]
) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """``lifespan``, then what the application started stopped (its scoring processes; a mounted application's
    lifespan does not run: they stop at exit)."""

    @asynccontextmanager
    async def run(app: Starlette) -> AsyncIterator[None]:
        try:
            if lifespan is None:
                yield
            else:
                async with lifespan(app):
                    yield
        finally:
            for close in closers:
                close()

    return run


class _Learnloop(Starlette):
    """The application: a request to a contract goes straight to its endpoint, the rest through Starlette's router.

    The contracts' routes are in the router too (and behave the same there);
    matching their prefixes first spares every API request the router's and
    the middleware's layers.
    """

    def __init__(self, contracts: list[tuple[str, ASGIApp]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.contracts = contracts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            root: str = scope.get("root_path", "")
            if root and path.startswith(root):
                path = path[len(root) :]
            for prefix, app in self.contracts:
                if path.startswith(prefix) and (len(path) == len(prefix) or path[len(prefix)] == "/"):
                    if path[len(prefix) :] == "/openapi.json" and scope["method"] in ("GET", "HEAD"):
                        break
                    # as the Mount would: the prefix joins the root path (the path stays whole)
                    scope["app"], scope["root_path"] = self, root + prefix
                    await app(scope, receive, send)
                    return
        await super().__call__(scope, receive, send)


def create_app(
    engine: Engine,
    *,
    keys: Keys | None = None,
    v1: JsonFacade | bool = True,
    v2: JsonFacade | bool = True,
    voice: FormFacade | bool = True,
    body_limits: BodyLimits | None = None,
    readiness_timeout: float = 2.0,
    page: bool = True,
    docs: bool = True,
    lifespan: Callable[[Starlette], AbstractAsyncContextManager[None]] | None = None,
    capacity: Capacity | None = None,
) -> Starlette:
    """A Starlette application serving the three contracts over ``engine``.

    Learning API v1 is at ``/v1``, v2 at ``/v2``, the voice API at ``/api/v1``;
    ``GET /healthz`` answers while the process is up, ``GET /readyz`` when the
    store answers too (503 otherwise). Each contract's OpenAPI document is at
    ``<prefix>/openapi.json`` (:mod:`learnloop.server.openapi`). ``page`` serves the learner page at
    ``GET /`` (its files under ``/static``; see :mod:`learnloop.server.page`), ``docs`` the API
    reference (Swagger UI over the three documents) at ``GET /docs``.
    ``keys`` gives the credentials of all
    three (``None``: authentication off, every request belongs to the
    application ``"default"``). Each of ``v1``, ``v2`` and ``voice`` is ``True``
    (a façade made here over ``engine`` and ``keys``), ``False`` (not served) or
    a façade of your own. Without the ``voice`` extra installed, the voice API
    answers 503. The application may be mounted inside another one, e.g.
    ``Mount("/learning", app=create_app(engine))``; it does not close
    ``engine``.

    ``capacity`` bounds the façade calls that run and wait at once
    (:class:`~learnloop.server.throttle.Capacity`); ``keys.rate_limits`` the
    rate of each key that has one. Both are per application object, so per
    worker process.

    >>> app = create_app(Engine(), voice=False)
    >>> [route.path for route in app.routes]
    ['/healthz', '/readyz', '/', '/static', '/docs', '/v1/openapi.json', '/v1', '/v1', '/v2/openapi.json', '/v2', '/v2']
    """
    keys = keys or Keys()
    limits = body_limits or BodyLimits()
    capacity = capacity or Capacity()
    pool = Pool(capacity.threads, capacity.waiting, "learnloop-call")
    rates = Limits(keys.rate_limits)
    routes = _health_routes(engine, readiness_timeout) + (page_routes() if page else [])
    if docs:
        routes += docs_routes(static=not page)
    contracts: list[tuple[str, ASGIApp]] = []
    closers: list[Callable[[], None]] = []

    def mount(prefix: str, endpoint: ASGIApp, name: str, errors: Errors) -> None:
        mounted = _mount(prefix, endpoint, name, errors)
        routes.extend(mounted)
        contracts.append((prefix, mounted[-1].app))  # type: ignore[attr-defined]

    if v1 is not False:
        facade1: JsonFacade = V1Api(engine, keys.api_keys, key_expiry=keys.api_key_expiry) if v1 is True else v1
        errors1 = Errors("errors", getattr(facade1, "error_link", DEFAULT_ERROR_LINK))
        mount("/v1", JsonEndpoint("/v1", facade1, errors1, limits.v1, pool, rates), "v1", errors1)
    if v2 is not False:
        facade2: JsonFacade = V2Api(engine, keys.api_keys) if v2 is True else v2
        errors2 = Errors("error", None)
        mount("/v2", JsonEndpoint("/v2", facade2, errors2, limits.v2, pool, rates), "v2", errors2)
    if voice is not False:
        errors3 = Errors("errors", None)
        if voice is True and importlib.util.find_spec("pocketsphinx") is None:
            hint = "the voice API needs the 'voice' extra: pip install 'learnloop[voice]'"
            mount("/api/v1", request_response(_unavailable(errors3, hint)), "voice", errors3)
        else:
            voice_args = (
                None if keys.api_keys is None else dict(keys.api_keys),
                None if keys.jwt_issuers is None else dict(keys.jwt_issuers),
                dict(keys.api_key_expiry),
            )
            facade3: FormFacade = voice_facade(*voice_args) if voice is True else voice
            slots = capacity.scoring or max(1, (os.cpu_count() or 1) - 1)
            scoring = Pool(slots, capacity.scoring_waiting, "learnloop-scoring")
            # the server's own façade scores in child processes (one per slot); a façade given here, in this one
            processes = (
                ScoringProcesses(slots, voice_facade, voice_args) if voice is True and capacity.processes else None
            )
            endpoint = VoiceEndpoint("/api/v1", facade3, errors3, limits.voice, pool, scoring, rates, processes)
            if processes is not None:
                closers.append(processes.close)
            mount("/api/v1", endpoint, "voice", errors3)
    return _Learnloop(contracts, routes=routes, lifespan=_stopping(lifespan, closers))
