"""The fitted prerequisite gating: chosen on folds of simulated logs, > 0 where prerequisites gate learning."""

from __future__ import annotations

import numpy as np
import pytest

from learnloop import Engine
from learnloop.content import CatalogIndex
from learnloop.datasets import ResponseLog, from_columns
from learnloop.evaluate import DEFAULT_GRID, fit_options
from learnloop.sim import learner_for, sample_course


def _index() -> CatalogIndex:
    items, catalog = sample_course()  # 12 topics, each a prerequisite of the next
    engine = Engine()
    engine.upsert_items(items)
    engine.upsert_catalog(catalog)
    return engine.catalog_index(catalog.catalog_id)


def _log(index: CatalogIndex, world: dict[str, float], *, learners: int = 60, steps: int = 80) -> ResponseLog:
    """Simulated learners answering exercises in a random order (a seeded log)."""
    exercises = np.flatnonzero(index.scorable)
    rng = np.random.default_rng(1)
    columns: dict[str, list[object]] = {"learner": [], "item": [], "correct": [], "topic": []}
    for k in range(learners):
        learner = learner_for(index, seed=1000 + k, **world)
        for step in range(steps):
            position = int(rng.choice(exercises))
            columns["learner"].append(f"l{k}")
            columns["item"].append(index.item_ids[position])
            columns["correct"].append(learner.respond(position, at=60.0 * step))
            columns["topic"].append(index.topic_ids[index.item_topic[position]])
    return from_columns(columns, learner="learner", item="item", correct="correct", skill="topic")


@pytest.mark.parametrize(
    ("world", "gating"),
    [({"prerequisite_gating": 2.0, "mastery_margin": 1.0}, 1.0), ({}, 0.0)],
    ids=["prerequisites gate learning", "no gating"],
)
def test_the_folds_choose_gating_where_the_simulated_learners_are_gated(world: dict[str, float], gating: float) -> None:
    index = _index()
    fit = fit_options(
        _log(index, world),
        index=index,
        start={"practice_gain": 0.1},
        grid={"prerequisite_gating": (0.0, 1.0)},
        rounds=1,
        refine=(),
        topic_rates=False,
        echo=False,
        forgetting=False,
        progress=False,
    )
    assert fit.options.prerequisite_gating == gating
    losses = dict((options["prerequisite_gating"], loss) for options, loss in fit.tried)
    assert losses[gating] < losses[1.0 - gating]


def test_the_default_grid_searches_the_gating_and_a_search_fits_it() -> None:
    assert DEFAULT_GRID["prerequisite_gating"][0] == 0.0
    index = _index()
    log = _log(index, {}, learners=12, steps=20)
    fit = fit_options(
        log, index=index, grid={"drift": (0.02,)}, rounds=1, refine=(), topic_rates=False, echo=False, progress=False
    )
    assert fit.options.prerequisite_gating is None  # not searched: not fitted
    fit = fit_options(
        log,
        index=index,
        grid={"prerequisite_gating": (0.0,)},
        rounds=1,
        refine=(),
        topic_rates=False,
        echo=False,
        progress=False,
    )
    assert fit.options.prerequisite_gating == 0.0  # searched: fitted, even where it ties with None
