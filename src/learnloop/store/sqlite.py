"""The embedded default store: SQLite through the standard library.

One file, write-ahead logging, one transaction per engine call. A committed
call survives the process dying (``synchronous=NORMAL`` in WAL mode); pass
``synchronous="FULL"`` to survive power loss as well, at some cost in latency.
Several processes may open the same file; writes are serialised by SQLite.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import repeat
from os import PathLike
from typing import Literal

from learnloop.store.base import TABLES, Columns, Doc, Key, check_key, check_prefix, decode_doc, encode_doc

__all__ = ["SQLiteStore"]

_KEY_COLUMNS = ("k1", "k2", "k3", "k4")
#: keys per SELECT in ``get_many`` (under the 999 parameters of old SQLite builds)
_CHUNK = 900
#: high-volume tables read by key only: no index on their write sequence
#: (``scan(order="seq")`` still works on them, by sorting)
_UNORDERED = frozenset({"events", "learners"})
#: tables of files written by earlier versions -> the document namespace their rows move to
_LEGACY_TABLES = {"assets": "v1.assets", "views": "v1.views", "users": "v1.users"}


class SQLiteStore:
    """A :class:`~learnloop.store.base.Store` in one SQLite file (``":memory:"`` works too)."""

    def __init__(self, path: str | PathLike[str], *, synchronous: Literal["NORMAL", "FULL"] = "NORMAL") -> None:
        self.path = str(path)
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._lock = threading.RLock()
        self._depth = 0
        conn = self._conn
        # the busy timeout first: several processes may open a fresh file at once
        conn.execute("PRAGMA busy_timeout=10000")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={synchronous}")
        with self.atomic():
            for table in TABLES:
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {table} ("
                    "app TEXT NOT NULL, k1 TEXT NOT NULL, k2 TEXT NOT NULL, k3 TEXT NOT NULL, "
                    "k4 TEXT NOT NULL, seq INTEGER NOT NULL, v BLOB NOT NULL, "
                    "PRIMARY KEY (app, k1, k2, k3, k4)) WITHOUT ROWID"
                )
                if table not in _UNORDERED:
                    conn.execute(f"CREATE INDEX IF NOT EXISTS {table}_seq ON {table} (app, seq)")
            conn.execute("CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)")
            self._migrate()
            conn.execute("INSERT OR IGNORE INTO counters VALUES ('seq', 0)")

    def _migrate(self) -> None:
        """Move the rows of tables of earlier versions into the namespaced ``documents`` table."""
        conn = self._conn
        for legacy, namespace in _LEGACY_TABLES.items():
            if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (legacy,)).fetchone():
                conn.execute(
                    f"INSERT OR IGNORE INTO documents (app, k1, k2, k3, k4, seq, v) "
                    f"SELECT app, ?, k1, '', '', seq, v FROM {legacy}",
                    (namespace,),
                )
                conn.execute(f"DROP TABLE {legacy}")

    # -- transactions ---------------------------------------------------------
    @contextmanager
    def atomic(self) -> Iterator[None]:
        """One transaction; a nested block is a savepoint that a raise rolls back alone."""
        with self._lock:
            savepoint = f"sp{self._depth}" if self._depth else None
            self._conn.execute(f"SAVEPOINT {savepoint}" if savepoint else "BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                if savepoint:
                    self._conn.execute(f"ROLLBACK TO {savepoint}")
                    self._conn.execute(f"RELEASE {savepoint}")
                else:
                    self._conn.execute("ROLLBACK")
                raise
            self._depth -= 1
            if savepoint:
                self._conn.execute(f"RELEASE {savepoint}")
                return
            try:
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    # -- helpers ------------------------------------------------------------------
    @staticmethod
    def _params(table: str, key: Key) -> tuple[str, ...]:
        check_key(table, key)
        return tuple(key) + ("",) * (4 - len(key))

    @staticmethod
    def _where_prefix(table: str, prefix: Key) -> tuple[str, tuple[str, ...]]:
        check_prefix(table, tuple(prefix))
        clause = "".join(f" AND {col} = ?" for col in _KEY_COLUMNS[: len(prefix)])
        return clause, tuple(prefix)

    def _next_seq(self, n: int) -> int:
        """Reserve ``n`` sequence numbers; returns the first."""
        cur = self._conn.execute("UPDATE counters SET value = value + ? WHERE name = 'seq' RETURNING value", (n,))
        last = cur.fetchone()[0]
        return last - n + 1

    # -- reads ------------------------------------------------------------------------
    def get(self, table: str, app: str, key: Key) -> Doc | None:
        params = self._params(table, key)
        with self._lock:
            row = self._conn.execute(
                f"SELECT v FROM {table} WHERE app = ? AND k1 = ? AND k2 = ? AND k3 = ? AND k4 = ?",
                (app, *params),
            ).fetchone()
        return None if row is None else decode_doc(row[0])

    def get_many(self, table: str, app: str, keys: Iterable[Key]) -> dict[Key, Doc]:
        check_prefix(table, ())
        width = TABLES[table]
        wanted = [self._params(table, tuple(key)) for key in keys]
        found: dict[Key, Doc] = {}
        if width > 1:
            step = max(1, _CHUNK // 4)
            with self._lock:
                for at in range(0, len(wanted), step):
                    chunk = wanted[at : at + step]
                    marks = ", ".join("(?, ?, ?, ?)" for _ in chunk)
                    # a join on the wanted keys, so each is one primary-key lookup
                    rows = self._conn.execute(
                        f"WITH wanted(k1, k2, k3, k4) AS (VALUES {marks}) "
                        f"SELECT t.k1, t.k2, t.k3, t.k4, t.v FROM wanted CROSS JOIN {table} AS t "
                        "ON t.app = ? AND t.k1 = wanted.k1 AND t.k2 = wanted.k2 "
                        "AND t.k3 = wanted.k3 AND t.k4 = wanted.k4",
                        (*(part for params in chunk for part in params), app),
                    ).fetchall()
                    for row in rows:
                        found[tuple(row[:width])] = decode_doc(row[4])
            return found
        with self._lock:
            for at in range(0, len(wanted), _CHUNK):
                firsts = [params[0] for params in wanted[at : at + _CHUNK]]
                marks = ", ".join("?" * len(firsts))
                rows = self._conn.execute(
                    f"SELECT k1, v FROM {table} WHERE app = ? AND k1 IN ({marks}) AND k2 = '' AND k3 = '' AND k4 = ''",
                    (app, *firsts),
                ).fetchall()
                for k1, blob in rows:
                    found[(k1,)] = decode_doc(blob)
        return found

    def scan(
        self,
        table: str,
        app: str,
        prefix: Key = (),
        *,
        order: Literal["key", "seq"] = "key",
        last_after: str | None = None,
    ) -> Iterator[tuple[Key, Doc]]:
        clause, params = self._where_prefix(table, prefix)
        width = TABLES[table]
        if last_after is not None:
            clause += f" AND {_KEY_COLUMNS[width - 1]} > ?"
            params = (*params, last_after)
        order_by = "k1, k2, k3, k4" if order == "key" else "seq"
        with self._lock:
            rows = self._conn.execute(
                f"SELECT k1, k2, k3, k4, v FROM {table} WHERE app = ?{clause} ORDER BY {order_by}",
                (app, *params),
            ).fetchall()
        return iter([(tuple(row[:width]), decode_doc(row[4])) for row in rows])

    def keys(self, table: str, app: str, prefix: Key = ()) -> list[Key]:
        clause, params = self._where_prefix(table, prefix)
        width = TABLES[table]
        with self._lock:
            rows = self._conn.execute(
                f"SELECT k1, k2, k3, k4 FROM {table} WHERE app = ?{clause} ORDER BY k1, k2, k3, k4",
                (app, *params),
            ).fetchall()
        return [tuple(row[:width]) for row in rows]

    def count(self, table: str, app: str, prefix: Key = ()) -> int:
        clause, params = self._where_prefix(table, prefix)
        with self._lock:
            return self._conn.execute(f"SELECT COUNT(*) FROM {table} WHERE app = ?{clause}", (app, *params)).fetchone()[
                0
            ]

    # -- writes ---------------------------------------------------------------------
    def put_many(self, table: str, app: str, rows: Iterable[tuple[Key, Doc]]) -> None:
        columns = self._columns(table, rows) if isinstance(rows, Columns) else None
        if columns is not None:  # one prepared statement over the columns
            keys, blobs = columns
            if blobs:
                with self.atomic():
                    first = self._next_seq(len(blobs))
                    self._conn.executemany(
                        f"INSERT OR REPLACE INTO {table} (app, k1, k2, k3, k4, seq, v) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        zip(repeat(app), *keys, range(first, first + len(blobs)), blobs, strict=False),
                    )
            return
        prepared = [(self._params(table, key), encode_doc(doc)) for key, doc in rows]
        if not prepared:
            return
        with self.atomic():
            first = self._next_seq(len(prepared))
            self._conn.executemany(
                f"INSERT OR REPLACE INTO {table} (app, k1, k2, k3, k4, seq, v) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(app, *params, first + i, blob) for i, (params, blob) in enumerate(prepared)],
            )

    @staticmethod
    def _columns(table: str, rows: Columns) -> tuple[list[Iterable[str]], list[bytes]] | None:
        """Rows given as columns: the four key columns and the documents, encoded column by column
        (None: to be taken row by row)."""
        if len(rows.keys) != TABLES.get(table) or any(set(map(type, part)) != {str} for part in rows.keys):
            return None
        blobs = rows.json_docs()
        if blobs is None:
            return None
        return [*rows.keys, *[repeat("")] * (4 - len(rows.keys))], blobs

    def delete_many(self, table: str, app: str, keys: Iterable[Key]) -> list[Key]:
        deleted: list[Key] = []
        with self.atomic():
            for key in keys:
                params = self._params(table, key)
                cur = self._conn.execute(
                    f"DELETE FROM {table} WHERE app = ? AND k1 = ? AND k2 = ? AND k3 = ? AND k4 = ?",
                    (app, *params),
                )
                if cur.rowcount:
                    deleted.append(tuple(key))
        return deleted

    def delete_prefix(self, table: str, app: str, prefix: Key) -> int:
        clause, params = self._where_prefix(table, prefix)
        with self.atomic():
            return self._conn.execute(f"DELETE FROM {table} WHERE app = ?{clause}", (app, *params)).rowcount

    def close(self) -> None:
        with self._lock:
            self._conn.close()
