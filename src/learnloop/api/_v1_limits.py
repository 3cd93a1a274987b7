"""The limits of the v1 contract."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["V1Limits"]


@dataclass(frozen=True, slots=True, kw_only=True)
class V1Limits:
    """The limits of the v1 contract (change them for tests or private deployments).

    >>> V1Limits().request_bytes
    16384
    """

    request_bytes: int = 16 * 1024
    bulk_assets: int = 1000
    multi_get_assets: int = 100
    bulk_delete_assets: int = 1000
    view_assets: int = 1000
    events_per_call: int = 1000
    views_per_page: int = 1000
    description_chars: int = 10_000
    variability: int = 1000
    next_assets: int = 1000
