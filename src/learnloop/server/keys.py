"""Credentials of the server: API keys and JWT issuers, read from a TOML file.

The file (see ``docs/deploy.md``)::

    [api_keys]                 # API key -> application; one key opens v1, v2 and the voice API
    "k-3f9c2d..." = "app-1"
    "k-77b1e0..." = "app-2"

    [api_key_expiry]           # optional: from this time on, v1 and the voice API answer 402 for the key
    "k-77b1e0..." = 2026-01-01T00:00:00Z

    [jwt_issuers]              # optional: voice API client tokens, issuer id -> RSA public key (PEM)
    "issuer-1" = { public_key_file = "issuer-1.pem" }    # relative to this file
    "issuer-2" = { public_key = "-----BEGIN PUBLIC KEY-----\\n..." }

    [rate_limits]              # optional: per key and per worker process; over it, 429 (v1, voice)
    "k-77b1e0..." = { requests_per_second = 20, burst = 40, scoring_seconds_per_minute = 30 }

Keys never come from the command line (they would show in the process list
and the shell history).

>>> keys = Keys.from_toml('[api_keys]\\n"k-1" = "app-1"\\n')
>>> keys.api_keys, keys.applications
({'k-1': 'app-1'}, ['app-1'])
>>> Keys.from_toml('[api_key]\\n"k-1" = "app-1"\\n')
Traceback (most recent call last):
...
learnloop.server.keys.KeysFileError: keys file: unknown table [api_key]; expected api_keys, api_key_expiry, jwt_issuers, rate_limits
>>> Keys.from_toml('[api_keys]\\n"k-1" = "app-1"\\n[rate_limits]\\n"k-1" = { requests_per_second = 5, burst = 10 }\\n').rate_limits
{'k-1': RateLimit(requests_per_second=5.0, burst=10, scoring_seconds_per_minute=None)}
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

from learnloop.server.throttle import RateLimit

__all__ = ["Keys", "KeysFileError", "RateLimit"]

_TABLES = ("api_keys", "api_key_expiry", "jwt_issuers", "rate_limits")
_RATE_FIELDS = ("requests_per_second", "burst", "scoring_seconds_per_minute")


class KeysFileError(ValueError):
    """A keys file that cannot be read or does not follow the documented format (every problem listed)."""


@dataclass(frozen=True)
class Keys:
    """Who may call the server.

    ``api_keys`` maps each secret key to its application (``None``: no key is
    accepted, and with ``jwt_issuers`` also ``None`` authentication is off);
    ``api_key_expiry`` maps a key to the aware time from which v1 and the voice
    API answer 402 (Payment Required, as their contracts list it; v2's has no 402);
    ``jwt_issuers`` maps an issuer id to the RSA public key (PEM) that checks
    its tokens on the voice API; ``rate_limits`` maps a key to its rate (a key
    without one has no rate limit).
    """

    api_keys: Mapping[str, str] | None = None
    api_key_expiry: Mapping[str, datetime] = field(default_factory=dict)
    jwt_issuers: Mapping[str, str] | None = None
    rate_limits: Mapping[str, RateLimit] = field(default_factory=dict)

    @property
    def authenticated(self) -> bool:
        """Whether requests must carry credentials."""
        return self.api_keys is not None or self.jwt_issuers is not None

    @property
    def applications(self) -> list[str]:
        """The applications of the API keys, sorted (``["default"]`` when authentication is off)."""
        if not self.authenticated:
            return ["default"]
        return sorted(set((self.api_keys or {}).values()))

    @classmethod
    def load(cls, path: str | Path) -> Keys:
        """Read a keys file; raises :class:`KeysFileError` naming the file and every problem."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise KeysFileError(f"{path}: cannot read the keys file: {exc}") from None
        return cls.from_toml(text, base=path.parent, source=str(path))

    @classmethod
    def from_toml(cls, text: str, *, base: Path | None = None, source: str = "keys file") -> Keys:
        """Parse the text of a keys file; public key files are looked up relative to ``base``."""
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise KeysFileError(f"{source}: not valid TOML: {exc}") from None
        problems: list[str] = []
        unknown = [name for name in doc if name not in _TABLES]
        problems += [f"unknown table [{name}]; expected {', '.join(_TABLES)}" for name in unknown]
        tables = {name: _table(doc, name, problems) for name in _TABLES}
        api_keys = _api_keys(tables["api_keys"], problems)
        expiry = _expiry(tables["api_key_expiry"], api_keys or {}, problems)
        issuers = _issuers(tables["jwt_issuers"], base or Path.cwd(), problems)
        rates = _rates(tables["rate_limits"], api_keys or {}, problems)
        if not problems and api_keys is None and issuers is None:
            problems.append("no [api_keys] and no [jwt_issuers]: the file lets nobody in")
        if problems:
            raise KeysFileError(f"{source}: " + "; ".join(problems))
        return cls(api_keys=api_keys, api_key_expiry=expiry, jwt_issuers=issuers, rate_limits=rates)


def _table(doc: Mapping[str, Any], name: str, problems: list[str]) -> dict[str, Any] | None:
    value = doc.get(name)
    if value is None:
        return None
    if not isinstance(value, dict):
        problems.append(f"[{name}] must be a table, got {type(value).__name__}")
        return None
    return value


def _api_keys(table: dict[str, Any] | None, problems: list[str]) -> dict[str, str] | None:
    if table is None:
        return None
    keys: dict[str, str] = {}
    for number, (key, app) in enumerate(table.items(), start=1):
        if not key.strip():
            problems.append(f"[api_keys]: key number {number} is empty")
        elif not isinstance(app, str) or not app.strip():
            # the key is a secret: say which entry by position, never by value
            problems.append(f"[api_keys]: the application of key number {number} must be a non-empty string")
        else:
            keys[key] = app
    return keys


def _expiry(table: dict[str, Any] | None, api_keys: Mapping[str, str], problems: list[str]) -> dict[str, datetime]:
    out: dict[str, datetime] = {}
    for number, (key, when) in enumerate((table or {}).items(), start=1):
        if key not in api_keys:
            problems.append(f"[api_key_expiry]: entry number {number} names a key that is not in [api_keys]")
        elif isinstance(when, datetime):
            out[key] = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
        elif isinstance(when, date):
            out[key] = datetime.combine(when, time(), tzinfo=UTC)
        else:
            problems.append(f"[api_key_expiry]: entry number {number} must be a TOML date or date-time")
    return out


def _positive(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < float("inf")


def _rates(table: dict[str, Any] | None, api_keys: Mapping[str, str], problems: list[str]) -> dict[str, RateLimit]:
    out: dict[str, RateLimit] = {}
    for number, (key, spec) in enumerate((table or {}).items(), start=1):
        where = f"[rate_limits]: entry number {number}"  # the key is a secret: named by position
        if key not in api_keys:
            problems.append(f"{where} names a key that is not in [api_keys]")
            continue
        if not isinstance(spec, dict):
            problems.append(f"{where} must be a table {{ requests_per_second = ..., burst = ... }}")
            continue
        unknown = sorted(set(spec) - set(_RATE_FIELDS))
        if unknown:
            problems.append(f"{where}: unknown field(s) {', '.join(unknown)}; expected {', '.join(_RATE_FIELDS)}")
            continue
        rate: Any = spec.get("requests_per_second")
        burst: Any = spec.get("burst")
        scoring: Any = spec.get("scoring_seconds_per_minute")
        if not _positive(rate):
            problems.append(f"{where}: requests_per_second must be a number above 0")
        elif not (isinstance(burst, int) and not isinstance(burst, bool) and burst >= 1):
            problems.append(f"{where}: burst must be an integer of at least 1")
        elif scoring is not None and not _positive(scoring):
            problems.append(f"{where}: scoring_seconds_per_minute must be a number above 0")
        else:
            out[key] = RateLimit(float(rate), burst, None if scoring is None else float(scoring))
    return out


def _issuers(table: dict[str, Any] | None, base: Path, problems: list[str]) -> dict[str, str] | None:
    if table is None:
        return None
    issuers: dict[str, str] = {}
    for issuer, spec in table.items():
        where = f"[jwt_issuers] {issuer!r}"
        if not issuer.strip():
            problems.append("[jwt_issuers]: an issuer id is empty")
            continue
        if isinstance(spec, str):
            spec = {"public_key": spec}
        if not isinstance(spec, dict) or len(spec) != 1 or not {"public_key", "public_key_file"} & set(spec):
            problems.append(f"{where}: give exactly one of public_key = '<PEM>' or public_key_file = '<path>'")
            continue
        if "public_key_file" in spec:
            file = base / str(spec["public_key_file"])
            try:
                pem = file.read_text(encoding="ascii")
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(f"{where}: cannot read {file}: {exc}")
                continue
        else:
            pem = spec["public_key"]
        if not isinstance(pem, str) or "-----BEGIN PUBLIC KEY-----" not in pem:
            problems.append(f"{where}: not a PEM public key (-----BEGIN PUBLIC KEY-----)")
            continue
        issuers[issuer] = pem
    return issuers
