"""PostgreSQL writers in parallel: a block for some learners runs beside blocks for other
learners, after the blocks for the same learners and apart from blocks that may write anything.

Nothing here measures time: a transaction known to wait is one the server lists as waiting for
an advisory lock (``pg_stat_activity``), and every wait is bounded (60 s).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from learnloop.store import PostgresStore

LEARNERS = "learners"


@pytest.fixture
def url(postgres_database: Callable[[], str]) -> str:
    return postgres_database()


@pytest.fixture
def store(url: str) -> Iterator[PostgresStore]:
    made = PostgresStore(url, pool_size=6)
    try:
        yield made
    finally:
        made.close()


def _waiting_for_a_lock(url: str, n: int) -> None:
    """Return once ``n`` sessions of this database wait for an advisory lock (within 60 s)."""
    deadline = time.monotonic() + 60
    with psycopg.connect(url, autocommit=True) as conn:
        while True:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND wait_event = 'advisory'"
            ).fetchone()
            if row is not None and row[0] >= n:
                return
            assert time.monotonic() < deadline, "no transaction waits for the lock"
            time.sleep(0.01)


class _Held:
    """A thread inside ``store.atomic(...)`` that has written and waits for ``release``."""

    def __init__(self, store: PostgresStore, learners: list[tuple[str, str]] | None, row: tuple[Any, ...]) -> None:
        self.inside, self.release = threading.Event(), threading.Event()
        self.error: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, args=(store, learners, row))

    def _run(self, store: PostgresStore, learners: list[tuple[str, str]] | None, row: tuple[Any, ...]) -> None:
        try:
            with store.atomic(learners=learners):
                store.put_many(*row)
                # (statements go out in pipeline mode: a read waits for the lock and the write)
                assert store.get(row[0], row[1], row[2][0][0]) == row[2][0][1]
                self.inside.set()
                assert self.release.wait(60)
        except BaseException as exc:  # reported by the test
            self.error.append(exc)
            self.inside.set()

    @contextmanager
    def open(self) -> Iterator[None]:
        self.thread.start()
        assert self.inside.wait(60) and not self.error, self.error
        try:
            yield
        finally:
            self.release.set()
            self.thread.join(60)
        assert not self.error, self.error


def _in_thread(work: Callable[[], Any]) -> tuple[threading.Thread, threading.Event, list[Any]]:
    done, out = threading.Event(), []

    def run() -> None:
        try:
            out.append(work())
        except BaseException as exc:
            out.append(exc)
        done.set()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, done, out


def test_a_learners_write_commits_while_another_learners_transaction_is_open(store: PostgresStore, url: str) -> None:
    held = _Held(store, [("app", "a")], (LEARNERS, "app", [(("a", "c"), {"n": 1})]))
    with held.open():
        # learner B's write, in another connection, commits and is readable while A's is open
        with store.atomic(learners=[("app", "b")]):
            store.put_many(LEARNERS, "app", [(("b", "c"), {"n": 1})])
        assert store.get(LEARNERS, "app", ("b", "c")) == {"n": 1}
        assert store.get(LEARNERS, "app", ("a", "c")) is None  # A's is not committed yet

        # a second write for A waits for A's first to commit, then reads what it wrote
        def second() -> Any:
            with store.atomic(learners=[("app", "a")]):
                seen = store.get(LEARNERS, "app", ("a", "c"))
                store.put_many(LEARNERS, "app", [(("a", "c"), {"n": 2})])
            return seen

        thread, done, out = _in_thread(second)
        _waiting_for_a_lock(url, 1)
        assert not done.is_set()
    thread.join(60)
    assert out == [{"n": 1}]
    assert store.get(LEARNERS, "app", ("a", "c")) == {"n": 2}
    assert [k for k, _ in store.scan(LEARNERS, "app", order="seq")] == [("b", "c"), ("a", "c")]


def test_a_block_that_may_write_anything_waits_for_a_learners_block(store: PostgresStore, url: str) -> None:
    held = _Held(store, [("app", "a")], (LEARNERS, "app", [(("a", "c"), {"n": 1})]))
    with held.open():
        # a content write (no learners given) waits for the learner's transaction
        thread, done, out = _in_thread(lambda: store.put_many("items", "app", [(("q1",), {})]))
        _waiting_for_a_lock(url, 1)
        assert not done.is_set()
    thread.join(60)
    assert out == [None] and store.get("items", "app", ("q1",)) == {}


def test_a_learners_block_waits_for_a_block_that_may_write_anything(store: PostgresStore, url: str) -> None:
    held = _Held(store, None, ("meta", "app", [(("content_version",), {"v": 1})]))
    with held.open():

        def learner_write() -> Any:
            with store.atomic(learners=[("app", "b")]):
                version = store.get("meta", "app", ("content_version",))
                store.put_many(LEARNERS, "app", [(("b", "c"), {"n": 1})])
            return version

        thread, done, out = _in_thread(learner_write)
        _waiting_for_a_lock(url, 1)
        assert not done.is_set()
    thread.join(60)
    assert out == [{"v": 1}]  # it ran after the whole-store block committed, and saw its write


def test_nested_blocks_add_learners_and_cannot_widen_to_the_whole_store(store: PostgresStore, url: str) -> None:
    with store.atomic(learners=[("app", "a")]):
        with store.atomic(learners=[("app", "a"), ("app", "b")]):  # takes B's lock as well
            store.put_many(LEARNERS, "app", [(("b", "c"), {"n": 1})])
        with pytest.raises(RuntimeError, match="cannot hold a block that may write anything"):
            with store.atomic():
                pass

        # B's lock is held until the outer block ends: another thread's block for B waits
        def for_b() -> Any:
            with store.atomic(learners=[("app", "b")]):
                return store.get(LEARNERS, "app", ("b", "c"))

        thread, done, out = _in_thread(for_b)
        _waiting_for_a_lock(url, 1)
        assert not done.is_set()
    thread.join(60)
    assert out == [{"n": 1}]


@pytest.mark.parametrize("bad", [("app",), ("app", 1), "app", ("a", "b", "c")])
def test_learners_must_be_application_and_user_pairs(store: PostgresStore, bad: Any) -> None:
    with pytest.raises(ValueError, match=r"\(application, user\) pair"):
        with store.atomic(learners=[bad]):
            pass


def test_an_error_in_a_write_not_yet_answered_rolls_the_block_back(store: PostgresStore) -> None:
    # writes are pipelined: the server's refusal of one comes back with the commit, which fails
    with pytest.raises(psycopg.Error):
        with store.atomic(learners=[("app", "a")]):
            store.put_many(LEARNERS, "app", [(("a", "c"), {"n": 1})])
            with store._conn() as conn:
                conn.execute("SELECT 1 / 0")  # refused by the server, answer not read
    assert store.get(LEARNERS, "app", ("a", "c")) is None
    with store.atomic(learners=[("app", "a")]):  # the connection went back to the pool clean
        store.put_many(LEARNERS, "app", [(("a", "c"), {"n": 2})])
    assert store.get(LEARNERS, "app", ("a", "c")) == {"n": 2}


def test_a_nested_block_whose_write_is_refused_is_undone_alone(store: PostgresStore) -> None:
    with store.atomic(learners=[("app", "a")]):
        store.put_many(LEARNERS, "app", [(("a", "c"), {"n": 1})])
        with pytest.raises(ZeroDivisionError):
            with store.atomic(learners=[("app", "a")]):
                store.put_many(LEARNERS, "app", [(("a", "d"), {"n": 1})])
                with store._conn() as conn:
                    conn.execute("SELECT 1 / 0")  # refused by the server, answer not read
                raise ZeroDivisionError  # (the block fails before the refusal is read)
        store.put_many(LEARNERS, "app", [(("a", "e"), {"n": 1})])
    assert store.keys(LEARNERS, "app") == [("a", "c"), ("a", "e")]


def test_one_row_writes_of_a_block_go_out_as_one_statement(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[str] = []
    execute = psycopg.Connection.execute

    def counted(self: psycopg.Connection[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(query.decode() if isinstance(query, bytes) else str(query))
        return execute(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "execute", counted)
    with store.atomic(learners=[("app", "a")]):
        store.put_many("events", "app", [(("a", "c", "i", "t"), {"n": 1})])
        store.put_many(LEARNERS, "app", [(("a", "c"), {"n": 1})])
        store.put_many("sessions", "app", [(("a", "s"), {"n": 1})])
        store.put_many(LEARNERS, "app", [(("a", "c"), {"n": 2})])  # (a table held already: the rows go first)
    inserts = [q for q in sent if "INSERT" in q]
    assert len(inserts) == 2 and inserts[0].startswith("WITH") and inserts[0].count("INSERT") == 3
    assert sent[-1] == "COMMIT"
    assert store.get("events", "app", ("a", "c", "i", "t")) == {"n": 1}
    assert store.get(LEARNERS, "app", ("a", "c")) == {"n": 2}
    assert store.get("sessions", "app", ("a", "s")) == {"n": 1}
    assert [key for key, _ in store.scan(LEARNERS, "app", order="seq")] == [("a", "c")]


def test_rows_held_back_by_a_failed_nested_block_are_not_written(store: PostgresStore) -> None:
    with store.atomic(learners=[("app", "a")]):
        store.put_many(LEARNERS, "app", [(("a", "c"), {"n": 1})])  # held back, sent with the savepoint
        with pytest.raises(KeyError):
            with store.atomic(learners=[("app", "a")]):
                store.put_many(LEARNERS, "app", [(("a", "d"), {"n": 1})])  # held back, never sent
                raise KeyError("the block fails")
        assert store.get(LEARNERS, "app", ("a", "c")) == {"n": 1}  # (a read sends what is held first)
        store.put_many("sessions", "app", [(("a", "s"), {"n": 1})])
    assert store.keys(LEARNERS, "app") == [("a", "c")]
    assert store.keys("sessions", "app") == [("a", "s")]
