"""Catalogs: topics that give items a hierarchy, with prerequisites between topics.

A :class:`Catalog` is the contract shape. :func:`validate_catalog` reports every
rule it breaks at once; :func:`compile_catalog` turns a valid catalog into a
:class:`CatalogIndex`: the topic graph (hierarchy and prerequisite edges kept
apart, as two networkx digraphs) and the catalog's *item order*, the topic item
refs taken depth-first through the hierarchy in the order given, as numpy
arrays that every per-request computation indexes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, TypeVar

import networkx as nx
import numpy as np
from pydantic import BaseModel, ConfigDict

from learnloop._types import BoolArray, FloatArray, Identifier, IntArray
from learnloop.content.item import Item

__all__ = [
    "Catalog",
    "CatalogIndex",
    "Topic",
    "TopicItemRef",
    "TopicRef",
    "compile_catalog",
    "validate_catalog",
]

_CLOSED = ConfigDict(extra="forbid", frozen=True)


class TopicRef(BaseModel):
    model_config = _CLOSED

    topic_id: Identifier


class TopicItemRef(BaseModel):
    """An item of a topic; ``difficulty`` (0..1) overrides the item's for this topic."""

    model_config = _CLOSED

    item_id: Identifier
    difficulty: float | None = None


class Topic(BaseModel):
    model_config = _CLOSED

    topic_id: Identifier
    display_name: str
    item_refs: tuple[TopicItemRef, ...] | None = None
    child_topic_refs: tuple[TopicRef, ...] | None = None
    prerequisite_topic_refs: tuple[TopicRef, ...] | None = None


class Catalog(BaseModel):
    """The complete set of recommendable content, typically one course."""

    model_config = _CLOSED

    catalog_id: Identifier
    display_name: str
    topics: tuple[Topic, ...]

    @property
    def item_ref_count(self) -> int:
        return sum(len(t.item_refs or ()) for t in self.topics)


def _cycles(graph: nx.DiGraph) -> list[list[str]]:
    """Every strongly connected component that holds a cycle (self-loops included)."""
    found = []
    for component in nx.strongly_connected_components(graph):
        if len(component) > 1:
            found.append(sorted(component))
        else:
            (node,) = component
            if graph.has_edge(node, node):
                found.append([node])
    return sorted(found)


def validate_catalog(catalog: Catalog, known_item_ids: Iterable[str] | Mapping[str, object]) -> list[str]:
    """Every problem of ``catalog`` against the item database, in one list (empty when valid).

    >>> cat = Catalog(catalog_id="c", display_name="C", topics=[
    ...     Topic(topic_id="a", display_name="A", item_refs=[TopicItemRef(item_id="x", difficulty=1.5)],
    ...           child_topic_refs=[TopicRef(topic_id="b")]),
    ...     Topic(topic_id="b", display_name="B", prerequisite_topic_refs=[TopicRef(topic_id="zz")])])
    >>> for problem in validate_catalog(cat, known_item_ids=[]):
    ...     print(problem)
    topic 'a': unknown item 'x'
    topic 'a': difficulty of item 'x' must be within 0..1, got 1.5
    topic 'a': holds both item_refs and child_topic_refs
    topic 'b': unknown prerequisite topic 'zz'
    """
    known = known_item_ids if isinstance(known_item_ids, Mapping) else set(known_item_ids)
    problems: list[str] = []
    if not catalog.topics:
        problems.append("catalog has no topic")
    if catalog.item_ref_count == 0:
        problems.append("catalog has no item: at least one topic needs item_refs")

    counts = Counter(t.topic_id for t in catalog.topics)
    for topic_id, n in counts.items():
        if n > 1:
            problems.append(f"duplicate topic id '{topic_id}' ({n} times)")
    topic_ids = set(counts)

    parents: dict[str, list[str]] = defaultdict(list)
    hierarchy = nx.DiGraph()
    prerequisites = nx.DiGraph()
    for topic in catalog.topics:
        tid = topic.topic_id
        seen_items: set[str] = set()
        for ref in topic.item_refs or ():
            if ref.item_id not in known:
                problems.append(f"topic '{tid}': unknown item '{ref.item_id}'")
            if ref.item_id in seen_items:
                problems.append(f"topic '{tid}': item '{ref.item_id}' listed twice")
            seen_items.add(ref.item_id)
            if ref.difficulty is not None and not 0.0 <= ref.difficulty <= 1.0:
                problems.append(
                    f"topic '{tid}': difficulty of item '{ref.item_id}' must be within 0..1, got {ref.difficulty}"
                )
        if topic.item_refs and topic.child_topic_refs:
            problems.append(f"topic '{tid}': holds both item_refs and child_topic_refs")
        seen_children: set[str] = set()
        for child in topic.child_topic_refs or ():
            if child.topic_id in seen_children:
                problems.append(f"topic '{tid}': child topic '{child.topic_id}' listed twice")
                continue
            seen_children.add(child.topic_id)
            if child.topic_id not in topic_ids:
                problems.append(f"topic '{tid}': unknown child topic '{child.topic_id}'")
            else:
                parents[child.topic_id].append(tid)
                hierarchy.add_edge(tid, child.topic_id)
        seen_prerequisites: set[str] = set()
        for pre in topic.prerequisite_topic_refs or ():
            if pre.topic_id in seen_prerequisites:
                problems.append(f"topic '{tid}': prerequisite topic '{pre.topic_id}' listed twice")
                continue
            seen_prerequisites.add(pre.topic_id)
            if pre.topic_id not in topic_ids:
                problems.append(f"topic '{tid}': unknown prerequisite topic '{pre.topic_id}'")
            else:
                prerequisites.add_edge(pre.topic_id, tid)

    for child_id, its_parents in parents.items():
        if len(its_parents) > 1:
            listed = ", ".join(f"'{p}'" for p in its_parents)
            problems.append(f"topic '{child_id}' has {len(its_parents)} parents: {listed}")
    for cycle in _cycles(hierarchy):
        problems.append("hierarchy cycle through topics " + ", ".join(f"'{t}'" for t in cycle))
    for cycle in _cycles(prerequisites):
        problems.append("prerequisite cycle through topics " + ", ".join(f"'{t}'" for t in cycle))
    return problems


_T = TypeVar("_T")


@dataclass(frozen=True, eq=False)
class _KeyPositions:
    """Positions grouped by key (item id, tag, content type), for vectorised lookups.

    ``flat`` holds the positions of key 0, then of key 1, ...; key ``k`` has
    ``counts[k]`` positions from ``flat[starts[k]]`` on.
    """

    codes: Mapping[str, int]
    counts: IntArray
    starts: IntArray
    flat: IntArray

    @classmethod
    def build(cls, groups: Mapping[str, list[int]]) -> _KeyPositions:
        codes = {key: k for k, key in enumerate(groups)}
        counts = np.fromiter((len(v) for v in groups.values()), dtype=np.intp, count=len(groups))
        starts = np.zeros(len(groups), dtype=np.intp)
        np.cumsum(counts[:-1], out=starts[1:])
        flat = [p for v in groups.values() for p in v]
        return cls(codes=codes, counts=counts, starts=starts, flat=np.asarray(flat, dtype=np.intp))

    def mask(self, n: int, keys: Iterable[str]) -> BoolArray:
        """Positions of any of ``keys`` (unknown keys match nothing); the work grows with
        the positions of the keys given, not with the catalog."""
        codes = np.fromiter(map(self.codes.get, keys, repeat(-1)), dtype=np.intp)
        codes = codes[codes >= 0]
        mask = np.zeros(n, dtype=bool)
        if codes.size:
            lengths = self.counts[codes]
            # the ranges flat[starts[c] : starts[c] + counts[c]], gathered without a Python loop
            ends = np.cumsum(lengths)
            offsets = np.repeat(self.starts[codes] - ends + lengths, lengths)
            mask[self.flat[offsets + np.arange(int(ends[-1]))]] = True
        return mask


@dataclass(frozen=True, eq=False)
class CatalogIndex:
    """A compiled catalog: the topic graph and the item order as numpy arrays.

    Positions ``0..n-1`` are the catalog's topic item refs in depth-first order
    through the hierarchy; topics ``0..T-1`` are in the same pre-order, so the
    positions under a topic (its sub-topics included) form the contiguous range
    ``topic_start[t]:topic_end[t]``.
    """

    catalog: Catalog
    topic_ids: tuple[str, ...]
    topic_index: Mapping[str, int]
    topic_parent: IntArray
    topic_depth: IntArray
    topic_start: IntArray
    topic_end: IntArray
    hierarchy: nx.DiGraph
    prerequisites: nx.DiGraph
    prerequisite_edges: IntArray
    item_ids: tuple[str, ...]
    item_topic: IntArray
    difficulty: FloatArray
    scorable: BoolArray
    is_theory: BoolArray
    item_positions: Mapping[str, IntArray]
    #: per position, the item's number among the catalog's distinct items (an item in
    #: several topics has one number at each of its positions)
    item_code: IntArray
    tag_positions: Mapping[str, IntArray]
    content_type_positions: Mapping[str, IntArray]
    theory_refs: Mapping[str, tuple[str, ...]]
    _ref_position: Mapping[tuple[str, str], int] = field(repr=False)
    _items: _KeyPositions = field(repr=False)
    _tags: _KeyPositions = field(repr=False)
    _content_types: _KeyPositions = field(repr=False)
    _derived: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def catalog_id(self) -> str:
        return self.catalog.catalog_id

    def derived(self, name: str, make: Callable[[CatalogIndex], _T]) -> _T:
        """A structure derived from this compiled catalog, made once and kept with it.

        The topic graph's one derived form (:class:`learnloop.tracing.TopicStructure`,
        read by the learner model and the policies alike) and the policies'
        item-dependent arrays are computed once per compiled catalog through
        this, not once per use.
        """
        found = self._derived.get(name)
        if found is None:
            found = self._derived.setdefault(name, make(self))
        return found  # type: ignore[no-any-return]

    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    @property
    def n_topics(self) -> int:
        return len(self.topic_ids)

    def position(self, item_id: str, topic_id: str | None = None) -> int | None:
        """The position of ``item_id`` (in ``topic_id`` when given; else its first position)."""
        if topic_id is not None:
            return self._ref_position.get((topic_id, item_id))
        found = self.item_positions.get(item_id)
        return None if found is None else int(found[0])

    def subtree_mask(self, topic_ids: Iterable[str]) -> BoolArray:
        """Positions under any of ``topic_ids`` (sub-topics included)."""
        topics = np.fromiter((self.topic_index[t] for t in topic_ids), dtype=np.intp)
        n = self.n_items
        if len(topics) <= 8:  # a few slices beat the counting below
            mask = np.zeros(n, dtype=bool)
            for t in topics:
                mask[self.topic_start[t] : self.topic_end[t]] = True
            return mask
        # +1 where a selected range opens, -1 where it closes; covered where the sum is > 0
        delta = np.bincount(self.topic_start[topics], minlength=n + 1) - np.bincount(
            self.topic_end[topics], minlength=n + 1
        )
        return np.cumsum(delta[:n]) > 0

    def item_mask(self, item_ids: Iterable[str]) -> BoolArray:
        """Positions of any of ``item_ids`` (ids not in the catalog match nothing)."""
        return self._items.mask(self.n_items, item_ids)

    def tag_mask(self, tags: Iterable[str]) -> BoolArray:
        """Positions of items carrying at least one of ``tags``."""
        return self._tags.mask(self.n_items, tags)

    def content_type_mask(self, content_types: Iterable[str]) -> BoolArray:
        """Positions of items with one of ``content_types``."""
        return self._content_types.mask(self.n_items, content_types)

    def topic_ancestors(self, topic: int) -> list[int]:
        """Indices of the parent, grandparent, ... of topic index ``topic``."""
        out = []
        parent = int(self.topic_parent[topic])
        while parent >= 0:
            out.append(parent)
            parent = int(self.topic_parent[parent])
        return out


def _positions(groups: Mapping[str, list[int]]) -> dict[str, IntArray]:
    return {key: np.asarray(value, dtype=np.intp) for key, value in groups.items()}


def compile_catalog(catalog: Catalog, items: Mapping[str, Item]) -> CatalogIndex:
    """Compile a *valid* catalog against the item database ``items``.

    Refs to items no longer in the database (deleted after the catalog was
    stored) are left out of the item order.

    >>> from learnloop.content.item import Item
    >>> items = {i: Item(item_id=i, display_name=i, scorable=True) for i in "xyz"}
    >>> cat = Catalog(catalog_id="c", display_name="C", topics=[
    ...     Topic(topic_id="root", display_name="R", child_topic_refs=[TopicRef(topic_id="b"), TopicRef(topic_id="a")]),
    ...     Topic(topic_id="a", display_name="A", item_refs=[TopicItemRef(item_id="x")]),
    ...     Topic(topic_id="b", display_name="B", item_refs=[TopicItemRef(item_id="y"), TopicItemRef(item_id="z")],
    ...           prerequisite_topic_refs=[TopicRef(topic_id="a")])])
    >>> index = compile_catalog(cat, items)
    >>> index.topic_ids, index.item_ids
    (('root', 'b', 'a'), ('y', 'z', 'x'))
    >>> index.topic_start.tolist(), index.topic_end.tolist()
    ([0, 0, 2], [3, 2, 3])
    """
    by_id = {t.topic_id: t for t in catalog.topics}
    has_parent = {ref.topic_id for t in catalog.topics for ref in t.child_topic_refs or ()}
    # an item that links itself is not made theory by that link (nor its own theory after a failure)
    theory_targets = {
        ref.item_id for item in items.values() for ref in item.theory_item_refs or () if ref.item_id != item.item_id
    }

    topic_index: dict[str, int] = {}
    parent_of: list[int] = []
    depth_of: list[int] = []
    start: list[int] = []
    end: list[int] = []
    item_ids: list[str] = []
    item_topic: list[int] = []
    difficulty: list[float] = []
    scorable: list[bool] = []
    is_theory: list[bool] = []
    item_groups: dict[str, list[int]] = defaultdict(list)
    tag_groups: dict[str, list[int]] = defaultdict(list)
    ctype_groups: dict[str, list[int]] = defaultdict(list)
    ref_position: dict[tuple[str, str], int] = {}

    # iterative depth-first pre-order walk, children in the order given;
    # a (topic, None) entry closes the topic's range of positions
    stack: list[tuple[str, int, int] | tuple[str, None, None]] = [
        (t.topic_id, -1, 0) for t in reversed(catalog.topics) if t.topic_id not in has_parent
    ]
    while stack:
        tid, parent, depth = stack.pop()
        if parent is None or depth is None:
            end[topic_index[tid]] = len(item_ids)
            continue
        t = len(topic_index)
        topic_index[tid] = t
        parent_of.append(parent)
        depth_of.append(depth)
        start.append(len(item_ids))
        end.append(-1)
        topic = by_id[tid]
        for ref in topic.item_refs or ():
            item = items.get(ref.item_id)
            if item is None:
                continue
            pos = len(item_ids)
            item_ids.append(item.item_id)
            item_topic.append(t)
            d = ref.difficulty if ref.difficulty is not None else item.difficulty
            difficulty.append(np.nan if d is None else d)
            scorable.append(item.scorable)
            is_theory.append(item.is_theory or item.item_id in theory_targets)
            item_groups[item.item_id].append(pos)
            for tag in item.tags or ():
                tag_groups[tag].append(pos)
            if item.content_type is not None:
                ctype_groups[item.content_type].append(pos)
            ref_position[(tid, item.item_id)] = pos
        stack.append((tid, None, None))
        for child in reversed(topic.child_topic_refs or ()):
            stack.append((child.topic_id, t, depth + 1))

    topic_ids = tuple(topic_index)
    hierarchy = nx.DiGraph()
    hierarchy.add_nodes_from(topic_ids)
    prerequisites = nx.DiGraph()
    prerequisites.add_nodes_from(topic_ids)
    edges: list[tuple[int, int]] = []
    for topic in catalog.topics:
        for child in topic.child_topic_refs or ():
            hierarchy.add_edge(topic.topic_id, child.topic_id)
        for pre in topic.prerequisite_topic_refs or ():
            prerequisites.add_edge(pre.topic_id, topic.topic_id)
            edges.append((topic_index[pre.topic_id], topic_index[topic.topic_id]))

    theory_refs = {
        item_id: refs
        for item_id in item_groups
        if (refs := tuple(r.item_id for r in items[item_id].theory_item_refs or () if r.item_id != item_id))
    }
    return CatalogIndex(
        catalog=catalog,
        topic_ids=topic_ids,
        topic_index=topic_index,
        topic_parent=np.asarray(parent_of, dtype=np.intp),
        topic_depth=np.asarray(depth_of, dtype=np.intp),
        topic_start=np.asarray(start, dtype=np.intp),
        topic_end=np.asarray(end, dtype=np.intp),
        hierarchy=hierarchy,
        prerequisites=prerequisites,
        prerequisite_edges=np.asarray(edges, dtype=np.intp).reshape(-1, 2),
        item_ids=tuple(item_ids),
        item_topic=np.asarray(item_topic, dtype=np.intp),
        difficulty=np.asarray(difficulty, dtype=np.float64),
        scorable=np.asarray(scorable, dtype=bool),
        is_theory=np.asarray(is_theory, dtype=bool),
        item_positions=_positions(item_groups),
        item_code=_item_codes(item_ids, item_groups),
        tag_positions=_positions(tag_groups),
        content_type_positions=_positions(ctype_groups),
        theory_refs=theory_refs,
        _ref_position=ref_position,
        _items=_KeyPositions.build(item_groups),
        _tags=_KeyPositions.build(tag_groups),
        _content_types=_KeyPositions.build(ctype_groups),
    )


def _item_codes(item_ids: Sequence[str], groups: Mapping[str, Any]) -> IntArray:
    codes = {item_id: k for k, item_id in enumerate(groups)}
    return np.fromiter((codes[i] for i in item_ids), dtype=np.intp, count=len(item_ids))
