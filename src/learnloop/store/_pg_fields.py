"""A learner's events read from PostgreSQL as columns, in one row: the server joins each key part,
the sequence numbers and the documents in one pass over the learner's rows, in no particular order
(the reader orders them by time and write order), so it sorts nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg

from learnloop.store._codec import json_joined
from learnloop.store._compact import named_fields
from learnloop.store.base import Key

__all__ = ["keyed_fields"]

#: one aggregate row of a learner's events: how many, whether every document is a JSON object,
#: the item ids, the stamps, the sequence numbers, the documents (all in the same row order)
_EVENT_ROW = (
    "SELECT count(*), coalesce(bool_and(substr(v, 1, 1) = '\\x7b'::bytea), true), string_agg(k3, %s), "
    "string_agg(k4, %s), string_agg(seq::text, ','), string_agg(v, %s) FROM {} WHERE app = %s AND k1 = %s AND k2 = %s"
)


def keyed_fields(
    conn: psycopg.Connection[Any], table: str, app: str, prefix: Key, names: Sequence[str], last_after: str | None
) -> tuple[dict[str, list[Any]], np.ndarray] | None:
    """The fields ``names`` (None where a document has none), ``item_id`` and ``timestamp`` of a
    learner's events (prefix ``(user, catalog)``) of the events ``table`` (its qualified name), and
    their sequence numbers (their write order); None when a document is not a JSON object or a key
    holds the byte 0x1F (the caller then reads them otherwise)."""
    statement = _EVENT_ROW.format(table) + ("" if last_after is None else " AND k4 > %s")
    params = ["\x1f", "\x1f", b",\n", app, *prefix, *(() if last_after is None else (last_after,))]
    row = conn.execute(statement, params, binary=True).fetchone()
    assert row is not None  # (an aggregate answers one row)
    n, objects, items, stamps, seqs, docs = row
    if not n:
        return named_fields([], names, [], []), np.zeros(0, dtype=np.int64)
    if not objects:
        return None
    item_ids, timestamps = items.split("\x1f"), stamps.split("\x1f")
    seq = np.array(seqs.split(","), dtype=np.int64)
    if len(item_ids) != n or len(timestamps) != n:
        return None
    values = json_joined(bytes(docs), n)
    if len(values) != n:
        return None
    return named_fields(values, names, item_ids, timestamps), seq
