"""Properties of adaptive sessions over random catalogs, filters, constraints and answers."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from learnloop import Engine
from learnloop.events import format_timestamp
from learnloop.sim import SimClock
from learnloop.testing import content, filters

answers = st.lists(
    st.one_of(st.just("skip"), st.floats(min_value=0.0, max_value=1.0), st.sampled_from([0.0, 1.0])),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawn=content(max_items=8, max_topics=6), data=st.data())
def test_session_invariants(drawn: Any, data: st.DataObject) -> None:
    db, catalog = drawn
    clock = SimClock()
    engine = Engine(seed=data.draw(st.integers(0, 3)), clock=clock)
    engine.upsert_items(db)
    engine.upsert_catalog(catalog)
    index = engine.catalog_index(catalog.catalog_id)
    session_filter = data.draw(filters(catalog, db))
    constraints = [
        {
            "type": "max_recommendations",
            "value": data.draw(st.integers(0, 4) | st.floats(0.0, 4.0)),
            "filter": data.draw(filters(catalog, db)).model_dump(exclude_none=True),
        }
        for _ in range(data.draw(st.integers(0, 3)))
    ]
    stopping = data.draw(
        st.fixed_dictionaries(
            {},
            optional={
                "max_proficiency": st.floats(0.0, 1.0),
                "max_interaction_count": st.integers(0, 8),
                "max_duration_ms": st.integers(0, 600_000),
            },
        )
    )
    mode = data.draw(st.sampled_from(["learn", "review", "assess"]))
    spec = {
        "user_id": "u",
        "catalog_id": catalog.catalog_id,
        "mode": {"type": mode},
        "filter": session_filter.model_dump(exclude_none=True),
        "constraints": constraints,
        "stopping_conditions": stopping,
    }
    context = engine.create_session(spec)
    mask = engine.filter_mask(catalog.catalog_id, session_filter)
    cmasks = [engine.filter_mask(catalog.catalog_id, c["filter"]) for c in constraints]
    used = [0] * len(constraints)
    events: list[dict[str, Any]] = []
    previous = (0, 0)
    answered: set[int] = set()
    for answer in data.draw(answers):
        result = engine.adaptive_step(context, events)
        status = result.session_status
        # interaction_count and duration are monotone
        assert status.interaction_count >= previous[0] and status.duration_ms >= previous[1]
        previous = (status.interaction_count, status.duration_ms)
        # the stop flag is true exactly when a condition holds
        expected = []
        proficiency = result.user_status.proficiency
        if "max_proficiency" in stopping and proficiency is not None and proficiency >= stopping["max_proficiency"]:
            expected.append("max_proficiency")
        if "max_interaction_count" in stopping and status.interaction_count >= stopping["max_interaction_count"]:
            expected.append("max_interaction_count")
        if "max_duration_ms" in stopping and status.duration_ms >= stopping["max_duration_ms"]:
            expected.append("max_duration_ms")
        assert status.satisfied_stopping_condition_keys == expected
        assert status.stop_session is bool(expected)
        rec = result.recommendation
        blocked = np.zeros(index.n_items, dtype=bool)
        for c, cmask, n in zip(constraints, cmasks, used, strict=True):
            if n + 1 > math.floor(c["value"]):
                blocked |= cmask
        # nothing_due exactly when a review recommends nothing with items eligible
        assert (result.nothing_due is not None) == (rec is None and mode == "review" and bool((mask & ~blocked).any()))
        if rec is None:
            # null only when nothing is eligible, or in review when nothing is due
            assert mode == "review" or not (mask & ~blocked).any()
            events = []
        else:
            position = index.position(rec.item_id, rec.topic_id)
            assert position is not None
            assert mask[position], "the recommendation matches the session filter"
            assert not blocked[position], "constraints are never violated"
            assert mode != "review" or position in answered, "review serves only items answered before"
            for k, cmask in enumerate(cmasks):
                used[k] += int(cmask[position])
            assert all(n <= math.floor(c["value"]) for n, c in zip(used, constraints, strict=True))
            now = format_timestamp(clock.advance(data.draw(st.integers(1, 120))))
            event: dict[str, Any] = {"timestamp": now, "recommendation_context": rec.recommendation_context}
            if answer == "skip":
                event["type"] = "skip"
            elif index.is_theory[position]:
                event |= {"type": "view_theory", "fraction_completed": answer}
            else:
                event |= {"type": "attempt", "score": answer}
                if index.scorable[position]:
                    answered.add(position)
            events = [event]
        # user status stays within its bounds
        us = result.user_status
        assert 0.0 <= us.progress <= 1.0 and us.time_spent_ms >= 0
        assert us.proficiency is None or 0.0 <= us.proficiency <= 1.0
