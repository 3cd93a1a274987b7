"""Items fitted to the online model's own next-response predictions (EngineModel(refine=...))."""

from __future__ import annotations

import numpy as np
import pytest

from learnloop.datasets import ResponseLog, from_columns
from learnloop.evaluate import EngineModel, fit_options, metrics
from learnloop.tracing.calibration import refine_step


def course(n: int = 400, *, gain: float = 0.08, seed: int = 0) -> tuple[ResponseLog, np.ndarray]:
    """Learners who take 30 items in a fixed order and gain ``gain`` logits with each answer."""
    rng = np.random.default_rng(seed)
    b = rng.normal(0.0, 1.0, 30)
    rows: dict[str, list] = {"u": [], "i": [], "c": [], "s": []}
    for person in range(n):
        theta = rng.normal(0.0, 1.0)
        for item in range(30):
            rows["u"].append(person)
            rows["i"].append(item)
            rows["c"].append(float(rng.random() < 1.0 / (1.0 + np.exp(-(theta - b[item])))))
            rows["s"].append("statics")  # one skill: the learning carries over to the next item
            theta += gain
    return from_columns(rows, learner="u", item="i", correct="c", skill="s"), b


def test_refine_step_recovers_2pl_items_from_known_abilities() -> None:
    rng = np.random.default_rng(3)
    theta, b_true, a_true = rng.normal(0, 1, 3000), rng.normal(0, 1, 20), np.exp(rng.normal(0, 0.3, 20))
    person, item = np.divmod(np.arange(theta.size * 20), 20)
    y = (rng.random(person.size) < 1 / (1 + np.exp(-a_true[item] * (theta[person] - b_true[item])))).astype(float)
    b, a = np.zeros(20), np.ones(20)
    for _ in range(8):  # the predictions of a model that knows the abilities, refitted after each step
        p = 1 / (1 + np.exp(-a[item] * (theta[person] - b[item])))
        b, a = refine_step(item, y, p, b, a, b_prior_mean=0.0, b_prior_sd=10.0, a_prior_sd=10.0)
    assert np.mean(np.abs(b - b_true)) < 0.08 and np.max(np.abs(b - b_true)) < 0.25
    assert np.corrcoef(a, a_true)[0, 1] > 0.9
    # with the discriminations left out only b moves
    b_only, a_only = refine_step(item, y, np.full(y.size, 0.5), np.zeros(20), np.ones(20), b_prior_mean=0.0,
                                 a_prior_sd=None)  # fmt: skip
    assert np.all(a_only == 1.0) and np.corrcoef(b_only, b_true)[0, 1] > 0.95
    with pytest.raises(ValueError, match="differ in length"):
        refine_step(item, y[:-1], p, b, a, b_prior_mean=0.0)


def test_refined_difficulties_undo_what_a_static_calibration_puts_in_them_for_learners_who_learn() -> None:
    log, b_true = course(seed=1)
    train, valid = log.split(0.25, seed=0)
    options = {"practice_gain": 0.08, "drift": 0.0, "hierarchy": "additive"}
    static = EngineModel(options).fit(train)
    refined = EngineModel(options, refine="b").fit(train)
    order = [train.item_ids.index(str(k)) for k in range(30)]
    err_static = np.array([static.b_[train.item_ids[k]] for k in order]) - b_true
    err_refined = np.array([refined.b_[train.item_ids[k]] for k in order]) - b_true
    # a constant ability puts the learning into the items: the later ones look easier than they are
    assert np.mean(err_static[20:]) - np.mean(err_static[:10]) < -0.5
    # the refinement (kept near the static values by its prior) takes back a good part of it
    assert abs(np.mean(err_refined[20:]) - np.mean(err_refined[:10])) < 0.6 * abs(
        np.mean(err_static[20:]) - np.mean(err_static[:10])
    )
    loss_static = metrics(valid.correct, static.predict(valid))["log_loss"]
    loss_refined = metrics(valid.correct, refined.predict(valid))["log_loss"]
    assert loss_refined < loss_static
    with pytest.raises(ValueError, match="refine must be"):
        EngineModel(refine="a")


def test_fit_options_tries_each_refinement_with_the_chosen_settings() -> None:
    log, _ = course(200, seed=2)
    grid = {"practice_gain": (0.0, 0.08)}
    fit = fit_options(log, start={"drift": 0.0}, grid=grid, folds=2, progress=False)
    kinds = [opts["refine"] for opts, _ in fit.tried if "refine" in opts]
    assert kinds == ["b", "ab"]
    assert fit.refine in (None, "b", "ab")
    assert min(loss for _, loss in fit.tried) == pytest.approx(fit.log_loss)
    assert fit_options(log, grid=grid, folds=2, progress=False, refine=()).refine is None
