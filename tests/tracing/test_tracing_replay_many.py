"""trace_many (learners replayed side by side) against trace (one learner at a time)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from learnloop.tracing import ItemParams, LearnerModel, TopicStructure, replay
from learnloop.tracing.replay import trace, trace_many


@st.composite
def models(draw: Any) -> LearnerModel:
    n_topics = draw(st.integers(1, 6))
    # a forest: each topic's parent is an earlier topic or none
    parent = [-1] + [draw(st.integers(-1, t - 1)) for t in range(1, n_topics)]
    edges = draw(st.lists(st.tuples(st.integers(0, n_topics - 1), st.integers(0, n_topics - 1)), max_size=4))
    edges = [(u, v) for u, v in edges if u != v]
    n_items = draw(st.integers(1, 8))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    items = ItemParams.from_catalog(
        item_topic=rng.integers(0, n_topics, n_items),
        difficulty=rng.uniform(0.05, 0.95, n_items),
        discrimination=rng.uniform(0.3, 2.5, n_items),
        scorable=[True] * n_items,
        is_theory=[False] * n_items,
    )
    additive = draw(st.booleans())
    per_topic = draw(st.booleans())

    def rate(scale: float) -> Any:
        return rng.uniform(-scale, scale, n_topics) if per_topic else float(rng.uniform(0.0, scale))

    return LearnerModel(
        TopicStructure.from_arrays(parent, prerequisites=edges),
        items,
        prior_var=float(rng.uniform(0.2, 3.0)),
        topic_var=float(rng.uniform(0.0, 1.0)),
        parent_weight=draw(st.sampled_from([0.0, 0.5, 1.0])),
        prerequisite_weight=draw(st.sampled_from([0.0, 0.2])),
        drift=float(rng.uniform(0.0, 0.2)),
        practice_gain=rate(0.2),
        failure_gain=rate(0.1),
        novelty=rate(1.0) if draw(st.booleans()) else 0.0,
        hierarchy="additive" if additive else "nested",
        momentum_decay=float(rng.uniform(0.0, 0.9)) if additive else 0.0,
        momentum_var=float(rng.uniform(0.0, 1.5)) if additive and draw(st.booleans()) else 0.0,
        prerequisite_gating=draw(st.sampled_from([None, 0.0, 1.5])),
    )


@st.composite
def logs(draw: Any) -> tuple[LearnerModel, np.ndarray, np.ndarray, np.ndarray]:
    model = draw(models())
    lengths = np.asarray(draw(st.lists(st.integers(0, 30), min_size=1, max_size=12)), dtype=np.intp)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = int(lengths.sum())
    items = rng.integers(0, model.items.n_items, n)
    scores = rng.integers(0, 2, n).astype(np.float64) if draw(st.booleans()) else rng.uniform(0.0, 1.0, n)
    return model, items, scores, lengths


def _one_by_one(model: LearnerModel, items: np.ndarray, scores: np.ndarray, lengths: np.ndarray, **kw: Any) -> Any:
    bounds = np.r_[0, np.cumsum(lengths)]
    parts = [trace(model, items[a:b], scores[a:b], **kw) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    return np.concatenate(parts) if parts else np.empty(0)


@settings(max_examples=150, deadline=None)
@given(logs(), st.booleans())
def test_learners_side_by_side_give_what_one_by_one_gives(log: Any, practice: bool) -> None:
    model, items, scores, lengths = log
    expected = _one_by_one(model, items, scores, lengths, practice=practice)
    got = trace_many(model, items, scores, lengths, practice=practice)
    assert np.isfinite(expected).all()
    np.testing.assert_allclose(got, expected, rtol=0.0, atol=1e-12, equal_nan=False)


@settings(max_examples=40, deadline=None)
@given(logs())
def test_every_split_between_the_two_paths_and_any_block_size_agree(log: Any) -> None:
    model, items, scores, lengths = log
    expected = _one_by_one(model, items, scores, lengths)
    saved = (replay._STEP_COST, replay._LOOP_COST, replay._BLOCK_CELLS)
    try:
        # all learners on the array path, in blocks of one or two learners
        replay._STEP_COST, replay._LOOP_COST = 0.0, 1.0
        replay._BLOCK_CELLS = model.topics.n_topics + 1
        np.testing.assert_allclose(trace_many(model, items, scores, lengths), expected, rtol=0.0, atol=1e-12)
        replay._BLOCK_CELLS = 2 * (model.topics.n_topics + 1)
        np.testing.assert_allclose(trace_many(model, items, scores, lengths), expected, rtol=0.0, atol=1e-12)
        # every learner through the per-learner loop
        replay._STEP_COST, replay._LOOP_COST = 1.0, 0.0
        np.testing.assert_allclose(trace_many(model, items, scores, lengths), expected, rtol=0.0, atol=1e-12)
    finally:
        replay._STEP_COST, replay._LOOP_COST, replay._BLOCK_CELLS = saved


def test_a_prediction_never_sees_its_own_answer_or_a_later_one() -> None:
    rng = np.random.default_rng(3)
    model = LearnerModel(
        TopicStructure.from_arrays([-1, 0, 0, 1]),
        ItemParams.from_catalog(
            item_topic=[1, 2, 3, 3], difficulty=[0.0, 0.5, -0.5, 1.0], scorable=[True] * 4, is_theory=[False] * 4
        ),
        practice_gain=0.1,
        novelty=0.5,
    )
    lengths = np.array([40, 25, 3, 60])
    items = rng.integers(0, 4, lengths.sum())
    scores = rng.integers(0, 2, lengths.sum()).astype(float)
    p = trace_many(model, items, scores, lengths)
    bounds = np.r_[0, np.cumsum(lengths)]
    for k in range(items.size):
        flipped = scores.copy()
        later = np.arange(items.size) >= k
        same = (np.arange(items.size) < bounds[np.searchsorted(bounds, k, side="right")]) & later
        flipped[same] = 1.0 - flipped[same]  # this learner's answer k and everything after it
        assert trace_many(model, items, flipped, lengths)[k] == pytest.approx(p[k], abs=1e-14)
    # and the answers do move the predictions: the check above can fail
    assert np.abs(trace_many(model, items, 1.0 - scores, lengths) - p).max() > 0.05


def test_bad_layouts_are_refused() -> None:
    model = LearnerModel(
        TopicStructure.from_arrays([-1]),
        ItemParams.from_catalog(item_topic=[0], difficulty=[0.0], scorable=[True], is_theory=[False]),
    )
    with pytest.raises(ValueError, match="add up"):
        trace_many(model, [0, 0], [1.0, 0.0], [3])
    with pytest.raises(ValueError, match="same length"):
        trace_many(model, [0, 0], [1.0], [2])
    with pytest.raises(ValueError, match="item positions"):
        trace_many(model, [0, 5], [1.0, 0.0], [2])
    assert trace_many(model, [], [], [0, 0]).size == 0
