"""WAL checkpoints of a SQLite file outside its writers' lock: a thread with its own connection.

SQLite's automatic checkpoint runs inside the commit that fills the log past
``wal_autocheckpoint`` pages, while that writer still holds the write lock (and
the ``flock`` of ``<file>-lock``): every other writer of every process waits for
the pages to be copied into the database file and synced. Here the commits are
counted, and every ``every`` commits a thread of the store runs a ``PASSIVE``
checkpoint on a connection of its own: it copies what no reader still needs,
beside the writers, and never waits for one. The automatic checkpoint stays, at
a larger ``wal_autocheckpoint``, as the bound on the log's growth when the
thread falls behind.
"""

from __future__ import annotations

import sqlite3
import threading

__all__ = ["AUTOCHECKPOINT_PAGES", "CHECKPOINT_COMMITS", "Checkpointer"]

#: commits between two checkpoints of the thread (a step writes a few pages: about 1,000 pages a checkpoint)
CHECKPOINT_COMMITS = 256
#: the automatic checkpoint's threshold, in pages of the log (SQLite's default is 1,000)
AUTOCHECKPOINT_PAGES = 10_000


class Checkpointer:
    """Counts the commits of one store's connection and checkpoints its file every ``every`` of them."""

    __slots__ = ("_closed", "_commits", "_conn", "_every", "_path", "_start", "_thread", "_wake")

    def __init__(self, path: str, *, every: int = CHECKPOINT_COMMITS) -> None:
        self._path = path
        self._every = every
        self._commits = 0
        self._start = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._conn: sqlite3.Connection | None = None
        self._thread: threading.Thread | None = None

    def committed(self) -> None:
        """One commit of the store's connection (called after it, under the store's lock but
        outside the writers' lock); never waits for a checkpoint."""
        self._commits += 1
        if self._commits < self._every:
            return
        self._commits = 0
        if self._thread is None:
            with self._start:
                if self._closed or self._thread is not None:
                    return
                self._thread = threading.Thread(target=self._run, name="learnloop-sqlite-checkpoint", daemon=True)
                self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._closed:
                return
            try:
                if self._conn is None:
                    self._conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.Error:
                pass  # (busy or gone: the next one, or the automatic checkpoint, catches up)

    def close(self) -> None:
        """Stop the thread (after the checkpoint under way) and close its connection."""
        with self._start:
            self._closed = True
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join(timeout=30)
        if self._conn is not None and (thread is None or not thread.is_alive()):
            self._conn.close()
            self._conn = None
