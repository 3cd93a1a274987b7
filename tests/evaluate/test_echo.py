"""The answer echo: fitted on learners whose multi-topic answers are logged as consecutive copied rows (large
weights on those pairs, higher AUC) and on learners without copies (weights near 0); never from a response's
own answer or a later one; stored by Engine.calibrate(echo=True) and applied by Engine.predict."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from learnloop import Engine
from learnloop.datasets import from_columns
from learnloop.evaluate import EngineModel, fit_options, metrics
from learnloop.events import format_timestamp
from learnloop.tracing.echo import Echo, fit_echo, previous_answers

N_TOPICS, PER_TOPIC = 4, 10
OPTIONS = {"practice_gain": 0.05, "drift": 0.0, "topic_var": 0.3}


def learners(n: int, seed: int, copies: bool) -> list[list[tuple[str, str, float]]]:
    """Each learner answers 20 of the 40 items in random order, ability per topic around their own.
    Items of topic 0 are tagged with topic 1 too: with ``copies`` such an answer is logged twice, as
    the row on topic 0 then a copy ``c{i}`` on topic 1 with the same answer (as the DKVMN files write
    a multi-skill problem). Returns each learner's (item, topic, score) rows."""
    rng = np.random.default_rng(seed)
    b = np.random.default_rng(7).normal(0.0, 1.0, N_TOPICS * PER_TOPIC)
    runs = []
    for _ in range(n):
        theta = rng.normal(0.0, 1.0) + rng.normal(0.0, 0.5, N_TOPICS)
        run = []
        for i in rng.permutation(b.size)[:20].tolist():
            t = i // PER_TOPIC
            y = float(rng.random() < 1.0 / (1.0 + np.exp(-(theta[t] - b[i]))))
            run.append((f"q{i}", f"t{t}", y))
            if copies and t == 0:
                run.append((f"c{i}", "t1", y))
        runs.append(run)
    return runs


def as_log(runs: list[list[tuple[str, str, float]]]):
    rows: dict[str, list] = {"u": [], "i": [], "c": [], "s": [], "k": []}
    for person, run in enumerate(runs):
        for k, (item, topic, y) in enumerate(run):
            rows["u"].append(person)
            rows["i"].append(item)
            rows["c"].append(y)
            rows["s"].append(topic)
            rows["k"].append(k)
    return from_columns(rows, learner="u", item="i", correct="c", skill="s", time="k")


def pair(model: EngineModel, log, prev: str, topic: str) -> float:
    """The fitted echo weight of a (previous skill, skill) pair of the log, 0 if it has none."""
    of = dict(zip(log.skill_ids, log.catalog_topic_ids, strict=True))
    return next((w for p, t, w in model.echo_["pairs"] if (p, t) == (of[prev], of[topic])), 0.0)


def test_copied_rows_get_a_large_pair_weight_and_the_echo_lifts_the_auc() -> None:
    train, valid = as_log(learners(500, 0, copies=True)), as_log(learners(300, 1, copies=True))
    model = EngineModel(OPTIONS, echo=True).fit(train)
    switch = model.echo_["switch"]
    assert switch + pair(model, train, "t0", "t1") > 3.0  # a copy repeats the previous answer
    others = sorted(abs(switch + w) for _, _, w in model.echo_["pairs"])
    assert len(others) > 6 and others[-2] < 0.4  # the other switches are not echoes
    plain = EngineModel(OPTIONS).fit(train)
    with_echo, without = metrics(valid.correct, model.predict(valid)), metrics(valid.correct, plain.predict(valid))
    assert with_echo["auc"] > without["auc"] + 0.02
    assert with_echo["log_loss"] < without["log_loss"] - 0.02
    # the log's times are answer numbers (a second apart), not gaps: no forgetting term tried
    fit = fit_options(
        train, start=OPTIONS, grid={}, folds=2, progress=False, refine=(), topic_rates=False, forgetting=False
    )
    assert fit.tried[-1][0] == {"echo": True} and fit.echo is True


def test_without_copies_the_pair_weights_are_near_zero_and_the_echo_changes_little() -> None:
    train, valid = as_log(learners(500, 0, copies=False)), as_log(learners(300, 1, copies=False))
    model = EngineModel(OPTIONS, echo=True).fit(train)
    assert model.echo_["pairs"], "pairs seen often enough after a switch get a weight"
    switch = model.echo_["switch"]
    assert max(abs(switch + w) for _, _, w in model.echo_["pairs"]) < 0.5  # against > 3 with copies, above
    assert abs(model.echo_["same"]) < 0.3 and model.echo_["c1"] == pytest.approx(1.0, abs=0.1)
    plain = EngineModel(OPTIONS).fit(train)
    loss_echo = metrics(valid.correct, model.predict(valid))["log_loss"]
    loss_plain = metrics(valid.correct, plain.predict(valid))["log_loss"]
    assert abs(loss_echo - loss_plain) < 0.003
    fit = fit_options(train, start=OPTIONS, grid={}, folds=2, progress=False, refine=(), topic_rates=False)
    gain = fit.tried[-2][1] - fit.tried[-1][1]  # the loss before the echo minus with it
    assert fit.echo is False or gain < 0.002


def test_a_prediction_never_reads_its_own_answer_or_a_later_one() -> None:
    train, valid = as_log(learners(300, 0, copies=True)), as_log(learners(20, 1, copies=True))
    model = EngineModel(OPTIONS, echo=True).fit(train)
    p = model.predict(valid)
    for k in (0, 5, int(np.flatnonzero(valid.first)[3]) + 2, valid.n_responses - 1):
        flipped = valid.correct.copy()
        flipped[k] = 1.0 - flipped[k]
        q = model.predict(dataclasses.replace(valid, correct=flipped))
        assert np.array_equal(p[: k + 1], q[: k + 1])  # neither this response nor an earlier one moves
        if k + 1 < valid.n_responses and not valid.first[k + 1]:
            assert abs(p[k + 1] - q[k + 1]) > 1e-3  # the next one does: the echo and the model read it
    prev_topic, prev_score = previous_answers([2, 2, 1, 3], [1.0, 0.0, 1.0, 0.0], [True, False, True, False])
    assert prev_topic.tolist() == [-1, 2, -1, 1] and prev_score.tolist() == [0.0, 1.0, 0.0, 1.0]


def test_fit_echo_recovers_known_weights_and_the_doc_round_trips() -> None:
    rng = np.random.default_rng(3)
    n = 40_000
    z = rng.normal(0.0, 1.0, n)
    topic = rng.integers(0, 3, n)
    prev_topic = np.where(rng.random(n) < 0.1, -1, rng.integers(0, 3, n))
    prev_score = (rng.random(n) < 0.6).astype(float)
    truth = Echo(c0=0.2, c1=0.8, same=0.4, switch=-0.1, pairs=((0, 2, 1.5),))
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-truth.apply(z, topic, prev_topic, prev_score)))).astype(float)
    fit = fit_echo(z, y, topic, prev_topic, prev_score)
    assert (fit.c0, fit.c1, fit.same) == pytest.approx((0.2, 0.8, 0.4), abs=0.08)
    # every switch pair here is frequent, so only the switch weight plus a pair's is identified
    assert fit.switch + fit.pair_weight(0, 2) == pytest.approx(1.4, abs=0.15)
    for prev, t in ((1, 2), (2, 0), (0, 1)):
        assert fit.switch + fit.pair_weight(prev, t) == pytest.approx(-0.1, abs=0.15)
    again = Echo.from_doc(fit.to_doc(["a", "b", "c"]), ["c", "a", "b"])  # other topic order
    assert again.pair_weight(1, 0) == fit.pair_weight(0, 2)
    assert np.array_equal(Echo().apply(z, topic, prev_topic, prev_score), z)


def _engine(runs: list[list[tuple[str, str, float]]]) -> Engine:
    engine = Engine(seed=1, learner_options=OPTIONS)
    items = [f"q{i}" for i in range(N_TOPICS * PER_TOPIC)] + [f"c{i}" for i in range(PER_TOPIC)]
    engine.upsert_items([{"item_id": i, "display_name": i, "scorable": True, "difficulty": 0.5} for i in items])
    refs = {f"t{t}": [f"q{i}" for i in range(t * PER_TOPIC, (t + 1) * PER_TOPIC)] for t in range(N_TOPICS)}
    refs["t1"] += [f"c{i}" for i in range(PER_TOPIC)]
    topics = [{"topic_id": t, "display_name": t, "item_refs": [{"item_id": i} for i in ids]} for t, ids in refs.items()]
    engine.upsert_catalog({"catalog_id": "c", "display_name": "C", "topics": topics})
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for person, run in enumerate(runs):
        events = [
            {"type": "attempt", "item_id": item, "catalog_id": "c", "score": y}
            | {"timestamp": format_timestamp(start + timedelta(minutes=k))}
            for k, (item, _, y) in enumerate(run)
        ]
        engine.upsert_events(f"u{person}", events)
    return engine


def test_engine_calibrate_stores_the_echo_and_predict_applies_it_from_the_last_answer() -> None:
    engine = _engine(learners(300, 2, copies=True))
    engine.calibrate("c", echo=True)
    cm = engine.catalog_model("c")
    start = datetime(2026, 2, 1, tzinfo=UTC)
    got = {}
    for score in (1.0, 0.0):  # two new learners, the same answer history but the last score
        user = f"new{score}"
        history = [("q21", 1.0), ("q35", 0.0), ("q3", score)]
        engine.upsert_events(
            user,
            [
                {"type": "attempt", "item_id": item, "catalog_id": "c", "score": s}
                | {"timestamp": format_timestamp(start + timedelta(minutes=k))}
                for k, (item, s) in enumerate(history)
            ],
        )
        got[score] = engine.predict(user, "c", ["c3", "q5"])
        state = engine._learners.state("default", user, cm).state
        plain = cm.model.predict(state, np.asarray([cm.index.position("c3"), cm.index.position("q5")]))
        stored = engine._learners.content.echo_for("c")[1]
        assert stored is not None
        t0 = cm.index.topic_ids.index("t0")
        assert stored.pair_weight(t0, cm.index.topic_ids.index("t1")) > 3.0  # the copy after an answer on topic 0
        expected = stored.predict(plain, [cm.index.item_topic[cm.index.position(i)] for i in ("c3", "q5")], t0, score)
        assert [got[score]["c3"], got[score]["q5"]] == pytest.approx(expected.tolist(), abs=1e-12)
        assert abs(got[score]["c3"] - plain[0]) > 0.1  # the echo moved the copy's prediction
    assert got[1.0]["c3"] > 0.9 and got[0.0]["c3"] < 0.1  # the copy repeats the answer
    engine.calibrate("c")  # a calibration without the echo drops it
    assert engine._learners.content.echo_for("c")[1] is None
