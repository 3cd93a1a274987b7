"""How the adaptive-engine step's latency grows with the session filter and the stored events, per store.

Setup: one catalog of 20,000 item refs (200 topics of 100 items, each topic a
prerequisite of the next; ``bench_sessions.build``); 10,000, 100,000 and
1,000,000 stored events, ingested with ``Engine.upsert_events`` in calls of
1,000 events, one call per learner (so 10, 100 and 1,000 learners); then
learn-mode sessions over filters of the first 1, 10 and 100 topics (100, 1,000
and 10,000 items), each of a learner with 1,000 stored events. Each step
answers the previous recommendation with one event (``bench_sessions.steps``);
the warm-up steps are not timed. Every (store, stored events) pair starts from
an empty store: memory, a SQLite file, and a fresh PostgreSQL database on the
server at ``--postgres`` (default: ``$LEARNLOOP_TEST_POSTGRES``; ``scripts/_postgres.sh``
starts a throwaway one).

Printed: the step's p50 and p99 per filter size, and p50(10,000 items) /
p50(100 items) per store and event count (100 would be linear growth; the
exponent is log(ratio) / log(100)). One BLAS thread.

Run: ``.venv/bin/python benchmarks/bench_step_scaling.py`` (``--quick``: 10k and
100k events, fewer steps; ``--write-docs``: the table into ``docs/performance.md``
between its ``bench_step_scaling`` markers and the plot beside it).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import gc
import math
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
from bench_sessions import DOCS, batches, build, command_line, machine_note, replace_block, steps, today
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from learnloop import Engine
from learnloop.sim import SimClock

N_TOPICS, PER_TOPIC = 200, 100
FILTER_TOPICS = (1, 10, 100)  # the first topics of the catalog: 100, 1,000, 10,000 items
CALL = 1000  # events per upsert_events call, one learner each
CHUNK = 10  # learners generated at a time (the events of 1M are never all in memory)
PLOT = "step-scaling.png"
NAMES = {"memory": "memory", "sqlite": "SQLite", "postgres": "PostgreSQL"}


@contextmanager
def open_engine(store: str, tmp: Path, postgres: str | None, clock: SimClock) -> Iterator[Engine]:
    """An engine on an empty store of kind ``store``; closed (and its database dropped) after."""
    if store == "memory":
        engine = Engine(seed=1, clock=clock)
        try:
            yield engine
        finally:
            engine.close()
    elif store == "sqlite":
        path = tmp / f"scaling-{uuid.uuid4().hex[:8]}.db"
        engine = Engine.open(path, seed=1, clock=clock)
        try:
            yield engine
        finally:
            engine.close()
            for extra in ("", "-wal", "-shm"):
                Path(f"{path}{extra}").unlink(missing_ok=True)
    elif store == "postgres":
        import psycopg

        assert postgres is not None
        name = f"learnloop_bench_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(postgres, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
            try:
                engine = Engine.open(urlsplit(postgres)._replace(path=f"/{name}").geturl(), seed=1, clock=clock)
                try:
                    yield engine
                finally:
                    engine.close()
            finally:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    else:
        raise SystemExit(f"unknown store {store!r}: memory, sqlite or postgres")


def ingest_events(engine: Engine, clock: SimClock, rng: np.random.Generator, n_events: int, label: str) -> float:
    """Store ``n_events`` in calls of ``CALL`` (one learner each, ``l<chunk>-<k>``); events/s of the calls."""
    learners = n_events // CALL
    spent = 0.0
    with tqdm(total=learners * CALL, unit="ev", unit_scale=True, desc=label, leave=False) as bar:
        for chunk in range(0, learners, CHUNK):
            work = batches(clock, rng, min(CHUNK, learners - chunk), CALL, N_TOPICS, PER_TOPIC, f"l{chunk}-")
            gc.collect()
            t = time.perf_counter()
            for user, events in work:
                engine.upsert_events(user, events)
            spent += time.perf_counter() - t
            bar.update(sum(len(e) for _, e in work))
    clock.advance(CALL + 60)  # the sessions' answers come after every stored event
    return learners * CALL / spent


def measure(store: str, n_events: int, tmp: Path, postgres: str | None, n_steps: int, warmup: int) -> dict:
    clock = SimClock()
    rng = np.random.default_rng(1)
    with open_engine(store, tmp, postgres, clock) as engine:
        build(engine, N_TOPICS, PER_TOPIC)
        rate = ingest_events(engine, clock, rng, n_events, f"[{store}] {n_events:,} events")
        row: dict = {"store": store, "events": n_events, "ingest": rate, "items": {}}
        for k, topics in enumerate(FILTER_TOPICS):
            flt = {"include_topic_ids": [f"t{t}" for t in range(topics)]}
            lat = steps(engine, clock, rng, "learn", n_steps, warmup, user=f"l0-{k}", flt=flt)
            row["items"][topics * PER_TOPIC] = (float(np.percentile(lat, 50)), float(np.percentile(lat, 99)))
    return row


def growth(row: dict) -> tuple[float, float]:
    """p50 at the largest filter / p50 at the smallest, and its log-log slope."""
    sizes = sorted(row["items"])
    ratio = row["items"][sizes[-1]][0] / row["items"][sizes[0]][0]
    return ratio, math.log(ratio) / math.log(sizes[-1] / sizes[0])


def table(rows: list[dict]) -> str:
    sizes = sorted(rows[0]["items"])
    out = [
        f"{'store':10s} {'events':>9s} {'ingest ev/s':>11s}"
        + "".join(f" {f'{n:,} items p50/p99 ms':>24s}" for n in sizes)
        + f" {'p50 ' + f'{sizes[-1]:,}' + '/' + f'{sizes[0]:,}':>16s}"
    ]
    for row in rows:
        ratio, slope = growth(row)
        out.append(
            f"{row['store']:10s} {row['events']:>9,} {row['ingest']:>11,.0f}"
            + "".join(f" {f'{p50:.3f} / {p99:.3f}':>24s}" for p50, p99 in (row["items"][n] for n in sizes))
            + f" {f'{ratio:.2f}x (^{slope:.2f})':>16s}"
        )
    return "\n".join(out)


def markdown(rows: list[dict], n_steps: int, warmup: int, plot: bool) -> str:
    sizes = sorted(rows[0]["items"])
    lines = [
        f"Generated by `{command_line()}` on {today()} ({machine_note()}); {n_steps} timed steps per filter after "
        f"{warmup} warm-up steps.",
        "",
        "| store | stored events | ingestion (calls of 1,000) |"
        + "".join(f" {n:,} items p50 / p99 |" for n in sizes)
        + f" p50 {sizes[-1]:,} / p50 {sizes[0]:,} items |",
        "|---|---|---|" + "---|" * len(sizes) + "---|",
    ]
    for row in rows:
        ratio, slope = growth(row)
        lines.append(
            f"| {NAMES.get(row['store'], row['store'])} | {row['events']:,} | {row['ingest']:,.0f} events/s |"
            + "".join(f" {p50:.3f} / {p99:.3f} ms |" for p50, p99 in (row["items"][n] for n in sizes))
            + f" {ratio:.2f}× |"
        )
    ratios = [growth(row) for row in rows]
    lines += [
        "",
        f"For {sizes[-1] // sizes[0]}× the items, the step's p50 grows {min(r for r, _ in ratios):.2f}× to "
        f"{max(r for r, _ in ratios):.2f}× (log-log slope {min(s for _, s in ratios):.2f} to "
        f"{max(s for _, s in ratios):.2f}; 1 would be linear).",
    ]
    if plot:
        lines += ["", f"![Step latency p50 (solid) and p99 (dashed) against the filter size]({PLOT})"]
    return "\n".join(lines)


def draw(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for k, row in enumerate(rows):
        sizes = sorted(row["items"])
        color = f"C{k % 10}"
        label = f"{NAMES.get(row['store'], row['store'])}, {row['events']:,} events"
        ax.plot(sizes, [row["items"][n][0] for n in sizes], "o-", color=color, label=label)
        ax.plot(sizes, [row["items"][n][1] for n in sizes], "o--", color=color, alpha=0.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain = FuncFormatter(lambda v, _: f"{v:,g}")
    ax.xaxis.set_major_formatter(plain)
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if str(f"{v:g}")[0] in "25" else ""))
    ax.set_xlabel("items in the session filter")
    ax.set_ylabel("learn step latency (ms)")
    ax.set_title(f"Learn step over a catalog of {N_TOPICS * PER_TOPIC:,} item refs: p50 (solid), p99 (dashed)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2 if len(rows) > 6 else 1)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10k and 100k events only, fewer steps")
    parser.add_argument("--events", help="comma-separated stored-event counts (default 10000,100000,1000000)")
    parser.add_argument("--stores", help="comma-separated: memory, sqlite, postgres (default: postgres with a URL)")
    parser.add_argument("--postgres", default=os.environ.get("LEARNLOOP_TEST_POSTGRES"), help="postgresql:// URL")
    parser.add_argument("--steps", type=int, help="timed steps per filter (default 500; 100 with --quick)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed steps before each measurement")
    parser.add_argument("--write-docs", action="store_true", help="the table into the docs file, the plot beside it")
    parser.add_argument("--docs", type=Path, default=DOCS, help="the docs file for --write-docs")
    args = parser.parse_args()
    if args.write_docs and args.quick and args.docs.resolve() == DOCS:
        parser.error("--quick figures go to a scratch copy only: give --docs PATH")
    events = [int(n) for n in (args.events or ("10000,100000" if args.quick else "10000,100000,1000000")).split(",")]
    if any(n < CALL * len(FILTER_TOPICS) or n % CALL for n in events):
        parser.error(f"--events: multiples of {CALL}, at least {CALL * len(FILTER_TOPICS)}")
    stores = (args.stores or ("memory,sqlite,postgres" if args.postgres else "memory,sqlite")).split(",")
    if "postgres" in stores and not args.postgres:
        parser.error("postgres needs --postgres URL (or LEARNLOOP_TEST_POSTGRES)")
    n_steps = args.steps or (100 if args.quick else 500)
    threadpool_limits(1)
    print(
        f"catalog: {N_TOPICS * PER_TOPIC:,} item refs ({N_TOPICS} topics of {PER_TOPIC}); stored events: "
        f"{', '.join(f'{n:,}' for n in events)}; filters: {', '.join(f'{t * PER_TOPIC:,}' for t in FILTER_TOPICS)} "
        f"items; {n_steps} learn steps each after {args.warmup} warm-up; {machine_note()}"
    )
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for store in stores:
            for n_events in events:
                row = measure(store, n_events, Path(tmp), args.postgres, n_steps, args.warmup)
                rows.append(row)
                p50s = ", ".join(f"{n:,} items {p50:.3f}/{p99:.3f}" for n, (p50, p99) in row["items"].items())
                print(f"[{store}] {n_events:,} events (ingestion {row['ingest']:,.0f} events/s): p50/p99 ms {p50s}")
    print()
    print(table(rows))
    print()
    for row in rows:
        ratio, slope = growth(row)
        print(
            f"[{row['store']}] {row['events']:,} events: p50(10,000 items) / p50(100 items) = {ratio:.2f} "
            f"(log-log slope {slope:.2f}; linear growth would be 100, slope 1)"
        )
    if args.write_docs:
        draw(rows, args.docs.parent / PLOT)
        replace_block(args.docs, "bench_step_scaling", markdown(rows, n_steps, args.warmup, plot=True))


if __name__ == "__main__":
    main()
