"""Per-topic learning rates and novelty: fitted back from learners generated with known ones, by
EngineModel(topic_rates=True) and by Engine.calibrate(topic_rates=True), which stores them and uses them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from learnloop import Engine
from learnloop.datasets import from_columns
from learnloop.evaluate import EngineModel, fit_options, metrics
from learnloop.events import format_timestamp
from learnloop.tracing.replay import trace

GAIN = np.array([0.0, 0.3, 0.1, 0.2])  # after a right answer, per topic
FAIL = np.array([0.0, 0.05, 0.1, -0.1])  # after a wrong one
NOVELTY = np.array([0.0, 0.0, 1.0, 0.5])  # how much harder a topic is before its first answer
PER_TOPIC = 10
OPTIONS = {"practice_gain": 0.1, "drift": 0.0, "topic_var": 0.1}


def learners(n: int, seed: int) -> tuple[list[list[tuple[int, float]]], np.ndarray]:
    """Each learner answers 30 of the 40 items (10 per topic) in random order; a right answer on
    topic t lifts their ability there by GAIN[t], a wrong one by FAIL[t]; an unmet topic t is
    NOVELTY[t] harder. Returns the (item, score) runs and the item difficulties."""
    rng = np.random.default_rng(seed)
    b = np.random.default_rng(99).normal(0.0, 1.0, GAIN.size * PER_TOPIC)
    runs = []
    for _ in range(n):
        theta = rng.normal(0.0, 1.0) + rng.normal(0.0, 0.3, GAIN.size)
        met = np.zeros(GAIN.size, dtype=bool)
        run = []
        for i in rng.permutation(b.size)[:30].tolist():
            t = i // PER_TOPIC
            y = float(rng.random() < 1.0 / (1.0 + np.exp(-(theta[t] - b[i] - (0.0 if met[t] else NOVELTY[t])))))
            met[t] = True
            theta[t] += GAIN[t] if y else FAIL[t]
            run.append((i, y))
        runs.append(run)
    return runs, b


def as_log(runs: list[list[tuple[int, float]]]):
    rows: dict[str, list] = {"u": [], "i": [], "c": [], "s": []}
    for person, run in enumerate(runs):
        for i, y in run:
            rows["u"].append(person)
            rows["i"].append(f"q{i}")
            rows["c"].append(y)
            rows["s"].append(f"t{i // PER_TOPIC}")
    return from_columns(rows, learner="u", item="i", correct="c", skill="s")


def test_engine_model_fits_the_rates_back_and_predicts_better_with_them() -> None:
    train, valid = as_log(learners(600, seed=0)[0]), as_log(learners(300, seed=1)[0])
    model = EngineModel(OPTIONS, topic_rates=True).fit(train)
    topic_of = dict(zip(train.skill_ids, train.catalog_topic_ids, strict=True))
    fitted = [model.topic_rates_[topic_of[f"t{t}"]] for t in range(GAIN.size)]
    assert np.abs([f["practice_gain"] for f in fitted] - GAIN).max() < 0.1
    assert np.abs([f["failure_gain"] for f in fitted] - FAIL).max() < 0.1
    # items calibrated statically take in part of the learning of the fast-learning topic 1, which the
    # fit then reads partly as novelty (with the true items it recovers all three more closely:
    # tests/tracing/test_tracing_topic_rates.py)
    novelty = np.array([f["novelty"] for f in fitted])
    assert np.abs(novelty - NOVELTY).max() < 0.45 and int(np.argmax(novelty)) == 2
    shared = EngineModel(OPTIONS).fit(train)
    assert shared.topic_rates_ == {}
    loss_rates = metrics(valid.correct, model.predict(valid))["log_loss"]
    loss_shared = metrics(valid.correct, shared.predict(valid))["log_loss"]
    assert loss_rates < loss_shared - 0.003
    # fit_options tries them on its folds, after the settings and the item refinement, and keeps them here
    fit = fit_options(
        train, start=OPTIONS, grid={"practice_gain": (0.1,)}, folds=2, progress=False, refine=(), echo=False
    )
    assert [opts for opts, _ in fit.tried][-1] == {"topic_rates": True}
    assert fit.topic_rates is True
    assert (
        fit_options(train, start=OPTIONS, grid={}, folds=2, progress=False, refine=(), topic_rates=False).topic_rates
        is False
    )


def _engine(runs: list[list[tuple[int, float]]]) -> Engine:
    engine = Engine(seed=1, learner_options=OPTIONS)
    n_items = GAIN.size * PER_TOPIC
    engine.upsert_items(
        [{"item_id": f"q{i}", "display_name": f"q{i}", "scorable": True, "difficulty": 0.5} for i in range(n_items)]
    )
    topics = [
        {
            "topic_id": f"t{t}",
            "display_name": f"T{t}",
            "item_refs": [{"item_id": f"q{i}"} for i in range(t * PER_TOPIC, (t + 1) * PER_TOPIC)],
        }
        for t in range(GAIN.size)
    ]
    engine.upsert_catalog({"catalog_id": "c", "display_name": "C", "topics": topics})
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for person, run in enumerate(runs):
        events = [
            {
                "type": "attempt",
                "item_id": f"q{i}",
                "catalog_id": "c",
                "timestamp": format_timestamp(start + timedelta(minutes=k)),
                "score": y,
            }
            for k, (i, y) in enumerate(run)
        ]
        engine.upsert_events(f"u{person}", events)
    return engine


def test_engine_calibrate_stores_the_fitted_rates_and_its_learner_model_uses_them() -> None:
    runs, _ = learners(400, seed=2)
    engine = _engine(runs)
    engine.calibrate("c")
    shared = engine.catalog_model("c").model
    assert shared.practice_gain == pytest.approx(0.1)  # no per-topic values without topic_rates
    engine.calibrate("c", topic_rates=True)
    cm = engine.catalog_model("c")
    topic = [cm.index.topic_ids.index(f"t{t}") for t in range(GAIN.size)]
    gain, fail, novelty = (
        np.asarray(v)[topic] for v in (cm.model.practice_gain, cm.model.failure_gain, cm.model.novelty)
    )
    assert np.abs(gain - GAIN).max() < 0.1 and np.abs(fail - FAIL).max() < 0.1
    assert np.abs(novelty - NOVELTY).max() < 0.45 and int(np.argmax(novelty)) == 2  # as EngineModel's, above
    # the catalog's model predicts with them: a learner's P(correct) through the engine is the
    # replay with the per-topic values, not the replay with the shared ones
    run = runs[0]
    positions = [cm.index.position(f"q{i}") for i, _ in run]
    scores = [y for _, y in run]
    last = run[-1][0]
    with_rates = trace(cm.model, positions + [cm.index.position(f"q{last}")], scores + [0.0])[-1]
    without = trace(shared, positions + [cm.index.position(f"q{last}")], scores + [0.0])[-1]
    got = engine.predict("u0", "c", [f"q{last}"])[f"q{last}"]
    assert got == pytest.approx(with_rates, abs=1e-9)
    assert abs(with_rates - without) > 1e-3
    # on new learners the stored rates predict better than the shared values
    fresh = learners(200, seed=3)[0]
    y = np.concatenate([[s for _, s in r] for r in fresh])

    def loss(model) -> float:
        p = np.concatenate([trace(model, [cm.index.position(f"q{i}") for i, _ in r], [s for _, s in r]) for r in fresh])
        return float(metrics(y, p)["log_loss"])

    assert loss(cm.model) < loss(shared) - 0.003
    # a calibration without them drops them
    engine.calibrate("c")
    assert engine.catalog_model("c").model.practice_gain == pytest.approx(0.1)
