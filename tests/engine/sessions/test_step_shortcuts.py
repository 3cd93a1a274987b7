"""Shortcuts of the adaptive step give what the long way gives.

The step's generator is made from 32-bit words instead of a tuple of integers
(the same generator), a session's filter key is remembered for the filter
object (the masks still follow every change of content), and a policy reads
attempts and theory viewed at a few positions off the items met.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from learnloop import Engine
from learnloop.content import Filter, compile_catalog
from learnloop.engine.sessions.sessions import seeded_rng
from learnloop.recommend import LearnerView
from learnloop.sim import SimClock, sample_course
from learnloop.tracing import Event, ItemParams, LearnerModel, TopicStructure

_VALUES = st.one_of(
    st.sampled_from([0, 1, 2**32 - 1, 2**32, 2**64 - 1, 2**64]),
    st.integers(min_value=0, max_value=2**140),
)


@given(st.lists(_VALUES, min_size=1, max_size=5))
def test_seeded_rng_is_default_rng_of_the_same_values(values: list[int]) -> None:
    fast, plain = seeded_rng(*values), np.random.default_rng(tuple(values))
    assert fast.bit_generator.state == plain.bit_generator.state
    assert fast.random(3).tolist() == plain.random(3).tolist()


def test_a_seeded_generator_spawns_and_shows_its_seed_sequence_as_default_rng_s_does() -> None:
    values = (1, 2**63 + 5, 100_000, 37)
    fast, plain = seeded_rng(*values), np.random.default_rng(values)
    assert [g.random(2).tolist() for g in fast.spawn(3)] == [g.random(2).tolist() for g in plain.spawn(3)]
    ours, theirs = fast.bit_generator.seed_seq, plain.bit_generator.seed_seq
    assert ours.pool.tolist() == theirs.pool.tolist()
    assert ours.generate_state(4, np.uint64).tolist() == theirs.generate_state(4, np.uint64).tolist()
    assert ours.generate_state(3).tolist() == theirs.generate_state(3).tolist()


def test_seeded_rng_of_values_that_are_not_plain_non_negative_ints_takes_the_ordinary_path() -> None:
    assert seeded_rng(np.int64(7), 3).bit_generator.state == np.random.default_rng((7, 3)).bit_generator.state
    assert seeded_rng(True, 3).bit_generator.state == np.random.default_rng((True, 3)).bit_generator.state
    try:
        seeded_rng(-1, 3)
    except ValueError as exc:
        assert "negative" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("a negative seed is refused, as default_rng refuses it")


def _engine() -> Engine:
    engine = Engine(seed=3, clock=SimClock())
    engine.upsert_items(
        [{"item_id": f"i{k}", "display_name": f"I{k}", "scorable": True, "difficulty": 0.5} for k in range(4)]
    )
    engine.upsert_catalog(
        {
            "catalog_id": "c",
            "display_name": "C",
            "topics": [
                {"topic_id": "a", "display_name": "A", "item_refs": [{"item_id": "i0"}, {"item_id": "i1"}]},
                {"topic_id": "b", "display_name": "B", "item_refs": [{"item_id": "i2"}, {"item_id": "i3"}]},
            ],
        }
    )
    return engine


def test_a_remembered_filter_key_gives_masks_that_follow_the_content() -> None:
    engine = _engine()
    repo = engine._content
    flt = Filter(include_topic_ids=("a",))
    first = repo.mask("default", repo.catalog_model("c"), flt)
    assert first.tolist() == [True, True, False, False]
    # another filter object (equal or not) gets its own key
    assert repo.mask("default", repo.catalog_model("c"), Filter(include_topic_ids=("b",))).tolist() == [
        False,
        False,
        True,
        True,
    ]
    assert repo.mask("default", repo.catalog_model("c"), Filter(include_topic_ids=("a",))) is first
    # the content changes: the same filter object now selects what topic 'a' holds now
    engine.upsert_catalog(
        {
            "catalog_id": "c",
            "display_name": "C",
            "topics": [
                {"topic_id": "a", "display_name": "A", "item_refs": [{"item_id": "i0"}]},
                {"topic_id": "b", "display_name": "B", "item_refs": [{"item_id": "i1"}, {"item_id": "i2"}]},
            ],
        }
    )
    assert repo.mask("default", repo.catalog_model("c"), flt).tolist() == [True, False, False]


def test_a_session_step_recommends_from_the_content_as_it_is_now() -> None:
    engine = _engine()
    context = engine.create_session(
        {"user_id": "u", "catalog_id": "c", "mode": {"type": "learn"}, "filter": {"include_topic_ids": ["b"]}}
    )
    assert engine.adaptive_step(context).recommendation.item_id in {"i2", "i3"}
    engine.upsert_catalog(
        {
            "catalog_id": "c",
            "display_name": "C",
            "topics": [
                {"topic_id": "a", "display_name": "A", "item_refs": [{"item_id": "i0"}, {"item_id": "i2"}]},
                {"topic_id": "b", "display_name": "B", "item_refs": [{"item_id": "i1"}]},
            ],
        }
    )
    for _ in range(3):
        assert engine.adaptive_step(context).recommendation.item_id == "i1"


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 60))
def test_attempts_and_theory_viewed_at_some_positions_read_off_the_items_met(seed: int, n_events: int) -> None:
    items, catalog = sample_course(n_chapters=2, topics_per_chapter=3, items_per_topic=40, seed=seed % 7)
    index = compile_catalog(catalog, {i.item_id: i for i in items})
    params = ItemParams.from_catalog(
        item_topic=index.item_topic, difficulty=index.difficulty, scorable=index.scorable, is_theory=index.is_theory
    )
    model = LearnerModel(TopicStructure.from_arrays(index.topic_parent, index.prerequisite_edges), params)
    rng = np.random.default_rng(seed)
    state = model.new_state()
    for k in range(n_events):
        position = int(rng.integers(index.n_items))
        if index.scorable[position]:
            event = Event(item=position, kind="attempt", timestamp=60.0 * k, score=float(rng.random() < 0.5))
        else:
            kind = str(rng.choice(["view_theory", "attempt", "skip"]))
            event = Event(item=position, kind=kind, timestamp=60.0 * k, fraction_completed=float(rng.random()))
        state = model.update(state, event)
    attempts, viewed = state.attempts.astype(np.int64), state.max_fraction
    view = LearnerView(index, model.predict(state), params.a, recall=model.recall(state, 1e6), state=state)
    met = state.touched[: int(rng.integers(0, state.touched.size + 1))]
    for some in (rng.integers(index.n_items, size=int(rng.integers(0, 9))), met[:8], np.arange(index.n_items)):
        assert view.attempts_at(some).dtype == attempts.dtype
        assert view.attempts_at(some).tolist() == attempts[some].tolist()
        assert view.viewed_at(some).tolist() == viewed[some].tolist()
    assert view.attempted_count(np.ones(index.n_items, dtype=bool)) == int(np.count_nonzero(attempts))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["i0", "i1", "i2", "i3", "gone"]), max_size=3), min_size=1, max_size=6))
def test_the_administered_mask_extended_step_by_step_is_the_mask_of_every_item_assessed(
    steps: list[list[str]],
) -> None:
    engine = _engine()
    engine.upsert_catalog(  # an item in two topics: both of its positions count
        {
            "catalog_id": "c",
            "display_name": "C",
            "topics": [
                {"topic_id": "a", "display_name": "A", "item_refs": [{"item_id": "i0"}, {"item_id": "i1"}]},
                {"topic_id": "b", "display_name": "B", "item_refs": [{"item_id": "i1"}, {"item_id": "i2"}]},
            ],
        }
    )
    sessions, index = engine._sessions, engine._content.catalog_model("c").index
    context = engine.create_session({"user_id": "u", "catalog_id": "c", "mode": {"type": "assess"}, "filter": {}})
    state = engine.session(context)
    for added in steps:
        state = state.with_assessed(tuple(dict.fromkeys((*state.assessed, *added))))
        got = sessions._administered_positions("default", state, index)
        assert got.tolist() == index.item_mask(state.assessed).tolist()
        assert not got.flags.writeable
