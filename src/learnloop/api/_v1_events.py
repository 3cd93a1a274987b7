"""v1 user events: validation one event at a time, offline duplicates, translation to core events.

A ``response_submit`` is an ``attempt`` (``correct`` scores 1, ``incorrect``
0, ``partially_correct`` its ``score`` or 0.5) or, when ``skipped``, a
``skip``; a ``theory_viewed`` is a ``view_theory``. An event that fails
validation is an error when it is online and a warning (not consumed) when
``is_offline_event`` is true; an offline event whose key (user, view, asset,
timestamp) is already stored, or was consumed earlier in the same call, is a
duplicate (not consumed).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pydantic

from learnloop.api._v1_content import USERS, VIEWS
from learnloop.api._v1_mapping import internal_id
from learnloop.api._v1_models import (
    ResponseSubmit,
    TheoryViewed,
    TheoryViewedAttributes,
    UserEvent,
    describe,
    metadata_problems,
)
from learnloop.content import CatalogIndex
from learnloop.engine import Engine
from learnloop.errors import NotFoundError, ValidationError
from learnloop.events import format_timestamp, parse_timestamp

__all__ = ["EventBatch", "prepare_events", "record_users", "write_events"]

EventKey = tuple[str, str, str, str]


@dataclass
class _Accepted:
    key: EventKey
    offline: bool
    asset_ref: dict[str, str]
    user: dict[str, str]
    core: dict[str, Any]


@dataclass
class EventBatch:
    """Events that passed validation, and the warnings of the offline ones that did not."""

    accepted: list[_Accepted] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    duplicates: list[dict[str, str]] = field(default_factory=list)


def user_doc(user: Any) -> dict[str, str]:
    """The stored form of a v1 user (its type decides calibration; see ``V1Api.calibrate``)."""
    return {k: v for k, v in {"id": user.id, "type": user.type, "test_cell": user.test_cell}.items() if v is not None}


class _Views:
    """The views an event batch refers to, loaded once each."""

    def __init__(self, engine: Engine, app: str) -> None:
        self.engine = engine
        self.app = app
        self._found: dict[str, tuple[Mapping[str, Any], CatalogIndex] | None] = {}

    def get(self, view_id: str) -> tuple[Mapping[str, Any], CatalogIndex] | None:
        if view_id not in self._found:
            cid = internal_id(view_id)
            doc = self.engine.documents(VIEWS, [cid], app=self.app).get(cid)
            found = None
            if doc is not None and doc.get("id") == view_id:
                try:
                    found = (doc, self.engine.catalog_index(cid, app=self.app))
                except NotFoundError:
                    found = None
            self._found[view_id] = found
        return self._found[view_id]


def _core_event(
    event: ResponseSubmit | TheoryViewed, *, item_id: str, catalog_id: str, moment: datetime
) -> dict[str, Any]:
    attrs = event.attributes
    out: dict[str, Any] = {
        "item_id": item_id,
        "catalog_id": catalog_id,
        # the instant parsed here, not the text: the engine must not parse it again its own way
        "timestamp": moment,
    }
    if isinstance(attrs, TheoryViewedAttributes):
        out.update(
            type="view_theory",
            time_spent_ms=attrs.time_spent_ms,
            fraction_completed=attrs.fraction_completed,
        )
    elif attrs.result == "skipped":
        out.update(type="skip")
    else:
        score = {"correct": 1.0, "incorrect": 0.0}.get(attrs.result)
        if score is None:
            score = attrs.score if attrs.score is not None else 0.5
        out.update(type="attempt", score=score, time_spent_ms=attrs.time_spent_ms)
    return {k: v for k, v in out.items() if v is not None}


def _check(raw: Any, where: str, views: _Views) -> tuple[list[str], _Accepted | None]:
    try:
        event = UserEvent.validate_json(json.dumps(raw, allow_nan=True), strict=True)
    except pydantic.ValidationError as exc:
        return describe(exc, prefix=where), None
    problems = metadata_problems(event.metadata, where=f"{where}.metadata", variability_cap=None)
    attrs = event.attributes
    found = views.get(attrs.view_id)
    if found is None:
        return [*problems, f"'{where}.attributes.view_id': view '{attrs.view_id}' not found"], None
    index = found[1]
    item_id = internal_id(attrs.asset_id)
    position = index.position(item_id)
    if position is None:
        return [
            *problems,
            f"'{where}.attributes.asset_id': asset '{attrs.asset_id}' is not in view '{attrs.view_id}'",
        ], None
    exercise = bool(index.scorable[position])
    if isinstance(event, ResponseSubmit) and not exercise:
        problems.append(f"'{where}': asset '{attrs.asset_id}' is a theory asset; response_submit needs an exercise")
    if isinstance(event, TheoryViewed) and exercise:
        problems.append(f"'{where}': asset '{attrs.asset_id}' is an exercise; theory_viewed needs a theory asset")
    if problems:
        return problems, None
    user_id = internal_id(event.user.id)
    catalog_id = internal_id(attrs.view_id)
    moment = parse_timestamp(event.timestamp)  # valid: the model has checked it
    key = (user_id, catalog_id, item_id, format_timestamp(moment))
    return [], _Accepted(
        key=key,
        offline=bool(event.is_offline_event),
        asset_ref={"asset_id": attrs.asset_id, "asset_type": "exercise" if exercise else "theory"},
        user=user_doc(event.user),
        core=_core_event(event, item_id=item_id, catalog_id=catalog_id, moment=moment),
    )


def prepare_events(engine: Engine, raw_events: Sequence[Any], *, app: str, limit: int) -> EventBatch:
    """Validate every event; raises :class:`ValidationError` listing every online failure."""
    if len(raw_events) > limit:
        raise ValidationError(f"'user_events' holds {len(raw_events)} events; at most {limit} per call")
    batch = EventBatch()
    errors: list[str] = []
    views = _Views(engine, app)
    for i, raw in enumerate(raw_events):
        problems, accepted = _check(raw, f"user_events[{i}]", views)
        offline = isinstance(raw, Mapping) and raw.get("is_offline_event") is True
        if problems:
            (batch.warnings if offline else errors).extend(problems)
        elif accepted is not None:
            batch.accepted.append(accepted)
    if errors:
        raise ValidationError(errors)
    return batch


def record_users(engine: Engine, users: Mapping[str, Mapping[str, str]], *, app: str) -> None:
    """Store the users whose document changed (call inside ``engine.atomic()``)."""
    stored = engine.documents(USERS, list(users), app=app)
    changed = [(u, dict(doc)) for u, doc in users.items() if stored.get(u) != doc]
    if changed:
        engine.put_documents(USERS, changed, app=app)


def write_events(engine: Engine, batch: EventBatch, *, app: str) -> None:
    """Consume the batch (call inside ``engine.atomic()``): offline duplicates are set aside."""
    offline_keys = [a.key for a in batch.accepted if a.offline]
    stored = engine.known_events(offline_keys, app=app) if offline_keys else set()
    seen: set[EventKey] = set()
    by_user: dict[str, list[dict[str, Any]]] = {}
    users: dict[str, Mapping[str, str]] = {}
    for accepted in batch.accepted:
        if accepted.offline and (accepted.key in stored or accepted.key in seen):
            batch.duplicates.append(accepted.asset_ref)
            continue
        seen.add(accepted.key)
        by_user.setdefault(accepted.key[0], []).append(accepted.core)
        users[accepted.key[0]] = accepted.user
    record_users(engine, users, app=app)
    for user_id, events in by_user.items():
        engine.upsert_events(user_id, events, app=app)
