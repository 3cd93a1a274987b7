"""A stored forgetting term reaches every reading of a learner, not only ``Engine.predict``: the status
figures (v2 proficiency, v1 skill level) and the view the learn / review / assess policies choose from
carry each topic's recall at the time asked, through the one function ``predict`` applies it with."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from learnloop import Engine
from learnloop.engine import FitRecipe, LearnerOptions
from learnloop.events import format_timestamp
from learnloop.sim import sample_course
from learnloop.tracing.retention import Forgetting

ITEMS, CATALOG = sample_course(n_chapters=1, topics_per_chapter=3, items_per_topic=8, with_theory=False)
CID = CATALOG.catalog_id
START = datetime(2025, 1, 1, tzinfo=UTC)
#: a term of the shape Engine.fit stores: a clock 8 times FSRS's and a recall weight of 1.5
TERM = Forgetting(time_scale=8.0, scale=1.5)
#: the topics (by index: 0 is the chapter, which holds no items) practised two months and one day ago
OLD, RECENT = 1, 2


def _engine(forgetting: Forgetting | None) -> Engine:
    """The sample chapter, one learner who practised the first topic on day 0 and the second on day 59,
    and the same stored settings but for the forgetting term."""
    engine = Engine(seed=3)
    engine.upsert_items(ITEMS)
    engine.upsert_catalog(CATALOG)
    index = engine.catalog_index(CID)
    doc: dict[str, Any] = {"items": {}, "model": None, "refine": None, "recipe": {}}
    if forgetting is not None:
        doc["forgetting"] = forgetting.to_doc(index.topic_ids)
    engine._content.put_fit(CID, LearnerOptions(), doc)
    events = []
    for day, topic in ((0, OLD), (59, RECENT)):
        items = [i for k, i in enumerate(index.item_ids) if index.item_topic[k] == topic][:6]
        for n, item in enumerate(items):
            at = START + timedelta(days=day, minutes=5 * n)
            events.append({"type": "attempt", "item_id": item, "catalog_id": CID,
                           "timestamp": format_timestamp(at), "score": 1.0 if n % 3 else 0.0})  # fmt: skip
    engine.upsert_events("ada", events)
    engine.clock = lambda: START + timedelta(days=60)
    return engine


def _topic_filter(engine: Engine, topic: int) -> dict[str, Any]:
    return {"include_topic_ids": [engine.catalog_index(CID).topic_ids[topic]]}


def _mean_predict(engine: Engine, topic: int) -> float:
    index = engine.catalog_index(CID)
    items = [i for k, i in enumerate(index.item_ids) if index.item_topic[k] == topic and index.scorable[k]]
    return float(np.mean(list(engine.predict("ada", CID, items).values())))


def test_proficiency_of_a_topic_practised_long_ago_is_lower_with_the_memory_model_and_equals_predict() -> None:
    plain, forgetful = _engine(None), _engine(TERM)
    old, recent = OLD, RECENT
    (before,) = plain.user_status("ada", CID, [_topic_filter(plain, old)])
    (after,) = forgetful.user_status("ada", CID, [_topic_filter(forgetful, old)])
    assert before.proficiency is not None and after.proficiency is not None
    # two months without practice: the term lowers what the status says the learner can do now...
    assert after.proficiency < before.proficiency - 0.05
    # ... by exactly what Engine.predict says, item by item, at the same moment
    assert after.proficiency == pytest.approx(_mean_predict(forgetful, old), abs=1e-12)
    assert before.proficiency == pytest.approx(_mean_predict(plain, old), abs=1e-12)
    # a topic practised yesterday loses less, and progress (coverage) does not depend on memory
    (recent_before,) = plain.user_status("ada", CID, [_topic_filter(plain, recent)])
    (recent_after,) = forgetful.user_status("ada", CID, [_topic_filter(forgetful, recent)])
    assert recent_before.proficiency is not None and recent_after.proficiency is not None
    assert before.proficiency - after.proficiency > recent_before.proficiency - recent_after.proficiency > 0.0
    assert (after.progress, recent_after.progress) == (before.progress, recent_before.progress)
    # the v1 dialect reads the same figures
    index = forgetful.catalog_index(CID)
    (v1,) = forgetful.status_v1("ada", CID, [np.asarray(index.item_topic) == old])
    assert v1.skill_level == pytest.approx(after.proficiency, abs=1e-12)


def test_the_policies_view_carries_the_recall_now_as_predict_does() -> None:
    plain, forgetful = _engine(None), _engine(TERM)
    index = forgetful.catalog_index(CID)
    scorable = [i for k, i in enumerate(index.item_ids) if index.scorable[k]]
    predicted = forgetful.predict("ada", CID, scorable)
    view = forgetful.learner_view("ada", CID)
    at = [index.item_ids.index(i) for i in scorable]
    assert view.p_correct[at] == pytest.approx([predicted[i] for i in scorable], abs=1e-12)
    assert not np.allclose(view.p_correct, plain.learner_view("ada", CID).p_correct)
    # what a session step recommends from (its status too) is that view: the step's proficiency
    # over the whole catalog is the mean of predict's answers
    context = forgetful.create_session({"user_id": "ada", "catalog_id": CID, "mode": {"type": "assess"}, "filter": {}})
    step = forgetful.adaptive_step(context)
    assert step.user_status.proficiency == pytest.approx(np.mean(list(predicted.values())), abs=1e-12)
    # and the later the moment, the lower the recall (the term reads the clock)
    forgetful.clock = lambda: START + timedelta(days=400)
    later = forgetful.learner_view("ada", CID).p_correct
    topic0 = np.asarray(index.item_topic) == OLD
    assert (later[topic0] < view.p_correct[topic0]).all()


def test_engine_fit_s_stored_term_reaches_the_status() -> None:
    """The same through Engine.fit, with the FSRS defaults as the candidate's term (β = 1)."""
    engine = _engine(None)
    rng = np.random.default_rng(4)
    index = engine.catalog_index(CID)
    b = np.random.default_rng(99).normal(0.0, 1.5, index.n_items)  # far from the cold-start difficulties
    for person in range(60):  # learners for the fit, each answering over days
        theta = rng.normal(0.0, 1.0)
        at = START + timedelta(hours=float(rng.uniform(0, 48)))
        events = []
        for _ in range(25):
            k = int(rng.integers(index.n_items))
            at += timedelta(hours=float(rng.exponential(20.0)))
            right = rng.random() < 1.0 / (1.0 + np.exp(-(theta - b[k])))
            events.append({"type": "attempt", "item_id": index.item_ids[k], "catalog_id": CID,
                           "timestamp": format_timestamp(at), "score": float(right)})  # fmt: skip
        engine.upsert_events(f"u{person}", events)
    result = engine.fit(CID, candidate=FitRecipe(calibrate=True, forgetting="fsrs"), progress=False)
    assert result.kept == "new"
    model = engine._content.catalog_model(CID)
    assert model.forgetting is not None and model.forgetting.scale == 1.0
    (status,) = engine.user_status("ada", CID, [_topic_filter(engine, OLD)])
    assert status.proficiency is not None
    assert status.proficiency == pytest.approx(_mean_predict(engine, OLD), abs=1e-12)


@pytest.mark.parametrize("mode", ["learn", "review", "assess"])
def test_sessions_with_a_stored_term_keep_their_invariants_and_report_predict_s_proficiency(mode: str) -> None:
    from learnloop.sim import SimClock
    from learnloop.testing import LearnerSpec, assert_session_invariants, play_session

    engine = _engine(TERM)
    clock = SimClock(START + timedelta(days=60))
    engine.clock = clock
    run = play_session(engine, {"user_id": "ada", "catalog_id": CID, "mode": {"type": mode}, "filter": {}},
                       learner=LearnerSpec(seed=5), steps=12)  # fmt: skip
    assert_session_invariants(run)
    # each step's status is read at the engine's clock then: after the run, the last one's equals
    # the mean of Engine.predict over the catalog's scorable items now
    index = engine.catalog_index(CID)
    scorable = [i for k, i in enumerate(index.item_ids) if index.scorable[k]]
    last = run.steps[-1].user_status.proficiency
    assert last == pytest.approx(float(np.mean(list(engine.predict("ada", CID, scorable).values()))), abs=1e-12)
