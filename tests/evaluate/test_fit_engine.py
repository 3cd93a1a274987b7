"""fit_engine: the learner model's settings fitted on the engine's own log, stored per catalog, used by sessions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from learnloop import Engine
from learnloop.errors import NotFoundError, ValidationError
from learnloop.evaluate import fit_engine
from learnloop.events import format_timestamp
from learnloop.sim import sample_course

ITEMS, CATALOG = sample_course(n_chapters=1, topics_per_chapter=3, items_per_topic=8, with_theory=False)
CID = CATALOG.catalog_id


def learners_who_learn(engine: Engine, gain: float, n: int = 120, seed: int = 0) -> None:
    """Each answer on a topic raises the learner's ability on that topic by ``gain`` logits."""
    rng = np.random.default_rng(seed)
    index = engine.catalog_index(CID)
    questions = list(index.item_ids)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    for person in range(n):
        theta = rng.normal(-0.5, 1.0)
        practised = np.zeros(index.n_topics)
        events = []
        for k in range(30):
            position = int(rng.integers(len(questions)))
            item, topic = questions[position], int(index.item_topic[position])
            right = rng.random() < 1.0 / (1.0 + np.exp(-(theta + gain * practised[topic])))
            practised[topic] += 1
            stamp = format_timestamp(start + timedelta(minutes=k))
            events.append({"type": "attempt", "item_id": item, "catalog_id": CID, "timestamp": stamp,
                           "score": float(right)})  # fmt: skip
        engine.upsert_events(f"u{person}", events)


def test_fitted_settings_are_stored_and_used_by_the_catalog_in_every_engine_on_the_store(tmp_path: Path) -> None:
    path = tmp_path / "fit.db"
    engine = Engine.open(path)
    engine.upsert_items(ITEMS)
    engine.upsert_catalog(CATALOG)
    learners_who_learn(engine, gain=0.1)
    log = engine.event_log(CID)
    assert len(log["score"]) == 120 * 30 and log["user_id"] == sorted(log["user_id"])
    grid = {"hierarchy": ("additive",), "drift": (0.0,), "practice_gain": (0.0, 0.1, 0.3)}
    fit = fit_engine(engine, CID, grid=grid, folds=2, progress=False)
    assert fit.options.practice_gain == pytest.approx(0.1)
    assert engine.learner_options_for(CID) == fit.options
    # the fit names the catalog it was fitted on, and its model is built on that catalog
    assert repr(fit).startswith(f"OptionsFit on catalog '{CID}': validation log loss")
    assert fit.model().index is not None and fit.model().index.catalog_id == CID
    assert engine.catalog_model(CID).model.practice_gain == pytest.approx(0.1)
    assert engine.catalog_model(CID).model.hierarchy == "additive"
    other = Engine.open(path)  # another process on the same file
    assert other.catalog_model(CID).model.hierarchy == "additive"
    other.set_learner_options(CID, None)
    assert engine.catalog_model(CID).model.hierarchy == "nested"  # the engine's own options again
    other.close()
    engine.close()


def test_settings_are_checked_before_they_are_stored() -> None:
    engine = Engine()
    engine.upsert_items(ITEMS)
    engine.upsert_catalog(CATALOG)
    with pytest.raises(ValidationError, match="unknown learner option 'drfit'"):
        engine.set_learner_options(CID, {"drfit": 0.1})
    with pytest.raises(ValidationError, match="needs the additive hierarchy"):
        engine.set_learner_options(CID, {"momentum_var": 1.0})
    with pytest.raises(NotFoundError):
        engine.set_learner_options("nope", {"drift": 0.1})
    assert engine.learner_options_for(CID) == engine.learner_options
    with pytest.raises(ValueError, match="no scored attempts"):
        fit_engine(engine, CID, progress=False)
