"""The catalog's one topic structure: derived once, shared by the learner model and the policies."""

from __future__ import annotations

import networkx as nx
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from learnloop import Engine
from learnloop.content import Catalog, Item, compile_catalog
from learnloop.recommend.view import (
    catalog_topics,
    ready_topics,
    required_prerequisites,
    subtree_sums,
    topic_exercises,
)
from learnloop.sim import sample_course
from learnloop.tracing import TopicStructure


def test_one_structure_per_compiled_catalog_read_by_model_and_policies() -> None:
    engine = Engine.open(":memory:")
    items, catalog = sample_course()
    engine.upsert_items(items)
    engine.upsert_catalog(catalog)
    index = engine.catalog_index(catalog.catalog_id)
    topics = catalog_topics(index)
    assert topics is catalog_topics(index)
    assert engine.catalog_model(catalog.catalog_id).model.topics is topics
    arrays = [topics.parent, topics.prerequisites, topics.chains, topics.depth, topics.succ_ptr, topics.succ_idx]
    arrays += [topics.req_ptr, topics.req_idx, topics.req_owner, index.topic_start, index.topic_end, index.item_topic]
    assert {a.dtype for a in arrays} == {np.dtype(np.intp)}


@st.composite
def forests(draw: st.DrawFn) -> tuple[list[int], list[tuple[int, int]]]:
    n = draw(st.integers(1, 12))
    parent = [-1] + [draw(st.integers(-1, t - 1)) for t in range(1, n)]
    pairs = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda e: e[0] != e[1])
    edges = draw(st.lists(pairs, max_size=2 * n, unique=True))
    return parent, edges


@settings(max_examples=200, deadline=None)
@given(forests())
def test_requirements_are_own_and_ancestors_prerequisites(forest: tuple[list[int], list[tuple[int, int]]]) -> None:
    parent, edges = forest
    topics = TopicStructure.from_arrays(parent, edges)
    graph = nx.DiGraph(edges)
    for t in range(len(parent)):
        above = [t]
        while parent[above[-1]] >= 0:
            above.append(parent[above[-1]])
        expected = sorted({p for a in above if a in graph for p in graph.predecessors(a)})
        assert topics.requires(t).tolist() == expected
        assert topics.ancestors(t).tolist() == above[1:]
        assert bool(topics.is_leaf[t]) == (t not in parent)
        assert sorted(topics.successors(t).tolist()) == sorted(graph.successors(t) if t in graph else [])


def test_ready_topics_and_exercise_leaves_on_a_small_catalog() -> None:
    items = [Item(item_id=f"i{k}", display_name=f"I{k}", scorable=True) for k in range(3)]
    catalog = Catalog.model_validate(
        {
            "catalog_id": "c",
            "display_name": "C",
            "topics": [
                {"topic_id": "root", "display_name": "R", "child_topic_refs": [{"topic_id": "a"}, {"topic_id": "b"}]},
                {"topic_id": "a", "display_name": "A", "item_refs": [{"item_id": "i0"}]},
                {
                    "topic_id": "b",
                    "display_name": "B",
                    "item_refs": [{"item_id": "i1"}, {"item_id": "i2"}],
                    "prerequisite_topic_refs": [{"topic_id": "a"}],
                },
            ],
        }
    )
    index = compile_catalog(catalog, {i.item_id: i for i in items})
    a, b = index.topic_index["a"], index.topic_index["b"]
    assert required_prerequisites(index)[b].tolist() == [a]
    mastered = np.zeros(index.n_topics, dtype=bool)
    assert ready_topics(index, mastered).tolist() == [True, True, False]
    mastered[a] = True
    assert ready_topics(index, mastered).tolist() == [True, True, True]
    exercises = topic_exercises(index)
    assert sorted(zip(exercises.leaf_owner.tolist(), exercises.leaf_topic.tolist(), strict=True)) == [(0, a), (0, b)]
    assert exercises.scorable_count.tolist() == [3.0, 1.0, 2.0]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(0, 5), st.booleans(), st.integers(0, 2**32 - 1))
def test_subtree_sums_equal_the_sums_over_each_topics_positions(
    chapters: int, per_chapter: int, per_topic: int, theory: bool, seed: int
) -> None:
    items, catalog = sample_course(
        n_chapters=chapters, topics_per_chapter=per_chapter, items_per_topic=per_topic, with_theory=theory, seed=seed
    )
    index = compile_catalog(catalog, {i.item_id: i for i in items})
    values = np.random.default_rng(seed).normal(size=(3, index.n_items))
    expected = np.array(
        [[row[s:e].sum() for s, e in zip(index.topic_start, index.topic_end, strict=True)] for row in values]
    )
    np.testing.assert_allclose(subtree_sums(index, values), expected, atol=1e-9)
    np.testing.assert_allclose(subtree_sums(index, values[0]), expected[0], atol=1e-9)
