"""A step's posted events read directly give what the models give, and the same errors."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from learnloop.engine.learners.batch import context_events
from learnloop.engine.sessions.step_events import StepEvent, step_events
from learnloop.errors import ValidationError
from learnloop.events import ContextAttemptEvent, format_timestamp

_MISSING = object()

_STAMPS = st.one_of(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)).map(
        lambda moment: format_timestamp(moment.replace(tzinfo=UTC))
    ),
    st.sampled_from(
        [
            "2024-05-01T10:00:00+02:00",
            "2024-05-01 08:00:00",
            "2024-05-01T08:00:00.1234567Z",
            "2024-02-30T00:00:00.000Z",
            "2023-02-29T00:00:00.000Z",
            "2024-02-29T00:00:00.000Z",
            "2024-12-31T23:59:60.000Z",
            "2024-12-31T24:00:00.000Z",
            "0000-01-01T00:00:00.000Z",
            "0001-01-01T00:00:00.000Z",
            "9999-12-31T23:59:59.999Z",
            "\u0662\u0660\u0662\u0664-05-01T08:00:00.000Z",
            "1700000000",
            "",
        ]
    ),
    st.integers(min_value=-10, max_value=2_000_000_000),
    st.none(),
)
_UNITS = st.one_of(
    st.floats(min_value=-0.5, max_value=1.5),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, 1.0000001, 1.25, -1e-9, 0, 1, True, False, "0.5"]),
    st.none(),
    st.just(_MISSING),
)
_TIMES = st.one_of(
    st.sampled_from([0, 2**53 - 1, 2**53, 2**53 + 1, 1.0, True, "10", -1]),
    st.integers(min_value=-5, max_value=2**53 + 5),
    st.sampled_from([None, _MISSING]),
)


_FIELDS = {
    "attempt": ("score", "time_spent_ms"),
    "skip": (),
    "view_theory": ("time_spent_ms", "fraction_completed"),
}
_VALID_STAMPS = st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9999, 11, 30)).map(
    lambda moment: format_timestamp(moment.replace(tzinfo=UTC))
)


@st.composite
def _events(draw: st.DrawFn) -> Any:
    """Mostly events of the engine's own form, each sometimes with one field of any kind of value."""
    if draw(st.integers(0, 30)) == 0:
        return draw(st.sampled_from([None, "attempt", 3, ["type"]]))
    kind = draw(st.sampled_from(["attempt", "skip", "view_theory"]))
    event: dict[Any, Any] = {"type": kind, "timestamp": draw(_VALID_STAMPS), "recommendation_context": draw(st.text())}
    for name in _FIELDS[kind]:
        if draw(st.booleans()):
            valid = st.integers(0, 2**53 - 1) if name == "time_spent_ms" else st.floats(0.0, 1.0)
            event[name] = draw(valid | st.none())
    if draw(st.integers(0, 3)):  # one field (or an unknown one) set to anything
        name = draw(st.sampled_from([*event, "item_id", 5]) | st.sampled_from(_FIELDS["view_theory"] + ("score",)))
        anything = {
            "type": st.sampled_from(["attempt", "skip", "view_theory", "answer", 1]),
            "timestamp": _STAMPS,
            "recommendation_context": st.one_of(st.text(max_size=8), st.integers()),
            "time_spent_ms": _TIMES,
        }.get(name, _UNITS)
        value = draw(anything)
        if value is _MISSING:
            event.pop(name, None)
        else:
            event[name] = value
    return event


def _fields(events: list[StepEvent]) -> list[tuple[Any, ...]]:
    """Each event's fields with their types and the timestamp's zone (so that 1 and 1.0 differ)."""
    out = []
    for e in events:
        values = (e.type, e.timestamp, e.recommendation_context, e.score, e.time_spent_ms, e.fraction_completed)
        out.append((*values, tuple(type(v) for v in values), e.timestamp.tzinfo))
    return out


def _outcome(read: Any, events: list[Any]) -> tuple[Any, ...]:
    try:
        return ("ok", _fields(read(events)))
    except ValidationError as exc:
        return ("error", str(exc))


def _by_the_models(events: list[Any]) -> list[StepEvent]:
    fields = ("score", "time_spent_ms", "fraction_completed")
    return [
        StepEvent(e.type, e.timestamp, e.recommendation_context, *(getattr(e, f, None) for f in fields))
        for e in context_events(events)
    ]


@settings(max_examples=600, deadline=None)
@given(st.lists(_events(), max_size=3))
def test_events_read_directly_are_what_the_models_make_of_them(events: list[Any]) -> None:
    assert _outcome(step_events, events) == _outcome(_by_the_models, events)
    for event in events:  # one at a time too (one invalid event makes the whole call an error)
        assert _outcome(step_events, [event]) == _outcome(_by_the_models, [event])


def test_the_engine_s_own_events_are_read_directly_and_models_pass_through() -> None:
    stamp = "2024-05-01T08:00:00.250Z"
    plain = {"type": "attempt", "timestamp": stamp, "recommendation_context": "c", "score": 0.5}
    model = ContextAttemptEvent.model_validate(plain)
    read, passed = step_events([plain]), step_events((model,))
    assert read == passed == [StepEvent("attempt", datetime(2024, 5, 1, 8, 0, 0, 250000, tzinfo=UTC), "c", 0.5)]
    assert read[0].timestamp.tzinfo is UTC


@settings(max_examples=300, deadline=None)
@given(st.lists(_events(), max_size=3))
def test_an_interaction_made_from_a_read_event_keys_it_by_its_canonical_stamp(events: list[Any]) -> None:
    # a directly read event keeps the posted text as its stamp: the interaction's key must be what
    # format_timestamp writes of the instant, as when the models read the event
    try:
        read = step_events(events)
    except ValidationError:
        return
    for event in read:
        made = event.interaction(user_id="u", catalog_id="c", item_id="i", topic_id="t", session_id="s", practice=True)
        assert made.key == ("u", "c", "i", format_timestamp(event.timestamp))
