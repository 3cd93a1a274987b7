"""Turning pydantic validation errors into messages that name the field (shared by the engine and the façades)."""

from __future__ import annotations

import re
import sys
from functools import lru_cache
from typing import Any, TypeVar

import pydantic

from learnloop._http import BodyError, decode_json_body
from learnloop._types import IDENTIFIER_PATTERN
from learnloop.errors import ValidationError

__all__ = [
    "StatedValueError",
    "describe_validation_error",
    "field_path",
    "parse",
    "shown",
    "unparsed_json",
    "validate_json_body",
]

_M = TypeVar("_M", bound=pydantic.BaseModel)


class StatedValueError(ValueError):
    """A validator's ValueError whose message already shows the offending value.

    :func:`describe_validation_error` adds ``, got <value>`` to the message of a
    validator of ours; for this one it does not, so that the value is not stated twice
    (``not an ISO 8601 timestamp: 'yesterday'``, not ``...: 'yesterday', got 'yesterday'``).
    """


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
        if isinstance(error.get("ctx", {}).get("error"), StatedValueError):
            return f"'{where}'{separator}{message}"
        return f"'{where}'{separator}{message}, got {shown(error.get('input'))}"
    if kind == "union_tag_invalid":  # pydantic's message names the tag given: the event's dict adds nothing
        return f"'{where}': {error['msg'][0].lower()}{error['msg'][1:]}"
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
    errors = exc.errors(include_url=False)
    # a list whose every element failed is also "too short after validation": its elements say why
    failed_inside = {tuple(e["loc"][:n]) for e in errors for n in range(len(e["loc"]))}
    kept = [e for e in errors if not (e["type"] == "too_short" and tuple(e["loc"]) in failed_inside)]
    return [_describe(e, prefix, skip, dialect) for e in kept]


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


def validate_json_body(model: type[_M], body: Any) -> _M:
    """A request body (JSON bytes or text, a dict, or None) as a ``model``, in one pass.

    Bytes and text go straight to pydantic's JSON parser (strict mode); only
    when that fails is the body decoded again, to tell a body that is not a
    JSON object (:class:`~learnloop._http.BodyError`, with the message of
    :func:`~learnloop._http.decode_json_body`) from one that breaks the model
    (``pydantic.ValidationError``). An empty body is the empty object. Integer
    literals longer than Python converts are refused as malformed, as
    :func:`json.loads` does.

    >>> from learnloop.content import Filter
    >>> validate_json_body(Filter, b'{"include_tags": ["a"]}').include_tags
    ('a',)
    >>> validate_json_body(Filter, b"[1]")
    Traceback (most recent call last):
    ...
    learnloop._http.BodyError: body must be a JSON object, not list
    """
    if isinstance(body, (bytes, bytearray, memoryview, str)):
        raw = body.encode("utf-8", errors="surrogatepass") if isinstance(body, str) else bytes(body)
        if raw.strip():
            try:
                request = model.model_validate_json(raw, strict=True)
            except pydantic.ValidationError as exc:
                decode_json_body(raw)  # raises BodyError when the body is no JSON object at all
                problem = unparsed_json(exc)
                if problem is not None:
                    raise BodyError(problem) from None
                raise
            overlong = _overlong_integer()
            if overlong is not None and overlong.search(raw):
                decode_json_body(raw)  # raises BodyError when the digits are an integer literal
            return request
    decoded, raw = decode_json_body(body)
    return model.model_validate_json(raw if decoded is not None else b"{}", strict=True)


def unparsed_json(exc: pydantic.ValidationError) -> str | None:
    """Why pydantic's JSON parser refused a body that Python's accepts, or None when it did not.

    Its parser is stricter: it refuses a lone surrogate escape (``"\\ud800"``),
    which is not Unicode text, and nesting deeper than a few hundred levels.
    """
    for error in exc.errors(include_url=False):
        if error["type"] == "json_invalid":
            message = str(error.get("ctx", {}).get("error", error["msg"]))
            if "surrogate" in message or "hex escape" in message:  # Python's parser took every other escape
                return "the body holds a lone surrogate escape (e.g. \\ud800), which is not Unicode text"
            if "recursion" in message:
                return "malformed JSON: nested too deeply"
            return f"malformed JSON: {message}"
    return None


def _overlong_integer() -> re.Pattern[bytes] | None:
    limit = sys.get_int_max_str_digits()
    return None if limit <= 0 else _digit_run(limit + 1)


@lru_cache(maxsize=4)
def _digit_run(length: int) -> re.Pattern[bytes]:
    return re.compile(rb"[0-9]{%d}" % length)
