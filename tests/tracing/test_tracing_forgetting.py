"""FSRS-style memory model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from learnloop.tracing import DAY_SECONDS, FSRS_WEIGHTS, Memory, MemoryModel, as_epoch_seconds, recall_probability

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def test_first_review_uses_initial_stability_per_grade() -> None:
    model = MemoryModel()
    assert model.review(None, score=0.0, timestamp=T0).stability == FSRS_WEIGHTS[0]
    assert model.review(None, score=0.6, timestamp=T0).stability == FSRS_WEIGHTS[1]
    assert model.review(None, score=1.0, timestamp=T0).stability == FSRS_WEIGHTS[2]


def test_recall_is_ninety_percent_after_one_stability() -> None:
    model = MemoryModel()
    mem = model.review(None, score=1.0, timestamp=T0)
    assert model.recall(mem, T0 + timedelta(days=mem.stability)) == pytest.approx(0.9)
    assert model.recall(mem, T0) == 1.0


def test_golden_success_after_one_day() -> None:
    # S = 3.7145, D = w4 = 5.1618; one day later R = (1 + 19/81 / 3.7145) ** -0.5
    w = FSRS_WEIGHTS
    model = MemoryModel()
    mem = model.review(None, score=1.0, timestamp=0.0)
    after = model.review(mem, score=1.0, timestamp=DAY_SECONDS)
    r = (1 + 19 / 81 / 3.7145) ** -0.5
    expected = 3.7145 * (1 + np.exp(w[8]) * (11 - 5.1618) * 3.7145 ** -w[9] * (np.exp(w[10] * (1 - r)) - 1))
    assert after.stability == pytest.approx(expected)
    assert after.reviews == 2 and after.lapses == 0


def test_spacing_beats_cramming_and_lapse_lowers_stability() -> None:
    model = MemoryModel()
    mem = model.review(None, score=1.0, timestamp=0.0)
    crammed = model.review(mem, score=1.0, timestamp=60.0)
    spaced = model.review(mem, score=1.0, timestamp=3 * DAY_SECONDS)
    lapsed = model.review(mem, score=0.0, timestamp=3 * DAY_SECONDS)
    assert spaced.stability > crammed.stability >= mem.stability > lapsed.stability
    assert lapsed.lapses == 1


@given(
    scores=st.lists(st.floats(0, 1), min_size=1, max_size=30),
    gaps=st.lists(st.floats(0, 100), min_size=30, max_size=30),
)
def test_memory_stays_valid(scores: list[float], gaps: list[float]) -> None:
    model = MemoryModel()
    ts = np.cumsum(gaps[: len(scores)]) * DAY_SECONDS
    mem = model.replay(ts, scores)
    assert mem is not None
    assert np.isfinite(mem.stability) and mem.stability > 0
    assert 1 <= mem.difficulty <= 10
    assert 0 < model.recall(mem, ts[-1] + 10 * DAY_SECONDS) <= 1


def test_replay_equals_incremental_and_round_trip() -> None:
    model = MemoryModel()
    ts = [0.0, 2 * DAY_SECONDS, DAY_SECONDS]
    scores = [1.0, 0.0, 1.0]
    mem = None
    for t, s in sorted(zip(ts, scores, strict=True)):
        mem = model.review(mem, score=s, timestamp=t)
    assert model.replay(ts, scores) == mem
    assert mem is not None and Memory.from_dict(mem.to_dict()) == mem


def test_vectorised_recall_and_naive_datetime() -> None:
    r = MemoryModel.recall_many([1.0, np.nan], [0.0, 0.0], DAY_SECONDS)
    assert r[0] == pytest.approx(0.9) and np.isnan(r[1])
    assert recall_probability(2.0, 2.0) == pytest.approx(0.9)
    with pytest.raises(ValueError, match="timezone-aware"):
        as_epoch_seconds(datetime(2024, 1, 1))
    with pytest.raises(ValueError, match="17 values"):
        MemoryModel(weights=(1.0,))


@given(
    stability=st.floats(0.01, 5000.0),
    retention=st.floats(0.05, 0.99),
    time_scale=st.sampled_from([0.25, 1.0, 8.0]),
)
def test_the_interval_is_where_the_recall_falls_to_the_retention(
    stability: float, retention: float, time_scale: float
) -> None:
    model = MemoryModel(time_scale=time_scale)
    days = float(model.interval_days(stability, retention))
    memory = Memory(stability=stability, difficulty=5.0, last_review=0.0)
    assert model.recall(memory, days * DAY_SECONDS) == pytest.approx(retention, rel=1e-9)
    assert model.recall(memory, days * DAY_SECONDS * 1.01) < retention < model.recall(memory, days * DAY_SECONDS * 0.99)


def test_due_at_is_each_topics_last_review_plus_its_interval() -> None:
    from learnloop.tracing import Event, ItemParams, LearnerModel, TopicStructure

    items = ItemParams.from_catalog(
        item_topic=[0, 1], difficulty=[0.5, 0.5], scorable=[True, True], is_theory=[False, False]
    )
    model = LearnerModel(TopicStructure.from_arrays([-1, -1]), items, memory_model=MemoryModel(time_scale=2.0))
    state = model.update(model.new_state(), Event(item=0, kind="attempt", score=1.0, timestamp=DAY_SECONDS))
    due = model.due_at(state, 0.9)
    assert due[0] == pytest.approx(DAY_SECONDS + FSRS_WEIGHTS[2] / 2.0 * DAY_SECONDS)  # R(S) = 0.9, clock x2
    assert np.isnan(due[1])  # never reviewed
    recall = model.recall(state, due[0])
    assert recall[0] == pytest.approx(0.9) and np.isnan(recall[1])
    with pytest.raises(ValueError, match="retention"):
        model.due_at(state, 1.0)
