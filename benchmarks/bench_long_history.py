"""A learner with a long history: import, first read, the step after an event dated before all of them
(plain script; prints figures against the targets).

Setup per store (memory, SQLite, PostgreSQL): the course of ``bench_late_event.py`` (2
chapters of 3 topics of 4 items), one learner ("heavy") whose ``--events``
answers (100,000 by default) are imported with ``Engine.upsert_events`` in calls
of 10,000, and another learner ("light") with a session. Printed, against the
targets of issue 29 (point 6):

* the import's time (all calls), and the first status read after it (target ≤ 0.5 s);
* the heavy learner's adaptive step after one event dated before all of them
  (a replay of the whole history, from the store: target ≤ 0.5 s), wall time and
  the thread's CPU time (what it costs one core, on a machine where other work
  runs too: the targets are judged on it), and the events per second that makes
  (stored events / the step's time; target ≥ 200,000);
* on SQLite and PostgreSQL, the first read of a second engine on the same
  store (a rebuild from the store, as after a restart);
* the light learner's step (p50, p99, max) while the heavy step runs in another
  thread, and without it.

BLAS threads are pinned to 1. The compiled replay loop (extra ``fast``) is
loaded by the first long apply of the process, here inside the import.

PostgreSQL (``--stores memory,sqlite,postgres``): ``--postgres URL`` (a server
where databases may be created), else ``LEARNLOOP_TEST_POSTGRES``, else a
throwaway server with PostgreSQL's durable defaults, as in ``bench_http.py``.

Run: ``.venv/bin/python benchmarks/bench_long_history.py`` (``--events 20000`` for a smaller run;
``--write-docs``: the figures into ``docs/performance.md`` between its ``bench_long_history`` markers).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from bench_http import drop_postgres, durability, fresh_postgres, postgres_url
from bench_sessions import DOCS, command_line, machine_note, replace_block, today
from tqdm import tqdm

from learnloop import Engine
from learnloop.events import format_timestamp
from learnloop.sim import sample_course

T0 = datetime(2025, 1, 1, tzinfo=UTC)
TARGET_SECONDS = 0.5
TARGET_RATE = 200_000
CALL = 10_000


def stamp(seconds: float) -> str:
    return format_timestamp(T0 + timedelta(seconds=seconds))


def course(engine: Engine) -> tuple[str, list[tuple[str, str]]]:
    items, catalog = sample_course(n_chapters=2, topics_per_chapter=3, items_per_topic=4)
    engine.upsert_items(items)
    engine.upsert_catalog(catalog)
    index = engine.catalog_index(catalog.catalog_id)
    return catalog.catalog_id, [(i, index.topic_ids[index.item_topic[p]]) for p, i in enumerate(index.item_ids)]


def history(cid: str, pairs: list[tuple[str, str]], n: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(0)
    out = []
    for k in range(n):
        item, topic = pairs[int(rng.integers(len(pairs)))]
        event: dict[str, Any] = {"timestamp": stamp(10 * k), "catalog_id": cid, "item_id": item, "topic_id": topic}
        if item.endswith("theory"):
            event.update(type="view_theory", fraction_completed=1.0)
        else:
            event.update(type="attempt", score=float(rng.random() < 0.7), time_spent_ms=int(rng.integers(1000, 9000)))
        out.append(event)
    return out


def timed(fn: Any) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def step_times(engine: Engine, context: str, keep_going: Any, limit: int) -> list[float]:
    times = []
    while keep_going() and len(times) < limit:
        times.append(timed(lambda: engine.adaptive_step(context)))
    return times


def percentiles(times: list[float]) -> dict[str, float]:
    if not times:
        return {"steps": 0}
    a = np.array(times) * 1000
    return {"p50_ms": float(np.percentile(a, 50)), "p99_ms": float(np.percentile(a, 99)), "max_ms": float(a.max()),
            "steps": int(a.size)}  # fmt: skip


def open_store(where: str | Path | None) -> Engine:
    return Engine(seed=1) if where is None else Engine.open(where, seed=1)


def measure(store: str, where: str | Path | None, n: int) -> dict[str, Any]:
    """The figures of one store; ``where`` is the SQLite file or the PostgreSQL database (None: memory)."""
    engine = open_store(where)
    cid, pairs = course(engine)
    events = history(cid, pairs, n)
    t = time.perf_counter()
    for at in tqdm(range(0, n, CALL), desc=f"{store}: import", unit="call", leave=False):
        engine.upsert_events("heavy", events[at : at + CALL])
    out: dict[str, Any] = {"import_s": time.perf_counter() - t}
    out["first_read_s"] = timed(lambda: engine.user_status("heavy", cid, [{}]))
    heavy = engine.create_session({"user_id": "heavy", "catalog_id": cid, "mode": {"type": "learn"}, "filter": {}})
    light = engine.create_session({"user_id": "light", "catalog_id": cid, "mode": {"type": "learn"}, "filter": {}})
    engine.adaptive_step(heavy)
    engine.adaptive_step(light)
    out["quiet"] = percentiles(step_times(engine, light, lambda: True, 300))
    first_attempt = next(e for e in events if e["type"] == "attempt")
    engine.upsert_events("heavy", [dict(first_attempt, timestamp=stamp(-3600), score=1.0)])  # dated before all
    seconds: list[float] = []
    cpu: list[float] = []

    def late_step() -> None:
        start = time.thread_time()
        seconds.append(timed(lambda: engine.adaptive_step(heavy)))
        cpu.append(time.thread_time() - start)

    replay = threading.Thread(target=late_step)
    replay.start()
    out["during"] = percentiles(step_times(engine, light, replay.is_alive, 100_000))
    replay.join()
    out["late_step_s"] = seconds[0]
    out["late_step_cpu_s"] = cpu[0]  # the thread's CPU time: what the step costs one core
    out["events_per_s"] = (n + 1) / seconds[0]
    out["events_per_cpu_s"] = (n + 1) / cpu[0]
    if where is not None:
        engine.close()
        other = open_store(where)
        start = time.thread_time()
        out["restart_read_s"] = timed(lambda: other.user_status("heavy", cid, [{}]))
        out["restart_read_cpu_s"] = time.thread_time() - start
        other.close()
    else:
        engine.close()
    return out


def verdict(value: float, target: float, *, at_least: bool = False) -> str:
    ok = value >= target if at_least else value <= target
    return "meets" if ok else "misses"


def report(results: dict[str, dict[str, Any]], n: int) -> str:
    lines = [f"A learner with {n:,} stored events (imported in calls of {CALL:,}); targets ≤ {TARGET_SECONDS} s, "
             f"≥ {TARGET_RATE:,} events/s.", ""]  # fmt: skip
    lines += ["| store | import | first read after it | step after an event dated first (its CPU time) | events/s (per CPU s) | "
              "read after a restart (CPU) | other learner's step p50 / p99 during (quiet) |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for store, r in results.items():
        d, q = r["during"], r["quiet"]
        restart = f"{r['restart_read_s']:.3f} s ({r['restart_read_cpu_s']:.3f} s)" if "restart_read_s" in r else "–"
        lines.append(
            f"| {store} | {r['import_s']:.2f} s | {r['first_read_s']:.3f} s ({verdict(r['first_read_s'], TARGET_SECONDS)}) "
            f"| {r['late_step_s']:.3f} s ({r['late_step_cpu_s']:.3f} s: {verdict(r['late_step_cpu_s'], TARGET_SECONDS)}) "
            f"| {r['events_per_s']:,.0f} ({r['events_per_cpu_s']:,.0f}: "
            f"{verdict(r['events_per_cpu_s'], TARGET_RATE, at_least=True)}) | {restart} "
            f"| {d.get('p50_ms', float('nan')):.2f} / {d.get('p99_ms', float('nan')):.2f} ms, {d['steps']} steps "
            f"({q['p50_ms']:.2f} / {q['p99_ms']:.2f} ms) |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000, help="events of the learner with a long history")
    parser.add_argument("--stores", default="memory,sqlite", help="comma-separated: memory, sqlite, postgres")
    parser.add_argument("--postgres", help="a PostgreSQL server URL where databases may be created")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON line too")
    parser.add_argument("--write-docs", action="store_true", help="the table into the docs file")
    parser.add_argument("--docs", type=Path, default=DOCS, help="the docs file for --write-docs")
    args = parser.parse_args()
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    if set(stores) - {"memory", "sqlite", "postgres"} or args.events < CALL:
        parser.error(f"stores are memory, sqlite and postgres; --events must be at least {CALL:,}")
    server = postgres_url(args.postgres)
    if "postgres" in stores and server is None:
        # run again inside a throwaway PostgreSQL server with durable settings (stopped when the script exits)
        script = Path(__file__).resolve().parent.parent / "scripts" / "_postgres.sh"
        inner = shlex.join([sys.executable, *sys.argv])
        env = dict(os.environ, LEARNLOOP_POSTGRES_DURABLE="1")
        raise SystemExit(subprocess.call(["bash", "-c", f"source {shlex.quote(str(script))} && {inner}"], env=env))
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for store in stores:
            if store == "postgres":
                assert server is not None
                url = fresh_postgres(server)
                try:
                    results[store] = measure(store, url, args.events)
                finally:
                    drop_postgres(server, url)
            else:
                results[store] = measure(store, Path(tmp) / f"{store}.db" if store == "sqlite" else None, args.events)
    text = report(results, args.events)
    if "postgres" in stores:
        assert server is not None
        text += f"\n\nPostgreSQL server: {durability(server)}."
    print(text)
    if args.json:
        print("JSON " + json.dumps(results))
    if args.write_docs:
        body = f"Generated by `{command_line()}` on {today()} ({machine_note()}, load average {os.getloadavg()[0]:.1f}).\n\n{text}"
        replace_block(args.docs, "bench_long_history", body)


if __name__ == "__main__":
    main()
