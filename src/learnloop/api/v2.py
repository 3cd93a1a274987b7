"""Learning API v2 façade: ``V2Api.handle`` reproduces the v2 HTTP contract.

Every body is ``{"data": ...}`` on success or ``{"error": {"status", "message"}}``
on failure. Routing, authentication, decoding and validation happen here; the
learning itself happens in :class:`~learnloop.engine.Engine`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from itertools import chain, repeat
from typing import Any

import pydantic
from pydantic import BaseModel, ConfigDict

from learnloop._http import (
    ApiResponse,
    BodyError,
    check_api_keys,
    content_type_problem,
    error_response,
    header_problems,
    loads_json_object,
    resolve_api_key,
)
from learnloop._types import IDENTIFIER_PATTERN, Identifier
from learnloop._validation import describe_validation_error, validate_json_body
from learnloop.content import Catalog, Filter, ItemDatabaseAnnotation, ItemList
from learnloop.engine import Engine
from learnloop.errors import (
    ContextError,
    LimitExceededError,
    NotFoundError,
    ValidationError,
)
from learnloop.events import (
    AttemptEvent,
    ContextEvent,
    PlainEvent,
    SkipEvent,
    ViewTheoryEvent,
    format_timestamp,
)
from learnloop.recommend.session import SessionSpec

__all__ = ["V2Api"]

_CLOSED = ConfigDict(extra="forbid", frozen=True)


class ItemIdsRequest(BaseModel):
    model_config = _CLOSED
    item_ids: tuple[Identifier, ...]


class CatalogIdRequest(BaseModel):
    model_config = _CLOSED
    catalog_id: Identifier


class EmptyRequest(BaseModel):
    model_config = _CLOSED


class AdaptiveEngineRequest(BaseModel):
    model_config = _CLOSED
    session_context: str
    events: tuple[ContextEvent, ...] | None = None


class UserStatusRequest(BaseModel):
    model_config = _CLOSED
    user_id: Identifier
    catalog_id: Identifier
    filter_list: tuple[Filter, ...]


class DueItemsRequest(BaseModel):
    model_config = _CLOSED
    user_id: Identifier
    catalog_id: Identifier
    filter: Filter | None = None


class UpsertEventsRequest(BaseModel):
    model_config = _CLOSED
    user_id: Identifier
    events: tuple[PlainEvent, ...]


_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)
#: the fields of a plain event and what JSON gives each when it is valid on its face
_EVENT_FIELDS = frozenset().union(*(model.model_fields for model in (AttemptEvent, SkipEvent, ViewTheoryEvent)))
_DICT = frozenset([dict])
_NONE = type(None)
#: the types each field may hold on its face (None: absent), the timestamp required
_FIELD_TYPES = (
    ("timestamp", frozenset([str])),
    ("score", frozenset([_NONE, int, float])),
    ("fraction_completed", frozenset([_NONE, int, float])),
    ("time_spent_ms", frozenset([_NONE, int])),
)


def _events_on_their_face(body: Any) -> tuple[str, list[dict[str, Any]]] | None:
    """An ``upsert-events`` body as ``(user_id, events)`` when it is valid on its face, else None.

    On its face: a JSON object of exactly ``user_id`` (an identifier) and
    ``events``, a list of objects whose fields are the plain events' fields,
    each holding the JSON type the strict JSON reading of the models accepts
    (text for text and timestamps, a number for a score or a fraction, an
    integer for a time), so that the engine's own reading of plain dicts, which
    is lax, reads them as the models would. What the engine then refuses is
    read again by the models, for their messages.
    """
    decoded = loads_json_object(body)
    if decoded is None or len(decoded) != 2:
        return None
    user_id, events = decoded.get("user_id"), decoded.get("events")
    if type(user_id) is not str or type(events) is not list or _IDENTIFIER.fullmatch(user_id) is None:
        return None
    # (checked field by field over all events at once)
    if not _DICT.issuperset(map(type, events)) or not _EVENT_FIELDS.issuperset(chain.from_iterable(events)):
        return None
    for name, types in _FIELD_TYPES:
        if not types.issuperset(map(type, map(dict.get, events, repeat(name)))):
            return None
    return user_id, events


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> ApiResponse:
    return error_response(status, [message], shape="error", headers=headers)


def _data(data: Any) -> ApiResponse:
    return ApiResponse(200, {"data": data})


_Handler = Callable[[str, Any], ApiResponse]


class V2Api:
    """The v2 contract over an :class:`Engine`.

    ``api_keys`` maps each API key to the application that owns it; ``None``
    disables authentication (every request then belongs to ``"default"``). An
    empty key (or application) is refused with ValueError.

    >>> api = V2Api(Engine(seed=1), api_keys={"k": "app-1"})
    >>> api.handle("POST", "/v2/query-catalog-ids", body={}, headers={"X-API-KEY": "k"}).body
    {'data': {'catalog_ids': []}}
    >>> api.handle("POST", "/v2/query-catalog-ids", body={}).status
    401
    """

    #: ``upsert-events`` bodies valid on their face go to the engine as plain dicts (its columnar reading)
    plain_events_fast = True

    def __init__(self, engine: Engine, api_keys: Mapping[str, str] | None = None) -> None:
        self.engine = engine
        self.api_keys = check_api_keys(api_keys)
        self._routes: dict[str, tuple[type[BaseModel], _Handler]] = {
            "/v2/upsert-items": (ItemList, self._upsert_items),
            "/v2/delete-items": (ItemIdsRequest, self._delete_items),
            "/v2/upsert-item-database": (ItemList, self._upsert_item_database),
            "/v2/upsert-item-database-annotation": (ItemDatabaseAnnotation, self._upsert_annotation),
            "/v2/upsert-catalog": (Catalog, self._upsert_catalog),
            "/v2/query-catalog": (CatalogIdRequest, self._query_catalog),
            "/v2/query-catalog-ids": (EmptyRequest, self._query_catalog_ids),
            "/v2/query-item-database": (EmptyRequest, self._query_item_database),
            "/v2/delete-catalog": (CatalogIdRequest, self._delete_catalog),
            "/v2/create-adaptive-session": (SessionSpec, self._create_session),
            "/v2/adaptive-engine": (AdaptiveEngineRequest, self._adaptive_engine),
            "/v2/user-status": (UserStatusRequest, self._user_status),
            "/v2/upsert-events": (UpsertEventsRequest, self._upsert_events),
            "/v2/query-due-items": (DueItemsRequest, self._query_due_items),
        }

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

        Arguments outside the type hints (e.g. a header value that is not a
        string) are answered with a 400.
        """
        if not isinstance(method, str) or not isinstance(path, str):
            return _error(400, "the method and the path must be strings")
        route = self._routes.get(path.rstrip("/") if path != "/" else path)
        if route is None:
            return _error(404, f"no endpoint at path '{path}'")
        if method.upper() != "POST":
            return _error(405, f"method {method.upper()} is not allowed on '{path}'; use POST", {"Allow": "POST"})
        problems = header_problems(headers)
        if problems:
            return _error(400, "; ".join(problems))
        app = resolve_api_key(self.api_keys, headers)
        if app is None:
            return _error(401, "missing or wrong X-API-KEY header")
        problem = content_type_problem(headers, body)
        if problem is not None:
            return _error(400, problem)
        model, handler = route
        if handler == self._upsert_events and self.plain_events_fast:
            fast = self._upsert_plain_events(app, body)
            if fast is not None:
                return fast
        try:
            request = validate_json_body(model, body)
        except BodyError as exc:
            return _error(400, str(exc))
        except pydantic.ValidationError as exc:
            return _error(400, "invalid request: " + "; ".join(describe_validation_error(exc)))
        try:
            return handler(app, request)
        except LimitExceededError as exc:
            return _error(413, str(exc))
        except ValidationError as exc:
            return _error(400, str(exc))
        except ContextError as exc:
            return _error(400, str(exc))
        except NotFoundError as exc:
            return _error(404, str(exc))

    # -- content ----------------------------------------------------------------
    def _upsert_items(self, app: str, request: ItemList) -> ApiResponse:
        self.engine.upsert_items(request.items, app=app)
        return _data({})

    def _delete_items(self, app: str, request: ItemIdsRequest) -> ApiResponse:
        self.engine.delete_items(request.item_ids, app=app)
        return _data({})

    def _upsert_item_database(self, app: str, request: ItemList) -> ApiResponse:
        self.engine.replace_item_database(request.items, app=app)
        return _data({})

    def _upsert_annotation(self, app: str, request: ItemDatabaseAnnotation) -> ApiResponse:
        self.engine.upsert_annotations(request.item_annotations, app=app)
        return _data({})

    def _upsert_catalog(self, app: str, request: Catalog) -> ApiResponse:
        self.engine.upsert_catalog(request, app=app)
        return _data({})

    def _query_catalog(self, app: str, request: CatalogIdRequest) -> ApiResponse:
        catalog = self.engine.catalog(request.catalog_id, app=app)
        return _data(catalog.model_dump(mode="json", exclude_none=True))

    def _query_catalog_ids(self, app: str, request: EmptyRequest) -> ApiResponse:
        return _data({"catalog_ids": self.engine.catalog_ids(app=app)})

    def _query_item_database(self, app: str, request: EmptyRequest) -> ApiResponse:
        items = self.engine.item_database(app=app)
        return _data({"items": [i.model_dump(mode="json", exclude_none=True) for i in items]})

    def _delete_catalog(self, app: str, request: CatalogIdRequest) -> ApiResponse:
        self.engine.delete_catalog(request.catalog_id, app=app)
        return _data({})

    # -- sessions and events ------------------------------------------------------
    def _create_session(self, app: str, request: SessionSpec) -> ApiResponse:
        return _data({"session_context": self.engine.create_session(request, app=app)})

    def _adaptive_engine(self, app: str, request: AdaptiveEngineRequest) -> ApiResponse:
        try:
            step = self.engine.adaptive_step(request.session_context, request.events or (), app=app, strict_kinds=True)
        except ContextError as exc:
            # the engine names the field of an event's recommendation context itself;
            # any other context error is about the session context
            message = str(exc)
            if not message.startswith("events["):
                raise ContextError(f"session_context: {message}") from None
            raise
        except NotFoundError as exc:
            if exc.kind != "session":
                raise
            return _error(404, f"session_context: {exc}")  # the session the context names
        return _data(step.model_dump(mode="json"))  # (nothing_due only when set: review with nothing due)

    def _user_status(self, app: str, request: UserStatusRequest) -> ApiResponse:
        statuses = self.engine.user_status(request.user_id, request.catalog_id, request.filter_list, app=app)
        return _data({"user_status_list": [s.model_dump(mode="json") for s in statuses]})

    def _query_due_items(self, app: str, request: DueItemsRequest) -> ApiResponse:
        """This service's addition: what review would serve (``Engine.due`` over the filter's items)."""
        cid = request.catalog_id
        with self.engine.atomic():  # (the content cannot change between the mask and the list)
            index = self.engine.catalog_index(cid, app=app)
            mask = self.engine.filter_mask(cid, request.filter, app=app)
            due = self.engine.due(request.user_id, cid, app=app)
            retention = self.engine.learner_options_for(cid, app=app).desired_retention
        items = [
            {
                "item_id": d.item_id,
                "topic_id": d.topic_id,
                "recall": d.recall,
                "due_at": format_timestamp(d.due_at),
                "overdue": d.overdue,
            }
            for d in due
            if mask[index.position(d.item_id, d.topic_id) or 0]  # (every one is placed)
        ]
        due_now = sum(1 for i in items if i["overdue"])
        return _data({"desired_retention": retention, "due_now": due_now, "items": items})

    def _upsert_plain_events(self, app: str, body: Any) -> ApiResponse | None:
        """``upsert-events`` without a model per event, for a body valid on its face; None when the models must
        read it (anything else, or anything the engine refuses: it wrote nothing, and the models say why)."""
        if not isinstance(body, (bytes, bytearray, memoryview, str)):
            return None
        read = _events_on_their_face(body)
        if read is None:
            return None
        try:
            self.engine.upsert_events(read[0], read[1], app=app, strict_kinds=True)
        except (LimitExceededError, ValidationError, ContextError, NotFoundError):
            return None
        return _data({})

    def _upsert_events(self, app: str, request: UpsertEventsRequest) -> ApiResponse:
        self.engine.upsert_events(request.user_id, request.events, app=app, strict_kinds=True)
        return _data({})
