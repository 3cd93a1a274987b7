"""Opaque, unforgeable context strings: a compact JSON payload signed with HMAC-SHA256.

A context names its application, so a context of one application is refused
by another; it cannot be altered without the engine's secret.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from json.encoder import encode_basestring_ascii as _quoted
from typing import Any

from learnloop.errors import ContextError

__all__ = ["ContextSigner"]

#: verified or signed tokens remembered (their payloads, flat dicts, copied in and out)
_REMEMBERED = 4096
#: payload value types that come back from JSON as they went in (a payload of such values is
#: remembered when signed); floats are not among them (NaN and infinities are not JSON)
_AS_DECODED = (str, int, bool, type(None))


#: the payload's JSON (one encoder for every call: ``json.dumps`` with options makes one per call)
_ENCODER = json.JSONEncoder(separators=(",", ":"), sort_keys=True)


def _flat_json(app: str, kind: str, items: list[tuple[str, Any]]) -> str | None:
    """What ``_ENCODER`` writes for ``{"a": app, "k": kind, "p": dict(items)}`` when ``items``
    are ``(str, value)`` pairs sorted by key with values of ``_AS_DECODED`` types; None otherwise."""
    parts = []
    for key, value in items:
        kind_of = value.__class__
        if kind_of is str:
            text = _quoted(value)
        elif kind_of is int:
            text = int.__repr__(value)
        elif value is None:
            text = "null"
        elif kind_of is bool:
            text = "true" if value else "false"
        else:
            return None
        parts.append(_quoted(key) + ":" + text)
    return '{"a":' + _quoted(app) + ',"k":' + _quoted(kind) + ',"p":{' + ",".join(parts) + "}}"


#: ``base64.urlsafe_b64encode``'s alphabet from the standard one
_URLSAFE = bytes.maketrans(b"+/", b"-_")


def _b64(raw: bytes) -> bytes:
    """``base64.urlsafe_b64encode(raw)`` without its padding."""
    return binascii.b2a_base64(raw, newline=False).translate(_URLSAFE).rstrip(b"=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class ContextSigner:
    """Sign and verify context payloads.

    >>> signer = ContextSigner(b"secret")
    >>> token = signer.sign("app-1", "s", {"session": "abc"})
    >>> signer.verify(token, app="app-1", kind="s")
    {'session': 'abc'}
    >>> signer.verify(token, app="app-2", kind="s")
    Traceback (most recent call last):
    ...
    learnloop.errors.ContextError: context belongs to another application
    """

    def __init__(self, secret: bytes) -> None:
        if not secret:
            raise ValueError("the context secret must not be empty")
        self._secret = secret
        self._keyed = hmac.new(secret, digestmod=hashlib.sha256)  # copied per message: the key is set up once
        # (token, app, kind) -> its payload, for tokens that verified (a session's context comes back each step)
        self._verified: dict[tuple[str, str, str], dict[str, Any]] = {}

    def _mac(self, body: bytes) -> bytes:
        mac = self._keyed.copy()
        mac.update(body)
        return _b64(mac.digest()[:18])

    def sign(self, app: str, kind: str, payload: dict[str, Any]) -> str:
        items = None
        if app.__class__ is str and kind.__class__ is str and all(k.__class__ is str for k in payload):
            items = sorted(payload.items())
            text = _flat_json(app, kind, items)
        if items is None or text is None:
            items, text = None, _ENCODER.encode({"a": app, "k": kind, "p": payload})
        encoded = _b64(text.encode())
        token = (encoded + b"." + self._mac(encoded)).decode("ascii")
        if items is not None:
            # what verify() would decode is the payload itself, its keys sorted: remember it
            # (a recommendation's context comes back with the next step)
            self._remember(token, app, kind, dict(items))
        return token

    def _remember(self, token: str, app: str, kind: str, payload: dict[str, Any]) -> None:
        """Remember ``payload``, a dict that nothing else holds."""
        if len(self._verified) >= _REMEMBERED:
            self._verified.clear()
        self._verified[(token, app, kind)] = payload

    def verify(self, token: str, *, app: str, kind: str) -> dict[str, Any]:
        """The payload of ``token``; :class:`ContextError` when malformed, forged, foreign or of another kind.

        Never raises anything else, whatever ``token`` is (any string, or not a string).

        >>> signer = ContextSigner(b"secret")
        >>> signer.verify("abc.\u00e9", app="app-1", kind="s")
        Traceback (most recent call last):
        ...
        learnloop.errors.ContextError: malformed context
        """
        if token.__class__ is str:
            known = self._verified.get((token, app, kind))
            if known is not None:
                return dict(known)
        payload = self._verify(token, app=app, kind=kind)
        self._remember(token, app, kind, dict(payload))
        return payload

    def _verify(self, token: str, *, app: str, kind: str) -> dict[str, Any]:
        if not isinstance(token, str) or token.count(".") != 1 or not token.isascii():
            raise ContextError("malformed context")
        encoded, mac = token.split(".")
        if not encoded or not mac:
            raise ContextError("malformed context")
        # bytes on both sides: compare_digest refuses str holding non-ASCII characters
        if not hmac.compare_digest(mac.encode("ascii"), self._mac(encoded.encode("ascii"))):
            raise ContextError("context signature does not verify (forged or altered)")
        try:
            body = json.loads(_unb64(encoded))
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise ContextError("malformed context") from None
        # a verified token was signed with the secret, so this only fails for tokens not
        # made by sign() (another version, or someone holding the secret)
        if (
            not isinstance(body, dict)
            or not isinstance(body.get("a"), str)
            or not isinstance(body.get("k"), str)
            or not isinstance(body.get("p"), dict)
        ):
            raise ContextError("malformed context")
        if body["a"] != app:
            raise ContextError("context belongs to another application")
        if body["k"] != kind:
            raise ContextError(f"not a {'session' if kind == 's' else 'recommendation'} context")
        return body["p"]  # type: ignore[no-any-return]
