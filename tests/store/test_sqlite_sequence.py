"""The SQLite store's write order (``scan(order="seq")``) over transactions of several writes, savepoints
rolled back and two connections to one file: the order of the memory store's, whatever the sequence's gaps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from learnloop.store import MemoryStore, SQLiteStore, Store
from learnloop.store.base import Columns


class Undone(Exception):
    pass


#: a write: (table, keys, as columns); a block: (connection, writes, the index of a nested block rolled back or None)
writes = st.tuples(
    st.sampled_from(["sessions", "events"]),
    st.lists(st.integers(0, 30), min_size=1, max_size=40),
    st.booleans(),
)
blocks = st.tuples(st.integers(0, 1), st.lists(writes, min_size=1, max_size=5), st.none() | st.integers(0, 4))


def put(store: Store, table: str, keys: list[int], as_columns: bool, version: int) -> None:
    if table == "sessions":
        store.put_many(table, "app", [(("u", f"s{k}"), {"v": version}) for k in keys])
        return
    parts = ([f"u{k % 2}" for k in keys], ["c"] * len(keys), [f"i{k}" for k in keys], ["t"] * len(keys))
    rows = Columns(parts, {"kind": ["skip"] * len(keys), "v": [version] * len(keys)})
    store.put_many(table, "app", rows if as_columns else list(rows))


@settings(max_examples=80, deadline=None)
@given(program=st.lists(blocks, min_size=1, max_size=8))
def test_write_order_is_the_memory_stores(tmp_path_factory: pytest.TempPathFactory, program: list[Any]) -> None:
    path: Path = tmp_path_factory.mktemp("seq") / "one.db"
    sqlites = [SQLiteStore(path), SQLiteStore(path)]
    memory = MemoryStore()
    version = 0
    for connection, block, undone in program:
        for store in (sqlites[connection], memory):
            with store.atomic():
                for at, (table, keys, as_columns) in enumerate(block):
                    if at == undone:
                        try:
                            with store.atomic():
                                put(store, table, keys, as_columns, -1)
                                raise Undone
                        except Undone:
                            pass
                    put(store, table, keys, as_columns, version + at)
        version += len(block)
    for table in ("sessions", "events"):
        expected = list(memory.scan(table, "app", order="seq"))
        for store in sqlites:
            assert list(store.scan(table, "app", order="seq")) == expected
    for store in sqlites:
        store.close()
