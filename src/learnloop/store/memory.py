"""An in-memory :class:`~learnloop.store.base.Store` for tests, notebooks and single processes."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import count as _counter
from typing import Literal

from learnloop.store.base import TABLES, Doc, Key, check_key

__all__ = ["MemoryStore"]

_ABSENT = object()


class MemoryStore:
    """Dict-backed store; ``atomic()`` keeps an undo log and rolls back on error.

    >>> store = MemoryStore()
    >>> store.put_many("items", "app", [(("q1",), {"item_id": "q1"})])
    >>> store.get("items", "app", ("q1",))
    {'item_id': 'q1'}
    """

    def __init__(self) -> None:
        # (table, app) -> key -> [seq, doc]
        self._data: dict[tuple[str, str], dict[Key, list]] = {}
        self._seq = _counter(1)
        self._lock = threading.RLock()
        self._undo: list[tuple[tuple[str, str], Key, object]] | None = None
        self._depth = 0

    def _table(self, table: str, app: str) -> dict[Key, list]:
        if table not in TABLES:
            raise KeyError(f"unknown table '{table}'")
        return self._data.setdefault((table, app), {})

    @contextmanager
    def atomic(self) -> Iterator[None]:
        with self._lock:
            outer = self._depth == 0
            if outer:
                self._undo = []
            self._depth += 1
            try:
                yield
            except BaseException:
                if outer:
                    self._rollback()
                raise
            finally:
                self._depth -= 1
                if outer:
                    self._undo = None

    def _rollback(self) -> None:
        assert self._undo is not None
        for where, key, previous in reversed(self._undo):
            rows = self._data[where]
            if previous is _ABSENT:
                rows.pop(key, None)
            else:
                rows[key] = previous  # type: ignore[assignment]

    def _remember(self, where: tuple[str, str], rows: dict[Key, list], key: Key) -> None:
        if self._undo is not None:
            self._undo.append((where, key, rows.get(key, _ABSENT)))

    @staticmethod
    def _copy(doc: Doc) -> Doc:
        return doc if isinstance(doc, bytes) else copy.deepcopy(dict(doc))

    def get(self, table: str, app: str, key: Key) -> Doc | None:
        with self._lock:
            row = self._table(table, app).get(tuple(key))
            return None if row is None else self._copy(row[1])

    def get_many(self, table: str, app: str, keys: Iterable[Key]) -> dict[Key, Doc]:
        with self._lock:
            rows = self._table(table, app)
            out = {}
            for key in keys:
                row = rows.get(tuple(key))
                if row is not None:
                    out[tuple(key)] = self._copy(row[1])
            return out

    def scan(
        self, table: str, app: str, prefix: Key = (), *, order: Literal["key", "seq"] = "key"
    ) -> Iterator[tuple[Key, Doc]]:
        with self._lock:
            n = len(prefix)
            rows = [
                (key, row) for key, row in self._table(table, app).items() if key[:n] == tuple(prefix)
            ]
            rows.sort(key=(lambda kr: kr[0]) if order == "key" else (lambda kr: kr[1][0]))
            snapshot = [(key, self._copy(row[1])) for key, row in rows]
        return iter(snapshot)

    def keys(self, table: str, app: str, prefix: Key = ()) -> list[Key]:
        with self._lock:
            n = len(prefix)
            return sorted(key for key in self._table(table, app) if key[:n] == tuple(prefix))

    def count(self, table: str, app: str, prefix: Key = ()) -> int:
        with self._lock:
            rows = self._table(table, app)
            if not prefix:
                return len(rows)
            n = len(prefix)
            return sum(1 for key in rows if key[:n] == tuple(prefix))

    def put_many(self, table: str, app: str, rows: Iterable[tuple[Key, Doc]]) -> None:
        with self._lock:
            where = (table, app)
            target = self._table(table, app)
            for key, doc in rows:
                key = tuple(key)
                check_key(table, key)
                self._remember(where, target, key)
                target[key] = [next(self._seq), self._copy(doc)]

    def delete_many(self, table: str, app: str, keys: Iterable[Key]) -> list[Key]:
        with self._lock:
            where = (table, app)
            target = self._table(table, app)
            deleted = []
            for key in keys:
                key = tuple(key)
                if key in target:
                    self._remember(where, target, key)
                    del target[key]
                    deleted.append(key)
            return deleted

    def delete_prefix(self, table: str, app: str, prefix: Key) -> int:
        with self._lock:
            n = len(prefix)
            keys = [key for key in self._table(table, app) if key[:n] == tuple(prefix)]
            return len(self.delete_many(table, app, keys))

    def close(self) -> None:
        """Nothing to release."""
