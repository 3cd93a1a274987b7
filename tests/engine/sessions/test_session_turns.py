"""Engines taking turns at one assessment (as processes behind a load balancer would): a step reads
the blocks of assessed items written since its engine's last step, not the whole list again."""

from __future__ import annotations

from typing import Any

from learnloop import Engine
from learnloop.engine.sessions.documents import BLOCK
from learnloop.events import format_timestamp
from learnloop.sim import SimClock, sample_course
from learnloop.store import MemoryStore


def test_engines_taking_turns_read_the_blocks_written_since_their_last_step() -> None:
    clock = SimClock()
    store = MemoryStore()
    engines = [Engine(seed=3, clock=clock, store=store) for _ in range(2)]
    items, catalog = sample_course(n_chapters=3, topics_per_chapter=3, items_per_topic=20)
    engines[0].upsert_items(items)
    engines[0].upsert_catalog(catalog)
    reads: list[int] = []
    real = store.get_many

    def counted(table: str, app: str, keys: Any) -> Any:
        keys = list(keys)
        if table == "sessions":
            reads[-1] += len(keys)
        return real(table, app, keys)

    store.get_many = counted  # type: ignore[method-assign]
    context = engines[0].create_session(
        {"user_id": "u", "catalog_id": catalog.catalog_id, "mode": {"type": "assess"}, "filter": {}}
    )
    events: list[dict[str, Any]] = []
    sets: list[int] = []  # the set of the items assessed engine 0 keeps, step after step
    for k in range(5 * BLOCK):
        reads.append(0)
        step = engines[k % 2].adaptive_step(context, events)
        kept = engines[0]._sessions._assessed_sets.get(("default", engines[0].session(context).session_id))
        if kept is not None:
            sets.append(id(kept[1]))
        rec = step.recommendation
        assert rec is not None
        stamp = format_timestamp(clock.advance(40))
        events = [{"type": "attempt", "timestamp": stamp, "recommendation_context": rec.recommendation_context}]
        events[0]["score"] = float(k % 3 != 0)
    state = engines[0].session(context)
    assert len(state.assessed) >= 4 * BLOCK
    # each step reads at most the one block the other engine's step may have written, and adds the
    # items the other engine's steps assessed to the set it kept (rather than making it anew)
    assert max(reads[2:]) <= 1
    assert len(set(sets)) == 1
    assert Engine(seed=3, clock=clock, store=store).session(context) == state
    for engine in engines:  # the set of the items assessed kept beside each engine's list is that list's
        found = engine._sessions._assessed_sets.get(("default", state.session_id))
        assert found is not None and found[1] == set(found[0])
