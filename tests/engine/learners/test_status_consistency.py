"""The engine's v2 status equals the learner model's status figures."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from learnloop import Engine
from learnloop.events import format_timestamp
from learnloop.recommend import UserStatus
from learnloop.sim import SimClock, learner_for, run_session, sample_course


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_user_status_matches_the_learner_model(seed: int) -> None:
    clock = SimClock()
    engine = Engine(seed=seed, clock=clock)
    items, catalog = sample_course(n_chapters=2, topics_per_chapter=2, items_per_topic=5)
    engine.upsert_items(items)
    engine.upsert_catalog(catalog)
    cid = catalog.catalog_id
    model = engine.catalog_model(cid)
    learner = learner_for(model.index, seed=seed)
    run_session(engine, catalog_id=cid, user_id="u", learner=learner, mode="learn", steps=15, clock=clock)
    filters = [{}, {"include_topic_ids": ["ch1"]}, {"include_content_types": ["theory"]}, {"include_tags": ["hard"]}]
    got = engine.user_status("u", cid, filters)
    state = engine._learners.state("default", "u", model).state
    for flt, status in zip(filters, got, strict=True):
        expected = model.model.status(state, engine.filter_mask(cid, flt))
        assert status.progress == pytest.approx(expected.progress)
        assert (status.proficiency is None) == (expected.proficiency is None)
        if expected.proficiency is not None:
            assert status.proficiency == pytest.approx(expected.proficiency)
        assert status.time_spent_ms == expected.time_spent_ms
        last = expected.last_interaction_timestamp
        assert status.last_interaction_timestamp == (
            None if last is None else format_timestamp(datetime.fromtimestamp(last, UTC))
        )
    assert np.isfinite(got[0].proficiency)


@pytest.mark.parametrize("with_theory", [False, True])
def test_user_status_is_what_validation_makes_of_its_figures(with_theory: bool) -> None:
    clock = SimClock()
    engine = Engine(seed=4, clock=clock)
    items, catalog = sample_course(n_chapters=2, topics_per_chapter=2, items_per_topic=4, with_theory=with_theory)
    engine.upsert_items(items)
    engine.upsert_catalog(catalog)
    cid = catalog.catalog_id
    model = engine.catalog_model(cid)
    filters = [{}, {"include_topic_ids": ["ch1"]}, {"include_content_types": ["theory"]}]
    before = engine.user_status("u", cid, filters)  # (a learner without events)
    run_session(
        engine,
        catalog_id=cid,
        user_id="u",
        learner=learner_for(model.index, seed=4),
        mode="learn",
        steps=12,
        clock=clock,
    )
    for status in (*before, *engine.user_status("u", cid, filters)):
        validated = UserStatus.model_validate(status.model_dump())
        assert status == validated
        assert status.model_dump_json() == validated.model_dump_json()
        assert status.model_fields_set == validated.model_fields_set
        assert [type(v) for v in status.model_dump().values()] == [type(v) for v in validated.model_dump().values()]
