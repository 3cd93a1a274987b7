"""Stores: where learnloop's state lives (in memory, or SQLite for durability)."""

from learnloop.store.base import TABLES, Doc, Key, Store
from learnloop.store.memory import MemoryStore
from learnloop.store.sqlite import SQLiteStore

__all__ = ["Doc", "Key", "MemoryStore", "SQLiteStore", "Store", "TABLES"]
