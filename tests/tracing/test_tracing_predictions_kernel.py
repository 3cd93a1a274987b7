"""Predictions computed topic by topic equal :func:`expected_p_correct` item by item, bit for bit."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from learnloop.tracing import ItemParams
from learnloop.tracing.irt import expected_p_correct
from learnloop.tracing.predictions import Predictions, TopicRuns, topic_sums

_SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def _case(draw: st.DrawFn) -> tuple[ItemParams, TopicRuns, list[tuple[np.ndarray, np.ndarray]]]:
    n_topics = draw(st.integers(1, 8))
    n_items = draw(st.integers(1, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    topic = rng.integers(0, n_topics, n_items)
    if draw(st.booleans()):
        topic = np.sort(topic)  # runs in catalog order
    difficulty = rng.uniform(0.02, 0.98, n_items)
    discrimination = None if draw(st.booleans()) else rng.choice([1.0, 0.5, 1.7], n_items)
    items = ItemParams.from_catalog(
        item_topic=topic,
        difficulty=difficulty,
        scorable=np.ones(n_items, bool),
        is_theory=np.zeros(n_items, bool),
        discrimination=discrimination,
    )
    runs = TopicRuns.of(items.topic, n_topics)
    beliefs = []
    mean = rng.normal(0.0, 2.0, n_topics)
    sd = rng.uniform(0.0, 1.5, n_topics)
    moved = np.ones(n_topics, dtype=bool)
    for _ in range(draw(st.integers(1, 8))):
        if draw(st.booleans()):  # else the same topics move again
            moved = rng.random(n_topics) < draw(st.sampled_from([0.1, 0.5, 1.0]))
        mean = np.where(moved, mean + rng.normal(0.0, 0.5, n_topics), mean)
        sd = np.where(moved & (rng.random(n_topics) < 0.5), rng.uniform(0.0, 1.5, n_topics), sd)
        if draw(st.booleans()):  # a belief exactly at some item's difficulty
            mean[topic[0]] = items.b[0]
        beliefs.append((mean.copy(), sd.copy()))
    return items, runs, beliefs


def _weights(n_items: int, seed: int) -> list[np.ndarray]:
    """Read-only weights (kept from state to state, as the engine's masks are)."""
    rng = np.random.default_rng(seed)
    out = [np.ones(n_items, bool), rng.random(n_items) < 0.5]
    for w in out:
        w.setflags(write=False)
    return out


def _expected(items: ItemParams, mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
    return expected_p_correct(mean[items.topic], sd[items.topic] ** 2, items.b, items.a)


@_SETTINGS
@given(_case())
def test_predictions_equal_the_item_by_item_formula(case: tuple[ItemParams, TopicRuns, list]) -> None:  # type: ignore[type-arg]
    items, runs, beliefs = case
    carried = Predictions.compute(items, runs, *beliefs[0])
    assert carried.rasch == bool(np.all(items.a == 1.0))
    weights = _weights(items.n_items, len(beliefs))
    for step, (mean, sd) in enumerate(beliefs):
        carried = carried.advance(mean, sd)
        fresh = Predictions.compute(items, runs, mean, sd)
        expected = _expected(items, mean, sd)
        assert carried.p.tobytes() == expected.tobytes()
        assert fresh.p.tobytes() == expected.tobytes()
        assert not carried.p.flags.writeable
        # per-topic sums carried from the previous state's (some weights read at some steps only)
        for k, w in enumerate(weights):
            if k == 0 or step % 2:
                assert carried.sums(w).tobytes() == topic_sums(runs, expected, w).tobytes()
        if step % 3:  # the information, carried from the previous state's when that was read
            a = items.a
            assert carried.information().tobytes() == (a * a * expected * (1.0 - expected)).tobytes()
            assert not carried.information().flags.writeable


def test_the_comparison_sees_a_difference() -> None:
    items = ItemParams.from_catalog(
        item_topic=[0, 1], difficulty=[0.3, 0.6], scorable=[True, True], is_theory=[False, False]
    )
    runs = TopicRuns.of(items.topic, 2)
    p = Predictions.compute(items, runs, np.array([0.1, 0.2]), np.array([0.5, 0.5])).p
    assert p.tobytes() != _expected(items, np.array([0.1, 0.2 + 1e-15]), np.array([0.5, 0.5])).tobytes()
