"""The engine's v2 status equals the learner model's status figures."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from learnloop import Engine
from learnloop.events import format_timestamp
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
