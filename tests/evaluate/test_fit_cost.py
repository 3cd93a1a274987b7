"""The settings search's work follows the answers, not the catalog: the log's catalog is compiled once
for all the folds and settings, and a fold calibrates only the items answered in it (#30)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from learnloop.content import CatalogIndex
from learnloop.datasets import ResponseLog, from_columns
from learnloop.engine import CatalogModel
from learnloop.engine.fitting import model as log_model
from learnloop.evaluate import EngineModel, _models, fit_options
from learnloop.tracing import calibrate


def sparse_log(*, learners: int = 30, items: int = 400, answers: int = 12, seed: int = 0) -> ResponseLog:
    """A log over many items, most answered once or twice (a DataShop step log's shape)."""
    rng = np.random.default_rng(seed)
    rows: dict[str, list[Any]] = {"u": [], "i": [], "c": [], "s": []}
    for person in range(learners):
        for item in rng.choice(items, size=answers, replace=False).tolist():
            rows["u"].append(person)
            rows["i"].append(f"step-{seed}-{item}")
            rows["c"].append(float(rng.random() < 0.6))
            rows["s"].append(f"skill-{item % 7}")
    return from_columns(rows, learner="u", item="i", correct="c", skill="s")


def test_the_search_compiles_the_logs_catalog_once(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[int] = []
    real = _models.compile_catalog

    def counting(*args: Any, **kwargs: Any) -> CatalogIndex:
        compiled.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(_models, "compile_catalog", counting)
    grid = {"drift": (0.0, 0.05), "practice_gain": (0.0, 0.05)}
    fit = fit_options(sparse_log(seed=11), grid=grid, folds=3, progress=False, refine=("b",))
    assert len(fit.tried) >= 4  # every fold and setting predicted, the refinement replayed
    assert len(compiled) == 1


def test_a_fold_calibrates_only_the_items_answered_in_it(monkeypatch: pytest.MonkeyPatch) -> None:
    log = sparse_log(seed=12)
    fold_train, _ = log.folds(3, seed=0)[0]
    answered = np.unique(fold_train.item)
    assert answered.size < fold_train.n_items  # the fold's vocabulary is the whole log's
    sizes: list[int] = []
    real = log_model.calibrate

    def recording(*args: Any, **kwargs: Any) -> Any:
        sizes.append(kwargs["n_items"])
        return real(*args, **kwargs)

    monkeypatch.setattr(log_model, "calibrate", recording)
    model = EngineModel().fit(fold_train)
    assert sizes == [answered.size]
    # the same difficulties as a calibration over the whole vocabulary
    whole = calibrate(
        fold_train.learner,
        fold_train.item,
        fold_train.correct,
        n_items=fold_train.n_items,
        n_persons=fold_train.n_learners,
        ability_sd=None,
    )
    assert sorted(model.calibration_) == sorted(fold_train.item_ids[i] for i in answered.tolist())
    for i in answered.tolist():
        assert model.calibration_[fold_train.item_ids[i]]["b"] == pytest.approx(float(whole.b[i]), abs=1e-9)


def test_a_calibrated_item_in_two_topics_takes_its_difficulty_at_both_positions() -> None:
    log = from_columns(
        {"u": [0, 0, 1], "i": ["x", "y", "x"], "c": [1.0, 0.0, 1.0], "s": ["a", "b", "b"]},
        learner="u",
        item="i",
        correct="c",
        skill="s",
    )
    items, catalog = log.catalog("two")
    model = EngineModel()
    index = model.catalog_model(log).index
    x, y = log.catalog_item_ids
    cm = CatalogModel.build(index, calibration={x: {"b": 1.25, "a": 0.5}, y: {"b": -0.75}, "gone": {"b": 3.0}})
    at_x, at_y = index.item_positions[x], index.item_positions[y]
    assert at_x.size == 2 and len(items) == 2 and len(catalog.topics) == 2
    assert cm.model.items.b[at_x].tolist() == [1.25, 1.25] and cm.model.items.a[at_x].tolist() == [0.5, 0.5]
    assert cm.model.items.b[at_y].tolist() == [-0.75] and cm.model.items.a[at_y].tolist() == [1.0]
