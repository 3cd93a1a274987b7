"""A run of events applied as columns gives the state the per-event path gives.

:func:`apply_columns` groups the per-item bookkeeping with numpy and runs the
answers through the compiled loop of ``tracing/_kernel.py``; the per-event path
(:meth:`LearnerModel.update_many`) is the reference. The comparison is bit for
bit: the compiled loop does the same IEEE operations in the same order, and its
``exp`` and ``pow`` are the C library's, as Python's ``math.exp`` and ``**`` are.
Histories are random over random catalogs (nested and additive hierarchies,
momentum, novelty, gains, scored skips), with theory views, skips, answers given
in another topic, late events (timestamps out of order) and runs that continue
an earlier state; runs the grouping does not cover (an item twice at one time)
must be refused, and :meth:`LearnerModel.update_columns` then applies them event
by event.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from learnloop.tracing import Event, ItemParams, LearnerModel, LearnerState, TopicStructure, _columns
from learnloop.tracing._columns import EventColumns, apply_columns, kernel

pytestmark = pytest.mark.skipif(kernel() is None, reason="numba (extra 'fast') is not installed")

_SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_OPTIONS = [
    {},
    {"prerequisite_weight": 0.0, "parent_weight": 0.5},
    {"novelty": 0.7, "practice_gain": 0.1, "failure_gain": -0.05, "skip_score": 0.0},
    {"practice_gain": [0.05, 0.1, 0.0, 0.2, 0.1, 0.0, 0.3], "novelty": [0.0, 0.4, 0.2, 0.0, 0.1, 0.5, 0.0]},
    {"hierarchy": "additive"},
    {"hierarchy": "additive", "momentum_var": 0.8, "momentum_decay": 0.6, "novelty": 0.3, "skip_score": 0.2},
]


def _assert_same(a: LearnerState, b: LearnerState) -> None:
    assert a.n_events == b.n_events and a.n_items == b.n_items and a.n_topics == b.n_topics
    for x, y in zip(a.arrays, b.arrays, strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()
        assert not x.flags.writeable
    assert a.to_bytes() == b.to_bytes()


@st.composite
def _model(draw: st.DrawFn) -> LearnerModel:
    n_topics = draw(st.integers(1, 7))
    parent = [draw(st.integers(-1, t - 1)) if t else -1 for t in range(n_topics)]
    edges = draw(st.lists(st.tuples(st.integers(0, n_topics - 1), st.integers(0, n_topics - 1)), max_size=5))
    n_items = draw(st.integers(1, 25))
    topic = draw(st.lists(st.integers(0, n_topics - 1), min_size=n_items, max_size=n_items))
    difficulty = draw(st.lists(st.floats(0.05, 0.95), min_size=n_items, max_size=n_items))
    scorable = draw(st.lists(st.booleans(), min_size=n_items, max_size=n_items))
    items = ItemParams.from_catalog(
        item_topic=topic, difficulty=difficulty, scorable=scorable, is_theory=[not s for s in scorable]
    )
    options = dict(draw(st.sampled_from(_OPTIONS)))
    for name in ("practice_gain", "novelty"):  # per-topic settings: one per topic of this catalog
        if isinstance(options.get(name), list):
            options[name] = (options[name] * 7)[:n_topics]
    return LearnerModel(TopicStructure.from_arrays(parent, [(a, b) for a, b in edges if a != b]), items, **options)


def _events(draw: st.DrawFn, model: LearnerModel, times: list[float]) -> list[Event]:
    n_items, n_topics = model.items.n_items, model.topics.n_topics
    out = []
    for timestamp in times:
        item = draw(st.integers(0, n_items - 1))
        kind = draw(st.sampled_from(["attempt", "attempt", "attempt", "skip", "view_theory"]))
        scorable = bool(model.items.scorable[item])
        score = draw(st.sampled_from([0.0, 1.0, 0.5, 0.85, 0.3])) if kind == "attempt" and scorable else None
        out.append(
            Event(
                item=item,
                kind=kind,
                timestamp=timestamp,
                score=score,
                topic=draw(st.one_of(st.none(), st.integers(0, n_topics - 1))),
                time_spent_ms=draw(st.sampled_from([0, 1500, -20])),
                fraction_completed=draw(st.sampled_from([None, 0.3, 1.0])) if kind == "view_theory" else None,
                practice=draw(st.booleans()),
            )
        )
    return out


@st.composite
def _case(draw: st.DrawFn) -> tuple[LearnerModel, list[list[Event]]]:
    model = draw(_model())
    # distinct times within a run (late events: not in order), then runs that continue it, later or earlier
    runs = []
    for _ in range(draw(st.integers(1, 3))):
        n = draw(st.integers(1, 120))
        stamps = draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n, unique=True))
        runs.append(_events(draw, model, [s * 60.0 + 0.25 * len(runs) for s in stamps]))
    return model, runs


@_SETTINGS
@given(_case())
def test_columns_give_the_per_event_state(case: tuple[LearnerModel, list[list[Event]]]) -> None:
    model, runs = case
    state = reference = model.new_state()
    for events in runs:
        columns = EventColumns.from_events(events)
        reference = model.update_many(reference, events)
        made = apply_columns(model, state, columns)
        assert made is not None  # (no item twice at one time, none at the time of its latest in the state)
        _assert_same(made, reference)
        state = made


@_SETTINGS
@given(_model(), st.data())
def test_runs_that_may_hold_exact_duplicates_are_applied_event_by_event(
    model: LearnerModel, data: st.DataObject
) -> None:
    times = data.draw(st.lists(st.sampled_from([0.0, 60.0, 120.0]), min_size=2, max_size=80))
    events = _events(data.draw, model, times)
    first = model.update_many(model.new_state(), events[:1])
    columns = EventColumns.from_events(events)
    repeats = len({(e.item, e.timestamp) for e in events}) < len(events) or (events[0].item, events[0].timestamp) in {
        (e.item, e.timestamp) for e in events[1:]
    }
    if repeats:
        assert apply_columns(model, model.new_state(), columns) is None
    assert apply_columns(model, first, columns) is None  # the first event again: at its item's latest time
    _assert_same(model.update_columns(first, columns), model.update_many(first, events))


def test_a_long_history_goes_through_the_columns_and_equals_the_per_event_path() -> None:
    rng = np.random.default_rng(3)
    topics = TopicStructure.from_arrays([-1, 0, 0, 1, 1, 2], [(3, 4), (4, 5)])
    items = ItemParams.from_catalog(
        item_topic=rng.integers(0, 6, 40), difficulty=rng.uniform(0.1, 0.9, 40), scorable=np.arange(40) % 5 > 0,
        is_theory=np.arange(40) % 5 == 0,
    )  # fmt: skip
    model = LearnerModel(topics, items, practice_gain=0.05, novelty=0.2, skip_score=0.1)
    n = 5000
    columns = EventColumns.of(
        rng.integers(0, 40, n), rng.choice([1, 1, 1, 2, 3], n), np.arange(n) * 30.0, rng.choice([0.0, 1.0], n),
        time_ms=rng.integers(0, 9000, n), practice=rng.random(n) < 0.9,
    )  # fmt: skip
    made = apply_columns(model, model.new_state(), columns)
    assert made is not None
    _assert_same(made, model.update_many(model.new_state(), columns.events()))


def test_invalid_events_are_left_to_the_per_event_path_and_its_errors() -> None:
    topics = TopicStructure.from_arrays([-1, 0])
    items = ItemParams.from_catalog(
        item_topic=[1, 1], difficulty=[0.5, 0.5], scorable=[True, True], is_theory=[False] * 2
    )
    model = LearnerModel(topics, items)
    n = 100
    bad_score = EventColumns.of(np.zeros(n, int), np.ones(n, int), np.arange(n, dtype=float), [1.5] * n)
    no_score = EventColumns.of(np.zeros(n, int), np.ones(n, int), np.arange(n, dtype=float), [None] * n)
    bad_item = EventColumns.of(np.full(n, 2), np.ones(n, int), np.arange(n, dtype=float), [1.0] * n)
    for columns, message in ((bad_score, "score must lie"), (no_score, "needs a score"), (bad_item, "out of range")):
        assert apply_columns(model, model.new_state(), columns) is None
        with pytest.raises(ValueError, match=message):
            model.update_columns(model.new_state(), columns)


@_SETTINGS
@given(_case(), st.data())
def test_a_run_applied_at_once_gives_the_per_event_states_at_its_stops(
    case: tuple[LearnerModel, list[list[Event]]], data: st.DataObject
) -> None:
    model, runs = case
    state = model.new_state()
    for events in runs:
        events = sorted(events, key=lambda e: float(e.timestamp))  # (a run at once is in time order)
        n = len(events)
        stops = sorted({*data.draw(st.lists(st.integers(0, n), max_size=4)), n})
        with pytest.MonkeyPatch.context() as patch:  # (the loop's calls of a few events, or one)
            patch.setattr(_columns, "RUN_SLICE", data.draw(st.sampled_from([3, 10, _columns.RUN_SLICE])))
            made = model.update_stops(state, EventColumns.from_events(events), stops)
        assert made is not None and len(made) == len(stops)
        for stop, at in zip(stops, made, strict=True):
            _assert_same(at, model.update_many(state, events[:stop]))
        state = made[-1]


@_SETTINGS
@given(_model(), st.data())
def test_a_run_at_once_leaves_to_the_chunks_what_they_apply_event_by_event(
    model: LearnerModel, data: st.DataObject
) -> None:
    times = sorted(data.draw(st.lists(st.sampled_from([0.0, 60.0, 120.0]), min_size=2, max_size=80)))
    events = _events(data.draw, model, times)
    columns = EventColumns.from_events(events)
    first = model.update_many(model.new_state(), events[:1])
    if len({(e.item, e.timestamp) for e in events}) < len(events):  # an item twice at one time
        assert model.update_stops(model.new_state(), columns, [len(events)]) is None
    assert model.update_stops(first, columns, [len(events)]) is None  # the first event again
    backwards = EventColumns.from_events(events[::-1])
    if times[0] != times[-1]:
        assert model.update_stops(model.new_state(), backwards, [len(events)]) is None  # not in time order
    topics = TopicStructure.from_arrays([-1, 0])
    items = ItemParams.from_catalog(item_topic=[1], difficulty=[0.5], scorable=[True], is_theory=[False])
    n = 100
    bad = EventColumns.of(np.zeros(n, int), np.ones(n, int), np.arange(n, dtype=float), [1.5] * n)
    assert LearnerModel(topics, items).update_stops(LearnerModel(topics, items).new_state(), bad, [n]) is None


def test_a_model_with_prerequisite_gating_applies_a_long_run_as_the_per_event_path() -> None:
    # the compiled loops leave out the gating: such a model's runs go event by event
    topics = TopicStructure.from_arrays([-1, -1], prerequisites=[(0, 1)])
    items = ItemParams.from_catalog(
        item_topic=[0, 0, 1], difficulty=[0.3, 0.6, 0.5], scorable=[True] * 3, is_theory=[False] * 3
    )
    model = LearnerModel(topics, items, practice_gain=0.3, prerequisite_weight=0.0, prerequisite_gating=2.0)
    rng = np.random.default_rng(0)
    n = 300
    columns = EventColumns.of(rng.integers(0, 3, n), np.ones(n, int), np.arange(n) * 60.0, rng.choice([0.0, 1.0], n))
    assert apply_columns(model, model.new_state(), columns) is None
    assert model.update_stops(model.new_state(), columns, [n]) is None
    _assert_same(
        model.update_columns(model.new_state(), columns), model.update_many(model.new_state(), columns.events())
    )
