"""Adaptive-engine step latency and event ingestion, on the in-memory and SQLite stores.

Setup: one catalog of 10,000 items (100 topics of 100 items, each topic a
prerequisite of the next), 100,000 stored events (1,000 learners x 100), then
sessions over a filter of all 10,000 items in each mode. Each step posts the
answer to the previous recommendation (one event) and asks for the next one.

Targets: step p50 under 1 ms in memory and under 3 ms on SQLite, p99 under
5 ms; ingestion over 50,000 events/s.

Run: ``.venv/bin/python benchmarks/bench_sessions.py`` (``--quick`` for a smaller run).
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import numpy as np

from learnloop import Engine
from learnloop.api import V2Api
from learnloop.events import format_timestamp
from learnloop.sim import SimClock


def build(engine: Engine, n_topics: int, per_topic: int) -> None:
    engine.upsert_items(
        [
            {
                "item_id": f"i{t}-{k}",
                "display_name": f"item {t}.{k}",
                "scorable": True,
                "difficulty": round(0.2 + 0.6 * k / per_topic, 3),
            }
            for t in range(n_topics)
            for k in range(per_topic)
        ]
    )
    engine.upsert_catalog(
        {
            "catalog_id": "big",
            "display_name": "Big",
            "topics": [
                {
                    "topic_id": f"t{t}",
                    "display_name": f"Topic {t}",
                    "item_refs": [{"item_id": f"i{t}-{k}"} for k in range(per_topic)],
                    **({"prerequisite_topic_refs": [{"topic_id": f"t{t - 1}"}]} if t else {}),
                }
                for t in range(n_topics)
            ],
        }
    )


def batches(
    clock: SimClock, rng: np.random.Generator, users: int, per_user: int, n_topics: int, per_topic: int, prefix: str
) -> list[tuple[str, list[dict]]]:
    start = clock()
    return [
        (
            f"{prefix}{u}",
            [
                {
                    "type": "attempt",
                    "item_id": f"i{rng.integers(n_topics)}-{rng.integers(per_topic)}",
                    "catalog_id": "big",
                    "timestamp": format_timestamp(start + timedelta(seconds=k)),
                    "score": float(rng.random() < 0.6),
                    "time_spent_ms": 20_000,
                }
                for k in range(per_user)
            ],
        )
        for u in range(users)
    ]


def ingest(engine: Engine, work: list[tuple[str, list[dict]]]) -> float:
    gc.collect()
    t = time.perf_counter()
    for user, events in work:
        engine.upsert_events(user, events)
    return sum(len(e) for _, e in work) / (time.perf_counter() - t)


def steps(engine: Engine, clock: SimClock, rng: np.random.Generator, mode: str, n: int, warmup: int = 20) -> np.ndarray:
    context = engine.create_session({"user_id": "u1", "catalog_id": "big", "mode": {"type": mode}, "filter": {}})
    events: list[dict] = []
    times = []
    gc.collect()
    for _ in range(n + warmup):
        t = time.perf_counter()
        rec = engine.adaptive_step(context, events).recommendation
        times.append(time.perf_counter() - t)
        events = [
            {
                "type": "attempt",
                "timestamp": format_timestamp(clock.advance(30)),
                "recommendation_context": rec.recommendation_context,
                "score": float(rng.random() < 0.7),
                "time_spent_ms": 15_000,
            }
        ]
    return np.asarray(times[warmup:]) * 1000.0


def http_steps(engine: Engine, clock: SimClock, rng: np.random.Generator, n: int) -> np.ndarray:
    """The same steps through ``V2Api.handle`` with JSON bytes in (the façade's overhead included)."""
    import json

    api = V2Api(engine)
    body = json.dumps({"user_id": "u2", "catalog_id": "big", "mode": {"type": "learn"}, "filter": {}}).encode()
    context = api.handle("POST", "/v2/create-adaptive-session", body=body).body["data"]["session_context"]
    events: list[dict] = []
    times = []
    for _ in range(n + 20):
        payload = json.dumps({"session_context": context, "events": events}).encode()
        t = time.perf_counter()
        out = api.handle("POST", "/v2/adaptive-engine", body=payload).body["data"]["recommendation"]
        times.append(time.perf_counter() - t)
        events = [
            {
                "type": "attempt",
                "timestamp": format_timestamp(clock.advance(30)),
                "recommendation_context": out["recommendation_context"],
                "score": float(rng.random() < 0.7),
            }
        ]
    return np.asarray(times[20:]) * 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10x fewer stored events and steps")
    parser.add_argument("--stores", default="memory,sqlite", help="comma-separated: memory, sqlite")
    args = parser.parse_args()
    n_topics, per_topic = 100, 100
    users, per_user, n_steps = (100, 100, 100) if args.quick else (1000, 100, 500)
    print(f"catalog: {n_topics * per_topic} items; stored events: {users * per_user}; steps per mode: {n_steps}")
    with tempfile.TemporaryDirectory() as tmp:
        for store in args.stores.split(","):
            clock = SimClock()
            rng = np.random.default_rng(1)
            engine = (
                Engine(seed=1, clock=clock)
                if store == "memory"
                else Engine.open(Path(tmp) / "b.db", seed=1, clock=clock)
            )
            build(engine, n_topics, per_topic)
            rate = ingest(engine, batches(clock, rng, users, per_user, n_topics, per_topic, "u"))
            big = ingest(engine, batches(clock, rng, max(users // 10, 10), 1000, n_topics, per_topic, "bulk"))
            print(
                f"[{store}] ingestion: {rate:,.0f} events/s in calls of {per_user}; {big:,.0f} events/s in calls of 1000"
            )
            for mode in ("learn", "review", "assess"):
                lat = steps(engine, clock, rng, mode, n_steps)
                print(
                    f"[{store}] {mode:6s} step: p50 {np.percentile(lat, 50):.3f} ms, p99 {np.percentile(lat, 99):.3f} ms"
                )
            lat = http_steps(engine, clock, rng, n_steps)
            print(
                f"[{store}] learn step through V2Api.handle: p50 {np.percentile(lat, 50):.3f} ms, "
                f"p99 {np.percentile(lat, 99):.3f} ms"
            )
            engine.close()


if __name__ == "__main__":
    main()
