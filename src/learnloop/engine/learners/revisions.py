"""A learner's revision document: what another process needs to bring its cached state up to date.

Every write of a learner's events bumps ``rev``. A write that only *appends*
(every new event later than every stored one, no stored event overwritten) is
caught up by applying the events after the cached state's latest; any other
write is listed in ``late`` with the earliest time it touched, so that a reader
replays from a checkpoint older than that. ``hi`` is the latest event time
stored, ``late`` keeps the last :data:`REVISION_LOG` such writes and ``floor``
says below which revision the list may be incomplete.

>>> doc = Revision().after_write(10.0, 20.0, rewrite=False).after_write(30.0, 30.0, rewrite=False)
>>> doc.to_doc(), doc.changed_since(1)
({'rev': 2, 'hi': 30.0}, None)
>>> late = doc.after_write(5.0, 40.0, rewrite=False)
>>> late.to_doc(), late.changed_since(1), late.changed_since(3)
({'rev': 3, 'hi': 40.0, 'late': [[3, 5.0]]}, 5.0, None)
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

__all__ = ["REVISION_LOG", "Revision", "RevisionMemo"]

#: out-of-order writes remembered in a learner's revision document
REVISION_LOG = 16
#: learners whose last revision document a :class:`RevisionMemo` keeps
MEMO_SIZE = 4096


@dataclass(frozen=True, slots=True)
class Revision:
    """``rev``: writes so far; ``hi``: the latest event time stored (None: unknown);
    ``late``: ``(revision, earliest time)`` of the last writes that did not only append;
    ``floor``: such writes at revisions up to it may be missing from ``late``."""

    rev: int = 0
    hi: float | None = None
    late: tuple[tuple[int, float], ...] = ()
    floor: int = 0

    @classmethod
    def from_doc(cls, doc: Any) -> Revision:
        """Read a stored document (None or junk: no writes yet)."""
        if not isinstance(doc, dict):
            return cls()
        rev = int(doc.get("rev", 0))
        if "log" in doc:  # the earlier format listed every write, appends included, and no ``hi``
            log = tuple((int(r), float(e)) for r, e in doc["log"])
            return cls(rev, None, log, log[0][0] - 1 if log else rev)
        hi = doc.get("hi")
        late = tuple((int(r), float(e)) for r, e in doc.get("late", ()))
        return cls(rev, None if hi is None else float(hi), late, int(doc.get("floor", 0)))

    @property
    def stored_until(self) -> float:
        """No stored event of the learner is later than this (-inf: none stored; inf: unknown)."""
        if self.rev == 0:
            return -math.inf
        return math.inf if self.hi is None else self.hi

    def to_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"rev": self.rev}
        if self.hi is not None:
            doc["hi"] = self.hi
        if self.late:
            doc["late"] = [list(entry) for entry in self.late]
        if self.floor:
            doc["floor"] = self.floor
        return doc

    def after_write(self, low: float, high: float, *, rewrite: bool) -> Revision:
        """The document after a write of events from time ``low`` to ``high``
        (``rewrite``: the write overwrote stored events)."""
        rev = self.rev + 1
        first = self.rev == 0
        appends = not rewrite and (first or (self.hi is not None and low > self.hi))
        late, floor = self.late, self.floor
        if not appends:
            late = (*late, (rev, low))
            if len(late) > REVISION_LOG:
                floor = late[-REVISION_LOG - 1][0]
                late = late[-REVISION_LOG:]
        hi = high if first else (None if self.hi is None else max(self.hi, high))
        return Revision(rev, hi, late, floor)

    def changed_since(self, revision: int) -> float | None:
        """The earliest time touched by a write after ``revision`` that did not only
        append: None when every such write appended, -inf when it cannot be known."""
        if revision < self.floor:
            return -math.inf
        lows = [low for r, low in self.late if r > revision]
        return min(lows) if lows else None


class RevisionMemo:
    """The last revision document read or written for each learner, with what it reads as:
    a document equal to it is not decoded again.

    Entries are checked by content (a document equal to the remembered one reads
    the same), so a stale entry costs a decode, never a wrong answer; the memo
    holds at most :data:`MEMO_SIZE` learners (it starts over when full).

    >>> memo = RevisionMemo()
    >>> first = memo.decode("k", {"rev": 2, "hi": 5.0})
    >>> memo.decode("k", {"rev": 2, "hi": 5.0}) is first, memo.decode("k", {"rev": 3, "hi": 6.0}).rev
    (True, 3)
    """

    def __init__(self, size: int = MEMO_SIZE) -> None:
        self._seen: dict[Hashable, tuple[dict[str, Any], Revision]] = {}
        self._size = size

    def decode(self, key: Hashable, doc: Any) -> Revision:
        """:meth:`Revision.from_doc` of the document read for ``key``."""
        found = self._seen.get(key)
        if found is not None and found[0] == doc:
            return found[1]
        revision = Revision.from_doc(doc)
        if doc.__class__ is dict:
            self.remember(key, doc, revision)
        return revision

    def remember(self, key: Hashable, doc: dict[str, Any], revision: Revision) -> None:
        """Keep ``doc`` (never changed afterwards) as ``key``'s latest document, reading as ``revision``."""
        seen = self._seen
        if len(seen) >= self._size and key not in seen:
            seen.clear()
        seen[key] = (doc, revision)
