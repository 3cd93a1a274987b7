"""SQL the SQLite store reads and writes rows with: by key, and multi-row INSERT statements by their shape and sizes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache
from itertools import repeat

from learnloop.store.base import TABLES

__all__ = ["INSERT", "PADS", "SELECT", "chunks", "insert_statement", "strings_only"]

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
