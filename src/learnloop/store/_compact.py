"""Event documents kept without the fields their key repeats (the SQLite store's format).

An event's document names its learner, catalog, item and time, which are also
its key ``(user_id, catalog_id, item_id, timestamp)``. A document in the layout
the engine writes (``kind, user_id, catalog_id, item_id, topic_id, timestamp``,
then the other fields) whose four fields equal its key is stored without them,
behind the byte ``0x01`` (which starts no other stored document: JSON starts with
``{``, raw bytes with ``0x00``); reading puts them back in their places, so the
document read is the one written, field order included. Any other document, and
every document of a file written before this format, is stored whole.

>>> key = ("u1", "c", "i1", "2025-01-01T00:00:00.000Z")
>>> doc = {"kind": "skip", "user_id": "u1", "catalog_id": "c", "item_id": "i1", "topic_id": "t", "timestamp": key[3]}
>>> blob = encode_event(key, doc)
>>> blob
b'\\x01{"kind":"skip","topic_id":"t"}'
>>> decode_event(key, blob) == doc and list(decode_event(key, blob)) == list(doc)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, repeat
from typing import Any

from learnloop.store._codec import json_rows
from learnloop.store.base import Columns, Doc, Key, decode_doc, encode_doc, json_bytes, json_value

__all__ = ["MARK", "compact_columns", "decode_event", "encode_event", "fields_of", "marked_fields", "named_fields"]

#: the first byte of a document stored without its key's fields
MARK = b"\x01"
#: the fields an event document starts with; those at the key's positions are the key's parts
_LAYOUT = ("kind", "user_id", "catalog_id", "item_id", "topic_id", "timestamp")
_KEYED = ("user_id", "catalog_id", "item_id", "timestamp")
_DICT = frozenset([dict])


def compact_doc(key: Key, doc: Doc) -> dict[str, Any] | None:
    """The document without the fields its key repeats; None when it is not in the layout."""
    if not isinstance(doc, dict) or len(doc) < len(_LAYOUT):
        return None
    names = list(doc)
    if tuple(names[: len(_LAYOUT)]) != _LAYOUT or tuple(doc[name] for name in _KEYED) != tuple(key):
        return None
    short = {"kind": doc["kind"], "topic_id": doc["topic_id"]}
    for name in names[len(_LAYOUT) :]:
        short[name] = doc[name]
    return short


def encode_event(key: Key, doc: Doc) -> bytes:
    """An event's document as stored (see the module's docstring)."""
    short = compact_doc(key, doc)
    return encode_doc(doc) if short is None else MARK + json_bytes(short)


def decode_event(key: Sequence[str], blob: bytes) -> Doc:
    """The inverse of :func:`encode_event` (any stored document: whole ones as :func:`decode_doc`)."""
    if blob[:1] != MARK:
        return decode_doc(blob)
    short = json_value(blob[1:])
    kind = short.pop("kind")
    topic = short.pop("topic_id")
    return {
        "kind": kind,
        "user_id": key[0],
        "catalog_id": key[1],
        "item_id": key[2],
        "topic_id": topic,
        "timestamp": key[3],
        **short,
    }


def compact_columns(rows: Columns) -> Columns | None:
    """Event rows as columns without the fields their keys repeat (each document then to be
    stored behind :data:`MARK`); None when not every row's document is in the layout."""
    fields = rows.fields
    if tuple(fields)[: len(_LAYOUT)] != _LAYOUT or len(rows.keys) != len(_KEYED):
        return None
    if any(fields[name] != part for name, part in zip(_KEYED, rows.keys, strict=True)):
        return None
    kinds, topics = fields["kind"], fields["topic_id"]
    if None in kinds or None in topics:  # a field absent from some row: not the layout there
        return None
    short = {"kind": kinds, "topic_id": topics}
    for name in tuple(fields)[len(_LAYOUT) :]:
        short[name] = fields[name]
    return Columns(rows.keys, short)


def _mappings(docs: Sequence[Any]) -> Sequence[Any]:
    """``docs`` with each one that is not a mapping as an empty one."""
    return docs if _DICT.issuperset(map(type, docs)) else [doc if isinstance(doc, dict) else {} for doc in docs]


def fields_of(docs: Sequence[Any]) -> dict[str, list[Any]]:
    """Documents as columns: per field name (in order of first appearance), each document's value
    (None where it has none; a document that is not a mapping has none)."""
    docs = _mappings(docs)
    names = dict.fromkeys(chain.from_iterable(docs))  # (the names, in order of first appearance)
    return {name: list(map(dict.get, docs, repeat(name))) for name in names}


def named_fields(
    docs: Sequence[Any], names: Sequence[str], item_ids: list[str], timestamps: list[str]
) -> dict[str, list[Any]]:
    """The fields ``names`` of event documents (None where a document has none; a document that is
    not a mapping has none), with their keys' item ids and stamps as ``item_id`` and ``timestamp``."""
    docs = _mappings(docs)
    fields: dict[str, list[Any]] = {name: list(map(dict.get, docs, repeat(name))) for name in names}
    fields["item_id"], fields["timestamp"] = item_ids, timestamps
    return fields


def marked_fields(keys: Sequence[Sequence[str]], blobs: Sequence[Any]) -> dict[str, list[Any]] | None:
    """Event rows (``keys``, stored ``blobs``) as columns, as :func:`fields_of` gives their documents,
    when every one is stored behind :data:`MARK` (None otherwise): their bodies read as one JSON array."""
    if not all(blob[:1] == MARK for blob in blobs):
        return None
    fields = fields_of(json_rows([blob[1:] for blob in blobs]))
    for place, name in enumerate(_KEYED):
        fields[name] = [key[place] for key in keys]
    return fields
