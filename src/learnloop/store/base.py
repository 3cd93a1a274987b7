"""The ``Store`` protocol: where learnloop's state lives.

A store is a set of named tables of documents, each document a JSON-able dict
(or raw bytes, for compact model state), keyed by ``(application, key...)``.
Every table has a fixed key width (see :data:`TABLES`). Writes inside
``with store.atomic():`` are applied together or not at all; each write outside
one is its own transaction. Stores keep a per-table update sequence so that a
scan can return documents from least to most recently written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from itertools import chain, repeat
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic_core import from_json, to_json

__all__ = [
    "TABLES",
    "Columns",
    "Doc",
    "Key",
    "Store",
    "check_key",
    "check_prefix",
    "decode_doc",
    "encode_doc",
    "json_doc",
    "json_texts",
    "plain_strings",
]

Key = tuple[str, ...]
Doc = Mapping[str, Any] | bytes

#: table name -> number of key parts
TABLES: Mapping[str, int] = {
    "items": 1,  # item_id
    "annotations": 1,  # item_id
    "catalogs": 1,  # catalog_id
    "events": 4,  # user_id, catalog_id, item_id, timestamp
    "learners": 2,  # user_id, catalog_id
    "sessions": 2,  # user_id, session_id (a learner's sessions share the first key part with their events)
    "documents": 2,  # namespace, id: documents a façade keeps beside the content (e.g. v1 assets)
    "meta": 1,  # name, e.g. the content version of an application
}


class Columns:
    """Rows to write given as columns: ``keys`` holds one list per key part, ``fields`` one
    list per document field, in the documents' field order; a None value leaves the field out
    of its row's document. Iterating gives the ``(key, document)`` pairs, so any store's
    ``put_many`` takes it; a store may also write it column by column.

    >>> rows = Columns((["a", "b"],), {"n": [1, None], "s": ["x", "y"]})
    >>> len(rows), list(rows)
    (2, [(('a',), {'n': 1, 's': 'x'}), (('b',), {'s': 'y'})])
    """

    __slots__ = ("fields", "keys")

    def __init__(self, keys: Sequence[Sequence[str]], fields: Mapping[str, Sequence[Any]]) -> None:
        self.keys = keys
        self.fields = fields

    def __len__(self) -> int:
        return len(self.keys[0])

    def json_docs(self) -> list[bytes] | None:
        """Each row's document as :func:`encode_doc` writes it, made column by column; None when
        the columns do not suit (a field present in some rows only, a column of other values than
        :func:`json_texts` takes, a field name to escape): the rows are then encoded one by one.

        >>> Columns((["a", "b"],), {"n": [1, 2], "s": ["x", "y"], "none": [None, None]}).json_docs()
        [b'{"n":1,"s":"x"}', b'{"n":2,"s":"y"}']
        """
        text = self._joined_docs()
        return None if text is None else text.encode().split(b"\x00")[:-1]

    def json_doc_texts(self) -> list[str] | None:
        """:meth:`json_docs` as text (each document's UTF-8 encoding is what ``json_docs`` gives).

        >>> Columns((["a"],), {"s": ["é"]}).json_doc_texts()
        ['{"s":"é"}']
        """
        text = self._joined_docs()
        return None if text is None else text.split("\x00")[:-1]

    def _joined_docs(self) -> str | None:
        """The rows' JSON documents one after the other, each ended by a NUL (which none holds)."""
        before: list[str] = []  # the text before each column's values
        columns: list[Sequence[Any]] = []
        after = ""  # the text after the last column's values
        for name, column in self.fields.items():
            kinds = set(map(type, column))
            if kinds == {_NONE}:
                continue
            if _NONE in kinds or name.__class__ is not str or _ESCAPED.search(name):
                return None
            quoted = plain_strings(column, kinds=kinds)  # written as they are, between quotes
            text = column if quoted else json_texts(column, kinds=kinds)
            if text is None:
                return None
            before.append(after + ("," if columns else "{") + '"' + name + '":' + ('"' if quoted else ""))
            columns.append(text)
            after = '"' if quoted else ""
        if not columns:
            return "{}\x00" * len(self)
        parts: list[Iterable[str]] = []
        for lead, column in zip(before, columns, strict=True):
            parts += (repeat(lead), column)
        parts.append(repeat(after + "}\x00"))
        return "".join(chain.from_iterable(zip(*parts)))

    def __iter__(self) -> Iterator[tuple[Key, Doc]]:
        names = list(self.fields)
        rows = zip(*self.fields.values()) if names else repeat((), len(self))
        for key, values in zip(zip(*self.keys), rows, strict=True):
            yield key, {name: value for name, value in zip(names, values, strict=True) if value is not None}


#: characters JSON escapes (or cannot hold): a string column with none of them is written by rule
_ESCAPED = re.compile(r'["\\\x00-\x1f\ud800-\udfff]')


def plain_strings(values: Sequence[Any], *, kinds: set[type] | None = None) -> bool:
    """Whether ``values`` are all strings that JSON writes as they are, between quotes.

    >>> plain_strings(["a", "é"]), plain_strings(["a", 'b"']), plain_strings(["a", 1])
    (True, False, False)
    """
    kinds = set(map(type, values)) if kinds is None else kinds
    return kinds <= {str} and not _ESCAPED.search("".join(values))


def json_texts(values: Sequence[Any], *, kinds: set[type] | None = None) -> list[str] | None:
    """Each value's JSON text as :func:`json_bytes` writes it in a list or a dict, for a column
    of strings without characters to escape, or of ``int`` and ``float`` values (the spelling
    of pydantic-core's serialiser); None for any other column.

    >>> json_texts(["a", "b"]), json_texts([1, 0.5]), json_texts(["a", 1]), json_texts(['say "hi"'])
    (['"a"', '"b"'], ['1', '0.5'], None, None)
    """
    kinds = set(map(type, values)) if kinds is None else kinds  # the values' types, when known
    if kinds == {str}:
        return ['"' + v + '"' for v in values] if plain_strings(values, kinds=kinds) else None
    if kinds and kinds <= {int, float}:
        try:
            text = to_json(values if values.__class__ is list else list(values)).decode()
        except ValueError:
            return None
        return text[1:-1].split(",")  # numbers hold no comma
    return None


def check_key(table: str, key: Key) -> None:
    width = TABLES.get(table)
    if width is None:
        raise KeyError(f"unknown table '{table}'")
    if len(key) != width:
        raise ValueError(f"table '{table}' needs a key of {width} strings, got {key!r}")
    for part in key:
        if part.__class__ is not str and not isinstance(part, str):
            raise ValueError(f"table '{table}' needs a key of {width} strings, got {key!r}")


def check_prefix(table: str, prefix: Key) -> None:
    width = TABLES.get(table)
    if width is None:
        raise KeyError(f"unknown table '{table}'")
    if len(prefix) > width or not all(isinstance(k, str) for k in prefix):
        raise ValueError(f"table '{table}' needs a key prefix of at most {width} strings, got {prefix!r}")


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
#: ``_ENCODER``'s C encoder made once (``JSONEncoder.encode`` makes one per call), without the check
#: for circular references: a value it cannot write (RecursionError too) is written again by ``_ENCODER``
_C_ENCODE = (
    None
    if c_make_encoder is None
    else c_make_encoder(None, _ENCODER.default, encode_basestring, None, ":", ",", False, False, True)
)
_NONE = type(None)
_SCALARS = frozenset((str, int, float, bool, _NONE))
_STR = frozenset((str,))


def json_bytes(value: list[Any] | dict[str, Any]) -> bytes:
    """``value`` as compact UTF-8 JSON (non-ASCII kept as is, NaN and infinities as
    ``json`` writes them).

    A flat list, or a dict of ``str`` keys, of plain scalars (``str``, ``int``,
    ``float``, ``bool``, None) is written by pydantic-core's serialiser, several
    times faster than ``json`` for the small documents the engine keeps; any
    other value by ``json``, so that what is not JSON-serialisable still raises
    TypeError or ValueError. Numbers may be spelt otherwise than ``json`` spells
    them (``1e-7`` for ``1e-07``): they read back as the same values.

    >>> json_bytes(["a", 1, 0.5, None, True]), json_bytes({"x": (1, 2)})
    (b'["a",1,0.5,null,true]', b'{"x":[1,2]}')
    """
    if value.__class__ is dict:
        flat = _SCALARS.issuperset(map(type, value.values())) and _STR.issuperset(map(type, value))
    else:
        flat = _SCALARS.issuperset(map(type, value))
    if flat:
        try:
            return to_json(value)
        except ValueError:
            pass  # e.g. a lone surrogate: json says what is wrong
    elif _C_ENCODE is not None:
        try:
            return "".join(_C_ENCODE(value, 0)).encode("utf-8")
        except (TypeError, ValueError, RecursionError):
            pass  # json says what is wrong (a circular reference too)
    return _ENCODER.encode(value).encode("utf-8")


def json_value(blob: bytes | bytearray) -> Any:
    """The value of UTF-8 JSON bytes, as :func:`json.loads` gives it (read by pydantic-core's
    parser, by ``json`` for what that one refuses, e.g. nesting deeper than 200)."""
    try:
        return from_json(blob)
    except ValueError:
        return json.loads(blob)


def encode_doc(doc: Doc) -> bytes:
    """A document as stored: compact UTF-8 JSON, or ``b"\\x00"`` + the raw bytes.

    Both stores keep documents encoded, so that what a store returns is never
    the caller's object and is the same on every store (tuples come back as
    lists). Raises :class:`TypeError` or :class:`ValueError` for a document
    that is not JSON-serialisable.

    >>> encode_doc({"a": (1, 2)}), encode_doc(b"raw")
    (b'{"a":[1,2]}', b'\\x00raw')
    >>> decode_doc(encode_doc({"a": (1, 2)})), decode_doc(encode_doc(b"raw"))
    ({'a': [1, 2]}, b'raw')
    """
    if isinstance(doc, (bytes, bytearray, memoryview)):
        return b"\x00" + bytes(doc)
    if not isinstance(doc, Mapping):
        raise TypeError(f"a document is a mapping or bytes, not {type(doc).__name__}")
    return json_bytes(doc if doc.__class__ is dict else dict(doc))


def json_doc(doc: Doc | None) -> Mapping[str, Any]:
    """A document known to be JSON (not raw bytes) as a mapping; raises TypeError otherwise.

    >>> json_doc({"v": 1})["v"]
    1
    """
    if not isinstance(doc, Mapping):
        raise TypeError(f"expected a JSON document, got {type(doc).__name__}")
    return doc


def decode_doc(blob: bytes) -> Doc:
    """The inverse of :func:`encode_doc`."""
    if blob[:1] == b"\x00":
        return bytes(blob[1:])
    decoded: Doc = json_value(blob)
    return decoded


@runtime_checkable
class Store(Protocol):
    """Persistence seam of the engine; see :class:`MemoryStore` and :class:`SQLiteStore`."""

    def atomic(
        self,
        *,
        learners: Iterable[tuple[str, str]] | None = None,
        reads: Iterable[tuple[str, str, Key]] = (),
    ) -> AbstractContextManager[None]:
        """All writes in the block are applied together, or none if it raises.

        ``learners``: the ``(application, user)`` pairs whose data alone (events, revisions,
        sessions) the block writes. A store whose writers otherwise run one at a time may then
        run it beside blocks for other learners (PostgreSQL does); None: the block may write
        anything (content, settings) and runs alone. ``reads``: ``(table, application, key)``
        rows the block will :meth:`get`, a hint: a store that pays a round trip per statement
        may read them with the statements that open the block (PostgreSQL does); the block's
        reads answer the same either way. A nested block is a savepoint within the outer
        block's scope."""
        ...

    def get(self, table: str, app: str, key: Key) -> Doc | None: ...

    def get_many(self, table: str, app: str, keys: Iterable[Key]) -> dict[Key, Doc]: ...

    def scan(
        self,
        table: str,
        app: str,
        prefix: Key = (),
        *,
        order: Literal["key", "seq"] = "key",
        last_after: str | None = None,
    ) -> Iterator[tuple[Key, Doc]]:
        """The documents under ``prefix`` in key or write order; with ``last_after``,
        only those whose key's last part is greater (e.g. events after a timestamp)."""
        ...

    def keys(self, table: str, app: str, prefix: Key = ()) -> list[Key]:
        """The keys under ``prefix``, in key order, without loading documents."""
        ...

    def count(self, table: str, app: str, prefix: Key = ()) -> int: ...

    def put_many(self, table: str, app: str, rows: Iterable[tuple[Key, Doc]]) -> None: ...

    def delete_many(self, table: str, app: str, keys: Iterable[Key]) -> list[Key]:
        """Delete the given keys; returns those that existed."""
        ...

    def delete_prefix(self, table: str, app: str, prefix: Key) -> int: ...

    def close(self) -> None: ...
