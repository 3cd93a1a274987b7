"""The events posted to an adaptive step, as the fields the step reads.

:func:`step_events` accepts exactly what :func:`~learnloop.engine.learners.batch.context_events`
accepts, with the same values: events that are plain dicts of plain values
(strings, floats, ints, timestamps in the canonical form the engine writes) are
read here directly; anything else (models, other types, a problem anywhere) is
validated by the models, which say what is wrong.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from learnloop.engine.learners.batch import context_events
from learnloop.events import CANONICAL_TIMESTAMP, Interaction, parse_timestamp

__all__ = ["StepEvent", "step_events"]

Kind = Literal["attempt", "skip", "view_theory"]


@dataclass(frozen=True, slots=True)
class StepEvent:
    """One posted event's fields (those its kind does not have are None)."""

    type: Kind
    timestamp: datetime
    recommendation_context: str
    score: float | None = None
    time_spent_ms: int | None = None
    fraction_completed: float | None = None
    #: ``format_timestamp(timestamp)`` when known (the posted text, when it was in that form);
    #: not compared: the same event read either way is equal
    stamp: str | None = field(default=None, compare=False)

    def interaction(
        self, *, user_id: str, catalog_id: str, item_id: str, topic_id: str, session_id: str, practice: bool
    ) -> Interaction:
        """The event as an interaction (as :meth:`Interaction.from_event <learnloop.events.Interaction.from_event>`)."""
        return Interaction._made(
            self.type,
            user_id,
            catalog_id,
            item_id,
            topic_id,
            self.timestamp,
            self.score,
            self.time_spent_ms,
            self.fraction_completed,
            session_id,
            practice,
            self.stamp,
        )


_REQUIRED = frozenset({"type", "timestamp", "recommendation_context"})
#: per kind: the fields an event may have
_ALLOWED = {
    "attempt": _REQUIRED | {"score", "time_spent_ms"},
    "skip": _REQUIRED,
    "view_theory": _REQUIRED | {"time_spent_ms", "fraction_completed"},
}
_MAX_MS = 2**53 - 1


def step_events(events: Iterable[Any]) -> list[StepEvent]:
    """The events' fields; raises :class:`~learnloop.errors.ValidationError` as
    :func:`~learnloop.engine.learners.batch.context_events` does."""
    given = events if events.__class__ is list else list(events)
    out = []
    for event in given:
        read = _plain(event)
        if read is None:
            break
        out.append(read)
    else:
        return out
    fields = ("score", "time_spent_ms", "fraction_completed")
    return [
        StepEvent(e.type, e.timestamp, e.recommendation_context, *(e.__dict__.get(f) for f in fields))
        for e in context_events(given)
    ]


def _unit(value: Any) -> bool:
    """Whether ``value`` is None or a float from 0 to 1 (what the models keep as it is)."""
    return value is None or (value.__class__ is float and 0.0 <= value <= 1.0)


def _plain(event: Any) -> StepEvent | None:
    """The event read directly, when it is a dict the models would take as it is (None: not sure)."""
    if event.__class__ is not dict:
        return None
    kind: Any = event.get("type")
    allowed = _ALLOWED.get(kind) if kind.__class__ is str else None
    if allowed is None or not _REQUIRED.issubset(event) or not allowed.issuperset(event):
        return None
    context, stamp = event["recommendation_context"], event["timestamp"]
    if context.__class__ is not str or stamp.__class__ is not str or not stamp.isascii():
        return None
    if not CANONICAL_TIMESTAMP.fullmatch(stamp):
        return None
    score, spent, fraction = event.get("score"), event.get("time_spent_ms"), event.get("fraction_completed")
    if not _unit(score) or not _unit(fraction):
        return None
    if spent is not None and (spent.__class__ is not int or not 0 <= spent <= _MAX_MS):
        return None
    try:
        moment = parse_timestamp(stamp)
    except ValueError:
        return None
    # (the canonical form is what format_timestamp writes of the instant it names: the key's text)
    return StepEvent(kind, moment, context, score, spent, fraction, stamp)
