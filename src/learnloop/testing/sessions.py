"""hypothesis strategies for adaptive sessions: filters that match, stopping conditions, constraints, specs.

A session filter must match at least one item, otherwise the session has
nothing to recommend; :func:`matching_filters` draws only such filters (its
conditions are built around an anchor item they all keep). Constraint
filters, by contrast, may match anything or nothing, as they do in real use.

>>> from hypothesis import given, settings
>>> from learnloop.content import compile_catalog, compile_filter
>>> from learnloop.testing import content
>>> @settings(max_examples=10, deadline=None)
... @given(content().flatmap(lambda d: matching_filters(d[1], d[0]).map(lambda f: (*d, f))))
... def test_the_filter_matches_something(drawn):
...     items, catalog, flt = drawn
...     index = compile_catalog(catalog, {i.item_id: i for i in items})
...     assert compile_filter(index, flt).any()
>>> test_the_filter_matches_something()
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import strategies as st

from learnloop.content import Catalog, Filter, Item, compile_catalog
from learnloop.recommend import Mode, SessionConstraint, SessionSpec, StoppingConditions
from learnloop.testing.strategies import filters, identifiers

__all__ = ["MODES", "constraints", "matching_filters", "session_specs", "stopping_conditions"]

#: The three session modes.
MODES: tuple[str, ...] = ("learn", "review", "assess")


def _pool(items: Sequence[Item] | Mapping[str, Item]) -> dict[str, Item]:
    return dict(items) if isinstance(items, Mapping) else {i.item_id: i for i in items}


def _some(draw: st.DrawFn, keep: Sequence[str], others: Sequence[str]) -> list[str]:
    """``keep`` (at least one of them) plus a few of ``others``."""
    chosen = draw(st.lists(st.sampled_from(list(keep)), min_size=1, max_size=2, unique=True))
    extra = [o for o in others if o not in keep]
    if extra:
        chosen += draw(st.lists(st.sampled_from(extra), max_size=2, unique=True))
    return chosen


@st.composite
def matching_filters(draw: st.DrawFn, catalog: Catalog, items: Sequence[Item] | Mapping[str, Item]) -> Filter:
    """A :class:`~learnloop.content.Filter` over ``catalog`` that matches at least one item.

    An anchor item (one of the catalog's positions) is drawn first; every
    inclusion then names something the anchor has (its topic or an ancestor,
    one of its tags, its content type, its id) and every exclusion something
    it has not, so the anchor always survives. Any mix of the eight
    conditions can come out, the empty filter included.

    >>> from hypothesis import Phase, find, settings
    >>> from learnloop.testing import content
    >>> first_found = settings(phases=[Phase.generate], database=None, max_examples=1000)   # any such example, unshrunk
    >>> db, cat = find(content(), lambda drawn: len(drawn[0]) == 2, settings=first_found)
    >>> flt = find(matching_filters(cat, db), lambda f: f.include_item_ids is not None, settings=first_found)
    >>> flt.include_item_ids[0] in {i.item_id for i in db}   # the anchor item comes first
    True
    """
    pool = _pool(items)
    index = compile_catalog(catalog, pool)
    if index.n_items == 0:
        raise ValueError(f"catalog '{catalog.catalog_id}' holds no item of those given: no filter can match")
    anchor = draw(st.integers(min_value=0, max_value=index.n_items - 1))
    item = pool[index.item_ids[anchor]]
    topic = int(index.item_topic[anchor])
    above = [index.topic_ids[t] for t in (topic, *index.topic_ancestors(topic))]
    topic_ids = list(index.topic_ids)
    tags = sorted({tag for i in pool.values() for tag in i.tags or ()} | {"no-such-tag"})
    ctypes = sorted({i.content_type for i in pool.values() if i.content_type is not None} | {"no-such-type"})
    item_ids = sorted(set(index.item_ids) | {"no-such-item"})
    own_tags = list(item.tags or ())
    fields: dict[str, Any] = {}
    if draw(st.booleans()):
        fields["include_topic_ids"] = _some(draw, above, topic_ids)
    if len(own_tags) > 0 and draw(st.booleans()):
        fields["include_tags"] = _some(draw, own_tags, tags)
    if item.content_type is not None and draw(st.booleans()):
        fields["include_content_types"] = _some(draw, [item.content_type], ctypes)
    if draw(st.booleans()):
        fields["include_item_ids"] = _some(draw, [item.item_id], item_ids)
    exclusions = {
        "exclude_topic_ids": [t for t in topic_ids if t not in above],
        "exclude_tags": [t for t in tags if t not in own_tags],
        "exclude_content_types": [c for c in ctypes if c != item.content_type],
        "exclude_item_ids": [i for i in item_ids if i != item.item_id],
    }
    for name, allowed in exclusions.items():
        if len(allowed) > 0 and draw(st.booleans()):
            fields[name] = draw(st.lists(st.sampled_from(allowed), min_size=1, max_size=3, unique=True))
    return Filter(**fields)


@st.composite
def stopping_conditions(
    draw: st.DrawFn, *, max_interactions: int = 20, max_duration_ms: int = 36_000_000
) -> StoppingConditions:
    """Any mix of the three stopping conditions (none of them, too).

    >>> from hypothesis import find
    >>> conditions = find(stopping_conditions(max_interactions=5), lambda s: s.max_interaction_count is not None)
    >>> 0 <= conditions.max_interaction_count <= 5
    True
    """
    fields: dict[str, Any] = {}
    if draw(st.booleans()):
        fields["max_proficiency"] = draw(st.floats(min_value=0.0, max_value=1.0))
    if draw(st.booleans()):
        fields["max_interaction_count"] = draw(st.integers(min_value=0, max_value=max_interactions))
    if draw(st.booleans()):
        fields["max_duration_ms"] = draw(st.integers(min_value=0, max_value=max_duration_ms))
    return StoppingConditions(**fields)


@st.composite
def constraints(
    draw: st.DrawFn,
    catalog: Catalog,
    items: Sequence[Item] | Mapping[str, Item],
    *,
    max_size: int = 5,
    max_value: float = 6.0,
) -> list[SessionConstraint]:
    """Up to ``max_size`` ``max_recommendations`` constraints (the contract allows five).

    Values may be fractional (at most ``floor(value)`` recommendations) or 0
    (none of the constraint's items may be recommended); the filters are any
    filters over the catalog, matching some items, all or none.

    >>> from hypothesis import Phase, find, settings
    >>> from learnloop.testing import content
    >>> first_found = settings(phases=[Phase.generate], database=None, max_examples=1000)   # any such example, unshrunk
    >>> db, cat = find(content(), lambda drawn: True, settings=first_found)
    >>> [c.type for c in find(constraints(cat, db), lambda cs: len(cs) == 2, settings=first_found)]
    ['max_recommendations', 'max_recommendations']
    """
    return draw(
        st.lists(
            st.builds(
                SessionConstraint,
                type=st.just("max_recommendations"),
                value=st.integers(min_value=0, max_value=int(max_value)).map(float)
                | st.floats(min_value=0.0, max_value=max_value),
                filter=filters(catalog, items),
            ),
            max_size=max_size,
        )
    )


@st.composite
def session_specs(
    draw: st.DrawFn,
    catalog: Catalog,
    items: Sequence[Item] | Mapping[str, Item],
    *,
    user_id: str | st.SearchStrategy[str] | None = None,
    modes: Sequence[str] = MODES,
    max_constraints: int = 5,
    max_interactions: int = 20,
) -> SessionSpec:
    """A valid create-adaptive-session request over ``catalog``.

    The filter matches at least one item (:func:`matching_filters`); the
    stopping conditions and up to ``max_constraints`` constraints are drawn
    or left out.

    >>> from hypothesis import Phase, find, settings
    >>> from learnloop.testing import content
    >>> first_found = settings(phases=[Phase.generate], database=None, max_examples=1000)   # any such example, unshrunk
    >>> db, cat = find(content(), lambda drawn: True, settings=first_found)
    >>> spec = find(session_specs(cat, db, user_id="u1"), lambda s: s.mode.type == "assess", settings=first_found)
    >>> spec.user_id, spec.catalog_id == cat.catalog_id, spec.mode.type
    ('u1', True, 'assess')
    """
    if user_id is None:
        user_id = identifiers()
    user = draw(user_id) if isinstance(user_id, st.SearchStrategy) else user_id
    fields: dict[str, Any] = {
        "user_id": user,
        "catalog_id": catalog.catalog_id,
        "mode": Mode(type=draw(st.sampled_from(list(modes)))),
        "filter": draw(matching_filters(catalog, items)),
    }
    if draw(st.booleans()):
        fields["stopping_conditions"] = draw(stopping_conditions(max_interactions=max_interactions))
    if max_constraints and draw(st.booleans()):
        fields["constraints"] = draw(constraints(catalog, items, max_size=max_constraints))
    return SessionSpec(**fields)
