"""What the engine keeps in its store: the store a path or URL names, and (below) every table and meta key it reads or writes."""

from __future__ import annotations

from os import PathLike
from typing import Literal

from learnloop.store import SQLiteStore, Store

__all__ = ["open_store"]


def open_store(path: str | PathLike[str], synchronous: Literal["NORMAL", "FULL"] = "NORMAL") -> Store:
    """The store at ``path``: a SQLite file (or ``sqlite:///`` URL), or a PostgreSQL database at a
    ``postgresql://`` (or ``postgres://``) URL (see :meth:`Engine.open <learnloop.engine.Engine.open>`)."""
    if isinstance(path, str) and path.startswith(("postgresql://", "postgres://")):
        if synchronous != "NORMAL":
            raise ValueError("synchronous= applies to SQLite files; PostgreSQL's durability is the server's")
        from learnloop.store.postgres import PostgresStore  # psycopg is an optional extra

        return PostgresStore(path)
    if isinstance(path, str) and path[:7].lower() == "sqlite:":
        if not path[7:].startswith("///") or len(path) < 11:
            raise ValueError(f"a SQLite URL is sqlite:///relative/path.db or sqlite:////absolute/path.db: {path!r}")
        return SQLiteStore(path[10:], synchronous=synchronous)
    return SQLiteStore(path, synchronous=synchronous)
