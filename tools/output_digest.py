"""One SHA-256 digest of what the engine answers and stores over a fixed set of calls.

Drives the same sessions on the memory and the SQLite store (fixed seed, clock, signing
secret and session ids): a learn, a review and an assess session with answers, skips and
theory views, late events, ``upsert_events`` (as columns and event by event), a user
status and a prediction, on two applications. Every answer (recommendation, reason,
statuses) and then every stored document (all tables, all keys, in key order) enters the
digest. A change that should not change behaviour must leave it as it was.

Run: ``PYTHONPATH=$PWD/src .venv/bin/python tools/output_digest.py`` (``-v``: one digest per
store, and the number of answers and documents hashed).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import hashlib
import itertools
import json
import secrets
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from learnloop import Engine
from learnloop.events import format_timestamp
from learnloop.sim import SimClock, sample_course
from learnloop.store import TABLES, MemoryStore, SQLiteStore, Store

START = datetime(2024, 3, 1, 9, tzinfo=UTC)
APPS = ("default", "other")


@contextmanager
def fixed_ids() -> Iterator[None]:
    """Session ids from a counter instead of the operating system's randomness."""
    counter = itertools.count(1)
    real = secrets.token_hex
    secrets.token_hex = lambda n=None: f"{next(counter):0{2 * (n or 32)}x}"  # type: ignore[assignment]
    try:
        yield
    finally:
        secrets.token_hex = real  # type: ignore[assignment]


def plain(value: Any) -> Any:
    """A JSON-able form of an answer (pydantic models dumped, containers walked)."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return {name: plain(getattr(value, name)) for name in value.__dataclass_fields__}
    if isinstance(value, float):
        return repr(value)
    return value


def drive(engine: Engine, clock: SimClock, record: Callable[[str, Any], None]) -> None:
    items, catalog = sample_course(n_chapters=3, topics_per_chapter=2, items_per_topic=6, seed=3)
    for app in APPS:
        engine.upsert_items([i.model_dump(exclude_none=True) for i in items], app=app)
        engine.upsert_catalog(catalog.model_dump(exclude_none=True), app=app)
    cid = catalog.catalog_id
    by_id = {i.item_id: i for i in items}

    def stamp(seconds: float) -> str:
        return format_timestamp(START + timedelta(seconds=seconds))

    t = 0.0
    for app in APPS:
        for user, mode in (("ada", "learn"), ("bob", "review"), ("cy", "assess")):
            spec = {"user_id": user, "catalog_id": cid, "mode": {"type": mode}, "filter": {}}
            context = engine.create_session(spec, app=app)
            step = engine.adaptive_step(context, app=app)
            record("step", step)
            for k in range(40 if mode == "assess" else 14):
                rec = step.recommendation
                if rec is None:
                    break
                t += 30.0
                clock.now = START + timedelta(seconds=t)
                item = by_id[rec.item_id]
                event: dict[str, Any]
                if item.is_theory and not item.scorable:
                    event = {
                        "type": "view_theory",
                        "timestamp": stamp(t),
                        "time_spent_ms": 20_000,
                        "fraction_completed": 0.75,
                        "recommendation_context": rec.recommendation_context,
                    }
                elif k % 5 == 3:
                    event = {
                        "type": "skip",
                        "timestamp": stamp(t),
                        "recommendation_context": rec.recommendation_context,
                    }
                else:
                    event = {
                        "type": "attempt",
                        "timestamp": stamp(t),
                        "score": float((k * 7 + len(user)) % 3 != 0),
                        "time_spent_ms": 9_000 + 100 * k,
                        "recommendation_context": rec.recommendation_context,
                    }
                events = [event]
                if k == 6:  # a late event: earlier than the learner's latest
                    late = dict(event, timestamp=stamp(t - 200.0))
                    events = [late, event]
                step = engine.adaptive_step(context, events, app=app)
                record("step", step)
            record("session", engine.session(context, app=app).to_doc())
        # events outside sessions: as columns (plain dicts), then event by event (a model), late ones too
        scorable = [i.item_id for i in items if i.scorable]
        theory = [i.item_id for i in items if i.is_theory and not i.scorable]
        batch = [
            {
                "type": "attempt",
                "item_id": scorable[k],
                "catalog_id": cid,
                "timestamp": stamp(t + 10 * k),
                "score": float(k % 2),
                "time_spent_ms": 5000,
            }
            for k in range(8)
        ] + [{"type": "view_theory", "item_id": theory[0], "catalog_id": cid, "timestamp": stamp(t + 100)}]
        record("upsert", engine.upsert_events("dee", batch, app=app))
        record("upsert", engine.upsert_events("ada", batch[:3], app=app))  # earlier than ada's latest: late
        record("upsert", engine.upsert_events("dee", batch[:2], app=app))  # already stored: nothing new
        from learnloop.events import SkipEvent

        record(
            "upsert",
            engine.upsert_events(
                "dee", [SkipEvent(type="skip", item_id=scorable[9], catalog_id=cid, timestamp=stamp(t + 5))], app=app
            ),
        )
        record(
            "status",
            engine.user_status("dee", cid, [None, {"include_topic_ids": [catalog.topics[0].topic_id]}], app=app),
        )
        record("status", engine.user_status("ada", cid, [None], app=app))
        record("predict", engine.predict("dee", cid, scorable[:4], app=app))
        record("next", engine.next_items("dee", cid, mode="learn", limit=3, app=app))
        t += 1000.0
    # the offline part: a calibration read back by the model (and the echo by predict), per-catalog options
    record("calibrate", engine.calibrate(cid, app="other", refine="b", topic_rates=True, echo=True))
    record("predict", engine.predict("dee", cid, scorable[:4], app="other"))
    record("event_log", engine.event_log(cid, app="other"))
    engine.set_learner_options(cid, {"drift": 0.05}, app="default")
    record("status", engine.user_status("ada", cid, [None], app="default"))


def stored(store: Store, record: Callable[[str, Any], None]) -> None:
    for app in APPS:
        for table in sorted(TABLES):
            for key, doc in store.scan(table, app):
                value = doc.hex() if isinstance(doc, bytes) else plain(doc)
                record(f"{table}:{app}", [list(key), value])


def digest(make: Callable[[], Store], verbose: bool) -> str:
    sha = hashlib.sha256()
    counts = {"answers": 0, "documents": 0}

    def record(kind: str, value: Any) -> None:
        counts["documents" if ":" in kind else "answers"] += 1
        sha.update(json.dumps([kind, plain(value)], sort_keys=True, default=str).encode())

    clock = SimClock(START)
    store = make()
    with fixed_ids():
        engine = Engine(seed=11, clock=clock, store=store, secret=b"output-digest")
        drive(engine, clock, record)
        stored(store, record)
        engine.close()
    if verbose:
        print(
            f"  {type(store).__name__}: {sha.hexdigest()} ({counts['answers']} answers, {counts['documents']} documents)"
        )
    return sha.hexdigest()


def main() -> None:
    verbose = "-v" in sys.argv[1:]
    with tempfile.TemporaryDirectory() as tmp:
        parts = [digest(MemoryStore, verbose), digest(lambda: SQLiteStore(Path(tmp) / "digest.db"), verbose)]
    print(hashlib.sha256("".join(parts).encode()).hexdigest())


if __name__ == "__main__":
    main()
