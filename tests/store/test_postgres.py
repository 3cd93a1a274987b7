"""PostgresStore beyond the conformance suite: opening by URL, several processes on one
database, and writers killed mid-write (SQLite too, for comparison)."""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import signal
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from learnloop import Engine
from learnloop.engine.learners.revisions import Revision
from learnloop.errors import ContextError
from learnloop.events import format_timestamp
from learnloop.sim import sample_course
from learnloop.store import PostgresStore
from learnloop.store import postgres as postgres_module

T0 = datetime(2025, 1, 1, tzinfo=UTC)
LEARN = {"mode": {"type": "learn"}, "filter": {}}


def _stamp(seconds: float) -> str:
    return format_timestamp(T0 + timedelta(seconds=seconds))


def _course(engine: Engine) -> tuple[str, list[tuple[str, str]]]:
    items, catalog = sample_course(n_chapters=1, topics_per_chapter=2, items_per_topic=3, with_theory=False)
    engine.upsert_items(items)
    engine.upsert_catalog(catalog)
    index = engine.catalog_index(catalog.catalog_id)
    pairs = [(i, index.topic_ids[index.item_topic[p]]) for p, i in enumerate(index.item_ids)]
    return catalog.catalog_id, pairs


def _attempt(cid: str, pair: tuple[str, str], seconds: float, score: float) -> dict[str, Any]:
    item, topic = pair
    return {
        "type": "attempt",
        "timestamp": _stamp(seconds),
        "catalog_id": cid,
        "item_id": item,
        "topic_id": topic,
        "score": score,
    }


# -- opening --------------------------------------------------------------------------------


def test_engine_open_on_a_url_keeps_content_sessions_and_the_secret(postgres_database: Callable[[], str]) -> None:
    url = postgres_database()
    with Engine.open(url, seed=1) as engine:
        assert isinstance(engine.store, PostgresStore)
        cid, _ = _course(engine)
        context = engine.create_session({"user_id": "u", "catalog_id": cid, **LEARN})
        engine.adaptive_step(context)
    # the short scheme names the same database; the context still verifies (the secret is stored)
    with Engine.open(url.replace("postgresql://", "postgres://", 1), seed=1) as again:
        assert again.catalog_ids() == [cid]
        assert again.session(context).recommendation_count == 1


def test_engine_open_refuses_sqlite_settings_for_postgresql(postgres_server: str) -> None:
    with pytest.raises(ValueError, match="synchronous= applies to SQLite"):
        Engine.open(postgres_server, synchronous="FULL")


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if psycopg were not installed
    monkeypatch.delitem(sys.modules, "learnloop.store.postgres")
    with pytest.raises(ImportError, match=r"pip install 'learnloop\[postgres\]'"):
        Engine.open("postgresql://nobody@/nothing")


def test_a_wrong_address_is_reported_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # by the one direct connection attempt, before a pool exists (a pool would retry until its timeout)
    attempts: list[str] = []
    pools: list[str] = []
    connect, pool = psycopg.connect, postgres_module.ConnectionPool

    def counted_connect(dsn: str, *args: Any, **kwargs: Any) -> Any:
        attempts.append(dsn)
        return connect(dsn, *args, **kwargs)

    def counted_pool(dsn: str, *args: Any, **kwargs: Any) -> Any:
        pools.append(dsn)
        return pool(dsn, *args, **kwargs)

    monkeypatch.setattr(psycopg, "connect", counted_connect)
    monkeypatch.setattr(postgres_module, "ConnectionPool", counted_pool)
    url = f"postgresql://nobody@/nothing?host={tmp_path}&connect_timeout=5"
    with pytest.raises(psycopg.OperationalError):
        PostgresStore(url)
    assert attempts == [url] and pools == []


def test_bad_arguments_and_keys_are_refused(postgres_database: Callable[[], str]) -> None:
    url = postgres_database()
    for schema in ["", "Upper", "with space", 'q"uote', "x" * 64]:
        with pytest.raises(ValueError, match="schema"):
            PostgresStore(url, schema=schema)
    with pytest.raises(ValueError, match="pool_size"):
        PostgresStore(url, pool_size=0)
    store = PostgresStore(url)
    try:
        with pytest.raises(ValueError, match="NUL"):
            store.put_many("items", "app", [(("ok",), {}), (("a\x00b",), {})])
        with pytest.raises(ValueError, match="NUL"):
            store.put_many("items", "a\x00pp", [(("ok",), {})])
        assert store.count("items", "app") == 0
    finally:
        store.close()


def test_schemas_keep_stores_on_one_database_apart(postgres_database: Callable[[], str]) -> None:
    url = postgres_database()
    first, second = PostgresStore(url, schema="first"), PostgresStore(url, schema="second")
    try:
        first.put_many("items", "app", [(("q1",), {"in": "first"})])
        assert second.get("items", "app", ("q1",)) is None
        second.put_many("items", "app", [(("q1",), {"in": "second"})])
        assert first.get("items", "app", ("q1",)) == {"in": "first"}
    finally:
        first.close()
        second.close()


def test_one_transaction_per_thread(postgres_database: Callable[[], str]) -> None:
    """A block's writes are its thread's until it commits; another thread's write waits for it."""
    import threading

    store = PostgresStore(postgres_database(), pool_size=4)
    seen: list[Any] = []
    inside, wrote = threading.Event(), threading.Event()

    def other() -> None:
        inside.wait(60)
        seen.append(store.get("items", "app", ("a",)))  # not committed yet: not seen
        store.put_many("items", "app", [(("b",), {})])  # waits for the block's commit
        wrote.set()

    thread = threading.Thread(target=other)
    thread.start()
    try:
        with store.atomic():
            store.put_many("items", "app", [(("a",), {})])
            inside.set()
            time.sleep(0.3)
            seen.append(wrote.is_set())
            assert store.get("items", "app", ("a",)) == {}
        thread.join(60)
        assert seen == [None, False]
        assert [k for k, _ in store.scan("items", "app", order="seq")] == [("a",), ("b",)]
    finally:
        thread.join(60)
        store.close()


# -- several processes ----------------------------------------------------------------------------


def _open_and_write(url: str, k: int, barrier: Any) -> None:
    barrier.wait(60)
    store = PostgresStore(url)
    store.put_many("items", "app", [((f"p{k}",), {"k": k})])
    store.close()


def test_several_processes_create_the_schema_at_once(postgres_database: Callable[[], str]) -> None:
    url = postgres_database()
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(4)
    procs = [ctx.Process(target=_open_and_write, args=(url, k, barrier)) for k in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    store = PostgresStore(url)
    try:
        assert store.keys("items", "app") == [(f"p{k}",) for k in range(4)]
    finally:
        store.close()


def _racer(url: str, cid: str, pairs: list[tuple[str, str]], k: int, barrier: Any, out: Any) -> None:
    try:
        barrier.wait(60)
        engine = Engine.open(url)  # the first to open creates the signing secret, the others read it
        context = engine.create_session({"user_id": "shared", "catalog_id": cid, **LEARN})
        for n in range(5):
            engine.upsert_events("shared", [_attempt(cid, pairs[n % len(pairs)], k * 1000 + n, 1.0)])
        out.put(("ok", context))
        engine.close()
    except BaseException as exc:
        out.put(("error", repr(exc)))


def test_processes_racing_on_a_fresh_database_share_one_secret_and_every_write(
    postgres_database: Callable[[], str],
) -> None:
    url = postgres_database()
    with Engine(store=PostgresStore(url), secret=b"x" * 32) as seeder:  # content only, no stored secret
        cid, pairs = _course(seeder)
    ctx = mp.get_context("fork")  # this process holds no connection or thread now
    barrier, out = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_racer, args=(url, cid, pairs, k, barrier, out)) for k in range(4)]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(60)
    assert [r[0] for r in results] == ["ok"] * 4, results
    with Engine.open(url) as engine:
        for _, context in results:
            assert engine.session(context).spec.user_id == "shared"  # signed with the one stored secret
        assert engine.store.count("events", "default", ("shared", cid)) == 20
        # every write read the revision the previous one left: none was lost
        assert Revision.from_doc(engine.store.get("learners", "default", ("shared", cid))).rev == 20


def _other_process(url: str, cid: str, context: str, pair: tuple[str, str], out: Any) -> None:
    try:
        engine = Engine.open(url, seed=1)
        seen = {
            "catalogs": engine.catalog_ids(),
            "recommendations": engine.session(context).recommendation_count,
            "last": engine.user_status("u", cid, [{}])[0].last_interaction_timestamp,
            "items": engine.store.keys("items", "scratch"),
        }
        engine.upsert_events("u", [_attempt(cid, pair, 3600, 0.0)])
        engine.upsert_items([{"item_id": "extra", "display_name": "Extra", "scorable": True}])
        other = engine.create_session({"user_id": "v", "catalog_id": cid, **LEARN})
        engine.store.put_many("items", "scratch", [(("a",), {})])
        out.put(("ok", seen, other))
        engine.close()
    except BaseException as exc:
        out.put(("error", repr(exc), None))


def test_two_processes_see_each_others_writes_and_refresh_cached_states(
    postgres_database: Callable[[], str],
) -> None:
    url = postgres_database()
    engine = Engine.open(url, seed=1)
    try:
        cid, pairs = _course(engine)
        context = engine.create_session({"user_id": "u", "catalog_id": cid, **LEARN})
        rec = engine.adaptive_step(context).recommendation
        assert rec is not None
        answer = {"type": "attempt", "timestamp": _stamp(60), "score": 1.0}
        engine.adaptive_step(context, [answer | {"recommendation_context": rec.recommendation_context}])
        before = engine.learner_view("u", cid)  # cached in this process
        engine.store.put_many("items", "scratch", [(("b",), {})])

        ctx = mp.get_context("spawn")  # this process runs pool threads: no fork
        out = ctx.Queue()
        proc = ctx.Process(target=_other_process, args=(url, cid, context, pairs[-1], out))
        proc.start()
        status, seen, other = out.get(timeout=120)
        proc.join(60)
        assert status == "ok", seen
        assert seen == {"catalogs": [cid], "recommendations": 2, "last": _stamp(60), "items": [("b",)]}

        # the other process's event reached this process's cached state
        after = engine.learner_view("u", cid)
        assert after.attempts.sum() == before.attempts.sum() + 1
        assert engine.user_status("u", cid, [{}])[0].last_interaction_timestamp == _stamp(3600)
        with Engine.open(url, seed=1) as fresh:
            assert fresh.user_status("u", cid, [{}]) == engine.user_status("u", cid, [{}])
        # its content and session, and its write numbered after this process's
        assert "extra" in [i.item_id for i in engine.item_database()]
        assert engine.session(other).spec.user_id == "v"
        engine.store.put_many("items", "scratch", [(("c",), {})])
        assert [k[0] for k, _ in engine.store.scan("items", "scratch", order="seq")] == ["b", "a", "c"]
    finally:
        engine.close()


@pytest.mark.parametrize("kind", ["postgres", "sqlite"])
def test_a_step_on_a_state_another_engine_wrote_since_is_planned_again(
    kind: str, postgres_database: Callable[[], str], tmp_path: Path
) -> None:
    """A step trusts the learner state its engine cached and checks it in its write: when another
    engine (process) stepped the learner meanwhile, the step is planned again from the store."""
    url = postgres_database() if kind == "postgres" else str(tmp_path / "shared.db")
    with Engine.open(url, seed=1) as first, Engine.open(url, seed=1) as second:
        cid, _ = _course(first)
        context = first.create_session({"user_id": "u", "catalog_id": cid, **LEARN})
        rec = first.adaptive_step(context).recommendation
        for seconds, engine in ((60, first), (120, second), (180, first), (240, second), (300, first)):
            assert rec is not None
            answer = {"type": "attempt", "timestamp": _stamp(seconds), "score": float(seconds % 120 == 0)}
            step = engine.adaptive_step(context, [answer | {"recommendation_context": rec.recommendation_context}])
            rec = step.recommendation
        with Engine.open(url, seed=1) as fresh:
            assert fresh.user_status("u", cid, [{}]) == first.user_status("u", cid, [{}])
            assert fresh.learner_view("u", cid).attempts.sum() == first.learner_view("u", cid).attempts.sum() == 5
            assert step.user_status == fresh.user_status("u", cid, [{}])[0]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_step_on_content_another_engine_changed_since_uses_the_new_content(
    kind: str, postgres_database: Callable[[], str], tmp_path: Path
) -> None:
    """A step trusts the catalog model its engine compiled and checks the content version with its
    locks: content another engine (process) changed meanwhile is read, and the step made on it."""
    url = postgres_database() if kind == "postgres" else str(tmp_path / "shared.db")
    with Engine.open(url, seed=1) as first, Engine.open(url, seed=1) as second:
        cid, _ = _course(first)
        context = first.create_session({"user_id": "u", "catalog_id": cid, **LEARN})
        rec = first.adaptive_step(context).recommendation
        assert rec is not None
        answer = {"type": "attempt", "timestamp": _stamp(60), "score": 1.0}
        rec = first.adaptive_step(context, [answer | {"recommendation_context": rec.recommendation_context}])
        rec = rec.recommendation
        assert rec is not None
        # the other engine takes the recommended item out of the catalog
        catalog = second.catalog(cid).model_dump(exclude_none=True)
        for topic in catalog["topics"]:
            if "item_refs" in topic:
                topic["item_refs"] = [ref for ref in topic["item_refs"] if ref["item_id"] != rec.item_id]
        second.upsert_catalog(catalog)
        answer = {"type": "attempt", "timestamp": _stamp(120), "score": 1.0}
        with pytest.raises(ContextError, match="no longer in topic"):
            first.adaptive_step(context, [answer | {"recommendation_context": rec.recommendation_context}])
        step = first.adaptive_step(context)
        assert step.recommendation is not None and step.recommendation.item_id != rec.item_id
        assert step.user_status == second.user_status("u", cid, [{}])[0]
        assert first.learner_view("u", cid).attempts.sum() == 1  # the refused answer was not stored


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_an_answer_to_an_item_another_engine_added_since_is_taken(
    kind: str, postgres_database: Callable[[], str], tmp_path: Path
) -> None:
    """An answer whose recommendation names an item the engine's trusted catalog model does not know
    (another engine added it) is checked against the stored content, not refused."""
    url = postgres_database() if kind == "postgres" else str(tmp_path / "shared.db")
    with Engine.open(url, seed=1) as first, Engine.open(url, seed=1) as second:
        cid, _ = _course(first)
        context = first.create_session({"user_id": "u", "catalog_id": cid, **LEARN})
        first.adaptive_step(context)  # (the first engine's model compiled and trusted)
        catalog = second.catalog(cid).model_dump(exclude_none=True)
        second.upsert_items([{"item_id": "added", "display_name": "Added", "scorable": True}])
        for topic in catalog["topics"]:
            if "item_refs" in topic:
                topic["item_refs"] = [{"item_id": "added"}]
        second.upsert_catalog(catalog)
        rec = second.adaptive_step(context).recommendation
        assert rec is not None and rec.item_id == "added"
        answer = {"type": "attempt", "timestamp": _stamp(60), "score": 1.0}
        step = first.adaptive_step(context, [answer | {"recommendation_context": rec.recommendation_context}])
        assert first.learner_view("u", cid).attempts.sum() == 1
        assert step.user_status == second.user_status("u", cid, [{}])[0]


def test_a_step_reads_its_session_and_revision_with_its_locks(
    postgres_database: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An adaptive step's reads inside its transaction are one statement, sent with the locks."""
    with Engine.open(postgres_database(), seed=1) as engine:
        cid, _ = _course(engine)
        context = engine.create_session({"user_id": "u", "catalog_id": cid, **LEARN})
        rec = engine.adaptive_step(context).recommendation
        sent: list[str] = []
        execute = psycopg.Connection.execute

        def counted(self: psycopg.Connection[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
            sent.append(query.decode() if isinstance(query, bytes) else str(query))
            return execute(self, query, *args, **kwargs)

        monkeypatch.setattr(psycopg.Connection, "execute", counted)
        for seconds in (60, 120):
            assert rec is not None
            answer = {"type": "attempt", "timestamp": _stamp(seconds), "score": 1.0}
            rec = engine.adaptive_step(context, [answer | {"recommendation_context": rec.recommendation_context}])
            rec = rec.recommendation
        begun = [k for k, q in enumerate(sent) if q.startswith("BEGIN")]
        assert len(begun) == 2
        reads = [q for q in sent[begun[-1] :] if q.startswith("SELECT") and "pg_advisory" not in q]
        assert len(reads) == 1 and '"learners"' in reads[0] and '"sessions"' in reads[0]
        between = sent[sent.index("COMMIT", begun[0]) + 1 : begun[1]]  # the second step, before its transaction
        assert not [q for q in between if '"learners"' in q or '"sessions"' in q]  # the cached state trusted


# -- writers killed mid-write ---------------------------------------------------------------------------
BATCH = 25
KILLS = 20


def _batch_of(stamp: str) -> int:
    seconds = (datetime.fromisoformat(stamp.replace("Z", "+00:00")) - T0).total_seconds()
    return int(seconds % 10**6) // BATCH


def _writer(target: str, cid: str, pairs: list[tuple[str, str]], k: int, acks: Any) -> None:
    engine = Engine.open(target)
    batch = 0
    while True:
        events = [
            _attempt(cid, pairs[(batch + i) % len(pairs)], k * 10**6 + batch * BATCH + i, float(i % 2))
            for i in range(BATCH)
        ]
        engine.upsert_events(f"w{k}", events)
        acks.send(batch)  # sent only once the call returned: the batch is committed
        batch += 1


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_writers_killed_mid_write_lose_no_acknowledged_event(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    target = str(tmp_path / "kill.db") if kind == "sqlite" else request.getfixturevalue("postgres_database")()
    with Engine.open(target) as setup:
        cid, pairs = _course(setup)
    ctx = mp.get_context("fork")  # cheap to start; this process holds no connection or thread now
    rng = random.Random(20)
    acked: dict[int, list[int]] = {}
    for k in range(KILLS):
        receiver, sender = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_writer, args=(target, cid, pairs, k, sender), daemon=True)
        proc.start()
        sender.close()
        got: list[int] = []
        want = rng.randint(1, 3)
        while len(got) < want:
            assert receiver.poll(60) and proc.is_alive(), f"writer {k} stopped after {got}"
            got.append(receiver.recv())
        time.sleep(rng.uniform(0, 0.01))
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(60)
        assert proc.exitcode == -signal.SIGKILL
        while receiver.poll():
            try:
                got.append(receiver.recv())
            except EOFError:
                break
        receiver.close()
        acked[k] = got

    with Engine.open(target) as engine:
        unacknowledged = 0
        for k, got in acked.items():
            user = f"w{k}"
            stored: dict[int, int] = {}
            for key in engine.store.keys("events", "default", (user, cid)):
                stored[_batch_of(key[3])] = stored.get(_batch_of(key[3]), 0) + 1
            # every acknowledged batch whole; at most the one in flight beyond them, whole as well
            assert got == list(range(len(got)))
            assert set(stored) in ({*got}, {*got, len(got)}), (k, got, stored)
            assert set(stored.values()) == {BATCH}, (k, stored)
            unacknowledged += len(stored) - len(got)
            # the learner's revision moved with its events (one write a batch)
            assert Revision.from_doc(engine.store.get("learners", "default", (user, cid))).rev == len(stored)
            assert engine.user_status(user, cid, [{}])[0].last_interaction_timestamp is not None
        assert unacknowledged < KILLS
