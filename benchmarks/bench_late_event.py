"""Another learner's step while one learner's late event is replayed (plain script; prints figures).

Setup: the course of ``tests/engine/test_concurrency.py`` (2 chapters of 3
topics of 4 items), one learner with a long history (``--events``, 60,000 by
default) and another with a session. A late event of the first learner (500
events before their latest) makes their next status read replay their history
from the checkpoint before it; meanwhile the other learner's session is stepped
in a loop. Printed: the replay read's time and the events it applied, and the
other learner's step times (p50, p99, max) during the replay and without one.
The test of this (``test_a_late_event_replays_one_learner_without_blocking_the_others``)
checks that the replay holds no lock the other learner's step takes; this
script gives the times that follow from it.

Run: ``.venv/bin/python benchmarks/bench_late_event.py`` (``--events 20000`` for a smaller run).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from learnloop import Engine
from learnloop.events import format_timestamp
from learnloop.sim import sample_course
from learnloop.tracing import LearnerModel

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def stamp(seconds: float) -> str:
    return format_timestamp(T0 + timedelta(seconds=seconds))


def step_times(engine: Engine, context: str, keep_going: Any, limit: int) -> list[float]:
    """Seconds of each of the other learner's steps while ``keep_going()`` (at most ``limit`` steps)."""
    times = []
    while keep_going() and len(times) < limit:
        t = time.perf_counter()
        engine.adaptive_step(context)
        times.append(time.perf_counter() - t)
    return times


def ms(times: list[float]) -> str:
    if not times:
        return "no step"
    a = np.array(times) * 1000
    return (
        f"p50 {np.percentile(a, 50):.2f} ms, p99 {np.percentile(a, 99):.2f} ms, max {a.max():.2f} ms ({a.size} steps)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=60_000, help="events of the learner with a long history")
    args = parser.parse_args()

    engine = Engine(seed=1)
    items, catalog = sample_course(n_chapters=2, topics_per_chapter=3, items_per_topic=4)
    engine.upsert_items(items)
    engine.upsert_catalog(catalog)
    cid = catalog.catalog_id
    index = engine.catalog_index(cid)
    pairs = [(i, index.topic_ids[index.item_topic[p]]) for p, i in enumerate(index.item_ids)]
    heavy = [
        {
            "type": "attempt",
            "timestamp": stamp(10 * n),
            "catalog_id": cid,
            "item_id": pairs[n % len(pairs)][0],
            "topic_id": pairs[n % len(pairs)][1],
            "score": float(n % 2),
        }
        for n in range(args.events)
    ]
    for at in range(0, len(heavy), 1000):
        engine.upsert_events("heavy", heavy[at : at + 1000])
    engine.user_status("heavy", cid, [{}])
    light = engine.create_session({"user_id": "light", "catalog_id": cid, "mode": {"type": "learn"}, "filter": {}})
    engine.adaptive_step(light)
    quiet = step_times(engine, light, lambda: True, 500)

    applied: list[int] = []
    update_many = LearnerModel.update_many

    def counted(model: LearnerModel, state: Any, events: Any) -> Any:
        events = list(events)
        if threading.current_thread().name == "replay":
            applied.append(len(events))
        return update_many(model, state, events)

    LearnerModel.update_many = counted  # type: ignore[method-assign]
    late = dict(heavy[-500], timestamp=stamp(10 * (len(heavy) - 500) + 5))
    engine.upsert_events("heavy", [late])
    replay_seconds: list[float] = []

    def read() -> None:
        t = time.perf_counter()
        engine.user_status("heavy", cid, [{}])
        replay_seconds.append(time.perf_counter() - t)

    reader = threading.Thread(target=read, name="replay")
    reader.start()
    during = step_times(engine, light, reader.is_alive, 100_000)
    reader.join()
    LearnerModel.update_many = update_many  # type: ignore[method-assign]

    print(f"late event in a history of {args.events:,} events")
    print(f"  the replay read: {replay_seconds[0] * 1000:.1f} ms, {sum(applied):,} events applied")
    print(f"  another learner's step during the replay: {ms(during)}")
    print(f"  another learner's step without one:       {ms(quiet)}")


if __name__ == "__main__":
    main()
