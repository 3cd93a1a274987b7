"""Catalog validation (every rule, all problems at once) and the compiled item order."""

from __future__ import annotations

from typing import Any

import numpy as np
import pydantic
import pytest

from learnloop.content import Catalog, Item, compile_catalog, validate_catalog

ITEMS = ["q1", "q2", "q3", "q4"]


def topic(topic_id: str, **fields: Any) -> dict[str, Any]:
    return {"topic_id": topic_id, "display_name": topic_id.upper(), **fields}


def refs(*ids: str) -> list[dict[str, str]]:
    return [{"item_id": i} for i in ids]


def tids(*ids: str) -> list[dict[str, str]]:
    return [{"topic_id": i} for i in ids]


def catalog(*topics: dict[str, Any], catalog_id: str = "c") -> Catalog:
    return Catalog.model_validate({"catalog_id": catalog_id, "display_name": "C", "topics": list(topics)})


def problems(*topics: dict[str, Any]) -> list[str]:
    return validate_catalog(catalog(*topics), ITEMS)


# -- validation: one rule at a time ------------------------------------------------------


def test_a_valid_catalog_has_no_problem() -> None:
    assert (
        problems(
            topic("root", child_topic_refs=tids("a", "b")),
            topic("a", item_refs=refs("q1", "q2")),
            topic(
                "b",
                item_refs=[{"item_id": "q3", "difficulty": 0.0}, {"item_id": "q1", "difficulty": 1.0}],
                prerequisite_topic_refs=tids("a"),
            ),
        )
        == []
    )


def test_unknown_item_ref() -> None:
    assert problems(topic("a", item_refs=refs("q1", "nope"))) == ["topic 'a': unknown item 'nope'"]


def test_known_items_may_be_a_mapping() -> None:
    cat = catalog(topic("a", item_refs=refs("q1", "x")))
    known = {"q1": Item(item_id="q1", display_name="Q1", scorable=True)}
    assert validate_catalog(cat, known) == ["topic 'a': unknown item 'x'"]


def test_unknown_child_topic_ref() -> None:
    assert problems(topic("a", child_topic_refs=tids("ghost")), topic("b", item_refs=refs("q1"))) == [
        "topic 'a': unknown child topic 'ghost'"
    ]


def test_unknown_prerequisite_topic_ref() -> None:
    assert problems(topic("a", item_refs=refs("q1"), prerequisite_topic_refs=tids("ghost"))) == [
        "topic 'a': unknown prerequisite topic 'ghost'"
    ]


def test_a_topic_with_two_parents() -> None:
    assert problems(
        topic("p1", child_topic_refs=tids("kid")),
        topic("p2", child_topic_refs=tids("kid")),
        topic("kid", item_refs=refs("q1")),
    ) == ["topic 'kid' has 2 parents: 'p1', 'p2'"]


def test_a_child_listed_twice_by_one_parent() -> None:
    assert problems(topic("p", child_topic_refs=tids("kid", "kid")), topic("kid", item_refs=refs("q1"))) == [
        "topic 'p': child topic 'kid' listed twice"
    ]


def test_a_prerequisite_listed_twice() -> None:
    assert problems(
        topic("a", item_refs=refs("q1")), topic("b", item_refs=refs("q2"), prerequisite_topic_refs=tids("a", "a"))
    ) == ["topic 'b': prerequisite topic 'a' listed twice"]


def test_an_item_listed_twice_in_one_topic() -> None:
    assert problems(topic("a", item_refs=refs("q1", "q1"))) == ["topic 'a': item 'q1' listed twice"]


def test_an_item_may_sit_in_two_topics() -> None:
    assert problems(topic("a", item_refs=refs("q1")), topic("b", item_refs=refs("q1"))) == []


def test_items_and_children_in_one_topic() -> None:
    assert problems(topic("a", item_refs=refs("q1"), child_topic_refs=tids("b")), topic("b", item_refs=refs("q2"))) == [
        "topic 'a': holds both item_refs and child_topic_refs"
    ]


def test_empty_item_refs_beside_children_is_not_both() -> None:
    assert problems(topic("a", item_refs=[], child_topic_refs=tids("b")), topic("b", item_refs=refs("q2"))) == []


def test_hierarchy_cycle() -> None:
    assert problems(
        topic("a", child_topic_refs=tids("b")),
        topic("b", child_topic_refs=tids("c")),
        topic("c", child_topic_refs=tids("a")),
        topic("d", item_refs=refs("q1")),
    ) == ["hierarchy cycle through topics 'a', 'b', 'c'"]


def test_a_topic_that_is_its_own_child() -> None:
    assert problems(topic("a", child_topic_refs=tids("a")), topic("d", item_refs=refs("q1"))) == [
        "hierarchy cycle through topics 'a'"
    ]


def test_prerequisite_cycle() -> None:
    assert problems(
        topic("a", item_refs=refs("q1"), prerequisite_topic_refs=tids("b")),
        topic("b", item_refs=refs("q2"), prerequisite_topic_refs=tids("a")),
    ) == ["prerequisite cycle through topics 'a', 'b'"]


def test_a_topic_that_is_its_own_prerequisite() -> None:
    assert problems(topic("a", item_refs=refs("q1"), prerequisite_topic_refs=tids("a"))) == [
        "prerequisite cycle through topics 'a'"
    ]


def test_prerequisites_across_the_hierarchy_are_allowed() -> None:
    assert (
        problems(
            topic("root", child_topic_refs=tids("a", "b")),
            topic("a", item_refs=refs("q1"), prerequisite_topic_refs=tids("b")),
            topic("b", item_refs=refs("q2")),
            topic("z", item_refs=refs("q3"), prerequisite_topic_refs=tids("root", "a")),
        )
        == []
    )


def test_duplicate_topic_ids() -> None:
    assert problems(topic("a", item_refs=refs("q1")), topic("a", item_refs=refs("q2"))) == [
        "duplicate topic id 'a' (2 times)"
    ]


def test_no_topic() -> None:
    assert problems() == ["catalog has no topic", "catalog has no item: at least one topic needs item_refs"]


def test_no_item() -> None:
    assert problems(topic("a"), topic("b", item_refs=[])) == ["catalog has no item: at least one topic needs item_refs"]


@pytest.mark.parametrize("difficulty", [-0.01, 1.01, float("nan"), float("inf")])
def test_difficulty_override_outside_0_1(difficulty: float) -> None:
    assert problems(topic("a", item_refs=[{"item_id": "q1", "difficulty": difficulty}])) == [
        f"topic 'a': difficulty of item 'q1' must be within 0..1, got {difficulty}"
    ]


def test_every_problem_is_reported_at_once() -> None:
    found = problems(
        topic("a", item_refs=[{"item_id": "x", "difficulty": 2.0}], child_topic_refs=tids("b", "ghost")),
        topic("b", child_topic_refs=tids("c"), prerequisite_topic_refs=tids("nope")),
        topic("c", child_topic_refs=tids("b")),
        topic("d", child_topic_refs=tids("c"), item_refs=refs("q1")),
        topic("e", item_refs=refs("q2"), prerequisite_topic_refs=tids("e")),
        topic("e", item_refs=refs("q3")),
    )
    assert found == [
        "duplicate topic id 'e' (2 times)",
        "topic 'a': unknown item 'x'",
        "topic 'a': difficulty of item 'x' must be within 0..1, got 2.0",
        "topic 'a': holds both item_refs and child_topic_refs",
        "topic 'a': unknown child topic 'ghost'",
        "topic 'b': unknown prerequisite topic 'nope'",
        "topic 'd': holds both item_refs and child_topic_refs",
        "topic 'b' has 2 parents: 'a', 'c'",
        "topic 'c' has 2 parents: 'b', 'd'",
        "hierarchy cycle through topics 'b', 'c'",
        "prerequisite cycle through topics 'e'",
    ]


@pytest.mark.parametrize(
    ("where", "value"),
    [
        ("catalog_id", "has space"),
        ("catalog_id", ""),
        ("catalog_id", "x" * 129),
        ("topic_id", "a/b"),
        ("child", "é"),
        ("prerequisite", "a\n"),
        ("item", "q.1"),
    ],
)
def test_identifier_rule_on_every_id(where: str, value: str) -> None:
    doc: dict[str, Any] = {
        "catalog_id": "c",
        "display_name": "C",
        "topics": [topic("t", item_refs=refs("q1"), child_topic_refs=tids("k"), prerequisite_topic_refs=tids("p"))],
    }
    t = doc["topics"][0]
    if where == "catalog_id":
        doc["catalog_id"] = value
    elif where == "topic_id":
        t["topic_id"] = value
    elif where == "child":
        t["child_topic_refs"][0]["topic_id"] = value
    elif where == "prerequisite":
        t["prerequisite_topic_refs"][0]["topic_id"] = value
    else:
        t["item_refs"][0]["item_id"] = value
    with pytest.raises(pydantic.ValidationError, match="string_pattern_mismatch|should match pattern"):
        Catalog.model_validate(doc)


def test_identifier_of_128_characters_is_accepted() -> None:
    assert catalog(topic("t" * 128, item_refs=refs("q1")), catalog_id="c" * 128).catalog_id == "c" * 128


# -- the compiled item order -------------------------------------------------------------


def _items(**extra: dict[str, Any]) -> dict[str, Item]:
    out = {}
    for i in ["q1", "q2", "q3", "q4", "q5", "q6"]:
        fields = {"item_id": i, "display_name": i, "scorable": True, **extra.get(i, {})}
        out[i] = Item.model_validate(fields)
    return out


BOOK = catalog(
    # listed out of order on purpose: the order comes from the hierarchy
    topic("ch2", child_topic_refs=tids("s2b", "s2a")),
    topic("s1a", item_refs=refs("q2", "q1")),
    topic("s2a", item_refs=refs("q5")),
    topic("ch1", child_topic_refs=tids("s1a", "s1b")),
    topic("s2b", item_refs=[{"item_id": "q6"}, {"item_id": "q1", "difficulty": 0.9}]),
    topic("loose", item_refs=refs("q4")),
    topic("s1b", item_refs=refs("q3")),
)


def test_item_order_is_depth_first_in_the_order_given() -> None:
    index = compile_catalog(BOOK, _items())
    # roots (ch2, ch1, loose) in list order, each followed by its sub-topics as listed
    assert index.topic_ids == ("ch2", "s2b", "s2a", "ch1", "s1a", "s1b", "loose")
    assert index.item_ids == ("q6", "q1", "q5", "q2", "q1", "q3", "q4")
    assert [index.topic_ids[t] for t in index.item_topic] == ["s2b", "s2b", "s2a", "s1a", "s1a", "s1b", "loose"]
    assert index.topic_parent.tolist() == [-1, 0, 0, -1, 3, 3, -1]
    assert index.topic_depth.tolist() == [0, 1, 1, 0, 1, 1, 0]
    assert index.topic_start.tolist() == [0, 0, 2, 3, 3, 5, 6]
    assert index.topic_end.tolist() == [3, 2, 3, 6, 5, 6, 7]
    assert index.n_items == 7 and index.n_topics == 7 and index.catalog_id == "c"


def test_an_item_in_two_topics_has_two_positions() -> None:
    index = compile_catalog(BOOK, _items())
    assert index.item_positions["q1"].tolist() == [1, 4]
    assert index.position("q1") == 1
    assert index.position("q1", "s1a") == 4
    assert index.position("q1", "s1b") is None
    assert index.position("nope") is None


def test_difficulty_override_applies_to_its_topic_only() -> None:
    index = compile_catalog(BOOK, _items(q1={"difficulty": 0.2}, q6={"difficulty": 0.66}))
    d = index.difficulty
    assert d[1] == 0.9 and d[4] == 0.2 and d[0] == 0.66
    assert np.isnan(d[[2, 3, 5, 6]]).all()


def test_theory_by_content_type_or_by_a_link_from_an_exercise() -> None:
    index = compile_catalog(
        BOOK,
        _items(
            q2={"content_type": "theory", "scorable": False},
            q3={"theory_item_refs": [{"item_id": "q4"}]},
            q5={"content_type": "mcq"},
        ),
    )
    theory = {index.item_ids[p] for p in np.flatnonzero(index.is_theory)}
    assert theory == {"q2", "q4"}
    assert index.theory_refs == {"q3": ("q4",)}
    assert index.scorable.tolist() == [True, True, True, False, True, True, True]


def test_tag_and_content_type_positions() -> None:
    index = compile_catalog(BOOK, _items(q1={"tags": ["a", "b"]}, q4={"tags": ["b"], "content_type": "text"}))
    assert index.tag_positions["a"].tolist() == [1, 4]
    assert index.tag_positions["b"].tolist() == [1, 4, 6]
    assert index.content_type_positions["text"].tolist() == [6]


def test_refs_to_items_no_longer_in_the_database_leave_the_item_order() -> None:
    items = _items()
    del items["q1"], items["q5"]
    index = compile_catalog(BOOK, items)
    assert index.item_ids == ("q6", "q2", "q3", "q4")
    assert index.topic_start.tolist() == [0, 0, 1, 1, 1, 2, 3]
    assert index.topic_end.tolist() == [1, 1, 1, 3, 2, 3, 4]


def test_graphs_keep_hierarchy_and_prerequisites_apart() -> None:
    cat = catalog(
        topic("r", child_topic_refs=tids("a", "b")),
        topic("a", item_refs=refs("q1")),
        topic("b", item_refs=refs("q2"), prerequisite_topic_refs=tids("a")),
    )
    index = compile_catalog(cat, _items())
    assert sorted(index.hierarchy.edges) == [("r", "a"), ("r", "b")]
    assert sorted(index.prerequisites.edges) == [("a", "b")]
    assert index.prerequisite_edges.tolist() == [[1, 2]]
    assert index.topic_ancestors(2) == [0] and index.topic_ancestors(0) == []


def test_subtree_mask_covers_sub_topics() -> None:
    index = compile_catalog(BOOK, _items())
    assert index.subtree_mask(["ch1"]).tolist() == [False, False, False, True, True, True, False]
    assert index.subtree_mask(["s2a", "loose"]).tolist() == [False, False, True, False, False, False, True]
    many = [t for t in index.topic_ids for _ in range(3)]  # the vectorised path (> 8 topics)
    assert index.subtree_mask(many).all()
    assert not index.subtree_mask([]).any()
