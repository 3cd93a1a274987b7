"""Interaction events: the contract shapes and their normalised form.

Three kinds exist: ``attempt`` (with a score in 0..1 when the item is
scorable), ``skip`` and ``view_theory`` (with the fraction of the theory
reached). Timestamps are ISO 8601; a timestamp without a zone is taken as UTC.
An event's identity is ``(user_id, catalog_id, item_id, timestamp)``: the same
key posted again replaces the earlier version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, NonNegativeInt

from learnloop._types import Identifier

__all__ = [
    "AttemptEvent",
    "ContextAttemptEvent",
    "ContextEvent",
    "ContextSkipEvent",
    "ContextViewTheoryEvent",
    "Interaction",
    "PlainEvent",
    "SkipEvent",
    "ViewTheoryEvent",
    "format_timestamp",
    "parse_timestamp",
]


def parse_timestamp(value: str | datetime) -> datetime:
    """An aware UTC datetime from an ISO 8601 string (or datetime).

    >>> parse_timestamp("2024-05-01T10:00:00+02:00")
    datetime.datetime(2024, 5, 1, 8, 0, tzinfo=datetime.timezone.utc)
    >>> parse_timestamp("2024-05-01T08:00:00Z") == parse_timestamp("2024-05-01 08:00:00")
    True
    """
    if isinstance(value, datetime):
        moment = value
    else:
        if not isinstance(value, str) or len(value) > 64:
            raise ValueError(f"not an ISO 8601 timestamp: {value!r}")
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"not an ISO 8601 timestamp: {value!r}") from None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def format_timestamp(moment: datetime) -> str:
    """The canonical form used in keys and responses (UTC, milliseconds, ``Z``).

    >>> format_timestamp(parse_timestamp("2024-05-01T10:00:00.5+02:00"))
    '2024-05-01T08:00:00.500Z'
    """
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    return moment.replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


#: An ISO 8601 timestamp (a zone-less one is taken as UTC), as an aware UTC datetime.
Timestamp = Annotated[datetime, AfterValidator(_utc)]
Unit = Annotated[float, Field(ge=0.0, le=1.0)]
_CLOSED = ConfigDict(extra="forbid", frozen=True)


class _Plain(BaseModel):
    model_config = _CLOSED
    item_id: Identifier
    topic_id: Identifier | None = None
    catalog_id: Identifier
    timestamp: Timestamp


class AttemptEvent(_Plain):
    type: Literal["attempt"]
    score: Unit | None = None
    time_spent_ms: NonNegativeInt | None = None


class SkipEvent(_Plain):
    type: Literal["skip"]


class ViewTheoryEvent(_Plain):
    type: Literal["view_theory"]
    time_spent_ms: NonNegativeInt | None = None
    fraction_completed: Unit | None = None


class _WithContext(BaseModel):
    model_config = _CLOSED
    timestamp: Timestamp
    recommendation_context: str


class ContextAttemptEvent(_WithContext):
    type: Literal["attempt"]
    score: Unit | None = None
    time_spent_ms: NonNegativeInt | None = None


class ContextSkipEvent(_WithContext):
    type: Literal["skip"]


class ContextViewTheoryEvent(_WithContext):
    type: Literal["view_theory"]
    time_spent_ms: NonNegativeInt | None = None
    fraction_completed: Unit | None = None


PlainEvent = Annotated[AttemptEvent | SkipEvent | ViewTheoryEvent, Field(discriminator="type")]
ContextEvent = Annotated[
    ContextAttemptEvent | ContextSkipEvent | ContextViewTheoryEvent, Field(discriminator="type")
]


@dataclass(frozen=True, slots=True)
class Interaction:
    """An event in normalised form, as stored and as the learner model sees it.

    ``practice`` is False for answers given in an assessment (no learning is
    assumed from them).

    ``stamp`` is the canonical form of ``timestamp`` (see :func:`format_timestamp`)
    and ``epoch`` its value in seconds; both are derived on creation.
    """

    kind: Literal["attempt", "skip", "view_theory"]
    user_id: str
    catalog_id: str
    item_id: str
    topic_id: str
    timestamp: datetime
    score: float | None = None
    time_spent_ms: int | None = None
    fraction_completed: float | None = None
    session_id: str | None = None
    practice: bool = True
    stamp: str = field(init=False, repr=False, compare=False)
    epoch: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "stamp", format_timestamp(self.timestamp))
        object.__setattr__(self, "epoch", self.timestamp.timestamp())

    @property
    def key(self) -> tuple[str, str, str, str]:
        """The dedupe key (user, catalog, item, canonical timestamp)."""
        return (self.user_id, self.catalog_id, self.item_id, self.stamp)

    def to_doc(self) -> dict[str, Any]:
        """The stored document (absent optional fields left out)."""
        doc: dict[str, Any] = {
            "kind": self.kind,
            "user_id": self.user_id,
            "catalog_id": self.catalog_id,
            "item_id": self.item_id,
            "topic_id": self.topic_id,
            "timestamp": self.stamp,
        }
        for name in ("score", "time_spent_ms", "fraction_completed", "session_id"):
            value = getattr(self, name)
            if value is not None:
                doc[name] = value
        if not self.practice:
            doc["practice"] = False
        return doc

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> Interaction:
        """The inverse of :meth:`to_doc`."""
        return cls(
            kind=doc["kind"],
            user_id=doc["user_id"],
            catalog_id=doc["catalog_id"],
            item_id=doc["item_id"],
            topic_id=doc["topic_id"],
            timestamp=parse_timestamp(doc["timestamp"]),
            score=doc.get("score"),
            time_spent_ms=doc.get("time_spent_ms"),
            fraction_completed=doc.get("fraction_completed"),
            session_id=doc.get("session_id"),
            practice=doc.get("practice", True),
        )

    @classmethod
    def from_event(
        cls,
        event: AttemptEvent | SkipEvent | ViewTheoryEvent | ContextAttemptEvent | ContextSkipEvent | ContextViewTheoryEvent,
        *,
        user_id: str,
        catalog_id: str,
        item_id: str,
        topic_id: str,
        session_id: str | None = None,
        practice: bool = True,
    ) -> Interaction:
        fields = event.__dict__
        return cls(
            kind=event.type,
            user_id=user_id,
            catalog_id=catalog_id,
            item_id=item_id,
            topic_id=topic_id,
            timestamp=event.timestamp,
            score=fields.get("score"),
            time_spent_ms=fields.get("time_spent_ms"),
            fraction_completed=fields.get("fraction_completed"),
            session_id=session_id,
            practice=practice,
        )
