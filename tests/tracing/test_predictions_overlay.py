"""Predictions.overlay: other values for some topics' items (a prediction-only term), with the sums
and the information carried from the predictions beneath for the other topics, the same doubles as
computing everything again from the overlaid predictions."""

from __future__ import annotations

import numpy as np

from learnloop.tracing.predictions import Predictions, TopicRuns, topic_sums
from learnloop.tracing.structure import ItemParams


def _predictions(seed: int) -> Predictions:
    rng = np.random.default_rng(seed)
    n_topics = 12
    topic = rng.integers(0, n_topics - 1, 300)  # (the last topic holds no item)
    items = ItemParams.from_catalog(
        item_topic=topic,
        difficulty=rng.uniform(0.1, 0.9, topic.size),
        scorable=rng.random(topic.size) < 0.8,
        is_theory=np.zeros(topic.size, dtype=bool),
    ).with_calibration(rng.normal(0, 1, topic.size), rng.uniform(0.5, 2.0, topic.size))
    runs = TopicRuns.of(topic, n_topics)
    return Predictions.compute(items, runs, rng.normal(0, 1, n_topics), rng.uniform(0.2, 1.0, n_topics))


def test_an_overlay_changes_its_topics_only_and_its_sums_and_information_are_computed_again_exactly() -> None:
    for seed in range(4):
        beneath = _predictions(seed)
        weights = beneath.items.scorable
        beneath.sums(weights)  # (read first, or not: the overlay's figures do not depend on it)
        topics = np.array([7, 2, 11, 5], dtype=np.intp)
        over = beneath.overlay(topics, lambda where, b=beneath: b.p[where] * 0.5)
        inside = np.isin(beneath.items.topic, topics)
        assert np.array_equal(over.p[inside], beneath.p[inside] * 0.5)
        assert np.array_equal(over.p[~inside], beneath.p[~inside])
        again = Predictions.compute(beneath.items, beneath.runs, beneath.mean, beneath.sd)
        again = Predictions(again.items, again.runs, again.mean, again.sd, over.p.copy(), rasch=again.rasch)
        assert np.array_equal(over.sums(weights), topic_sums(beneath.runs, over.p, weights))
        assert np.array_equal(over.sums(weights), again.sums(weights))
        assert np.array_equal(over.information(), again.information())
        # advanced to new beliefs, an overlay is what it overlays, advanced
        mean = beneath.mean.copy()
        mean[3] += 0.5
        assert np.array_equal(over.advance(mean, beneath.sd).p, beneath.advance(mean, beneath.sd).p)


def test_an_overlay_of_topics_without_items_is_the_predictions_themselves() -> None:
    beneath = _predictions(9)
    assert beneath.overlay(np.array([11], dtype=np.intp), lambda where: beneath.p[where]) is beneath
