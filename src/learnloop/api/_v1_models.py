"""The v1 request shapes (pydantic, closed, validated strictly) and the v1 limits."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import pydantic
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from learnloop._validation import StatedValueError, describe_validation_error, unparsed_json
from learnloop._validation import shown as _shown
from learnloop.api._v1_mapping import path_problem
from learnloop.events import TimeSpentMs, parse_timestamp

__all__ = [
    "AssetBody",
    "AssetDefinition",
    "AssetFilter",
    "BulkAssets",
    "Fail",
    "NextAssetsRequest",
    "StatusFilter",
    "Tag",
    "User",
    "UserEvent",
    "UserEventsRequest",
    "UserFilterStatusRequest",
    "ViewBody",
    "bounded_int",
    "describe",
    "dump",
    "metadata_problems",
    "parse",
    "single",
]


_CLOSED = ConfigDict(extra="forbid", frozen=True)


def _path(value: str) -> str:
    problem = path_problem(value)
    if problem is not None:
        raise ValueError(f"a path {problem}")
    return value


def _timestamp(value: str) -> str:
    try:
        parse_timestamp(value)
    except ValueError as exc:  # its message shows the value: not to be added again
        raise StatedValueError(str(exc)) from None
    return value


Text = Annotated[str, Field(min_length=1)]
Path = Annotated[str, AfterValidator(_path)]
Timestamp = Annotated[str, AfterValidator(_timestamp)]
Unit = Annotated[float, Field(ge=0.0, le=1.0)]
AssetType = Literal["exercise", "theory"]


class Tag(BaseModel):
    model_config = _CLOSED
    name: Text
    value: str


class AssetBody(BaseModel):
    """The body of ``PUT /v1/assets/<asset_id>`` (an ``id``, if given, must be the path's)."""

    model_config = _CLOSED
    id: Text | None = None
    type: AssetType
    tags: tuple[Tag, ...] | None = None
    description: str | None = None
    content_url: str | None = None
    metadata: dict[str, Any] | None = None


class AssetDefinition(AssetBody):
    id: Text


class BulkAssets(BaseModel):
    model_config = _CLOSED
    assets: tuple[AssetDefinition, ...]


class ViewItemAttributes(BaseModel):
    model_config = _CLOSED
    partner_difficulty: Unit | None = None


class ViewItem(BaseModel):
    model_config = _CLOSED
    asset_id: Text
    path: Path
    attributes: ViewItemAttributes | None = None


class ViewBody(BaseModel):
    """The body of ``PUT /v1/views/<view_id>``."""

    model_config = _CLOSED
    id: Text | None = None
    name: str
    path: Path | None = None
    description: str | None = None
    ordered: bool | None = None
    assets: tuple[ViewItem, ...]


class User(BaseModel):
    model_config = _CLOSED
    id: Text
    type: Literal["learner", "tester"]
    test_cell: str | None = None


class ResponseSubmitAttributes(BaseModel):
    model_config = _CLOSED
    view_id: Text
    asset_id: Text
    result: Literal["correct", "incorrect", "partially_correct", "skipped"]
    score: Unit | None = None
    time_spent_ms: TimeSpentMs | None = None


class TheoryViewedAttributes(BaseModel):
    model_config = _CLOSED
    view_id: Text
    asset_id: Text
    time_spent_ms: TimeSpentMs | None = None
    fraction_completed: Unit | None = None


class _Event(BaseModel):
    model_config = _CLOSED
    user: User
    tags: tuple[Tag, ...] | None = None
    timestamp: Timestamp
    is_offline_event: bool | None = None
    metadata: dict[str, Any] | None = None


class ResponseSubmit(_Event):
    type: Literal["response_submit"]
    attributes: ResponseSubmitAttributes


class TheoryViewed(_Event):
    type: Literal["theory_viewed"]
    attributes: TheoryViewedAttributes


UserEvent = pydantic.TypeAdapter(Annotated[ResponseSubmit | TheoryViewed, Field(discriminator="type")])
"""Validates one user event (events are validated one by one, see :mod:`learnloop.api.v1`)."""


class UserEventsRequest(BaseModel):
    model_config = _CLOSED
    user_events: tuple[dict[str, Any], ...]


NonEmptyTypes = Annotated[tuple[AssetType, ...], Field(min_length=1)]
NonEmptyPaths = Annotated[tuple[Path, ...], Field(min_length=1)]
NonEmptyTags = Annotated[tuple[Tag, ...], Field(min_length=1)]


class AssetFilter(BaseModel):
    """The filter of next-assets: ``asset_types`` and ``paths`` are required."""

    model_config = _CLOSED
    asset_types: NonEmptyTypes
    paths: NonEmptyPaths
    tags: NonEmptyTags | None = None


class StatusFilter(BaseModel):
    """A filter of user-filter-status: every condition optional (absent: no condition)."""

    model_config = _CLOSED
    asset_types: NonEmptyTypes | None = None
    paths: NonEmptyPaths | None = None
    tags: NonEmptyTags | None = None


class Mode(BaseModel):
    model_config = _CLOSED
    type: Literal["learn", "review"]
    attributes: dict[str, Any] | None = None


class NextAssetsRequest(BaseModel):
    model_config = _CLOSED
    user: User
    view_id: Text
    filter: AssetFilter
    mode: Mode
    limit: int
    user_events: tuple[dict[str, Any], ...] | None = None


class UserFilterStatusRequest(BaseModel):
    model_config = _CLOSED
    user_id: Text
    view_id: Text
    filters: tuple[StatusFilter, ...]


# -- messages ---------------------------------------------------------------------------------

_TAGS = frozenset({"response_submit", "theory_viewed"})


def describe(exc: pydantic.ValidationError, *, prefix: str = "") -> list[str]:
    """One message per problem, each naming its field (``prefix`` goes in front)."""
    return describe_validation_error(exc, prefix=prefix, skip=_TAGS, dialect="v1")


def metadata_problems(metadata: Mapping[str, Any] | None, *, where: str, variability_cap: int | None) -> list[str]:
    """The problems of a flat metadata object: String or finite Number values only.

    With ``variability_cap``, the reserved ``variability`` must be an integer
    from 1 to the cap.

    >>> metadata_problems({"a": "x", "b": 2.5, "c": [1], "variability": 0}, where="m", variability_cap=1000)
    ["'m.c' must be a String or a Number, got list", "'m.variability' must be an integer from 1 to 1000, got 0"]
    """
    problems = []
    for key, value in (metadata or {}).items():
        if key == "variability" and variability_cap is not None:
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= variability_cap:
                problems.append(
                    f"'{where}.variability' must be an integer from 1 to {variability_cap}, got {_shown(value)}"
                )
        elif isinstance(value, bool) or not isinstance(value, (str, int, float)):
            problems.append(f"'{where}.{key}' must be a String or a Number, got {type(value).__name__}")
        elif isinstance(value, float) and not math.isfinite(value):
            problems.append(f"'{where}.{key}' must be a finite Number, got {value!r}")
    return problems


# -- request helpers ---------------------------------------------------------------------------


class Fail(Exception):
    """An error answer raised from inside a handler: its HTTP status and its problems."""

    def __init__(self, status: int, problems: str | list[str]) -> None:
        self.status = status
        self.problems = [problems] if isinstance(problems, str) else problems
        super().__init__("; ".join(self.problems))


def parse(model: Any, raw: bytes) -> Any:
    """Validate a JSON body strictly against a request model (a 400 :class:`Fail` if it breaks it)."""
    try:
        return model.model_validate_json(raw, strict=True)
    except pydantic.ValidationError as exc:
        problem = unparsed_json(exc)
        if problem is not None:
            raise Fail(400, problem) from None
        raise Fail(400, ["invalid request: " + p for p in describe(exc)]) from None


def single(query: Mapping[str, list[str]], name: str, *, required: bool) -> str | None:
    """A query parameter given at most once."""
    values = query.get(name)
    if values is None:
        if required:
            raise Fail(400, f"query parameter '{name}' is required")
        return None
    if len(values) != 1:
        raise Fail(400, f"query parameter '{name}' must be given once, got {len(values)} values")
    return values[0]


def bounded_int(text: str, low: int, high: int) -> int | None:
    """The decimal integer ``text`` (ASCII digits only) when it is from ``low`` to ``high``, else None.

    Never converts more digits than ``high`` has (Python refuses to convert
    integer strings of more than 4300 digits).

    >>> bounded_int("0042", 1, 1000), bounded_int("1" * 5000, 1, 1000), bounded_int("-1", 1, 1000)
    (42, None, None)
    """
    digits = text.lstrip("0") or "0"
    if not text.isascii() or not text.isdigit() or len(digits) > len(str(high)):
        return None
    value = int(digits)
    return value if low <= value <= high else None


def dump(model: BaseModel) -> dict[str, Any]:
    """A model as a JSON document, absent optional fields left out."""
    return model.model_dump(mode="json", exclude_none=True)
