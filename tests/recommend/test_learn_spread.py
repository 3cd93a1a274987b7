"""Learn mode reads the catalog's fitted prerequisite gating: progression where it gates, spread where it does not."""

from __future__ import annotations

from typing import Any

import pytest

from learnloop import Engine
from learnloop.events import format_timestamp
from learnloop.sim import SimClock, sample_course

SPREAD = "prerequisites do not gate learning in this catalog"


def _learn_session(options: dict[str, Any] | None, steps: int = 12, score: float = 1.0) -> list[tuple[str, str]]:
    """(topic, reason) of each step of a learn session whose learner scores ``score`` on every exercise."""
    clock = SimClock()
    engine = Engine(seed=3, clock=clock)
    items, catalog = sample_course(n_chapters=2, topics_per_chapter=3, items_per_topic=4)
    engine.upsert_items(items)
    engine.upsert_catalog(catalog)
    cid = catalog.catalog_id
    if options is not None:
        engine.set_learner_options(cid, options)
    index = engine.catalog_index(cid)
    context = engine.create_session({"user_id": "u", "catalog_id": cid, "mode": {"type": "learn"}, "filter": {}})
    events: list[dict[str, Any]] = []
    seen = []
    for _ in range(steps):
        rec = engine.adaptive_step(context, events).recommendation
        assert rec is not None
        seen.append((rec.topic_id, rec.reason.description))
        position = index.position(rec.item_id, rec.topic_id)
        event: dict[str, Any] = {"timestamp": format_timestamp(clock.advance(60))}
        if index.is_theory[position]:
            event |= {"type": "view_theory"}
        else:
            event |= {"type": "attempt", "score": score}
        events = [{**event, "recommendation_context": rec.recommendation_context}]
    return seen


def test_weak_fitted_gating_spreads_practice_across_the_topics() -> None:
    seen = _learn_session({"prerequisite_gating": 0.0})
    topics = [topic for topic, _ in seen]
    assert len(set(topics)) == 6  # every topic within 12 steps: its theory, then one exercise, then the next
    assert topics[:4] == [topics[0], topics[0], topics[2], topics[2]] and topics[0] != topics[2]
    chosen = [reason for _, reason in seen if not reason.startswith("exploring")]  # (a seeded random step)
    assert len(chosen) >= 10 and all(SPREAD in reason and "fitted gating 0)" in reason for reason in chosen)


@pytest.mark.parametrize("options", [None, {"drift": 0.02}, {"prerequisite_gating": 2.0}])
def test_unfitted_or_strong_gating_keeps_the_progression(options: dict[str, Any] | None) -> None:
    seen = _learn_session(options)
    assert len({topic for topic, _ in seen}) <= 3  # a topic is practised until it is mastered
    assert not any(SPREAD in reason for _, reason in seen)


def test_the_threshold_is_the_policys_setting() -> None:
    from learnloop.recommend import LearnPolicy

    assert LearnPolicy().spread_below == 0.75
    assert any(SPREAD in reason for _, reason in _learn_session({"prerequisite_gating": 0.5}))
    assert not any(SPREAD in reason for _, reason in _learn_session({"prerequisite_gating": 1.0}))


def test_a_moderate_fitted_gating_moves_on_at_a_lower_predicted_success() -> None:
    from learnloop.recommend import LearnPolicy

    policy = LearnPolicy()
    assert policy.threshold_for(None) == policy.threshold_for(0.0) == policy.mastery_threshold == 0.8
    assert policy.threshold_for(1.0) == pytest.approx(0.7)  # the successors learn at 70 % of their full rate
    assert policy.threshold_for(2.0) == 0.8  # 0.7 ** 0.5 = 0.84: the policy's own bar is lower
    # a learner scoring 0.75 on every exercise: the first topic is left sooner under a moderate gating
    strong = [topic for topic, _ in _learn_session({"prerequisite_gating": 4.0}, steps=20, score=0.75)]
    moderate = [topic for topic, _ in _learn_session({"prerequisite_gating": 1.0}, steps=20, score=0.75)]
    assert strong[0] == moderate[0]
    assert moderate.count(moderate[0]) < strong.count(strong[0])
    assert len(set(moderate)) > len(set(strong))
