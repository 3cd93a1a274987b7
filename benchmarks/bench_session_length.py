"""How the adaptive-engine step's latency moves over one long session, per mode and store.

Setup as in ``bench_sessions.py``: a catalog of 10,000 items (100 topics of
100, each a prerequisite of the next) and 100,000 stored events; then one
session per mode over all items, of ``--steps`` steps (default 2,000), each
answering the previous recommendation with one event (``bench_sessions.steps``,
20 untimed warm-up steps first). An assessment lists every item it gives, so
its 2,000th step knows 2,000 items; a step whose cost followed the session's
length would show it here. One more assessment has its steps taken in turn by
two engines on the store (as two processes behind a load balancer would), each
step reading what the other engine's last step wrote.

Printed: the step's p50 over the first, middle and last 10 % of the steps and
the last over the first. One BLAS thread.

Run: ``.venv/bin/python benchmarks/bench_session_length.py`` (``--write-docs``:
the table into ``docs/performance.md`` between its ``bench_session_length``
markers).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import gc
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_sessions import DOCS, batches, build, command_line, ingest, machine_note, replace_block, steps, today
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from learnloop import Engine
from learnloop.events import format_timestamp
from learnloop.sim import SimClock
from learnloop.store import SQLiteStore

MODES = ("learn", "review", "assess")
NAMES = {"memory": "memory", "sqlite": "SQLite"}
TURNS = "assess, two engines in turn"


def measure(store: str, tmp: Path, n_steps: int) -> dict[str, np.ndarray]:
    """Per mode, the milliseconds of each step of one session on a fresh ``store``."""
    clock = SimClock()
    rng = np.random.default_rng(1)
    engine = Engine(seed=1, clock=clock, store=SQLiteStore(tmp / f"{store}.db") if store == "sqlite" else None)
    other = Engine(seed=1, clock=clock, store=SQLiteStore(tmp / f"{store}.db") if store == "sqlite" else engine.store)
    try:
        build(engine, 100, 100)
        ingest(engine, batches(clock, rng, 1000, 100, 100, 100, "u"))
        out = {mode: steps(engine, clock, rng, mode, n_steps) for mode in tqdm(MODES, desc=NAMES[store], leave=False)}
        out[TURNS] = turns([engine, other], clock, rng, n_steps)
        return out
    finally:
        engine.close()
        other.close()


def turns(engines: list[Engine], clock: SimClock, rng: np.random.Generator, n: int, warmup: int = 20) -> np.ndarray:
    """Milliseconds of each of ``n`` steps (after ``warmup`` untimed ones) of one assessment of learner
    ``u2`` over all items whose steps ``engines`` take in turn, each answering the previous recommendation."""
    context = engines[0].create_session(
        {"user_id": "u2", "catalog_id": "big", "mode": {"type": "assess"}, "filter": {}}
    )
    events: list[dict] = []
    times = []
    gc.collect()
    for k in range(n + warmup):
        t = time.perf_counter()
        rec = engines[k % len(engines)].adaptive_step(context, events).recommendation
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


def windows(latencies: np.ndarray) -> tuple[float, float, float]:
    """p50 over the first, middle and last tenth of the steps."""
    n = latencies.size
    tenth = max(1, n // 10)
    middle = (n - tenth) // 2
    return (
        float(np.median(latencies[:tenth])),
        float(np.median(latencies[middle : middle + tenth])),
        float(np.median(latencies[-tenth:])),
    )


def table(results: dict[str, dict[str, np.ndarray]], n_steps: int) -> str:
    tenth = max(1, n_steps // 10)
    middle = (n_steps - tenth) // 2
    lines = [
        f"| store | mode | steps 1–{tenth:,} p50 | steps {middle + 1:,}–{middle + tenth:,} p50 "
        f"| steps {n_steps - tenth + 1:,}–{n_steps:,} p50 | last / first |",
        "|---|---|---|---|---|---|",
    ]
    for store, modes in results.items():
        for mode, latencies in modes.items():
            first, mid, last = windows(latencies)
            lines.append(
                f"| {NAMES[store]} | {mode} | {first:.3f} ms | {mid:.3f} ms | {last:.3f} ms | {last / first:.2f}× |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000, help="steps per session (default 2,000)")
    parser.add_argument("--stores", default="memory,sqlite", help="comma-separated: memory, sqlite")
    parser.add_argument("--write-docs", action="store_true", help="the table into the docs file")
    parser.add_argument("--docs", type=Path, default=DOCS, help="the docs file for --write-docs")
    args = parser.parse_args()
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    unknown = sorted(set(stores) - set(NAMES))
    if unknown:
        parser.error(f"unknown stores: {', '.join(unknown)}")
    if args.steps < 10:
        parser.error("--steps must be at least 10")
    with threadpool_limits(limits=1), tempfile.TemporaryDirectory() as tmp:
        results = {store: measure(store, Path(tmp), args.steps) for store in stores}
    text = table(results, args.steps)
    print(text)
    if args.write_docs:
        body = (
            f"Generated by `{command_line()}` on {today()} ({machine_note()}). Catalog of 10,000 items, "
            f"100,000 stored events, one session of {args.steps:,} steps per mode over all items (and one "
            f"assessment whose steps two engines on the store take in turn).\n\n{text}"
        )
        replace_block(args.docs, "bench_session_length", body)


if __name__ == "__main__":
    main()
