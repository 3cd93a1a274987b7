"""The documented per-application limits, configurable per engine."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Limits"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Size limits; the defaults are those of the v2 contract.

    >>> Limits().max_topics_per_catalog
    2500
    """

    max_items: int = 100_000
    max_catalogs: int = 3_000
    max_topics_per_catalog: int = 2_500
    max_topic_item_refs: int = 20_000
    max_session_filter_items: int = 10_000
    max_constraints: int = 5
    max_events_per_call: int = 10_000
