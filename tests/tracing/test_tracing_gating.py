"""Prerequisite gating: the practice gain of an answer scaled by its topic's readiness."""

from __future__ import annotations

import math

import numpy as np
import pytest

from learnloop.tracing import Event, ItemParams, LearnerModel, TopicStructure
from learnloop.tracing.replay import trace, trace_many

# topic 1 needs topic 0; items 0-1 on topic 0, item 2 on topic 1
TOPICS = TopicStructure.from_arrays([-1, -1], prerequisites=[(0, 1)])
ITEMS = ItemParams.from_catalog(
    item_topic=[0, 0, 1], difficulty=[0.3, 0.6, 0.5], scorable=[True] * 3, is_theory=[False] * 3
)


def _model(**options: object) -> LearnerModel:
    return LearnerModel(TOPICS, ITEMS, practice_gain=0.3, prerequisite_weight=0.0, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("hierarchy", ["nested", "additive"])
def test_the_gain_on_a_topic_is_scaled_by_its_prerequisites_predicted_success(hierarchy: str) -> None:
    gated, plain = _model(prerequisite_gating=2.0, hierarchy=hierarchy), _model(hierarchy=hierarchy)
    answer = Event(item=2, kind="attempt", score=1.0, timestamp=0.0)
    before = plain.topic_beliefs(plain.new_state())[0][0]  # the belief of topic 0 before the answer
    mean_b = float(np.mean(ITEMS.b[:2]))
    ready = (1.0 / (1.0 + math.exp(-(before - mean_b)))) ** 2.0
    got = gated.update(gated.new_state(), answer).ability[1, 0]
    want = plain.update(plain.new_state(), answer).ability[1, 0]
    assert 0.0 < ready < 1.0
    assert got == pytest.approx(want - 0.3 + 0.3 * ready, abs=1e-12)
    # a topic without prerequisites learns as without gating; so does an answer that is not practice
    first = Event(item=0, kind="attempt", score=1.0, timestamp=0.0)
    assert (
        gated.update(gated.new_state(), first).ability.tolist()
        == plain.update(plain.new_state(), first).ability.tolist()
    )
    test = Event(item=2, kind="attempt", score=1.0, timestamp=0.0, practice=False)
    assert (
        gated.update(gated.new_state(), test).ability.tolist() == plain.update(plain.new_state(), test).ability.tolist()
    )


def test_a_mastered_prerequisite_lets_the_gain_through() -> None:
    gated, plain = _model(prerequisite_gating=2.0), _model()
    practised = [Event(item=k % 2, kind="attempt", score=1.0, timestamp=float(k)) for k in range(30)]
    answer = Event(item=2, kind="attempt", score=1.0, timestamp=100.0)
    early = (
        gated.update(gated.new_state(), answer).ability[1, 0] - plain.update(plain.new_state(), answer).ability[1, 0]
    )
    late = (
        gated.update_many(gated.new_state(), [*practised, answer]).ability[1, 0]
        - plain.update_many(plain.new_state(), [*practised, answer]).ability[1, 0]
    )
    assert early < late < 0.0
    assert late > -0.01  # topic 0 well above its difficulty: nearly the whole gain


def test_no_gating_and_a_gating_of_zero_are_the_model_without_the_setting() -> None:
    rng = np.random.default_rng(3)
    items, scores = rng.integers(0, 3, 40), rng.integers(0, 2, 40).astype(np.float64)
    want = trace(_model(), items, scores)
    for gating in (None, 0.0):
        model = _model(prerequisite_gating=gating)
        assert model._gating_tables is None
        assert trace(model, items, scores).tobytes() == want.tobytes()
        assert (
            trace_many(model, items, scores, [25, 15]).tobytes()
            == trace_many(_model(), items, scores, [25, 15]).tobytes()
        )


def test_a_negative_gating_is_refused() -> None:
    with pytest.raises(ValueError, match="prerequisite_gating must be non-negative"):
        _model(prerequisite_gating=-0.5)
