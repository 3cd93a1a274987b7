"""How a session is laid out in the ``sessions`` table: one document, and the items it assessed in blocks.

An assessment session lists every item it has given, in order, and the list
only grows. Kept whole in the session document, it would be decoded, encoded
and written again by every step, so a step would cost more the longer the
assessment ran. Instead, every full block of :data:`BLOCK` items is written
once, as a row of its own keyed ``(user, "<session id>.<block number>")``, and the
session document keeps the items after the last full block (``assessed``) and
the number of blocks written (``assessed_blocks``). A block, once written, is
never written again, so the rows a document names can be read after it, in or
out of a transaction, and the blocks an engine has seen need not be read again.

A document without ``assessed_blocks`` (every session before its first full
block, and documents written before blocks existed) holds the whole list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from learnloop.engine import records
from learnloop.store import Store
from learnloop.store.base import Key, json_doc

__all__ = ["BLOCK", "joined_doc", "split_doc", "stored_blocks"]

#: items per block row
BLOCK = 32


def stored_blocks(doc: Mapping[str, Any]) -> int:
    """The number of block rows the stored session document ``doc`` names."""
    return int(doc.get("assessed_blocks", 0))


def split_doc(
    doc: dict[str, Any], assessed: Sequence[str], blocks_before: int
) -> tuple[dict[str, Any], list[tuple[Key, dict[str, Any]]]]:
    """The document to store for ``doc`` (whose ``assessed`` is the whole list ``assessed``),
    and the block rows to write with it, when ``blocks_before`` blocks are stored already."""
    blocks = len(assessed) // BLOCK
    if not blocks:
        return doc, []
    session_id, user_id = doc["session_id"], doc["spec"]["user_id"]
    rows = [
        (records.block_key(user_id, session_id, block), {"items": list(assessed[block * BLOCK : (block + 1) * BLOCK])})
        for block in range(blocks_before, blocks)
    ]
    doc["assessed"] = list(assessed[blocks * BLOCK :])
    doc["assessed_blocks"] = blocks
    return doc, rows


def joined_doc(store: Store, app: str, doc: Mapping[str, Any], known: Sequence[str] = ()) -> dict[str, Any]:
    """The stored document ``doc`` with its whole ``assessed`` list (its blocks read from ``store``).

    ``known``: the items the session had assessed at an earlier state (the list only grows and a
    block never changes, so the blocks it fills are not read again: another process's step reads
    the blocks written since this process's last one).
    """
    out = dict(doc)
    blocks = stored_blocks(doc)
    if not blocks:
        return out
    session_id, user_id = doc["session_id"], doc["spec"]["user_id"]
    have = min(len(known) // BLOCK, blocks)
    keys = [records.block_key(user_id, session_id, block) for block in range(have, blocks)]
    found = records.session_blocks(store, app, keys) if keys else {}
    items: list[str] = list(known[: have * BLOCK])
    for key in keys:
        row = found.get(key)
        if row is None:
            raise RuntimeError(f"store damaged: session '{session_id}': its assessed items block '{key[1]}' is missing")
        items.extend(json_doc(row)["items"])
    out["assessed"] = items + list(doc["assessed"])
    del out["assessed_blocks"]
    return out
