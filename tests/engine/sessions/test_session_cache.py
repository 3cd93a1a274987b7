"""A session's state kept in memory between steps is used only while the stored document is the one
this engine wrote: another engine's write (another process on the same file, or another engine on
the same store) is read from the store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from learnloop import Engine
from learnloop.events import format_timestamp
from learnloop.recommend import SessionState
from learnloop.sim import SimClock, sample_course
from learnloop.store import MemoryStore, SQLiteStore, Store
from learnloop.store.base import json_doc


def _engines(kind: str, tmp_path: Path, clock: SimClock, seed: int) -> tuple[Engine, Engine]:
    if kind == "sqlite":
        return (
            Engine(seed=seed, clock=clock, store=SQLiteStore(tmp_path / "a.db")),
            Engine(seed=seed, clock=clock, store=SQLiteStore(tmp_path / "a.db")),
        )
    store = MemoryStore()
    return Engine(seed=seed, clock=clock, store=store), Engine(seed=seed, clock=clock, store=store)


def _answer(step: Any, clock: SimClock, score: float) -> list[dict[str, Any]]:
    rec = step.recommendation
    assert rec is not None
    stamp = format_timestamp(clock.advance(45))
    return [
        {"type": "attempt", "timestamp": stamp, "recommendation_context": rec.recommendation_context, "score": score}
    ]


def _outcome(step: Any) -> dict[str, Any]:
    """A step's answer without its recommendation context (which names the session)."""
    out: dict[str, Any] = step.model_dump(mode="json")
    if out["recommendation"] is not None:
        del out["recommendation"]["recommendation_context"]
    return out


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize("mode", ["learn", "assess"])
def test_steps_alternating_between_two_engines_answer_as_one_engine_does(kind: str, mode: str, tmp_path: Path) -> None:
    items, catalog = sample_course(n_chapters=2, topics_per_chapter=2, items_per_topic=4)
    spec = {"user_id": "u", "catalog_id": catalog.catalog_id, "mode": {"type": mode}, "filter": {}}
    scores = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0]
    writers = [0, 1, 1, 0, 0, 0, 1, 0, 1, 1, 0, 1]

    def run(engines: tuple[Engine, Engine], clock: SimClock, order: list[int]) -> list[dict[str, Any]]:
        engines[0].upsert_items(items)
        engines[0].upsert_catalog(catalog)
        context = engines[0].create_session(spec)
        out, events = [], []
        for who, score in zip(order, scores, strict=True):
            step = engines[who].adaptive_step(context, events)
            out.append(_outcome(step))
            events = _answer(step, clock, score)
        return out

    clock = SimClock()
    alone = Engine(seed=4, clock=clock, store=MemoryStore())
    reference = run((alone, alone), clock, [0] * len(scores))
    (tmp_path / "two").mkdir()
    clock = SimClock()
    assert run(_engines(kind, tmp_path / "two", clock, 4), clock, writers) == reference


def _stored_session(store: Store, session_id: str) -> dict[str, Any]:
    return dict(json_doc(store.get("sessions", "default", ("u", session_id))))


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_session_document_written_by_another_engine_is_read_from_the_store(kind: str, tmp_path: Path) -> None:
    clock = SimClock()
    first, second = _engines(kind, tmp_path, clock, 2)
    items, catalog = sample_course(n_chapters=1, topics_per_chapter=2, items_per_topic=4)
    first.upsert_items(items)
    first.upsert_catalog(catalog)
    spec = {
        "user_id": "u",
        "catalog_id": catalog.catalog_id,
        "mode": {"type": "learn"},
        "filter": {},
        "stopping_conditions": {"max_interaction_count": 40},
    }
    context = first.create_session(spec)
    step = first.adaptive_step(context)
    step = first.adaptive_step(context, _answer(step, clock, 1.0))
    assert step.session_status.interaction_count == 1
    session_id = first.session(context).session_id

    # another engine rewrites the session's document (as another process would)
    doc = _stored_session(second.store, session_id)
    doc["interaction_count"] = 39
    doc["recommendation_count"] = 7
    second.store.put_many("sessions", "default", [(("u", session_id), doc)])

    step = first.adaptive_step(context, _answer(step, clock, 1.0))
    assert step.session_status.interaction_count == 40
    assert step.session_status.stop_session
    assert first.session(context).recommendation_count == 8
    stored = _stored_session(first.store, session_id)
    assert (stored["interaction_count"], stored["recommendation_count"]) == (40, 8)


def test_the_document_a_step_writes_is_the_one_written_from_the_whole_state() -> None:
    clock = SimClock()
    engine = Engine(seed=1, clock=clock)
    items, catalog = sample_course(n_chapters=1, topics_per_chapter=2, items_per_topic=4)
    engine.upsert_items(items)
    engine.upsert_catalog(catalog)
    spec = {
        "user_id": "u",
        "catalog_id": catalog.catalog_id,
        "mode": {"type": "assess"},
        "filter": {},
        "stopping_conditions": {"max_proficiency": 0.00001, "max_duration_ms": 10**9},
        "constraints": [{"type": "max_recommendations", "value": 2.5, "filter": {"include_content_types": ["theory"]}}],
    }
    clock.advance(0.0004567)  # times that are not whole milliseconds
    context = engine.create_session(spec)
    step = engine.adaptive_step(context)
    for k in range(6):
        events = _answer(step, clock, float(k % 2))
        events[0]["timestamp"] = events[0]["timestamp"].replace("Z", "123+01:00")
        step = engine.adaptive_step(context, events)
        state = engine.session(context)
        stored = _stored_session(engine.store, state.session_id)
        assert stored == state.to_doc()
        assert state == SessionState.from_doc(stored)
