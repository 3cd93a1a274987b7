"""Turning pydantic validation errors into messages that name the field (shared by the engine and the façades)."""

from __future__ import annotations

from typing import Any, TypeVar

import pydantic

from learnloop._types import IDENTIFIER_PATTERN
from learnloop.errors import ValidationError

__all__ = ["describe_validation_error", "field_path", "parse", "shown"]

_M = TypeVar("_M", bound=pydantic.BaseModel)


def field_path(loc: tuple[int | str, ...], *, prefix: str = "", skip: frozenset[str] = frozenset()) -> str:
    """``('topics', 0, 'item_refs', 2, 'item_id')`` -> ``topics[0].item_refs[2].item_id``.

    Parts in ``skip`` (the tags of tagged unions) and pydantic's ``function-...``
    parts are left out; ``prefix`` goes in front.

    >>> field_path(("topics", 0, "item_refs", 2, "item_id"))
    'topics[0].item_refs[2].item_id'
    >>> field_path((0, "attempt", "score"), prefix="events", skip=frozenset({"attempt"}))
    'events[0].score'
    """
    out = prefix
    for part in loc:
        if isinstance(part, str) and (part in skip or part.startswith("function-")):
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "body"


def shown(value: Any) -> str:
    """A short rendering of an offending value (containers by their type name)."""
    if isinstance(value, (dict, list)):
        return type(value).__name__
    try:
        shown = repr(value)
    except ValueError:  # an integer longer than Python converts to text
        return "an integer too long to show"
    return shown if len(shown) <= 60 else shown[:57] + "..."


def _describe(error: Any, prefix: str, skip: frozenset[str], dialect: str) -> str:
    where = field_path(tuple(error["loc"]), prefix=prefix, skip=skip)
    kind = error["type"]
    if kind == "missing":
        return f"'{where}' is required"
    if kind == "extra_forbidden":
        return f"'{where}' is not a known field"
    if dialect == "v2" and kind == "too_short" and error.get("ctx", {}).get("min_length") == 1:
        return f"'{where}' must not be an empty list"
    if kind == "value_error":  # raised by a validator of ours: its message is the explanation
        message = str(error["msg"]).removeprefix("Value error, ")
        separator = ": " if dialect == "v2" else " "
        return f"'{where}'{separator}{message}, got {shown(error.get('input'))}"
    if dialect == "v2" and kind == "string_pattern_mismatch":
        return f"'{where}' must match {IDENTIFIER_PATTERN}, got {shown(error['input'])}"
    return f"'{where}': {error['msg'][0].lower()}{error['msg'][1:]}, got {shown(error.get('input'))}"


def describe_validation_error(
    exc: pydantic.ValidationError, *, prefix: str = "", skip: frozenset[str] = frozenset(), dialect: str = "v2"
) -> list[str]:
    """One readable line per problem, each naming its field (the one translator of pydantic's
    errors, for the engine and every façade; see :func:`field_path` for ``prefix`` and ``skip``;
    ``dialect`` "v1" keeps the v1 façade's wording: pydantic's own messages, and no colon before
    the message of a validator of ours)."""
    return [_describe(e, prefix, skip, dialect) for e in exc.errors(include_url=False)]


def parse(model: type[_M], value: Any, *, where: str = "") -> _M:
    """``value`` as a ``model`` instance (returned as is when it already is one).

    Raises :class:`~learnloop.errors.ValidationError` listing every problem, each
    naming its field (prefixed with ``where``), instead of pydantic's own error.

    >>> from learnloop.content import Filter
    >>> parse(Filter, {"include_tags": []}, where="filter")
    Traceback (most recent call last):
    ...
    learnloop.errors.ValidationError: 'filter.include_tags' must not be an empty list
    """
    if isinstance(value, model):
        return value
    try:
        return model.model_validate(value)
    except pydantic.ValidationError as exc:
        problems = describe_validation_error(exc)
        if where:
            problems = [p.replace("'", f"'{where}.", 1) if p.startswith("'") else f"{where}: {p}" for p in problems]
        raise ValidationError(problems) from None
