"""OpenAPI 3.1 documents of the three HTTP contracts, kept as package data.

``document("v1")``, ``document("v2")`` and ``document("voice")`` describe
learning API v1, v2 and the voice API as this package serves them: every
endpoint, parameter, request body, response and error body, the limits, and the
security schemes. Where a contract says "not shown", the document describes
what the façade does and says so. The server answers them at
``/v1/openapi.json``, ``/v2/openapi.json`` and ``/api/v1/openapi.json``.

>>> doc = document("v1")
>>> doc["openapi"], sorted(doc["components"]["securitySchemes"])
('3.1.0', ['ApiKeyAuth'])
>>> document("v1") is document("v1")
False
"""

from __future__ import annotations

import copy
import json
from functools import cache
from importlib import resources
from typing import Any, Final

__all__ = ["NAMES", "PREFIXES", "document"]

#: The documents, by name.
NAMES: Final = ("v1", "v2", "voice")
#: Where each contract is mounted in the server (its paths start with it).
PREFIXES: Final = {"v1": "/v1", "v2": "/v2", "voice": "/api/v1"}


@cache
def _load(name: str) -> dict[str, Any]:
    text = resources.files(__name__).joinpath(f"{name}.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def document(name: str) -> dict[str, Any]:
    """The OpenAPI document ``name`` (``"v1"``, ``"v2"`` or ``"voice"``), a fresh copy each call.

    >>> document("v3")
    Traceback (most recent call last):
    ...
    ValueError: no OpenAPI document 'v3'; expected one of v1, v2, voice
    """
    if name not in NAMES:
        raise ValueError(f"no OpenAPI document {name!r}; expected one of {', '.join(NAMES)}")
    return copy.deepcopy(_load(name))
