"""A fitted model's item calibration is kept as arrays too: models built from them are the models built
from the mapping (same fingerprint, same parameters, same predictions), and the mapping is read-only."""

from __future__ import annotations

import copy
import json
import pickle

import numpy as np
import pytest

from learnloop.content import CatalogIndex, compile_catalog
from learnloop.datasets import from_columns
from learnloop.engine import CatalogModel
from learnloop.engine.fitting.items import ItemCalibration
from learnloop.evaluate import EngineModel
from learnloop.sim import sample_course

ITEMS, CATALOG = sample_course(n_chapters=1, topics_per_chapter=3, items_per_topic=8, with_theory=False)


def _index() -> CatalogIndex:
    return compile_catalog(CATALOG, {item.item_id: item for item in ITEMS})


def test_a_model_built_from_the_arrays_is_the_model_built_from_the_mapping() -> None:
    index = _index()
    rng = np.random.default_rng(3)
    ids = [item_id for item_id in index.item_ids[::2]]
    calibration = ItemCalibration(ids, rng.normal(0.0, 1.0, len(ids)), rng.uniform(0.5, 2.0, len(ids)))
    names = {item_id: item_id for item_id in index.item_ids}
    from_mapping = CatalogModel.build(index, calibration=dict(calibration), practice_gain=0.05)
    from_arrays = CatalogModel.build(index, item_arrays=calibration.arrays_on(index, names), practice_gain=0.05)
    assert from_arrays.fingerprint == from_mapping.fingerprint
    np.testing.assert_array_equal(from_arrays.model.items.b, from_mapping.model.items.b)
    np.testing.assert_array_equal(from_arrays.model.items.a, from_mapping.model.items.a)
    # the items without a calibration keep their cold-start values
    assert from_arrays.model.items.b[index.position(index.item_ids[1])] == CatalogModel.build(index).model.items.b[1]
    with pytest.raises(ValueError, match="item_arrays"):
        CatalogModel.build(index, item_arrays=(np.zeros(2), np.ones(2)))


def test_the_calibration_is_a_read_only_mapping_that_stores_as_json() -> None:
    calibration = ItemCalibration(["q1", "q2"], np.array([0.5, -1.0]), np.array([1.0, 1.5]))
    assert calibration == {"q1": {"b": 0.5, "a": 1.0}, "q2": {"b": -1.0, "a": 1.5}}
    assert json.loads(json.dumps(calibration)) == calibration
    for copied in (copy.deepcopy(calibration), pickle.loads(pickle.dumps(calibration))):
        assert isinstance(copied, ItemCalibration) and copied == calibration
        np.testing.assert_array_equal(copied.b, calibration.b)
    for change in (
        lambda: calibration.__setitem__("q3", {"b": 0.0}),
        lambda: calibration.pop("q1"),
        lambda: calibration.update({}),
        calibration.clear,
    ):
        with pytest.raises(TypeError, match="read-only"):
            change()
    with pytest.raises(ValueError, match="differ in length"):
        ItemCalibration(["q1"], np.zeros(2), np.ones(2))


def test_a_fitted_model_predicts_alike_from_its_arrays_and_from_a_plain_mapping() -> None:
    rng = np.random.default_rng(0)
    rows = 600
    table = {
        "learner": [f"u{k}" for k in rng.integers(0, 30, rows)],
        "item": [f"i{k}" for k in rng.integers(0, 40, rows)],
        "skill": [f"s{k % 4}" for k in rng.integers(0, 40, rows)],
        "correct": rng.integers(0, 2, rows).tolist(),
    }
    log = from_columns(table, learner="learner", item="item", correct="correct", skill="skill")
    train, test = log.split(0.3, seed=1)
    model = EngineModel(refine="b").fit(train)
    assert isinstance(model.calibration_, ItemCalibration)
    fast = model.predict(test)
    model.calibration_ = dict(model.calibration_)  # a plain mapping: the look-up path
    np.testing.assert_array_equal(fast, model.predict(test))
