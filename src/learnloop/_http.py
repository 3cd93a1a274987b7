"""What the HTTP façades share: the response object, request decoding and credentials.

Both :mod:`learnloop.api` and :mod:`learnloop.voice` import this module; it
knows nothing of the learning engine or of the acoustic model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "ApiResponse",
    "BodyError",
    "check_api_keys",
    "content_type_problem",
    "decode_json_body",
    "error_response",
    "header",
    "header_problems",
    "loads_json_object",
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


def error_response(
    status: int,
    problems: Sequence[str],
    *,
    shape: Literal["error", "errors"],
    link: str | None = None,
    max_errors: int | None = None,
    headers: Mapping[str, str] | None = None,
) -> ApiResponse:
    """The error body of a contract: the one envelope helper of the three façades.

    ``shape="error"`` (v2): ``{"error": {"status", "message"}}``, the problems joined
    by "; ". ``shape="errors"`` (v1, voice): ``{"errors": [{"status", "detail"[, "link"]}]}``,
    one entry per problem, at most ``max_errors`` when given (the last one says how many more).

    >>> error_response(400, ["a", "b"], shape="error").body
    {'error': {'status': 400, 'message': 'a; b'}}
    >>> error_response(404, ["gone"], shape="errors", link="https://x/404").body
    {'errors': [{'status': 404, 'detail': 'gone', 'link': 'https://x/404'}]}
    """
    if shape == "error":
        return ApiResponse(status, {"error": {"status": status, "message": "; ".join(problems)}}, dict(headers or {}))
    listed = list(problems)
    if max_errors is not None and len(listed) > max_errors:
        listed = [*listed[: max_errors - 1], f"... and {len(listed) - max_errors + 1} more problems"]
    entries = [{"status": status, "detail": p, **({"link": link} if link is not None else {})} for p in listed]
    return ApiResponse(status, {"errors": entries}, dict(headers or {}))


def header(headers: Mapping[str, str] | None, name: str) -> str | None:
    """Case-insensitive header lookup (a header whose name or value is not a string is ignored).

    >>> header({"x-api-key": "k"}, "X-API-KEY")
    'k'
    >>> header({"X-API-KEY": ["k"]}, "X-API-KEY") is None
    True
    """
    if not headers or not isinstance(headers, Mapping):
        return None
    wanted = name.lower()
    for key, value in headers.items():
        if isinstance(key, str) and key.lower() == wanted:
            return value if isinstance(value, str) else None
    return None


def header_problems(headers: object) -> list[str]:
    """Why ``headers`` is not a mapping of strings to strings (one line per problem; empty when it is).

    >>> header_problems({"X-API-KEY": "k"})
    []
    >>> header_problems({"X-API-KEY": ["k"], 7: "x"})
    ["header 'X-API-KEY' must be a string, got list", 'header names must be strings, got int']
    """
    if headers is None:
        return []
    if not isinstance(headers, Mapping):
        return [f"headers must be a mapping of names to strings, got {type(headers).__name__}"]
    problems = []
    for key, value in headers.items():
        if not isinstance(key, str):
            problems.append(f"header names must be strings, got {type(key).__name__}")
        elif not isinstance(value, str):
            problems.append(f"header {key[:100]!r} must be a string, got {type(value).__name__}")
    return problems


def content_type_problem(headers: Mapping[str, str] | None, body: object) -> str | None:
    """Why a request's ``Content-Type`` is not JSON (``None`` when it is, when absent, or without a body:
    ``None`` or empty).

    Parameters such as ``charset`` are allowed; the media type is compared case-insensitively.

    >>> content_type_problem({"Content-Type": "application/json; charset=utf-8"}, b"{}") is None
    True
    >>> content_type_problem({"Content-Type": "text/plain"}, b"{}")
    "Content-Type must be application/json, got 'text/plain'"
    """
    content_type = header(headers, "Content-Type")
    empty = isinstance(body, (bytes, bytearray, memoryview, str)) and not len(body)
    if body is None or empty or content_type is None:
        return None
    if content_type.split(";")[0].strip().lower() == "application/json":
        return None
    return f"Content-Type must be application/json, got {content_type[:100]!r}"


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


_orjson: Any = None


def _fast_loads() -> Any:
    """orjson's ``loads`` when it is installed (the ``server`` extra), else None; imported on first use."""
    global _orjson
    if _orjson is None:
        try:
            import orjson

            _orjson = orjson.loads
        except ImportError:
            _orjson = False
    return _orjson or None


def loads_json_object(body: bytes | bytearray | memoryview | str) -> dict[str, Any] | None:
    """A JSON object read from ``body``, when it is one that reads the same everywhere; else None.

    With orjson installed it reads the body (several times faster than
    :mod:`json` on large bodies); what orjson refuses (a lone surrogate, an
    integer beyond 64 bits, ``NaN``...) is None, as is anything but an object.
    Without orjson, :func:`json.loads` reads bodies without escapes (``\\u``).
    None says nothing about the body: the caller reads it the careful way.

    >>> loads_json_object(b'{"a": [1, 2.5, "x"]}')
    {'a': [1, 2.5, 'x']}
    >>> loads_json_object(b'[1]') is None, loads_json_object(b'{"a": NaN}') is None
    (True, True)
    """
    loads = _fast_loads()
    try:
        if loads is not None:
            value = loads(body)
        else:
            raw = body.encode("utf-8", errors="surrogatepass") if isinstance(body, str) else bytes(body)
            if b"\\u" in raw or b"NaN" in raw or b"Infinity" in raw:
                return None
            value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return value if type(value) is dict else None


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


def check_api_keys(api_keys: Mapping[str, str] | None) -> dict[str, str] | None:
    """A checked copy of a façade's ``api_keys`` (``None`` stays ``None``: authentication off).

    Raises ValueError at construction for a key that is empty (or blank) or not a
    string, and for an application that is not a non-empty string: an empty key
    would let in every request that sends an empty ``X-API-KEY`` header
    (TypeError when ``api_keys`` is not a mapping).

    >>> check_api_keys({"k1": "app-1"})
    {'k1': 'app-1'}
    >>> check_api_keys({"": "app-1"})
    Traceback (most recent call last):
    ...
    ValueError: api_keys: an API key must be a non-empty string, got ''
    """
    if api_keys is None:
        return None
    if not isinstance(api_keys, Mapping):
        raise TypeError(f"api_keys must be a mapping of API keys to applications, got {type(api_keys).__name__}")
    checked = dict(api_keys)
    for key, app in checked.items():
        if not isinstance(key, str) or not key.strip():
            # an empty or non-string key is no secret: showing it leaks nothing
            raise ValueError(f"api_keys: an API key must be a non-empty string, got {key!r:.40}")
        if not isinstance(app, str) or not app:
            raise ValueError(f"api_keys: an application must be a non-empty string, got {app!r:.60}")
    return checked


def resolve_api_key(api_keys: Mapping[str, str] | None, headers: Mapping[str, str] | None) -> str | None:
    """The application owning the request's ``X-API-KEY``; ``None`` when it is missing, empty or wrong.

    With ``api_keys=None`` authentication is disabled and every request belongs
    to the application ``"default"``.

    >>> resolve_api_key({"k1": "app-1"}, {"X-API-KEY": "k1"})
    'app-1'
    >>> resolve_api_key({"k1": "app-1"}, {"X-API-KEY": "nope"}) is None
    True
    >>> resolve_api_key({"": "app-1"}, {"X-API-KEY": ""}) is None
    True
    >>> resolve_api_key(None, {})
    'default'
    """
    if api_keys is None:
        return "default"
    key = header(headers, "X-API-KEY")
    if not key:
        return None
    return api_keys.get(key)
