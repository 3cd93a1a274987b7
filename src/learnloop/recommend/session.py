"""Adaptive sessions: what was asked for (:class:`SessionSpec`) and what happened (:class:`SessionState`).

A session fixes a user, a catalog, a mode, a filter, optional stopping
conditions and up to five constraints. Its state counts the interactions
posted through it and the recommendations issued, so that stopping
conditions can be reported and constraints kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt

from learnloop._types import Identifier
from learnloop.content import Filter
from learnloop.events import format_timestamp, parse_timestamp

__all__ = [
    "Mode",
    "SessionConstraint",
    "SessionSpec",
    "SessionState",
    "SessionStatus",
    "StoppingConditions",
]

_CLOSED = ConfigDict(extra="forbid", frozen=True)


class Mode(BaseModel):
    model_config = _CLOSED
    type: Literal["learn", "review", "assess"]


class StoppingConditions(BaseModel):
    model_config = _CLOSED
    max_proficiency: float | None = Field(default=None, ge=0.0, le=1.0)
    max_interaction_count: NonNegativeInt | None = None
    max_duration_ms: NonNegativeInt | None = None


class SessionConstraint(BaseModel):
    """At most ``value`` recommendations, in the whole session, of items matching ``filter``.

    ``value`` is a finite number >= 0 (a fraction is rounded down when the constraint is applied).
    """

    model_config = _CLOSED
    type: Literal["max_recommendations"]
    value: float = Field(ge=0.0, allow_inf_nan=False)
    filter: Filter


class SessionSpec(BaseModel):
    """The create-adaptive-session request."""

    model_config = _CLOSED
    user_id: Identifier
    catalog_id: Identifier
    mode: Mode
    filter: Filter
    stopping_conditions: StoppingConditions | None = None
    constraints: tuple[SessionConstraint, ...] | None = None


class SessionStatus(BaseModel):
    model_config = _CLOSED
    stop_session: bool
    satisfied_stopping_condition_keys: list[str]
    interaction_count: int
    duration_ms: int


@dataclass(frozen=True, slots=True)
class SessionState:
    """What a session has done so far (stored as a document beside its spec)."""

    session_id: str
    spec: SessionSpec
    started_at: datetime
    interaction_count: int = 0
    last_event_at: datetime | None = None
    recommendation_count: int = 0
    constraint_counts: tuple[int, ...] = ()
    last_item: str | None = None
    last_topic: str | None = None
    assessed: tuple[str, ...] = field(default=())

    def to_doc(self, *, like: tuple[SessionState, Mapping[str, Any]] | None = None) -> dict[str, Any]:
        """The stored document. ``like``: an earlier state of this session with its document made
        by this method, whose parts that did not change (the spec, the times) are taken as they are."""
        last = self.last_event_at
        if like is not None and _same_start(like[0], self):
            before, doc = like
            spec, started = doc["spec"], doc["started_at"]
            last_text = doc["last_event_at"] if last == before.last_event_at else _timestamp_text(last)
        else:
            spec, started = self.spec.model_dump(mode="json", exclude_none=True), format_timestamp(self.started_at)
            last_text = _timestamp_text(last)
        return {
            "session_id": self.session_id,
            "spec": spec,
            "started_at": started,
            "interaction_count": self.interaction_count,
            "last_event_at": last_text,
            "recommendation_count": self.recommendation_count,
            "constraint_counts": list(self.constraint_counts),
            "last_item": self.last_item,
            "last_topic": self.last_topic,
            "assessed": list(self.assessed),
        }

    @classmethod
    def from_doc(cls, doc: dict[str, Any], *, spec: SessionSpec | None = None) -> SessionState:
        """The inverse of :meth:`to_doc`; ``spec`` may be given when already parsed."""
        return cls(
            session_id=doc["session_id"],
            spec=SessionSpec.model_validate(doc["spec"]) if spec is None else spec,
            started_at=parse_timestamp(doc["started_at"]),
            interaction_count=doc["interaction_count"],
            last_event_at=None if doc["last_event_at"] is None else parse_timestamp(doc["last_event_at"]),
            recommendation_count=doc["recommendation_count"],
            constraint_counts=tuple(doc["constraint_counts"]),
            last_item=doc["last_item"],
            last_topic=doc["last_topic"],
            assessed=tuple(doc["assessed"]),
        )

    def as_stored(self) -> SessionState:
        """The state as :meth:`from_doc` reads it back from :meth:`to_doc` (times in UTC, to the millisecond)."""
        if _stored_time(self.started_at) and (self.last_event_at is None or _stored_time(self.last_event_at)):
            return self
        last = self.last_event_at
        return SessionState(
            self.session_id,
            self.spec,
            parse_timestamp(format_timestamp(self.started_at)),
            self.interaction_count,
            None if last is None else parse_timestamp(format_timestamp(last)),
            self.recommendation_count,
            self.constraint_counts,
            self.last_item,
            self.last_topic,
            self.assessed,
        )

    def duration_ms(self, now: datetime) -> int:
        """Milliseconds from the session's start to ``now`` or its latest event, whichever is later."""
        end = now if self.last_event_at is None or now >= self.last_event_at else self.last_event_at
        return max(0, int((end - self.started_at).total_seconds() * 1000))

    def status(self, now: datetime, proficiency: float | None) -> SessionStatus:
        """The session status; ``stop_session`` is true exactly when a condition holds."""
        conditions = self.spec.stopping_conditions
        duration = self.duration_ms(now)
        satisfied: list[str] = []
        if conditions is not None:
            if (
                conditions.max_proficiency is not None
                and proficiency is not None
                and proficiency >= conditions.max_proficiency
            ):
                satisfied.append("max_proficiency")
            if (
                conditions.max_interaction_count is not None
                and self.interaction_count >= conditions.max_interaction_count
            ):
                satisfied.append("max_interaction_count")
            if conditions.max_duration_ms is not None and duration >= conditions.max_duration_ms:
                satisfied.append("max_duration_ms")
        return SessionStatus(
            stop_session=bool(satisfied),
            satisfied_stopping_condition_keys=satisfied,
            interaction_count=self.interaction_count,
            duration_ms=duration,
        )

    def with_interactions(self, count: int, latest: datetime | None) -> SessionState:
        last = self.last_event_at
        if latest is not None and (last is None or latest > last):
            last = latest
        if not count and last is self.last_event_at:
            return self
        return SessionState(
            self.session_id,
            self.spec,
            self.started_at,
            self.interaction_count + count,
            last,
            self.recommendation_count,
            self.constraint_counts,
            self.last_item,
            self.last_topic,
            self.assessed,
        )

    def with_assessed(self, assessed: tuple[str, ...]) -> SessionState:
        """This state with ``assessed`` as the items assessed."""
        return SessionState(
            self.session_id,
            self.spec,
            self.started_at,
            self.interaction_count,
            self.last_event_at,
            self.recommendation_count,
            self.constraint_counts,
            self.last_item,
            self.last_topic,
            assessed,
        )


def _stored_time(moment: datetime) -> bool:
    """Whether ``moment`` is what :func:`parse_timestamp` makes of its :func:`format_timestamp`."""
    return moment.tzinfo is UTC and not moment.microsecond % 1000 and not moment.fold


def _same_start(before: SessionState, after: SessionState) -> bool:
    """Whether ``after`` is a later state of the session ``before`` is (same spec object and start)."""
    return before.spec is after.spec and before.session_id == after.session_id and before.started_at == after.started_at


def _timestamp_text(moment: datetime | None) -> str | None:
    return None if moment is None else format_timestamp(moment)
