"""An in-memory :class:`~learnloop.store.base.Store` for tests, notebooks and single processes."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from itertools import count as _counter
from itertools import islice, repeat
from types import TracebackType
from typing import Any, Literal

from learnloop.store._codec import DocCodec
from learnloop.store._packed import Bucket, Row, Snapshot
from learnloop.store.base import TABLES, Columns, Doc, Key, check_key, check_prefix

__all__ = ["MemoryStore"]

#: tables with keys this wide keep their rows in buckets by the first two key parts
_WIDE = 3

Where = tuple[str, str]  # (table, app)
Heads = dict[str, "str | set[str]"]  # first key part -> the second parts present under it


def _width(table: str) -> int:
    width = TABLES.get(table)
    if width is None:
        raise KeyError(f"unknown table '{table}'")
    return width


def _plain(key: Key) -> Key:
    """The key with exact ``str`` parts (the store keeps no caller's subclass)."""
    for part in key:  # (a loop: a generator for all() costs more than the check)
        if part.__class__ is not str:
            return tuple(str.__str__(part) for part in key)
    return key


def _head_add(heads: Heads, first: str, second: str) -> None:
    present = heads.get(first)
    if present is None:
        heads[first] = second
    elif isinstance(present, str):
        if present != second:
            heads[first] = {present, second}
    else:
        present.add(second)


def _head_remove(heads: Heads, first: str, second: str) -> None:
    present = heads.get(first)
    if isinstance(present, str):
        if present == second:
            del heads[first]
    elif present is not None:
        present.discard(second)
        if len(present) == 1:
            heads[first] = next(iter(present))


def _seconds(heads: Heads, first: str) -> list[str]:
    present = heads.get(first)
    if present is None:
        return []
    return [present] if isinstance(present, str) else sorted(present)


class MemoryStore:
    """A compact in-memory store; ``atomic()`` keeps an undo log and rolls back on error.

    Documents are kept encoded (compact JSON by shape, see
    :mod:`learnloop.store._codec`), so a caller never shares an object with the
    store and every store returns the same thing. The events table (keys of four
    parts) keeps one packed bucket per learner and catalog, at about 80 bytes an
    event. A nested ``atomic()`` block that raises undoes its own writes only.

    >>> store = MemoryStore()
    >>> store.put_many("items", "app", [(("q1",), {"item_id": "q1"})])
    >>> store.get("items", "app", ("q1",))
    {'item_id': 'q1'}
    """

    def __init__(self) -> None:
        # narrow tables: (table, app) -> key -> update sequence (8 bytes) + encoded doc
        self._flat: dict[Where, dict[Key, bytes]] = {}
        # wide tables: (table, app) -> first two key parts -> bucket of rows by the other parts
        self._buckets: dict[Where, dict[Key, Bucket]] = {}
        # tables of two parts or more: (table, app) -> first part -> second parts present
        self._heads: dict[Where, Heads] = {}
        self._codec = DocCodec()
        self._seq = _counter(1)
        self._lock = threading.RLock()
        # per write: where, the keys written (or the columns written) and the rows they replaced (None: absent)
        self._undo: list[tuple[Where, list[Key] | Columns, list[Row | None]]] | None = None

    # -- rows -------------------------------------------------------------------------
    def _row(self, where: Where, width: int, key: Key) -> Row | None:
        if width >= _WIDE:
            bucket = self._buckets.get(where, {}).get(key[:2])
            return None if bucket is None else bucket.get(key[2:])
        packed = self._flat.get(where, {}).get(key)
        return None if packed is None else (int.from_bytes(packed[:8], "little"), packed[8:])

    def _write(self, where: Where, width: int, rows: list[tuple[Key, Row]]) -> list[Row | None]:
        """Write rows (key, (seq, blob)) in turn; returns the row each replaced."""
        if width >= _WIDE:
            buckets = self._buckets.setdefault(where, {})
            grouped: dict[Key, list[int]] = {}
            for at, (key, _) in enumerate(rows):
                grouped.setdefault(key[:2], []).append(at)
            previous: list[Row | None] = [None] * len(rows)
            for head, ats in grouped.items():
                bucket = buckets.get(head)
                if bucket is None:
                    bucket = buckets[head] = Bucket(width - 2)
                    _head_add(self._heads.setdefault(where, {}), head[0], head[1])
                batch = [(rows[at][0][2:], *rows[at][1]) for at in ats]
                for at, replaced in zip(ats, bucket.put_many(batch), strict=True):
                    previous[at] = replaced
            return previous
        table = self._flat.setdefault(where, {})
        out: list[Row | None] = []
        for key, (seq, blob) in rows:
            packed = table.get(key)
            table[key] = seq.to_bytes(8, "little") + blob
            if packed is None:
                out.append(None)
                if width == 2:
                    _head_add(self._heads.setdefault(where, {}), key[0], key[1])
            else:
                out.append((int.from_bytes(packed[:8], "little"), packed[8:]))
        return out

    def _drop(self, where: Where, width: int, key: Key) -> Row | None:
        """Delete one row; returns it (None: absent)."""
        if width >= _WIDE:
            buckets = self._buckets.get(where, {})
            bucket = buckets.get(key[:2])
            if bucket is None:
                return None
            row = bucket.delete(key[2:])
            if not len(bucket):
                del buckets[key[:2]]
                _head_remove(self._heads[where], key[0], key[1])
            return row
        packed = self._flat.get(where, {}).pop(key, None)
        if packed is None:
            return None
        if width == 2:
            _head_remove(self._heads[where], key[0], key[1])
        return int.from_bytes(packed[:8], "little"), packed[8:]

    def _select(self, where: Where, width: int, prefix: Key, with_docs: bool) -> list[tuple[Key, int, bytes]]:
        """``(key, seq, blob)`` of the rows under ``prefix`` (blob ``b""`` without ``with_docs``)."""
        return _expand(self._gather(where, width, prefix, with_docs), None, with_docs)

    def _gather(
        self, where: Where, width: int, prefix: Key, with_docs: bool, last_after: str | None = None
    ) -> _Gathered:
        """The rows under ``prefix``, to be expanded by :func:`_expand` (also after the lock is let go);
        with ``last_after``, a bucket may leave out rows whose key's last part is not greater."""
        if width >= _WIDE:
            buckets = self._buckets.get(where, {})
            if len(prefix) >= 2:
                heads = [prefix[:2]] if prefix[:2] in buckets else []
            elif prefix:
                heads = [(prefix[0], second) for second in _seconds(self._heads.get(where, {}), prefix[0])]
            else:
                heads = list(buckets)
            return [], [(head, buckets[head].snapshot(prefix[2:], last_after)) for head in heads]
        table = self._flat.get(where, {})
        if not prefix:
            keys: Iterable[Key] = list(table)
        elif len(prefix) == width:
            keys = [prefix] if prefix in table else []
        else:
            keys = [(prefix[0], second) for second in _seconds(self._heads.get(where, {}), prefix[0])]
        flat = [(key, int.from_bytes(table[key][:8], "little"), table[key][8:] if with_docs else b"") for key in keys]
        return flat, []

    # -- transactions -------------------------------------------------------------------
    def atomic(
        self, *, learners: Iterable[tuple[str, str]] | None = None, reads: Iterable[tuple[str, str, Key]] = ()
    ) -> AbstractContextManager[None]:
        """One block under the store's lock (``learners`` and ``reads`` change nothing: one writer at a time)."""
        return _Transaction(self)

    def _rollback(self, mark: int) -> None:
        assert self._undo is not None
        for where, written, rows in reversed(self._undo[mark:]):
            width = TABLES[where[0]]
            keys = list(zip(*written.keys)) if isinstance(written, Columns) else written
            for key, previous in zip(reversed(keys), reversed(rows), strict=True):
                if previous is None:
                    self._drop(where, width, key)
                else:
                    self._write(where, width, [(key, previous)])
        del self._undo[mark:]

    def _remember(self, where: Where, keys: list[Key] | Columns, previous: list[Row | None]) -> None:
        if self._undo is not None:
            self._undo.append((where, keys, previous))

    # -- the Store protocol --------------------------------------------------------------
    def get(self, table: str, app: str, key: Key) -> Doc | None:
        if key.__class__ is not tuple:
            key = tuple(key)
        check_key(table, key)
        if len(key) >= _WIDE:
            with self._lock:
                row = self._row((table, app), len(key), key)
            return None if row is None else self._codec.decode(row[1], key)
        with self._lock:
            rows = self._flat.get((table, app))
            packed = None if rows is None else rows.get(key)
        return None if packed is None else self._codec.decode(packed, key, 8)  # after the update sequence

    def get_many(self, table: str, app: str, keys: Iterable[Key]) -> dict[Key, Doc]:
        wanted = [tuple(key) for key in keys]
        for key in wanted:
            check_key(table, key)
        width = _width(table)
        with self._lock:
            found = [(key, self._row((table, app), width, key)) for key in wanted]
        return {key: self._codec.decode(row[1], key) for key, row in found if row is not None}

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
            # a wide table's rows are copied in bulk here and decoded after the lock is let go
            gathered = self._gather((table, app), _width(table), prefix, True, last_after)
        rows = _expand(gathered, last_after, True)
        rows.sort(key=(lambda row: row[0]) if order == "key" else (lambda row: row[1]))
        return self._decoded(rows)

    def scan_fields(
        self, table: str, app: str, prefix: Key = (), *, last_after: str | None = None
    ) -> tuple[list[Key], dict[str, list[Any]]]:
        """:meth:`scan` in write order as columns: the keys, and per field name each document's
        value (None where it has none); the documents of one shape are read as one JSON array."""
        prefix = tuple(prefix)
        check_prefix(table, prefix)
        with self._lock:
            gathered = self._gather((table, app), _width(table), prefix, True, last_after)
        if not gathered[0] and len(gathered[1]) == 1:  # one bucket: read as columns
            head, snapshot = gathered[1][0]
            found = snapshot.columns(last_after)
            if found is not None:
                parts, data, starts, ends = found
                n = len(starts)
                key_parts = [*(list(repeat(part, n)) for part in head), *parts]
                return list(zip(*key_parts)), self._codec.decode_columns(data, starts, ends, key_parts)
        rows = _expand(gathered, last_after, True)
        rows.sort(key=lambda row: row[1])
        keys = [row[0] for row in rows]
        return keys, self._codec.decode_fields([row[2] for row in rows], keys)

    def _decoded(self, rows: list[tuple[Key, int, bytes]]) -> Iterator[tuple[Key, Doc]]:
        """The documents decoded one at a time (a long scan never holds them all)."""
        decode = self._codec.decode
        for key, _, blob in rows:
            yield key, decode(blob, key)

    def keys(self, table: str, app: str, prefix: Key = ()) -> list[Key]:
        prefix = tuple(prefix)
        check_prefix(table, prefix)
        with self._lock:
            return sorted(key for key, _, _ in self._select((table, app), _width(table), prefix, False))

    def count(self, table: str, app: str, prefix: Key = ()) -> int:
        prefix = tuple(prefix)
        check_prefix(table, prefix)
        width = _width(table)
        with self._lock:
            if width >= _WIDE and len(prefix) < 3:
                buckets = self._buckets.get((table, app), {})
                if not prefix:
                    return sum(len(bucket) for bucket in buckets.values())
                if len(prefix) == 2:
                    found = buckets.get(prefix)
                    return 0 if found is None else len(found)
            if width < _WIDE and not prefix:
                return len(self._flat.get((table, app), {}))
            return len(self._select((table, app), width, prefix, False))

    def put_many(self, table: str, app: str, rows: Iterable[tuple[Key, Doc]]) -> None:
        if isinstance(rows, Columns) and self._put_columns(table, app, rows):
            return
        prepared = []
        encode = self._codec.encode
        for key, doc in rows:
            if key.__class__ is not tuple:
                key = tuple(key)
            check_key(table, key)
            key = _plain(key)
            prepared.append((key, encode(doc, key)))
        width = _width(table)
        where = (table, app)
        with self._lock:
            seq = self._seq
            previous = self._write(where, width, [(key, (next(seq), blob)) for key, blob in prepared])
            self._remember(where, [key for key, _ in prepared], previous)

    def _put_columns(self, table: str, app: str, rows: Columns) -> bool:
        """Write rows given as columns, encoded column by column, and a new learner's rows into
        their bucket at once; False (nothing written) when they are to be taken row by row."""
        keys, width, where = rows.keys, _width(table), (table, app)
        if not len(rows) or len(keys) != width or any(set(map(type, part)) != {str} for part in keys):
            return False
        shaped = self._codec.shape_columns(keys, rows.fields)
        if shaped is None:
            return False
        n = len(rows)
        with self._lock:
            seqs = list(islice(self._seq, n))
            if width >= _WIDE and keys[0].count(keys[0][0]) == n and keys[1].count(keys[1][0]) == n:  # one bucket
                head = (keys[0][0], keys[1][0])
                buckets = self._buckets.setdefault(where, {})
                found = buckets.get(head)
                bucket = Bucket(width - 2) if found is None else found
                if bucket.fill(keys[2:], seqs, *shaped):
                    if found is None:
                        buckets[head] = bucket
                        _head_add(self._heads.setdefault(where, {}), head[0], head[1])
                    self._remember(where, rows, [None] * n)
                    return True
            written = list(zip(zip(*keys), zip(seqs, _blobs(*shaped, n), strict=True), strict=True))
            previous = self._write(where, width, written)
            self._remember(where, rows, previous)
        return True

    def delete_many(self, table: str, app: str, keys: Iterable[Key]) -> list[Key]:
        wanted = [tuple(key) for key in keys]
        for key in wanted:
            check_key(table, key)
        width = _width(table)
        with self._lock:
            deleted = []
            for key in wanted:
                row = self._drop((table, app), width, key)
                if row is not None:
                    self._remember((table, app), [key], [row])
                    deleted.append(key)
            return deleted

    def delete_prefix(self, table: str, app: str, prefix: Key) -> int:
        prefix = tuple(prefix)
        check_prefix(table, prefix)
        with self._lock:
            keys = [key for key, _, _ in self._select((table, app), _width(table), prefix, False)]
            return len(self.delete_many(table, app, keys))

    def close(self) -> None:
        """Nothing to release."""

    # -- accounting ------------------------------------------------------------------------
    def footprint(self) -> dict[str, dict[str, int]]:
        """Approximate bytes held per table: ``rows``, ``documents`` (encoded) and ``keys``
        (the keys, the update sequences and the indexes; key strings shared by tables
        are counted once, with the first table that holds them)."""
        size = sys.getsizeof
        seen: set[int] = set()

        def once(obj: object) -> int:
            if id(obj) in seen:
                return 0
            seen.add(id(obj))
            return size(obj)

        out: dict[str, dict[str, int]] = {}
        with self._lock:
            for (table, _), buckets in self._buckets.items():
                into = out.setdefault(table, {"rows": 0, "documents": 0, "keys": 0})
                into["keys"] += size(buckets)
                for head, bucket in buckets.items():
                    docs = bucket.doc_bytes()
                    into["rows"] += len(bucket)
                    into["documents"] += docs
                    into["keys"] += bucket.nbytes - docs + size(head) + sum(once(part) for part in head)
            for (table, _), rows in self._flat.items():
                into = out.setdefault(table, {"rows": 0, "documents": 0, "keys": 0})
                into["keys"] += size(rows)
                for key, packed in rows.items():
                    into["rows"] += 1
                    into["documents"] += size(packed) - 8
                    into["keys"] += 8 + size(key) + sum(once(part) for part in key)
            for (table, _), heads in self._heads.items():
                into = out.setdefault(table, {"rows": 0, "documents": 0, "keys": 0})
                into["keys"] += size(heads) + sum(once(v) if isinstance(v, set) else 0 for v in heads.values())
        return out


class _Transaction:
    """One ``atomic()`` block of a :class:`MemoryStore`: the store's lock held, its writes undone
    when the block raises (a nested block's own writes only)."""

    __slots__ = ("_mark", "_outer", "_store")

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def __enter__(self) -> None:
        store = self._store
        store._lock.acquire()
        self._outer = store._undo is None
        if self._outer:
            store._undo = []
        self._mark = len(store._undo)  # type: ignore[arg-type]

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        store = self._store
        try:
            if kind is not None:
                store._rollback(self._mark)
        finally:
            if self._outer:
                store._undo = None
            store._lock.release()


def _blobs(head: bytes, body: str, values: list[Sequence[Any]], n: int) -> list[bytes]:
    """The ``n`` documents of a shape made by :meth:`DocCodec.shape_columns`."""
    if not values:
        return [head + body.encode()] * n
    return [head + (body % row).encode() for row in zip(*values, strict=True)]


#: what :meth:`MemoryStore._gather` collects: the (key, seq, blob) rows of a flat table, and
#: (first two key parts, snapshot) per bucket of a wide one
_Gathered = tuple[list[tuple[Key, int, bytes]], list[tuple[Key, Snapshot]]]


def _expand(gathered: _Gathered, last_after: str | None, with_docs: bool) -> list[tuple[Key, int, bytes]]:
    """The ``(key, seq, blob)`` rows of what :meth:`MemoryStore._gather` collected."""
    flat, snapshots = gathered
    out = flat if last_after is None else [row for row in flat if row[0][-1] > last_after]
    for head, snapshot in snapshots:
        out += [(head + suffix, seq, blob) for suffix, seq, blob in snapshot.entries(last_after, with_docs=with_docs)]
    return out
