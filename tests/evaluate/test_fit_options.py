"""fit_options picks the learner model's settings that the data supports, on training folds only."""

from __future__ import annotations

import numpy as np
import pytest

from learnloop.datasets import ResponseLog, from_columns
from learnloop.evaluate import fit_options


def learners(gain: float, *, n: int = 300, length: int = 40, seed: int = 0) -> ResponseLog:
    """Rasch learners whose ability grows by ``gain`` logits after each answer."""
    rng = np.random.default_rng(seed)
    b = rng.normal(0.0, 1.0, 30)
    rows: dict[str, list] = {"u": [], "i": [], "c": [], "s": []}
    for person in range(n):
        theta = rng.normal(0.0, 1.0)
        for _ in range(length):
            item = int(rng.integers(30))
            rows["u"].append(person)
            rows["i"].append(item)
            rows["c"].append(float(rng.random() < 1.0 / (1.0 + np.exp(-(theta - b[item])))))
            rows["s"].append("algebra")  # one skill: the practice gain is the skill's
            theta += gain
    return from_columns(rows, learner="u", item="i", correct="c", skill="s")


GRID = {"hierarchy": ("additive",), "drift": (0.0,), "practice_gain": (0.0, 0.05, 0.1, 0.2)}


@pytest.mark.parametrize(("gain", "expected"), [(0.0, 0.0), (0.1, 0.1)])
def test_the_practice_gain_chosen_is_the_one_the_learners_have(gain: float, expected: float) -> None:
    fit = fit_options(learners(gain, seed=1), start={"drift": 0.0}, grid=GRID, folds=3, progress=False)
    assert fit.options.practice_gain == expected
    assert fit.options.hierarchy == "additive" and not fit.interrupted
    # every setting tried is recorded with its score, the chosen one the lowest
    assert min(loss for _, loss in fit.tried) == pytest.approx(fit.log_loss)


def test_momentum_settings_need_the_additive_hierarchy() -> None:
    grid = {"hierarchy": ("nested",), "momentum_var": (0.0, 1.0)}
    fit = fit_options(learners(0.0, n=60, length=10), grid=grid, folds=2, progress=False)
    assert all(not (opts.get("momentum_var") and opts.get("hierarchy") == "nested") for opts, _ in fit.tried)
