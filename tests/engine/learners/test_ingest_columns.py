"""Events ingested as columns (``Engine.upsert_events`` with dicts) against the per-event path:
the same answers, the same errors, the same stored rows in the same order, the same learner states,
over random batches with repeated keys, rewrites of stored events, late events and bad rows."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from learnloop import Engine
from learnloop.engine.learners.batch import EventBatch, plain_events
from learnloop.errors import LearnloopError, ValidationError
from learnloop.events import format_timestamp
from learnloop.store import MemoryStore, SQLiteStore

START = datetime(2025, 3, 1, tzinfo=UTC)
ITEMS = [
    *({"item_id": f"q{k}", "display_name": f"Q{k}", "scorable": True, "difficulty": 0.1 + 0.2 * k} for k in range(5)),
    {"item_id": "th0", "display_name": "Theory", "scorable": False},
]
CATALOGS = [
    {
        "catalog_id": "c1",
        "display_name": "One",
        "topics": [
            {"topic_id": "a", "display_name": "A", "item_refs": [{"item_id": i} for i in ("q0", "q1", "th0")]},
            {
                "topic_id": "b",
                "display_name": "B",
                "item_refs": [{"item_id": i} for i in ("q1", "q2", "q3")],
                "prerequisite_topic_refs": [{"topic_id": "a"}],
            },
        ],
    },
    {
        "catalog_id": "c2",
        "display_name": "Two",
        "topics": [{"topic_id": "x", "display_name": "X", "item_refs": [{"item_id": i} for i in ("q0", "q4")]}],
    },
]

#: timestamps: canonical ones (a few, so keys repeat), other spellings of some of the same instants,
#: instants at and beyond the edges of the supported range, and what is no timestamp (or an odd one)
CANONICAL = [format_timestamp(START + timedelta(seconds=k)) for k in range(6)]
OTHER = [
    "2025-03-01T00:00:02Z",
    "2025-03-01T01:00:03+01:00",
    "2025-03-01 00:00:04",
    "2025-03-01T00:00:05.0004Z",
    "2025-03-01T00:00:01.000+00:00",
    START + timedelta(seconds=3),
    datetime(2025, 3, 1, 2, 0, 1, tzinfo=timezone(timedelta(hours=2))),
    "0001-01-01T00:00:00.000Z",
    "0001-01-01T00:00:00.001Z",
    "0002-01-01T00:00:00.000Z",
    "9999-11-30T23:59:59.999Z",
    "9999-12-31T23:59:59.999Z",
]
BAD_STAMPS = [
    "9999-12-31T23:59:59.999-01:00",
    "0001-01-01T00:00:00.000+00:01",
    "0000-01-01T00:00:00.000Z",
    "2025-02-30T00:00:00.000Z",
    "2025-03-01T24:00:00.000Z",
    "NaTZ",
    "soon",
    3.5,
]


def events(valid_only: bool = False) -> st.SearchStrategy[list[Any]]:
    """Batches of valid events, and (unless ``valid_only``) now and then an event with one bad field."""
    row = st.fixed_dictionaries(
        {
            "type": st.sampled_from(["attempt", "attempt", "skip", "view_theory"]),
            "item_id": st.sampled_from(["q0", "q1", "q1", "q2", "q3", "q4", "th0"]),
            "catalog_id": st.sampled_from(["c1", "c1", "c1", "c2"]),
            "timestamp": st.sampled_from(CANONICAL * 4 + OTHER),
        },
        optional={
            "topic_id": st.sampled_from([None, "a", "b", "x"]),
            "score": st.sampled_from([None, 0.0, 0.5, 1.0, 1, "0.25"]),
            "time_spent_ms": st.sampled_from([None, 0, 20_000, 1.0]),
            "fraction_completed": st.sampled_from([0.3, 1.0]),
        },
    ).map(_fit)
    if not valid_only:
        bad = st.tuples(row, st.sampled_from(BAD_FIELDS)).map(_spoilt)
        row = st.one_of(row, row, row, row, row, row, row, row, row, bad)
    return st.lists(row, min_size=1, max_size=10).flatmap(_with_repeats)


def _spoilt(pair: tuple[dict[str, Any], tuple[str, Any]]) -> dict[str, Any]:
    event, (name, value) = pair
    return {k: v for k, v in {**event, name: value}.items() if v is not MISSING}


def _with_repeats(batch: list[dict[str, Any]]) -> st.SearchStrategy[list[dict[str, Any]]]:
    """``batch`` with some of its events posted again at other places (as they were, or as
    another version: another score or kind)."""
    versions = [{}, {"score": 0.0}, {"score": 1.0}, {"type": "skip"}]
    repeat = st.tuples(st.integers(0, len(batch) - 1), st.integers(0, len(batch)), st.sampled_from(versions))

    def insert(repeats: list[tuple[int, int, dict[str, Any]]]) -> list[dict[str, Any]]:
        out = list(batch)
        for source, at, change in repeats:
            out.insert(at, _fit({**batch[source], **change}))
        return out

    return st.lists(repeat, max_size=4).map(insert)


def _fit(event: dict[str, Any]) -> dict[str, Any]:
    """Only the fields the event's kind has."""
    allowed = {"attempt": {"score", "time_spent_ms"}, "skip": set(), "view_theory": {"time_spent_ms"}}
    keep = allowed.get(event["type"], set()) | {"extra"} | {"type", "item_id", "catalog_id", "timestamp", "topic_id"}
    if event["type"] == "view_theory":
        keep.add("fraction_completed")
    return {k: v for k, v in event.items() if k in keep}


MISSING = object()
#: one bad field (or one that the event's kind may lack): the whole batch is refused, or read otherwise
BAD_FIELDS = [
    ("type", "answer"),
    ("item_id", "nope"),
    ("item_id", "bad id!"),
    ("catalog_id", "c9"),
    ("topic_id", "zz"),
    ("topic_id", "x"),
    ("score", 1.5),
    ("score", None),
    ("time_spent_ms", -1),
    ("time_spent_ms", 2**60),
    ("fraction_completed", 2.0),
    ("extra", 1),
    ("score", float("nan")),
    ("score", True),
    ("time_spent_ms", True),
    ("item_id", "q" * 129),
    ("item_id", "q0\n"),
    ("catalog_id", None),
    ("topic_id", 5),
    ("item_id", MISSING),
    *(("timestamp", stamp) for stamp in BAD_STAMPS),
]


def engine_on(kind: str) -> Engine:
    engine = Engine(seed=3, store=MemoryStore() if kind == "memory" else SQLiteStore(":memory:"))
    engine.upsert_items(ITEMS)
    for catalog in CATALOGS:
        engine.upsert_catalog(catalog)
    return engine


def outcome(call: Any) -> tuple[Any, ...]:
    try:
        return ("ok", call())
    except LearnloopError as exc:
        return ("error", type(exc).__name__, str(exc), getattr(exc, "problems", None))


def stored(engine: Engine) -> tuple[list[Any], list[Any]]:
    store = engine.store
    return list(store.scan("events", "default", order="seq")), list(store.scan("learners", "default", order="seq"))


def beliefs(engine: Engine, user: str) -> list[Any]:
    out = []
    for catalog, items in (("c1", ["q0", "q1", "q2", "q3"]), ("c2", ["q0", "q4"])):
        view = engine.learner_view(user, catalog)
        out.append((engine.predict(user, catalog, items), view.p_correct.tolist(), view.attempts.tolist()))
    return out


calls = st.lists(st.tuples(st.sampled_from(["u1", "u2"]), events(), st.booleans()), min_size=1, max_size=5)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=calls)
def test_columns_and_the_per_event_path_agree(kind: str, script: list[tuple[str, list[Any], bool]]) -> None:
    columns, each = engine_on(kind), engine_on(kind)
    for user, batch, read in script:
        given_batch = copy.deepcopy(batch)
        got = outcome(lambda: columns.upsert_events(user, given_batch))  # noqa: B023
        assert given_batch == batch  # the input is not changed
        want = outcome(lambda: each._learners._upsert_each(user, copy.deepcopy(batch), "default"))  # noqa: B023
        assert got == want
        assert stored(columns) == stored(each)
        if read:  # the learners' states are cached: the next call brings them along
            assert beliefs(columns, user) == beliefs(each, user)
    for user in ("u1", "u2"):
        assert beliefs(columns, user) == beliefs(each, user)


@settings(max_examples=150, deadline=None)
@given(batch=events(valid_only=True))
def test_valid_batches_are_read_as_columns_with_the_models_values(batch: list[dict[str, Any]]) -> None:
    read = EventBatch.read(batch)
    assert read is not None
    models = plain_events(batch)
    assert read.kinds == [m.type for m in models]
    assert read.items == [m.item_id for m in models]
    assert read.topics == [m.topic_id for m in models]
    for k, model in enumerate(models):
        fields = model.__dict__
        for name, column in (("score", read.scores), ("time_spent_ms", read.times)):
            assert column[k] == fields.get(name) and type(column[k]) is type(fields.get(name))
        assert read.stamps[k] == format_timestamp(model.timestamp)
        assert read.moment(k) == model.timestamp
    # epoch seconds as the interactions hold them
    epochs = [datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp() for s in read.stamps]
    np.testing.assert_array_equal(read.epochs(), np.array(epochs))


@pytest.mark.parametrize("stamp", BAD_STAMPS + ["2025-03-01T00:00:00.000", "2025-03-01T00:00:00.000Z "])
def test_what_is_not_a_canonical_stamp_is_not_taken_as_one(stamp: Any) -> None:
    row = {"type": "skip", "item_id": "q0", "catalog_id": "c1", "timestamp": stamp}
    read = EventBatch.read([row, {**row, "timestamp": CANONICAL[0]}])
    if read is not None:  # another spelling of an instant (3.5: seconds since the epoch), read as the models do
        assert read.stamps[0] == format_timestamp(plain_events([row])[0].timestamp)
    else:
        with pytest.raises(ValidationError):
            plain_events([row])


@st.composite
def near_canonical(draw: Any) -> str:
    moment = draw(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59, 999999)))
    stamp = format_timestamp(moment.replace(tzinfo=UTC))
    for _ in range(draw(st.integers(0, 2))):  # a character or two changed
        at = draw(st.integers(0, 23))
        stamp = stamp[:at] + draw(st.sampled_from("0123456789-T:.Z +éx\u0660")) + stamp[at + 1 :]
    return stamp


@settings(max_examples=500, deadline=None)
@given(st.lists(near_canonical(), min_size=1, max_size=3))
def test_stamps_read_as_a_table_are_read_as_the_models_read_them(stamps: list[str]) -> None:
    from learnloop.engine.learners.batch import canonical_ms

    ms = canonical_ms(stamps)
    if ms is not None:
        for stamp, value in zip(stamps, ms.tolist(), strict=True):
            (model,) = plain_events([{"type": "skip", "item_id": "q0", "catalog_id": "c1", "timestamp": stamp}])
            assert format_timestamp(model.timestamp) == stamp
            assert (model.timestamp - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1) == value


BASES = [
    {"type": "attempt", "item_id": "q1", "catalog_id": "c1", "timestamp": CANONICAL[1], "score": 0.5},
    {"type": "attempt", "item_id": "q1", "catalog_id": "c1", "timestamp": CANONICAL[1], "time_spent_ms": 5},
    {"type": "view_theory", "item_id": "th0", "catalog_id": "c1", "timestamp": CANONICAL[2], "fraction_completed": 0.5},
    {"type": "skip", "item_id": "q4", "catalog_id": "c2", "timestamp": CANONICAL[3]},
]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize("base", BASES)
def test_each_bad_field_is_refused_or_read_as_the_per_event_path_does(kind: str, base: dict[str, Any]) -> None:
    columns, each = engine_on(kind), engine_on(kind)
    for spoilt in [_spoilt((base, bad)) for bad in BAD_FIELDS]:
        batch = [base, spoilt, {**base, "timestamp": CANONICAL[5]}]
        got = outcome(lambda: columns.upsert_events("u1", copy.deepcopy(batch)))  # noqa: B023
        assert got == outcome(lambda: each._learners._upsert_each("u1", copy.deepcopy(batch), "default"))  # noqa: B023
        assert stored(columns) == stored(each)
