"""Writers of one SQLite file in several connections wait for each other in the kernel (a ``flock`` on
``<file>-lock``), not in SQLite's busy handler, which polls with sleeps of up to 100 ms."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from learnloop.store.sqlite import SQLiteStore

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads the waiting locks from /proc/locks")


def _waiting_flock(lock_file: Path) -> bool:
    """Whether a ``flock`` on ``lock_file`` is waited for now (a ``->`` line of /proc/locks on its inode)."""
    inode = f":{os.stat(lock_file).st_ino} "
    return any(
        line.split()[1:3] == ["->", "FLOCK"] and inode in line for line in Path("/proc/locks").read_text().splitlines()
    )


def test_a_writer_waits_for_another_connection_in_the_kernel(tmp_path: Path) -> None:
    path = tmp_path / "one.db"
    first, second = SQLiteStore(path), SQLiteStore(path)
    # SQLite's busy handler off in the second connection: only the writers' lock can make it wait
    second._conn.execute("PRAGMA busy_timeout=0")
    errors: list[BaseException] = []
    done = threading.Event()

    def write_second() -> None:
        try:
            second.put_many("meta", "a", [(("second",), {"v": 2})])
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    with first.atomic():
        first.put_many("meta", "a", [(("first",), {"v": 1})])
        writer = threading.Thread(target=write_second)
        writer.start()
        deadline = time.monotonic() + 60  # bounds a hang only
        while not (_waiting_flock(Path(f"{path}-lock")) or done.is_set()) and time.monotonic() < deadline:
            time.sleep(0.001)
        assert not done.is_set(), f"the second writer did not wait for the first: {errors}"
    writer.join(timeout=60)
    assert errors == []
    assert first.get("meta", "a", ("second",)) == {"v": 2}
    assert second.get("meta", "a", ("first",)) == {"v": 1}
    first.close()
    second.close()


def test_the_lock_file_is_released_on_rollback_and_close(tmp_path: Path) -> None:
    path = tmp_path / "one.db"
    first, second = SQLiteStore(path), SQLiteStore(path)
    second._conn.execute("PRAGMA busy_timeout=0")
    with pytest.raises(RuntimeError), first.atomic():
        first.put_many("meta", "a", [(("first",), {"v": 1})])
        raise RuntimeError("undone")
    second.put_many("meta", "a", [(("second",), {"v": 2})])  # would wait forever if the rollback kept the lock
    assert first.get("meta", "a", ("first",)) is None
    first.close()
    second.close()


def test_a_store_in_memory_has_no_lock_file(tmp_path: Path) -> None:
    store = SQLiteStore(":memory:")
    store.put_many("meta", "a", [(("k",), {"v": 1})])
    assert store._writers is None
    store.close()


def test_a_file_that_is_not_a_database_leaves_nothing_open(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"not a database " * 512)
    before = sorted(os.listdir("/proc/self/fd"))
    with pytest.raises(Exception, match="not a database"):
        SQLiteStore(path)
    assert sorted(os.listdir("/proc/self/fd")) == before


def test_the_log_is_checkpointed_by_the_stores_thread_not_by_a_commit(tmp_path: Path) -> None:
    """Commits leave the WAL to the store's checkpoint thread: the database file grows while
    the automatic checkpoint (at 10,000 pages) has not been reached."""
    from learnloop.store._checkpoint import AUTOCHECKPOINT_PAGES, Checkpointer

    path = tmp_path / "wal.db"
    store = SQLiteStore(path)
    try:
        store._checkpoints = Checkpointer(str(path), every=2)
        before = path.stat().st_size
        for k in range(2):
            store.put_many("items", "app", [((f"{k}-{n}",), {"text": "x" * 1000}) for n in range(100)])
        assert 2 * 100 * 1000 < AUTOCHECKPOINT_PAGES * 4096  # (far below the automatic checkpoint)
        deadline = time.monotonic() + 60
        while path.stat().st_size <= before:
            assert time.monotonic() < deadline, "the log was never checkpointed"
            time.sleep(0.01)
    finally:
        store.close()
    again = SQLiteStore(path)
    try:
        assert again.count("items", "app") == 200
    finally:
        again.close()
