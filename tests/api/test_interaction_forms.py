"""Interaction: the engine's bulk constructor and its documents agree with the dataclass constructor."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from learnloop.events import MAX_TIMESTAMP, MIN_TIMESTAMP, Interaction, format_timestamp, parse_timestamp

moments = st.datetimes(
    min_value=MIN_TIMESTAMP.replace(tzinfo=None) + timedelta(days=1),
    max_value=MAX_TIMESTAMP.replace(tzinfo=None) - timedelta(days=1),
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-7))]),
)
fields = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["attempt", "skip", "view_theory"]),
        "user_id": st.from_regex(r"[a-z0-9_:\-]{1,8}", fullmatch=True),
        "catalog_id": st.just("c1"),
        "item_id": st.from_regex(r"[a-z0-9]{1,6}", fullmatch=True),
        "topic_id": st.just("t1"),
        "timestamp": moments,
        "score": st.none() | st.floats(0.0, 1.0),
        "time_spent_ms": st.none() | st.integers(0, 2**53 - 1),
        "fraction_completed": st.none() | st.floats(0.0, 1.0),
        "session_id": st.none() | st.just("s1"),
        "practice": st.booleans(),
    }
)


#: the constructor's fields in their order
ORDER = tuple(f.name for f in dataclasses.fields(Interaction) if f.init)


def derived(i: Interaction) -> tuple[object, ...]:
    return (i.stamp, i.epoch, i.key)


@given(fields)
def test_the_bulk_constructor_makes_what_the_constructor_makes(values: dict) -> None:
    made = Interaction._made(*(values[name] for name in ORDER))
    built = Interaction(**values)
    assert made == built and hash(made) == hash(built)
    assert derived(made) == derived(built)
    assert made.stamp == format_timestamp(values["timestamp"])


@given(fields)
def test_a_document_reads_back_as_the_same_interaction(values: dict) -> None:
    built = Interaction(**{**values, "timestamp": values["timestamp"].astimezone(UTC)})
    back = Interaction.from_doc(built.to_doc())
    # the stored stamp keeps milliseconds: the instant read back is the stamp's
    assert back.timestamp == parse_timestamp(built.stamp)
    assert derived(back) == derived(built)
    assert back.to_doc() == built.to_doc()


def test_format_timestamp_writes_what_isoformat_writes_at_the_ends_of_the_range() -> None:
    for moment in (MIN_TIMESTAMP, MAX_TIMESTAMP, datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=UTC)):
        assert format_timestamp(moment) == moment.replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"
    assert format_timestamp(datetime(2024, 5, 1, 10, 0, 0, 500000, tzinfo=timezone(timedelta(hours=2)))) == (
        "2024-05-01T08:00:00.500Z"
    )
