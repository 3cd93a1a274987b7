"""Forgetting in the next-response protocol: the log's times reach the memory model, the term is fitted
from the training gaps, and fit_options keeps it on learners who forget and leaves it out on learners
who do not (and on a log without times)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from learnloop.datasets import ResponseLog, from_columns
from learnloop.evaluate import EngineModel, by_gap, fit_forgetting, fit_options, metrics, skill_gaps
from learnloop.tracing import DAY_SECONDS, MemoryModel

OPTIONS = {"practice_gain": 0.0, "drift": 0.0}
SMALL = {
    "grid": {"drift": (0.0, 0.02)},
    "rounds": 1,
    "refine": (),
    "topic_rates": False,
    "echo": False,
    "progress": False,
    "start": OPTIONS,
}


def simulated_log(n_learners: int, *, scale: float, seed: int, time_scale: float = 8.0) -> ResponseLog:
    """Learners of fixed ability answering 40 items of 4 skills in sessions separated by gaps from ten
    minutes to a month; P(correct) = σ(θ - b + scale · log R), R the recall of the learner's memory of
    the skill on a clock ``time_scale`` times FSRS's (scale 0: no forgetting)."""
    rng = np.random.default_rng(seed)
    memory = MemoryModel(time_scale=time_scale)
    b = np.random.default_rng(99).normal(0.0, 1.0, 40)
    columns: dict[str, list[object]] = {"u": [], "i": [], "s": [], "t": [], "c": []}
    for learner in range(n_learners):
        theta = rng.normal(0.0, 1.0)
        now = 1.6e9 + rng.uniform(0, DAY_SECONDS)
        memories: dict[int, object] = {}
        for _ in range(8):
            now += float(np.exp(rng.uniform(np.log(600.0), np.log(30 * DAY_SECONDS))))
            for _ in range(int(rng.integers(4, 10))):
                now += float(rng.uniform(20.0, 120.0))
                item = int(rng.integers(0, 40))
                skill = item // 10
                mem = memories.get(skill)
                log_r = 0.0 if mem is None else float(np.log(memory.recall(mem, now)))  # type: ignore[arg-type]
                y = float(rng.random() < 1.0 / (1.0 + np.exp(-(theta - b[item] + scale * log_r))))
                memories[skill] = memory.review(mem, score=y, timestamp=now)  # type: ignore[arg-type]
                for key, value in zip(columns, (f"u{learner}", f"i{item}", f"s{skill}", now, y), strict=True):
                    columns[key].append(value)
    return from_columns(columns, learner="u", item="i", correct="c", skill="s", time="t")


def test_the_log_times_reach_the_prediction() -> None:
    log = simulated_log(200, scale=1.5, seed=3)
    train, test = log.split(0.3, seed=0)
    model = EngineModel(OPTIONS, forgetting="fsrs").fit(train)
    with_times = model.predict(test)
    untimed = dataclasses.replace(test, time=test.time[0] + 60.0 * np.arange(test.n_responses))
    minute_apart = model.predict(untimed)
    plain = EngineModel(OPTIONS).fit(train).predict(test)
    # the same answers a minute apart: almost no forgetting; with their real gaps, less predicted
    assert np.abs(minute_apart - plain).mean() < 0.003
    assert np.mean(with_times) < np.mean(plain) - 0.02
    assert metrics(test.correct, with_times)["auc"] > metrics(test.correct, plain)["auc"]


def test_fitted_forgetting_recovers_the_curve_and_predicts_better() -> None:
    log = simulated_log(300, scale=1.5, seed=4)
    train, test = log.split(0.3, seed=0)
    doc = fit_forgetting(train, options=OPTIONS)
    assert doc["time_scale"] in (4.0, 8.0, 16.0)
    assert 1.0 < doc["scale"] < 2.2  # the ability is estimated online, not known: a looser bound than in tracing
    plain = EngineModel(OPTIONS).fit(train).predict(test)
    model = EngineModel(OPTIONS, forgetting="fitted").fit(train)
    assert model.forgetting_ is not None and model.forgetting_["scale"] == pytest.approx(doc["scale"])
    fitted = model.predict(test)
    assert log_loss_of(test, fitted) < log_loss_of(test, plain) - 0.01
    rows = {r["gap"]: r for r in by_gap(test, fitted)}
    rows_plain = {r["gap"]: r for r in by_gap(test, plain)}
    assert rows[">= 1 week"]["ece"] < rows_plain[">= 1 week"]["ece"]
    assert rows["all"]["n"] == test.n_responses


def log_loss_of(log: ResponseLog, p: np.ndarray) -> float:
    return metrics(log.correct, p)["log_loss"]


def test_fit_options_keeps_forgetting_only_where_learners_forget() -> None:
    forget = fit_options(simulated_log(300, scale=1.5, seed=5), **SMALL)  # type: ignore[arg-type]
    assert forget.forgetting == "fitted"
    assert {"forgetting": "fsrs"} in [t for t, _ in forget.tried]
    assert forget.model().forgetting == "fitted"
    steady = fit_options(simulated_log(300, scale=0.0, seed=6), **SMALL)  # type: ignore[arg-type]
    assert steady.forgetting is None
    assert [t for t, _ in steady.tried if "forgetting" in t] == [{"forgetting": "fsrs"}, {"forgetting": "fitted"}]


def test_a_log_without_times_is_not_offered_forgetting() -> None:
    log = simulated_log(60, scale=1.5, seed=7)
    untimed = dataclasses.replace(log, timed=False)
    fit = fit_options(untimed, **SMALL)  # type: ignore[arg-type]
    assert fit.forgetting is None and not [t for t, _ in fit.tried if "forgetting" in t]
    with pytest.raises(ValueError, match="no times"):
        fit_forgetting(untimed)


def test_skill_gaps_are_the_days_since_the_previous_answer_on_the_skill() -> None:
    day = DAY_SECONDS
    log = from_columns(
        {
            "u": ["a", "a", "a", "b"],
            "i": ["x", "y", "x", "x"],
            "s": ["k", "m", "k", "k"],
            "t": [0.0, day, 3 * day, 0.0],
            "c": [1, 0, 1, 1],
        },
        learner="u",
        item="i",
        correct="c",
        skill="s",
        time="t",
    )
    gaps = skill_gaps(log)
    assert np.isnan(gaps[[0, 1, 3]]).all() and gaps[2] == pytest.approx(3.0)
