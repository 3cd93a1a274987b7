"""Sessions keyed under their user, ``(user, session id)``, so that a learner's sessions share the
first key part with their events and revisions (the distribution column on Citus); stores written
before, whose sessions were keyed by their id alone, are migrated when opened."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from learnloop import Engine
from learnloop.engine.sessions.documents import BLOCK
from learnloop.errors import NotFoundError
from learnloop.events import format_timestamp
from learnloop.sim import SimClock, sample_course
from learnloop.store._layout import SCHEMA_VERSION, VERSION_KEY, rekeyed_sessions
from learnloop.store.base import decode_doc, encode_doc


def test_rekeyed_sessions_go_under_their_user_with_a_row_naming_it() -> None:
    session = {"session_id": "s1", "spec": {"user_id": "ada"}, "assessed": []}
    rows = [
        ("app", "s1", encode_doc(session)),
        ("app", "s1.0", encode_doc({"items": ["q1"]})),
        ("app", "gone.3", encode_doc({"items": ["q2"]})),  # a block whose session is gone
        ("other", "s1", encode_doc({**session, "spec": {"user_id": "bob"}})),
    ]
    out = {(app, k1, k2): decode_doc(blob) for app, k1, k2, blob in rekeyed_sessions(rows)}
    assert out == {
        ("app", "ada", "s1"): session,
        ("app", "s1", ""): {"user_id": "ada"},
        ("app", "ada", "s1.0"): {"items": ["q1"]},
        ("app", "", "gone.3"): {"items": ["q2"]},
        ("other", "bob", "s1"): {**session, "spec": {"user_id": "bob"}},
        ("other", "s1", ""): {"user_id": "bob"},
    }


def _answer(step: Any, clock: SimClock) -> list[dict[str, Any]]:
    rec = step.recommendation
    at = {"timestamp": format_timestamp(clock.advance(30)), "recommendation_context": rec.recommendation_context}
    if rec.item_id.endswith("-theory"):
        return [{"type": "view_theory", "fraction_completed": 1.0, **at}]
    return [{"type": "attempt", "score": 1.0, **at}]


def _old_layout(kind: str, target: str) -> None:
    """Put the store's sessions back in the layout of schema version 1: keyed by their id alone."""
    statements = [
        "DELETE FROM {s} WHERE k2 = ''",
        "UPDATE {s} SET k1 = k2, k2 = ''",
        f"DELETE FROM {{m}} WHERE app = '' AND k1 = '{VERSION_KEY}'",
    ]
    if kind == "sqlite":
        with sqlite3.connect(target) as conn:
            for sql in statements:
                conn.execute(sql.format(s="sessions", m="meta"))
    else:
        with psycopg.connect(target, autocommit=True) as conn:
            for sql in statements:
                conn.execute(sql.format(s="learnloop.sessions", m="learnloop.meta"))


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_store_in_the_old_layout_is_migrated_when_opened_and_its_sessions_found(
    kind: str, tmp_path: Path, postgres_database: Callable[[], str]
) -> None:
    target = str(tmp_path / "old.db") if kind == "sqlite" else postgres_database()
    clock = SimClock()
    with Engine.open(target, seed=3, clock=clock) as engine:
        items, catalog = sample_course(n_chapters=2, topics_per_chapter=3, items_per_topic=8)
        engine.upsert_items(items)
        engine.upsert_catalog(catalog)
        contexts, states = {}, {}
        for user, mode, steps in (("ada", "learn", 3), ("bob", "assess", BLOCK + 2)):
            spec = {"user_id": user, "catalog_id": catalog.catalog_id, "mode": {"type": mode}, "filter": {}}
            contexts[user] = context = engine.create_session(spec)
            step, events = None, []
            for _ in range(steps):
                step = engine.adaptive_step(context, events)
                events = _answer(step, clock)
            states[user] = engine.session(context)
        assert len(states["bob"].assessed) == BLOCK + 1  # one block row beside the document
        assert engine.store.get("sessions", "default", ("ada", states["ada"].session_id)) is not None
    _old_layout(kind, target)

    for _ in range(2):  # the second opening finds the layout current: nothing moves
        with Engine.open(target, seed=3, clock=clock) as engine:
            store = engine.store
            assert store.get("meta", "", (VERSION_KEY,)) == {"v": SCHEMA_VERSION}
            ids = {state.session_id for state in states.values()}
            assert {k[0] for k in store.keys("sessions", "default")} == {"ada", "bob", *ids}
            assert len(store.keys("sessions", "default", ("bob",))) == 2  # the session and its block
            for user, state in states.items():
                assert store.get("sessions", "default", (state.session_id, "")) == {"user_id": user}
                assert engine.session(contexts[user]) == state  # found by the context issued before

    # a session migrated steps on
    with Engine.open(target, seed=3, clock=clock) as engine:
        step = engine.adaptive_step(contexts["ada"])
        step = engine.adaptive_step(contexts["ada"], _answer(step, clock))
        assert engine.session(contexts["ada"]).recommendation_count == states["ada"].recommendation_count + 2
        assert len(engine.session(contexts["bob"]).assessed) == BLOCK + 1


def test_a_new_session_is_keyed_under_its_user_with_the_row_naming_it() -> None:
    engine = Engine(seed=1)
    items, catalog = sample_course(n_chapters=1, topics_per_chapter=2, items_per_topic=2)
    engine.upsert_items(items)
    engine.upsert_catalog(catalog)
    context = engine.create_session({"user_id": "ada", "catalog_id": catalog.catalog_id, **LEARN})
    session_id = engine.session(context).session_id
    assert engine.store.keys("sessions", "default") == sorted([("ada", session_id), (session_id, "")])
    # another engine on the store (another process) finds the session by its context
    other = Engine(seed=1, store=engine.store)
    assert other.session(context) == engine.session(context)
    engine.store.delete_many("sessions", "default", [(session_id, "")])
    with pytest.raises(NotFoundError, match="session"):
        Engine(seed=1, store=engine.store).session(context)


LEARN = {"mode": {"type": "learn"}, "filter": {}}
