"""Interaction events: the contract shapes and their normalised form.

Three kinds exist: ``attempt`` (with a score in 0..1 when the item is
scorable), ``skip`` and ``view_theory`` (with the fraction of the theory
reached). Timestamps are ISO 8601; a timestamp without a zone is taken as UTC.
Only instants from :data:`MIN_TIMESTAMP` to :data:`MAX_TIMESTAMP` (UTC, both
included) are accepted: the engine must be able to hold each one as epoch
seconds (a float) and turn that back into a datetime.
An event's identity is ``(user_id, catalog_id, item_id, timestamp)``: the same
key posted again replaces the earlier version.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from learnloop._types import Identifier
from learnloop._validation import StatedValueError

__all__ = [
    "MAX_TIMESTAMP",
    "MIN_TIMESTAMP",
    "AttemptEvent",
    "ContextAttemptEvent",
    "ContextEvent",
    "ContextSkipEvent",
    "ContextViewTheoryEvent",
    "Interaction",
    "PlainEvent",
    "SkipEvent",
    "TimeSpentMs",
    "ViewTheoryEvent",
    "format_timestamp",
    "parse_timestamp",
]


#: The earliest instant the engine represents (UTC, included).
MIN_TIMESTAMP = datetime(1, 1, 1, tzinfo=UTC)
#: The latest instant the engine represents (UTC, included): the last millisecond of
#: year 9999. Beyond it, epoch seconds as a float round up to year 10000.
MAX_TIMESTAMP = datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)
_RANGE = "0001-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z"


#: Between these, epoch seconds as a float and back are known to give the same instant:
#: the round trip is checked only outside them.
_SAFE_LOW = datetime(2, 1, 1, tzinfo=UTC)
_SAFE_HIGH = datetime(9999, 12, 1, tzinfo=UTC)


def _in_range(moment: datetime, shown: str | None = None) -> datetime:
    """``moment`` in UTC, when the engine can represent it; else ValueError
    naming ``shown`` (the input as given; the datetime's ISO form when None)."""
    try:
        utc = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
        if _SAFE_LOW <= utc <= _SAFE_HIGH:
            return utc
        if MIN_TIMESTAMP <= utc <= MAX_TIMESTAMP:
            # what the engine does with it: epoch seconds as a float, and back
            datetime.fromtimestamp(utc.timestamp(), UTC)
            return utc
    except (OverflowError, ValueError, OSError):
        pass
    shown = moment.isoformat() if shown is None else shown
    raise ValueError(f"timestamp {shown} is outside the supported range {_RANGE} (in UTC)")


def parse_timestamp(value: str | datetime) -> datetime:
    """An aware UTC datetime from an ISO 8601 string (or datetime).

    Raises ValueError for a string that is not ISO 8601 and for an instant
    outside :data:`MIN_TIMESTAMP` .. :data:`MAX_TIMESTAMP` once in UTC.

    >>> parse_timestamp("2024-05-01T10:00:00+02:00")
    datetime.datetime(2024, 5, 1, 8, 0, tzinfo=datetime.timezone.utc)
    >>> parse_timestamp("2024-05-01T08:00:00Z") == parse_timestamp("2024-05-01 08:00:00")
    True
    >>> parse_timestamp("9999-12-31T23:59:59-01:00")
    Traceback (most recent call last):
    ...
    ValueError: timestamp '9999-12-31T23:59:59-01:00' is outside the supported range 0001-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z (in UTC)
    """
    if isinstance(value, datetime):
        return _in_range(value)
    if not isinstance(value, str) or len(value) > 64:
        raise ValueError(f"not an ISO 8601 timestamp: {value!r:.80}")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"not an ISO 8601 timestamp: {value!r}") from None
    return _in_range(moment, repr(value))


def format_timestamp(moment: datetime) -> str:
    """The canonical form used in keys and responses (UTC, milliseconds, ``Z``).

    >>> format_timestamp(parse_timestamp("2024-05-01T10:00:00.5+02:00"))
    '2024-05-01T08:00:00.500Z'
    """
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    # what isoformat(timespec="milliseconds") writes for the naive UTC time, at half its cost
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (  # noqa: UP031
        moment.year,
        moment.month,
        moment.day,
        moment.hour,
        moment.minute,
        moment.second,
        moment.microsecond // 1000,
    )


def _timestamp(value: str | datetime) -> datetime:
    """:func:`parse_timestamp` for the models: its messages show the value already, which the
    translation of a validation error then does not add again."""
    try:
        return parse_timestamp(value)
    except ValueError as exc:
        raise StatedValueError(str(exc)) from None


def _iso_text(value: Any) -> Any:
    """A string read by :func:`parse_timestamp` (the one reading of timestamp text, whichever
    way the document came: JSON or Python objects); anything else is left to pydantic."""
    return _timestamp(value) if isinstance(value, str) else value


#: An ISO 8601 timestamp (a zone-less one is taken as UTC), as an aware UTC datetime
#: (only instants from MIN_TIMESTAMP to MAX_TIMESTAMP: see :func:`parse_timestamp`).
Timestamp = Annotated[datetime, BeforeValidator(_iso_text), AfterValidator(_timestamp)]
#: A duration in milliseconds: an integer from 0 to 2**53 - 1 (the largest integer a
#: float, and a JSON number in most clients, holds exactly).
TimeSpentMs = Annotated[int, Field(ge=0, le=2**53 - 1)]
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
    time_spent_ms: TimeSpentMs | None = None


class SkipEvent(_Plain):
    type: Literal["skip"]


class ViewTheoryEvent(_Plain):
    type: Literal["view_theory"]
    time_spent_ms: TimeSpentMs | None = None
    fraction_completed: Unit | None = None


class _WithContext(BaseModel):
    model_config = _CLOSED
    timestamp: Timestamp
    recommendation_context: str


class ContextAttemptEvent(_WithContext):
    type: Literal["attempt"]
    score: Unit | None = None
    time_spent_ms: TimeSpentMs | None = None


class ContextSkipEvent(_WithContext):
    type: Literal["skip"]


class ContextViewTheoryEvent(_WithContext):
    type: Literal["view_theory"]
    time_spent_ms: TimeSpentMs | None = None
    fraction_completed: Unit | None = None


PlainEvent = Annotated[AttemptEvent | SkipEvent | ViewTheoryEvent, Field(discriminator="type")]
ContextEvent = Annotated[ContextAttemptEvent | ContextSkipEvent | ContextViewTheoryEvent, Field(discriminator="type")]


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
    key: tuple[str, str, str, str] = field(init=False, repr=False, compare=False)
    """The dedupe key (user, catalog, item, canonical timestamp)."""

    def __post_init__(self) -> None:
        stamp = format_timestamp(self.timestamp)
        object.__setattr__(self, "stamp", stamp)
        object.__setattr__(self, "key", (self.user_id, self.catalog_id, self.item_id, stamp))
        object.__setattr__(self, "epoch", _epoch(self.timestamp))

    @classmethod
    def _made(
        cls,
        kind: Literal["attempt", "skip", "view_theory"],
        user_id: str,
        catalog_id: str,
        item_id: str,
        topic_id: str,
        timestamp: datetime,
        score: float | None,
        time_spent_ms: int | None,
        fraction_completed: float | None,
        session_id: str | None,
        practice: bool,
        stamp: str | None = None,
    ) -> Interaction:
        """What the constructor makes of these fields, at a fraction of its cost (a frozen
        dataclass sets each field through ``object.__setattr__``): for the engine's bulk
        paths. ``stamp``, when given, is ``format_timestamp(timestamp)``."""
        if stamp is None:
            stamp = format_timestamp(timestamp)
        made = _new(cls)
        _s_kind(made, kind)
        _s_user(made, user_id)
        _s_catalog(made, catalog_id)
        _s_item(made, item_id)
        _s_topic(made, topic_id)
        _s_timestamp(made, timestamp)
        _s_score(made, score)
        _s_time(made, time_spent_ms)
        _s_fraction(made, fraction_completed)
        _s_session(made, session_id)
        _s_practice(made, practice)
        _s_stamp(made, stamp)
        _s_epoch(made, _epoch(timestamp))
        _s_key(made, (user_id, catalog_id, item_id, stamp))
        return made

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
        stamp = doc["timestamp"]
        timestamp = parse_timestamp(stamp)
        return cls._made(
            doc["kind"],
            doc["user_id"],
            doc["catalog_id"],
            doc["item_id"],
            doc["topic_id"],
            timestamp,
            doc.get("score"),
            doc.get("time_spent_ms"),
            doc.get("fraction_completed"),
            doc.get("session_id"),
            doc.get("practice", True),
            stamp if CANONICAL_TIMESTAMP.fullmatch(stamp) else None,
        )

    @classmethod
    def from_event(
        cls,
        event: AttemptEvent
        | SkipEvent
        | ViewTheoryEvent
        | ContextAttemptEvent
        | ContextSkipEvent
        | ContextViewTheoryEvent,
        *,
        user_id: str,
        catalog_id: str,
        item_id: str,
        topic_id: str,
        session_id: str | None = None,
        practice: bool = True,
    ) -> Interaction:
        fields = event.__dict__
        return cls._made(
            event.type,
            user_id,
            catalog_id,
            item_id,
            topic_id,
            event.timestamp,
            fields.get("score"),
            fields.get("time_spent_ms"),
            fields.get("fraction_completed"),
            session_id,
            practice,
        )


def _epoch(moment: datetime) -> float:
    """The instant of the canonical stamp (milliseconds) in epoch seconds, so that an event
    read back from the store and the same event as posted fall at the same time."""
    if moment.microsecond % 1000:
        moment = moment.replace(microsecond=moment.microsecond // 1000 * 1000)
    return moment.timestamp()


_new = object.__new__
# the slots' setters, which the frozen dataclass leaves usable from inside the module
(
    _s_kind,
    _s_user,
    _s_catalog,
    _s_item,
    _s_topic,
    _s_timestamp,
    _s_score,
    _s_time,
    _s_fraction,
    _s_session,
    _s_practice,
    _s_stamp,
    _s_epoch,
    _s_key,
) = (
    getattr(Interaction, name).__set__
    for name in (
        "kind",
        "user_id",
        "catalog_id",
        "item_id",
        "topic_id",
        "timestamp",
        "score",
        "time_spent_ms",
        "fraction_completed",
        "session_id",
        "practice",
        "stamp",
        "epoch",
        "key",
    )
)
#: the canonical form format_timestamp writes (a stored stamp in it is kept as it is)
CANONICAL_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
