"""Topic-graph drawings: the hierarchy as a tree, prerequisites as arrows, topics coloured by mastery."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import networkx as nx
import numpy as np

from learnloop.content import Catalog, CatalogIndex, Filter
from learnloop.plot._mpl import axes, pyplot

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from learnloop.engine import Engine

__all__ = ["topic_graph", "topic_layout", "topic_mastery"]


def _children(catalog: Catalog) -> tuple[list[str], dict[str, list[str]]]:
    children = {t.topic_id: [c.topic_id for c in t.child_topic_refs or ()] for t in catalog.topics}
    has_parent = {c for kids in children.values() for c in kids}
    roots = [t.topic_id for t in catalog.topics if t.topic_id not in has_parent]
    return roots, children


def topic_layout(catalog: Catalog | CatalogIndex) -> dict[str, tuple[float, float]]:
    """Positions for a tree drawing: leaves side by side, a parent above the middle of its children.

    ``y`` is minus the depth; roots keep the catalog's order.

    >>> from learnloop.sim import sample_course
    >>> layout = topic_layout(sample_course(n_chapters=2, topics_per_chapter=2)[1])
    >>> layout["ch1"], layout["ch1-t1"], layout["ch2-t2"]
    ((0.5, 0.0), (0.0, -1.0), (3.0, -1.0))
    """
    cat = catalog.catalog if isinstance(catalog, CatalogIndex) else catalog
    roots, children = _children(cat)
    pos: dict[str, tuple[float, float]] = {}
    next_x = 0.0

    def place(topic: str, depth: int) -> float:
        nonlocal next_x
        kids = children[topic]
        if kids:
            x = float(np.mean([place(k, depth + 1) for k in kids]))
        else:
            x, next_x = next_x, next_x + 1.0
        pos[topic] = (x, float(-depth))
        return x

    for root in roots:
        place(root, 0)
    return pos


def topic_mastery(engine: Engine, user_id: str, catalog_id: str, *, app: str = "default") -> dict[str, float | None]:
    """Each topic's v2 proficiency for a learner (``None`` for a topic without scorable items).

    >>> from learnloop import Engine
    >>> from learnloop.sim import sample_course
    >>> engine = Engine(seed=1)
    >>> items, catalog = sample_course(n_chapters=1, topics_per_chapter=2)
    >>> engine.upsert_items(items); engine.upsert_catalog(catalog)
    >>> sorted(topic_mastery(engine, "u1", catalog.catalog_id))
    ['ch1', 'ch1-t1', 'ch1-t2']
    """
    index = engine.catalog_index(catalog_id, app=app)
    filters = [Filter(include_topic_ids=(t,)) for t in index.topic_ids]
    statuses = engine.user_status(user_id, catalog_id, filters, app=app)
    return {t: s.proficiency for t, s in zip(index.topic_ids, statuses, strict=True)}


def topic_graph(
    catalog: Catalog | CatalogIndex,
    mastery: Mapping[str, float | None] | None = None,
    *,
    ax: Axes | None = None,
    cmap: str = "RdYlGn",
    prerequisites: bool = True,
    labels: bool = True,
    colorbar: bool = True,
    title: str | None = None,
) -> Axes:
    """Draw the catalog's topics: hierarchy edges in grey, prerequisites as dashed arrows.

    Topics are coloured by ``mastery`` (topic id to a value in [0, 1], e.g.
    from :func:`topic_mastery`) on ``cmap``; topics without a value are light
    grey. Returns the axes; its ``ax.collections[0]`` holds the topics in the
    order of ``catalog.topics``.

    >>> from matplotlib.figure import Figure
    >>> from learnloop.sim import sample_course
    >>> catalog = sample_course(n_chapters=1, topics_per_chapter=2)[1]
    >>> ax = topic_graph(catalog, {"ch1-t1": 0.9}, ax=Figure().subplots(), colorbar=False)
    >>> len(ax.collections[0].get_offsets()), sorted(t.get_text() for t in ax.texts)
    (3, ['ch1', 'ch1-t1', 'ch1-t2'])
    """
    plt = pyplot()
    cat = catalog.catalog if isinstance(catalog, CatalogIndex) else catalog
    ax = axes(ax, figsize=(max(6.0, 0.9 * len(cat.topics)), 4.5))
    pos = topic_layout(cat)
    nodes = [t.topic_id for t in cat.topics]
    hierarchy = nx.DiGraph()
    hierarchy.add_nodes_from(nodes)
    _, children = _children(cat)
    hierarchy.add_edges_from((p, c) for p, kids in children.items() for c in kids)
    needs = nx.DiGraph()
    needs.add_nodes_from(nodes)
    needs.add_edges_from((r.topic_id, t.topic_id) for t in cat.topics for r in t.prerequisite_topic_refs or ())
    colours = plt.get_cmap(cmap)
    values: list[Any] = []
    for topic in nodes:
        value = None if mastery is None else mastery.get(topic)
        values.append("lightgrey" if value is None or np.isnan(value) else colours(float(np.clip(value, 0.0, 1.0))))
    nx.draw_networkx_nodes(
        hierarchy, pos, nodelist=nodes, node_color=values, edgecolors="black", linewidths=0.5, node_size=500, ax=ax
    )
    nx.draw_networkx_edges(hierarchy, pos, edge_color="grey", arrows=False, ax=ax)
    if prerequisites and needs.number_of_edges():
        nx.draw_networkx_edges(
            needs,
            pos,
            edge_color="tab:blue",
            style="dashed",
            arrows=True,
            arrowstyle="-|>",
            connectionstyle="arc3,rad=0.25",
            node_size=500,
            ax=ax,
        )
    if labels:
        shifted = {t: (x, y - 0.18) for t, (x, y) in pos.items()}
        nx.draw_networkx_labels(hierarchy, shifted, font_size=8, verticalalignment="top", ax=ax)
    if colorbar and mastery is not None:
        mappable = plt.cm.ScalarMappable(cmap=colours, norm=plt.Normalize(0.0, 1.0))
        ax.figure.colorbar(mappable, ax=ax, label="mastery (predicted success)", shrink=0.8)
    ax.set_axis_off()
    xs, ys = [x for x, _ in pos.values()], [y for _, y in pos.values()]
    ax.set_xlim(min(xs) - 0.7, max(xs) + 0.7)
    ax.set_ylim(min(ys) - 0.6, max(ys) + 0.4)
    if title is not None:
        ax.set_title(title)
    return ax
