"""Engine.fit: the engine fits its learner model to its own event log, behind a guard that keeps the
settings in use unless the fitted ones predict held-out learners better; interruptible; safe while serving."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from learnloop import Engine
from learnloop.datasets import from_columns
from learnloop.engine import FitRecipe, FitResult, LearnerOptions, LogModel
from learnloop.errors import NotFoundError, ValidationError
from learnloop.events import format_timestamp
from learnloop.sim import sample_course
from learnloop.store import Store

ITEMS, CATALOG = sample_course(n_chapters=1, topics_per_chapter=3, items_per_topic=8, with_theory=False)
CID = CATALOG.catalog_id
GRID: dict[str | tuple[str, ...], tuple[Any, ...]] = {"drift": (0.0, 0.05), "practice_gain": (0.0, 0.1)}
START = datetime(2025, 1, 1, tzinfo=UTC)


def answers(
    engine: Engine, n: int = 60, per: int = 25, seed: int = 0, prefix: str = "u"
) -> dict[str, list[dict[str, Any]]]:
    """Learners whose answers follow item difficulties far from the items' cold-start ones (so that a
    calibration helps), each learner's answers hours to days apart."""
    rng = np.random.default_rng(seed)
    index = engine.catalog_index(CID)
    questions = list(index.item_ids)
    b = np.random.default_rng(99).normal(0.0, 1.5, len(questions))
    out = {}
    for person in range(n):
        theta = rng.normal(0.0, 1.0)
        at = START + timedelta(hours=float(rng.uniform(0, 48)))
        events = []
        for _ in range(per):
            position = int(rng.integers(len(questions)))
            right = rng.random() < 1.0 / (1.0 + np.exp(-(theta - b[position])))
            at += timedelta(hours=float(rng.exponential(20.0)))
            events.append({"type": "attempt", "item_id": questions[position], "catalog_id": CID,
                           "timestamp": format_timestamp(at), "score": float(right)})  # fmt: skip
        out[f"{prefix}{person}"] = events
    return out


def make_engine(store: str | Path | None = None, n: int = 60) -> Engine:
    engine = Engine(seed=1) if store is None else Engine.open(store, seed=1)
    engine.upsert_items(ITEMS)
    engine.upsert_catalog(CATALOG)
    for user, events in answers(engine, n=n).items():
        engine.upsert_events(user, events)
    return engine


def settings(store: Store) -> list[tuple[Any, ...]]:
    """Every stored meta row, as stored (the learner options, the calibration, the content version)."""
    return sorted((tuple(k), repr(v)) for k, v in store.scan("meta", "default"))


def test_the_fit_is_stored_when_it_predicts_held_out_learners_better() -> None:
    engine = make_engine()
    before = engine.catalog_model(CID).fingerprint
    result = engine.fit(CID, grid=GRID, rounds=1, progress=False)
    assert isinstance(result, FitResult)
    assert result.kept == "new" and not result.interrupted
    assert result.new_log_loss < result.old_log_loss and result.new_auc > result.old_auc
    assert result.previous.calibrate is False  # nothing stored: the items' cold-start difficulties
    assert result.n_events == 60 * 25 and result.n_learners == 60 and result.n_held_out == 12
    assert "kept the fitted settings" in str(result)
    assert result.chosen is not None and engine.learner_options_for(CID) == result.chosen.options
    assert engine.catalog_model(CID).fingerprint != before  # every cache moved to the new model
    # the recipe is stored with the calibration: the next fit starts from it
    assert engine._fitting.previous(CID) == result.chosen


def test_a_planted_worse_candidate_is_refused_and_nothing_is_written() -> None:
    engine = make_engine()
    assert engine.fit(CID, candidate=FitRecipe(calibrate=True), progress=False).kept == "new"
    stored = settings(engine.store)
    worse = FitRecipe(LearnerOptions(prior_var=0.01, practice_gain=0.5), calibrate=False)
    result = engine.fit(CID, candidate=worse, progress=False)
    assert result.kept == "old" and result.chosen == worse
    assert result.new_log_loss > result.old_log_loss
    assert "kept the previous settings" in str(result)
    assert settings(engine.store) == stored


def test_a_better_candidate_is_stored_in_one_write() -> None:
    engine = make_engine()
    result = engine.fit(CID, candidate={"calibrate": True, "topic_rates": True}, progress=False)
    assert result.kept == "new"
    stored = engine.store.get("meta", "default", (f"calibration:{CID}",))
    assert stored is not None and stored["recipe"]["topic_rates"] is True and "topics" in stored


@pytest.mark.parametrize("how", ["event", "ctrl-c"])
def test_an_interrupted_fit_leaves_the_stored_settings_byte_identical(how: str) -> None:
    engine = make_engine()
    engine.set_learner_options(CID, {"drift": 0.02})
    stored = settings(engine.store)
    event = threading.Event()
    calls = []

    def stop() -> bool:  # asked before each setting is scored: stop mid-search
        calls.append(1)
        if len(calls) == 3:
            if how == "ctrl-c":
                raise KeyboardInterrupt
            event.set()
        return event.is_set()

    result = engine.fit(CID, grid=GRID, progress=False, stop=stop)
    assert result.interrupted and result.kept == "old" and result.chosen is None
    assert "interrupted" in str(result)
    assert settings(engine.store) == stored
    assert engine.learner_options_for(CID).drift == 0.02


def test_the_engine_predicts_as_the_fitted_model_with_every_term_forgetting_included() -> None:
    engine = make_engine()
    recipe = FitRecipe(calibrate=True, topic_rates=True, echo=True, forgetting="fsrs")  # beta 1: a real term
    assert engine.fit(CID, candidate=recipe, progress=False).kept == "new"
    stored = engine.store.get("meta", "default", (f"calibration:{CID}",))
    assert stored is not None and "forgetting" in stored and "echo" in stored
    # the model the engine stored, fitted as Engine.fit fits it (every learner), predicts new learners...
    columns = engine._fitting.columns(CID)
    model = recipe.model(engine.catalog_index(CID)).fit(columns)
    newcomers = answers(engine, n=4, seed=5, prefix="new")
    rows = [(u, e) for u, events in newcomers.items() for e in events]
    log = from_columns(
        {
            "u": [u for u, _ in rows],
            "i": [e["item_id"] for _, e in rows],
            "c": [e["score"] for _, e in rows],
            "t": [datetime.fromisoformat(e["timestamp"]).timestamp() for _, e in rows],
        },  # fmt: skip
        learner="u",
        item="i",
        correct="c",
        time="t",
    )
    expected = model.predict(log)
    # ... and the engine predicts each answer at its time, from the learner's earlier ones
    got = []
    for user, events in newcomers.items():
        for event in events:
            moment = datetime.fromisoformat(event["timestamp"])
            engine.clock = lambda moment=moment: moment
            got.append(engine.predict(user, CID, [event["item_id"]])[event["item_id"]])
            engine.upsert_events(user, [event])
    order = np.argsort(np.asarray(log.learner_ids)[log.learner], kind="stable")  # the log's rows by learner id
    assert np.asarray(got) == pytest.approx(expected[order], abs=1e-9)


def test_the_event_columns_fold_as_the_response_log_folds() -> None:
    engine = make_engine(n=20)
    columns = engine._fitting.columns(CID)
    log = from_columns(engine.event_log(CID), learner="user_id", item="item_id", correct="score", time="timestamp")
    assert columns.learner_ids == log.learner_ids
    assert np.array_equal(columns.correct, log.correct) and np.array_equal(columns.time, log.time)
    for (a_train, a_valid), (b_train, b_valid) in zip(columns.folds(3, seed=4), log.folds(3, seed=4), strict=True):
        assert np.array_equal(a_train.learner, b_train.learner) and np.array_equal(a_valid.learner, b_valid.learner)


def test_evaluate_fit_options_and_engine_model_are_the_engine_s_search_and_model() -> None:
    from learnloop.engine import Search
    from learnloop.evaluate import DEFAULT_GRID, EngineModel, fit_options

    assert issubclass(EngineModel, LogModel) and DEFAULT_GRID == dict(Search.DEFAULT_GRID)
    engine = make_engine(n=20)
    columns = engine._fitting.columns(CID)
    index = engine.catalog_index(CID)
    fit = fit_options(columns, grid=GRID, rounds=1, folds=2, progress=False, index=index, refine=(), echo=False)  # type: ignore[arg-type]
    assert fit.tried and fit.model().index is index


def test_fitting_while_other_threads_serve() -> None:
    engine = make_engine()
    errors: list[BaseException] = []
    done = threading.Event()
    extra = answers(engine, n=6, seed=3, prefix="live")

    def serve(user: str) -> None:
        try:
            for event in extra[user]:
                engine.upsert_events(user, [event])
                engine.predict(user, CID, [event["item_id"]])
                if done.is_set():
                    break
        except BaseException as exc:  # pragma: no cover - the assertion below reports it
            errors.append(exc)

    threads = [threading.Thread(target=serve, args=(user,)) for user in extra]
    for t in threads:
        t.start()
    result = engine.fit(CID, grid=GRID, rounds=1, progress=False)
    done.set()
    for t in threads:
        t.join()
    assert errors == [] and result.kept == "new"
    assert engine.learner_options_for(CID) == result.chosen.options  # type: ignore[union-attr]
    user = next(iter(extra))
    assert 0.0 < engine.predict(user, CID, [extra[user][0]["item_id"]])[extra[user][0]["item_id"]] < 1.0


def test_bad_calls_get_clear_errors() -> None:
    engine = make_engine(n=3)
    with pytest.raises(NotFoundError):
        engine.fit("nope", progress=False)
    with pytest.raises(ValidationError, match="too few"):
        engine.fit(CID, progress=False)
    with pytest.raises(ValidationError, match="holdout"):
        engine.fit(CID, holdout=1.5, progress=False)
    with pytest.raises(ValidationError, match="fit recipe"):
        engine.fit(CID, candidate={"colour": "red"}, progress=False)
