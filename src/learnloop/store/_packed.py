"""Compact forms for :class:`~learnloop.store.MemoryStore`: rows packed in buckets (documents
are kept by shape, see :mod:`learnloop.store._codec`).

The rows of a wide table (the events) are grouped in buckets by their first
two key parts (one bucket per learner and catalog): a bucket holds its rows in
one ``bytearray`` (the key's remaining parts, then the document), with arrays of
offsets and update sequences and the row numbers in key order. A lookup is a
binary search; a write appends and marks the row it replaces dead, and the
bucket is compacted once the dead bytes outweigh the live ones.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from itertools import chain, repeat
from typing import Any

import numpy as np

from learnloop.store._codec import gather
from learnloop.store.base import Key

__all__ = ["Bucket", "Row", "Snapshot"]

#: a stored row: (update sequence, encoded document)
Row = tuple[int, bytes]

#: a snapshot of at most this many rows copies them one by one, a larger one the whole bucket
_SMALL = 64
#: rows per block of a bucket's write order whose greatest key last part is kept (see ``Bucket.snapshot``)
_BLOCK = 256


#: the one-byte size prefixes of key parts shorter than 255 bytes
_SIZES = [bytes((n,)) for n in range(0xFF)]


def _put_part(out: bytearray, part: str) -> None:
    raw = part.encode("utf-8", "surrogatepass")
    if len(raw) < 0xFF:
        out.append(len(raw))
    else:
        out.append(0xFF)
        out += len(raw).to_bytes(4, "little")
    out += raw


def _parts(data: bytes | bytearray, pos: int, width: int) -> tuple[Key, int]:
    """The ``width`` key parts of the record at ``pos`` and where its document starts."""
    parts = []
    for _ in range(width):
        size = data[pos]
        pos += 1
        if size == 0xFF:
            size = int.from_bytes(data[pos : pos + 4], "little")
            pos += 4
        parts.append(data[pos : pos + size].decode("utf-8", "surrogatepass"))
        pos += size
    return tuple(parts), pos


def _higher(high: str | None, lasts: Sequence[str]) -> str | None:
    """The greater of ``high`` and the greatest of ``lasts`` (None: neither has any)."""
    top = max(lasts, default=None)
    return top if high is None or (top is not None and top > high) else high


class Snapshot:
    """Some rows of a bucket, copied at one instant: read after the store's lock is let go.

    Copying the buffers is one ``memcpy`` each, so a long scan holds the lock for
    that only and decodes its keys and documents while other threads go on.
    """

    __slots__ = ("_data", "_order", "_rows", "_width")

    def __init__(self, data: bytes, rows: array[int], order: array[int], width: int) -> None:
        self._data, self._rows, self._order, self._width = data, rows, order, width

    def __len__(self) -> int:
        return len(self._order)

    def entries(self, last_after: str | None = None, *, with_docs: bool = True) -> list[tuple[Key, int, bytes]]:
        """``(suffix, seq, document)`` in key order; with ``last_after``, only the rows whose
        key's last part is greater; without ``with_docs``, documents are ``b""``."""
        data, rows, width = self._data, self._rows, self._width
        out = []
        for slot in self._order:
            suffix, start = _parts(data, rows[2 * slot], width)
            if last_after is not None and suffix[-1] <= last_after:
                continue
            blob = b""
            if with_docs:
                following = 2 * slot + 2
                blob = data[start : rows[following] if following < len(rows) else len(data)]
            out.append((suffix, rows[2 * slot + 1], blob))
        return out

    def columns(
        self, last_after: str | None = None
    ) -> tuple[list[list[str]], np.ndarray, np.ndarray, np.ndarray] | None:
        """The rows in write order (by update sequence) as columns, read by numpy: per key part its
        values, and the data as a uint8 array with each document's start and end; with ``last_after``,
        only the rows whose key's last part is greater. None (then :meth:`entries`) when a key part
        is 255 bytes or longer, or holds the byte 0x1F."""
        data = np.frombuffer(self._data, dtype=np.uint8)
        if not len(self._order):
            return [[] for _ in range(self._width)], data, np.zeros(0, np.int64), np.zeros(0, np.int64)
        rows = np.frombuffer(self._rows, dtype=np.int64)
        order = np.frombuffer(self._order, dtype=np.uint32).astype(np.int64)
        offsets = rows[0::2]
        following = order + 1
        ends = np.where(following < len(offsets), offsets[np.minimum(following, len(offsets) - 1)], len(data))
        by_seq = np.argsort(rows[1::2][order], kind="stable")
        pos, ends = offsets[order][by_seq], ends[by_seq]
        parts: list[list[str]] = []
        for _ in range(self._width):
            size = data[pos].astype(np.int64)
            if (size == 0xFF).any():
                return None
            text = gather(data, pos + 1, pos + 1 + size, b"\x1f")
            if text.count(b"\x1f") != len(pos) - 1:
                return None
            parts.append(text.decode("utf-8", "surrogatepass").split("\x1f"))
            pos = pos + 1 + size
        if last_after is not None:
            keep = np.flatnonzero([last > last_after for last in parts[-1]])
            if len(keep) < len(pos):
                at = keep.tolist()
                parts = [[part[k] for k in at] for part in parts]
                pos, ends = pos[keep], ends[keep]
        return parts, data, pos, ends


class Bucket:
    """The rows sharing a key prefix, keyed by the ``width`` remaining parts (see the module)."""

    __slots__ = ("_data", "_dead", "_high", "_pending", "_rows", "_sorted", "_tops", "_topped", "_width")

    def __init__(self, width: int) -> None:
        self._width = width
        self._data = bytearray()  # records: the key's parts (length, UTF-8), then the document
        self._rows = array("q")  # per row number: record offset, update sequence (0: dead)
        self._sorted = array("I")  # live row numbers in key order, but for the pending ones
        # live row numbers of keys new to the bucket, in the order of their writes, not yet in
        # key order (they take their places when the order is next used)
        self._pending = array("I")
        self._high: str | None = None  # no record (live or dead) has a key's last part greater
        self._dead = 0  # bytes of dead records
        # per block of _BLOCK row numbers: the greatest last key part of its records (live or dead),
        # for the rows numbered below _topped (the rest are added when next needed)
        self._tops: list[str] = []
        self._topped = 0

    def __len__(self) -> int:
        return len(self._sorted) + len(self._pending)

    @property
    def _order(self) -> array[int]:
        """The live row numbers in key order."""
        if self._pending:
            pending, self._pending = self._pending, array("I")
            order = self._sorted
            if len(pending) > len(order) // 8:
                self._sorted = array("I", sorted([*order, *pending], key=self._key))
            else:
                for slot in pending:
                    order.insert(bisect_left(order, self._key(slot), key=self._key), slot)
        return self._sorted

    @_order.setter
    def _order(self, order: array[int]) -> None:
        self._sorted = order

    @property
    def nbytes(self) -> int:
        """Bytes held by the bucket's buffers (their allocated size, slack included)."""
        return (
            self._data.__sizeof__()
            + self._rows.__sizeof__()
            + self._sorted.__sizeof__()
            + self._pending.__sizeof__()
            + Bucket.__basicsize__
            - object.__basicsize__
        )

    def doc_bytes(self) -> int:
        """Bytes of the live records' documents (the rest of a record is its key)."""
        return sum(self._end(slot) - self._suffix(slot)[1] for slot in self._order)

    # -- records ------------------------------------------------------------------
    def _suffix(self, slot: int) -> tuple[Key, int]:
        """The key parts of a row and where its document starts."""
        return _parts(self._data, self._rows[2 * slot], self._width)

    def _key(self, slot: int) -> Key:
        return self._suffix(slot)[0]

    def _end(self, slot: int) -> int:
        following = 2 * slot + 2
        return self._rows[following] if following < len(self._rows) else len(self._data)

    def _row(self, slot: int) -> Row:
        start = self._suffix(slot)[1]
        return self._rows[2 * slot + 1], bytes(self._data[start : self._end(slot)])

    def _append(self, suffix: Key, seq: int, blob: bytes) -> int:
        slot = len(self._rows) // 2
        if self._high is None or suffix[-1] > self._high:
            self._high = suffix[-1]
        self._rows.append(len(self._data))
        self._rows.append(seq)
        for part in suffix:
            _put_part(self._data, part)
        self._data += blob
        return slot

    def _append_many(self, rows: list[tuple[Key, int, bytes]]) -> int:
        """Append records as :meth:`_append` does, all at once; returns the first one's row number."""
        first = len(self._rows) // 2
        columns = [[part.encode("utf-8", "surrogatepass") for part in column] for column in zip(*(r[0] for r in rows))]
        sizes = [list(map(len, column)) for column in columns]
        if len(columns) != self._width or any(max(column) >= 0xFF for column in sizes):
            for suffix, seq, blob in rows:
                self._append(suffix, seq, blob)
            return first
        blobs = [row[2] for row in rows]
        pieces: list[list[bytes]] = []
        for column, size in zip(columns, sizes, strict=True):
            pieces += ([_SIZES[n] for n in size], column)
        lengths = np.sum([*sizes, list(map(len, blobs))], axis=0) + len(columns)
        offsets = np.empty(len(rows) * 2, dtype=np.int64)
        offsets[0::2] = len(self._data) + np.cumsum(lengths) - lengths
        offsets[1::2] = [row[1] for row in rows]
        self._data += b"".join(chain.from_iterable(zip(*pieces, blobs, strict=True)))
        self._rows.frombytes(offsets.tobytes())
        self._high = _higher(self._high, [row[0][-1] for row in rows])
        return first

    def fill(
        self, suffixes: Sequence[Sequence[str]], seqs: list[int], head: bytes, body: str, values: list[Sequence[Any]]
    ) -> bool:
        """Write the rows of an empty bucket at once, as :meth:`put_many` writes them: row ``k``
        has the key parts ``suffixes[.][k]``, the sequence ``seqs[k]`` and the document ``head +
        (body % values_k).encode()`` (see :meth:`DocCodec.shape_columns`). False, writing nothing,
        when the bucket holds rows, a key repeats, or a text is not all ASCII (or holds NUL)."""
        if self._order or len(suffixes) != self._width:
            return False
        texts = ["".join(column) for column in suffixes]
        if not all(text.isascii() and "\x00" not in text for text in texts):
            return False
        sizes = [list(map(len, column)) for column in suffixes]
        if any(max(size) >= 0xFF for size in sizes):
            return False
        # one string per key in the order of the keys (no NUL in them: NUL sorts first)
        order_keys = list(suffixes[0]) if self._width == 1 else list(map("\x00".join, zip(*suffixes, strict=True)))
        if len(set(order_keys)) != len(order_keys):
            return False
        # each record: per key part its size (one character) and the part, then the head and the
        # body's constant pieces between the values (all one byte a character in latin-1)
        constants = body.split("%s")
        constants[0] = head.decode("latin-1") + constants[0]
        columns: list[Iterable[str]] = []
        for size, column in zip(sizes, suffixes, strict=True):
            columns += (map(chr, size), column)
        for constant, column in zip(constants, values, strict=False):
            columns += (repeat(constant), column)
        columns.append(repeat(constants[-1]))
        n = len(order_keys)
        text = "".join(chain.from_iterable(zip(*columns)))
        # the values (strings, or the numbers' JSON texts) one byte a character as well
        if not (text.isascii() if head.isascii() else all("".join(column).isascii() for column in values)):
            return False
        lengths = np.full(n, self._width + len("".join(constants)), dtype=np.int64)
        for size in sizes:
            lengths += size
        for column in values:
            lengths += np.fromiter(map(len, column), dtype=np.int64, count=n)
        first = len(self._rows) // 2
        offsets = np.empty(2 * n, dtype=np.int64)
        offsets[0::2] = len(self._data) + np.cumsum(lengths) - lengths
        offsets[1::2] = seqs
        self._data += text.encode("latin-1")
        self._rows.frombytes(offsets.tobytes())
        self._high = _higher(self._high, suffixes[-1])
        order = sorted(range(n), key=order_keys.__getitem__)
        self._order = array("I", order if first == 0 else [first + k for k in order])
        return True

    def _kill(self, slot: int) -> None:
        self._rows[2 * slot + 1] = 0
        self._dead += self._end(slot) - self._rows[2 * slot]

    def _find(self, suffix: Key) -> tuple[int, int | None]:
        """Where ``suffix`` is (or would go) in key order, and its row number when present."""
        pos = bisect_left(self._order, suffix, key=self._key)
        if pos < len(self._order) and self._key(self._order[pos]) == suffix:
            return pos, self._order[pos]
        return pos, None

    # -- reading ------------------------------------------------------------------
    def get(self, suffix: Key) -> Row | None:
        slot = self._find(suffix)[1]
        return None if slot is None else self._row(slot)

    def _span(self, prefix: Key) -> tuple[int, int]:
        """The positions in key order of the rows whose suffix starts with ``prefix``."""
        order = self._order
        if not prefix:
            return 0, len(order)
        n = len(prefix)
        lo = bisect_left(order, prefix, key=self._key)
        return lo, bisect_right(order, prefix, lo, key=lambda slot: self._key(slot)[:n])

    def snapshot(self, prefix: Key = (), last_after: str | None = None) -> Snapshot:
        """The rows under ``prefix`` as they are now (see :class:`Snapshot`); with ``last_after`` and
        no ``prefix``, only the rows whose key's last part is greater (a learner's latest events: the
        blocks of the write order that hold none are skipped, so the cost follows the rows returned
        rather than the bucket's size)."""
        if last_after is not None and not prefix:
            return self._copied(self._later(last_after))
        lo, hi = self._span(prefix)
        if hi - lo > _SMALL:
            return Snapshot(bytes(self._data), self._rows[:], self._order[lo:hi], self._width)
        return self._copied(self._order[lo:hi])

    def _copied(self, slots: Iterable[int]) -> Snapshot:
        """A snapshot of the rows ``slots`` (in that order), their records copied one by one."""
        data = bytearray()
        rows = array("q")
        for slot in slots:
            rows.append(len(data))
            rows.append(self._rows[2 * slot + 1])
            data += self._data[self._rows[2 * slot] : self._end(slot)]
        return Snapshot(bytes(data), rows, array("I", range(len(rows) // 2)), self._width)

    def _later(self, last: str) -> list[int]:
        """The live row numbers whose key's last part is greater than ``last``, in key order."""
        rows = self._rows
        n = len(rows) // 2
        tops = self._tops
        at = self._topped
        while at < n:  # the blocks' tops brought up to the rows written since
            block = at // _BLOCK
            end = min(n, (block + 1) * _BLOCK)
            top = max(self._key(slot)[-1] for slot in range(at, end))
            if block < len(tops):
                tops[block] = max(tops[block], top)
            else:
                tops.append(top)
            at = end
        self._topped = n
        out = []
        for block, top in enumerate(tops):
            if top > last:
                for slot in range(block * _BLOCK, min(n, (block + 1) * _BLOCK)):
                    if rows[2 * slot + 1] and self._key(slot)[-1] > last:  # (dead records have sequence 0)
                        out.append(slot)
        out.sort(key=self._key)
        return out

    def select(self, prefix: Key = ()) -> list[tuple[Key, int, int]]:
        """``(suffix, seq, row number)`` of the live rows whose suffix starts with ``prefix``, in key order."""
        order = self._order
        pos = bisect_left(order, prefix, key=self._key) if prefix else 0
        n = len(prefix)
        out = []
        while pos < len(order):
            slot = order[pos]
            suffix = self._key(slot)
            if suffix[:n] != prefix:
                break
            out.append((suffix, self._rows[2 * slot + 1], slot))
            pos += 1
        return out

    def rows(self, slots: list[int]) -> list[Row]:
        return [self._row(slot) for slot in slots]

    # -- writing ------------------------------------------------------------------
    def put(self, suffix: Key, seq: int, blob: bytes) -> Row | None:
        """Write one row; returns the row it replaced."""
        if self._high is None or suffix[-1] > self._high:  # a key new to the bucket: placed when next read
            self._pending.append(self._append(suffix, seq, blob))
            return None
        pos, old = self._find(suffix)
        slot = self._append(suffix, seq, blob)
        if old is None:
            self._order.insert(pos, slot)
            return None
        previous = self._row(old)
        self._kill(old)
        self._order[pos] = slot
        self._compact()
        return previous

    def put_many(self, rows: list[tuple[Key, int, bytes]]) -> list[Row | None]:
        """Write rows in turn (a key written twice: the later wins); returns the rows each replaced."""
        if len(rows) <= 32:
            return [self.put(*row) for row in rows]
        first = self._append_many(rows)
        if not self._order and len({row[0] for row in rows}) == len(rows):  # a new bucket, every key once
            self._order = array("I", sorted(range(first, first + len(rows)), key=lambda slot: rows[slot - first][0]))
            return [None] * len(rows)
        previous: list[Row | None] = []
        fresh: dict[Key, int] = {}  # keys new to the bucket -> their row number
        # many rows into a big bucket: read each of its keys once rather than log2(n) of them per row
        at: dict[Key, int] | None = None
        if len(self._order) > 64 and len(rows) * (len(self._order).bit_length()) > len(self._order):
            at = {self._key(slot): pos for pos, slot in enumerate(self._order)}
        for slot, (suffix, _, _) in enumerate(rows, first):
            old = fresh.get(suffix)
            if old is not None:
                previous.append(self._row(old))
                self._kill(old)
                fresh[suffix] = slot
                continue
            if at is None:
                pos, old = self._find(suffix)
            else:
                pos = at.get(suffix, -1)
                old = None if pos < 0 else self._order[pos]
            if old is None:
                previous.append(None)
                fresh[suffix] = slot
            else:
                previous.append(self._row(old))
                self._kill(old)
                self._order[pos] = slot
        if len(fresh) > len(self._order) // 8:
            merged = [(self._key(slot), slot) for slot in self._order]  # keys told apart: slots never compared
            merged += fresh.items()
            merged.sort()
            self._order = array("I", [slot for _, slot in merged])
        else:
            for suffix, slot in sorted(fresh.items()):
                self._order.insert(bisect_left(self._order, suffix, key=self._key), slot)
        self._compact()
        return previous

    def delete(self, suffix: Key) -> Row | None:
        """Delete one row; returns it (None: absent)."""
        pos, slot = self._find(suffix)
        if slot is None:
            return None
        previous = self._row(slot)
        self._kill(slot)
        del self._order[pos]
        self._compact()
        return previous

    def _compact(self) -> None:
        """Rewrite the records without the dead ones, once these outweigh the live ones."""
        if self._dead < 4096 or 2 * self._dead < len(self._data):
            return
        # the live records keep their write order (so that the latest ones stay together, see _later)
        order = self._order
        renumbered = {}
        data = bytearray()
        rows = array("q")
        for slot in sorted(order):
            renumbered[slot] = len(rows) // 2
            rows.append(len(data))
            rows.append(self._rows[2 * slot + 1])
            data += self._data[self._rows[2 * slot] : self._end(slot)]
        self._data, self._rows, self._dead = data, rows, 0
        self._order = array("I", [renumbered[slot] for slot in order])
        self._tops, self._topped = [], 0
