"""Adaptive-engine step latency and event ingestion, on the in-memory and SQLite stores.

Setup: one catalog of 10,000 items (100 topics of 100 items, each topic a
prerequisite of the next), 100,000 stored events (1,000 learners x 100), then
sessions over a filter of all 10,000 items in each mode. Each step posts the
answer to the previous recommendation (one event) and asks for the next one.
Ingestion is timed in 5 consecutive rounds of calls (one learner per call) and
the median round's rate is reported. In the same run, catsim's
maximum-information item selection over a Rasch bank of 10,000 items (20
examinees x 20 items; catsim in its own virtual environment, see
``bench_assess_vs_catsim.py``) is timed, and each step's p50 is printed beside
it as a ratio (catsim's ms per selected item / learnloop's ms per step).

Targets: at 10,000 items with 100,000 stored events, step p50 <= 0.3 ms in
memory and <= 0.6 ms on SQLite, p99 <= 1 ms in memory; ingestion >= 150,000
events/s in memory and >= 100,000 events/s on SQLite in calls of 1,000 events.

Run: ``.venv/bin/python benchmarks/bench_sessions.py`` (``--quick`` for a smaller run,
``--no-catsim`` without catsim, ``--write-docs`` to put the results into
``docs/performance.md`` between its ``bench_sessions`` markers).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import gc
import json
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from learnloop import Engine
from learnloop.api import V2Api
from learnloop.events import format_timestamp
from learnloop.sim import SimClock

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "performance.md"


def blas_threads() -> str:
    """The BLAS libraries loaded and their thread counts, e.g. ``openblas 1``."""
    pools = [f"{p['internal_api']} {p['num_threads']}" for p in threadpool_info() if p.get("user_api") == "blas"]
    return ", ".join(pools) or "none loaded"


def machine_note() -> str:
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, BLAS threads: {blas_threads()}"


def command_line() -> str:
    """How this script was run, relative to the repository (for the docs)."""
    script = Path(sys.argv[0]).resolve()
    try:
        script = script.relative_to(ROOT)
    except ValueError:
        pass
    return shlex.join([".venv/bin/python", str(script), *sys.argv[1:]])


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def replace_block(path: Path, name: str, body: str) -> None:
    """Replace the text between ``<!-- name:begin -->`` and ``<!-- name:end -->`` in ``path`` with ``body``."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    text = path.read_text()
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        raise SystemExit(f"{path}: markers {begin} ... {end} not found")
    path.write_text(text[: start + len(begin)] + "\n\n" + body.strip("\n") + "\n\n" + text[stop:])
    print(f"wrote {path} ({name})")


def catsim_select_ms(items: int = 10_000, examinees: int = 20, length: int = 20, seed: int = 2024) -> float:
    """catsim's MaxInfoSelector time per selected item over a Rasch bank of ``items`` (in its own venv)."""
    from bench_assess_vs_catsim import CATSIM_RUNNER, ensure_catsim

    rng = np.random.default_rng(seed)
    b = rng.normal(0.0, 1.0, items)
    thetas = rng.normal(0.0, 1.0, examinees)
    python = ensure_catsim()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "bank.npz"
        np.savez(data, b=b, theta=thetas, seed=seed, length=length)
        script = Path(tmp) / "run_catsim.py"
        script.write_text(CATSIM_RUNNER)
        out = subprocess.run([str(python), str(script), str(data)], check=True, capture_output=True, text=True)
    return float(json.loads(out.stdout)["select_ms"])


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


def ingest(engine: Engine, work: list[tuple[str, list[dict]]], rounds: int = 1) -> float:
    """Events per second of ``upsert_events`` over ``work``, one call per learner; with ``rounds``,
    the calls are timed in that many consecutive rounds and the median round's rate is returned."""
    rates = []
    for part in np.array_split(np.arange(len(work)), rounds):
        gc.collect()
        t = time.perf_counter()
        for k in part:
            engine.upsert_events(*work[k])
        rates.append(sum(len(work[k][1]) for k in part) / (time.perf_counter() - t))
    return float(np.median(rates))


def steps(
    engine: Engine,
    clock: SimClock,
    rng: np.random.Generator,
    mode: str,
    n: int,
    warmup: int = 20,
    *,
    user: str = "u1",
    flt: dict | None = None,
    turns: Sequence[Engine] = (),
) -> np.ndarray:
    """Milliseconds of each of ``n`` steps (after ``warmup`` untimed ones) of a ``mode`` session of ``user``
    over ``flt`` (all items when None); each step answers the previous recommendation with one event.
    With ``turns``, those engines (on the same store as ``engine``) take the steps in turn."""
    context = engine.create_session({"user_id": user, "catalog_id": "big", "mode": {"type": mode}, "filter": flt or {}})
    stepping = list(turns) or [engine]
    events: list[dict] = []
    times = []
    gc.collect()
    for k in range(n + warmup):
        t = time.perf_counter()
        rec = stepping[k % len(stepping)].adaptive_step(context, events).recommendation
        times.append(time.perf_counter() - t)
        events = (
            []  # (review with nothing due: the next step is asked without an answer)
            if rec is None
            else [
                {
                    "type": "attempt",
                    "timestamp": format_timestamp(clock.advance(30)),
                    "recommendation_context": rec.recommendation_context,
                    "score": float(rng.random() < 0.7),
                    "time_spent_ms": 15_000,
                }
            ]
        )
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


#: per store: step p50 (ms), step p99 (ms), ingestion in calls of 1,000 events (events/s)
TARGETS = {"memory": (0.3, 1.0, 150_000), "sqlite": (0.6, None, 100_000)}


def targets_met(store: str, result: dict) -> list[str]:
    """The targets of ``store`` that apply, each with what was measured and whether it is met (the steps'
    targets by the slowest of the learn, review and assess steps; the step through the façade is not held to them)."""
    if store not in TARGETS:
        return []
    p50, p99, rate = TARGETS[store]
    engine_steps = [lat for mode, lat in result["modes"].items() if mode != "http"]
    worst50 = max(lat[0] for lat in engine_steps)
    out = [f"step p50 <= {p50} ms: {worst50:.3f} ms (slowest mode) {'met' if worst50 <= p50 else 'NOT met'}"]
    if p99 is not None:
        worst99 = max(lat[1] for lat in engine_steps)
        out.append(f"p99 <= {p99:g} ms: {worst99:.3f} ms {'met' if worst99 <= p99 else 'NOT met'}")
    out.append(
        f"ingestion >= {rate:,} events/s in calls of 1000: {result['ingest'][1]:,.0f} "
        f"{'met' if result['ingest'][1] >= rate else 'NOT met'}"
    )
    return out


def docs_block(results: dict[str, dict], catsim_ms: float | None, setup: str, catsim_setup: str, n_steps: int) -> str:
    names = {"memory": "memory", "sqlite": "SQLite"}
    lines = [
        f"Generated by `{command_line()}` on {today()} ({machine_note()}). {setup}; {n_steps} steps per mode."
        + (f" {catsim_setup}: **{catsim_ms:.3f} ms** per selected item." if catsim_ms is not None else ""),
        "",
        "| store | step | p50 | p99 |" + (" catsim selection / step p50 |" if catsim_ms is not None else ""),
        "|---|---|---|---|" + ("---|" if catsim_ms is not None else ""),
    ]
    for store, result in results.items():
        for mode, (p50, p99) in result["modes"].items():
            label = "learn through `V2Api.handle`" if mode == "http" else mode
            row = f"| {names.get(store, store)} | {label} | {p50:.3f} ms | {p99:.3f} ms |"
            lines.append(row + (f" {catsim_ms / p50:.1f}× |" if catsim_ms is not None else ""))
    lines += [
        "",
        "Ingestion: wall time, each figure the median of 5 consecutive rounds of calls (one learner per call).",
        "",
        "| store | ingestion, calls of 100 events | calls of 1,000 events |",
        "|---|---|---|",
    ]
    for store, result in results.items():
        small, big = result["ingest"]
        lines.append(f"| {names.get(store, store)} | {small:,.0f} events/s | {big:,.0f} events/s |")
    checks = [
        f"{names.get(store, store)}: {check}"
        for store, result in results.items()
        for check in targets_met(store, result)
    ]
    if checks:
        lines += ["", "Targets (set for 10,000 items and 100,000 stored events):", ""] + [f"- {c}" for c in checks]
    return "\n".join(lines).replace("<=", "≤").replace(">=", "≥").replace(" x ", " × ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10x fewer stored events and steps")
    parser.add_argument("--stores", default="memory,sqlite", help="comma-separated: memory, sqlite")
    parser.add_argument("--no-catsim", action="store_true", help="do not time catsim's item selection")
    parser.add_argument("--catsim-examinees", type=int, default=20, help="catsim examinees (20 items each)")
    parser.add_argument("--write-docs", action="store_true", help="write the results into the docs file's markers")
    parser.add_argument("--docs", type=Path, default=DOCS, help="the docs file for --write-docs")
    args = parser.parse_args()
    if args.write_docs and args.quick and args.docs.resolve() == DOCS:
        parser.error("--quick figures go to a scratch copy only: give --docs PATH")
    threadpool_limits(1)
    n_topics, per_topic = 100, 100
    users, per_user, n_steps = (100, 100, 100) if args.quick else (1000, 100, 500)
    setup = f"Catalog of {n_topics * per_topic:,} items, {users * per_user:,} stored events, filter of all items"
    print(f"catalog: {n_topics * per_topic} items; stored events: {users * per_user}; steps per mode: {n_steps}")
    catsim_ms = None
    catsim_setup = f"catsim 0.21 `MaxInfoSelector` over a Rasch bank of {n_topics * per_topic:,} items"
    if not args.no_catsim:
        catsim_ms = catsim_select_ms(n_topics * per_topic, args.catsim_examinees)
        catsim_setup += f" ({args.catsim_examinees} examinees x 20 items)"
        print(f"{catsim_setup.replace('`', '')}: {catsim_ms:.3f} ms per selected item")
    results: dict[str, dict] = {}
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
            rate = ingest(engine, batches(clock, rng, users, per_user, n_topics, per_topic, "u"), rounds=5)
            big = ingest(engine, batches(clock, rng, max(users // 10, 10), 1000, n_topics, per_topic, "bulk"), rounds=5)
            result: dict = {"ingest": (rate, big), "modes": {}}
            print(
                f"[{store}] ingestion: {rate:,.0f} events/s in calls of {per_user}; {big:,.0f} events/s in calls of 1000"
            )
            for mode in ("learn", "review", "assess"):
                if mode == "review":
                    clock.advance(30 * 86400)  # a month after the learn session: what it practised is due
                lat = steps(engine, clock, rng, mode, n_steps)
                result["modes"][mode] = (float(np.percentile(lat, 50)), float(np.percentile(lat, 99)))
                print(
                    f"[{store}] {mode:6s} step: p50 {np.percentile(lat, 50):.3f} ms, p99 {np.percentile(lat, 99):.3f} ms"
                )
            lat = http_steps(engine, clock, rng, n_steps)
            result["modes"]["http"] = (float(np.percentile(lat, 50)), float(np.percentile(lat, 99)))
            print(
                f"[{store}] learn step through V2Api.handle: p50 {np.percentile(lat, 50):.3f} ms, "
                f"p99 {np.percentile(lat, 99):.3f} ms"
            )
            if catsim_ms is not None:
                ratios = ", ".join(
                    f"{'V2Api.handle' if mode == 'http' else mode} {catsim_ms / p50:.1f}x"
                    for mode, (p50, _) in result["modes"].items()
                )
                print(f"[{store}] catsim selection at {n_topics * per_topic} items / step p50: {ratios}")
            for check in targets_met(store, result):
                print(f"[{store}] target {check}")
            results[store] = result
            engine.close()
    if args.write_docs:
        replace_block(args.docs, "bench_sessions", docs_block(results, catsim_ms, setup, catsim_setup, n_steps))


if __name__ == "__main__":
    main()
