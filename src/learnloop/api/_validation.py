"""Turning pydantic validation errors into messages that name the field."""

from __future__ import annotations

from typing import Any

import pydantic

__all__ = ["field_path", "describe_validation_error"]


def field_path(loc: tuple[int | str, ...]) -> str:
    """``('topics', 0, 'item_refs', 2, 'item_id')`` -> ``topics[0].item_refs[2].item_id``.

    >>> field_path(("topics", 0, "item_refs", 2, "item_id"))
    'topics[0].item_refs[2].item_id'
    """
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "body"


def _shown(value: Any) -> str:
    """A short rendering of an offending value (containers by their type name)."""
    shown = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
    return shown if len(shown) <= 60 else shown[:57] + "..."


def _describe(error: Any) -> str:
    where = field_path(tuple(p for p in error["loc"] if not (isinstance(p, str) and p.startswith("function-"))))
    kind = error["type"]
    if kind == "missing":
        return f"'{where}' is required"
    if kind == "extra_forbidden":
        return f"'{where}' is not a known field"
    if kind == "string_pattern_mismatch":
        return f"'{where}' must match ^[a-zA-Z0-9_\\-:]{{1,128}}$, got {_shown(error['input'])}"
    return f"'{where}': {error['msg'][0].lower()}{error['msg'][1:]}, got {_shown(error.get('input'))}"


def describe_validation_error(exc: pydantic.ValidationError) -> list[str]:
    """One readable line per problem, each naming its field."""
    return [_describe(e) for e in exc.errors(include_url=False)]
