"""An assessment session's items are stored in blocks written once, so that a step writes a
document of bounded size however long the assessment runs; read back, the session is whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from learnloop import Engine
from learnloop.engine.sessions.documents import BLOCK, joined_doc, split_doc
from learnloop.events import format_timestamp
from learnloop.sim import SimClock, sample_course
from learnloop.store import MemoryStore, SQLiteStore
from learnloop.store.base import json_doc
from learnloop.testing import Answer

N_STEPS = 2 * BLOCK + 9


def _answer(step: Any, clock: SimClock, score: float) -> list[dict[str, Any]]:
    rec = step.recommendation
    assert rec is not None
    return [Answer("attempt", score=score).event(rec.recommendation_context, at=clock.advance(40))]


def _outcome(step: Any) -> dict[str, Any]:
    out: dict[str, Any] = step.model_dump(mode="json")
    if out["recommendation"] is not None:
        del out["recommendation"]["recommendation_context"]
    return out


def _course(engine: Engine) -> str:
    items, catalog = sample_course(n_chapters=3, topics_per_chapter=3, items_per_topic=10)
    engine.upsert_items(items)
    engine.upsert_catalog(catalog)
    return catalog.catalog_id


def _stored(engine: Engine, session_id: str) -> dict[str, Any]:
    return dict(json_doc(engine.store.get("sessions", "default", ("u", session_id))))


def _scores(n: int) -> list[float]:
    return [float((k * 7) % 3 != 0) for k in range(n)]


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
def test_a_long_assessment_stepped_by_two_engines_answers_as_one_engine_and_reads_back_whole(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    def run(engines: list[Engine], clock: SimClock) -> tuple[list[dict[str, Any]], list[str], str]:
        catalog_id = _course(engines[0])
        context = engines[0].create_session(
            {"user_id": "u", "catalog_id": catalog_id, "mode": {"type": "assess"}, "filter": {}}
        )
        out, given_items, events = [], [], []
        for k, score in enumerate(_scores(N_STEPS)):
            # engines take turns in runs of 1 to 5 steps, so that each reads the other's writes
            step = engines[(k // (1 + k % 5)) % len(engines)].adaptive_step(context, events)
            out.append(_outcome(step))
            given_items.append(step.recommendation.item_id)
            events = _answer(step, clock, score)
        engines[0].adaptive_step(context, events)
        return out, given_items, context

    clock = SimClock()
    alone = Engine(seed=3, clock=clock, store=MemoryStore())
    reference, given_items, _ = run([alone], clock)

    clock = SimClock()
    if kind == "sqlite":
        engines = [Engine(seed=3, clock=clock, store=SQLiteStore(tmp_path / "s.db")) for _ in range(2)]
    elif kind == "postgres":
        url = request.getfixturevalue("postgres_database")()
        engines = [Engine.open(url, seed=3, clock=clock) for _ in range(2)]
        request.addfinalizer(lambda: [engine.close() for engine in engines])
    else:
        store = MemoryStore()
        engines = [Engine(seed=3, clock=clock, store=store) for _ in range(2)]
    outcomes, given_two, context = run(engines, clock)
    assert outcomes == reference
    assert given_two == given_items

    # every item answered is in the session, in order, once; the stored document holds less than a block
    assessed = list(dict.fromkeys(given_items))
    assert len(assessed) > 2 * BLOCK
    state = engines[1].session(context)
    assert list(state.assessed) == assessed
    doc = _stored(engines[1], state.session_id)
    assert len(doc["assessed"]) < BLOCK
    assert doc["assessed_blocks"] == len(assessed) // BLOCK
    if kind == "sqlite":  # a fresh engine on the file reads it whole
        fresh = Engine(seed=3, clock=clock, store=SQLiteStore(tmp_path / "s.db"))
        assert fresh.session(context) == state


def test_a_session_stored_with_its_whole_list_is_read_and_continued() -> None:
    """A document holding the whole list (as written before blocks existed) is read as it is,
    and the next step stores its blocks."""
    clock = SimClock()
    store = MemoryStore()
    first = Engine(seed=5, clock=clock, store=store)
    catalog_id = _course(first)
    context = first.create_session({"user_id": "u", "catalog_id": catalog_id, "mode": {"type": "assess"}, "filter": {}})
    step, events = None, []
    for score in _scores(BLOCK + 10):
        step = first.adaptive_step(context, events)
        events = _answer(step, clock, score)
    assert step is not None and step.recommendation is not None
    last_item = step.recommendation.item_id  # (answered by ``events``, not yet posted)
    state = first.session(context)
    whole = state.to_doc()
    assert len(whole["assessed"]) == BLOCK + 9
    # the old layout: one document, no block rows
    store.delete_many("sessions", "default", [("u", f"{state.session_id}.0")])
    store.put_many("sessions", "default", [(("u", state.session_id), whole)])

    second = Engine(seed=5, clock=clock, store=store)
    assert second.session(context) == state
    step = second.adaptive_step(context, events)
    after = second.session(context)
    assert list(after.assessed) == [*state.assessed, last_item]
    doc = _stored(second, state.session_id)
    assert doc["assessed_blocks"] == 1 and len(doc["assessed"]) == 10
    assert Engine(seed=5, clock=clock, store=store).session(context) == after


def test_a_missing_block_is_reported_as_a_damaged_store() -> None:
    store = MemoryStore()
    doc, rows = split_doc(
        {"session_id": "abc", "spec": {"user_id": "u"}, "assessed": []}, [f"i{k}" for k in range(BLOCK + 1)], 0
    )
    store.put_many("sessions", "default", [(("u", "abc"), doc), *rows])
    assert joined_doc(store, "default", doc)["assessed"] == [f"i{k}" for k in range(BLOCK + 1)]
    store.delete_many("sessions", "default", [rows[0][0]])
    with pytest.raises(RuntimeError, match=r"store damaged: session 'abc'.*'abc\.0' is missing"):
        joined_doc(store, "default", doc)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2 * BLOCK + 3), min_size=1, max_size=8))
def test_splitting_step_after_step_then_joining_gives_the_whole_list(growth: list[int]) -> None:
    """Whatever each step adds (nothing, a few items, several blocks at once), the stored document
    keeps less than a block and the rows it names complete it; each block is written once."""
    store = MemoryStore()
    assessed: list[str] = []
    blocks = 0
    written: set[str] = set()
    for added in growth:
        assessed += [f"item-{len(assessed) + k}" for k in range(added)]
        doc, rows = split_doc(
            {"session_id": "s1", "spec": {"user_id": "u"}, "assessed": list(assessed), "n": len(assessed)},
            assessed,
            blocks,
        )
        keys = {key[1] for key, _ in rows}
        assert not keys & written
        written |= keys
        store.put_many("sessions", "default", [(("u", "s1"), doc), *rows])
        stored = json_doc(store.get("sessions", "default", ("u", "s1")))
        assert len(stored["assessed"]) < BLOCK
        blocks = int(stored.get("assessed_blocks", 0))
        assert blocks == len(assessed) // BLOCK
        joined = joined_doc(store, "default", stored)
        assert joined == {"session_id": "s1", "spec": {"user_id": "u"}, "assessed": assessed, "n": len(assessed)}


@pytest.mark.parametrize("engines_taking_turns", [1, 2])
def test_items_assessed_again_are_listed_once_in_order_of_first_assessment(engines_taking_turns: int) -> None:
    """Past the last unseen item an assessment gives items again, and a context may be answered
    twice: the session lists each item once."""
    clock = SimClock()
    store = MemoryStore()
    engines = [Engine(seed=7, clock=clock, store=store) for _ in range(engines_taking_turns)]
    items, catalog = sample_course(n_chapters=1, topics_per_chapter=2, items_per_topic=3)
    engines[0].upsert_items(items)
    engines[0].upsert_catalog(catalog)
    context = engines[0].create_session(
        {"user_id": "u", "catalog_id": catalog.catalog_id, "mode": {"type": "assess"}, "filter": {}}
    )
    answered: list[str] = []
    events: list[dict[str, Any]] = []
    earlier: list[tuple[str, dict[str, Any]]] = []
    for k in range(3 * BLOCK):
        step = engines[k % len(engines)].adaptive_step(context, events)
        rec = step.recommendation
        assert rec is not None
        events = _answer(step, clock, float(k % 2))
        answered.append(rec.item_id)
        if k % 3 == 2:  # an earlier context answered again, beside the new answer
            item_id, again = earlier[k % len(earlier)]
            events.append({**again, "timestamp": format_timestamp(clock.advance(5))})
            answered.append(item_id)
        earlier.append((rec.item_id, events[0]))
    engines[0].adaptive_step(context, events)
    assert len(set(answered)) < len(answered)
    assert list(Engine(seed=7, clock=clock, store=store).session(context).assessed) == list(dict.fromkeys(answered))
