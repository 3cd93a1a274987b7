"""Filters: the eight conditions, sub-topics, exclusions after inclusions, and a naive model."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from learnloop.content import Catalog, Filter, Item, compile_catalog, compile_filter
from learnloop.errors import ValidationError
from learnloop.testing import FILTER_FIELDS, content, filters

# chapter "alg" (sub-topics "lin", "quad") and chapter "geo"; q1 sits in "lin" and in "geo"
ITEMS = {
    i.item_id: i
    for i in [
        Item(item_id="q1", display_name="1", scorable=True, tags=["easy"], content_type="mcq"),
        Item(item_id="q2", display_name="2", scorable=True, tags=["hard"], content_type="text"),
        Item(item_id="t1", display_name="3", scorable=False, content_type="theory"),
        Item(item_id="q3", display_name="4", scorable=True, tags=["easy", "hard"]),
        Item(item_id="q4", display_name="5", scorable=True, tags=["exam"], content_type="mcq"),
    ]
}
CATALOG = Catalog.model_validate(
    {
        "catalog_id": "math",
        "display_name": "Math",
        "topics": [
            {"topic_id": "alg", "display_name": "A", "child_topic_refs": [{"topic_id": "lin"}, {"topic_id": "quad"}]},
            {"topic_id": "lin", "display_name": "L", "item_refs": [{"item_id": "q1"}, {"item_id": "q2"}]},
            {"topic_id": "quad", "display_name": "Q", "item_refs": [{"item_id": "t1"}, {"item_id": "q3"}]},
            {"topic_id": "geo", "display_name": "G", "item_refs": [{"item_id": "q4"}, {"item_id": "q1"}]},
        ],
    }
)
INDEX = compile_catalog(CATALOG, ITEMS)
# positions:            0: q1(lin)  1: q2(lin)  2: t1(quad)  3: q3(quad)  4: q4(geo)  5: q1(geo)


def selected(**conditions: list[str]) -> list[str]:
    mask = compile_filter(INDEX, Filter(**conditions))
    return [f"{INDEX.item_ids[p]}@{INDEX.topic_ids[INDEX.item_topic[p]]}" for p in mask.nonzero()[0]]


def test_no_filter_and_an_empty_filter_select_everything() -> None:
    assert compile_filter(INDEX, None).tolist() == [True] * 6
    assert compile_filter(INDEX, Filter()).tolist() == [True] * 6


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        ({"include_topic_ids": ["alg"]}, ["q1@lin", "q2@lin", "t1@quad", "q3@quad"]),
        ({"include_topic_ids": ["quad", "geo"]}, ["t1@quad", "q3@quad", "q4@geo", "q1@geo"]),
        ({"include_tags": ["easy"]}, ["q1@lin", "q3@quad", "q1@geo"]),
        ({"include_tags": ["hard", "exam"]}, ["q2@lin", "q3@quad", "q4@geo"]),
        ({"include_content_types": ["mcq"]}, ["q1@lin", "q4@geo", "q1@geo"]),
        ({"include_content_types": ["theory", "text"]}, ["q2@lin", "t1@quad"]),
        ({"include_item_ids": ["q1", "t1"]}, ["q1@lin", "t1@quad", "q1@geo"]),
        ({"exclude_topic_ids": ["alg"]}, ["q4@geo", "q1@geo"]),
        ({"exclude_topic_ids": ["lin"]}, ["t1@quad", "q3@quad", "q4@geo", "q1@geo"]),
        ({"exclude_tags": ["easy"]}, ["q2@lin", "t1@quad", "q4@geo"]),
        ({"exclude_content_types": ["mcq"]}, ["q2@lin", "t1@quad", "q3@quad"]),
        ({"exclude_item_ids": ["q1", "q4"]}, ["q2@lin", "t1@quad", "q3@quad"]),
    ],
)
def test_each_condition(conditions: dict[str, list[str]], expected: list[str]) -> None:
    assert selected(**conditions) == expected


def test_inclusions_combine_with_and() -> None:
    assert selected(include_topic_ids=["alg"], include_tags=["easy"]) == ["q1@lin", "q3@quad"]
    assert selected(include_tags=["easy"], include_content_types=["mcq"], include_item_ids=["q1", "q3"]) == [
        "q1@lin",
        "q1@geo",
    ]


def test_an_exclusion_removes_a_sub_topic_of_an_included_topic() -> None:
    assert selected(include_topic_ids=["alg"], exclude_topic_ids=["quad"]) == ["q1@lin", "q2@lin"]


def test_exclusions_apply_after_inclusions() -> None:
    # an item included by id is still removed by an exclusion that matches it
    assert selected(include_item_ids=["q1", "q2"], exclude_tags=["easy"]) == ["q2@lin"]
    assert selected(include_topic_ids=["lin"], exclude_topic_ids=["lin"]) == []


def test_all_eight_conditions_at_once() -> None:
    assert selected(
        include_topic_ids=["alg", "geo"],
        include_tags=["easy", "hard", "exam"],
        include_content_types=["mcq", "text"],
        include_item_ids=["q1", "q2", "q4"],
        exclude_topic_ids=["geo"],
        exclude_tags=["exam"],
        exclude_content_types=["theory"],
        exclude_item_ids=["q2"],
    ) == ["q1@lin"]


def test_unknown_tags_content_types_and_item_ids_match_nothing() -> None:
    assert selected(include_tags=["nope"]) == []
    assert selected(include_content_types=["video"]) == []
    assert selected(include_item_ids=["ghost"]) == []
    assert len(selected(exclude_tags=["nope"], exclude_content_types=["video"], exclude_item_ids=["ghost"])) == 6


def test_unknown_topic_ids_are_an_error_listing_each() -> None:
    with pytest.raises(ValidationError) as caught:
        compile_filter(INDEX, Filter(include_topic_ids=["alg", "nope"], exclude_topic_ids=["gone", "nope"]))
    assert caught.value.problems == (
        "filter: unknown topic 'nope' in catalog 'math'",
        "filter: unknown topic 'gone' in catalog 'math'",
    )


@pytest.mark.parametrize("field", FILTER_FIELDS)
def test_an_empty_list_is_rejected(field: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=field):
        Filter.model_validate({field: []})


def test_unknown_filter_fields_are_rejected() -> None:
    with pytest.raises(pydantic.ValidationError, match="include_topics"):
        Filter.model_validate({"include_topics": ["alg"]})


# -- property: the compiled mask equals a naive set computation --------------------------


def naive_selection(catalog: Catalog, items: dict[str, Item], flt: Filter) -> list[tuple[str, str]]:
    """(topic, item) pairs selected by ``flt``, in depth-first order, computed with plain sets."""
    by_id = {t.topic_id: t for t in catalog.topics}
    children = {ref.topic_id for t in catalog.topics for ref in t.child_topic_refs or ()}
    out: list[tuple[str, str]] = []

    def keep(item: Item, lineage: set[str]) -> bool:
        tags = set(item.tags or ())
        checks = [
            (flt.include_topic_ids, bool(lineage & set(flt.include_topic_ids or ()))),
            (flt.include_tags, bool(tags & set(flt.include_tags or ()))),
            (flt.include_content_types, item.content_type in set(flt.include_content_types or ())),
            (flt.include_item_ids, item.item_id in set(flt.include_item_ids or ())),
            (flt.exclude_topic_ids, not lineage & set(flt.exclude_topic_ids or ())),
            (flt.exclude_tags, not tags & set(flt.exclude_tags or ())),
            (flt.exclude_content_types, item.content_type not in set(flt.exclude_content_types or ())),
            (flt.exclude_item_ids, item.item_id not in set(flt.exclude_item_ids or ())),
        ]
        return all(ok for condition, ok in checks if condition is not None)

    def walk(topic_id: str, lineage: set[str]) -> None:
        topic = by_id[topic_id]
        lineage = lineage | {topic_id}
        for ref in topic.item_refs or ():
            item = items.get(ref.item_id)
            if item is not None and keep(item, lineage):
                out.append((topic_id, ref.item_id))
        for child in topic.child_topic_refs or ():
            walk(child.topic_id, lineage)

    for t in catalog.topics:
        if t.topic_id not in children:
            walk(t.topic_id, set())
    return out


def with_filter(drawn: tuple[list[Item], Catalog]) -> Any:
    items, catalog = drawn
    return st.tuples(st.just(items), st.just(catalog), filters(catalog, items))


@settings(max_examples=150, deadline=None)
@given(content(max_items=12, max_topics=10).flatmap(with_filter), st.data())
def test_compiled_filter_equals_naive_set_computation(drawn: Any, data: st.DataObject) -> None:
    items, catalog, flt = drawn
    db = {i.item_id: i for i in items}
    # sometimes an item the catalog refers to has been deleted from the database since
    if db and data.draw(st.booleans()):
        del db[data.draw(st.sampled_from(sorted(db)))]
    index = compile_catalog(catalog, db)
    mask = compile_filter(index, flt)
    got = [(index.topic_ids[index.item_topic[p]], index.item_ids[p]) for p in mask.nonzero()[0]]
    assert got == naive_selection(catalog, db, flt)
    assert mask.shape == (index.n_items,) and mask.dtype == bool
