"""OptionsFit builds the model it chose (fit.model()) and prints as a short summary."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from learnloop.datasets import ResponseLog, read_three_line
from learnloop.evaluate import EngineModel, OptionsFit, fit_options

SLICE = Path(__file__).resolve().parents[1] / "data" / "assist2009_dkvmn_test_head.csv"
GRID = {"hierarchy": ("additive",), "drift": (0.0, 0.02), "practice_gain": (0.0, 0.05)}


@pytest.fixture(scope="module")
def logs() -> tuple[ResponseLog, ResponseLog]:
    return read_three_line(SLICE).split(0.3, seed=0)


@pytest.fixture(scope="module")
def fit(logs: tuple[ResponseLog, ResponseLog]) -> OptionsFit:
    return fit_options(logs[0], grid=GRID, folds=2, progress=False, calibration="2pl")


def test_model_carries_every_fitted_setting(fit: OptionsFit) -> None:
    model = fit.model()
    assert isinstance(model, EngineModel)
    assert model.options == fit.options
    assert (model.refine, model.topic_rates, model.echo) == (fit.refine, fit.topic_rates, fit.echo)
    assert model.calibrate == "2pl" and model.index is None
    assert model.name == "learnloop engine model (fitted)" and fit.model(name="mine").name == "mine"


def test_model_predicts_as_the_model_built_by_hand(fit: OptionsFit, logs: tuple[ResponseLog, ResponseLog]) -> None:
    train, test = logs
    by_hand = EngineModel(fit.options, calibrate="2pl", refine=fit.refine, topic_rates=fit.topic_rates, echo=fit.echo)
    np.testing.assert_array_equal(fit.model().fit(train).predict(test), by_hand.fit(train).predict(test))


def test_repr_is_a_summary_of_a_few_lines(fit: OptionsFit) -> None:
    text = repr(fit)
    lines = text.splitlines()
    assert 3 <= len(lines) <= 8 and len(text) < 800  # not every setting tried
    assert lines[0].startswith(f"OptionsFit: validation log loss {fit.log_loss:.4f}, mean over the folds")
    assert f"({len(fit.tried)} settings tried)" in lines[0]
    for name in ("hierarchy", "drift", "practice_gain", "prior_var", "novelty"):
        assert f"{name}={getattr(fit.options, name)!r}" in text
    assert f"refine={fit.refine!r}" in text and f"echo={fit.echo}" in text and "calibration='2pl'" in text
    assert str(fit) == text
