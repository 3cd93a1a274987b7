"""Learning API v1 façade: ``V1Api.handle`` reproduces the v1 HTTP contract.

A thin translation onto the engine that the v2 façade uses: a view is a
catalog, a path prefix is a topic, an asset is an item, ``partner_difficulty``
is a topic item ref's difficulty, ``response_submit`` is an attempt (or a
skip) and ``theory_viewed`` a theory view (see ``docs/v1.md``). Success bodies
follow the contract (``None`` for "200, empty body"); every failure is
``{"errors": [{"status", "detail", "link"}]}``, one error per problem.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, unquote

import numpy as np

from learnloop._http import (
    ApiResponse,
    BodyError,
    check_api_keys,
    content_type_problem,
    decode_json_body,
    error_response,
    header,
    header_problems,
    query_list,
    resolve_api_key,
)
from learnloop._types import Clock
from learnloop.api._v1_content import USERS, V1Content
from learnloop.api._v1_events import prepare_events, record_users, user_doc, write_events
from learnloop.api._v1_limits import V1Limits
from learnloop.api._v1_mapping import asset_filter, internal_id, path_problem
from learnloop.api._v1_models import (
    Fail,
    NextAssetsRequest,
    UserEventsRequest,
    UserFilterStatusRequest,
    dump,
    parse,
    single,
)
from learnloop.engine import Engine
from learnloop.errors import ContextError, NotFoundError, ValidationError
from learnloop.recommend.due import nothing_due

__all__ = ["V1Api", "V1Limits"]


#: Where an error's ``link`` points by default: the description of its HTTP status.
DEFAULT_ERROR_LINK = "https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/{status}"
_MAX_ERRORS = 100

# route name -> allowed methods
_METHODS: dict[str, tuple[str, ...]] = {
    "assets": ("GET", "PUT", "DELETE"),
    "asset": ("GET", "PUT", "DELETE"),
    "views": ("GET",),
    "view": ("GET", "PUT", "DELETE"),
    "user-events": ("POST",),
    "next-assets": ("POST",),
    "user-filter-status": ("POST",),
    "user-status": ("GET",),
}
# array query parameters: also taken as name[] and name[<index>] (the bracket forms of common clients)
_ARRAYS = frozenset({"asset_ids", "view_paths"})
_BRACKETS = re.compile(r"(?P<name>[a-z_]+)\[[0-9]*\]")
_QUERY: dict[tuple[str, str], frozenset[str]] = {
    ("assets", "GET"): frozenset({"asset_ids"}),
    ("assets", "DELETE"): frozenset({"asset_ids"}),
    ("views", "GET"): frozenset({"last_view_id", "limit"}),
    ("user-status", "GET"): frozenset({"user_id", "view_id", "view_paths"}),
}


def _route(path: str) -> tuple[str, str | None] | None:
    parts = path.rstrip("/").split("/") if path != "/" else [""]
    if len(parts) < 3 or parts[0] != "" or parts[1] != "v1":
        return None
    name = parts[2]
    if len(parts) == 3 and name in _METHODS:
        return name, None
    if len(parts) == 4 and name in ("assets", "views"):
        try:
            resource_id = unquote(parts[3], errors="strict")
        except UnicodeDecodeError:
            return None
        return name[:-1], resource_id
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class V1Api:
    """The v1 contract over an :class:`Engine`.

    ``api_keys`` maps each API key to its application (``None`` disables
    authentication: every request then belongs to ``"default"``; an empty key
    or application is refused with ValueError);
    ``key_expiry`` maps a key to the aware ``datetime`` from which it answers
    402; ``clock`` (the engine's by default) tells the time for expiry.

    >>> api = V1Api(Engine(seed=1), api_keys={"k": "app-1"})
    >>> api.handle("PUT", "/v1/assets/q1", body={"type": "exercise"}, headers={"X-API-KEY": "k"})
    ApiResponse(status=200, body=None, headers={})
    >>> api.handle("GET", "/v1/assets/q1", headers={"X-API-KEY": "k"}).body
    {'id': 'q1', 'type': 'exercise'}
    >>> api.handle("GET", "/v1/assets/q1").body["errors"][0]["status"]
    401
    """

    def __init__(
        self,
        engine: Engine,
        api_keys: Mapping[str, str] | None = None,
        *,
        key_expiry: Mapping[str, datetime] | None = None,
        clock: Clock | None = None,
        limits: V1Limits | None = None,
        error_link: str = DEFAULT_ERROR_LINK,
    ) -> None:
        self.engine = engine
        self.api_keys = check_api_keys(api_keys)
        self.key_expiry = {
            k: (v if v.tzinfo is not None else v.replace(tzinfo=UTC)) for k, v in (key_expiry or {}).items()
        }
        self.clock: Clock = clock or engine.clock
        self.limits = limits or V1Limits()
        self.error_link = error_link
        content = self._content = V1Content(engine, self.limits)
        self._handlers: dict[tuple[str, str], Callable[..., ApiResponse]] = {
            ("asset", "PUT"): content.put_asset,
            ("asset", "GET"): content.get_asset,
            ("asset", "DELETE"): content.delete_asset,
            ("assets", "PUT"): content.put_assets,
            ("assets", "GET"): content.get_assets,
            ("assets", "DELETE"): content.delete_assets,
            ("view", "PUT"): content.put_view,
            ("view", "GET"): content.get_view,
            ("view", "DELETE"): content.delete_view,
            ("views", "GET"): content.get_views,
            ("user-events", "POST"): self._user_events,
            ("next-assets", "POST"): self._next_assets,
            ("user-filter-status", "POST"): self._user_filter_status,
            ("user-status", "GET"): self._user_status,
        }

    # -- the door -----------------------------------------------------------------------------
    def _error(self, status: int, problems: list[str], headers: Mapping[str, str] | None = None) -> ApiResponse:
        link = self.error_link.format(status=status)
        return error_response(status, problems, shape="errors", link=link, max_errors=_MAX_ERRORS, headers=headers)

    def handle(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | list[str]] | None = None,
        body: bytes | str | Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> ApiResponse:
        """Answer one HTTP request; never raises for bad input.

        Arguments outside the type hints (e.g. a header or query value that is
        not a string) are answered with a 400.
        """
        if not isinstance(method, str) or not isinstance(path, str):
            return self._error(400, ["the method and the path must be strings"])
        try:
            return self._handle(method, path, query, body, headers)
        except Fail as exc:
            return self._error(exc.status, exc.problems)

    def _handle(
        self,
        method: str,
        path: str,
        query: Mapping[str, str | list[str]] | None,
        body: bytes | str | Mapping[str, Any] | None,
        headers: Mapping[str, str] | None,
    ) -> ApiResponse:
        path, _, query_string = path.partition("?")
        route = _route(path) if _encodable(path) else None
        if route is None:
            raise Fail(404, f"no endpoint at path '{path[:200]}'")
        name, resource_id = route
        method = method.upper()
        allowed = _METHODS[name]
        if method not in allowed:
            return self._error(
                405,
                [f"method {method[:20]} is not allowed on '{path[:200]}'; use {' or '.join(allowed)}"],
                {"Allow": ", ".join(allowed)},
            )
        problems = header_problems(headers)
        if problems:
            raise Fail(400, problems)
        app = self._authenticate(headers)
        params = self._query(query, query_string, _QUERY.get((name, method), frozenset()))
        decoded, raw = self._body(body, headers, method)
        handler = self._handlers[(name, method)]
        args: list[Any] = [app]
        if resource_id is not None:
            if not resource_id or not _encodable(resource_id):
                raise Fail(404, f"no endpoint at path '{path[:200]}'")
            args.append(resource_id)
        if method in ("PUT", "POST"):
            args.append(raw if decoded is not None else b"{}")
        elif (name, method) in _QUERY:
            args.append(params)
        try:
            return handler(*args)
        except (ValidationError, ContextError) as exc:
            problems = list(exc.problems) if isinstance(exc, ValidationError) else [str(exc)]
            return self._error(400, problems)
        except NotFoundError as exc:
            return self._error(404, [str(exc)])

    def _authenticate(self, headers: Mapping[str, str] | None) -> str:
        app = resolve_api_key(self.api_keys, headers)
        if app is None:
            raise Fail(401, "missing or wrong X-API-KEY header")
        key = header(headers, "X-API-KEY")
        expiry = self.key_expiry.get(key) if key is not None and self.api_keys is not None else None
        if expiry is not None and self.clock() >= expiry:
            raise Fail(402, f"the API key expired at {expiry.isoformat()}")
        return app

    def _query(
        self, query: Mapping[str, str | list[str]] | None, query_string: str, known: frozenset[str]
    ) -> dict[str, list[str]]:
        merged: dict[str, list[str]] = {}
        for name, values in parse_qs(query_string, keep_blank_values=True).items():
            merged.setdefault(name, []).extend(values)
        if query is not None and not isinstance(query, Mapping):
            raise Fail(400, f"the query must be a mapping of names to strings, got {type(query).__name__}")
        wrong: list[str] = []
        for name, value in (query or {}).items():
            values = [value] if isinstance(value, str) else value
            if not isinstance(values, (list, tuple)):
                got = type(value).__name__
            else:
                odd = [type(v).__name__ for v in values if not isinstance(v, str)]
                got = f"a {type(value).__name__} holding {odd[0]}" if odd else ""
            if got:
                wrong.append(f"query parameter '{str(name)[:100]}' must be a string or a list of strings, got {got}")
                continue
            merged.setdefault(str(name), []).extend(values)
        if wrong:
            raise Fail(400, wrong)
        for name in list(merged):
            bracketed = _BRACKETS.fullmatch(name)
            if bracketed is not None and bracketed["name"] in _ARRAYS & known:
                merged.setdefault(bracketed["name"], []).extend(merged.pop(name))
        unknown = [n for n in merged if n not in known]
        if unknown:
            raise Fail(400, [f"unknown query parameter '{n[:100]}'" for n in unknown])
        bad = [n for n, values in merged.items() if not all(_encodable(v) for v in values)]
        if bad:
            raise Fail(400, [f"query parameter '{n}' is not valid Unicode text" for n in bad])
        return merged

    def _body(
        self,
        body: bytes | str | Mapping[str, Any] | None,
        headers: Mapping[str, str] | None,
        method: str,
    ) -> tuple[dict[str, Any] | None, bytes]:
        limit = self.limits.request_bytes
        if isinstance(body, (bytes, bytearray, memoryview, str)):
            size = len(body.encode("utf-8", errors="surrogatepass") if isinstance(body, str) else bytes(body))
            if size > limit:
                raise Fail(400, f"the request body is {size} bytes; the limit is {limit} bytes (16 KB)")
        if method not in ("PUT", "POST"):
            # a body of GET or DELETE is not read (beyond the size limit)
            if isinstance(body, Mapping):
                try:
                    size = len(json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
                except (TypeError, ValueError, RecursionError):
                    size = 0
                if size > limit:
                    raise Fail(400, f"the request body is {size} bytes; the limit is {limit} bytes (16 KB)")
            return None, b""
        problem = content_type_problem(headers, body)
        if problem is not None:
            raise Fail(400, problem)
        try:
            decoded, raw = decode_json_body(body)
        except BodyError as exc:
            raise Fail(400, str(exc)) from None
        if len(raw) > limit:
            raise Fail(400, f"the request body is {len(raw)} bytes; the limit is {limit} bytes (16 KB)")
        if decoded is None:
            return decoded, raw
        try:
            json.dumps(decoded, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise Fail(
                400,
                "the body holds a lone surrogate escape (e.g. \\ud800), which is not Unicode text",
            ) from None
        except (ValueError, RecursionError):  # pragma: no cover - decode_json_body has checked it
            raise Fail(400, "the body is not JSON-serialisable") from None
        return decoded, raw

    # -- real time --------------------------------------------------------------------------------
    def _user_events(self, app: str, raw: bytes) -> ApiResponse:
        body = parse(UserEventsRequest, raw)
        batch = prepare_events(self.engine, body.user_events, app=app, limit=self.limits.events_per_call)
        with self.engine.atomic():
            write_events(self.engine, batch, app=app)
        return ApiResponse(200, {"duplicate_events": batch.duplicates, "warnings": batch.warnings})

    def _mask(self, app: str, view: dict[str, Any], flt: Any) -> np.ndarray:
        catalog_id = internal_id(view["id"])
        tags = [dump(t) for t in flt.tags] if flt.tags is not None else None
        compiled = asset_filter(view["assets"], asset_types=flt.asset_types, paths=flt.paths, tags=tags)
        mask = self.engine.filter_mask(catalog_id, compiled, app=app)
        return mask if compiled is not None else np.zeros_like(mask)

    def _next_assets(self, app: str, raw: bytes) -> ApiResponse:
        body = parse(NextAssetsRequest, raw)
        maximum = self.limits.next_assets
        if not 1 <= body.limit <= maximum:
            shown = str(body.limit) if abs(body.limit) < 10**20 else f"an integer of {len(str(abs(body.limit)))} digits"
            raise ValidationError(f"'limit' must be from 1 to {maximum}, got {shown}")
        view = self._content.view_doc(app, body.view_id)
        catalog_id = internal_id(body.view_id)
        self._mask(app, view, body.filter)
        batch = prepare_events(self.engine, body.user_events or (), app=app, limit=self.limits.events_per_call)
        user_id = internal_id(body.user.id)
        with self.engine.atomic():
            write_events(self.engine, batch, app=app)
            record_users(self.engine, {user_id: user_doc(body.user)}, app=app)
            # under the engine's lock: the view cannot change between the mask and the sequence
            view = self._content.view_doc(app, body.view_id)
            mask = self._mask(app, view, body.filter)
            suggestions = self.engine.next_items(
                user_id, catalog_id, mode=body.mode.type, mask=mask, limit=body.limit, app=app
            )
            index = self.engine.catalog_index(catalog_id, app=app)
            idle = None
            if body.mode.type == "review" and not suggestions and mask.any():
                due = self.engine.due(user_id, catalog_id, app=app)
                met = [d for d in due if mask[index.position(d.item_id, d.topic_id) or 0]]  # (every one is placed)
                retention = self.engine.learner_options_for(catalog_id, app=app).desired_retention
                idle = nothing_due(met, retention).model_dump(mode="json")
        original = {internal_id(a["asset_id"]): a["asset_id"] for a in view["assets"]}
        data = []
        for s in suggestions:
            position = index.position(s.item_id)
            kind = "exercise" if position is not None and index.scorable[position] else "theory"
            data.append({"asset_id": original.get(s.item_id, s.item_id), "asset_type": kind})
        answer: dict[str, Any] = {"data": data, "duplicate_events": batch.duplicates, "warnings": batch.warnings}
        if idle is not None:  # review with nothing due: why, and when the next asset falls due
            asset = idle.pop("next_item_id")
            idle.pop("next_topic_id")
            answer["nothing_due"] = {**idle, "next_asset_id": None if asset is None else original.get(asset, asset)}
        return ApiResponse(200, answer)

    @staticmethod
    def _status(status: Any) -> dict[str, float]:
        return {
            "skill_level": status.skill_level,
            "display_skill": status.display_skill,
            "progress": status.progress,
        }

    def _user_filter_status(self, app: str, raw: bytes) -> ApiResponse:
        body = parse(UserFilterStatusRequest, raw)
        view = self._content.view_doc(app, body.view_id)
        masks = [self._mask(app, view, f) for f in body.filters]
        statuses = self.engine.status_v1(internal_id(body.user_id), internal_id(body.view_id), masks, app=app)
        return ApiResponse(200, {"data": [self._status(s) for s in statuses]})

    def _user_status(self, app: str, params: dict[str, list[str]]) -> ApiResponse:
        user_id = single(params, "user_id", required=True)
        view_id = single(params, "view_id", required=True)
        paths = query_list(params, "view_paths")
        if paths is None:
            raise Fail(400, "query parameter 'view_paths' is required")
        problems = [f"'view_paths': {p!r} {path_problem(p)}" for p in paths if path_problem(p)]
        if not user_id or not view_id:
            problems.append("query parameters 'user_id' and 'view_id' must not be empty")
        if problems:
            raise Fail(400, problems)
        assert user_id is not None and view_id is not None
        view = self._content.view_doc(app, view_id)
        catalog_id = internal_id(view_id)
        masks = []
        for p in paths:
            compiled = asset_filter(view["assets"], asset_types=None, paths=[p], tags=None)
            mask = self.engine.filter_mask(catalog_id, compiled, app=app)
            masks.append(mask if compiled is not None else np.zeros_like(mask))
        statuses = self.engine.status_v1(internal_id(user_id), catalog_id, masks, app=app)
        data = [
            {"user_id": user_id, "view_path": p, "status": self._status(s)}
            for p, s in zip(paths, statuses, strict=True)
        ]
        return ApiResponse(200, {"data": data})

    # -- beside the contract ---------------------------------------------------------------------
    def testers(self, *, app: str = "default") -> list[str]:
        """The internal ids of the users last seen as ``tester`` (kept out of calibration)."""
        return [user for user, doc in self.engine.scan_documents(USERS, app=app) if doc.get("type") == "tester"]

    def calibrate(self, view_id: str, *, app: str = "default", **options: Any) -> dict[str, dict[str, float]]:
        """Calibrate the difficulty of a view's exercises from its events, testers left out.

        ``options`` go to :meth:`Engine.calibrate` (``model``, ``min_responses``, ...).
        """
        self._content.view_doc(app, view_id)
        return self.engine.calibrate(internal_id(view_id), exclude_users=self.testers(app=app), app=app, **options)
