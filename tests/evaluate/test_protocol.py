"""The next-response protocol: no response predicted from its own answer or a later one; the
engine's model replayed fast and exactly; fitted parameters recover known truth."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from learnloop.datasets import ResponseLog, align, from_columns, read_item_skills, read_three_line
from learnloop.evaluate import BKTModel, EngineModel, GlobalMean, ItemMean, SkillMean, evaluate, metrics, reliability
from learnloop.sim import generate_bkt, generate_irt
from learnloop.tracing import Event

DATA = Path(__file__).parents[1] / "data"
MODELS = [GlobalMean, SkillMean, ItemMean, BKTModel, EngineModel]


def statics() -> tuple[ResponseLog, ResponseLog]:
    log = read_three_line(DATA / "statics_dkvmn_test_head.csv", item_skills=read_item_skills(
        DATA / "statics_qid_sid_sname.tsv"))  # fmt: skip
    return log.split(0.25, seed=0)


def changed_after(log: ResponseLog, row: int) -> ResponseLog:
    """``log`` with every answer from ``row`` on (of that learner) flipped."""
    flipped = log.correct.copy()
    same = (log.learner == log.learner[row]) & (np.arange(log.n_responses) >= row)
    flipped[same] = 1.0 - flipped[same]
    return replace(log, correct=flipped)


@pytest.mark.parametrize("make", MODELS, ids=lambda m: m.__name__)
def test_no_prediction_sees_its_own_answer_or_a_later_one(make: type) -> None:
    train, test = align(*statics())
    model = make().fit(train)
    before = model.predict(test)
    rng = np.random.default_rng(0)
    for row in rng.choice(test.n_responses, size=5, replace=False).tolist():
        after = model.predict(changed_after(test, row))
        # the prediction of `row` and of everything before it is unchanged
        np.testing.assert_array_equal(after[: row + 1], before[: row + 1])


@pytest.mark.parametrize(
    "extra",
    [
        {"hierarchy": "nested"},
        {"hierarchy": "additive"},
        {"hierarchy": "additive", "momentum_decay": 0.7, "momentum_var": 0.5},
    ],
    ids=["nested", "additive", "additive+momentum"],
)
def test_the_engine_model_replay_equals_updating_the_engine_model_one_answer_at_a_time(extra: dict) -> None:
    train, test = align(*statics())
    options = {"practice_gain": 0.05, "failure_gain": -0.02, "drift": 0.03, **extra}
    model = EngineModel(options).fit(train)
    fast = model.predict(test)
    cm = model.catalog_model(test)
    slow = []
    for learner in np.unique(test.learner)[:3].tolist():
        state = cm.model.new_state()
        rows = np.flatnonzero(test.learner == learner)
        for k, row in enumerate(rows.tolist()):
            position = cm.index.position(test.catalog_item_ids[test.item[row]])
            slow.append(float(cm.model.predict(state, [position])[0]))
            event = Event(item=position, kind="attempt", score=float(test.correct[row]), timestamp=float(k))
            state = cm.model.update(state, event)
    np.testing.assert_allclose(fast[: len(slow)], slow, atol=1e-12)


def test_the_report_ranks_what_knows_more_higher_on_data_with_known_truth() -> None:
    data = generate_irt(400, 30, seed=4)
    log = from_columns({"u": data.person, "i": data.item, "c": data.score}, learner="u", item="i", correct="c")
    train, test = log.split(0.25, seed=1)
    report = evaluate([GlobalMean(), ItemMean(), EngineModel()], train, test, label="irt")
    assert report["global mean"].auc == pytest.approx(0.5)
    # item difficulties and the learner's ability both matter: the engine's model (both) beats item means
    assert report["learnloop engine model"].auc > report["per-item mean"].auc + 0.05
    assert report["learnloop engine model"].responses_per_second > 10_000
    assert "| learnloop engine model |" in str(report)
    assert {r["model"] for r in report.rows()} == {"global mean", "per-item mean", "learnloop engine model"}
    # calibrated difficulties recover the generating ones
    fitted = np.array([report_b for report_b in EngineModel().fit(train).b_.values()])
    assert fitted.size == 30
    truth = {str(i): b for i, b in enumerate(data.b)}
    keys = EngineModel().fit(train).b_
    assert np.corrcoef([keys[k] for k in keys], [truth[k] for k in keys])[0, 1] > 0.95


def test_bkt_model_recovers_generating_parameters_per_skill() -> None:
    data = generate_bkt(600, 3, 15, seed=2)
    log = from_columns({"u": data.student, "s": data.skill, "c": data.correct}, learner="u", item="s", correct="c")
    model = BKTModel(n_restarts=3, seed=0).fit(log)
    assert model.bkt is not None
    order = [log.skill_ids.index(str(k)) for k in range(3)]
    np.testing.assert_allclose(model.bkt.params_[order, :4], data.true_params[:, :4], atol=0.08)


def test_metrics_and_reliability_on_known_values() -> None:
    y = np.array([0.0, 0.0, 1.0, 1.0])
    p = np.array([0.1, 0.4, 0.35, 0.8])
    m = metrics(y, p)
    assert m["auc"] == pytest.approx(0.75)
    assert m["rmse"] == pytest.approx(np.sqrt(np.mean((y - p) ** 2)))
    mean_p, rate, count = reliability(y, p, n_bins=2)
    assert mean_p.tolist() == pytest.approx([(0.1 + 0.4 + 0.35) / 3, 0.8])
    assert rate.tolist() == pytest.approx([1 / 3, 1.0]) and count.tolist() == [3.0, 1.0]


def test_bkt_bound_chosen_on_folds_is_not_one_that_clips_the_generating_guess() -> None:
    params = np.array([[0.3, 0.15, 0.42, 0.1, 0.0], [0.4, 0.2, 0.45, 0.08, 0.0]])
    data = generate_bkt(500, 2, 15, params=params, seed=3)
    log = from_columns({"u": data.student, "s": data.skill, "c": data.correct}, learner="u", item="s", correct="c")
    model = BKTModel.chosen(log, bounds=(0.3, 0.5, 1.0), n_restarts=2, seed=0)
    losses = model.bound_losses_
    assert set(losses) == {0.3, 0.5, 1.0}
    best = model.options["max_guess"]
    assert best == model.options["max_slip"] == min(losses, key=losses.__getitem__)
    assert best in (0.5, 1.0) and losses[0.3] > losses[best]


def test_bkt_model_params_by_skill_id_and_name() -> None:
    data = generate_bkt(600, 3, 15, seed=2)
    skills = np.asarray(["fractions", "decimals", "percent"])[data.skill]
    log = from_columns({"u": data.student, "s": skills, "c": data.correct}, learner="u", item="s", correct="c")
    with pytest.raises(ValueError, match="fit the model first"):
        BKTModel().params()
    model = BKTModel(n_restarts=3, seed=0).fit(log)
    params = model.params()
    assert set(params) == {"fractions", "decimals", "percent"}
    for k, name in enumerate(["fractions", "decimals", "percent"]):
        assert list(params[name]) == ["prior", "learn", "guess", "slip", "forget"]
        found = [params[name][p] for p in ("prior", "learn", "guess", "slip")]
        np.testing.assert_allclose(found, data.true_params[k, :4], atol=0.08)
        assert params[name]["forget"] == 0.0
    assert model.bkt is not None and model.bkt.params_.shape == (3, 5)  # the array is still there
