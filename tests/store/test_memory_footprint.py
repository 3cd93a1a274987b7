"""The memory store holds an event in a bounded number of bytes (the events dominate an engine's memory)."""

from __future__ import annotations

import gc
import tracemalloc
from datetime import UTC, datetime, timedelta

from learnloop.events import Interaction
from learnloop.store import MemoryStore

#: the engine's target: at most 200 MB per million stored events, learner states included
TARGET_PER_EVENT = 200 * 2**20 / 1e6
#: the store's share of it (the rest is left to the learner-state cache)
STORE_PER_EVENT = 0.55 * TARGET_PER_EVENT


def _learner_events(user: int, n: int) -> list[Interaction]:
    start = datetime(2024, 1, 1, tzinfo=UTC) + timedelta(hours=user)
    user_id = f"learner-{user}"
    return [
        Interaction(
            kind="attempt",
            user_id=user_id,
            catalog_id="course",
            item_id=f"q{(user * 7 + k) % 120}",
            topic_id=f"skill{(user * 7 + k) % 120 // 10}",
            timestamp=start + timedelta(seconds=37 * k),
            score=float(k % 3 == 0),
            time_spent_ms=1000 + k,
        )
        for k in range(n)
    ]


def test_an_event_costs_a_bounded_number_of_bytes() -> None:
    learners = [_learner_events(user, 100) for user in range(500)]  # 50,000 events
    rows = [[(i.key, i.to_doc()) for i in events] for events in learners]
    revisions = [((events[0].user_id, "course"), {"rev": 1, "hi": events[-1].epoch}) for events in learners]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        store = MemoryStore()
        for batch, revision in zip(rows, revisions, strict=True):
            with store.atomic():
                store.put_many("events", "app", batch)
                store.put_many("learners", "app", [revision])
        del batch, revision
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    n = store.count("events", "app")
    assert n == 50_000
    assert held / n <= STORE_PER_EVENT, f"{held / n:.0f} bytes per stored event"
    # the store still answers as before
    first = learners[0]
    assert store.get("events", "app", first[3].key) == first[3].to_doc()
    docs = [doc for _, doc in store.scan("events", "app", (first[0].user_id, "course"), order="seq")]
    assert docs == [i.to_doc() for i in first]


def test_overwrites_and_deletes_do_not_accumulate() -> None:
    events = _learner_events(1, 2000)
    store = MemoryStore()
    store.put_many("events", "app", [(i.key, i.to_doc()) for i in events])
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        # rewrite every event, one at a time and in batches: dead records never outweigh the live ones
        # (5 rounds leave about 163 KB here; without compaction they leave 1.1 MB, 3 rounds 0.8 MB)
        for _ in range(5):
            for i in events[:100]:
                store.put_many("events", "app", [(i.key, {**i.to_doc(), "score": 0.5})])
            store.put_many("events", "app", [(i.key, i.to_doc()) for i in events])
        store.delete_many("events", "app", [i.key for i in events[1000:]])
        store.put_many("events", "app", [(i.key, i.to_doc()) for i in events[1000:]])
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown <= 160 * len(events), f"{grown} bytes more after rewriting {len(events)} events"
    assert [doc for _, doc in store.scan("events", "app")] == [i.to_doc() for i in sorted(events, key=lambda i: i.key)]
