"""The forgetting term: the recall traced along a log equals the scalar memory model's; on simulated
answers with a known forgetting curve the fit recovers its clock scale and weight; without forgetting it
fits a weight of about 0; applied to a learner state at a time it reads the state's memories."""

from __future__ import annotations

import numpy as np
import pytest

from learnloop.tracing import (
    DAY_SECONDS,
    Event,
    Forgetting,
    ItemParams,
    LearnerModel,
    MemoryModel,
    TopicStructure,
    memory_trace,
)
from learnloop.tracing.retention import fit_forgetting


def test_memory_trace_equals_the_scalar_updates() -> None:
    rng = np.random.default_rng(0)
    n = 2000
    group = rng.integers(0, 30, n)
    time = np.cumsum(rng.exponential(30000.0, n))
    score = rng.choice([0.0, 0.6, 1.0], n)
    for scale in (1.0, 5.0):
        model = MemoryModel(time_scale=scale)
        log_r, gap = memory_trace(model, group, time, score)
        memories: dict[int, object] = {}
        expected, expected_gap = np.zeros(n), np.full(n, np.nan)
        for k in range(n):
            g = int(group[k])
            if g in memories:
                expected[k] = np.log(model.recall(memories[g], time[k]))  # type: ignore[arg-type]
                expected_gap[k] = (time[k] - memories[g].last_review) / DAY_SECONDS  # type: ignore[attr-defined]
            memories[g] = model.review(memories.get(g), score=float(score[k]), timestamp=float(time[k]))  # type: ignore[arg-type]
        np.testing.assert_allclose(log_r, expected, atol=1e-12)
        np.testing.assert_allclose(gap, expected_gap, atol=1e-9)
    assert (log_r < 0.0).sum() > n // 2  # the check reads real recalls, not zeros


def test_time_scale_makes_memories_decay_faster() -> None:
    first = MemoryModel().review(None, score=1.0, timestamp=0.0)
    week = 7 * DAY_SECONDS
    assert MemoryModel(time_scale=4.0).recall(first, week) < MemoryModel().recall(first, week) < 1.0
    with pytest.raises(ValueError, match="time_scale"):
        MemoryModel(time_scale=0.0)


def simulate(n_learners: int, *, scale: float, time_scale: float, seed: int) -> dict[str, np.ndarray]:
    """Learners of fixed ability answering items of 4 topics in sessions separated by gaps from minutes to
    weeks; P(correct) = σ(θ - b + scale · log R), R the recall of the learner's memory of the topic on a
    clock ``time_scale`` times FSRS's. Returns the answers with their true logit without forgetting."""
    rng = np.random.default_rng(seed)
    memory = MemoryModel(time_scale=time_scale)
    b = rng.normal(0.0, 1.0, 40)
    rows: dict[str, list[float]] = {k: [] for k in ("learner", "item", "topic", "time", "correct", "z")}
    for learner in range(n_learners):
        theta = rng.normal(0.0, 1.0)
        now = 1.6e9 + rng.uniform(0, DAY_SECONDS)
        memories: dict[int, object] = {}
        for _ in range(8):  # sessions
            now += float(np.exp(rng.uniform(np.log(600.0), np.log(30 * DAY_SECONDS))))
            for _ in range(int(rng.integers(4, 10))):
                now += float(rng.uniform(20.0, 120.0))
                item = int(rng.integers(0, 40))
                topic = item // 10
                mem = memories.get(topic)
                log_r = 0.0 if mem is None else float(np.log(memory.recall(mem, now)))  # type: ignore[arg-type]
                z = theta - b[item]
                y = float(rng.random() < 1.0 / (1.0 + np.exp(-(z + scale * log_r))))
                memories[topic] = memory.review(mem, score=y, timestamp=now)  # type: ignore[arg-type]
                for key, value in zip(rows, (learner, item, topic, now, y, z), strict=True):
                    rows[key].append(value)
    return {k: np.asarray(v) for k, v in rows.items()}


def fitted(data: dict[str, np.ndarray], **options: object) -> Forgetting:
    topic = data["topic"].astype(np.intp)
    group = data["learner"].astype(np.int64) * 4 + topic
    return fit_forgetting(data["z"], data["correct"], group, data["time"], topic, n_topics=4, **options)  # type: ignore[arg-type]


def test_fit_recovers_a_known_forgetting_curve() -> None:
    data = simulate(600, scale=1.5, time_scale=8.0, seed=1)
    fit = fitted(data)
    assert fit.time_scale == 8.0
    assert fit.scale == pytest.approx(1.5, abs=0.2)
    assert len(fit.topic_scale) == 4
    assert np.allclose(fit.topic_scale, 1.5, atol=0.35)
    shared = fitted(data, per_topic=False)
    assert shared.topic_scale == () and shared.scale == fit.scale


def test_fit_on_answers_without_forgetting_weighs_recall_about_zero() -> None:
    data = simulate(600, scale=0.0, time_scale=8.0, seed=2)
    fit = fitted(data)
    assert fit.scale < 0.1
    assert np.all(np.asarray(fit.topic_scale or (fit.scale,)) < 0.15)


def test_a_fitted_term_survives_its_document() -> None:
    term = Forgetting(time_scale=4.0, scale=0.8, topic_scale=(0.8, 1.2, 0.0))
    doc = term.to_doc(["a", "b", "c"])
    assert doc["topic_scale"] == {"b": 1.2, "c": 0.0}
    back = Forgetting.from_doc(doc, ["a", "b", "c"])
    assert back == term
    assert Forgetting.from_doc(doc, ["c", "new"]).topic_scale == (0.0, 0.8)  # topics by id; a new one shares β


def test_predict_state_lowers_the_prediction_with_the_gap() -> None:
    term = Forgetting(time_scale=4.0, scale=1.0)
    topics = TopicStructure.from_arrays([-1, -1])
    items = ItemParams.from_catalog(
        item_topic=[0, 1], difficulty=[0.5, 0.5], scorable=[True, True], is_theory=[False, False]
    )
    model = LearnerModel(topics, items, memory_model=term.memory_model())
    state = model.update(model.new_state(), Event(item=0, kind="attempt", score=1.0, timestamp=0.0))
    p = model.predict(state)
    soon = term.predict_state(model, state, 60.0)
    later = term.predict_state(model, state, 30 * DAY_SECONDS)
    assert soon[0] == pytest.approx(p[0], abs=1e-3) and later[0] < soon[0] - 0.1
    assert soon[1] == later[1] == pytest.approx(p[1])  # a topic never reviewed has no term
    assert term.predict_state(model, state, 30 * DAY_SECONDS, [0])[0] == pytest.approx(later[0])


def test_predict_by_topic_is_predict_from_per_topic_odds() -> None:
    """The engine's form (one factor per topic, no logarithm per item) gives predict's figures."""
    rng = np.random.default_rng(2)
    n_topics = 9
    log_recall = np.log(rng.uniform(0.05, 1.0, n_topics))
    log_recall[[1, 6]] = np.nan  # topics without a memory: no term
    topic = rng.integers(0, n_topics, 500)
    p = rng.uniform(0.0, 1.0, 500)
    p[:3] = (0.0, 1.0, 0.5)
    for term in (Forgetting(), Forgetting(time_scale=4.0, scale=0.3, topic_scale=tuple(rng.uniform(0, 2, n_topics)))):
        odds = term.odds_by_topic(log_recall)
        assert np.array_equal(odds[[1, 6]], [1.0, 1.0])
        got = term.predict_by_topic(p, topic, odds)
        assert got == pytest.approx(term.predict(p, log_recall[topic], topic), abs=1e-11)
        assert np.array_equal(got[topic == 1], p[topic == 1])
