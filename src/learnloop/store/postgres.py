"""A store shared by processes and hosts: PostgreSQL through psycopg 3 and its connection pool.

Needs the ``postgres`` extra (``pip install 'learnloop[postgres]'``). The tables
are created on first open (idempotent, under an advisory lock, so several
processes may open a fresh database at once), in their own schema
(``learnloop`` unless told otherwise).

Same semantics as :class:`~learnloop.store.sqlite.SQLiteStore`:

- every write is one transaction, and ``atomic()`` groups writes into one
  (nested blocks are savepoints). A transaction holds one pooled connection,
  pinned to the thread that opened it; reads in that thread go through it and
  see its writes, reads elsewhere take any connection and see committed data;
- write transactions take transaction-level advisory locks when they begin,
  under ``READ COMMITTED``, so each statement after the locks sees every earlier
  commit of a transaction that held a conflicting lock: a block for some
  learners (``atomic(learners=...)``) takes the schema's lock in shared mode and
  each learner's lock exclusively, so blocks for different learners run at the
  same time and those for one learner one after the other; any other block
  (content, settings, the signing secret, a write outside a block) takes the
  schema's lock exclusively and runs alone. Locks are always taken schema
  first, then learners in ascending lock number, so no two transactions wait
  on each other;
- a transaction's statements are sent in pipeline mode: a write is sent without
  waiting for its answer, which comes back with the next read or the commit; the
  rows a block says it will read (``atomic(reads=...)``) are read by one statement
  sent with its ``BEGIN`` and locks, so that an adaptive step costs two round trips
  inside its transaction (the locks and reads, then the writes and the commit);
- one database sequence numbers the writes of every table, so ``scan(order="seq")``
  follows the order of commits of the transactions that exclude each other (one
  learner's, or any beside a block that runs alone).

Primary keys are ``(app, k1, k2, k3, k4)``: the application, then the first key
part (the user for events, learner states and sessions), so that on Citus the
learner tables can be distributed by their first key part, co-located, and the
content tables kept as reference tables (see ``docs/stores.md``). Databases
whose sessions were keyed by their id alone are migrated when opened.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import repeat
from typing import Any, Literal

try:
    import psycopg
    from psycopg_pool import ConnectionPool
except ImportError as exc:
    raise ImportError("PostgreSQL support needs the 'postgres' extra: pip install 'learnloop[postgres]'") from exc

from learnloop.store._codec import json_joined
from learnloop.store._compact import fields_of
from learnloop.store._pg_fields import keyed_fields
from learnloop.store._pg_schema import UPSERT, create
from learnloop.store.base import TABLES, Doc, Key, check_key, check_prefix, decode_doc, encode_doc

__all__ = ["DISTRIBUTED_TABLES", "PostgresStore"]

_KEY_COLUMNS = ("k1", "k2", "k3", "k4")
#: tables of one learner's data, distributable by their first key part, the user (Citus); the others are reference tables
DISTRIBUTED_TABLES = frozenset({"events", "learners", "sessions"})
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_JOIN = " AND ".join(f"t.{col} = w.{col}" for col in _KEY_COLUMNS)
_UNNEST_KEYS = "unnest(%s::text[], %s::text[], %s::text[], %s::text[])"


def _lock_id(schema: str, *learner: str) -> int:
    """The advisory lock of a schema's writers, or of one learner ``(app, user)`` of it: a stable
    signed 64-bit number (the schema's is the one every earlier version took)."""
    name = f"learnloop:{schema}" if not learner else "\x1f".join(("learnloop:learner", schema, *learner))
    digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class _Tx:
    """The transaction open in a thread: its connection and pipeline, the learners' locks it holds
    (None: the schema's lock exclusively, so anything may be written), its savepoints, the
    rows read ahead (``(table, app, padded key)`` -> stored bytes or None), each answered once
    to a :meth:`PostgresStore.get` before the block writes its table, and the one-row writes
    held back (``(table, parameters)``), sent together before anything else."""

    __slots__ = ("ahead", "conn", "depth", "held", "pipeline", "rows")

    def __init__(self, conn: psycopg.Connection[Any], pipeline: psycopg.Pipeline, held: frozenset[int] | None) -> None:
        self.conn = conn
        self.pipeline = pipeline
        self.held = held
        self.depth = 0
        self.ahead: dict[tuple[str, str, tuple[str, ...]], bytes | None] = {}
        self.rows: list[tuple[str, tuple[Any, ...]]] = []


def _columns(keys: Iterable[tuple[str, ...]]) -> list[list[str]]:
    """Padded keys as four column lists (for ``unnest``)."""
    columns: list[list[str]] = [[], [], [], []]
    for key in keys:
        for column, part in zip(columns, key):
            column.append(part)
    return columns


class PostgresStore:
    """A :class:`~learnloop.store.base.Store` in a PostgreSQL database.

    ``dsn`` is a libpq connection string or URL (``postgresql://user@host/db``);
    ``pool_size`` bounds the connections this store holds (one per thread in a
    call at a time); ``schema`` is where the tables live.
    """

    def __init__(self, dsn: str, *, pool_size: int = 8, schema: str = "learnloop") -> None:
        if not _SCHEMA_NAME.fullmatch(schema):
            raise ValueError(f"schema must be a lower-case SQL identifier, got {schema!r}")
        if pool_size < 1:
            raise ValueError(f"pool_size must be at least 1, got {pool_size}")
        self.dsn = dsn
        self.schema = schema
        self._lock_key = _lock_id(schema)
        self._tables = {table: f'"{schema}"."{table}"' for table in TABLES}
        self._seq = f'"{schema}"."write_seq"'
        self._local = threading.local()
        self._upserts: dict[tuple[str, ...], str] = {}  # the statement of held-back rows, per tables written
        # a direct connection first: a wrong address or password is reported at once, not as a pool timeout
        with psycopg.connect(dsn, autocommit=True) as conn:
            create(conn, schema, self._tables, self._seq, self._lock_key)
        self._pool = ConnectionPool(
            dsn,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True},
            configure=self._configure,
            open=True,
            name=f"learnloop-{schema}",
        )

    @staticmethod
    def _configure(conn: psycopg.Connection[Any]) -> None:
        # the writers' lock is only a barrier under READ COMMITTED: each statement after it sees earlier commits
        conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED

    # -- transactions ---------------------------------------------------------
    @contextmanager
    def atomic(
        self, *, learners: Iterable[tuple[str, str]] | None = None, reads: Iterable[tuple[str, str, Key]] = ()
    ) -> Iterator[None]:
        """One transaction on a connection pinned to this thread; a nested block is a savepoint.

        With ``learners`` (``(app, user)`` pairs), the transaction takes the schema's lock in
        shared mode and each learner's lock: blocks for other learners run beside it. Without,
        it takes the schema's lock exclusively and runs alone. A nested block may add learners
        to an outer block's; it cannot widen a block for some learners to the whole store.
        ``reads`` (``(table, app, key)``) are read with the locks, in the same round trip
        (an outermost block's only).
        """
        wanted = None if learners is None else self._learner_locks(learners)
        ahead = [(table, self._app(app), self._params(table, key)) for table, app, key in reads]
        tx: _Tx | None = getattr(self._local, "tx", None)
        if tx is not None:
            yield from self._savepoint(tx, wanted)
            return
        with self._pool.connection() as conn:
            try:
                with conn.pipeline() as pipeline:
                    self._local.tx = _Tx(conn, pipeline, wanted)
                    conn.execute(b"BEGIN ISOLATION LEVEL READ COMMITTED")
                    if wanted is None:
                        conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
                    else:
                        self._take(conn, wanted, shared=True)
                    if ahead:
                        self._read_ahead(conn, self._local.tx, ahead)
                    yield
                    self._send_rows(self._local.tx)
                    conn.execute(b"COMMIT")
                # (leaving the pipeline waits for every answer: an error of a write not yet answered is raised here)
            except BaseException:
                if conn.pgconn.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    try:
                        conn.execute(b"ROLLBACK")
                    except psycopg.Error:
                        pass  # (a broken connection: the server rolls back, the pool drops it)
                raise
            finally:
                self._local.tx = None

    def _savepoint(self, tx: _Tx, wanted: frozenset[int] | None) -> Iterator[None]:
        """A nested block: a savepoint, after taking the learners' locks the outer block lacks."""
        if tx.held is not None:
            if wanted is None:
                raise RuntimeError("a block for some learners cannot hold a block that may write anything")
            extra = wanted - tx.held
            if extra:
                self._take(tx.conn, extra, shared=False)
                tx.held = tx.held | extra
        tx.depth += 1
        name = f"sp{tx.depth}"
        self._send_rows(tx)
        tx.conn.execute(f"SAVEPOINT {name}".encode())
        try:
            yield
            self._send_rows(tx)
            tx.conn.execute(f"RELEASE {name}".encode())
            tx.pipeline.sync()  # the block's errors are its own: raised here, undone by the savepoint
        except BaseException:
            tx.rows.clear()  # (the block's writes not sent yet)
            try:
                tx.pipeline.sync()  # (after a refused statement the pipeline skips all until a sync)
            except psycopg.Error:
                pass  # the block's own error, undone below
            tx.conn.execute(f"ROLLBACK TO {name}".encode())
            tx.conn.execute(f"RELEASE {name}".encode())
            raise
        finally:
            tx.depth -= 1

    def _read_ahead(self, conn: psycopg.Connection[Any], tx: _Tx, rows: list[tuple[str, str, tuple[str, ...]]]) -> None:
        """Rows of the block's first reads, in one statement (its answer comes with the locks')."""
        selects = " UNION ALL ".join(
            f"SELECT {n}, v FROM {self._tables[table]} WHERE app = %s AND k1 = %s AND k2 = %s AND k3 = %s AND k4 = %s"
            for n, (table, _, _) in enumerate(rows)
        )
        params = [part for _, app, key in rows for part in (app, *key)]
        found = dict(conn.execute(selects, params).fetchall())
        tx.ahead = {row: None if n not in found else bytes(found[n]) for n, row in enumerate(rows)}

    def _learner_locks(self, learners: Iterable[tuple[str, str]]) -> frozenset[int]:
        out = set()
        for learner in learners:
            if not (isinstance(learner, tuple) and len(learner) == 2 and all(isinstance(p, str) for p in learner)):
                raise ValueError(f"a learner is an (application, user) pair of strings, got {learner!r}")
            out.add(_lock_id(self.schema, *learner))
        return frozenset(out)

    def _take(self, conn: psycopg.Connection[Any], locks: frozenset[int], *, shared: bool) -> None:
        """The learners' locks (after the schema's, in shared mode, when ``shared``), in ascending order."""
        ordered = sorted(locks)
        if shared and len(ordered) == 1:  # (a step: one statement)
            conn.execute(
                "SELECT pg_advisory_xact_lock_shared(%s), pg_advisory_xact_lock(%s)", (self._lock_key, ordered[0])
            )
            return
        if shared:
            conn.execute("SELECT pg_advisory_xact_lock_shared(%s)", (self._lock_key,))
        for lock in ordered:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        """This thread's transaction's connection, or any pooled one (autocommit) for one call."""
        tx: _Tx | None = getattr(self._local, "tx", None)
        if tx is not None:
            self._send_rows(tx)
            yield tx.conn
            return
        with self._pool.connection() as conn:
            yield conn

    @contextmanager
    def _writing(self, table: str) -> Iterator[_Tx]:
        """This thread's transaction (a write in it needs no savepoint: one statement; the rows of
        ``table`` read ahead are dropped), or a transaction of its own that runs alone."""
        tx: _Tx | None = getattr(self._local, "tx", None)
        if tx is not None:
            if tx.ahead:
                tx.ahead = {row: blob for row, blob in tx.ahead.items() if row[0] != table}
            yield tx
            return
        with self.atomic():
            yield self._local.tx

    @contextmanager
    def _write(self, table: str) -> Iterator[psycopg.Connection[Any]]:
        """:meth:`_writing`'s connection, once the rows held back in it are sent."""
        with self._writing(table) as tx:
            self._send_rows(tx)
            yield tx.conn

    def _hold(self, table: str, params: tuple[Any, ...]) -> None:
        """A one-row upsert into ``table`` (``(app, *key, document)``), held back in this thread's
        transaction (one of its own outside one)."""
        with self._writing(table) as tx:
            if any(held == table for held, _ in tx.rows):
                self._send_rows(tx)  # (rows of one table go in the order written, one statement each)
            tx.rows.append((table, params))

    def _send_rows(self, tx: _Tx) -> None:
        """The one-row upserts held back, as one statement: rows of several tables are the data-modifying
        ``WITH`` clauses of one ``INSERT`` (an adaptive step's event, revision and session)."""
        if not tx.rows:
            return
        rows, tx.rows = tx.rows, []
        key = tuple(table for table, _ in rows)
        statement = self._upserts.get(key)
        if statement is None:
            inserts = [
                f"INSERT INTO {self._tables[table]} (app, k1, k2, k3, k4, seq, v) "
                f"VALUES (%s, %s, %s, %s, %s, nextval('{self._seq}'), %s) {UPSERT}"
                for table in key
            ]
            statement = "".join(f"{'WITH' if n == 0 else ','} w{n} AS ({q}) " for n, q in enumerate(inserts[:-1]))
            statement = self._upserts.setdefault(key, statement + inserts[-1])
        tx.conn.execute(statement, [part for _, params in rows for part in params])

    # -- helpers ------------------------------------------------------------------
    @staticmethod
    def _params(table: str, key: Key) -> tuple[str, ...]:
        check_key(table, key)
        if any("\x00" in part for part in key):
            raise ValueError(f"table '{table}': PostgreSQL keys cannot hold NUL characters, got {key!r}")
        return tuple(key) + ("",) * (4 - len(key))

    @staticmethod
    def _where_prefix(table: str, prefix: Key) -> tuple[str, tuple[str, ...]]:
        check_prefix(table, tuple(prefix))
        clause = "".join(f" AND {col} = %s" for col in _KEY_COLUMNS[: len(prefix)])
        return clause, tuple(prefix)

    @staticmethod
    def _app(app: str) -> str:
        if not isinstance(app, str) or "\x00" in app:
            raise ValueError(f"an application is a string without NUL characters, got {app!r}")
        return app

    # -- reads ------------------------------------------------------------------------
    def get(self, table: str, app: str, key: Key) -> Doc | None:
        params = self._params(table, key)
        tx: _Tx | None = getattr(self._local, "tx", None)
        if tx is not None and tx.ahead:
            try:  # (read ahead with the block's locks; a row's second read goes to the server)
                blob = tx.ahead.pop((table, app, params))
            except KeyError:
                pass
            else:
                return None if blob is None else decode_doc(blob)
        with self._conn() as conn:
            row = conn.execute(
                f"SELECT v FROM {self._tables[table]} WHERE app = %s AND k1 = %s AND k2 = %s AND k3 = %s AND k4 = %s",
                (self._app(app), *params),
            ).fetchone()
        return None if row is None else decode_doc(row[0])

    def get_many(self, table: str, app: str, keys: Iterable[Key]) -> dict[Key, Doc]:
        check_prefix(table, ())
        width = TABLES[table]
        wanted = [self._params(table, tuple(key)) for key in keys]
        if not wanted:
            return {}
        # a join on the wanted keys, so each is one primary-key lookup
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT t.k1, t.k2, t.k3, t.k4, t.v FROM {_UNNEST_KEYS} AS w(k1, k2, k3, k4) "
                f"JOIN {self._tables[table]} AS t ON t.app = %s AND {_JOIN}",
                (*_columns(wanted), self._app(app)),
            ).fetchall()
        return {tuple(row[:width]): decode_doc(row[4]) for row in rows}

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
            clause += f" AND {_KEY_COLUMNS[width - 1]} > %s"
            params = (*params, last_after)
        order_by = "k1, k2, k3, k4" if order == "key" else "seq"
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT k1, k2, k3, k4, v FROM {self._tables[table]} WHERE app = %s{clause} ORDER BY {order_by}",
                (self._app(app), *params),
            ).fetchall()
        return iter([(tuple(row[:width]), decode_doc(row[4])) for row in rows])

    def scan_fields(
        self, table: str, app: str, prefix: Key = (), *, last_after: str | None = None
    ) -> tuple[list[Key], dict[str, list[Any]]]:
        """:meth:`scan` in write order as columns: the keys, and per field name each document's value
        (None where it has none). The server joins the key parts and the documents in write order
        into one row (no row object per document), and the JSON objects are parsed as one array a
        few thousand at a time; documents that are not all JSON objects are read one by one."""
        clause, params = self._where_prefix(table, prefix)
        width = TABLES[table]
        if last_after is not None:
            clause += f" AND {_KEY_COLUMNS[width - 1]} > %s"
            params = (*params, last_after)
        free = _KEY_COLUMNS[len(prefix) : width]  # the key parts the prefix does not fix
        joined = "".join(f", string_agg({column}, %s ORDER BY seq)" for column in free)
        with self._conn() as conn:
            row = conn.execute(
                f"SELECT count(*), coalesce(bool_and(substr(v, 1, 1) = '\\x7b'::bytea), true){joined}, "
                f"string_agg(v, %s ORDER BY seq) FROM {self._tables[table]} WHERE app = %s{clause}",
                (*(["\x1f"] * len(free)), b",\n", self._app(app), *params),
            ).fetchone()
        assert row is not None  # (an aggregate answers one row)
        n, objects, *parts, docs = row
        if n and objects:
            columns = [list(repeat(part, n)) for part in prefix] + [text.split("\x1f") for text in parts]
            values = json_joined(docs, n) if all(len(column) == n for column in columns) else []
            if len(values) == n:
                return list(zip(*columns, strict=True)), fields_of(values)
        rows = list(self.scan(table, app, prefix, order="seq", last_after=last_after))
        return [key for key, _ in rows], fields_of([doc for _, doc in rows])

    def event_fields(self, app: str, learner: Key, names: Sequence[str], *, last_after: str | None = None) -> Any:
        """A learner's events as fields in no particular order, and their write order
        (``_pg_fields.keyed_fields``; None: read them with :meth:`scan_fields`)."""
        check_prefix("events", tuple(learner))
        if len(learner) != 2:
            raise ValueError(f"a learner's events are keyed (user, catalog), got {learner!r}")
        with self._conn() as conn:
            return keyed_fields(conn, self._tables["events"], self._app(app), tuple(learner), names, last_after)

    def keys(self, table: str, app: str, prefix: Key = ()) -> list[Key]:
        clause, params = self._where_prefix(table, prefix)
        width = TABLES[table]
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT k1, k2, k3, k4 FROM {self._tables[table]} WHERE app = %s{clause} ORDER BY k1, k2, k3, k4",
                (self._app(app), *params),
            ).fetchall()
        return [tuple(row[:width]) for row in rows]

    def count(self, table: str, app: str, prefix: Key = ()) -> int:
        clause, params = self._where_prefix(table, prefix)
        with self._conn() as conn:
            row = conn.execute(
                f"SELECT COUNT(*) FROM {self._tables[table]} WHERE app = %s{clause}", (self._app(app), *params)
            ).fetchone()
        return int(row[0]) if row else 0

    # -- writes ---------------------------------------------------------------------
    def put_many(self, table: str, app: str, rows: Iterable[tuple[Key, Doc]]) -> None:
        app = self._app(app)
        latest: dict[tuple[str, ...], bytes] = {}
        for key, doc in rows:
            params = self._params(table, key)
            latest.pop(params, None)  # a key written twice takes its last document and place
            latest[params] = encode_doc(doc)
        if not latest:
            return
        if len(latest) == 1:  # (a step's rows: parameters, not arrays, which cost more to send; held back)
            [(params, blob)] = latest.items()
            self._hold(table, (app, *params, blob))
            return
        with self._write(table) as conn:
            # numbered from the sequence in the order given (volatile outputs are computed after the sort)
            conn.execute(
                f"INSERT INTO {self._tables[table]} (app, k1, k2, k3, k4, seq, v) "
                f"SELECT %s, k1, k2, k3, k4, nextval('{self._seq}'), v "
                "FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::bytea[]) "
                f"WITH ORDINALITY AS r(k1, k2, k3, k4, v, n) ORDER BY n {UPSERT}",
                (app, *_columns(latest), list(latest.values())),
            )

    def delete_many(self, table: str, app: str, keys: Iterable[Key]) -> list[Key]:
        app = self._app(app)
        wanted = [(tuple(key), self._params(table, tuple(key))) for key in keys]
        if not wanted:
            return []
        with self._write(table) as conn:
            rows = conn.execute(
                f"DELETE FROM {self._tables[table]} AS t USING {_UNNEST_KEYS} AS w(k1, k2, k3, k4) "
                f"WHERE t.app = %s AND {_JOIN} RETURNING t.k1, t.k2, t.k3, t.k4",
                (*_columns(params for _, params in wanted), app),
            ).fetchall()
        gone = {tuple(row) for row in rows}
        deleted: list[Key] = []
        for key, params in wanted:
            if params in gone:
                gone.discard(params)
                deleted.append(key)
        return deleted

    def delete_prefix(self, table: str, app: str, prefix: Key) -> int:
        clause, params = self._where_prefix(table, prefix)
        with self._write(table) as conn:
            cur = conn.execute(f"DELETE FROM {self._tables[table]} WHERE app = %s{clause}", (self._app(app), *params))
            self._local.tx.pipeline.sync()  # (the count comes with the answer)
            return cur.rowcount

    def close(self) -> None:
        self._pool.close()
