"""The embedded default store: SQLite through the standard library.

One file, write-ahead logging, one transaction per engine call. A committed
call survives the process dying (``synchronous=NORMAL`` in WAL mode); pass
``synchronous="FULL"`` to survive power loss as well, at some cost in latency.
Several processes may open the same file; writes are serialised by SQLite, and
on POSIX systems also by an exclusive ``flock`` on a lock file beside it (``<file>-lock``)
taken before ``BEGIN IMMEDIATE``: a writer waiting for another process is woken when
that one commits, where SQLite's busy handler polls with sleeps of up to 100 ms.
A connection answers reads of the learners, sessions and meta tables from the
rows it last read or wrote as long as no other connection has committed
(``PRAGMA data_version``, asked once per transaction and before each read
outside one), and numbers writes from a block of the sequence it reserved.
Event documents are kept without the fields their key repeats (see
``learnloop.store._compact``); files written before are read as they are.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from itertools import chain
from os import PathLike
from types import TracebackType
from typing import Any, Literal

from learnloop.store import _sqlite_sql
from learnloop.store._checkpoint import AUTOCHECKPOINT_PAGES, Checkpointer
from learnloop.store._compact import MARK, compact_columns, decode_event, encode_event, fields_of, marked_fields
from learnloop.store._filelock import FileLock
from learnloop.store._layout import SCHEMA_VERSION, VERSION_KEY, rekeyed_sessions, version_doc
from learnloop.store._sqlite_sql import INSERT, PADS, SELECT, chunks, event_columns, insert_statement, strings_only
from learnloop.store.base import TABLES, Columns, Doc, Key, check_key, check_prefix, decode_doc, encode_doc, json_doc

__all__ = ["SQLiteStore"]

_KEY_COLUMNS = ("k1", "k2", "k3", "k4")
#: keys per SELECT in ``get_many`` (under the 999 parameters of old SQLite builds)
_CHUNK = 900
#: tables read by key only and written at every step: no index on their write sequence in the files
#: this store creates (``scan(order="seq")`` still works on them, by sorting)
_UNORDERED = frozenset({"events", "learners", "sessions"})
#: tables of files written by earlier versions -> the document namespace their rows move to
_LEGACY_TABLES = {"assets": "v1.assets", "views": "v1.views", "users": "v1.users"}
_TEXT_MARK = MARK.decode()
_STR = frozenset((str,))
#: sequence numbers a reservation takes beyond those asked, for the writes that follow (see ``SQLiteStore._next_seq``)
_SPARE = 256
#: tables whose documents read or written are kept (a step reads them again), and how many rows at most
_KNOWN_TABLES = frozenset({"learners", "sessions", "meta"})
_KNOWN = 1024


class SQLiteStore:
    """A :class:`~learnloop.store.base.Store` in one SQLite file (``":memory:"`` works too)."""

    def __init__(self, path: str | PathLike[str], *, synchronous: Literal["NORMAL", "FULL"] = "NORMAL") -> None:
        self.path = str(path)
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._lock = threading.RLock()
        self._depth = 0
        #: what this connection knows of the file while no other connection commits (see ``_sync``):
        #: the ``PRAGMA data_version`` it was known at (None: nothing known), whether that was asked
        #: in the current transaction, the documents last read or written of the tables in ``_KNOWN_TABLES``
        #: (oldest first) and the sequence numbers reserved and not given (see ``_next_seq``)
        self._version: int | None = None
        self._checked = False
        self._rows: dict[tuple[str, str, tuple[str, ...]], bytes] = {}
        self._block: list[int] | None = None
        self._writers = FileLock.beside(self.path)
        self._checkpoints = None if self.path in ("", ":memory:") else Checkpointer(self.path)
        try:
            self._setup(synchronous)
        except BaseException:
            self.close()  # (a file that is not a database: nothing left open)
            raise

    def _setup(self, synchronous: str) -> None:
        conn = self._conn
        # the busy timeout first: several processes may open a fresh file at once
        conn.execute("PRAGMA busy_timeout=10000")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={synchronous}")
        if self._checkpoints is not None:  # (checkpoints are the thread's; this one bounds the log's growth)
            conn.execute(f"PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES}")
        #: text is stored in UTF-8 (as in every file this store creates)
        self._utf8 = conn.execute("PRAGMA encoding").fetchone()[0] == "UTF-8"
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
            conn.execute("INSERT OR IGNORE INTO counters VALUES ('seq', 0)")
            self._migrate()

    def _migrate(self) -> None:
        """Rows of earlier versions' tables into ``documents``, sessions under their user (``store/_layout.py``)."""
        conn = self._conn
        for legacy, namespace in _LEGACY_TABLES.items():
            if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (legacy,)).fetchone():
                conn.execute(
                    f"INSERT OR IGNORE INTO documents (app, k1, k2, k3, k4, seq, v) "
                    f"SELECT app, ?, k1, '', '', seq, v FROM {legacy}",
                    (namespace,),
                )
                conn.execute(f"DROP TABLE {legacy}")
        # sessions keyed by their id alone (before schema version 2): under their user
        version = conn.execute(
            "SELECT v FROM meta WHERE app = '' AND k1 = ? AND k2 = '' AND k3 = '' AND k4 = ''", (VERSION_KEY,)
        ).fetchone()
        if version is not None and json_doc(decode_doc(version[0])).get("v", 1) >= SCHEMA_VERSION:
            return
        old = conn.execute("SELECT app, k1, v FROM sessions WHERE k2 = ''").fetchall()
        rows = rekeyed_sessions(old)
        conn.execute("DELETE FROM sessions WHERE k2 = ''")
        first = self._next_seq(len(rows) + 1)
        conn.executemany(
            INSERT["sessions"], [(app, k1, k2, "", "", first + n, blob) for n, (app, k1, k2, blob) in enumerate(rows)]
        )
        conn.execute(INSERT["meta"], ("", VERSION_KEY, "", "", "", first + len(rows), version_doc()))
        self._forget()

    # -- transactions ---------------------------------------------------------
    def atomic(
        self, *, learners: Iterable[tuple[str, str]] | None = None, reads: Iterable[tuple[str, str, Key]] = ()
    ) -> AbstractContextManager[None]:
        """One transaction; a nested block is a savepoint that a raise rolls back alone.

        ``learners`` and ``reads`` change nothing: one writer at a time (``BEGIN IMMEDIATE``), reads in process."""
        return _Transaction(self)

    def _begin(self) -> None:
        self._lock.acquire()
        try:
            if self._depth:
                self._conn.execute(f"SAVEPOINT sp{self._depth}")
            else:
                if self._writers is not None:
                    self._writers.acquire()
                try:
                    self._conn.execute("BEGIN IMMEDIATE")
                except BaseException:
                    self._release_writers()
                    raise
                self._checked = False
        except BaseException:
            self._lock.release()
            raise
        self._depth += 1

    def _end(self, failed: bool) -> None:
        try:
            self._depth -= 1
            savepoint = f"sp{self._depth}" if self._depth else None
            if failed:
                self._forget()  # the rows and sequence numbers of the writes undone
                if savepoint:
                    self._conn.execute(f"ROLLBACK TO {savepoint}")
                    self._conn.execute(f"RELEASE {savepoint}")
                else:
                    self._conn.execute("ROLLBACK")
            elif savepoint:
                self._conn.execute(f"RELEASE {savepoint}")
            else:
                try:
                    self._conn.execute("COMMIT")
                except BaseException:
                    self._forget()
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
        finally:
            if not self._depth:
                self._release_writers()
                if not failed and self._checkpoints is not None:
                    self._checkpoints.committed()
            self._lock.release()

    def _release_writers(self) -> None:
        if self._writers is not None:
            self._writers.release()

    # -- what this connection knows of the file ---------------------------------------
    def _sync(self) -> None:
        """Forget the rows and sequence numbers known if another connection has committed since
        they were (asked once per transaction: no other commits while it holds the write lock)."""
        if self._depth:
            if self._checked:
                return
            self._checked = True
        version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self._version:
            self._version = version
            self._rows.clear()
            self._block = None

    def _forget(self) -> None:
        """Forget the rows and sequence numbers known (writes were undone)."""
        self._version = None
        self._rows.clear()
        self._block = None

    def _remember(self, table: str, app: str, params: tuple[str, ...], blob: bytes) -> None:
        rows = self._rows
        key = (table, app, params)
        rows.pop(key, None)
        rows[key] = blob
        if len(rows) > _KNOWN:
            del rows[next(iter(rows))]

    # -- helpers ------------------------------------------------------------------
    @staticmethod
    def _params(table: str, key: Key) -> tuple[str, ...]:
        """The key's four columns (a short key padded with empty strings); raises as :func:`check_key`."""
        if key.__class__ is tuple and len(key) == TABLES.get(table) and _STR.issuperset(map(type, key)):
            return key + PADS[len(key)]
        check_key(table, key)
        return tuple(key) + PADS[len(key)]

    @staticmethod
    def _where_prefix(table: str, prefix: Key) -> tuple[str, tuple[str, ...]]:
        check_prefix(table, tuple(prefix))
        clause = "".join(f" AND {col} = ?" for col in _KEY_COLUMNS[: len(prefix)])
        return clause, tuple(prefix)

    def _next_seq(self, n: int) -> int:
        """Reserve ``n`` sequence numbers (in a transaction); returns the first.

        A reservation advances the stored counter by ``_SPARE`` more numbers than asked, given to
        later writes, of this transaction or of the following ones while no other connection
        commits (the counter is then still where this connection left it, and every number given
        elsewhere below). Numbers not given leave gaps in the sequence, which only orders the writes."""
        self._sync()
        block = self._block
        if block is not None and block[0] + n - 1 <= block[1]:
            first = block[0]
            block[0] = first + n
            return first
        cur = self._conn.execute(
            "UPDATE counters SET value = value + ? WHERE name = 'seq' RETURNING value", (n + _SPARE,)
        )
        last = cur.fetchone()[0]
        self._block = [last - _SPARE + 1, last]
        return last - _SPARE - n + 1  # type: ignore[no-any-return]

    # -- reads ------------------------------------------------------------------------
    def get(self, table: str, app: str, key: Key) -> Doc | None:
        params = self._params(table, key)
        if table not in _KNOWN_TABLES:
            with self._lock:
                row = self._conn.execute(SELECT[table], (app, *params)).fetchone()
            return None if row is None else decode_event(params, row[0])
        with self._lock:
            self._sync()  # before the read: a commit between them only makes what is known older
            blob = self._rows.get((table, app, params))
            if blob is None:
                row = self._conn.execute(SELECT[table], (app, *params)).fetchone()
                if row is None:
                    return None
                blob = row[0]
                self._remember(table, app, params, blob)
        return decode_doc(blob)

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
                        found[tuple(row[:width])] = decode_event(row, row[4])
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
                    found[(k1,)] = decode_event((k1, "", "", ""), blob)
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
                f"SELECT k1, k2, k3, k4, v FROM {table} WHERE app = ?{clause} ORDER BY {order_by}", (app, *params)
            ).fetchall()
        return iter([(tuple(row[:width]), decode_event(row, row[4])) for row in rows])

    def scan_fields(
        self, table: str, app: str, prefix: Key = (), *, last_after: str | None = None
    ) -> tuple[list[Key], dict[str, list[Any]]]:
        """:meth:`scan` in write order as columns: the keys, and per field name each document's
        value (None where it has none); the documents are read as one JSON array."""
        clause, params = self._where_prefix(table, prefix)
        width = TABLES[table]
        if table == "events" and len(params) == 2 and self._utf8:  # a learner's events: one row of columns
            with self._lock:
                found = event_columns(self._conn, app, params, last_after)
            if found is not None:
                return found
        if last_after is not None:
            clause += f" AND {_KEY_COLUMNS[width - 1]} > ?"
            params = (*params, last_after)
        with self._lock:
            rows = self._conn.execute(
                f"SELECT k1, k2, k3, k4, v FROM {table} WHERE app = ?{clause} ORDER BY seq", (app, *params)
            ).fetchall()
        keys = [row[:width] for row in rows]
        fields = marked_fields(keys, [row[4] for row in rows]) if width == 4 else None
        return keys, fields if fields is not None else fields_of([decode_event(row, row[4]) for row in rows])

    def event_fields(self, app: str, learner: Key, names: Sequence[str], *, last_after: str | None = None) -> Any:
        """A learner's events as fields in key order, and their write order (``_sqlite_sql.keyed_fields``)."""
        with self._lock:
            return _sqlite_sql.keyed_fields(self._conn, app, tuple(learner), names, last_after) if self._utf8 else None

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
            row = self._conn.execute(f"SELECT COUNT(*) FROM {table} WHERE app = ?{clause}", (app, *params)).fetchone()
        count: int = row[0]
        return count

    # -- writes ---------------------------------------------------------------------
    def put_many(self, table: str, app: str, rows: Iterable[tuple[Key, Doc]]) -> None:
        columns = self._columns(table, rows) if isinstance(rows, Columns) else None
        if columns is not None:
            keys, docs = columns
            if not docs:
                return
            with self._lock:
                if table in _KNOWN_TABLES:
                    self._rows.clear()
                if self._depth and len(docs) == 1:
                    # within a transaction, one statement needs no savepoint (SQLite applies a statement
                    # whole or not at all; a failed write leaves at most a gap in the sequence)
                    self._insert_columns(table, app, keys, docs, self._next_seq(1))
                    return
                with self.atomic():
                    self._insert_columns(table, app, keys, docs, self._next_seq(len(docs)))
            return
        prepared = []
        for key, doc in rows:
            params = self._params(table, key)
            # events without the fields their keys repeat (see store._compact)
            prepared.append((params, encode_event(params, doc) if table == "events" else encode_doc(doc)))
        if not prepared:
            return
        with self._lock:
            if self._depth and len(prepared) == 1:  # one statement (as above)
                self._insert(table, app, prepared)
            else:
                with self.atomic():
                    self._insert(table, app, prepared)

    def _insert(self, table: str, app: str, prepared: list[tuple[tuple[str, ...], bytes]]) -> None:
        first = self._next_seq(len(prepared))
        if len(prepared) == 1:
            params, blob = prepared[0]
            self._conn.execute(INSERT[table], (app, *params, first, blob))
        else:
            self._conn.executemany(
                INSERT[table], [(app, *params, first + i, blob) for i, (params, blob) in enumerate(prepared)]
            )
        if table in _KNOWN_TABLES:
            for params, blob in prepared:
                self._remember(table, app, params, blob)

    def _columns(self, table: str, rows: Columns) -> tuple[list[Sequence[str]], list[str] | list[bytes]] | None:
        """Rows given as columns: the key columns and the documents encoded by column (None: row by row)."""
        if len(rows.keys) != TABLES.get(table) or not all(map(strings_only, rows.keys)):
            return None
        # events without the fields their keys repeat, behind the mark (see store._compact)
        short = compact_columns(rows) if table == "events" else None
        docs: list[str] | list[bytes] | None
        if self._utf8:
            docs = (short or rows).json_doc_texts()
            if docs is not None and short is not None:
                docs = list(map(_TEXT_MARK.__add__, docs))
        else:
            docs = (short or rows).json_docs()
            if docs is not None and short is not None:
                docs = list(map(MARK.__add__, docs))
        if docs is None:
            return None
        n = len(docs)
        return [*rows.keys, *[[""] * n] * (4 - len(rows.keys))], docs

    def _insert_columns(
        self, table: str, app: str, keys: list[Sequence[str]], docs: list[str] | list[bytes], first: int
    ) -> None:
        """Write rows given as columns, numbered from ``first``, many rows per statement: a key column
        with one value throughout is bound once per statement, the others row by row."""
        n = len(docs)
        fixed = tuple(part.count(part[0]) == n for part in keys)
        varying = [part for part, same in zip(keys, fixed, strict=True) if not same]
        head = (app, *(part[0] for part, same in zip(keys, fixed, strict=True) if same))
        text = docs[0].__class__ is str
        at = 0
        for size in chunks(n, _CHUNK // (len(varying) + 2)):
            stop = at + size
            rows = zip(
                *(part[at:stop] for part in varying), range(first + at, first + stop), docs[at:stop], strict=True
            )
            self._conn.execute(insert_statement(table, fixed, text, size), head + tuple(chain.from_iterable(rows)))
            at = stop

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
                self._rows.pop((table, app, params), None)
        return deleted

    def delete_prefix(self, table: str, app: str, prefix: Key) -> int:
        clause, params = self._where_prefix(table, prefix)
        with self.atomic():
            if table in _KNOWN_TABLES:
                self._rows.clear()
            return self._conn.execute(f"DELETE FROM {table} WHERE app = ?{clause}", (app, *params)).rowcount

    def close(self) -> None:
        with self._lock:
            if self._checkpoints is not None:
                self._checkpoints.close()
            self._conn.close()
            if self._writers is not None:
                self._writers.close()


class _Transaction:
    """``SQLiteStore.atomic()``: the store's lock held and a transaction (or savepoint) open for the block."""

    __slots__ = ("_store",)

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store

    def __enter__(self) -> None:
        self._store._begin()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._store._end(kind is not None)
