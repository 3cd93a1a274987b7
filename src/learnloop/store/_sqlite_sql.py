"""SQL the SQLite store reads and writes rows with: by key, multi-row INSERT statements by their shape and
sizes, and a learner's events read as columns."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from functools import lru_cache
from itertools import repeat
from typing import Any

import numpy as np

from learnloop.store._codec import json_marked
from learnloop.store._compact import fields_of, named_fields
from learnloop.store.base import TABLES, Key

__all__ = [
    "INSERT",
    "PADS",
    "SELECT",
    "chunks",
    "event_columns",
    "insert_statement",
    "keyed_fields",
    "strings_only",
]

#: one row of a learner's events, in key order (no sort in SQL: the sequence numbers come along), one
#: aggregate reading them all in the same order: their count, the item ids and the stamps (joined by
#: 0x1F), the sequence numbers, and the stored documents as they are (each one of the engine's behind
#: the mark byte 0x01: see ``json_marked``)
_EVENT_COLUMNS = (
    "SELECT count(*), group_concat(k3, char(31)), group_concat(k4, char(31)), group_concat(seq), "
    "CAST(group_concat(v, '') AS BLOB) FROM events WHERE app = ? AND k1 = ? AND k2 = ?{}"
)
#: the empty key parts after a key of each width
PADS = [("",) * (4 - width) for width in range(5)]
#: one row by key, and one row written, of each table
SELECT = {table: f"SELECT v FROM {table} WHERE app = ? AND k1 = ? AND k2 = ? AND k3 = ? AND k4 = ?" for table in TABLES}
INSERT = {
    table: f"INSERT OR REPLACE INTO {table} (app, k1, k2, k3, k4, seq, v) VALUES (?, ?, ?, ?, ?, ?, ?)"
    for table in TABLES
}


def strings_only(part: Sequence[str]) -> bool:
    """Whether a key column holds strings only (one string throughout, or each a ``str``)."""
    if part and part[0].__class__ is str and part.count(part[0]) == len(part):
        return True
    return set(map(type, part)) == {str}


def chunks(n: int, most: int) -> Iterator[int]:
    """Sizes of statements for ``n`` rows, at most ``most`` rows each: powers of two, so that a few
    statements, prepared once, serve every number of rows."""
    size = 1 << (most.bit_length() - 1)
    while n:
        while size > n:
            size >>= 1
        yield size
        n -= size


@lru_cache(maxsize=256)
def insert_statement(table: str, fixed: tuple[bool, ...], text: bool, rows: int) -> str:
    """The statement writing ``rows`` rows into ``table``: the application and the key columns
    ``fixed`` bound once, then per row the other key columns, the sequence number and the document.
    A ``text`` document is stored as the blob of its UTF-8 bytes (the database's encoding): the
    sqlite3 module binds a str as it is, where it first looks for an adapter for bytes."""
    width = fixed.count(False) + 2
    names = iter(range(1, width - 1))
    selected = ", ".join("?" if same else f"column{next(names)}" for same in fixed)
    doc = f"CAST(column{width} AS BLOB)" if text else f"column{width}"
    values = ", ".join(repeat("(" + ", ".join("?" * width) + ")", rows))
    return (
        f"INSERT OR REPLACE INTO {table} (app, k1, k2, k3, k4, seq, v) "
        f"SELECT ?, {selected}, column{width - 1}, {doc} FROM (VALUES {values})"
    )


def _event_row(
    conn: sqlite3.Connection, app: str, prefix: Key, last_after: str | None
) -> tuple[list[str], list[str], np.ndarray, list[Any]] | None:
    """A learner's events in key order, read as one row of joined columns: the item ids, the stamps,
    the sequence numbers and the documents (empty lists: none); None when an event is not stored behind
    the mark, or a key holds the byte 0x1F."""
    clause = "" if last_after is None else " AND k4 > ?"
    params = (app, *prefix) if last_after is None else (app, *prefix, last_after)
    n, items, stamps, seqs, docs = conn.execute(_EVENT_COLUMNS.format(clause), params).fetchone()
    if not n:
        return [], [], np.zeros(0, dtype=np.int64), []
    item_ids, timestamps = items.split("\x1f"), stamps.split("\x1f")
    seq = np.fromstring(seqs, dtype=np.int64, sep=",")
    if len(item_ids) != n or len(timestamps) != n or len(seq) != n:
        return None
    values = json_marked(docs, n)
    if values is None:
        return None
    return item_ids, timestamps, seq, values


def event_columns(
    conn: sqlite3.Connection, app: str, prefix: Key, last_after: str | None
) -> tuple[list[Key], dict[str, list[Any]]] | None:
    """``scan_fields("events", app, prefix, last_after=...)`` for a learner's prefix ``(user, catalog)``
    in a UTF-8 database, read as one row of joined columns (no row object per event); None when an
    event is not stored behind the mark, or a key holds the byte 0x1F (then read row by row)."""
    found = _event_row(conn, app, prefix, last_after)
    if found is None:
        return None
    item_ids, timestamps, seq, values = found
    n = len(values)
    if not n:
        return [], {}
    order = np.argsort(seq, kind="stable")
    if (np.diff(order) != 1).any():  # (into write order)
        at = order.tolist()
        item_ids, timestamps, values = (list(map(c.__getitem__, at)) for c in (item_ids, timestamps, values))
    fields = fields_of(values)
    users, catalogs = list(repeat(prefix[0], n)), list(repeat(prefix[1], n))
    for name, column in (
        ("user_id", users),
        ("catalog_id", catalogs),
        ("item_id", item_ids),
        ("timestamp", timestamps),
    ):
        fields[name] = column
    return list(zip(users, catalogs, item_ids, timestamps, strict=True)), fields


def keyed_fields(
    conn: sqlite3.Connection, app: str, prefix: Key, names: Sequence[str], last_after: str | None
) -> tuple[dict[str, list[Any]], np.ndarray] | None:
    """The fields ``names`` (None where a document has none), ``item_id`` and ``timestamp`` of a
    learner's events (prefix ``(user, catalog)``) in key order, and their sequence numbers (their
    write order): what :func:`event_columns` reads, without putting the events in write order or
    making their keys (the documents are read where they lie in memory, one field at a time);
    None as there."""
    found = _event_row(conn, app, prefix, last_after)
    if found is None:
        return None
    item_ids, timestamps, seq, values = found
    return named_fields(values, names, item_ids, timestamps), seq
