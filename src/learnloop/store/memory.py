"""An in-memory :class:`~learnloop.store.base.Store` for tests, notebooks and single processes."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import count as _counter
from typing import Literal

from learnloop.store.base import TABLES, Doc, Key, check_key, check_prefix, decode_doc, encode_doc

__all__ = ["MemoryStore"]

_ABSENT = object()


class MemoryStore:
    """Dict-backed store; ``atomic()`` keeps an undo log and rolls back on error.

    Documents are kept encoded (as :class:`~learnloop.store.SQLiteStore` keeps
    them), so a caller never shares an object with the store and every store
    returns the same thing. A nested ``atomic()`` block that raises undoes its
    own writes only.

    >>> store = MemoryStore()
    >>> store.put_many("items", "app", [(("q1",), {"item_id": "q1"})])
    >>> store.get("items", "app", ("q1",))
    {'item_id': 'q1'}
    """

    def __init__(self) -> None:
        # (table, app) -> key -> (seq, encoded doc)
        self._data: dict[tuple[str, str], dict[Key, tuple[int, bytes]]] = {}
        self._seq = _counter(1)
        self._lock = threading.RLock()
        self._undo: list[tuple[tuple[str, str], Key, object]] | None = None
        # (table, app) -> key prefix (first one or two parts) -> keys under it, for prefix scans
        self._groups: dict[tuple[str, str], dict[Key, set[Key]]] = {}

    def _table(self, table: str, app: str) -> dict[Key, tuple[int, bytes]]:
        if table not in TABLES:
            raise KeyError(f"unknown table '{table}'")
        return self._data.setdefault((table, app), {})

    def _indexed(self, where: tuple[str, str], key: Key, present: bool) -> None:
        """Keep the prefix groups in step with one key's presence."""
        groups = self._groups.setdefault(where, {})
        for n in range(1, min(len(key), 3)):
            if present:
                groups.setdefault(key[:n], set()).add(key)
            else:
                members = groups.get(key[:n])
                if members is not None:
                    members.discard(key)
                    if not members:
                        del groups[key[:n]]

    def _under(self, table: str, app: str, prefix: Key) -> list[tuple[Key, tuple[int, bytes]]]:
        """Rows under ``prefix`` (unordered), through the prefix groups when they apply."""
        rows = self._table(table, app)
        n = len(prefix)
        if n == 0:
            return list(rows.items())
        group = self._groups.get((table, app), {}).get(prefix[: min(n, 2)], set())
        return [(key, rows[key]) for key in group if key[:n] == prefix]

    @contextmanager
    def atomic(self) -> Iterator[None]:
        with self._lock:
            outer = self._undo is None
            if outer:
                self._undo = []
            assert self._undo is not None
            mark = len(self._undo)
            try:
                yield
            except BaseException:
                self._rollback(mark)
                raise
            finally:
                if outer:
                    self._undo = None

    def _rollback(self, mark: int) -> None:
        assert self._undo is not None
        for where, key, previous in reversed(self._undo[mark:]):
            rows = self._data[where]
            if previous is _ABSENT:
                rows.pop(key, None)
                self._indexed(where, key, False)
            else:
                rows[key] = previous  # type: ignore[assignment]
                self._indexed(where, key, True)
        del self._undo[mark:]

    def _remember(self, where: tuple[str, str], rows: dict[Key, tuple[int, bytes]], key: Key) -> None:
        if self._undo is not None:
            self._undo.append((where, key, rows.get(key, _ABSENT)))

    def get(self, table: str, app: str, key: Key) -> Doc | None:
        key = tuple(key)
        check_key(table, key)
        with self._lock:
            row = self._table(table, app).get(key)
        return None if row is None else decode_doc(row[1])

    def get_many(self, table: str, app: str, keys: Iterable[Key]) -> dict[Key, Doc]:
        wanted = [tuple(key) for key in keys]
        for key in wanted:
            check_key(table, key)
        with self._lock:
            rows = self._table(table, app)
            found = [(key, rows.get(key)) for key in wanted]
        return {key: decode_doc(row[1]) for key, row in found if row is not None}

    def scan(
        self,
        table: str,
        app: str,
        prefix: Key = (),
        *,
        order: Literal["key", "seq"] = "key",
        last_after: str | None = None,
    ) -> Iterator[tuple[Key, Doc]]:
        prefix = tuple(prefix)
        check_prefix(table, prefix)
        with self._lock:
            rows = self._under(table, app, prefix)
        if last_after is not None:
            rows = [row for row in rows if row[0][-1] > last_after]
        rows.sort(key=(lambda kr: kr[0]) if order == "key" else (lambda kr: kr[1][0]))
        return iter([(key, decode_doc(row[1])) for key, row in rows])

    def keys(self, table: str, app: str, prefix: Key = ()) -> list[Key]:
        prefix = tuple(prefix)
        check_prefix(table, prefix)
        with self._lock:
            return sorted(key for key, _ in self._under(table, app, prefix))

    def count(self, table: str, app: str, prefix: Key = ()) -> int:
        prefix = tuple(prefix)
        check_prefix(table, prefix)
        with self._lock:
            rows = self._table(table, app)
            if not prefix:
                return len(rows)
            return len(self._under(table, app, prefix))

    def put_many(self, table: str, app: str, rows: Iterable[tuple[Key, Doc]]) -> None:
        prepared = []
        for key, doc in rows:
            key = tuple(key)
            check_key(table, key)
            prepared.append((key, encode_doc(doc)))
        with self._lock:
            where = (table, app)
            target = self._table(table, app)
            for key, blob in prepared:
                self._remember(where, target, key)
                if key not in target:
                    self._indexed(where, key, True)
                target[key] = (next(self._seq), blob)

    def delete_many(self, table: str, app: str, keys: Iterable[Key]) -> list[Key]:
        wanted = [tuple(key) for key in keys]
        for key in wanted:
            check_key(table, key)
        with self._lock:
            where = (table, app)
            target = self._table(table, app)
            deleted = []
            for key in wanted:
                if key in target:
                    self._remember(where, target, key)
                    del target[key]
                    self._indexed(where, key, False)
                    deleted.append(key)
            return deleted

    def delete_prefix(self, table: str, app: str, prefix: Key) -> int:
        prefix = tuple(prefix)
        check_prefix(table, prefix)
        with self._lock:
            keys = [key for key, _ in self._under(table, app, prefix)]
            return len(self.delete_many(table, app, keys))

    def close(self) -> None:
        """Nothing to release."""
