"""A long history is read from the store as columns and replayed at once: the learner's state is
the one the per-event path makes, after an import, after a late event dated before every other,
after an overwrite, on the memory and the SQLite store (items in two topics, theory views, skips,
time spent, assessment answers, an item removed from the catalog)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from learnloop import Engine
from learnloop.engine.learners import history as history_module
from learnloop.engine.learners import tracker as tracker_module
from learnloop.engine.learners.learners import EAGER_EVENTS
from learnloop.events import Interaction, format_timestamp, parse_timestamp
from learnloop.tracing import LearnerModel
from learnloop.tracing._columns import kernel

START = datetime(2025, 3, 1, tzinfo=UTC)
ITEMS = [
    *({"item_id": f"q{k}", "display_name": f"Q{k}", "scorable": True, "difficulty": 0.1 + 0.1 * k} for k in range(8)),
    {"item_id": "th0", "display_name": "Theory", "scorable": False},
]
TOPICS = [
    {"topic_id": "a", "display_name": "A", "item_refs": [{"item_id": i} for i in ("q0", "q1", "q2", "th0")]},
    {
        "topic_id": "b",
        "display_name": "B",
        "item_refs": [{"item_id": i} for i in ("q2", "q3", "q4", "q5")],
        "prerequisite_topic_refs": [{"topic_id": "a"}],
    },
    {"topic_id": "c", "display_name": "C", "item_refs": [{"item_id": i} for i in ("q6", "q7")]},
]


def _engine(path: Path | str | None) -> Engine:
    engine = Engine.open(path, seed=3) if path is not None else Engine(seed=3)
    engine.upsert_items(ITEMS)
    engine.upsert_catalog({"catalog_id": "c1", "display_name": "One", "topics": TOPICS})
    return engine


def _events(n: int, seed: int, offset: float = 0.0) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    pairs = [(i["item_id"], t["topic_id"]) for t in TOPICS for i in t["item_refs"]]
    out = []
    for k in range(n):
        item, topic = pairs[int(rng.integers(len(pairs)))]
        stamp = format_timestamp(START + timedelta(seconds=offset + 7.5 * k, milliseconds=int(rng.integers(0, 999))))
        event: dict[str, Any] = {"catalog_id": "c1", "item_id": item, "topic_id": topic, "timestamp": stamp}
        if item == "th0":
            event.update(type="view_theory", fraction_completed=float(rng.choice([0.2, 1.0])))
        elif rng.random() < 0.1:
            event.update(type="skip")
        else:
            event.update(type="attempt", score=float(rng.choice([0.0, 0.5, 1.0])))
        if rng.random() < 0.5 and event["type"] != "skip":
            event["time_spent_ms"] = int(rng.integers(0, 60_000))
        out.append(event)
    return out


def _same(engine: Engine, reference: Engine) -> None:
    a = engine._learners.state("default", "u", engine.catalog_model("c1"))
    b = reference._learners.state("default", "u", reference.catalog_model("c1"))
    assert a.state.to_bytes() == b.state.to_bytes()
    assert a.latest == b.latest and a.last_attempt == b.last_attempt


def _per_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference: every replay event by event."""
    monkeypatch.setattr(tracker_module, "COLUMNS_RUN", 10**9)
    monkeypatch.setattr(
        LearnerModel, "update_columns", lambda self, state, cols: self.update_many(state, cols.events())
    )
    monkeypatch.setattr(LearnerModel, "update_stops", lambda self, state, cols, stops: None)


@pytest.mark.skipif(kernel() is None, reason="numba (extra 'fast') is not installed")
@pytest.mark.parametrize("store", ["memory", "sqlite", "postgres"])
def test_a_long_history_replays_as_the_per_event_path(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    events = _events(6000, seed=1)
    late = [dict(events[10], timestamp=format_timestamp(START - timedelta(days=1)), score=1.0, type="attempt")]
    rewrite = [dict(events[3000], score=0.5, type="attempt", time_spent_ms=5)]
    engines = {}
    for name in ("columns", "reference"):
        with monkeypatch.context() as patch:
            if name == "reference":
                _per_event(patch)
            engine = _engine(
                tmp_path / f"{name}.db"
                if store == "sqlite"
                else request.getfixturevalue("postgres_database")()
                if store == "postgres"
                else None
            )
            for at in range(0, len(events), 2000):
                engine.upsert_events("u", events[at : at + 2000])
            engine.user_status("u", "c1", [{}])
            engine.upsert_events("u", late)  # dated before every other: a replay from the start
            engine.user_status("u", "c1", [{}])
            engine.upsert_events("u", rewrite)  # an overwrite: a replay from a checkpoint
            engine.user_status("u", "c1", [{}])
            engine._learners.forget()  # and a rebuild from the store alone
            engines[name] = engine
    _same(engines["columns"], engines["reference"])
    # an item leaves the catalog: its events stay stored and are not applied
    for engine in engines.values():
        engine.upsert_catalog({"catalog_id": "c1", "display_name": "One", "topics": TOPICS[:2]})
    with monkeypatch.context() as patch:
        _per_event(patch)
        engines["reference"].user_status("u", "c1", [{}])
    engines["columns"].user_status("u", "c1", [{}])
    _same(engines["columns"], engines["reference"])


def test_stored_stamps_read_as_the_interactions_instants() -> None:
    stamps = [
        "2025-01-01T00:00:00.000Z",
        "1969-12-31T23:59:59.999Z",
        "2024-02-29T12:34:56.789Z",
        "2100-01-01T00:00:00.001Z",
    ]
    expected = [Interaction.from_doc({"kind": "skip", "user_id": "u", "catalog_id": "c", "item_id": "i", "topic_id": "t", "timestamp": s}).epoch for s in stamps]  # fmt: skip
    assert history_module._epochs(stamps).tolist() == expected
    odd = ["2025-01-01T02:00:00.5+02:00", "2025-01-01T00:00:00Z"]  # not canonical: read one by one
    assert history_module._epochs(odd).tolist() == [parse_timestamp(s).timestamp() for s in odd]


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_a_bulk_import_is_applied_in_the_import_when_no_read_of_the_store_is_needed(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = _engine(tmp_path / "e.db" if store == "sqlite" else None)
    events = _events(3 * EAGER_EVENTS, seed=2)
    key = ("default", "u", "c1")
    engine.upsert_events("u", events[:EAGER_EVENTS])  # a learner without events
    first = engine._learners.tracker._get(key)
    assert first is not None and first.current and first.state.n_events == EAGER_EVENTS
    engine.upsert_events("u", events[EAGER_EVENTS:])  # after the current state's latest event
    entry = engine._learners.tracker._get(key)
    assert entry is not None and entry.current and entry.state.n_events == 3 * EAGER_EVENTS
    # the first read needs no read of the events, and finds what a replay from the store finds
    scans: list[object] = []
    monkeypatch.setattr(history_module.records, "event_fields_by_key", lambda *a, **k: scans.append(a))
    assert engine._learners.state("default", "u", engine.catalog_model("c1")) is entry and not scans
    monkeypatch.undo()
    engine._learners.forget()
    assert engine._learners.state("default", "u", engine.catalog_model("c1")).state.to_bytes() == entry.state.to_bytes()
    # a few events, or events of a learner not in the cache, wait for the next read as before
    engine.upsert_events("u", [dict(events[0], timestamp=format_timestamp(START + timedelta(days=9)))])
    assert engine._learners.tracker._get(key) is not None and not engine._learners.tracker._get(key).current
    engine.upsert_events("w", _events(200, seed=4)[:100])
    engine._learners.forget()
    engine.upsert_events("w", _events(200, seed=4)[100:])  # stored events not in the cache: read later
    assert engine._learners.tracker._get(("default", "w", "c1")) is None
