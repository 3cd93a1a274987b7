"""How the v1 dialect maps onto the one content model: ids, assets, views, paths, filters.

- Every v1 id (asset, view, user) becomes a v2 identifier by :func:`internal_id`:
  an id that already is one is kept; any other is replaced by a prefixed hash.
- An asset becomes an :class:`~learnloop.content.Item` (:func:`asset_to_item`);
  a view becomes a :class:`~learnloop.content.Catalog` whose topics are the
  view's paths (:func:`view_to_catalog`).
- An asset filter becomes a :class:`~learnloop.content.Filter` over the items
  of the view (:func:`asset_filter`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from learnloop._types import IDENTIFIER_PATTERN
from learnloop.content import Catalog, Filter, Item, Topic, TopicItemRef, TopicRef

__all__ = [
    "PathNode",
    "asset_filter",
    "asset_to_item",
    "internal_id",
    "internal_tag",
    "is_under",
    "path_problem",
    "path_segments",
    "view_to_catalog",
]

_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)
_SIMPLE = re.compile(r"[a-zA-Z0-9_\-]+")


def _digest(text: str, n: int = 40) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


def internal_id(v1_id: str) -> str:
    """The v2 identifier of a v1 id.

    An id that matches the v2 identifier rule and holds no ``::`` is kept as
    is; any other becomes ``h::`` and 40 hex digits of its SHA-256. Kept ids
    never contain ``::`` and hashed ones always do, so two v1 ids never share
    an internal id (short of a hash collision).

    >>> internal_id("q1"), internal_id("unit-3:q1")
    ('q1', 'unit-3:q1')
    >>> internal_id("math/q 1")
    'h::df74f530a97c53cfb09bd7cfc49e14649df00ee0'
    >>> internal_id("h::x").startswith("h::") and internal_id("h::x") != "h::x"
    True
    """
    if _IDENTIFIER.fullmatch(v1_id) and "::" not in v1_id:
        return v1_id
    return "h::" + _digest(v1_id)


def internal_tag(name: str, value: str) -> str:
    """The item tag of a v1 ``{name, value}`` tag.

    ``name:value`` when both are plain words (letters, digits, ``_``, ``-``);
    else ``h::`` and a hash of the pair.

    >>> internal_tag("content_type", "video")
    'content_type:video'
    >>> internal_tag("level", "A 1").startswith("h::")
    True
    """
    plain = f"{name}:{value}"
    if _SIMPLE.fullmatch(name) and _SIMPLE.fullmatch(value) and len(plain) <= 128:
        return plain
    return "h::" + _digest(json.dumps([name, value], ensure_ascii=False))


# -- paths ----------------------------------------------------------------------------------


def path_problem(path: str) -> str | None:
    """What is wrong with a v1 path (None when it is valid).

    A path starts with ``/`` and has no empty segment; one trailing ``/`` is
    allowed and ignored.

    >>> [path_problem(p) for p in ["/", "/a/b", "/a/b/"]]
    [None, None, None]
    >>> path_problem("a/b")
    "must start with '/'"
    >>> path_problem("/a//b")
    "must not contain an empty segment ('//')"
    """
    if not path.startswith("/"):
        return "must start with '/'"
    inner = path[1:-1] if path.endswith("/") and len(path) > 1 else path[1:]
    if inner and any(not segment for segment in inner.split("/")):
        return "must not contain an empty segment ('//')"
    return None


def path_segments(path: str) -> tuple[str, ...]:
    """The segments of a valid path.

    >>> path_segments("/"), path_segments("/math/algebra/")
    ((), ('math', 'algebra'))
    """
    return tuple(segment for segment in path.split("/") if segment)


def is_under(path: Sequence[str], ancestor: Sequence[str]) -> bool:
    """Whether ``path`` is ``ancestor`` or below it, segment by segment.

    >>> is_under(("math", "algebra"), ("math",)), is_under(("mathematics",), ("math",))
    (True, False)
    """
    return tuple(path[: len(ancestor)]) == tuple(ancestor)


# -- assets ---------------------------------------------------------------------------------


def asset_to_item(asset: Mapping[str, Any]) -> Item:
    """The item of a stored v1 asset document.

    The item's ``content_type`` is the asset type (``exercise`` or
    ``theory``), an exercise is scorable, and every tag, the reserved
    ``content_type`` tag included, becomes an item tag. The original asset id
    is the item's display name.

    >>> item = asset_to_item({"id": "q1", "type": "theory", "tags": [{"name": "content_type", "value": "video"}]})
    >>> item.item_id, item.scorable, item.content_type, item.tags
    ('q1', False, 'theory', ('content_type:video',))
    """
    tags = tuple(dict.fromkeys(internal_tag(t["name"], t["value"]) for t in asset.get("tags") or ()))
    return Item(
        item_id=internal_id(asset["id"]),
        display_name=asset["id"],
        scorable=asset["type"] == "exercise",
        content_type=asset["type"],
        tags=tags or None,
    )


# -- views ----------------------------------------------------------------------------------


@dataclass(eq=False)
class PathNode:
    """A topic of a view: one path (one run of it, in an ordered view) and what lies below."""

    segments: tuple[str, ...]
    topic_id: str
    # ("node", PathNode) or ("items", [(asset_id, partner_difficulty)]) in order
    entries: list[tuple[str, Any]] = field(default_factory=list)


def _topic_base(segments: tuple[str, ...]) -> str:
    joined = ":".join(segments)
    if all(_SIMPLE.fullmatch(s) for s in segments) and len(joined) <= 96:
        return "t:" + joined
    return "t::" + _digest(json.dumps(list(segments), ensure_ascii=False), 32)


def _build_tree(assets: Sequence[Mapping[str, Any]], *, ordered: bool) -> PathNode:
    root = PathNode((), _topic_base(()))
    runs: dict[tuple[str, ...], int] = {(): 1}
    for asset in assets:
        node = root
        segments = path_segments(asset["path"])
        for depth in range(len(segments)):
            prefix = segments[: depth + 1]
            child = None
            if ordered:
                last = node.entries[-1] if node.entries else None
                if last is not None and last[0] == "node" and last[1].segments == prefix:
                    child = last[1]
            else:
                child = next((n for kind, n in node.entries if kind == "node" and n.segments == prefix), None)
            if child is None:
                run = runs.get(prefix, 0)
                runs[prefix] = run + 1
                topic_id = _topic_base(prefix) + (f"::{run}" if run else "")
                child = PathNode(prefix, topic_id)
                node.entries.append(("node", child))
            node = child
        difficulty = (asset.get("attributes") or {}).get("partner_difficulty")
        ref = (internal_id(asset["asset_id"]), difficulty)
        if ordered:
            last = node.entries[-1] if node.entries else None
            items = last[1] if last is not None and last[0] == "items" else None
        else:
            items = next((group for kind, group in node.entries if kind == "items"), None)
        if items is None:
            items = []
            node.entries.append(("items", items))
        items.append(ref)
    return root


def _topics(root: PathNode, name: str) -> list[Topic]:
    """The topics of a path tree, depth-first (a loop, not recursion: a path may be thousands of segments deep)."""

    def refs(group: Any) -> tuple[TopicItemRef, ...]:
        return tuple(TopicItemRef(item_id=i, difficulty=d) for i, d in group)

    out: list[Topic] = []
    # what is still to write, the next one last: a topic made already, or a node and its name
    pending: list[Topic | tuple[PathNode, str]] = [(root, name)]
    while pending:
        top = pending.pop()
        if isinstance(top, Topic):
            out.append(top)
            continue
        node, name = top
        if len(node.entries) == 1 and node.entries[0][0] == "items":
            out.append(Topic(topic_id=node.topic_id, display_name=name, item_refs=refs(node.entries[0][1])))
            continue
        children: list[str] = []
        below: list[Topic | tuple[PathNode, str]] = []
        groups = 0
        for kind, entry in node.entries:
            if kind == "items":
                leaf = f"{node.topic_id}::i{groups}"
                groups += 1
                children.append(leaf)
                below.append(Topic(topic_id=leaf, display_name=name, item_refs=refs(entry)))
            else:
                children.append(entry.topic_id)
                below.append((entry, entry.segments[-1]))
        out.append(
            Topic(
                topic_id=node.topic_id,
                display_name=name,
                child_topic_refs=tuple(TopicRef(topic_id=c) for c in children) or None,
            )
        )
        pending.extend(reversed(below))
    return out


def view_to_catalog(view: Mapping[str, Any]) -> Catalog:
    """The catalog of a stored v1 view document.

    Each path prefix of the view's assets is a topic (segments form the
    hierarchy; the root ``/`` is the one root topic, named after the view). A
    topic holds items or child topics, never both: the assets placed directly
    on a path that also has sub-paths go to a leaf topic ``<topic>::i<k>``.

    In an **ordered** view, only consecutive assets on the same path share a
    topic: when a path is revisited after another one, a new topic (a new
    *run* of that path, ``<topic>::<run>``) is opened, so that the catalog's
    depth-first item order is exactly the view's asset order. In a view that
    is not ordered, every path is one topic, in order of first appearance.

    >>> view = {"id": "v", "name": "Course", "ordered": True, "assets": [
    ...     {"asset_id": "a1", "path": "/unit1"}, {"asset_id": "a2", "path": "/unit2"},
    ...     {"asset_id": "a3", "path": "/unit1", "attributes": {"partner_difficulty": 0.8}}]}
    >>> [(t.topic_id, [r.item_id for r in t.item_refs or ()]) for t in view_to_catalog(view).topics]
    [('t:', []), ('t:unit1', ['a1']), ('t:unit2', ['a2']), ('t:unit1::1', ['a3'])]
    >>> view["ordered"] = False
    >>> [(t.topic_id, [r.item_id for r in t.item_refs or ()]) for t in view_to_catalog(view).topics]
    [('t:', []), ('t:unit1', ['a1', 'a3']), ('t:unit2', ['a2'])]
    """
    root = _build_tree(view["assets"], ordered=bool(view.get("ordered")))
    return Catalog(
        catalog_id=internal_id(view["id"]),
        display_name=view["name"],
        topics=tuple(_topics(root, view["name"])),
    )


# -- filters --------------------------------------------------------------------------------


def asset_filter(
    view_assets: Iterable[Mapping[str, Any]],
    *,
    asset_types: Sequence[str] | None,
    paths: Sequence[str] | None,
    tags: Sequence[Mapping[str, str]] | None,
) -> Filter | None:
    """The filter of a v1 asset filter over a view, or None when it can match nothing.

    Paths select the view's assets whose path is under one of them (by
    segment); asset types select by the item content type; tags by item tag.
    An absent condition does not filter.

    >>> assets = [{"asset_id": "a1", "path": "/m/alg"}, {"asset_id": "a2", "path": "/m/geo"}]
    >>> flt = asset_filter(assets, asset_types=["exercise"], paths=["/m/alg/"], tags=None)
    >>> flt.include_item_ids, flt.include_content_types
    (('a1',), ('exercise',))
    >>> asset_filter(assets, asset_types=None, paths=["/x"], tags=None) is None
    True
    """
    include_items = None
    if paths is not None:
        wanted = [path_segments(p) for p in paths]
        include_items = tuple(
            dict.fromkeys(
                internal_id(a["asset_id"])
                for a in view_assets
                if any(is_under(path_segments(a["path"]), w) for w in wanted)
            )
        )
        if not include_items:
            return None
    return Filter(
        include_item_ids=include_items,
        include_content_types=tuple(dict.fromkeys(asset_types)) if asset_types is not None else None,
        include_tags=tuple(dict.fromkeys(internal_tag(t["name"], t["value"]) for t in tags)) if tags else None,
    )
