"""How long an adaptive step holds its store's write transaction, in process.

One thread steps learn sessions of the sample course through ``V2Api.handle``
(``POST /v2/adaptive-engine``, each call answering the previous recommendation):
8 learners x 20 steps to warm up, then 8 other learners x 40 timed steps. For
each step: its wall time, and the time inside the store's outermost
``atomic()`` block (on SQLite the ``flock`` every process's writers wait on is
held that long; on PostgreSQL the transaction and its locks). Prints medians
and p90s, and the thread's CPU time per step, for SQLite (a temporary file)
and PostgreSQL (a fresh database on ``--postgres URL``, else
``LEARNLOOP_TEST_POSTGRES``; skipped without one).

Run it with ``PYTHONPATH`` on another checkout's ``src`` to compare versions
in the same window: it times whatever ``learnloop`` it imports.

Run: ``.venv/bin/python benchmarks/bench_step_lock.py [--stores sqlite,postgres] [--postgres URL]``
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit


def _timed_blocks(store_class: Any, held: list[float]) -> None:
    """Wrap ``store_class.atomic`` so that each outermost block's duration is appended to ``held``."""
    original = store_class.atomic
    depth = [0]

    @contextlib.contextmanager
    def atomic(self: Any, **kwargs: Any) -> Iterator[None]:
        depth[0] += 1
        start = time.perf_counter()
        try:
            with original(self, **kwargs):
                yield
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                held.append(time.perf_counter() - start)

    store_class.atomic = atomic


def _steps(v2: Any, users: range, steps: int, clock: list[datetime]) -> list[float]:
    headers = {"X-API-KEY": "k"}
    walls = []
    for user in users:
        body = {"user_id": f"u{user}", "catalog_id": "sample-course", "mode": {"type": "learn"}, "filter": {}}
        answer = v2.handle("POST", "/v2/create-adaptive-session", body=body, headers=headers)
        context, rec, item = answer.body["data"]["session_context"], None, ""
        for _ in range(steps):
            events = []
            if rec is not None:
                clock[0] += timedelta(seconds=30)
                stamp = clock[0].strftime("%Y-%m-%dT%H:%M:%S.000Z")
                event = {"type": "attempt", "score": 1.0, "time_spent_ms": 1000, "timestamp": stamp}
                if item.endswith("-theory"):
                    event = {
                        "type": "view_theory",
                        "fraction_completed": 1.0,
                        "time_spent_ms": 1000,
                        "timestamp": stamp,
                    }
                events = [event | {"recommendation_context": rec}]
            start = time.perf_counter()
            answer = v2.handle(
                "POST", "/v2/adaptive-engine", body={"session_context": context, "events": events}, headers=headers
            )
            walls.append(time.perf_counter() - start)
            assert answer.status == 200, answer.body
            data = answer.body["data"]
            if not data.get("recommendation"):
                break
            rec, item = data["recommendation"]["recommendation_context"], data["recommendation"]["item_id"]
    return walls


def measure(kind: str, url: str) -> None:
    from learnloop import Engine
    from learnloop.api import V2Api
    from learnloop.server import load_sample_course
    from learnloop.store import PostgresStore, SQLiteStore

    held: list[float] = []
    _timed_blocks(PostgresStore if kind == "postgres" else SQLiteStore, held)
    engine = Engine.open(url, seed=1)
    try:
        load_sample_course(engine, ["app"])
        v2 = V2Api(engine, api_keys={"k": "app"})
        clock = [datetime(2025, 1, 1, tzinfo=UTC)]
        _steps(v2, range(8), 20, clock)
        held.clear()
        cpu = time.thread_time()
        walls = _steps(v2, range(8, 16), 40, clock)
        cpu = (time.thread_time() - cpu) / len(walls)
    finally:
        engine.close()

    def ms(values: list[float]) -> str:
        return f"median {1000 * statistics.median(values):.3f} ms, p90 {1000 * statistics.quantiles(values, n=10)[-1]:.3f} ms"

    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"{kind}: {len(walls)} steps; step {ms(walls)}; inside the write transaction {ms(held)}; "
        f"CPU {1000 * cpu:.2f} ms a step (load average {load})",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="sqlite,postgres", help="comma-separated: sqlite, postgres")
    parser.add_argument("--postgres", default=None, help="a PostgreSQL server URL where databases may be created")
    args = parser.parse_args()
    import learnloop

    print(f"learnloop from {Path(learnloop.__file__).parent}")
    for kind in args.stores.split(","):
        if kind == "sqlite":
            with tempfile.TemporaryDirectory() as tmp:
                measure("sqlite", str(Path(tmp) / "steps.db"))
            continue
        server = args.postgres or os.environ.get("LEARNLOOP_TEST_POSTGRES")
        if not server:
            print("postgres: skipped (no --postgres URL or LEARNLOOP_TEST_POSTGRES)", file=sys.stderr)
            continue
        import psycopg

        name = f"learnloop_bench_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        try:
            measure("postgres", urlsplit(server)._replace(path=f"/{name}").geturl())
        finally:
            with psycopg.connect(server, autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
