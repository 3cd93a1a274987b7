"""The compiled replay gives the predictions the scalar replay gives.

:func:`learnloop.tracing.replay.trace` and :func:`~learnloop.tracing.replay.trace_many` run the
compiled loop ``runs`` of ``tracing/_kernel.py`` when numba is installed; the scalar loop (and the
learners side by side of ``trace_many``) stays the reference. Random runs over random catalogs
(nested and additive hierarchies, prerequisites, momentum, novelty, gains, prerequisite gating,
answers given in another topic, a start from an earlier state) must agree to float rounding.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from learnloop.tracing import Event, ItemParams, LearnerModel, TopicStructure, replay

pytestmark = pytest.mark.skipif(replay._compiled() is None, reason="numba (extra 'fast') is not installed")

_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_OPTIONS = [
    {},
    {"prerequisite_weight": 0.0, "parent_weight": 0.5, "topic_var": 0.0},
    {"novelty": 0.7, "practice_gain": 0.1, "failure_gain": -0.05, "drift": 0.05},
    {"practice_gain": 0.1, "prerequisite_gating": 2.0},
    {"hierarchy": "additive", "novelty": 0.3, "practice_gain": 0.05},
    {"hierarchy": "additive", "momentum_var": 0.8, "momentum_decay": 0.6, "prerequisite_gating": 1.0},
]


def _model(seed: int, options: dict) -> LearnerModel:
    rng = np.random.default_rng(seed)
    parent = [-1, 0, 0, 1, 1, 2, 2]
    prerequisites = [(1, 2), (3, 4), (5, 6)] if seed % 2 else []
    n_items = 30
    items = ItemParams.from_catalog(
        item_topic=rng.integers(0, len(parent), n_items),
        difficulty=rng.uniform(0.05, 0.95, n_items),
        scorable=np.ones(n_items, dtype=bool),
        is_theory=np.zeros(n_items, dtype=bool),
        discrimination=rng.uniform(0.5, 2.0, n_items),
    )
    return LearnerModel(TopicStructure.from_arrays(parent, prerequisites), items, **options)


def _scalar(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replay, "_COMPILED", False)


@_SETTINGS
@given(seed=st.integers(0, 10_000), which=st.integers(0, len(_OPTIONS) - 1), practice=st.booleans())
def test_one_run_compiled_equals_the_scalar_loop(seed: int, which: int, practice: bool) -> None:
    model = _model(seed, _OPTIONS[which])
    rng = np.random.default_rng(seed + 1)
    n = int(rng.integers(1, 200))
    items = rng.integers(0, model.items.n_items, n)
    scores = rng.choice([0.0, 1.0, 0.5, 0.25], n)
    topics = np.where(rng.random(n) < 0.2, rng.integers(0, model.topics.n_topics, n), model.items.topic[items])
    start = model.update_many(
        model.new_state(),
        [Event(item=int(i), kind="attempt", score=1.0, timestamp=float(k)) for k, i in enumerate(items[:5])],
    )
    compiled = replay.trace(model, items, scores, topics=topics, practice=practice, state=start)
    with pytest.MonkeyPatch.context() as patch:
        _scalar(patch)
        reference = replay.trace(model, items, scores, topics=topics, practice=practice, state=start)
    np.testing.assert_allclose(compiled, reference, rtol=0, atol=1e-12)


@_SETTINGS
@given(seed=st.integers(0, 10_000), which=st.integers(0, len(_OPTIONS) - 1))
def test_many_runs_compiled_equal_the_side_by_side_replay(seed: int, which: int) -> None:
    model = _model(seed, _OPTIONS[which])
    rng = np.random.default_rng(seed + 2)
    lengths = rng.integers(0, 60, int(rng.integers(1, 12)))
    lengths[0] = max(int(lengths[0]), 1)
    items = rng.integers(0, model.items.n_items, int(lengths.sum()))
    scores = rng.integers(0, 2, items.size).astype(np.float64)
    compiled = replay.trace_many(model, items, scores, lengths)
    with pytest.MonkeyPatch.context() as patch:
        _scalar(patch)
        reference = replay.trace_many(model, items, scores, lengths)
        one_by_one = [replay.trace(model, items[a : a + n], scores[a : a + n]) for a, n in zip(np.cumsum(lengths) - lengths, lengths, strict=True)]  # fmt: skip
    np.testing.assert_allclose(compiled, reference, rtol=0, atol=1e-12)
    np.testing.assert_allclose(compiled, np.concatenate(one_by_one), rtol=0, atol=1e-12)


def test_the_compiled_replay_refuses_what_it_cannot_read() -> None:
    model = _model(0, {})
    with pytest.raises(ValueError, match="item positions"):
        replay.trace(model, [0, model.items.n_items], [1.0, 0.0])
    with pytest.raises(ValueError, match="topic indices"):
        replay.trace(model, [0, 1], [1.0, 0.0], topics=[0, model.topics.n_topics])
    with pytest.raises(ValueError, match="same length"):
        replay.trace(model, [0, 1], [1.0])
    with pytest.raises(ValueError, match="item positions"):
        replay.trace_many(model, [0, -1], [1.0, 0.0], [2])
