"""The tables of a :class:`~learnloop.store.postgres.PostgresStore`: created when absent, and
databases of an earlier layout migrated, when a store is opened."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psycopg

from learnloop.store._layout import SCHEMA_VERSION, VERSION_KEY, rekeyed_sessions, version_doc
from learnloop.store.base import decode_doc, json_doc

__all__ = ["UPSERT", "create"]

#: what a write of a stored key does: takes the new document and the new place in the write order
UPSERT = "ON CONFLICT (app, k1, k2, k3, k4) DO UPDATE SET seq = EXCLUDED.seq, v = EXCLUDED.v"

#: high-volume tables read by key only: no index on their write sequence (as on SQLite)
_UNORDERED = frozenset({"events", "learners"})


def create(conn: psycopg.Connection[Any], schema: str, tables: Mapping[str, str], seq: str, lock: int) -> None:
    """The ``schema``, its ``tables`` (name -> qualified name) and the sequence ``seq``, created when
    absent, under the advisory ``lock`` (one process at a time)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        conn.execute(f"CREATE SEQUENCE IF NOT EXISTS {seq} AS bigint")
        for table, name in tables.items():
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {name} ("
                'app text COLLATE "C" NOT NULL, k1 text COLLATE "C" NOT NULL, '
                'k2 text COLLATE "C" NOT NULL, k3 text COLLATE "C" NOT NULL, k4 text COLLATE "C" NOT NULL, '
                "seq bigint NOT NULL, v bytea NOT NULL, PRIMARY KEY (app, k1, k2, k3, k4))"
            )
            if table not in _UNORDERED:
                conn.execute(f"CREATE INDEX IF NOT EXISTS {table}_seq ON {name} (app, seq)")
        _migrate(conn, tables, seq)


def _migrate(conn: psycopg.Connection[Any], tables: Mapping[str, str], seq: str) -> None:
    """Sessions of databases before schema version 2, keyed by their id alone, under their
    user (see ``store/_layout.py``); the version is kept in the ``meta`` table."""
    meta, sessions = tables["meta"], tables["sessions"]
    found = conn.execute(
        f"SELECT v FROM {meta} WHERE app = '' AND k1 = %s AND k2 = '' AND k3 = '' AND k4 = ''", (VERSION_KEY,)
    ).fetchone()
    if found is not None and json_doc(decode_doc(found[0])).get("v", 1) >= SCHEMA_VERSION:
        return
    old = conn.execute(f"SELECT app, k1, v FROM {sessions} WHERE k2 = ''").fetchall()
    rows = rekeyed_sessions((app, key, bytes(blob)) for app, key, blob in old)
    conn.execute(f"DELETE FROM {sessions} WHERE k2 = ''")
    if rows:
        apps, k1, k2, blobs = (list(column) for column in zip(*rows, strict=True))
        conn.execute(
            f"INSERT INTO {sessions} (app, k1, k2, k3, k4, seq, v) "
            f"SELECT app, k1, k2, '', '', nextval('{seq}'), v "
            "FROM unnest(%s::text[], %s::text[], %s::text[], %s::bytea[]) AS r(app, k1, k2, v)",
            (apps, k1, k2, blobs),
        )
    conn.execute(
        f"INSERT INTO {meta} (app, k1, k2, k3, k4, seq, v) VALUES ('', %s, '', '', '', nextval('{seq}'), %s) {UPSERT}",
        (VERSION_KEY, version_doc()),
    )
