"""The SQLite store answers some reads from the rows it last read or wrote, while no other connection
commits: over two connections to one file writing, deleting and rolling back in turn, every read is the
memory store's, inside transactions and out."""

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


KEYS = {"learners": lambda k: (f"u{k}", "c"), "sessions": lambda k: ("u", f"s{k}"), "meta": lambda k: (f"m{k}",)}
tables = st.sampled_from(sorted(KEYS))
#: an operation: ("get" | "put" | "columns" | "delete" | "clear", table, keys)
operations = st.tuples(
    st.sampled_from(["get", "get", "put", "put", "columns", "delete", "clear"]),
    tables,
    st.lists(st.integers(0, 4), min_size=1, max_size=3),
)
#: a step of the program: (connection, operations, in a transaction, where a savepoint is rolled back, rolled back)
steps = st.tuples(
    st.integers(0, 1),
    st.lists(operations, min_size=1, max_size=6),
    st.booleans(),
    st.none() | st.integers(0, 5),
    st.booleans(),
)


def apply(store: Store, operation: tuple[str, str, list[int]], version: int) -> list[Any]:
    """Run one operation; returns what it read."""
    kind, table, ks = operation
    keys = [KEYS[table](k) for k in ks]
    if kind == "get":
        return [store.get(table, "app", key) for key in keys]
    if kind == "put":
        store.put_many(table, "app", [(key, {"v": version, "k": list(key)}) for key in keys])
    elif kind == "columns":
        store.put_many(table, "app", Columns(list(zip(*keys, strict=True)), {"v": [version] * len(keys)}))
    elif kind == "delete":
        return sorted(store.delete_many(table, "app", keys))
    else:
        return [store.delete_prefix(table, "app", ())]
    return []


def run(store: Store, operations: list[tuple[str, str, list[int]]], version: int, undone: int | None) -> list[Any]:
    reads = []
    for at, operation in enumerate(operations):
        if at == undone:
            try:
                with store.atomic():
                    apply(store, ("put", operation[1], [0, 1, 2, 3, 4]), -version)
                    reads.append(apply(store, ("get", operation[1], [0, 1, 2, 3, 4]), -version))
                    raise Undone
            except Undone:
                pass
        reads.append(apply(store, operation, version))
    return reads


@settings(max_examples=150, deadline=None)
@given(program=st.lists(steps, min_size=1, max_size=10))
def test_reads_are_the_memory_stores(tmp_path_factory: pytest.TempPathFactory, program: list[Any]) -> None:
    path: Path = tmp_path_factory.mktemp("known") / "one.db"
    sqlites = [SQLiteStore(path), SQLiteStore(path)]
    memory = MemoryStore()
    for version, (connection, operations, transaction, undone, failed) in enumerate(program, 1):
        got = []
        for store in (sqlites[connection], memory):
            if not transaction:
                got.append(run(store, operations, version, undone))
                continue
            reads: list[Any] = []
            try:
                with store.atomic():
                    reads = run(store, operations, version, undone)
                    if failed:
                        raise Undone
            except Undone:
                pass
            got.append(reads)
        assert got[0] == got[1]
        for table, key in KEYS.items():  # what each connection reads now
            keys = [key(k) for k in range(5)]
            expected = [memory.get(table, "app", k) for k in keys]
            for store in sqlites:
                assert [store.get(table, "app", k) for k in keys] == expected
    for store in sqlites:
        store.close()
