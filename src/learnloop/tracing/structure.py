"""The plain data tracing works on: a catalog's topic graph, its items, and events.

:class:`TopicStructure` is the one form of a catalog's topic graph in the
package: derived once per compiled catalog, it is read by the learner model
(ancestor chains, prerequisite successors) and by the policies (what each topic
needs mastered first). Every integer array is ``np.intp``.

tracing does not import the content package: a catalog reaches it as arrays
indexed by *topic indices* ``0..T-1`` and *item positions* ``0..n-1``.

>>> topics = TopicStructure.from_arrays([-1, 0, 0], prerequisites=[(1, 2)])
>>> topics.chain(2).tolist(), topics.successors(1).tolist(), topics.requires(2).tolist()
([2, 0, 3], [2], [1])
>>> topics.is_leaf.tolist()
[False, True, True]
>>> items = ItemParams.from_catalog(item_topic=[1, 2], difficulty=[0.5, float("nan")], scorable=[True, True], is_theory=[False, False])
>>> items.b.tolist()
[0.0, 0.0]
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import numpy as np

from ._types import ArrayLike, BoolArray, FloatArray, IntArray
from .irt import difficulty_to_b

__all__ = ["Event", "EventKind", "ItemParams", "TopicStructure"]

EventKind = Literal["attempt", "skip", "view_theory"]


@dataclass(frozen=True, eq=False)
class TopicStructure:
    """Topic hierarchy (``parent``, -1 for roots) and prerequisite edges ``(pre, topic)``.

    Derived arrays: ``chains[t]`` lists ``t``, its ancestors up to its root and
    then the virtual *overall* node ``T`` (padded with ``T``); ``depth[t]`` is
    the number of ancestors. The prerequisite successors of each topic
    (``succ_ptr``/``succ_idx``) and each topic's *requirements* — its own
    prerequisites and its ancestors', the topics to master before it
    (``req_ptr``/``req_idx``, sorted) — are kept in CSR form;
    ``req_owner[k]`` is the topic owning ``req_idx[k]``.
    """

    parent: IntArray
    prerequisites: IntArray
    chains: IntArray
    depth: IntArray
    succ_ptr: IntArray
    succ_idx: IntArray
    req_ptr: IntArray
    req_idx: IntArray
    req_owner: IntArray
    is_leaf: BoolArray

    @property
    def n_topics(self) -> int:
        """Number of topics ``T`` (the overall node has index ``T``)."""
        return int(self.parent.size)

    @classmethod
    def from_arrays(cls, topic_parent: ArrayLike, prerequisites: ArrayLike = ()) -> TopicStructure:
        """Validate the arrays (every problem listed at once) and derive the rest."""
        parent = np.asarray(topic_parent, dtype=np.intp).ravel()
        n = parent.size
        pre = np.asarray(prerequisites, dtype=np.intp).reshape(-1, 2)
        problems = []
        bad = np.flatnonzero((parent < -1) | (parent >= n) | (parent == np.arange(n)))
        if bad.size:
            problems.append(f"topics {bad.tolist()} have an invalid parent")
        if pre.size and (pre.min() < 0 or pre.max() >= n):
            problems.append(f"prerequisite edges refer to topics outside 0..{n - 1}")
        if problems:
            raise ValueError("; ".join(problems))
        parents = parent.tolist()
        chains_list: list[list[int]] = []
        for t in range(n):
            chain = [t]
            node = parents[t]
            while node >= 0:
                if len(chain) > n:
                    raise ValueError(f"the topic hierarchy has a cycle through topic {t}")
                chain.append(node)
                node = parents[node]
            chain.append(n)
            chains_list.append(chain)
        width = max((len(c) for c in chains_list), default=1)
        chains = np.full((n, width), n, dtype=np.intp)
        for t, chain in enumerate(chains_list):
            chains[t, : len(chain)] = chain
        depth = np.array([len(c) - 2 for c in chains_list], dtype=np.intp)
        succ_ptr, succ_idx = _csr(pre[:, 0], pre[:, 1], n)
        # requirements: the prerequisites of the topic and of each of its ancestors
        direct: list[set[int]] = [set() for _ in range(n)]
        for before, after in pre.tolist():
            direct[after].add(before)
        owners: list[int] = []
        needed: list[int] = []
        for t, chain in enumerate(chains_list):
            reqs = sorted(set().union(*(direct[a] for a in chain[:-1])))
            owners.extend([t] * len(reqs))
            needed.extend(reqs)
        req_owner = np.asarray(owners, dtype=np.intp)
        req_ptr, req_idx = _csr(req_owner, np.asarray(needed, dtype=np.intp), n)
        is_leaf = np.ones(n, dtype=bool)
        is_leaf[parent[parent >= 0]] = False
        return cls(
            parent=parent,
            prerequisites=pre,
            chains=chains,
            depth=depth,
            succ_ptr=succ_ptr,
            succ_idx=succ_idx,
            req_ptr=req_ptr,
            req_idx=req_idx,
            req_owner=req_owner,
            is_leaf=is_leaf,
        )

    def chain(self, topic: int) -> IntArray:
        """``topic``, its ancestors, then the overall node."""
        return self.chains[topic, : self.depth[topic] + 2]

    def ancestors(self, topic: int) -> IntArray:
        """The parent, grandparent, ... of ``topic``."""
        return self.chains[topic, 1 : self.depth[topic] + 1]

    def successors(self, topic: int) -> IntArray:
        """Topics that have ``topic`` as a prerequisite."""
        return self.succ_idx[self.succ_ptr[topic] : self.succ_ptr[topic + 1]]

    def requires(self, topic: int) -> IntArray:
        """Topics to master before ``topic``: its prerequisites and its ancestors' (sorted)."""
        return self.req_idx[self.req_ptr[topic] : self.req_ptr[topic + 1]]


@dataclass(frozen=True, eq=False)
class ItemParams:
    """Per item position: leaf topic, IRT difficulty ``b`` and discrimination ``a``, flags."""

    topic: IntArray
    b: FloatArray
    a: FloatArray
    scorable: BoolArray
    is_theory: BoolArray

    @property
    def n_items(self) -> int:
        """Number of item positions."""
        return int(self.topic.size)

    @classmethod
    def from_catalog(
        cls,
        *,
        item_topic: ArrayLike,
        difficulty: ArrayLike,
        scorable: ArrayLike,
        is_theory: ArrayLike,
        discrimination: ArrayLike | None = None,
    ) -> ItemParams:
        """From the content package's arrays; ``difficulty`` is the cold-start d (NaN = 0.5)."""
        topic = np.asarray(item_topic, dtype=np.intp).ravel()
        n = topic.size
        b = difficulty_to_b(np.asarray(difficulty, dtype=np.float64).ravel())
        a = np.ones(n) if discrimination is None else np.asarray(discrimination, dtype=np.float64).ravel()
        sc = np.asarray(scorable, dtype=bool).ravel()
        th = np.asarray(is_theory, dtype=bool).ravel()
        sizes = {"difficulty": b.size, "scorable": sc.size, "is_theory": th.size, "discrimination": a.size}
        problems = [f"{k} has {v} entries, item_topic has {n}" for k, v in sizes.items() if v != n]
        if n and topic.min() < 0:
            problems.append("item_topic must be non-negative")
        if np.any(~(a > 0)):
            problems.append("discrimination must be positive")
        if problems:
            raise ValueError("; ".join(problems))
        return cls(topic=topic, b=b, a=a, scorable=sc, is_theory=th)

    def with_calibration(self, b: ArrayLike, a: ArrayLike | None = None) -> ItemParams:
        """A copy with calibrated ``b`` (and ``a``)."""
        new_a = self.a if a is None else np.asarray(a, dtype=np.float64)
        return ItemParams(self.topic, np.asarray(b, dtype=np.float64), new_a, self.scorable, self.is_theory)


@dataclass(frozen=True, slots=True)
class Event:
    """One learner interaction with the item at position ``item``.

    ``topic`` is the topic index where the learner was active (None: the
    item's own topic). ``timestamp`` is an aware datetime or epoch seconds.
    ``score`` is required for an attempt on a scorable item and ignored
    otherwise; ``fraction_completed`` applies to ``view_theory`` (None counts
    as fully viewed). ``practice`` is False for an interaction the learner is
    not expected to learn from (an assessment item without feedback): the
    model's ``practice_gain`` is then not applied.
    """

    item: int
    kind: EventKind
    timestamp: datetime | float
    score: float | None = None
    topic: int | None = None
    time_spent_ms: int = 0
    fraction_completed: float | None = None
    practice: bool = True


def _csr(rows: IntArray, cols: IntArray, n: int) -> tuple[IntArray, IntArray]:
    """CSR ``(ptr, idx)`` of the pairs ``(rows[k], cols[k])``, grouped by row, stable."""
    order = np.argsort(rows, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.intp)
    np.cumsum(np.bincount(rows, minlength=n), out=ptr[1:])
    return ptr, cols[order].astype(np.intp, copy=True)
