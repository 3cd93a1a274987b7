"""topic_sums and Predictions.compute: the runs of items laid out topic after topic take shortcuts
(no gather of the items, the runs' starts as the segments); the sums and predictions are the same
doubles as the general path, which takes each topic's run by its positions."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from learnloop.tracing.predictions import Predictions, TopicRuns, topic_sums
from learnloop.tracing.structure import ItemParams


@st.composite
def _runs(draw: st.DrawFn) -> tuple[TopicRuns, np.ndarray, np.ndarray]:
    n_topics = draw(st.integers(1, 8))
    n_items = draw(st.integers(1, 60))
    ordered = draw(st.booleans())
    topic = np.asarray(draw(st.lists(st.integers(0, n_topics - 1), min_size=n_items, max_size=n_items)))
    if ordered:
        topic = np.sort(topic)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    return TopicRuns.of(topic, n_topics), rng.normal(0.5, 0.3, n_items), rng.random(n_items) < 0.7


@settings(max_examples=150, deadline=None)
@given(_runs())
def test_the_sums_of_every_topic_are_each_topics_own_sum(case: tuple[TopicRuns, np.ndarray, np.ndarray]) -> None:
    runs, values, weights = case
    n_topics = runs.ptr.size - 1
    for w in (None, weights):
        every = topic_sums(runs, values, w)
        one_by_one = [topic_sums(runs, values, w, topics=np.array([t]))[0] for t in range(n_topics)]
        assert every.tobytes() == np.array(one_by_one, dtype=np.float64).tobytes()


def test_the_shortcut_is_taken_and_would_be_seen_if_wrong() -> None:
    topic = np.repeat(np.arange(4), 5)
    runs = TopicRuns.of(topic, 4)
    assert runs.identity
    values = np.arange(20, dtype=np.float64)
    assert topic_sums(runs, values).tolist() == [10.0, 35.0, 60.0, 85.0]
    # a topic without items keeps its 0 (the general path)
    runs = TopicRuns.of(topic, 5)
    assert topic_sums(runs, values).tolist() == [10.0, 35.0, 60.0, 85.0, 0.0]


@settings(max_examples=60, deadline=None)
@given(_runs(), st.integers(0, 2**32 - 1))
def test_predictions_computed_are_the_item_by_item_formula(
    case: tuple[TopicRuns, np.ndarray, np.ndarray], seed: int
) -> None:
    runs, _, _ = case
    n_items, n_topics = int(runs.ptr[-1]), runs.ptr.size - 1
    topic = np.empty(n_items, dtype=np.intp)
    topic[runs.order] = np.repeat(np.arange(n_topics), runs.counts)
    rng = np.random.default_rng(seed)
    items = ItemParams.from_catalog(
        item_topic=topic,
        difficulty=rng.uniform(0.1, 0.9, n_items),
        scorable=np.ones(n_items, dtype=bool),
        is_theory=np.zeros(n_items, dtype=bool),
    )
    mean, sd = rng.normal(0, 1, n_topics), rng.uniform(0.2, 1.0, n_topics)
    computed = Predictions.compute(items, runs, mean, sd)
    assert computed.rasch
    told = Predictions.compute(items, runs, mean, sd, rasch=True)
    scale = np.sqrt(1.0 + np.pi / 8 * sd[topic] ** 2)
    expected = 1.0 / (1.0 + np.exp((items.b - mean[topic]) / scale))
    assert computed.p.tobytes() == told.p.tobytes()
    np.testing.assert_allclose(computed.p, expected, rtol=1e-12)
