"""What each content write touched, so that a catalog compiled before it is kept when it touched
nothing the catalog is made of.

Every content write bumps the application's content version (``meta`` document
``content_version``, read by every step). Beside it, the ``content_changes``
document lists, for the last :data:`CHANGES_LOG` writes, the names each one
touched: ``i:<item id>`` for an item written or deleted, ``c:<catalog id>`` for a
catalog, its learner options or its calibration; a write touching more than
:data:`NAMES_PER_WRITE` names is listed as touching anything. A catalog
compiled at version ``v`` is still current at ``V`` when every write after ``v``
up to ``V`` is listed and none touched the catalog or an item it refers to;
otherwise (a write not listed, e.g. by an earlier version of the library, or one
too old to be kept) it is compiled again, as it always was.

>>> doc = logged(logged(None, 4, ["i:q1"]), 5, ["c:other"])
>>> doc
{'log': [[4, ['i:q1']], [5, ['c:other']]]}
>>> untouched(doc, 3, 5, "mine", {"q2"}), untouched(doc, 3, 5, "mine", {"q1"}), untouched(doc, 2, 5, "mine", {"q2"})
(True, False, False)
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from typing import Any

__all__ = ["CHANGES_LOG", "NAMES_PER_WRITE", "logged", "touched", "untouched"]

#: content writes listed
CHANGES_LOG = 32
#: names listed for one write (a write touching more is listed as touching anything)
NAMES_PER_WRITE = 64


def touched(items: Iterable[str] = (), catalogs: Iterable[str] = ()) -> list[str]:
    """The names of the items and catalogs a write touches."""
    return [*(f"i:{item}" for item in items), *(f"c:{catalog}" for catalog in catalogs)]


def logged(doc: Any, version: int, names: Iterable[str] | None) -> dict[str, Any]:
    """The changes document ``doc`` after the write that made content ``version``, touching ``names``
    (None: anything)."""
    log = [entry for entry in doc.get("log", ()) if entry[0] < version] if isinstance(doc, dict) else []
    listed = None if names is None else sorted(set(names))
    log.append([version, listed if listed is not None and len(listed) <= NAMES_PER_WRITE else None])
    return {"log": log[-CHANGES_LOG:]}


def untouched(doc: Any, since: int, until: int, catalog_id: str, item_ids: Container[str]) -> bool:
    """Whether the content writes after version ``since`` up to ``until`` are all listed in ``doc`` and
    none touched the catalog ``catalog_id`` or one of ``item_ids``."""
    if not isinstance(doc, dict):
        return False
    seen = set()
    for version, names in doc.get("log", ()):
        if since < version <= until:
            if names is None:
                return False
            for name in names:
                if name[2:] == catalog_id if name.startswith("c:") else name[2:] in item_ids:
                    return False
            seen.add(version)
    return len(seen) == until - since
