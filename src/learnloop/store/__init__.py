"""Stores: where learnloop's state lives (in memory, SQLite for durability, PostgreSQL to share between hosts)."""

from typing import TYPE_CHECKING, Any

from learnloop.store.base import TABLES, Doc, Key, Store
from learnloop.store.memory import MemoryStore
from learnloop.store.sqlite import SQLiteStore

if TYPE_CHECKING:
    from learnloop.store.postgres import PostgresStore

__all__ = ["Doc", "Key", "MemoryStore", "PostgresStore", "SQLiteStore", "Store", "TABLES"]


def __getattr__(name: str) -> Any:
    # imported on first use: psycopg is an optional extra
    if name == "PostgresStore":
        from learnloop.store.postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
