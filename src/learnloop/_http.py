"""What the HTTP façades share: the response object, request decoding and credentials.

Both :mod:`learnloop.api` and :mod:`learnloop.voice` import this module; it
knows nothing of the learning engine or of the acoustic model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ApiResponse",
    "BodyError",
    "decode_json_body",
    "header",
    "query_list",
    "resolve_api_key",
]


@dataclass(frozen=True, slots=True)
class ApiResponse:
    """One HTTP answer: an integer status and the decoded JSON body (``None`` when empty).

    >>> r = ApiResponse(200, {"data": {}})
    >>> r.ok, r.status
    (True, 200)
    >>> r.json()
    '{"data": {}}'
    """

    status: int
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def json(self) -> str:
        """The body serialised as the HTTP layer would send it ('' for an empty body)."""
        return "" if self.body is None else json.dumps(self.body, separators=(", ", ": "))


class BodyError(ValueError):
    """A request body that is not a JSON object (or not valid UTF-8 / JSON)."""


def header(headers: Mapping[str, str] | None, name: str) -> str | None:
    """Case-insensitive header lookup.

    >>> header({"x-api-key": "k"}, "X-API-KEY")
    'k'
    """
    if not headers:
        return None
    wanted = name.lower()
    for key, value in headers.items():
        if key.lower() == wanted:
            return value
    return None


def decode_json_body(
    body: bytes | str | Mapping[str, Any] | None,
) -> tuple[dict[str, Any] | None, bytes]:
    """Decode a request body; returns ``(object or None, its JSON bytes)``.

    A dict is accepted as already decoded; its bytes are its compact JSON
    encoding (so size limits apply to it as to raw bytes). Raises
    :class:`BodyError` for undecodable bytes, malformed JSON or a JSON value
    that is not an object.

    >>> decode_json_body(b'{"a": 1}')
    ({'a': 1}, b'{"a": 1}')
    >>> decode_json_body(None)
    (None, b'')
    """
    if body is None:
        return None, b""
    if isinstance(body, Mapping):
        try:
            raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise BodyError(f"body is not JSON-serialisable: {exc}") from None
        except RecursionError:
            raise BodyError("body is not JSON-serialisable: nested too deeply") from None
        return dict(body), raw
    if isinstance(body, str):
        raw = body.encode("utf-8", errors="surrogatepass")
    elif isinstance(body, (bytes, bytearray, memoryview)):
        raw = bytes(body)
    else:
        raise BodyError(f"body must be JSON bytes, str or a dict, not {type(body).__name__}")
    if not raw.strip():
        return None, raw
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BodyError("body is not valid UTF-8") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BodyError(f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise BodyError("malformed JSON: nested too deeply") from None
    except ValueError as exc:  # e.g. an integer literal longer than Python converts
        raise BodyError(f"malformed JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BodyError(f"body must be a JSON object, not {type(value).__name__}")
    return value, raw


def query_list(query: Mapping[str, str | list[str]] | None, name: str) -> list[str] | None:
    """An array query parameter: repeated keys and comma-separated values both work.

    >>> query_list({"ids": ["a,b", "c"]}, "ids")
    ['a', 'b', 'c']
    >>> query_list({}, "ids") is None
    True
    """
    if not query or name not in query:
        return None
    raw = query[name]
    values = [raw] if isinstance(raw, str) else list(raw)
    out: list[str] = []
    for value in values:
        out.extend(part.strip() for part in str(value).split(",") if part.strip())
    return out


def resolve_api_key(api_keys: Mapping[str, str] | None, headers: Mapping[str, str] | None) -> str | None:
    """The application owning the request's ``X-API-KEY``; ``None`` when it is missing or wrong.

    With ``api_keys=None`` authentication is disabled and every request belongs
    to the application ``"default"``.

    >>> resolve_api_key({"k1": "app-1"}, {"X-API-KEY": "k1"})
    'app-1'
    >>> resolve_api_key({"k1": "app-1"}, {"X-API-KEY": "nope"}) is None
    True
    >>> resolve_api_key(None, {})
    'default'
    """
    if api_keys is None:
        return "default"
    key = header(headers, "X-API-KEY")
    if key is None:
        return None
    return api_keys.get(key)
