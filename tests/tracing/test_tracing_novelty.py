"""The novelty of an unmet topic: the replay and the step-by-step model agree, and its effect on predictions."""

from __future__ import annotations

import numpy as np
import pytest

from learnloop.tracing import Event, ItemParams, LearnerModel, TopicStructure
from learnloop.tracing.replay import trace

# topics: 0 root, 1 and 2 children of 0, 3 child of 1; 4 root with child 5; 2 requires 1, 5 requires 3
PARENT = [-1, 0, 0, 1, -1, 4]
PREREQ = [(1, 2), (3, 5)]


def random_model(seed: int, **options: object) -> LearnerModel:
    rng = np.random.default_rng(seed)
    n_items = 12
    items = ItemParams.from_catalog(
        item_topic=rng.integers(0, len(PARENT), n_items).tolist(),
        difficulty=rng.uniform(0.1, 0.9, n_items).tolist(),
        scorable=[True] * n_items,
        is_theory=[False] * n_items,
        discrimination=rng.uniform(0.5, 2.0, n_items).tolist(),
    )
    return LearnerModel(TopicStructure.from_arrays(PARENT, PREREQ), items, **options)  # type: ignore[arg-type]


OPTIONS = [
    {"hierarchy": "nested"},
    {"hierarchy": "nested", "practice_gain": 0.05, "failure_gain": -0.02, "drift": 0.03, "topic_var": 0.4},
    {"hierarchy": "additive", "practice_gain": 0.05, "failure_gain": 0.0, "drift": 0.02},
    {"hierarchy": "additive", "momentum_var": 0.8, "momentum_decay": 0.6, "drift": 0.01, "prior_var": 0.7},
]


@pytest.mark.parametrize("novelty", [0.0, 0.4, -0.3, 1.5])
@pytest.mark.parametrize("options", OPTIONS, ids=["nested", "nested+gains", "additive+gains", "additive+momentum"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_replay_equals_updating_one_answer_at_a_time(seed: int, options: dict, novelty: float) -> None:
    model = random_model(seed, novelty=novelty, **options)
    rng = np.random.default_rng(100 + seed)
    n = 60
    items = rng.integers(0, model.items.n_items, n)
    scores = rng.choice([0.0, 1.0, 0.5, 0.25], n, p=[0.4, 0.4, 0.1, 0.1])
    # some answers are given in another topic than their item's
    topics = np.where(rng.random(n) < 0.2, rng.integers(0, len(PARENT), n), model.items.topic[items])
    fast = trace(model, items, scores, topics=topics)
    state = model.new_state()
    slow = []
    for k, (i, s, t) in enumerate(zip(items.tolist(), scores.tolist(), topics.tolist(), strict=True)):
        slow.append(float(model.predict(state, [i])[0]))
        state = model.update(state, Event(item=i, kind="attempt", score=s, timestamp=float(k), topic=t))
    np.testing.assert_allclose(fast, slow, rtol=0.0, atol=1e-12)
    # a replay from a state reached step by step continues the same way
    more = rng.integers(0, model.items.n_items, 10)
    more_scores = rng.choice([0.0, 1.0], 10)
    cont = trace(model, more, more_scores, state=state)
    for k, (i, s) in enumerate(zip(more.tolist(), more_scores.tolist(), strict=True)):
        assert float(model.predict(state, [i])[0]) == pytest.approx(cont[k], abs=1e-12)
        state = model.update(state, Event(item=i, kind="attempt", score=s, timestamp=float(n + k)))


@pytest.mark.parametrize("hierarchy", ["nested", "additive"])
def test_an_unmet_topic_is_harder_until_its_first_answer(hierarchy: str) -> None:
    plain = random_model(0, hierarchy=hierarchy)
    novel = random_model(0, hierarchy=hierarchy, novelty=0.5)
    s0 = novel.new_state()
    np.testing.assert_array_equal(s0.ability, plain.new_state().ability)
    mean_plain, sd_plain = plain.topic_beliefs(s0)
    mean_novel, sd_novel = novel.topic_beliefs(s0)
    np.testing.assert_allclose(mean_novel, mean_plain - 0.5)
    np.testing.assert_array_equal(sd_novel, sd_plain)
    item = 0
    topic = int(novel.items.topic[item])
    right = Event(item=item, kind="attempt", score=1.0, timestamp=0.0)
    # the answered topic is met: no offset any more; a right answer on a harder-looking item says more
    after_novel = novel.topic_beliefs(novel.update(s0, right))[0][topic]
    after_plain = plain.topic_beliefs(plain.update(s0, right))[0][topic]
    assert after_novel > after_plain


def test_novelty_must_be_finite() -> None:
    with pytest.raises(ValueError, match="novelty"):
        random_model(0, novelty=float("nan"))
