"""Ingestion through the v2 contract, in process: ``V2Api.handle("POST", "/v2/upsert-events")`` with JSON bytes.

The setup of ``bench_sessions.py`` (a catalog of 10,000 items in 100 topics),
on the in-memory store (``--store sqlite`` for a SQLite file). Calls of 1,000
attempts, one new learner per call, timed in 5 consecutive rounds; each
figure is the median round's rate, per wall-clock second and per second of
the thread's CPU time (the figure to compare on a loaded machine). In the same run: the engine itself
(``Engine.upsert_events`` with plain dicts), the façade with bodies valid on
their face (the engine's columnar path) and the façade forced through its
request models (a pydantic model per event, as before).

Target: ``V2Api.handle`` ingestion >= 150,000 events/s in calls of 1,000 (memory store).

Run: ``.venv/bin/python benchmarks/bench_contract_ingest.py`` (``--calls N`` per round).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import gc
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sessions import batches, build

from learnloop import Engine
from learnloop.api import V2Api
from learnloop.sim import SimClock


def rate(call: object, work: list[tuple[str, object]], rounds: int = 5) -> tuple[float, float]:
    """Events per second of ``call(user, events)`` over ``work``, the median of ``rounds`` rounds:
    per wall-clock second, and per second of the thread's CPU time (what it costs one core, on a
    machine where other work runs too)."""
    rates, cpu_rates = [], []
    for part in np.array_split(np.arange(len(work)), rounds):
        gc.collect()
        t, c = time.perf_counter(), time.thread_time()
        for k in part:
            call(*work[k])  # type: ignore[operator]
        cpu = time.thread_time() - c
        rates.append(len(part) * 1000 / (time.perf_counter() - t))
        cpu_rates.append(len(part) * 1000 / cpu)
    return float(np.median(rates)), float(np.median(cpu_rates))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", default="memory", choices=["memory", "sqlite"])
    parser.add_argument("--calls", type=int, default=20, help="calls of 1,000 events per round")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        clock = SimClock()
        engine = Engine(seed=1, clock=clock) if args.store == "memory" else Engine.open(Path(tmp) / "i.db", seed=1)
        build(engine, 100, 100)
        api = V2Api(engine)
        rng = np.random.default_rng(1)
        n = args.calls * 5

        def work(prefix: str) -> list[tuple[str, object]]:
            return [(u, e) for u, e in batches(clock, rng, n, 1000, 100, 100, prefix)]

        def through(fast: bool):  # type: ignore[no-untyped-def]
            def call(user: str, body: bytes) -> None:
                api.plain_events_fast = fast
                answer = api.handle("POST", "/v2/upsert-events", body=body)
                assert answer.status == 200, answer.body

            return call

        def bodies(prefix: str) -> list[tuple[str, object]]:
            return [(u, json.dumps({"user_id": u, "events": e}).encode()) for u, e in work(prefix)]

        figures = {
            "Engine.upsert_events, plain dicts": rate(lambda u, e: engine.upsert_events(u, e), work("engine")),
            "V2Api.handle, JSON bytes": rate(through(True), bodies("fast")),
            "V2Api.handle, request models (before)": rate(through(False), bodies("models")),
        }
        engine.close()
    print(
        f"{args.store} store, calls of 1,000 events, median of 5 rounds of {args.calls} calls "
        f"(load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}):"
    )
    print(f"  {'':40s} {'events/s':>10s} {'per CPU s':>10s}")
    for name, (value, cpu) in figures.items():
        print(f"  {name:40s} {value:>10,.0f} {cpu:>10,.0f}")
    value, cpu = figures["V2Api.handle, JSON bytes"]
    verdict = "met" if value >= 150_000 else "NOT met"
    print(f"target: V2Api.handle >= 150,000 events/s: {value:,.0f} ({cpu:,.0f} per CPU s) {verdict}")


if __name__ == "__main__":
    main()
