"""Two engines on one SQLite file (as two processes would have) see each other's writes."""

from __future__ import annotations

from pathlib import Path

from learnloop import Engine
from learnloop.events import format_timestamp
from learnloop.sim import SimClock, sample_course


def test_two_engines_share_sessions_events_and_content(tmp_path: Path) -> None:
    clock = SimClock()
    first = Engine.open(tmp_path / "shared.db", seed=1, clock=clock)
    second = Engine.open(tmp_path / "shared.db", seed=1, clock=clock)
    items, catalog = sample_course(n_chapters=1, topics_per_chapter=2, items_per_topic=3)
    first.upsert_items(items)
    first.upsert_catalog(catalog)
    cid = catalog.catalog_id
    assert second.catalog_ids() == [cid]

    context = first.create_session({"user_id": "u", "catalog_id": cid, "mode": {"type": "learn"}, "filter": {}})
    events: list[dict] = []
    for k in range(8):
        engine = first if k % 2 == 0 else second  # alternate writers
        step = engine.adaptive_step(context, events)
        assert step.session_status.interaction_count == k
        rec = step.recommendation
        assert rec is not None
        events = [
            {
                "type": "attempt",
                "timestamp": format_timestamp(clock.advance(60)),
                "recommendation_context": rec.recommendation_context,
                "score": 1.0,
            }
        ]
    first.adaptive_step(context, events)
    assert first.user_status("u", cid, [{}]) == second.user_status("u", cid, [{}])

    # a content change made through one engine is used by the other at once
    second.delete_items(["ch1-t1-q1"])
    assert "ch1-t1-q1" not in first.catalog_index(cid).item_ids
    first.close()
    second.close()


def test_an_assessment_stepped_by_two_engines_never_gives_an_item_twice(tmp_path: Path) -> None:
    clock = SimClock()
    first = Engine.open(tmp_path / "shared.db", seed=3, clock=clock)
    second = Engine.open(tmp_path / "shared.db", seed=3, clock=clock)
    items, catalog = sample_course(n_chapters=1, topics_per_chapter=3, items_per_topic=6, with_theory=False)
    first.upsert_items(items)
    first.upsert_catalog(catalog)
    spec = {"user_id": "u", "catalog_id": catalog.catalog_id, "mode": {"type": "assess"}, "filter": {}}
    context = first.create_session(spec)
    given: list[str] = []
    events: list[dict] = []
    # steps by one engine in runs of 1, 2 and 3, so that each sees several of the other's at once
    for k, engine in enumerate(([first, second, second, first, first, first, second, first, second, second] * 2)[:16]):
        rec = engine.adaptive_step(context, events).recommendation
        assert rec is not None, k
        given.append(rec.item_id)
        events = [
            {
                "type": "attempt",
                "timestamp": format_timestamp(clock.advance(30)),
                "recommendation_context": rec.recommendation_context,
                "score": float(k % 3 != 0),
            }
        ]
    assert len(given) == len(set(given)), given
    first.close()
    second.close()
