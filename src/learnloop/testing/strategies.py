"""hypothesis strategies for learnloop content: identifiers, items, catalogs and filters.

For property-based tests of code built on learnloop. This module needs
`hypothesis <https://hypothesis.readthedocs.io>`_ installed (it is not a
dependency of learnloop itself: ``pip install hypothesis``).

Every strategy draws *valid* content: items pass the v2 item rules, a catalog
from :func:`catalogs` passes :func:`~learnloop.content.validate_catalog`
against the items it was drawn from, and a filter from :func:`filters` names
only topics of its catalog. Sizes are small by default so that examples stay
fast and shrink well; raise them through the ``max_*`` arguments.

>>> from hypothesis import given, settings
>>> from learnloop import Engine
>>> @settings(max_examples=5, deadline=None)
... @given(content())
... def test_upsert_query_round_trip(drawn):
...     items, catalog = drawn
...     engine = Engine()
...     engine.upsert_items(items)
...     engine.upsert_catalog(catalog)
...     assert engine.catalog(catalog.catalog_id) == catalog
>>> test_upsert_query_round_trip()
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import strategies as st

from learnloop.content import Catalog, Filter, Item, TheoryItemRef, Topic, TopicItemRef, TopicRef

__all__ = [
    "CONTENT_TYPES",
    "FILTER_FIELDS",
    "catalogs",
    "content",
    "filters",
    "identifiers",
    "item_databases",
    "items",
]

_ID_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-:"

#: Content types drawn for items (``None``, no content type, is drawn as well).
CONTENT_TYPES: tuple[str, ...] = ("mcq", "text", "theory", "cloze")

#: The eight conditions of a :class:`~learnloop.content.Filter`.
FILTER_FIELDS: tuple[str, ...] = tuple(Filter.model_fields)

_TAGS: tuple[str, ...] = ("easy", "hard", "algebra", "geometry", "exam:2024", "revision")


def identifiers(*, min_size: int = 1, max_size: int = 12) -> st.SearchStrategy[str]:
    """Strings that satisfy the v2 identifier rule ``^[a-zA-Z0-9_\\-:]{1,128}$``.

    >>> from hypothesis import find
    >>> find(identifiers(), lambda s: len(s) >= 3)
    '000'
    """
    if not 1 <= min_size <= max_size <= 128:
        raise ValueError(f"need 1 <= min_size <= max_size <= 128, got {min_size}, {max_size}")
    return st.text(_ID_ALPHABET, min_size=min_size, max_size=max_size)


_unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
_names = st.text(max_size=20)


@st.composite
def items(
    draw: st.DrawFn,
    *,
    item_id: str | st.SearchStrategy[str] | None = None,
    theory_ids: Sequence[str] = (),
) -> Item:
    """One :class:`~learnloop.content.Item`, every optional field present or not.

    ``theory_ids`` are the ids its ``theory_item_refs`` may point to.

    >>> from hypothesis import find
    >>> find(items(item_id="q1"), lambda item: item.scorable and item.tags)
    Item(item_id='q1', display_name='', scorable=True, difficulty=None, theory_item_refs=None, content_type=None, tags=('easy',))
    """
    if item_id is None:
        item_id = identifiers()
    the_id = draw(item_id) if isinstance(item_id, st.SearchStrategy) else item_id
    fields: dict[str, Any] = {
        "item_id": the_id,
        "display_name": draw(_names),
        "scorable": draw(st.booleans()),
    }
    if draw(st.booleans()):
        fields["difficulty"] = draw(_unit)
    if draw(st.booleans()):
        fields["content_type"] = draw(st.sampled_from(CONTENT_TYPES))
    if draw(st.booleans()):
        fields["tags"] = draw(st.lists(st.sampled_from(_TAGS), max_size=3, unique=True))
    others = [t for t in theory_ids if t != the_id]
    if len(others) > 0 and draw(st.booleans()):
        refs = draw(st.lists(st.sampled_from(others), min_size=1, max_size=2, unique=True))
        fields["theory_item_refs"] = [TheoryItemRef(item_id=r) for r in refs]
    return Item(**fields)


@st.composite
def item_databases(draw: st.DrawFn, *, min_size: int = 1, max_size: int = 10) -> list[Item]:
    """A list of items with distinct ids (an item list or a whole item database).

    >>> from hypothesis import Phase, find, settings
    >>> first_found = settings(phases=[Phase.generate], database=None, max_examples=1000)   # any such example, unshrunk
    >>> db = find(item_databases(max_size=4), lambda db: len(db) == 3, settings=first_found)
    >>> len({item.item_id for item in db})
    3
    """
    ids = draw(st.lists(identifiers(), min_size=min_size, max_size=max_size, unique=True))
    return [draw(items(item_id=i, theory_ids=ids)) for i in ids]


@st.composite
def catalogs(
    draw: st.DrawFn,
    item_ids: Sequence[str],
    *,
    catalog_id: str | st.SearchStrategy[str] | None = None,
    max_topics: int = 8,
    max_refs_per_topic: int = 5,
) -> Catalog:
    """A valid :class:`~learnloop.content.Catalog` over ``item_ids`` (at least one).

    The topics form a random forest, listed in a random order (children may
    come before their parents); only leaf topics hold item refs; prerequisites
    follow a random topological order, so they never form a cycle; an item may
    sit in several topics; some refs override the item difficulty.

    >>> from hypothesis import Phase, find, settings
    >>> first_found = settings(phases=[Phase.generate], database=None, max_examples=1000)   # any such example, unshrunk
    >>> cat = find(catalogs(["q1", "q2", "q3"]), lambda c: len(c.topics) >= 3, settings=first_found)
    >>> len(cat.topics) >= 3, cat.item_ref_count >= 1
    (True, True)
    >>> from learnloop.content import validate_catalog
    >>> validate_catalog(cat, ["q1", "q2", "q3"])
    []
    """
    if not item_ids:
        raise ValueError("catalogs() needs at least one item id")
    if catalog_id is None:
        catalog_id = identifiers()
    cid = draw(catalog_id) if isinstance(catalog_id, st.SearchStrategy) else catalog_id
    n = draw(st.integers(min_value=1, max_value=max_topics))
    topic_ids = draw(st.lists(identifiers(), min_size=n, max_size=n, unique=True))
    # topic k's parent is an earlier topic, or none
    parents = [draw(st.integers(min_value=-1, max_value=k - 1)) for k in range(n)]
    children: dict[int, list[int]] = {k: [] for k in range(n)}
    for k, p in enumerate(parents):
        if p >= 0:
            children[p].append(k)
    leaves = [k for k in range(n) if not children[k]]
    refs: dict[int, list[TopicItemRef]] = {}
    for k in leaves:
        chosen = draw(st.lists(st.sampled_from(list(item_ids)), max_size=max_refs_per_topic, unique=True))
        refs[k] = [TopicItemRef(item_id=i, difficulty=draw(st.none() | _unit)) for i in chosen]
    if not any(refs.values()):  # a catalog needs at least one item
        refs[leaves[0]] = [TopicItemRef(item_id=draw(st.sampled_from(list(item_ids))))]
    rank = draw(st.permutations(range(n)))
    position = {k: r for r, k in enumerate(rank)}
    topics = []
    for k in range(n):
        earlier = [j for j in range(n) if position[j] < position[k]]
        prereqs = draw(st.lists(st.sampled_from(earlier), max_size=2, unique=True)) if earlier else []
        kids = draw(st.permutations(children[k])) if children[k] else []
        topics.append(
            Topic(
                topic_id=topic_ids[k],
                display_name=draw(_names),
                item_refs=(tuple(refs[k]) or draw(st.sampled_from([None, ()]))) if k in refs else None,
                child_topic_refs=tuple(TopicRef(topic_id=topic_ids[c]) for c in kids) or None,
                prerequisite_topic_refs=tuple(TopicRef(topic_id=topic_ids[j]) for j in prereqs) or None,
            )
        )
    order = draw(st.permutations(topics))
    return Catalog(catalog_id=cid, display_name=draw(_names), topics=tuple(order))


@st.composite
def content(draw: st.DrawFn, *, max_items: int = 10, max_topics: int = 8) -> tuple[list[Item], Catalog]:
    """An item database and a valid catalog over (some of) its items.

    >>> from hypothesis import Phase, find, settings
    >>> first_found = settings(phases=[Phase.generate], database=None, max_examples=1000)   # any such example, unshrunk
    >>> db, cat = find(content(), lambda drawn: len(drawn[0]) == 2, settings=first_found)
    >>> {r.item_id for t in cat.topics for r in t.item_refs or ()} <= {i.item_id for i in db}
    True
    """
    db = draw(item_databases(max_size=max_items))
    catalog = draw(catalogs([i.item_id for i in db], max_topics=max_topics))
    return db, catalog


@st.composite
def filters(draw: st.DrawFn, catalog: Catalog, items: Sequence[Item] | Mapping[str, Item]) -> Filter:
    """A :class:`~learnloop.content.Filter` over ``catalog``: any mix of the eight conditions.

    Topic conditions name topics of the catalog; tag, content type and item id
    conditions mostly name values the items carry, sometimes values nothing
    carries (which match nothing).

    >>> from hypothesis import Phase, find, settings
    >>> first_found = settings(phases=[Phase.generate], database=None, max_examples=1000)   # any such example, unshrunk
    >>> db, cat = find(content(), lambda drawn: True, settings=first_found)
    >>> flt = find(filters(cat, db), lambda f: f.exclude_item_ids is not None, settings=first_found)
    >>> len(flt.exclude_item_ids) >= 1
    True
    """
    pool = list(items.values()) if isinstance(items, Mapping) else list(items)
    topic_ids = [t.topic_id for t in catalog.topics]
    tags = sorted({tag for item in pool for tag in item.tags or ()}) + ["no-such-tag"]
    ctypes = sorted({i.content_type for i in pool if i.content_type is not None}) + ["no-such-type"]
    item_ids = sorted({r.item_id for t in catalog.topics for r in t.item_refs or ()}) + ["no-such-item"]
    domain = {"topic_ids": topic_ids, "tags": tags, "content_types": ctypes, "item_ids": item_ids}
    fields = {}
    for name in FILTER_FIELDS:
        if draw(st.booleans()):
            values = domain[name.split("_", 1)[1]]
            fields[name] = tuple(draw(st.lists(st.sampled_from(values), min_size=1, max_size=3, unique=True)))
    return Filter(**fields)
