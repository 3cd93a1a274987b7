"""Documents by shape, for :class:`~learnloop.store.MemoryStore`.

A document is kept as the JSON array of its values behind the id of its
*shape* (its field names, and which fields repeat a part of its key: those are
not stored again). An event document of the engine comes to about 25 bytes.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from itertools import compress
from typing import Any

import numpy as np

from learnloop.store.base import Doc, Key, encode_doc, json_bytes, json_texts, json_value, plain_strings

#: documents parsed by one call of the JSON parser (which holds the GIL throughout)
_PARSE_ROWS = 4096


def json_rows(bodies: Sequence[bytes]) -> list[Any]:
    """The JSON values of ``bodies``, parsed as arrays of a few thousand at a time (so that other
    threads run between the parser's calls)."""
    out: list[Any] = []
    for at in range(0, len(bodies), _PARSE_ROWS):
        out += json_value(b"[" + b",".join(bodies[at : at + _PARSE_ROWS]) + b"]")
    return out


def json_joined(docs: bytes, n: int) -> list[Any]:
    """The JSON values of ``n`` documents joined by ``",\\n"`` (a compact JSON document holds no
    newline byte), parsed as arrays of a few thousand at a time (at once when a document holds a
    newline after all)."""
    if not n:
        return []
    breaks = np.flatnonzero(np.frombuffer(docs, dtype=np.uint8) == 10)
    if len(breaks) != n - 1:
        values: list[Any] = json_value(b"[" + docs + b"]")
        return values
    cuts = [0, *(breaks[_PARSE_ROWS - 1 :: _PARSE_ROWS] + 1).tolist(), len(docs) + 2]
    out: list[Any] = []
    for start, stop in zip(cuts, cuts[1:], strict=False):
        out += json_value(b"[" + docs[start : stop - 2] + b"]")
    return out


def json_marked(docs: bytes, n: int) -> list[Any] | None:
    """The JSON values of ``n`` documents each behind the byte 0x01, joined as they are, parsed as
    arrays of a few thousand at a time; None unless each of the ``n`` is such a document: ``docs``
    then holds ``n`` bytes 0x01, the first at its start, and every piece between two of them parses as
    JSON (a document stored otherwise holds no 0x01 byte, being JSON, or starts with 0x00, being raw
    bytes, which no JSON text holds)."""
    if not n:
        return []
    marks = np.flatnonzero(np.frombuffer(docs, dtype=np.uint8) == 1)
    if len(marks) != n or marks[0] != 0:
        return None
    cuts = [*marks[::_PARSE_ROWS].tolist(), len(docs)]
    out: list[Any] = []
    try:
        for start, stop in zip(cuts, cuts[1:], strict=False):
            out += json_value(b"[" + docs[start + 1 : stop].replace(b"\x01", b",") + b"]")
    except ValueError:
        return None
    return out if len(out) == n else None


__all__ = ["MAX_SHAPES", "DocCodec", "gather", "json_joined", "json_marked", "json_rows"]


def gather(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, sep: bytes) -> bytes:
    """The pieces ``data[starts[k]:ends[k]]`` (``data``: bytes as a uint8 array) joined by ``sep``
    (one byte), gathered by numpy (no object per piece)."""
    if not len(starts):
        return b""
    lengths = ends - starts
    step = lengths + 1
    first = np.cumsum(step) - step  # where each piece starts in the result
    src = np.arange(int(step.sum()), dtype=np.int64) + np.repeat(starts - first, step)
    out = data[np.minimum(src, len(data) - 1)]  # (a separator's place reads any byte: set below)
    out[first + lengths] = sep[0]
    return bytes(out[:-1].tobytes())


_RAW = 0x00  # b"\x00" + the raw bytes (as encode_doc)
_SHAPED1 = 0x01  # one byte of shape id, then the JSON array of the values
_SHAPED2 = 0x02  # two bytes of shape id, then the JSON array of the values
_OBJECT = 0x7B  # "{": a plain JSON object (as encode_doc)
#: shapes remembered per store; documents of other shapes are kept as plain JSON objects
MAX_SHAPES = 1 << 16
_NONE = type(None)


class DocCodec:
    """Documents to bytes and back, given their key (see the module's docstring).

    Decoding gives what :func:`~learnloop.store.base.decode_doc` gives for
    :func:`~learnloop.store.base.encode_doc`'s bytes (tuples come back as lists).

    >>> codec = DocCodec()
    >>> blob = codec.encode({"user": "u1", "score": 0.5, "tags": ("a",)}, ("u1",))
    >>> blob, codec.decode(blob, ("u1",))
    (b'\\x01\\x00[0.5,["a"]]', {'user': 'u1', 'score': 0.5, 'tags': ['a']})
    """

    def __init__(self) -> None:
        self._ids: dict[tuple[tuple[str, ...], tuple[int, ...]], int] = {}
        # per shape id: the field names, and (position, key part) of the fields that repeat a key part
        self._shapes: list[tuple[tuple[str, ...], tuple[tuple[int, int], ...]]] = []
        self._lock = threading.Lock()
        # field names -> the shape their last document had: (field, key part) pairs, the other fields, its header
        self._by_names: dict[tuple[str, ...], tuple[tuple[tuple[int, int], ...], tuple[int, ...], bytes]] = {}

    def __len__(self) -> int:
        return len(self._shapes)

    def encode(self, doc: Doc, key: Key) -> bytes:
        """Raises TypeError or ValueError for a document that is not JSON-serialisable."""
        if doc.__class__ is not dict and (
            isinstance(doc, (bytes, bytearray, memoryview)) or not isinstance(doc, Mapping)
        ):
            return encode_doc(doc)
        fields = doc if doc.__class__ is dict else dict(doc)
        names = tuple(fields)
        known = self._by_names.get(names)
        if known is not None:  # the fields that repeated the key last time may repeat it again
            pairs, keep, head = known
            given = tuple(fields.values())
            for at, part in pairs:
                value = given[at]
                if value.__class__ is not str or value != key[part]:
                    break
            else:
                return head + json_bytes([given[at] for at in keep])
        refs: list[int] = []
        values: list[Any] = []
        for name, value in fields.items():
            if name.__class__ is not str:
                return encode_doc(fields)  # JSON turns such names into strings: kept as JSON does
            if value.__class__ is str and value in key:  # the first key part equal to it
                refs.append(key.index(value))
            else:
                refs.append(-1)
                values.append(value)
        body = json_bytes(values)
        shape = (names, tuple(refs))
        sid = self._ids.get(shape)
        if sid is None:
            sid = self._register(shape)
            if sid is None:
                return encode_doc(fields)
        head = bytes((_SHAPED1, sid)) if sid < 0x100 else bytes((_SHAPED2, sid & 0xFF, sid >> 8))
        if len(self._by_names) < MAX_SHAPES:
            pairs = tuple((at, ref) for at, ref in enumerate(refs) if ref >= 0)
            self._by_names[names] = (pairs, tuple(at for at, ref in enumerate(refs) if ref < 0), head)
        return head + body

    def shape_columns(
        self, keys: Sequence[Sequence[str]], fields: Mapping[str, Sequence[Any]]
    ) -> tuple[bytes, str, list[Sequence[Any]]] | None:
        """The shape of :class:`~learnloop.store.base.Columns` rows: ``(head, body, values)``,
        where row ``k``'s document is ``head + (body % values_k).encode()`` (``values_k``: the
        ``k``-th entry of each of ``values``). A field is taken as repeating a key part only when
        its whole column does. None when the columns do not suit (a field present in some rows
        only, values that are not plain strings or numbers): the rows are then encoded one by one."""
        names: list[str] = []
        refs: list[int] = []
        formats: list[str] = []
        values: list[Sequence[Any]] = []
        for name, column in fields.items():
            kinds = set(map(type, column))
            if kinds == {_NONE}:
                continue
            if _NONE in kinds or name.__class__ is not str:
                return None
            names.append(name)
            part = next((j for j, key_part in enumerate(keys) if column == key_part), -1) if kinds == {str} else -1
            refs.append(part)
            if part >= 0:
                continue
            if plain_strings(column, kinds=kinds):
                formats.append('"%s"')
                values.append(column)
            else:
                text = json_texts(column, kinds=kinds)
                if text is None:
                    return None
                formats.append("%s")
                values.append(text)
        shape = (tuple(names), tuple(refs))
        sid = self._ids.get(shape)
        if sid is None:
            sid = self._register(shape)
            if sid is None:
                return None
        head = bytes((_SHAPED1, sid)) if sid < 0x100 else bytes((_SHAPED2, sid & 0xFF, sid >> 8))
        return head, "[" + ",".join(formats) + "]", values

    def _register(self, shape: tuple[tuple[str, ...], tuple[int, ...]]) -> int | None:
        with self._lock:
            sid = self._ids.get(shape)
            if sid is None:
                if len(self._shapes) >= MAX_SHAPES:
                    return None
                sid = len(self._shapes)
                self._shapes.append((shape[0], tuple((at, ref) for at, ref in enumerate(shape[1]) if ref >= 0)))
                self._ids[shape] = sid
            return sid

    def decode(self, blob: bytes, key: Key, at: int = 0) -> Doc:
        """The document of ``blob[at:]`` (``at``: where it starts in ``blob``)."""
        tag = blob[at] if len(blob) > at else _OBJECT
        if tag == _RAW:
            return blob[at + 1 :]
        if tag == _SHAPED1:
            sid, start = blob[at + 1], at + 2
        elif tag == _SHAPED2:
            sid, start = blob[at + 1] | blob[at + 2] << 8, at + 3
        else:
            decoded: Doc = json_value(blob[at:] if at else blob)
            return decoded
        names, keyed = self._shapes[sid]
        values = json_value(blob[start:])
        for at, ref in keyed:  # in order of position: each goes where it stands among the fields
            values.insert(at, key[ref])
        return dict(zip(names, values, strict=True))

    def decode_columns(
        self, data: np.ndarray, starts: np.ndarray, ends: np.ndarray, keys: Sequence[Sequence[str]]
    ) -> dict[str, list[Any]]:
        """:meth:`decode_fields` of the documents ``data[starts[k]:ends[k]]`` (``data``: bytes as a
        uint8 array; ``keys``: the key parts as columns), without a bytes object per document: the
        bodies of one shape are gathered by numpy and read as one JSON array (a few thousand at a
        time), and the values of each field go to their rows as object arrays."""
        n = len(starts)
        sizes = ends - starts
        tags = data[np.minimum(starts, max(len(data) - 1, 0))] if n else np.zeros(0, dtype=np.uint8)
        sid = np.full(n, -1, dtype=np.int64)
        one = (tags == _SHAPED1) & (sizes >= 2)
        two = (tags == _SHAPED2) & (sizes >= 3)
        sid[one] = data[starts[one] + 1]
        sid[two] = data[starts[two] + 1].astype(np.int64) | data[starts[two] + 2].astype(np.int64) << 8
        bodies = starts + np.where(two, 3, 2)
        found, first = np.unique(sid, return_index=True)
        shapes = found[np.argsort(first)].tolist()  # (the fields in order of first appearance)
        single = len(shapes) == 1
        out: dict[str, Any] = {}
        key_arrays: dict[int, np.ndarray] = {}  # (the key parts as object arrays, made when needed)

        def put(name: str, rows: np.ndarray, values: Sequence[Any] | np.ndarray) -> None:
            if single:
                out[name] = list(values)
                return
            column = out.get(name)
            if column is None:
                column = out[name] = np.full(n, None, dtype=object)
            column[rows] = (
                values if values.__class__ is np.ndarray else np.fromiter(values, dtype=object, count=len(rows))
            )

        for shape in shapes:
            rows = np.arange(n) if single else np.flatnonzero(sid == shape)
            if shape < 0:  # whole documents, one by one
                for row in rows.tolist():
                    doc = self.decode(data[starts[row] : ends[row]].tobytes(), tuple(part[row] for part in keys))
                    for name, value in doc.items() if isinstance(doc, dict) else ():
                        column = out.get(name)
                        if column is None:
                            column = out[name] = [None] * n if single else np.full(n, None, dtype=object)
                        column[row] = value
                continue
            names, keyed = self._shapes[shape]
            values: list[Any] = []
            for at in range(0, len(rows), _PARSE_ROWS):
                part = rows[at : at + _PARSE_ROWS]
                values += json_value(b"[" + gather(data, bodies[part], ends[part], b",") + b"]")
            transposed = list(zip(*values, strict=True))
            refs = dict(keyed)
            at = 0
            for place, name in enumerate(names):
                if place in refs:
                    ref = refs[place]
                    if single:
                        put(name, rows, keys[ref])
                        continue
                    if ref not in key_arrays:
                        key_arrays[ref] = np.fromiter(keys[ref], dtype=object, count=n)
                    put(name, rows, key_arrays[ref][rows])
                else:
                    put(name, rows, transposed[at] if transposed else ())
                    at += 1
        return {name: column if column.__class__ is list else column.tolist() for name, column in out.items()}

    def decode_fields(self, blobs: Sequence[bytes], keys: Sequence[Key]) -> dict[str, list[Any]]:
        """The documents of ``blobs`` (with their ``keys``) as columns: per field name, each
        document's value (None where it has none). The bodies of the documents of one shape are
        read as one JSON array, so no dict is made per document."""
        n = len(blobs)
        out: dict[str, list[Any]] = {}
        heads = [blob[:3] if blob[:1] == b"\x02" else blob[:2] for blob in blobs]
        for head in set(heads):
            tag = head[0] if head else _OBJECT
            picked = [h == head for h in heads]
            rows = list(compress(range(n), picked))
            if tag not in (_SHAPED1, _SHAPED2) or len(head) < (2 if tag == _SHAPED1 else 3):
                for row in rows:  # whole documents, one by one
                    doc = self.decode(blobs[row], keys[row])
                    for name, value in doc.items() if isinstance(doc, dict) else ():
                        out.setdefault(name, [None] * n)[row] = value
                continue
            names, keyed = self._shapes[head[1] if tag == _SHAPED1 else head[1] | head[2] << 8]
            skip = len(head)
            values = json_rows([blobs[row][skip:] for row in rows])
            refs = dict(keyed)
            width = len(values[0]) if values else 0
            transposed = [[value[at] for value in values] for at in range(width)]
            whole = len(rows) == n  # (one shape: the columns are the transposed values as they are)
            at = 0
            for place, name in enumerate(names):
                if place in refs:
                    part = refs[place]
                    given: Sequence[Any] = [keys[row][part] for row in rows]
                else:
                    given = transposed[at] if transposed else ()
                    at += 1
                if whole:
                    out[name] = list(given)
                    continue
                column = out.setdefault(name, [None] * n)
                for row, value in zip(rows, given, strict=True):
                    column[row] = value
        return out
