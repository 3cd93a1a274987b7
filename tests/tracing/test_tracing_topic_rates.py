"""Learning rates and novelty per topic: read by the replay and the step-by-step model alike, equal to the
scalar settings when every topic has the same value, and fitted back from generated learners."""

from __future__ import annotations

import numpy as np
import pytest

from learnloop.tracing import Event, ItemParams, LearnerModel, TopicStructure
from learnloop.tracing.rates import earlier_on_topic, fit_topic_rates
from learnloop.tracing.replay import trace

# topics: 0 root, 1 and 2 children of 0, 3 child of 1; 4 root with child 5; 2 requires 1, 5 requires 3
PARENT = [-1, 0, 0, 1, -1, 4]
PREREQ = [(1, 2), (3, 5)]
OPTIONS = [
    {"hierarchy": "nested"},
    {"hierarchy": "nested", "practice_gain": 0.05, "failure_gain": -0.02, "drift": 0.03, "topic_var": 0.4},
    {"hierarchy": "additive", "practice_gain": 0.05, "failure_gain": 0.0, "drift": 0.02},
    {"hierarchy": "additive", "momentum_var": 0.8, "momentum_decay": 0.6, "drift": 0.01, "prior_var": 0.7},
]
N_TOPICS = len(PARENT)


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


def _answers(model: LearnerModel, seed: int, n: int = 60) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(200 + seed)
    items = rng.integers(0, model.items.n_items, n)
    scores = rng.choice([0.0, 1.0, 0.5], n, p=[0.45, 0.45, 0.1])
    topics = np.where(rng.random(n) < 0.2, rng.integers(0, N_TOPICS, n), model.items.topic[items])
    return items, scores, topics


def _step_by_step(model: LearnerModel, items: np.ndarray, scores: np.ndarray, topics: np.ndarray) -> np.ndarray:
    state = model.new_state()
    out = []
    for k, (i, s, t) in enumerate(zip(items.tolist(), scores.tolist(), topics.tolist(), strict=True)):
        out.append(float(model.predict(state, [i])[0]))
        state = model.update(state, Event(item=i, kind="attempt", score=s, timestamp=float(k), topic=t))
    return np.asarray(out)


@pytest.mark.parametrize("options", OPTIONS, ids=["nested", "nested+gains", "additive+gains", "additive+momentum"])
@pytest.mark.parametrize("seed", [0, 1])
def test_per_topic_values_equal_to_the_scalars_give_the_same_bits(seed: int, options: dict) -> None:
    scalar = random_model(seed, novelty=0.4, **options)
    per_topic = scalar.with_rates(
        practice_gain=np.full(N_TOPICS, scalar.practice_gain),
        failure_gain=np.full(N_TOPICS, scalar.failure_gain),
        novelty=np.full(N_TOPICS, 0.4),
    )
    assert isinstance(per_topic.practice_gain, np.ndarray) and isinstance(scalar.practice_gain, float)
    items, scores, topics = _answers(scalar, seed)
    assert (
        trace(scalar, items, scores, topics=topics).tobytes()
        == trace(per_topic, items, scores, topics=topics).tobytes()
    )
    assert (
        _step_by_step(scalar, items, scores, topics).tobytes()
        == _step_by_step(per_topic, items, scores, topics).tobytes()
    )


@pytest.mark.parametrize("options", OPTIONS, ids=["nested", "nested+gains", "additive+gains", "additive+momentum"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_replay_with_per_topic_values_equals_updating_one_answer_at_a_time(seed: int, options: dict) -> None:
    rng = np.random.default_rng(seed)
    rates = {
        "practice_gain": rng.uniform(-0.05, 0.3, N_TOPICS),
        "failure_gain": rng.uniform(-0.1, 0.2, N_TOPICS),
        "novelty": np.where(rng.random(N_TOPICS) < 0.3, 0.0, rng.uniform(-0.5, 1.5, N_TOPICS)),
    }
    base = {k: v for k, v in options.items() if k not in rates}
    model = random_model(seed, **base, **rates)
    items, scores, topics = _answers(model, seed)
    fast = trace(model, items, scores, topics=topics)
    np.testing.assert_allclose(fast, _step_by_step(model, items, scores, topics), rtol=0.0, atol=1e-12)
    # and the values do act: the same answers under the scalar model predict otherwise
    scalar = random_model(seed, **base)
    assert np.abs(fast - trace(scalar, items, scores, topics=topics)).max() > 1e-3


def test_each_topic_learns_at_its_own_rate_and_is_new_by_its_own_novelty() -> None:
    items = ItemParams.from_catalog(
        item_topic=[0, 1], difficulty=[0.5, 0.5], scorable=[True, True], is_theory=[False] * 2
    )
    topics = TopicStructure.from_arrays([-1, -1])
    model = LearnerModel(topics, items, practice_gain=[0.0, 0.5], failure_gain=[0.0, -0.5], novelty=[0.0, 1.0])
    flat = LearnerModel(topics, items)
    for score in (1.0, 0.0):
        event = Event(item=0, kind="attempt", score=score, timestamp=0.0)
        event1 = Event(item=1, kind="attempt", score=score, timestamp=0.0)
        # topic 0 has no gain and no novelty: as the model without them
        assert (
            model.predict(model.update(model.new_state(), event))[0]
            == flat.predict(flat.update(flat.new_state(), event))[0]
        )
        # topic 1 moves by +0.5 after a right answer and -0.5 after a wrong one, on top of the evidence
        moved = model.topic_beliefs(model.update(model.new_state(), event1))[0][1]
        plain = LearnerModel(topics, items, novelty=[0.0, 1.0])
        expected = plain.topic_beliefs(plain.update(plain.new_state(), event1))[0][1] + (0.5 if score else -0.5)
        assert moved == pytest.approx(expected, abs=1e-12)
    # an unmet topic 1 is 1 logit harder, topic 0 is not
    mean = model.topic_beliefs(model.new_state())[0]
    assert mean[0] == 0.0 and mean[1] == -1.0


def test_settings_of_the_wrong_length_or_not_finite_are_refused() -> None:
    items = ItemParams.from_catalog(
        item_topic=[0, 1], difficulty=[0.5, 0.5], scorable=[True, True], is_theory=[False] * 2
    )
    topics = TopicStructure.from_arrays([-1, -1])
    with pytest.raises(ValueError, match="practice_gain must be one value or 2 values"):
        LearnerModel(topics, items, practice_gain=[0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="novelty must be finite"):
        LearnerModel(topics, items, novelty=float("nan"))
    with pytest.raises(ValueError, match="failure_gain must be finite"):
        LearnerModel(topics, items, failure_gain=[0.1, float("inf")])


def test_earlier_answers_on_the_same_topic_are_counted_per_learner() -> None:
    learner = [0, 0, 0, 0, 1, 1, 0]
    topic = [2, 2, 3, 2, 2, 2, 3]
    scores = [1.0, 0.0, 1.0, 0.5, 0.0, 1.0, 0.0]
    right, wrong = earlier_on_topic(learner, topic, scores)
    assert right.tolist() == [0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0]
    assert wrong.tolist() == [0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0]


def _generated(seed: int, gain: np.ndarray, fail: np.ndarray, novelty: np.ndarray, n_learners: int = 600):
    """Learners answering 30 of 40 items (10 per topic) in random order; a right answer on topic t lifts
    their ability there by gain[t], a wrong one by fail[t]; an unmet topic is novelty[t] harder."""
    rng = np.random.default_rng(seed)
    n_topics, per = gain.size, 10
    item_topic = np.repeat(np.arange(n_topics), per)
    b = rng.normal(0.0, 1.0, item_topic.size)
    runs = []
    for _ in range(n_learners):
        theta = rng.normal(0.0, 1.0) + rng.normal(0.0, 0.3, n_topics)
        met = np.zeros(n_topics, dtype=bool)
        positions, scores = [], []
        for i in rng.permutation(item_topic.size)[:30].tolist():
            t = item_topic[i]
            z = theta[t] - b[i] - (0.0 if met[t] else novelty[t])
            y = float(rng.random() < 1.0 / (1.0 + np.exp(-z)))
            met[t] = True
            theta[t] += gain[t] if y else fail[t]
            positions.append(i)
            scores.append(y)
        runs.append((positions, scores))
    items = ItemParams.from_catalog(
        item_topic=item_topic, difficulty=1.0 / (1.0 + np.exp(-b)), scorable=[True] * b.size, is_theory=[False] * b.size
    )
    return items, runs


@pytest.mark.parametrize("hierarchy", ["nested", "additive"])
def test_the_fit_recovers_per_topic_rates_of_generated_learners(hierarchy: str) -> None:
    gain, fail = np.array([0.0, 0.3, 0.1, 0.2]), np.array([0.0, 0.05, 0.1, -0.1])
    novelty = np.array([0.0, 0.0, 1.0, 0.5])
    items, runs = _generated(0, gain, fail, novelty)
    model = LearnerModel(
        TopicStructure.from_arrays([-1] * 4), items, hierarchy=hierarchy, practice_gain=0.1, drift=0.0, topic_var=0.1
    )
    fit = fit_topic_rates(model, runs)
    assert fit.responses.sum() == 600 * 30
    assert np.abs(fit.practice_gain - gain).max() < 0.06
    assert np.abs(fit.failure_gain - fail).max() < 0.06
    assert np.abs(fit.novelty - novelty).max() < 0.15
    # the fitted values predict the learners better than the one shared value they started from
    rated = model.with_rates(**fit.as_options())

    def loss(m: LearnerModel) -> float:
        p = np.concatenate([trace(m, pos, sc) for pos, sc in runs])
        y = np.concatenate([sc for _, sc in runs])
        return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))

    assert loss(rated) < loss(model) - 0.003
